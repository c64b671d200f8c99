//! The lab's parent: binds the socket, preloads the heap, forks the workers and keeps the
//! pool as Apache's prefork parent does: replace workers that exit, spawn 1, 2, 4... per
//! second while fewer than min-spare are idle, retire one per second above max-spare.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, kill, sigaction};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork};

use super::config::LabConfig;
use super::heap::Heap;
use super::scoreboard::{Scoreboard, State};
use super::signals::{SAMPLE, on_stop, stop_requested};

/// How often the spare-worker rules run, as Apache's once-a-second maintenance.
const MAINTENANCE: Duration = Duration::from_secs(1);
/// Apache's cap on the spawn rate per second.
const MAX_SPAWN_RATE: usize = 32;

struct Pool<'a> {
    cfg: &'a LabConfig,
    listener: TcpListener,
    board: Scoreboard,
    heap: Heap,
    /// Live workers: pid -> scoreboard slot.
    workers: HashMap<i32, usize>,
    /// Workers told to retire (not replaced when they exit).
    retiring: HashSet<i32>,
}

/// Binds, preloads, forks the first workers and keeps the pool until SIGTERM or SIGINT.
pub fn run(cfg: &LabConfig) -> anyhow::Result<()> {
    // SAFETY: the handler only stores to an atomic. No SA_RESTART, so sleeps end early.
    unsafe {
        let stop = SigAction::new(SigHandler::Handler(on_stop), SaFlags::empty(), SigSet::empty());
        sigaction(Signal::SIGTERM, &stop)?;
        sigaction(Signal::SIGINT, &stop)?;
    }
    let listener = bind(cfg)?;
    let addr = listener.local_addr()?;
    let heap = Heap::preload(cfg.preload_mb).context("cannot preload the heap")?;
    let board = Scoreboard::new(cfg.workers)?;
    let mut pool = Pool { cfg, listener, board, heap, workers: HashMap::new(), retiring: HashSet::new() };
    for _ in 0..cfg.start_workers {
        pool.spawn()?;
    }
    // The address line is the signal that the server is up (tests and scripts wait for it).
    // A closed stdout must not stop the pool (println! would panic).
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "webtune lab listening on http://{addr}/ (pid {}, {} workers)",
        std::process::id(),
        cfg.start_workers
    )
    .and_then(|()| out.flush());
    drop(out);

    let mut spawn_rate = 1;
    let mut next_maintenance = Instant::now() + MAINTENANCE;
    let mut warned = false;
    while !stop_requested() {
        std::thread::sleep(SAMPLE);
        pool.reap()?;
        if pool.sample() && !warned {
            eprintln!(
                "webtune lab: server reached --workers {} (all busy), consider raising the --workers setting",
                cfg.workers
            );
            warned = true;
        }
        if Instant::now() >= next_maintenance {
            next_maintenance += MAINTENANCE;
            spawn_rate = pool.maintain_spares(spawn_rate)?;
        }
    }
    pool.stop_all();
    Ok(())
}

fn bind(cfg: &LabConfig) -> anyhow::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let addr = cfg.listen;
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    sock.set_reuse_address(true)?;
    sock.bind(&addr.into()).with_context(|| format!("cannot listen on {addr}"))?;
    sock.listen(cfg.backlog).with_context(|| format!("cannot listen on {addr}"))?;
    Ok(sock.into())
}

impl Pool<'_> {
    fn spawn(&mut self) -> anyhow::Result<()> {
        let Some(slot) = self.board.free_slot() else { return Ok(()) };
        let s = self.board.slot(slot);
        s.set_state(State::Starting);
        s.requests.store(0, Ordering::Relaxed);
        let parent = std::process::id() as i32;
        // SAFETY: the parent is single-threaded (no thread is ever started in it), so the
        // child may run arbitrary code after fork.
        match unsafe { fork() }.context("fork failed")? {
            ForkResult::Child => {
                s.pid.store(std::process::id() as i32, Ordering::Relaxed);
                super::worker::run(self.cfg, &self.listener, &self.board, slot, &self.heap, parent)
            }
            ForkResult::Parent { child } => {
                s.pid.store(child.as_raw(), Ordering::Relaxed);
                self.workers.insert(child.as_raw(), slot);
                self.board.totals().forked.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
        }
    }

    /// Collects exited workers and replaces those that did not retire.
    fn reap(&mut self) -> anyhow::Result<()> {
        loop {
            let pid = match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, _)) | Ok(WaitStatus::Signaled(pid, _, _)) => pid.as_raw(),
                Ok(WaitStatus::StillAlive) | Err(nix::errno::Errno::ECHILD) => return Ok(()),
                Ok(_) => continue,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            };
            let Some(slot) = self.workers.remove(&pid) else { continue };
            let s = self.board.slot(slot);
            s.set_state(State::Empty);
            s.pid.store(0, Ordering::Relaxed);
            if !self.retiring.remove(&pid) && !stop_requested() {
                self.spawn()?;
            }
        }
    }

    /// Records one sample; true when every allowed worker is busy.
    fn sample(&self) -> bool {
        let t = self.board.totals();
        t.samples.fetch_add(1, Ordering::Relaxed);
        let saturated = self.board.alive() >= self.cfg.workers
            && self.board.count(State::Idle) == 0
            && self.board.count(State::Starting) == 0;
        if saturated {
            t.all_busy_samples.fetch_add(1, Ordering::Relaxed);
        }
        saturated
    }

    /// Apache's spare-server rules; returns the next spawn rate.
    fn maintain_spares(&mut self, rate: usize) -> anyhow::Result<usize> {
        let idle = self.board.count(State::Idle) + self.board.count(State::Starting);
        let alive = self.board.alive();
        if idle < self.cfg.min_spare && alive < self.cfg.workers {
            let n = rate.min(self.cfg.workers - alive).min(self.cfg.min_spare - idle);
            for _ in 0..n {
                self.spawn()?;
            }
            return Ok((rate * 2).min(MAX_SPAWN_RATE));
        }
        if idle > self.cfg.max_spare {
            let idle_worker = self
                .workers
                .iter()
                .find(|(pid, slot)| self.board.slot(**slot).state() == State::Idle && !self.retiring.contains(pid));
            if let Some((&pid, _)) = idle_worker {
                self.retiring.insert(pid);
                let _ = kill(Pid::from_raw(pid), Signal::SIGUSR1);
            }
        }
        Ok(1)
    }

    /// SIGTERM to every worker, then SIGKILL to any left after 5 s.
    fn stop_all(&mut self) {
        for pid in self.workers.keys() {
            let _ = kill(Pid::from_raw(*pid), Signal::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.workers.is_empty() && Instant::now() < deadline {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, _)) | Ok(WaitStatus::Signaled(pid, _, _)) => {
                    self.workers.remove(&pid.as_raw());
                }
                Err(nix::errno::Errno::ECHILD) => break,
                _ => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        for pid in self.workers.keys() {
            let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
            let _ = waitpid(Pid::from_raw(*pid), None);
        }
    }
}
