//! A user's own configuration tree (`[target] config = "PATH"`): the files the server reads
//! (its main file and what that includes), read once and never written; their copy in the
//! run directory, where the server runs from; and the answer, a unified diff of the user's
//! files for the recommended values that `patch -p1 -d BASE` applies.
//!
//! Two layers of change are kept apart: the knobs' edits, which are the user's to take (they
//! make the diff), and the run's rewrites (loopback listeners, pid, log and socket paths),
//! which only make the copy runnable here and never reach the diff.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};

use crate::input::InputError;

/// The most files a tree may hold, and bytes in all: a configuration, not a file system.
pub const MAX_FILES: usize = 2000;
/// The most bytes the files of a tree may hold together.
pub const MAX_BYTES: usize = 64 << 20;
/// The most times files may be parsed, a file included again counting again, and the most
/// bytes so parsed: includes that fan out (a file including the next twice, and so on) grow
/// without bound under any depth cap, so the walk counts as it goes.
pub const MAX_READS: usize = 50_000;
/// The most bytes the reads may parse together (see `MAX_READS`).
pub const MAX_READ_BYTES: usize = 2 * MAX_BYTES;
/// The most entries one directory of an include may list: a walk counts them as it reads.
pub const MAX_ENTRIES: usize = 10 * MAX_FILES;

/// Where a launch runs the copy of a user's tree, and what it serves there: one answer for
/// both adapters that copy a tree (nginx, Apache).
pub struct CopyPlace<'a> {
    /// The run directory (logs, pid files, sockets).
    pub run_dir: &'a Path,
    /// Where the copy of the tree is written, inside `run_dir` (Apache's ServerRoot).
    pub copy_dir: &'a Path,
    /// The loopback address every listener moves to.
    pub host: &'a str,
    /// The port webtune loads: the loaded virtual host's (server block's).
    pub load_port: u16,
    /// The virtual host to load: `[target] site` (nginx's pick, site or the load's Host, here).
    pub site: Option<&'a str>,
    /// `[load]`'s Host header, which picks a virtual host when one answers to it (Apache's).
    pub host_header: Option<&'a str>,
    /// Addresses that moved (`unix:/run/php/php8.2-fpm.sock` -> `unix:RUN/fpm.sock`), which
    /// the copy's passes follow.
    pub moved: &'a [(String, String)],
    /// Whether webtune runs as root: the tree's `user` (User, Group) then stays.
    pub as_root: bool,
}

/// One file of the tree as the user has it.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeFile {
    /// Where it is (absolute, as the server names it).
    pub path: PathBuf,
    pub text: String,
    /// Where each line starts in `text`: a line found by its number without rescanning
    /// the file (a tree of 400k lines would be read in quadratic time).
    starts: Vec<usize>,
    /// Its device and inode: an include that reaches it again while it is being read is a
    /// loop, whatever path (a symlink) it came by.
    id: (u64, u64),
}

impl TreeFile {
    /// Line `n` (from 0) without its line ending, as `text.lines().nth(n)` gives it.
    pub fn line(&self, n: usize) -> Option<&str> {
        if n >= self.line_count() {
            return None;
        }
        let end = self.starts.get(n + 1).copied().unwrap_or(self.text.len());
        let line = &self.text[self.starts[n]..end];
        Some(match line.strip_suffix('\n') {
            Some(l) => l.strip_suffix('\r').unwrap_or(l),
            None => line,
        })
    }

    /// How many lines it has, as `text.lines().count()` counts them.
    pub fn line_count(&self) -> usize {
        self.starts.len() - usize::from(self.text.is_empty() || self.text.ends_with('\n'))
    }

    /// The line (from 1) byte `pos` is on: one more than the newlines before it.
    pub fn line_at(&self, pos: usize) -> usize {
        self.starts.partition_point(|&s| s <= pos)
    }
}

/// Where each line of `text` starts: 0, and after every newline.
fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(text.bytes().enumerate().filter(|(_, b)| *b == b'\n').map(|(i, _)| i + 1));
    starts
}

