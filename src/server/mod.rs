//! The real servers, launched through adapters from a target file, each in a private run
//! directory and its own process groups; observed and stopped. Nothing is left behind: a
//! Drop guard stops what was started, and a run directory whose owner died (SIGKILL) is
//! reaped by the next launch. This module knows processes and /proc, not load: warming a
//! server and measuring it are the tuner's steps.

pub mod adapters;
pub mod backends;
pub mod container;
pub mod file;
pub mod front;
pub mod http;
pub mod process;
pub mod rundir;
pub mod settings;
pub mod tree;

use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;

pub use file::TargetFile;
pub use settings::{Settings, Typed};

use crate::sys::cgroup::{Cgroup, Limits, Usage};
use adapters::adapter::{Adapter, Ctx, Prepared, Where, bracket};
use process::{stop_group, tail};
use rundir::RunDir;

/// The longest one readiness probe may take, the whole answer read.
const PROBE_LIMIT: Duration = Duration::from_secs(1);

/// How long a server may take to stop after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// The same after Ctrl-C or SIGTERM, which webtune answers within a second.
const STOP_GRACE_INTERRUPTED: Duration = Duration::from_millis(500);

/// A running server. Dropping it stops it.
pub struct Running {
    adapter: &'static dyn Adapter,
    pub host: String,
    pub port: u16,
    /// The server's own port: `port` unless a front proxy listens there.
    back_port: u16,
    dir: RunDir,
    children: Vec<(String, Child)>,
    master: usize,
    prepared: Prepared,
    /// The daemon followed when the master exited and left it serving.
    daemon: Option<i32>,
    stopped: bool,
    /// With `[load] remote`: the one address beyond loopback the server may listen on.
    reachable: Option<std::net::IpAddr>,
    /// The container the server runs in, when its values set one (`container`).
    cgroup: Option<Cgroup>,
    /// Why the container its values asked for could not be made (it runs on the host's limits).
    cgroup_refused: Option<String>,
}

/// The cgroup of a launch whose values set container limits, named after its run directory
/// (so that the next launch removes it after a webtune killed by SIGKILL); or why it could not
/// be made.
fn make_cgroup(dir: &RunDir, limits: &Limits) -> (Option<Cgroup>, Option<String>) {
    if !limits.any() {
        return (None, None);
    }
    match Cgroup::create(&dir.name(), limits) {
        Ok(c) => {
            // For the clean-up by a webtune that runs in another cgroup than this one.
            let listed: String = c.dirs.iter().map(|d| format!("{}\n", d.display())).collect();
            let _ = std::fs::write(dir.join(rundir::CGROUPS), listed);
            (Some(c), None)
        }
        Err(e) => (
            None,
            Some(format!("{e}: the server runs on the host's limits, not in a container of {}", limits.describe())),
        ),
    }
}

