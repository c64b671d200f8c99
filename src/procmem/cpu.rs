//! Who used the machine's CPU during a measurement window: the server's process tree, this
//! tool, and everything else (other programs, and the hypervisor's steal). A window in which
//! others took a large share measured a disturbed machine, not the configuration; a client
//! that took a large share of CPUs it shares with the server measured itself as well.

use serde::{Deserialize, Serialize};

use super::{Selector, select};

/// The machine's CPU time so far, in clock ticks summed over every CPU (/proc/stat's first
/// line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MachineTicks {
    /// user, nice, system, irq and softirq: time some task ran.
    pub busy: u64,
    /// Time a virtual CPU waited while the hypervisor ran something else.
    pub steal: u64,
    /// Every column but guest time (already in user): the whole of the machine's time.
    pub total: u64,
}

/// Parses /proc/stat's `cpu` line.
pub fn parse_machine(stat: &str) -> Option<MachineTicks> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line.split_whitespace().skip(1).map(|x| x.parse().unwrap_or(0)).collect();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    // user nice system idle iowait irq softirq steal guest guest_nice
    let busy = at(0) + at(1) + at(2) + at(5) + at(6);
    let steal = at(7);
    Some(MachineTicks { busy, steal, total: busy + at(3) + at(4) + steal })
}

/// The machine's ticks now.
pub fn machine_ticks() -> Option<MachineTicks> {
    parse_machine(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// utime + stime + cutime + cstime from /proc/PID/stat text: the process's CPU time and that
/// of the children it has reaped (a recycled worker's time moves to its parent's cutime).
pub fn parse_process_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After the name: state is field 3, utime field 14 .. cstime field 17.
    let f: Vec<&str> = rest.split_whitespace().collect();
    (11..15).map(|i| f.get(i)?.parse::<u64>().ok()).sum()
}

fn process_ticks(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|s| parse_process_ticks(&s)).unwrap_or(0)
}

/// Clock ticks a second (/proc's unit of CPU time; 100 on Linux).
fn ticks_per_second() -> f64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok().flatten().filter(|&t| t > 0).unwrap_or(100) as f64
}

/// The server tree's CPU ticks now (processes that vanish while being read count nothing).
fn tree_ticks(pids: &[i32]) -> u64 {
    pids.iter().map(|p| process_ticks(&p.to_string())).sum()
}

/// The processes of the server's trees now, read once for both their ticks and their waits.
fn tree_pids(roots: &[i32]) -> Vec<i32> {
    roots.iter().flat_map(|&r| select(&Selector::Pid(r)).unwrap_or_default()).collect()
}

/// The time each thread of the server's trees has waited runnable for a CPU so far, ns, by
/// thread id (/proc/PID/task/TID/schedstat's second field); None where the kernel keeps no
/// such count (built without schedstats).
fn tree_run_waits(pids: &[i32]) -> Option<std::collections::HashMap<i32, u64>> {
    let mut waits = std::collections::HashMap::new();
    let mut read_any = false;
    for pid in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { continue };
        for task in tasks.flatten() {
            let Some(tid) = task.file_name().to_str().and_then(|t| t.parse::<i32>().ok()) else { continue };
            let Some(wait) =
                std::fs::read_to_string(task.path().join("schedstat")).ok().and_then(|s| parse_run_wait(&s))
            else {
                continue;
            };
            read_any = true;
            waits.insert(tid, wait);
        }
    }
    read_any.then_some(waits)
}

/// The run-queue wait, ns, from schedstat text ("on-CPU ns, waiting ns, timeslices").
pub fn parse_run_wait(schedstat: &str) -> Option<u64> {
    schedstat.split_whitespace().nth(1)?.parse().ok()
}

/// CPU taken by others during a window, as shares of the whole machine (0-1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Interference {
    /// Busy time of everything that is neither the server's tree nor this tool, plus steal.
    pub others: f64,
    /// The hypervisor's steal alone.
    pub steal: f64,
    /// This tool's own CPU time (the client: engine, sampler), as a share of the cores the
    /// window was judged against (those the client and the server may use).
    pub own: f64,
    /// The server's own CPU time in the window, seconds (its trees', reaped children included):
    /// what a request costs it, whatever others took meanwhile.
    #[serde(default)]
    pub server_s: f64,
    /// The machine's idle time (iowait included): near 0, its CPUs were full, and what
    /// anything on them served was what the CPU time it got could buy.
    #[serde(default)]
    pub idle: f64,
    /// The server's threads runnable but waiting for a CPU, on average over the window (its
    /// run-queue wait over the wall time: Little's law); None without schedstats. Of N
    /// workers kept busy, about N less this many could work at once without queueing.
    #[serde(default)]
    pub server_waiting: Option<f64>,
}

