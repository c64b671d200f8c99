//! Seed 004's static workload: a SPECweb96 file set on disk and the weighted URL list that
//! requests it with SPECweb96's mix.
//!
//! SPECweb96 ("The Workload for the SPECweb96 Benchmark", spec.org/web96/workload.html):
//! four classes of nine files each per directory, class 0 of 0.1-0.9 KB, class 1 of 1-9 KB,
//! class 2 of 10-90 KB, class 3 of 100-900 KB; requests go 35% / 50% / 14% / 1% to the
//! classes; within a class a Poisson distribution centred on the class's midpoint picks the
//! file; the number of directories grows with the square root of the target operations per
//! second, `(int)(10 * sqrt(ops / 5))`. Each directory is one "member" of a web provider, and
//! clients reference random pages throughout (spec.org/web96/notes.html): the directory is
//! drawn uniformly.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::input::InputError;

/// The request share of each class (SPECweb96 Table 1).
pub const CLASS_MIX: [f64; 4] = [0.35, 0.50, 0.14, 0.01];
/// Files per class per directory.
pub const FILES_PER_CLASS: usize = 9;
/// The mean of the Poisson distribution that picks a file within its class: the midpoint of
/// files 0..=8.
pub const POISSON_MEAN: f64 = 4.0;
/// The file set's own name for itself, in the directory it was written to.
pub const MANIFEST: &str = "fileset.toml";
/// The URL list, in the file set's directory.
pub const URL_LIST: &str = "urls.txt";
/// The directory of the files, as SPECweb96 names it.
pub const FILE_SET: &str = "file_set";
/// The largest target: 1,000 directories, 4.9 GB.
pub const MAX_OPS: u32 = 50_000;

/// The number of directories for `ops` operations per second (at least one).
pub fn directories(ops: u32) -> usize {
    ((10.0 * (f64::from(ops) / 5.0).sqrt()) as usize).max(1)
}

/// The size in bytes of file `file` (0-8) of class `class` (0-3): (file + 1) tenths of a KiB
/// times 10^class; class 0's sizes rounded to the nearest byte (102, 205, ... 922).
pub fn size(class: usize, file: usize) -> u64 {
    let tenths = (file as u64 + 1) * 10u64.pow(class as u32);
    (tenths * 1024 + 5) / 10
}

/// The share of its class's requests that file `file` (0-8) gets: Poisson(4), truncated to
/// the nine files and renormalised.
pub fn popularity(file: usize) -> f64 {
    let p = |k: usize| {
        let fact: f64 = (1..=k).map(|i| i as f64).product();
        (-POISSON_MEAN).exp() * POISSON_MEAN.powi(k as i32) / fact
    };
    let total: f64 = (0..FILES_PER_CLASS).map(p).sum();
    p(file) / total
}

/// The URL path of a file of the set.
pub fn url_path(dir: usize, class: usize, file: usize) -> String {
    format!("/{FILE_SET}/dir{dir}/class{class}_{file}")
}

/// The class of a URL path of the set (`/file_set/dir3/class2_7` -> 2).
pub fn class_of(path: &str) -> Option<usize> {
    let name = path.rsplit('/').next()?.strip_prefix("class")?;
    let (class, file) = name.split_once('_')?;
    let class: usize = class.parse().ok()?;
    let file: usize = file.parse().ok()?;
    (class < CLASS_MIX.len() && file < FILES_PER_CLASS).then_some(class)
}

/// What was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub ops: u32,
    pub directories: usize,
    pub files: usize,
    pub bytes: u64,
    pub url_list: PathBuf,
}

/// The bytes one directory holds.
pub fn directory_bytes() -> u64 {
    (0..CLASS_MIX.len()).flat_map(|c| (0..FILES_PER_CLASS).map(move |f| size(c, f))).sum()
}

