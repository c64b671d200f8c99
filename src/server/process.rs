//! Server processes: each started in its own process group, so that stopping the group stops
//! everything it forked, and nothing else.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use crate::sys::cgroup::Cgroup;
use crate::sys::cpus::CpuSet;

/// What to run.
#[derive(Debug, Clone)]
pub struct Spawn {
    /// A short name for logs and errors ("nginx", "php-fpm").
    pub name: String,
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<std::path::PathBuf>,
}

impl Spawn {
    /// No extra environment; runs in webtune's own working directory.
    pub fn new(name: &str, program: &str, args: Vec<String>) -> Spawn {
        Spawn { name: name.into(), program: program.into(), args, env: Vec::new(), cwd: None }
    }

    /// The command line, for the evidence.
    pub fn display(&self) -> String {
        std::iter::once(self.program.as_str()).chain(self.args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
    }
}

/// Finds a program on PATH (and in the sbin directories, where Debian puts servers).
pub fn find_program(program: &str) -> Option<std::path::PathBuf> {
    if program.contains('/') {
        let p = std::path::PathBuf::from(program);
        return p.is_file().then_some(p);
    }
    let path = std::env::var("PATH").unwrap_or_default();
    path.split(':')
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"])
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file())
}

/// Starts `s` in a new process group, output to `log`, confined to `cpus` and to `cgroup`
/// when given (its children inherit both: the whole server tree stays in them).
pub fn start(s: &Spawn, log: &Path, cpus: Option<&CpuSet>, cgroup: Option<&Cgroup>) -> anyhow::Result<Child> {
    use std::os::unix::process::CommandExt;
    let program = find_program(&s.program).with_context(|| format!("{} not found: is it installed?", s.program))?;
    let out = std::fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
    let mut cmd = Command::new(program);
    cmd.args(&s.args).process_group(0).stdin(Stdio::null()).stdout(out.try_clone()?).stderr(out);
    for (k, v) in &s.env {
        cmd.env(k, v);
    }
    if let Some(d) = &s.cwd {
        cmd.current_dir(d);
    }
    if let Some(mask) = cpus.map(CpuSet::mask) {
        // SAFETY: between fork and exec only the system call runs; the mask was built before.
        unsafe {
            cmd.pre_exec(move || nix::sched::sched_setaffinity(Pid::from_raw(0), &mask).map_err(std::io::Error::from));
        }
    }
    // The child joins the cgroup before it runs a single instruction of the server, so that no
    // process it forks can start outside. The files are opened here (close-on-exec); between
    // fork and exec only write(2) runs.
    let joins = cgroup
        .map(|c| c.procs_files())
        .unwrap_or_default()
        .iter()
        .map(|f| {
            std::fs::OpenOptions::new().write(true).open(f).with_context(|| format!("cannot open {}", f.display()))
        })
        .collect::<anyhow::Result<Vec<std::fs::File>>>()?;
    if !joins.is_empty() {
        use std::os::fd::AsRawFd;
        let fds: Vec<i32> = joins.iter().map(AsRawFd::as_raw_fd).collect();
        // SAFETY: write(2) on descriptors opened before the fork; nothing is allocated.
        unsafe {
            cmd.pre_exec(move || {
                for &fd in &fds {
                    if nix::libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }
    let child = cmd.spawn().with_context(|| format!("cannot start {}", s.display()));
    drop(joins);
    child
}

/// Whether any process of the group is left.
pub fn group_alive(pgid: i32) -> bool {
    !matches!(killpg(Pid::from_raw(pgid), None), Err(Errno::ESRCH))
}

/// SIGTERM to the group, then SIGKILL to what is left after `grace`. True when it had
/// processes. Zombies of our own children are reaped by the caller's wait.
pub fn stop_group(pgid: i32, grace: Duration) -> bool {
    if pgid <= 1 || !group_alive(pgid) {
        return false;
    }
    let _ = killpg(Pid::from_raw(pgid), Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        reap(pgid);
        if !group_alive(pgid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    let deadline = Instant::now() + Duration::from_secs(2);
    while group_alive(pgid) && Instant::now() < deadline {
        reap(pgid);
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Reaps our own exited children of the group (zombies count as members until reaped).
fn reap(pgid: i32) {
    use nix::sys::wait::{WaitPidFlag, waitpid};
    while let Ok(status) = waitpid(Pid::from_raw(-pgid), Some(WaitPidFlag::WNOHANG)) {
        if status == nix::sys::wait::WaitStatus::StillAlive {
            break;
        }
    }
}

/// Whether a single process exists.
pub fn alive(pid: i32) -> bool {
    !matches!(kill(Pid::from_raw(pid), None), Err(Errno::ESRCH))
}

/// The last `n` lines of a log, for errors.
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}