/// A window being watched.
pub struct CpuWatch {
    /// The server's process trees (the tuned server's master, and a front proxy's).
    roots: Vec<i32>,
    machine: MachineTicks,
    server: u64,
    own: u64,
    /// This process's CPU times (getrusage: microseconds, finer than ticks) and the clock.
    own_times: crate::sys::CpuTimes,
    started: std::time::Instant,
    /// The server's threads' run-queue waits at the start (`tree_run_waits`).
    run_waits: Option<std::collections::HashMap<i32, u64>>,
}

impl CpuWatch {
    /// Starts watching the server whose process trees start at `roots`.
    pub fn start(roots: &[i32]) -> CpuWatch {
        let pids = tree_pids(roots);
        CpuWatch {
            roots: roots.to_vec(),
            machine: machine_ticks().unwrap_or_default(),
            server: tree_ticks(&pids),
            own: process_ticks("self"),
            own_times: crate::sys::CpuTimes::now(),
            started: std::time::Instant::now(),
            run_waits: tree_run_waits(&pids),
        }
    }

    /// What others and this tool took since `start`, this tool's share counted against `cores`
    /// cores; None when /proc/stat cannot be read or no tick passed.
    pub fn finish(self, cores: usize) -> Option<Interference> {
        let used = crate::sys::CpuTimes::now().since(self.own_times);
        let wall = self.started.elapsed().as_secs_f64().max(1e-9);
        let own_share = (used.user + used.sys).as_secs_f64() / (wall * cores.max(1) as f64);
        let machine = machine_ticks()?;
        let total = machine.total.checked_sub(self.machine.total).filter(|&t| t > 0)? as f64;
        let busy = machine.busy.saturating_sub(self.machine.busy);
        let steal = machine.steal.saturating_sub(self.machine.steal);
        let pids = tree_pids(&self.roots);
        let server = tree_ticks(&pids).saturating_sub(self.server);
        let own = process_ticks("self").saturating_sub(self.own);
        let others = busy.saturating_sub(server + own) + steal;
        // Threads gone by the end took their waits with them (a recycled worker's): a little less.
        let server_waiting = self.run_waits.as_ref().zip(tree_run_waits(&pids)).map(|(before, after)| {
            let waited: u64 =
                after.iter().map(|(tid, &w)| w.saturating_sub(before.get(tid).copied().unwrap_or(0))).sum();
            waited as f64 / 1e9 / wall
        });
        Some(Interference {
            others: (others as f64 / total).clamp(0.0, 1.0),
            steal: (steal as f64 / total).clamp(0.0, 1.0),
            own: own_share.clamp(0.0, 1.0),
            server_s: server as f64 / ticks_per_second(),
            idle: (total - (busy + steal).min(total as u64) as f64) / total,
            server_waiting,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_machine_and_a_process() {
        let m = parse_machine("cpu  100 5 50 1000 20 3 2 7 0 0\ncpu0 1 2 3\n").unwrap();
        assert_eq!(m, MachineTicks { busy: 160, steal: 7, total: 1187 });
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
        let t = parse_process_ticks("42 (a b) S 1 42 42 0 -1 0 0 0 0 0 30 12 100 8 20 0").unwrap();
        assert_eq!(t, 150);
        assert_eq!(parse_process_ticks("garbage"), None);
        assert_eq!(parse_run_wait("217750890 17002037 857\n"), Some(17_002_037));
        assert_eq!(parse_run_wait("12"), None);
    }

    #[test]
    fn a_busy_loop_beside_the_window_is_others_and_our_own_spin_is_ours() {
        // A shell spinning on a core is neither the watched server (no process has that pid)
        // nor this process: it is others.
        let mut spin = std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        let watch = CpuWatch::start(&[i32::MAX]);
        // This thread spins too, for a third of the window: its own share of one core.
        let spin_until = std::time::Instant::now() + std::time::Duration::from_millis(200);
        while std::time::Instant::now() < spin_until {
            std::hint::black_box(0u64);
        }
        std::thread::sleep(std::time::Duration::from_millis(400));
        let seen = watch.finish(1).unwrap();
        let _ = spin.kill();
        let _ = spin.wait();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        // One spinning core of `cores`: at least half of its share, allowing for ticks.
        assert!(seen.others >= 0.5 / cores, "{seen:?}");
        // 200 ms of spinning in 600: a third of one core when it had the core to itself; other
        // tests of this process add to it, a busy machine takes from it.
        assert!(seen.own > 0.05, "{seen:?}");
    }
}
