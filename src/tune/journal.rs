//! Every measured point, appended to a JSON-lines file the moment it is measured, so a crash
//! or Ctrl-C loses nothing finished and `--resume` can continue.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::input::InputError;
use crate::tune::point::Point;

/// The first line of a journal: what was being tuned, so --resume only reuses matching points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub journal: String,
    pub target_file: String,
    pub strategy: String,
    /// A digest of the target file's text: another file means other points.
    pub target_digest: String,
    /// Where the server and the client ran: points measured elsewhere are other points.
    /// (None in journals written before placements were recorded.)
    #[serde(default)]
    pub placement: Option<crate::sys::cpus::Placement>,
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Line {
    Header(Header),
    Point(Box<Point>),
}

/// An open tune journal: a header line, then one JSON line per measured point. It is held
/// under an exclusive lock (flock) while open: a second tuning on the same journal is refused
/// rather than mixing its points (or its header) into this one's.
pub struct Journal {
    path: PathBuf,
    file: Flock<std::fs::File>,
    torn: usize,
    replaced: usize,
}

impl Journal {
    /// Starts a journal (replacing an old one), or with `resume` reopens it and returns the
    /// points it holds when its header matches. A line that is not a whole point (cut short
    /// by a crash, or torn by a writer that did not lock) is skipped and counted
    /// (`torn_lines`).
    pub fn open(path: &Path, header: &Header, resume: bool) -> anyhow::Result<(Journal, Vec<Point>)> {
        // The rule of every file webtune writes: an ordinary file of this user, or nothing yet.
        crate::safe_write::check(path)?;
        // O_APPEND: each line lands whole at the end, whatever else has the file open.
        let file = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
            .with_context(|| format!("cannot write the journal {}", path.display()))?;
        // A FIFO or a device would block the resume's read, or take no lines at all.
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            return Err(InputError(format!("the journal {} is not a regular file", path.display())).into());
        }
        let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => locked,
            Err((_, Errno::EWOULDBLOCK)) => anyhow::bail!(
                "the journal {} is being written by another webtune tune: give this one its own --journal",
                path.display()
            ),
            Err((_, e)) => return Err(e).with_context(|| format!("cannot lock the journal {}", path.display())),
        };
        let mut reused = Vec::new();
        let mut torn = 0;
        if resume {
            let mut text = Vec::new();
            file.read_to_end(&mut text).with_context(|| format!("cannot read {}", path.display()))?;
            let mut lines = text.split(|&b| b == b'\n').filter(|l| !l.is_empty());
            if let Some(first) = lines.next() {
                match serde_json::from_slice::<Line>(first) {
                    Ok(Line::Header(h)) if h == *header => {}
                    Ok(Line::Header(h)) if h.placement != header.placement => {
                        let was = h.placement.map_or("not recorded".into(), |p| p.describe());
                        anyhow::bail!(
                            "{} was measured with another placement ({was}); resume with the same --cpus, or start afresh",
                            path.display()
                        )
                    }
                    Ok(Line::Header(_)) => {
                        anyhow::bail!(
                            "{} is the journal of another tuning (target file or strategy differ)",
                            path.display()
                        )
                    }
                    _ => anyhow::bail!("{} is not a webtune tune journal", path.display()),
                }
            }
            for line in lines {
                match serde_json::from_slice::<Line>(line) {
                    Ok(Line::Point(p)) => reused.push(*p),
                    _ => torn += 1,
                }
            }
            // A last line cut short: end it, or the next point would be glued onto it.
            if !reused.is_empty() && text.last() != Some(&b'\n') {
                file.write_all(b"\n").with_context(|| format!("cannot write {}", path.display()))?;
            }
        }
        let mut replaced = 0;
        if reused.is_empty() {
            if !resume {
                // Said by the caller: an earlier tune's points are not replaced in silence.
                let mut text = Vec::new();
                file.read_to_end(&mut text).with_context(|| format!("cannot read {}", path.display()))?;
                replaced = text.split(|&b| b == b'\n').skip(1).filter(|l| !l.is_empty()).count();
            }
            file.set_len(0).with_context(|| format!("cannot write {}", path.display()))?;
            let mut line = serde_json::to_vec(&Line::Header(header.clone()))?;
            line.push(b'\n');
            file.write_all(&line).with_context(|| format!("cannot write {}", path.display()))?;
        }
        Ok((Journal { path: path.to_path_buf(), file, torn, replaced }, reused))
    }

    /// Appends one point, flushed to the disk before returning. The line goes out in one
    /// write: never interleaved with another's.
    pub fn append(&mut self, p: &Point) -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(&Line::Point(Box::new(p.clone())))?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|()| self.file.sync_data())
            .with_context(|| format!("cannot write {}", self.path.display()))
    }

    /// The journal's file, to name in messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Lines of the resumed journal that were not whole points, skipped.
    pub fn torn_lines(&self) -> usize {
        self.torn
    }

    /// Points of an earlier tune the file held, replaced by this one (not resumed).
    pub fn replaced_points(&self) -> usize {
        self.replaced
    }

    /// The header of the journal at `path`, when it is one.
    pub fn header_of(path: &Path) -> Option<Header> {
        use std::io::BufRead;
        let mut first = String::new();
        std::io::BufReader::new(std::fs::File::open(path).ok()?).read_line(&mut first).ok()?;
        match serde_json::from_str::<Line>(&first).ok()? {
            Line::Header(h) => Some(h),
            Line::Point(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::Settings;

    fn header() -> Header {
        Header {
            journal: "webtune.tune.v1".into(),
            target_file: "t.toml".into(),
            strategy: "s".into(),
            target_digest: "0".into(),
            placement: None,
        }
    }

    fn point(step: &str) -> Point {
        Point::failed(step, &Settings::default(), "x".into(), 1.0)
    }

    #[test]
    fn a_second_writer_is_refused_while_the_first_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        let (mut first, _) = Journal::open(&path, &header(), false).unwrap();
        first.append(&point("a")).unwrap();
        for resume in [false, true] {
            let err = Journal::open(&path, &header(), resume).err().expect("refused");
            assert!(format!("{err:#}").contains("being written by another webtune tune"), "{err:#}");
        }
        // The refused opens changed nothing: the first goes on, and its points are all there.
        first.append(&point("b")).unwrap();
        drop(first);
        let (again, points) = Journal::open(&path, &header(), true).unwrap();
        assert_eq!(points.iter().map(|p| p.step.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(again.torn_lines(), 0);
    }

    #[test]
    fn a_journal_that_is_no_regular_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        // A FIFO would block --resume's read for ever; a device takes no lines.
        for (path, resume) in [(fifo.as_path(), true), (fifo.as_path(), false), (Path::new("/dev/null"), false)] {
            let err = Journal::open(path, &header(), resume).err().expect("refused");
            assert!(err.downcast_ref::<InputError>().is_some(), "{err:#}");
            assert!(format!("{err:#}").contains("not a regular file"), "{err:#}");
        }
    }

    #[test]
    fn torn_lines_are_skipped_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        let (mut j, _) = Journal::open(&path, &header(), false).unwrap();
        j.append(&point("a")).unwrap();
        drop(j);
        // Two writers' halves on one line (one cut inside a UTF-8 character), then a line cut
        // short by a crash: as unlocked writers and a SIGKILL leave them.
        let whole = serde_json::to_vec(&Line::Point(Box::new(point("é")))).unwrap();
        let mut text = std::fs::read(&path).unwrap();
        text.extend_from_slice(&whole[..whole.len() / 2]);
        text.extend_from_slice(&whole[..whole.iter().position(|&b| b >= 0x80).unwrap() + 1]);
        text.push(b'\n');
        text.extend_from_slice(&serde_json::to_vec(&Line::Point(Box::new(point("c")))).unwrap());
        text.push(b'\n');
        text.extend_from_slice(&whole[..10]);
        std::fs::write(&path, text).unwrap();
        let (mut j, points) = Journal::open(&path, &header(), true).unwrap();
        assert_eq!(points.iter().map(|p| p.step.as_str()).collect::<Vec<_>>(), ["a", "c"]);
        assert_eq!(j.torn_lines(), 2);
        // The next point is not glued onto the line cut short.
        j.append(&point("d")).unwrap();
        drop(j);
        let (_, points) = Journal::open(&path, &header(), true).unwrap();
        assert_eq!(points.iter().map(|p| p.step.as_str()).collect::<Vec<_>>(), ["a", "c", "d"]);
    }
}