/// Every name a tree's diff can have (`UserTree::name`), so that `--diff DIR` can be checked
/// before the first launch.
pub const DIFF_NAMES: [&str; 4] = ["apache2", "nginx", "php-fpm", "uwsgi"];

/// The files a server reads, main file first, in the order it reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct UserTree {
    /// The diff's name: "apache2", "nginx", "php-fpm", "uwsgi".
    pub name: String,
    /// The main file's directory: the diff's paths are relative to it.
    pub base: PathBuf,
    pub files: Vec<TreeFile>,
    /// Each file's index by its path.
    index: HashMap<PathBuf, usize>,
    /// The bytes of every file read.
    bytes: usize,
    /// Files parsed so far (again for each include of one) and their bytes: `MAX_READS`.
    reads: usize,
    read_bytes: usize,
    /// The files being parsed now, outermost first (their ids).
    open: Vec<(u64, u64)>,
}

/// Edited texts by the file's path (absolute): what a knob changed.
pub type Edits = BTreeMap<PathBuf, String>;

impl UserTree {
    /// A tree whose main file is `main` (read now).
    pub fn new(name: &str, main: &Path) -> Result<UserTree, InputError> {
        let main = std::fs::canonicalize(main)
            .map_err(|e| InputError(format!("cannot read configuration {}: {e}", main.display())))?;
        let base = main.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("/"));
        let mut tree = UserTree {
            name: name.to_string(),
            base,
            files: Vec::new(),
            index: HashMap::new(),
            bytes: 0,
            reads: 0,
            read_bytes: 0,
            open: Vec::new(),
        };
        tree.read(&main)?;
        Ok(tree)
    }

    /// Reads `path` into the tree (once: a file included twice is read once), and returns its
    /// index.
    pub fn read(&mut self, path: &Path) -> Result<usize, InputError> {
        if let Some(&i) = self.index.get(path) {
            return Ok(i);
        }
        if self.files.len() >= MAX_FILES {
            return Err(InputError(format!("{}: more than {MAX_FILES} configuration files", self.main().display())));
        }
        let text = crate::input::read_text(path, "configuration file")?;
        if self.bytes + text.len() > MAX_BYTES {
            return Err(InputError(format!("{}: configuration files over {} MiB", path.display(), MAX_BYTES >> 20)));
        }
        let id = std::fs::metadata(path)
            .map(|m| {
                use std::os::unix::fs::MetadataExt;
                (m.dev(), m.ino())
            })
            .map_err(|e| InputError(format!("cannot read configuration file {}: {e}", path.display())))?;
        self.bytes += text.len();
        let starts = line_starts(&text);
        self.files.push(TreeFile { path: path.to_path_buf(), text, starts, id });
        self.index.insert(path.to_path_buf(), self.files.len() - 1);
        Ok(self.files.len() - 1)
    }

    /// Starts parsing file `i` (the main file, or where an include names it): counted against
    /// `MAX_READS` as the walk goes, and refused when the file is being parsed already (an
    /// include loop, through a symlink or not: the server would never finish reading it).
    /// `leave` ends it.
    pub fn enter(&mut self, i: usize) -> Result<(), InputError> {
        let f = &self.files[i];
        if self.open.contains(&f.id) {
            return Err(InputError(format!("{} includes itself (an include loop)", f.path.display())));
        }
        self.reads += 1;
        self.read_bytes += f.text.len();
        if self.reads > MAX_READS || self.read_bytes > MAX_READ_BYTES {
            return Err(InputError(format!(
                "{}: includes read over {MAX_READS} files or {} MiB in all (includes that fan out)",
                f.path.display(),
                MAX_READ_BYTES >> 20
            )));
        }
        self.open.push(f.id);
        Ok(())
    }

    /// Ends the parse `enter` started last.
    pub fn leave(&mut self) {
        self.open.pop();
    }

    /// The main file (the one the server is started with).
    pub fn main(&self) -> &Path {
        self.files.first().map_or(&self.base, |f| &f.path)
    }

    /// The text of the file at `path`, if the tree holds it.
    pub fn text(&self, path: &Path) -> Option<&str> {
        self.index.get(path).map(|&i| self.files[i].text.as_str())
    }

    /// `path` as the diff names it: relative to the main file's directory.
    pub fn relative(&self, path: &Path) -> PathBuf {
        relative_to(path, &self.base)
    }

    /// Where `path` goes in a copy rooted at `root`: the same place relative to the main
    /// file's directory, so that the tree's relative includes still resolve.
    pub fn copied(&self, root: &Path, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.base) {
            Ok(rel) => root.join(rel),
            // Outside the base (an absolute include elsewhere): under root/_outside/, whole.
            Err(_) => root.join("_outside").join(path.strip_prefix("/").unwrap_or(path)),
        }
    }

    /// Writes every file into `root` (the run directory's copy), each with its text from
    /// `texts` when given there, else as the user has it. Returns the main file's copy.
    pub fn write_copy(&self, root: &Path, texts: &Edits) -> anyhow::Result<PathBuf> {
        for f in &self.files {
            let to = self.copied(root, &f.path);
            if let Some(dir) = to.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let text = texts.get(&f.path).unwrap_or(&f.text);
            std::fs::write(&to, text).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", to.display()))?;
        }
        Ok(self.copied(root, self.main()))
    }

    /// The unified diff from the user's files to `edited` (paths relative to the main file's
    /// directory, `a/` and `b/` prefixes: `patch -p1 -d BASE`), None when nothing changes.
    /// Files outside the base are in it too, with `..` in their names: for reading (the
    /// configuration shown with a trial); a patch refuses them, so `diffs` splits them off.
    pub fn diff(&self, edited: &Edits) -> Option<String> {
        let out: String = self.files.iter().filter_map(|f| self.file_diff(f, edited, &self.base)).collect();
        (!out.is_empty()).then_some(out)
    }

    /// The diffs to write, each one that `patch -p1 -d DIR` applies (`diff_dir` names DIR):
    /// the files under the main file's directory as `NAME`, and those an absolute include
    /// reads from elsewhere as `NAME.root`, relative to `/` (patch refuses `..` in a name).
    pub fn diffs(&self, edited: &Edits) -> Vec<(String, String)> {
        let (inside, outside): (Vec<&TreeFile>, Vec<&TreeFile>) =
            self.files.iter().partition(|f| f.path.starts_with(&self.base));
        let root = Path::new("/");
        let inside: String = inside.iter().filter_map(|f| self.file_diff(f, edited, &self.base)).collect();
        let outside: String = outside.iter().filter_map(|f| self.file_diff(f, edited, root)).collect();
        [(self.name.clone(), inside), (format!("{}{ROOT_SUFFIX}", self.name), outside)]
            .into_iter()
            .filter(|(_, d)| !d.is_empty())
            .collect()
    }

    /// One file's part of a diff, its names relative to `base`; None when it is unchanged.
    fn file_diff(&self, f: &TreeFile, edited: &Edits, base: &Path) -> Option<String> {
        let new = edited.get(&f.path).filter(|t| **t != f.text)?;
        let rel = relative_to(&f.path, base).display().to_string();
        let diff = similar::TextDiff::from_lines(f.text.as_str(), new.as_str());
        let mut out =
            diff.unified_diff().context_radius(3).header(&patch_name("a", &rel), &patch_name("b", &rel)).to_string();
        // A file without a final newline still ends its hunk on a line of its own.
        if !out.ends_with('\n') {
            out.push('\n');
        }
        Some(out)
    }
}

