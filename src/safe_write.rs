//! Every file webtune writes at a path the user named (--html, --hdr-log, manpage --dir...)
//! follows one rule: a symlink is followed to the real file, but what is there must be an
//! ordinary file of this user, or nothing yet. A device (/dev/full), a FIFO (whose open would
//! block before any load, deaf to Ctrl-C), a directory or another user's file is refused, in
//! one line, exit 2, before anything is written.

use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::input::InputError;

/// The real path to write `path` at (its symlinks followed), and the mode of the file there;
/// an error when what is there is not an ordinary file of this user.
pub fn check(path: &Path) -> Result<(PathBuf, Option<u32>), InputError> {
    match std::fs::metadata(path) {
        Ok(m) => {
            check_meta(path, &m)?;
            let real = std::fs::canonicalize(path).map_err(|e| cannot(path, &e))?;
            Ok((real, Some(m.permissions().mode())))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A dangling symlink would be followed by a create: refused, as a file it names is unknown.
            if std::fs::symlink_metadata(path).is_ok() {
                return Err(InputError(format!("{}: a symlink to nothing; give a file name", path.display())));
            }
            Ok((path.to_path_buf(), None))
        }
        Err(e) => Err(InputError(format!("cannot create {}: {e}", path.display()))),
    }
}

fn check_meta(path: &Path, m: &std::fs::Metadata) -> Result<(), InputError> {
    if !m.is_file() {
        return Err(InputError(format!("{}: not a regular file; give a file name", path.display())));
    }
    if m.uid() != nix::unistd::geteuid().as_raw() {
        return Err(InputError(format!("{}: belongs to another user; not replaced", path.display())));
    }
    Ok(())
}

fn cannot(path: &Path, e: &dyn std::fmt::Display) -> InputError {
    InputError(format!("cannot write {}: {e}", path.display()))
}

/// A file to stream into (an HdrHistogram log): opened without following a symlink and
/// without blocking (a FIFO put there after the check fails instead of waiting), checked
/// again on the open file, then emptied.
pub fn create(path: &Path) -> Result<File, InputError> {
    let (real, _) = check(path)?;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o666)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(&real)
        .map_err(|e| InputError(format!("cannot create {}: {e}", path.display())))?;
    check_meta(path, &file.metadata().map_err(|e| cannot(path, &e))?)?;
    file.set_len(0).map_err(|e| cannot(path, &e))?;
    // Blocking again: an ordinary file's writes never wait on a reader.
    nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::empty()))
        .map_err(|e| cannot(path, &e))?;
    Ok(file)
}

/// Writes `bytes` to `path` as editors do: a new file beside the real one, given the old
/// file's mode, then renamed over it, so a reader never sees half of it.
pub fn replace(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let (real, mode) = check(path)?;
    let dir = real.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new().prefix(".webtune-out").tempfile_in(dir).map_err(|e| cannot(path, &e))?;
    std::io::Write::write_all(&mut tmp, bytes).map_err(|e| cannot(path, &e))?;
    let mode = mode.unwrap_or(0o666 & !current_umask());
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(mode)).map_err(|e| cannot(path, &e))?;
    tmp.persist(&real).map_err(|e| cannot(path, &e.error))?;
    Ok(())
}

/// A directory to write files in: made when missing; an existing one must be this user's.
pub fn directory(dir: &Path) -> Result<(), InputError> {
    std::fs::create_dir_all(dir).map_err(|e| cannot(dir, &e))?;
    let m = std::fs::metadata(dir).map_err(|e| cannot(dir, &e))?;
    if !m.is_dir() || m.uid() != nix::unistd::geteuid().as_raw() {
        return Err(InputError(format!("{}: not a directory of this user's", dir.display())));
    }
    Ok(())
}

/// The process's file-creation mask (read by setting it and setting it back).
fn current_umask() -> u32 {
    use nix::sys::stat::{Mode, umask};
    let old = umask(Mode::from_bits_truncate(0o022));
    umask(old);
    old.bits()
}
