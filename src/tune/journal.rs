//! Every measured point, appended to a JSON-lines file the moment it is measured, so a crash
//! or Ctrl-C loses nothing finished and `--resume` can continue.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::Point;

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

/// An open tune journal: a header line, then one JSON line per measured point.
pub struct Journal {
    path: PathBuf,
    file: std::fs::File,
}

impl Journal {
    /// Starts a journal (replacing an old one), or with `resume` reopens it and returns the
    /// points it holds when its header matches.
    pub fn open(path: &Path, header: &Header, resume: bool) -> anyhow::Result<(Journal, Vec<Point>)> {
        let mut reused = Vec::new();
        if resume && path.exists() {
            let f = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
            let mut lines = std::io::BufReader::new(f).lines();
            let first = lines.next().transpose()?.unwrap_or_default();
            match serde_json::from_str::<Line>(&first) {
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
            for line in lines {
                // A line cut short by a crash is the only one that may not parse: skip it.
                if let Ok(Line::Point(p)) = serde_json::from_str::<Line>(&line?) {
                    reused.push(*p);
                }
            }
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(resume)
            .write(true)
            .truncate(!resume)
            .open(path)
            .with_context(|| format!("cannot write the journal {}", path.display()))?;
        if !resume || reused.is_empty() {
            file.set_len(0)?;
            writeln!(file, "{}", serde_json::to_string(&Line::Header(header.clone()))?)?;
        }
        Ok((Journal { path: path.to_path_buf(), file }, reused))
    }

    /// Appends one point, flushed to the disk before returning.
    pub fn append(&mut self, p: &Point) -> anyhow::Result<()> {
        let line = serde_json::to_string(&Line::Point(Box::new(p.clone())))?;
        writeln!(self.file, "{line}")
            .and_then(|()| self.file.sync_data())
            .with_context(|| format!("cannot write {}", self.path.display()))
    }

    /// The journal's file, to name in messages.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
