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
    /// The proportional set of its anonymous and shared-memory pages (the rollup's Pss_Anon
    /// plus Pss_Shmem): anonymous pages only its own fork tree maps, and shared memory mostly
    /// so, so unlike `pss` it does not shrink when other programs mapping the same files start
    /// beside it. None when the kernel does not say (full smaps, or an older kernel's rollup).
    #[serde(skip)]
    pub pss_own: Option<u64>,
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
        let (mut anon, mut shmem) = (None::<u64>, 0);
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
                "Pss_Anon" => anon.get_or_insert(0),
                "Pss_Shmem" => &mut shmem,
                _ => continue,
            };
            *field += kib;
        }
        m.pss_own = anon.map(|a| a + shmem);
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
        assert_eq!(m.pss_own, Some(22057 + 1));
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
        // Only the rollup splits the PSS by kind of page.
        assert_eq!(full.pss_own, None);
    }

    /// Copies of one binary started here, killed when dropped (on a failed assertion too).
    struct Copies(Vec<std::process::Child>);

    impl Drop for Copies {
        fn drop(&mut self) {
            for c in &mut self.0 {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    impl Copies {
        /// Starts one more, and waits until it runs the copy (exec done, its pages mapped).
        fn start(&mut self, program: &std::path::Path) -> i32 {
            let child = std::process::Command::new(program).arg("30").spawn().unwrap();
            let pid = child.id() as i32;
            self.0.push(child);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while std::fs::read_link(format!("/proc/{pid}/exe")).ok().as_deref() != Some(program) {
                assert!(std::time::Instant::now() < deadline, "{} did not start", program.display());
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            // Past exec, the dynamic loader maps the libraries: let it finish.
            std::thread::sleep(std::time::Duration::from_millis(200));
            pid
        }
    }

    /// The tuner compares servers measured beside different neighbours (the configurations
    /// of a comparison kept running side by side): their own pages must read the same
    /// whatever else maps the same files, where the whole PSS does not.
    #[test]
    fn own_pages_read_the_same_beside_other_copies_of_the_program() {
        // A copy of sleep no other process maps: its file pages are shared only with the
        // copies started here.
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("sleeper");
        std::fs::copy("/bin/sleep", &program).unwrap();
        let mut copies = Copies(Vec::new());
        let pid = copies.start(&program);
        let alone = read(pid).unwrap();
        assert!(alone.pss_own.is_some(), "no Pss_Anon in smaps_rollup: an older kernel?");
        for _ in 0..3 {
            copies.start(&program);
        }
        let beside = read(pid).unwrap();
        // The copy's file pages are now divided by four: three quarters of the few dozen KiB
        // of sleep's own pages that are resident, however many are (a clean clone's CI read
        // 231 -> 192 KiB, a busy machine 279 -> 261): it drops, by a page at least.
        assert!(beside.pss + 4 <= alone.pss, "PSS {} KiB alone, {} beside three copies", alone.pss, beside.pss);
        assert_eq!(beside.pss_own, alone.pss_own, "own pages beside three copies of the program");
    }

    #[test]
    fn rejects_other_text() {
        assert_eq!(MemSnapshot::parse("Name: bash\nPid: 1\n"), None);
        assert_eq!(MemSnapshot::parse(""), None);
    }
}