/// Writes the file set for `ops` operations per second under `root`: `file_set/dirN/classC_F`,
/// the weighted URL list `urls.txt` and the manifest. `root` must be absent, empty or a file
/// set written before (replaced); nothing is written outside it.
pub fn write(root: &Path, ops: u32) -> Result<Written, InputError> {
    if !(1..=MAX_OPS).contains(&ops) {
        return Err(InputError(format!("--ops {ops}: expected 1 to {MAX_OPS} operations per second")));
    }
    let dirs = directories(ops);
    let bytes = dirs as u64 * directory_bytes();
    prepare(root)?;
    check_room(root, bytes)?;
    let err = |p: &Path, e: std::io::Error| InputError(format!("cannot write {}: {e}", p.display()));
    // The manifest first: an interrupted run leaves a set that the next run may replace.
    let manifest = root.join(MANIFEST);
    std::fs::write(&manifest, format!("# written by webtune fileset\nops = {ops}\ndirectories = {dirs}\n"))
        .map_err(|e| err(&manifest, e))?;
    let mut files = 0;
    for d in 0..dirs {
        let dir = root.join(FILE_SET).join(format!("dir{d}"));
        std::fs::create_dir_all(&dir).map_err(|e| err(&dir, e))?;
        for class in 0..CLASS_MIX.len() {
            for file in 0..FILES_PER_CLASS {
                let path = dir.join(format!("class{class}_{file}"));
                std::fs::write(&path, content(size(class, file))).map_err(|e| err(&path, e))?;
                files += 1;
            }
        }
    }
    let url_list = root.join(URL_LIST);
    let mut out = std::io::BufWriter::new(std::fs::File::create(&url_list).map_err(|e| err(&url_list, e))?);
    url_list_text(&mut out, ops, dirs).map_err(|e| err(&url_list, e))?;
    out.flush().map_err(|e| err(&url_list, e))?;
    Ok(Written { ops, directories: dirs, files, bytes, url_list })
}

/// The URL list: every file once, weighted by its class's share, its popularity within the
/// class and the uniform choice of its directory.
fn url_list_text(out: &mut impl Write, ops: u32, dirs: usize) -> std::io::Result<()> {
    writeln!(out, "# SPECweb96 file set for {ops} ops/s: {dirs} directories of 36 files.")?;
    writeln!(out, "# Class mix 35/50/14/1 %, Poisson(4) within a class, directories uniform.")?;
    writeln!(out, "# webtune bench --urls {URL_LIST} http://HOST:PORT/  (relative URLs; weights per line)")?;
    for d in 0..dirs {
        for (class, share) in CLASS_MIX.iter().enumerate() {
            for file in 0..FILES_PER_CLASS {
                let weight = share * popularity(file) / dirs as f64;
                writeln!(out, "{} weight={weight}", url_path(d, class, file))?;
            }
        }
    }
    Ok(())
}

/// A file's bytes: printable text, the same at every size (no server compresses or sniffs it).
fn content(len: u64) -> Vec<u8> {
    const LINE: &[u8] = b"webtune SPECweb96 file set: static content of a fixed size.\n";
    LINE.iter().copied().cycle().take(len as usize).collect()
}

