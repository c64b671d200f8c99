//! The process table: parents, names, and the tree under a server's master.

use std::collections::{BTreeMap, BTreeSet};

/// What /proc/PID/stat says of a process that matters here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: i32,
    pub ppid: i32,
    /// The command name (comm), at most 15 characters.
    pub name: String,
    /// The process group.
    pub pgrp: i32,
    /// When it started, in clock ticks since boot: with the pid, names one process for good
    /// (a pid is reused, a pid and its start time are not).
    pub start_ticks: u64,
}

/// Parses /proc/PID/stat text. The name is in parentheses and may itself hold spaces and
/// parentheses, so the fields after it are found from the last ')'.
pub fn parse_stat(text: &str) -> Option<ProcInfo> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let name = text[open + 1..close].to_string();
    // Fields 3 on: state, ppid, pgrp, session, tty, tpgid, flags, 4 fault counts, 4 times,
    // priority, nice, threads, itrealvalue, starttime (22).
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    let ppid = rest.get(1)?.parse().ok()?;
    let pgrp = rest.get(2)?.parse().ok()?;
    let start_ticks = rest.get(19)?.parse().ok()?;
    Some(ProcInfo { pid, ppid, name, pgrp, start_ticks })
}

/// One process now (None when it is gone).
pub fn info(pid: i32) -> Option<ProcInfo> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The pids listed in /proc now (empty when /proc cannot be read).
pub fn all_pids() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect()
}

/// "pid starttime bootid": names process `pid` for good, across pid reuse and reboots
/// (None when it is gone). What run directories and the history record as their owner.
pub fn identity(pid: i32) -> Option<String> {
    let start = info(pid)?.start_ticks;
    Some(format!("{pid} {start} {}", boot_id()))
}

/// Whether the process an `identity` named is still running. A token without a boot id
/// (written by an older webtune) is judged by pid and start time alone. Only what is proven
/// counts as gone: its /proc entry absent, another start time, another boot. A /proc that
/// cannot be read just now (out of file descriptors, say) says nothing: the process is taken
/// as alive, for the callers remove what a dead one left behind.
pub fn identity_alive(token: &str) -> bool {
    let mut fields = token.split_whitespace();
    let (Some(pid), Some(start)) = (fields.next().and_then(|p| p.parse::<i32>().ok()), fields.next()) else {
        return false;
    };
    if let Some(b) = fields.next()
        && let Ok(now) = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        && now.trim() != b
    {
        return false;
    }
    match info(pid) {
        Some(p) => p.start_ticks.to_string() == start,
        // stat(2) takes no descriptor: NotFound here is a process that is gone.
        None => {
            !matches!(std::fs::symlink_metadata(format!("/proc/{pid}")), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
        }
    }
}

/// This boot's random id (empty when the kernel does not say).
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|t| t.trim().to_string()).unwrap_or_default()
}

/// Every process now (those that vanish while being read are left out).
pub fn snapshot() -> BTreeMap<i32, ProcInfo> {
    all_pids().into_iter().filter_map(info).map(|p| (p.pid, p)).collect()
}

/// `root` and all its descendants, root first.
pub fn tree(table: &BTreeMap<i32, ProcInfo>, root: i32) -> Vec<i32> {
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        out.extend(table.values().filter(|p| p.ppid == parent && p.pid != parent).map(|p| p.pid));
        i += 1;
    }
    out
}

/// The masters among `pids`: those whose parent is not itself among them.
pub fn roots(table: &BTreeMap<i32, ProcInfo>, pids: &[i32]) -> Vec<i32> {
    let set: BTreeSet<i32> = pids.iter().copied().collect();
    pids.iter().copied().filter(|p| table.get(p).is_none_or(|info| !set.contains(&info.ppid))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_awkward_names() {
        let p = parse_stat(
            "4242 (apache2) S 4240 4241 4241 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10 18446744073709551615",
        )
        .unwrap();
        assert_eq!((p.pid, p.ppid, p.name.as_str(), p.pgrp, p.start_ticks), (4242, 4240, "apache2", 4241, 987654));
        let p = parse_stat("77 (a (b) c) R 1 77 77 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 0").unwrap();
        assert_eq!((p.pid, p.ppid, p.name.as_str(), p.start_ticks), (77, 1, "a (b) c", 55));
        assert_eq!(parse_stat("77 (short) R 1 77 77 0"), None);
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn identities_name_one_process_for_good() {
        let me = identity(std::process::id() as i32).unwrap();
        assert!(identity_alive(&me), "{me}");
        let fields: Vec<&str> = me.split_whitespace().collect();
        assert_eq!(fields.len(), 3, "{me}");
        // The same pid started at another time, or in another boot, is another process.
        let later = format!("{} {} {}", fields[0], fields[1].parse::<u64>().unwrap() + 1, fields[2]);
        assert!(!identity_alive(&later));
        assert!(!identity_alive(&format!("{} {} another-boot", fields[0], fields[1])));
        assert!(identity_alive(&format!("{} {}", fields[0], fields[1])), "an older token, without the boot");
        assert!(!identity_alive("") && !identity_alive("garbage"));
    }

    #[test]
    fn tree_and_roots() {
        let table: BTreeMap<i32, ProcInfo> = [(1, 0), (10, 1), (11, 10), (12, 10), (13, 11), (20, 1)]
            .into_iter()
            .map(|(pid, ppid)| (pid, ProcInfo { pid, ppid, name: "x".into(), pgrp: pid, start_ticks: 0 }))
            .collect();
        assert_eq!(tree(&table, 10), vec![10, 11, 12, 13]);
        assert_eq!(roots(&table, &[10, 11, 12, 13]), vec![10]);
        assert_eq!(roots(&table, &[11, 12]), vec![11, 12]);
    }
}