/// The suffix of a tree's diff of the files it reads from outside its main file's directory,
/// applied in `/`.
pub const ROOT_SUFFIX: &str = ".root";

/// `PREFIX/NAME` as a diff header names it: in C-style quotes when the name holds a space,
/// a quote, a backslash, a control or a non-ASCII byte (`"b/my site.conf"`), which GNU patch
/// (2.7+) and git read; bare, a space would end the name and a newline break the patch.
fn patch_name(prefix: &str, rel: &str) -> String {
    let name = format!("{prefix}/{rel}");
    if name.bytes().all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\') {
        return name;
    }
    let mut out = String::from("\"");
    for b in name.bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b' ' => out.push(' '),
            b if b.is_ascii_graphic() => out.push(char::from(b)),
            b => out.push_str(&format!("\\{b:03o}")),
        }
    }
    out.push('"');
    out
}

/// The files a diff changes, as it names them (`+++ b/PATH`, or `+++ "b/PATH"` quoted).
pub fn changed_files(diff: &str) -> Vec<String> {
    diff.lines()
        .filter_map(|l| l.strip_prefix("+++ "))
        .filter_map(|l| {
            let name = l.split('\t').next().unwrap_or(l);
            match name.strip_prefix("\"b/").and_then(|n| n.strip_suffix('"')) {
                Some(quoted) => Some(unquote(quoted)),
                None => name.strip_prefix("b/").map(str::to_string),
            }
        })
        .collect()
}