/// Makes `root` ready to be written: created when absent; when it has anything in it, it must
/// be a file set written before, whose own files are removed (and nothing else).
fn prepare(root: &Path) -> Result<(), InputError> {
    let shown = root.display();
    match std::fs::symlink_metadata(root) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return std::fs::create_dir_all(root).map_err(|e| InputError(format!("cannot create {shown}: {e}")));
        }
        Err(e) => return Err(InputError(format!("cannot read {shown}: {e}"))),
        Ok(m) if !m.is_dir() => return Err(InputError(format!("{shown} is not a directory"))),
        Ok(_) => {}
    }
    let entries = std::fs::read_dir(root).map_err(|e| InputError(format!("cannot read {shown}: {e}")))?.count();
    if entries == 0 {
        return Ok(());
    }
    let refuse = |why: &str| {
        InputError(format!(
            "{shown} is not empty and not a file set webtune wrote ({why}): give a new or empty directory"
        ))
    };
    let manifest = std::fs::read_to_string(root.join(MANIFEST)).map_err(|_| refuse("no fileset.toml"))?;
    if !manifest.starts_with("# written by webtune fileset") {
        return Err(refuse("fileset.toml is not webtune's"));
    }
    let set = root.join(FILE_SET);
    if let Ok(m) = std::fs::symlink_metadata(&set) {
        if !m.is_dir() {
            return Err(refuse("file_set is not a directory"));
        }
        // Remove only what the set holds: dirN directories of classC_F files.
        for dir in std::fs::read_dir(&set).map_err(|e| InputError(format!("cannot read {}: {e}", set.display())))? {
            let dir = dir.map_err(|e| InputError(format!("cannot read {}: {e}", set.display())))?;
            let ours = dir.file_name().to_str().is_some_and(|n| n.strip_prefix("dir").is_some_and(is_number))
                && dir.file_type().is_ok_and(|t| t.is_dir());
            if !ours {
                return Err(refuse(&format!("file_set holds {:?}", dir.file_name())));
            }
            for f in std::fs::read_dir(dir.path()).map_err(|e| InputError(format!("cannot read {shown}: {e}")))? {
                let f = f.map_err(|e| InputError(format!("cannot read {shown}: {e}")))?;
                let name = f.file_name();
                let path = format!("/{}", name.to_string_lossy());
                if class_of(&path).is_none() || !f.file_type().is_ok_and(|t| t.is_file()) {
                    return Err(refuse(&format!("file_set holds {}", f.path().display())));
                }
            }
        }
        std::fs::remove_dir_all(&set).map_err(|e| InputError(format!("cannot remove {}: {e}", set.display())))?;
    }
    let _ = std::fs::remove_file(root.join(URL_LIST));
    Ok(())
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Refuses a set that would leave less than 5% of the file system free.
fn check_room(root: &Path, bytes: u64) -> Result<(), InputError> {
    let Ok(fs) = nix::sys::statvfs::statvfs(root) else { return Ok(()) };
    let block = fs.fragment_size();
    let free = fs.blocks_available() * block;
    let reserve = fs.blocks() * block / 20;
    if bytes + reserve > free {
        return Err(InputError(format!(
            "{}: the file set needs {} MB and {} MB are free (5% kept free): give fewer --ops",
            root.display(),
            bytes / 1_000_000,
            free / 1_000_000
        )));
    }
    Ok(())
}

/// The files of the set written under `root`, when `root` holds one (its manifest says how
/// many directories): for the servers' file caches.
pub fn files(root: &Path) -> Option<Vec<PathBuf>> {
    let manifest = std::fs::read_to_string(root.join(MANIFEST)).ok()?;
    let dirs: usize = manifest.lines().find_map(|l| l.strip_prefix("directories = "))?.trim().parse().ok()?;
    let mut out = Vec::with_capacity(dirs * 36);
    for d in 0..dirs {
        for class in 0..CLASS_MIX.len() {
            for file in 0..FILES_PER_CLASS {
                out.push(root.join(url_path(d, class, file).trim_start_matches('/')));
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_specweb96_table_2() {
        assert_eq!((size(0, 0), size(0, 8)), (102, 922));
        assert_eq!((size(1, 0), size(1, 1), size(1, 8)), (1024, 2048, 9216));
        assert_eq!((size(2, 0), size(2, 8)), (10_240, 92_160));
        assert_eq!((size(3, 0), size(3, 8)), (102_400, 921_600));
        assert_eq!(directory_bytes(), 5_119_488);
    }

    #[test]
    fn directories_grow_with_the_square_root_of_ops() {
        assert_eq!(directories(5), 10);
        assert_eq!(directories(1), 4);
        assert_eq!(directories(500), 100);
        assert_eq!(directories(2500), 223);
        assert_eq!(directories(MAX_OPS), 1000);
    }

    #[test]
    fn popularity_is_a_truncated_poisson_around_the_midpoint() {
        let total: f64 = (0..9).map(popularity).sum();
        assert!((total - 1.0).abs() < 1e-12);
        // Poisson(4): files 3 and 4 equally the most popular, 0 the least beside 8.
        assert!((popularity(3) - popularity(4)).abs() < 1e-12);
        assert!(popularity(4) > popularity(5) && popularity(5) > popularity(2));
        assert!((popularity(4) - 0.195_367 / 0.978_637).abs() < 1e-5);
    }

    #[test]
    fn class_of_reads_the_url() {
        assert_eq!(class_of("/file_set/dir12/class2_7"), Some(2));
        assert_eq!(class_of("/file_set/dir12/class4_0"), None);
        assert_eq!(class_of("/index.html"), None);
    }
}
