//! What a pre-forked server really costs: its processes (selected by pid, name or port), each
//! one's memory from /proc, and the totals and capacity arithmetic of the seeds, done with
//! measured numbers. Parsers are pure functions tested on captured /proc text.

pub mod capacity;
pub mod cpu;
pub mod net;
pub mod procs;
pub mod smaps;

use serde::{Deserialize, Serialize};

pub use smaps::{MemSnapshot, Unreadable};

/// How the user names the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// A master: it and its descendants.
    Pid(i32),
    /// Every process with this command name, grouped under the ones whose parent is not one.
    Name(String),
    /// The processes holding the socket listening on this TCP port, and their descendants.
    Port(u16),
}

/// The selector matched no process.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SelectError {
    #[error("no process {0}")]
    NoPid(i32),
    #[error("no process named {0:?}")]
    NoName(String),
    #[error("nothing listens on TCP port {0} (or its owner is not visible to this user)")]
    NoListener(u16),
}

/// A worker's parent is among the server's processes; a parent's is not (a master).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Parent,
    Worker,
}

/// One of the server's processes and its memory, KiB.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProcMem {
    pub pid: i32,
    pub ppid: i32,
    /// The command name (comm), at most 15 characters.
    pub name: String,
    pub role: Role,
    #[serde(flatten)]
    pub mem: MemSnapshot,
    /// Unique set, KiB: what the process frees when it exits (`mem.uss()`).
    #[serde(rename = "uss_kib")]
    pub uss: u64,
    /// Pages shared with at least one other process, KiB (`mem.shared()`).
    #[serde(rename = "shared_kib")]
    pub shared: u64,
}

/// The pids of the server, masters first, then the rest of each tree.
pub fn select(sel: &Selector) -> Result<Vec<i32>, SelectError> {
    let table = procs::snapshot();
    let roots = match sel {
        Selector::Pid(pid) => {
            if !table.contains_key(pid) {
                return Err(SelectError::NoPid(*pid));
            }
            vec![*pid]
        }
        Selector::Name(name) => {
            // Not this process itself (webtune mem --name webtune looks at a lab).
            let me = std::process::id() as i32;
            let named: Vec<i32> = table.values().filter(|p| &p.name == name && p.pid != me).map(|p| p.pid).collect();
            if named.is_empty() {
                return Err(SelectError::NoName(name.clone()));
            }
            procs::roots(&table, &named)
        }
        Selector::Port(port) => {
            let owners = net::pids_listening_on(*port);
            if owners.is_empty() {
                return Err(SelectError::NoListener(*port));
            }
            procs::roots(&table, &owners)
        }
    };
    let mut pids = Vec::new();
    for root in roots {
        for pid in procs::tree(&table, root) {
            if !pids.contains(&pid) {
                pids.push(pid);
            }
        }
    }
    Ok(pids)
}

/// A process of the server whose memory was not read, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unread {
    pub pid: i32,
    /// The command name (comm), when the process was still listed.
    pub name: String,
    pub reason: Unreadable,
}

/// One reading of the server's processes: those read, and those that could not be.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    pub procs: Vec<ProcMem>,
    /// Processes left out: refused by the kernel, or exited while being read.
    pub unread: Vec<Unread>,
}

/// Some of the server's processes could not be read, so totals, the parent's share and
/// capacity would be wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "cannot read the memory of {}: permission denied (another user's or a non-dumpable process), so every figure would leave them out",
    pid_list(.0)
)]
pub struct Refused(pub Vec<Unread>);

/// "pid 12 (nginx), pid 13 (nginx) and 40 more": one bounded line.
fn pid_list(unread: &[Unread]) -> String {
    const SHOWN: usize = 8;
    let mut out: Vec<String> = unread.iter().take(SHOWN).map(|u| format!("pid {} ({})", u.pid, u.name)).collect();
    if unread.len() > SHOWN {
        out.push(format!("{} more", unread.len() - SHOWN));
    }
    out.join(", ")
}

impl Sample {
    /// The processes the kernel refused to show.
    pub fn denied(&self) -> Vec<Unread> {
        self.unread.iter().filter(|u| u.reason == Unreadable::Denied).cloned().collect()
    }

    /// The processes read, unless some were refused: then the figures would be wrong. A
    /// process that exited while being read is no error (a pool recycles workers; its memory
    /// is freed, so the totals of the processes left are the server's memory now).
    pub fn complete(self) -> Result<Vec<ProcMem>, Refused> {
        let denied = self.denied();
        if denied.is_empty() { Ok(self.procs) } else { Err(Refused(denied)) }
    }
}

/// Reads every process's memory. A process whose parent is in the set is a worker; the
/// others are parents. Processes gone since they were listed, or refused, are listed in
/// `unread`.
pub fn sample(pids: &[i32]) -> Sample {
    let table = procs::snapshot();
    let mut out = Sample::default();
    for &pid in pids {
        let Some(info) = table.get(&pid) else {
            out.unread.push(Unread { pid, name: String::new(), reason: Unreadable::Exited });
            continue;
        };
        let mem = match smaps::read(pid) {
            Ok(mem) => mem,
            Err(reason) => {
                out.unread.push(Unread { pid, name: info.name.clone(), reason });
                continue;
            }
        };
        let role = if pids.contains(&info.ppid) { Role::Worker } else { Role::Parent };
        out.procs.push(ProcMem {
            pid,
            ppid: info.ppid,
            name: info.name.clone(),
            role,
            mem,
            uss: mem.uss(),
            shared: mem.shared(),
        });
    }
    out
}