/// A C-quoted name's text (`patch_name`'s escapes undone).
fn unquote(quoted: &str) -> String {
    let mut bytes = Vec::new();
    let mut rest = quoted.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        rest = tail;
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        let (byte, tail) = match rest {
            [b'n', tail @ ..] => (b'\n', tail),
            [b't', tail @ ..] => (b'\t', tail),
            [a @ b'0'..=b'3', b @ b'0'..=b'7', c @ b'0'..=b'7', tail @ ..] => {
                ((a - b'0') * 64 + (b - b'0') * 8 + (c - b'0'), tail)
            }
            [c, tail @ ..] => (*c, tail),
            [] => (b'\\', rest),
        };
        bytes.push(byte);
        rest = tail;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `path` relative to `base`, with `..` where it lies outside.
fn relative_to(path: &Path, base: &Path) -> PathBuf {
    let p: Vec<Component> = path.components().collect();
    let b: Vec<Component> = base.components().collect();
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c.as_os_str());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_patch_cannot_read_bare_are_quoted_and_read_back() {
        assert_eq!(patch_name("b", "sites-available/default"), "b/sites-available/default");
        assert_eq!(patch_name("b", "my site.conf"), "\"b/my site.conf\"");
        assert_eq!(patch_name("a", "nl\nname \"q\" \\ é.conf"), "\"a/nl\\nname \\\"q\\\" \\\\ \\303\\251.conf\"");
        for name in ["plain.conf", "my site.conf", "nl\nname \"q\" \\ é.conf"] {
            let header = format!("+++ {}\n", patch_name("b", name));
            assert_eq!(changed_files(&header), [name.to_string()], "{header}");
        }
    }

    /// `patch -p1 -d DIR` of `diff`, not dry: its status and output.
    fn patch(dir: &Path, diff: &str) -> (bool, String) {
        use std::io::Write;
        let mut c = std::process::Command::new("patch")
            .args(["-p1", "-d"])
            .arg(dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("patch");
        c.stdin.take().unwrap().write_all(diff.as_bytes()).unwrap();
        let out = c.wait_with_output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    }

    #[test]
    fn a_file_outside_the_tree_gets_a_diff_of_its_own_that_applies_in_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(dir.path()).unwrap();
        let (user, outside) = (dir.join("etc/apache2"), dir.join("srv/outside"));
        std::fs::create_dir_all(&user).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let (main, mpm) = (user.join("apache2.conf"), outside.join("mpm.conf"));
        std::fs::write(&main, format!("Include {}\nTimeout 300\n", mpm.display())).unwrap();
        std::fs::write(&mpm, "MaxRequestWorkers 150\n").unwrap();
        let mut tree = UserTree::new("apache2", &main).unwrap();
        tree.read(&mpm).unwrap();
        let mut edits = Edits::new();
        edits.insert(mpm.clone(), "MaxRequestWorkers 12\n".into());
        edits.insert(main.clone(), format!("Include {}\nTimeout 60\n", mpm.display()));
        let diffs = tree.diffs(&edits);
        let names: Vec<&str> = diffs.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["apache2", "apache2.root"]);
        assert_eq!(changed_files(&diffs[0].1), ["apache2.conf"]);
        let rooted = mpm.strip_prefix("/").unwrap().display().to_string();
        assert_eq!(changed_files(&diffs[1].1), [rooted.as_str()]);
        assert!(!diffs.iter().any(|(_, d)| d.contains("..")), "{diffs:?}");
        // Each applies with the command webtune prints: the tree's in its directory, the
        // other in / (its files are the test's own, under the temporary directory).
        assert!(patch(&user, &diffs[0].1).0);
        let (ok, said) = patch(Path::new("/"), &diffs[1].1);
        assert!(ok, "{said}");
        assert_eq!(std::fs::read_to_string(&mpm).unwrap(), "MaxRequestWorkers 12\n");
        assert!(std::fs::read_to_string(&main).unwrap().contains("Timeout 60"));
    }

    #[test]
    fn lines_are_found_by_number_and_position_as_the_text_has_them() {
        let dir = tempfile::tempdir().unwrap();
        for text in ["", "a", "a\n", "a\r\nb", "a\n\nb\n", "\n", "x\r\n\r\ny\r"] {
            let path = dir.path().join("f.conf");
            std::fs::write(&path, text).unwrap();
            let tree = UserTree::new("t", &path).unwrap();
            let f = &tree.files[0];
            assert_eq!(f.line_count(), text.lines().count(), "{text:?}");
            for n in 0..=f.line_count() {
                assert_eq!(f.line(n), text.lines().nth(n), "{text:?} line {n}");
            }
            for pos in 0..=text.len() {
                assert_eq!(f.line_at(pos), text[..pos].matches('\n').count() + 1, "{text:?} at {pos}");
            }
        }
    }

    #[test]
    fn a_diff_names_the_users_files_and_patch_applies_it() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("etc");
        std::fs::create_dir_all(user.join("mods-enabled")).unwrap();
        std::fs::write(user.join("main.conf"), "Include mods-enabled/*.conf\nTimeout 300\n").unwrap();
        let mpm = user.join("mods-enabled/mpm.conf");
        std::fs::write(&mpm, "<IfModule mpm_prefork_module>\n\tMaxRequestWorkers 150\n</IfModule>\n").unwrap();
        let mut tree = UserTree::new("apache2", &user.join("main.conf")).unwrap();
        let mpm = std::fs::canonicalize(&mpm).unwrap();
        tree.read(&mpm).unwrap();
        assert_eq!(tree.read(&mpm).unwrap(), 1, "read once");
        assert_eq!(tree.diff(&Edits::new()), None);
        let mut edits = Edits::new();
        edits.insert(mpm.clone(), "<IfModule mpm_prefork_module>\n\tMaxRequestWorkers 12\n</IfModule>\n".into());
        let diff = tree.diff(&edits).unwrap();
        assert_eq!(changed_files(&diff), ["mods-enabled/mpm.conf"]);
        assert!(diff.contains("-\tMaxRequestWorkers 150\n+\tMaxRequestWorkers 12\n"), "{diff}");

        // The copy keeps the layout; the user's files are not touched.
        let copy = dir.path().join("run");
        let main = tree.write_copy(&copy, &edits).unwrap();
        assert_eq!(main, copy.join("main.conf"));
        assert!(std::fs::read_to_string(copy.join("mods-enabled/mpm.conf")).unwrap().contains("12"));
        assert!(std::fs::read_to_string(&mpm).unwrap().contains("150"));

        if let Ok(out) = std::process::Command::new("patch")
            .args(["-p1", "--dry-run", "-d"])
            .arg(&user)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(diff.as_bytes())?;
                c.wait_with_output()
            })
        {
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
        }
        assert_eq!(
            relative_to(Path::new("/etc/php/fpm/pool.d/www.conf"), Path::new("/etc/php/fpm")),
            PathBuf::from("pool.d/www.conf")
        );
        assert_eq!(relative_to(Path::new("/etc/x.conf"), Path::new("/etc/php")), PathBuf::from("../x.conf"));
    }
}
