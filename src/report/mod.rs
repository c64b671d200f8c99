//! Exporters: each turns a report (plain data, never engine types) into one format.

pub mod compare;
pub mod csv;
pub mod format;
pub mod html;
pub mod json;
pub mod markdown;
pub mod mem;
pub mod progress;
pub mod svg;
pub mod syscalls;
pub mod text;

use std::fs::File;
use std::io;
use std::path::Path;

pub use format::{Format, Report};

/// Opens an output file (`-o`, `--export-*`) for writing, created or truncated. A symlink is
/// refused rather than followed (it could lead into any file this user may write), and so
/// is anything but a regular file (a device, a FIFO): O_NOFOLLOW on the open, then fstat on
/// what was opened, so nothing can be swapped in between a check and the open.
pub fn create_output(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let refused = |what: &str| io::Error::new(io::ErrorKind::InvalidInput, format!("{what}; give a file name"));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        // O_NONBLOCK: opening a FIFO without a reader must not hang before the check below.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(
            |e| if e.raw_os_error() == Some(libc::ELOOP) { refused("a symbolic link, not followed") } else { e },
        )?;
    if !file.metadata()?.is_file() {
        return Err(refused("not a regular file"));
    }
    // Truncated only once it is known to be a regular file: a device is never truncated.
    file.set_len(0)?;
    Ok(file)
}

/// Refuses, before a run, an output path that `create_output` would refuse after it.
pub fn check_output(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            Err(io::Error::new(io::ErrorKind::InvalidInput, "a symbolic link, not followed; give a file name"))
        }
        Ok(m) if !m.is_file() => {
            Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file; give a file name"))
        }
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::create_output;

    #[test]
    fn an_output_is_a_regular_file_never_a_symlink_or_a_device() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = dir.path().join("out.json");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = create_output(&link).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let e = create_output(std::path::Path::new("/dev/null")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        std::fs::write(dir.path().join("old.csv"), "a much longer old content").unwrap();
        std::io::Write::write_all(&mut create_output(&dir.path().join("old.csv")).unwrap(), b"new").unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("old.csv")).unwrap(), "new");
    }
}