impl TargetFile {
    /// The adapter that speaks this target's server.
    pub fn adapter(&self) -> &'static dyn Adapter {
        adapters::adapter(self.adapter)
    }

    /// With the user's own configuration tree (`config = "PATH"`): the unified diff of their
    /// files for these values, per tree ("apache2", "php-fpm"...); empty without one, or when
    /// the values are the user's own.
    pub fn diffs(&self, values: &[(String, String)]) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
        Ok(self.adapter().diffs(self, &server_values(values))?.into_iter().collect())
    }

    /// The directory `patch -p1 -d` applies tree `tree`'s diff in: its main file's (the
    /// front's, for the nginx before a php-fpm pool).
    pub fn diff_dir(&self, tree: &str) -> Option<std::path::PathBuf> {
        if tree.ends_with(tree::ROOT_SUFFIX) {
            return Some(std::path::PathBuf::from("/"));
        }
        let main = match &self.front_config {
            Some(front) if tree == "nginx" && self.adapter != file::AdapterName::Nginx => front,
            _ => self.config.file()?,
        };
        main.path.parent().map(std::path::Path::to_path_buf)
    }

    /// The configuration lines for these values, in the server's own syntax.
    pub fn recommend(&self, values: &[(String, String)]) -> String {
        let server = self.adapter().recommend(self, &server_values(values));
        [Some(server), front::recommend(values), container::recommend(values)]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// What the server's own configuration gets of `values`, read once for its adapter: neither
/// the container's knobs nor the front's (and, behind a front, its keep-alive off).
fn server_values(values: &[(String, String)]) -> Typed {
    Typed::read(&front::back_values(&container::server_values(values)))
}

/// Starts the target with its base configuration plus `overrides`, and waits until it
/// answers its readiness URL.
pub fn launch(file: &TargetFile, overrides: &[(String, String)]) -> anyhow::Result<Running> {
    launch_until(file, overrides, &AtomicBool::new(false))
}

/// `launch`, given up (the server stopped, an error returned) as soon as `stop` is set, even
/// while the server is still starting: Ctrl-C is never kept waiting for `ready_timeout`.
pub fn launch_until(file: &TargetFile, overrides: &[(String, String)], stop: &AtomicBool) -> anyhow::Result<Running> {
    let adapter = file.adapter();
    let values = file.settings(overrides);
    for (k, v) in values.iter() {
        adapters::check_knob(adapter, k, v).map_err(|e| anyhow::anyhow!(e))?;
    }
    if let Some(e) = front::conflict(&values) {
        anyhow::bail!(e);
    }
    let port = match file.port {
        0 => free_port(&file.host)?,
        p => {
            if std::net::TcpListener::bind((file.host.as_str(), p)).is_err() {
                anyhow::bail!("port {p} on {} is in use: stop what listens there or use port 0", file.host);
            }
            p
        }
    };
    // Behind a front, the server listens on a private port of its own.
    let with_front = front::wanted(&values);
    let mut back_port = port;
    while with_front && back_port == port {
        back_port = free_port(&file.host)?;
    }
    let back_values = server_values(&values);
    let dir = RunDir::create()?;
    let (cgroup, cgroup_refused) = make_cgroup(&dir, &container::limits(&values));
    let ctx = Ctx { dir: &dir, host: &file.host, port, file };
    let prepared = adapter.prepare(&Ctx { port: back_port, ..ctx }, &back_values).and_then(|mut p| {
        if with_front {
            front::add(&ctx, &Typed::read(&values), back_port, &mut p)?;
        }
        Ok(p)
    });
    let prepared = match prepared {
        Ok(p) => p,
        Err(e) => {
            dir.remove();
            return Err(e.context(format!("{} configuration", adapter.name())));
        }
    };
    let mut running = Running {
        adapter,
        host: file.host.clone(),
        port,
        back_port,
        dir,
        children: Vec::new(),
        master: prepared.master,
        prepared,
        daemon: None,
        stopped: false,
        cgroup,
        cgroup_refused,
        reachable: (!file.load.remote.is_empty()).then(|| file.host.parse().ok()).flatten(),
    };
    for s in running.prepared.spawns.clone() {
        let mut s = s;
        s.env.extend(file.env.iter().cloned());
        s.env.push((rundir::MARKER.into(), running.dir.path.display().to_string()));
        let log = running.dir.join(&format!("{}.log", s.name));
        let child = process::start(&s, &log, file.placement.server.as_ref(), running.cgroup.as_ref())?;
        running.dir.record_group(child.id() as i32)?;
        running.children.push((s.name.clone(), child));
    }
    running.wait_ready(&file.ready, file.ready_timeout, stop)?;
    running.check_listening()?;
    if let Some(n) = adapter.expected_workers_in(file, &back_values) {
        running.wait_workers(n, Duration::from_secs(10), stop);
    }
    Ok(running)
}

impl Running {
    /// `http://host:port` of the server, brackets around an IPv6 host; no trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}:{}", bracket(&self.host), self.port)
    }

    /// The tuned server's master process.
    pub fn master_pid(&self) -> i32 {
        self.daemon.unwrap_or(self.children[self.master].1.id() as i32)
    }

    /// The front proxy's master process, when one stands before the server (its memory and
    /// CPU count with the server's).
    pub fn front_pid(&self) -> Option<i32> {
        self.prepared.front.map(|i| self.children[i].1.id() as i32)
    }

    /// Whether a worker's `max_requests` counts the client's connections: the adapter's are
    /// counted in connections, and no front stands between (a front's connections to the server
    /// carry one request each, its keep-alive being off).
    pub fn recycles_per_connection(&self) -> bool {
        self.adapter.recycles_per_connection() && self.prepared.front.is_none()
    }

    /// The server's own port (behind a front, not the one the clients use).
    pub fn back_port(&self) -> u16 {
        self.back_port
    }

    /// Its worker processes (the master's descendants).
    pub fn worker_pids(&self) -> Vec<i32> {
        let master = self.master_pid();
        crate::procmem::select(&crate::procmem::Selector::Pid(master))
            .map(|p| p.into_iter().filter(|&x| x != master).collect())
            .unwrap_or_default()
    }

    /// The kernel's accounting of the server's container now, when it runs in one.
    pub fn container_usage(&self) -> Option<Usage> {
        self.cgroup.as_ref().map(Cgroup::usage)
    }

    /// The limits of the server's container, when it runs in one.
    pub fn container_limits(&self) -> Option<&Limits> {
        self.cgroup.as_ref().map(|c| &c.limits)
    }

    /// The name of the server's cgroup ("webtune-run-1234-abcd"), when it runs in one.
    pub fn container_name(&self) -> Option<String> {
        Some(self.cgroup.as_ref()?.dirs.first()?.file_name()?.to_string_lossy().into_owned())
    }

    /// Why the container the values asked for could not be made (the server runs on the
    /// host's limits), to be said to the user.
    pub fn container_refused(&self) -> Option<&str> {
        self.cgroup_refused.as_deref()
    }

    /// The configuration the adapter wrote for this launch, for the evidence.
    pub fn config_text(&self) -> &str {
        &self.prepared.config_text
    }

    /// The private run directory: the server's configuration and logs.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir.path
    }

    /// The server's own counters now (busy and idle workers...), None when it has none to read.
    pub fn counters(&self) -> Option<serde_json::Value> {
        self.adapter.read_counters(&Where {
            host: &self.host,
            port: self.back_port,
            dir: &self.dir.path,
            status_path: self.prepared.status_path.as_deref(),
        })
    }

    /// Error-log lines that say the server ran out of workers.
    pub fn saturation(&self) -> Vec<String> {
        let patterns = self.adapter.saturation();
        self.prepared
            .error_logs
            .iter()
            .flat_map(|p| {
                std::fs::read_to_string(p).unwrap_or_default().lines().map(str::to_string).collect::<Vec<_>>()
            })
            .filter(|l| patterns.iter().any(|p| l.contains(p)))
            .collect()
    }

    /// The last lines of every log, for errors.
    fn logs(&self) -> String {
        let mut out: Vec<String> = Vec::new();
        for p in &self.prepared.error_logs {
            let t = tail(p, 6);
            if !t.is_empty() && !out.contains(&t) {
                out.push(t);
            }
        }
        if out.is_empty() { "(its logs are empty)".into() } else { out.join(" | ") }
    }

    fn wait_ready(&mut self, path: &str, timeout: Duration, stop: &AtomicBool) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if stop.load(Ordering::Relaxed) {
                self.stop();
                anyhow::bail!("interrupted");
            }
            let groups: Vec<i32> = self.children.iter().map(|(_, c)| c.id() as i32).collect();
            for (name, child) in &mut self.children {
                if let Ok(Some(status)) = child.try_wait() {
                    // A master that daemonized: what it left carries the marker, outside the
                    // groups of the run's other processes (a front); followed.
                    let others: Vec<i32> = groups.iter().copied().filter(|&g| g != child.id() as i32).collect();
                    // A daemon forks and exits in steps: a process listed as marked may be gone
                    // by the time its group is read, while its child lives on. Looked at a few
                    // times before the master is called dead.
                    let left = || {
                        let marked = rundir::marked(&self.dir.path);
                        let table = crate::procmem::procs::snapshot();
                        marked.into_iter().any(|pid| table.get(&pid).is_some_and(|p| !others.contains(&p.pgrp)))
                    };
                    if status.success()
                        && (0..DAEMON_LOOKS).any(|i| {
                            if i > 0 {
                                std::thread::sleep(Duration::from_millis(20));
                            }
                            left()
                        })
                    {
                        continue;
                    }
                    let name = name.clone();
                    std::thread::sleep(Duration::from_millis(50));
                    let logs = self.logs();
                    self.stop();
                    anyhow::bail!("{name} exited ({status}) before it was ready: {logs}");
                }
            }
            // Each probe ends by the readiness deadline, whatever the server sends.
            let probe_end = (Instant::now() + PROBE_LIMIT).min(deadline);
            let last = match http::fetch(&self.host, self.port, path, probe_end, stop) {
                Ok((code, _)) if code < 500 => {
                    self.follow_daemon();
                    return Ok(());
                }
                Ok((code, _)) => format!("status {code}"),
                Err(e) => e,
            };
            if stop.load(Ordering::Relaxed) {
                self.stop();
                anyhow::bail!("interrupted");
            }
            if Instant::now() >= deadline {
                let logs = self.logs();
                self.stop();
                let name = self.adapter.name();
                anyhow::bail!("{name} did not answer {path} within {timeout:?} (last probe: {last}): {logs}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// When the master exited and left a daemon serving, the daemon is the server: the marked
    /// process that listens on the server's port (else the first of the marked roots).
    fn follow_daemon(&mut self) {
        if !matches!(self.children[self.master].1.try_wait(), Ok(Some(_))) {
            return;
        }
        let marked = rundir::marked(&self.dir.path);
        let listening = marked
            .iter()
            .copied()
            .find(|&pid| crate::procmem::net::listening_addresses(&[pid]).iter().any(|a| a.port() == self.back_port));
        let table = crate::procmem::procs::snapshot();
        let root = || marked.iter().copied().find(|pid| table.get(pid).is_none_or(|p| !marked.contains(&p.ppid)));
        self.daemon = listening.or_else(root);
    }

    /// Stops the server and fails when any of its processes listens beyond loopback (a knob
    /// or an app that opened another port): its configuration is not the whole truth.
    fn check_listening(&mut self) -> anyhow::Result<()> {
        match self.listening_outside() {
            None => Ok(()),
            Some(e) => {
                self.stop();
                Err(anyhow::anyhow!(e))
            }
        }
    }

    /// Why the run may not go on when any process of it (the children, their descendants, a
    /// daemon that left their groups) takes traffic beyond loopback, TCP or UDP: asked at
    /// launch and after every window, since an app or a daemon may open a port late. With
    /// `[load] remote`, the file's own listen address is allowed too.
    pub fn listening_outside(&self) -> Option<String> {
        let mut pids = Vec::new();
        for (_, child) in &self.children {
            pids.extend(crate::procmem::select(&crate::procmem::Selector::Pid(child.id() as i32)).unwrap_or_default());
        }
        pids.extend(rundir::marked(&self.dir.path));
        let outside: Vec<String> = crate::procmem::net::listeners(&pids)
            .into_iter()
            .filter(|l| !l.addr.ip().is_loopback() && Some(l.addr.ip()) != self.reachable)
            .map(|l| l.to_string())
            .collect();
        (!outside.is_empty()).then(|| {
            format!(
                "{} listens on {}: webtune starts servers on loopback addresses only (127.0.0.0/8, ::1)",
                self.adapter.name(),
                outside.join(", ")
            )
        })
    }

    /// Waits (up to `limit`) until the master has `n` workers: some servers fork them after
    /// they start answering.
    fn wait_workers(&self, n: usize, limit: Duration, stop: &AtomicBool) {
        let deadline = Instant::now() + limit;
        while self.worker_pids().len() < n && Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops every process group (front servers first), gracefully then by force, and
    /// removes the run directory.
    pub fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        // The user asked to stop now: a server that ignores SIGTERM must not keep them waiting.
        let grace = if crate::sys::interrupt_if_installed().load(Ordering::Relaxed) {
            STOP_GRACE_INTERRUPTED
        } else {
            STOP_GRACE
        };
        for (_, child) in self.children.iter_mut().rev() {
            stop_group(child.id() as i32, grace);
            let _ = child.wait();
        }
        // What left the groups (a daemon) is found by the marker in its environment, and what
        // cleared its environment too, by the cgroup that holds it.
        let mut left = rundir::stop_marked(&self.dir.path, grace);
        if let Some(c) = &mut self.cgroup
            && !c.remove()
        {
            left.extend(c.pids());
        }
        if left.is_empty() {
            self.dir.remove();
        } else {
            // The run directory stays: the next launch tries again once this webtune is gone.
            eprintln!(
                "webtune: warning: processes {left:?} started by {} {} could not be stopped",
                self.adapter.name(),
                self.dir.path.display()
            );
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A port free a moment ago.
/// Looks at the processes a master that exited at once left behind, before it is called dead.
const DAEMON_LOOKS: usize = 10;

fn free_port(host: &str) -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind((host, 0)).with_context(|| format!("cannot bind {host}"))?;
    Ok(l.local_addr()?.port())
}
