//! What a pre-forked server really costs: its processes (selected by pid, name or port), each
//! one's memory from /proc, and the totals and capacity arithmetic of the seeds, done with
//! measured numbers. Parsers are pure functions tested on captured /proc text.

pub mod capacity;
pub mod cpu;
pub mod net;
pub mod procs;
pub mod smaps;

use serde::{Deserialize, Serialize};

pub use smaps::MemSnapshot;

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
    pub uss: u64,
    /// Pages shared with at least one other process, KiB (`mem.shared()`).
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

/// Reads every process's memory. A process whose parent is in the set is a worker; the
/// others are parents. Processes gone since they were listed are skipped.
pub fn sample(pids: &[i32]) -> Vec<ProcMem> {
    let table = procs::snapshot();
    pids.iter()
        .filter_map(|&pid| {
            let info = table.get(&pid)?;
            let mem = smaps::read(pid)?;
            let role = if pids.contains(&info.ppid) { Role::Worker } else { Role::Parent };
            Some(ProcMem {
                pid,
                ppid: info.ppid,
                name: info.name.clone(),
                role,
                mem,
                uss: mem.uss(),
                shared: mem.shared(),
            })
        })
        .collect()
}
