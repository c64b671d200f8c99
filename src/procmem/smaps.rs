//! Parsing /proc/PID/smaps_rollup (or, on kernels without it, /proc/PID/smaps) into the
//! figures that say what a process really costs.

use serde::{Deserialize, Serialize};

/// One process's memory, KiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemSnapshot {
    /// Resident set: every resident page, shared or not (what ps and top show).
    #[serde(rename = "rss_kib")]
    pub rss: u64,
    /// Proportional set: each shared page divided by the number of processes sharing it.
    #[serde(rename = "pss_kib")]
    pub pss: u64,
    /// Shared pages not written since they were read in: mostly code and read-only files.
    #[serde(rename = "shared_clean_kib")]
    pub shared_clean: u64,
    /// Shared pages that were written, as the parent's heap before the fork: what
    /// copy-on-write unshares.
    #[serde(rename = "shared_dirty_kib")]
    pub shared_dirty: u64,
    /// Unwritten pages only this process maps.
    #[serde(rename = "private_clean_kib")]
    pub private_clean: u64,
    /// Written pages only this process maps: its own heap and stack, pages it unshared.
    #[serde(rename = "private_dirty_kib")]
    pub private_dirty: u64,
    /// Pages swapped out (not resident, so not in `rss`).
    #[serde(rename = "swap_kib")]
    pub swap: u64,
}

impl MemSnapshot {
    /// Unique set: the pages only this process maps, what it frees when it exits.
    pub fn uss(&self) -> u64 {
        self.private_clean + self.private_dirty
    }

    /// Pages this process shares with at least one other.
    pub fn shared(&self) -> u64 {
        self.shared_clean + self.shared_dirty
    }

    /// Parses smaps_rollup text, or full smaps text (whose per-mapping fields are summed).
    /// Returns None when no Rss line is present (not smaps text at all).
    pub fn parse(text: &str) -> Option<MemSnapshot> {
        let mut m = MemSnapshot::default();
        let mut seen_rss = false;
        for line in text.lines() {
            let Some((key, rest)) = line.split_once(':') else { continue };
            // Mapping header lines ("5636a8281000-7ffe... rw-p ...") have no "Key:" form we
            // use; only "Name:   123 kB" lines below are figures.
            let Some(kib) = rest.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()) else { continue };
            let field = match key {
                "Rss" => {
                    seen_rss = true;
                    &mut m.rss
                }
                "Pss" => &mut m.pss,
                "Shared_Clean" => &mut m.shared_clean,
                "Shared_Dirty" => &mut m.shared_dirty,
                "Private_Clean" => &mut m.private_clean,
                "Private_Dirty" => &mut m.private_dirty,
                "Swap" => &mut m.swap,
                _ => continue,
            };
            *field += kib;
        }
        seen_rss.then_some(m)
    }
}

/// Why a process's memory could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unreadable {
    /// The kernel refused (another user's process, or one that is not dumpable): its pages
    /// exist but cannot be counted.
    Denied,
    /// It exited (or is a zombie, or a kernel thread): it holds no memory of its own now.
    Exited,
}

/// Reads a live process's snapshot, or says why it cannot be read.
pub fn read(pid: i32) -> Result<MemSnapshot, Unreadable> {
    let text = match std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) {
        Ok(t) => t,
        // Kernels before 4.14 have no smaps_rollup: the full smaps says the same.
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound && std::path::Path::new(&format!("/proc/{pid}")).exists() =>
        {
            std::fs::read_to_string(format!("/proc/{pid}/smaps")).map_err(|e| unreadable(&e))?
        }
        Err(e) => return Err(unreadable(&e)),
    };
    // A process without an address space (a zombie) reads as empty.
    MemSnapshot::parse(&text).ok_or(Unreadable::Exited)
}

/// EACCES/EPERM mean refused; anything else (ENOENT, ESRCH: gone, or no address space) means
/// nothing is left to count.
fn unreadable(e: &std::io::Error) -> Unreadable {
    if e.kind() == std::io::ErrorKind::PermissionDenied { Unreadable::Denied } else { Unreadable::Exited }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_captured_rollup() {
        let m = MemSnapshot::parse(include_str!("fixtures/lab_worker.smaps_rollup")).unwrap();
        assert_eq!(m.rss, 66964);
        assert_eq!(m.pss, 22331);
        assert_eq!(m.shared(), 1084 + 65732);
        assert_eq!(m.uss(), 148);
        assert_eq!(m.swap, 0);
    }

    #[test]
    fn sums_full_smaps_like_the_rollup() {
        let full = MemSnapshot::parse(include_str!("fixtures/small.smaps")).unwrap();
        let rollup = MemSnapshot::parse(include_str!("fixtures/small.smaps_rollup")).unwrap();
        assert_eq!(full.rss, rollup.rss);
        assert_eq!(full.shared(), rollup.shared());
        assert_eq!(full.uss(), rollup.uss());
        // smaps truncates each mapping's Pss to whole KiB; the rollup truncates once.
        let mappings = include_str!("fixtures/small.smaps").lines().filter(|l| l.starts_with("Rss:")).count() as u64;
        assert!(full.pss <= rollup.pss && rollup.pss - full.pss <= mappings, "{} vs {}", full.pss, rollup.pss);
    }

    #[test]
    fn rejects_other_text() {
        assert_eq!(MemSnapshot::parse("Name: bash\nPid: 1\n"), None);
        assert_eq!(MemSnapshot::parse(""), None);
    }
}
