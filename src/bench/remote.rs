//! Load from other machines: the same bench run on each `ssh://` host through the system's
//! OpenSSH, each with its share of the connections, requests and rate, started together and
//! merged exactly (the histograms travel in each host's `--json` report).
//!
//! The remote side is `webtune bench ... --agent`: it checks its plan, says it is ready, starts
//! on "go", ends early on "stop", and ends as well when its standard input closes, which is
//! what happens when its SSH session goes (Ctrl-C here, this process killed, the network
//! lost): no webtune is left running on any host.

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use super::BenchSpec;
use super::spec::DEFAULT_TIMEOUT;
use crate::aggregate::BenchReport;
use crate::aggregate::result::SCHEMA_ID;
use crate::input::InputError;

/// The environment variable that replaces `ssh` (split into words as a shell would).
pub const SSH_ENV: &str = "WEBTUNE_SSH";
/// The line an agent prints once its plan is checked.
pub const READY: &str = "webtune-agent ready";
/// The line that starts an agent's run.
pub const GO: &str = "go";
/// The line that ends an agent's run early, with the figures so far.
pub const STOP: &str = "stop";
/// The name of this machine's share in reports.
pub const LOCAL: &str = "local";

/// How far a host's clock may be from this machine's (the per-second series line up).
const MAX_CLOCK_OFFSET: Duration = Duration::from_secs(1);
/// How long a host may take to answer the check, or to be ready to start.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);
/// How long after its run should have ended a host may take to send its report.
const REPORT_GRACE: Duration = Duration::from_secs(30);
/// How long the hosts may take to report once told to stop (Ctrl-C, a host lost).
const REPORT_AFTER_STOP: Duration = Duration::from_millis(500);
/// The longest line an agent says before its report ("webtune-agent ready").
const MAX_READY_LINE: usize = 4096;
/// The most of a host's last error line repeated in a message.
const STDERR_LINE: usize = 200;
/// The most of a host's error output kept for the message.
const STDERR_TAIL: usize = 4096;
/// The largest report a host may send.
const MAX_REPORT: usize = 64 << 20;

/// A load-generating host: `ssh://[user@]host[:port]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// As given, for messages and reports.
    pub name: String,
    user: Option<String>,
    host: String,
    port: Option<u16>,
}

impl Host {
    /// Parses `ssh://[user@]host[:port]`.
    pub fn parse(text: &str) -> Result<Host, InputError> {
        let bad = |why: &str| InputError(format!("--remote {text:?}: {why}: expected ssh://[user@]host[:port]"));
        let url = url::Url::parse(text).map_err(|e| bad(&e.to_string()))?;
        if url.scheme() != "ssh" {
            return Err(bad("not an ssh:// address"));
        }
        if url.password().is_some() || !matches!(url.path(), "" | "/") || url.query().is_some() {
            return Err(bad("no password, path or query"));
        }
        let host = url.host_str().filter(|h| !h.is_empty()).ok_or_else(|| bad("no host"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        if host.starts_with('-') {
            return Err(bad("a host name cannot start with -"));
        }
        let user = Some(url.username()).filter(|u| !u.is_empty()).map(str::to_string);
        Ok(Host { name: text.trim_end_matches('/').to_string(), user, host, port: url.port() })
    }

    /// The ssh command that runs `remote_command` (one shell line) on this host.
    fn command(&self, ssh: &[String], remote_command: &str) -> Command {
        let mut c = Command::new(&ssh[0]);
        c.args(&ssh[1..]);
        // No prompt can block the run; a host that does not answer is noticed within 10 to 15 s.
        c.args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]);
        c.args(["-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"]);
        if let Some(p) = self.port {
            c.args(["-p", &p.to_string()]);
        }
        if let Some(u) = &self.user {
            c.args(["-l", u]);
        }
        c.arg(&self.host).arg("--").arg(remote_command);
        c
    }
}

/// Where a bench's load comes from: the hosts, and whether this machine sends its share.
#[derive(Debug, Clone)]
pub struct Remote {
    pub hosts: Vec<Host>,
    /// This machine sends a share too (false: `--remote-only`).
    pub local: bool,
    ssh: Vec<String>,
}

impl Remote {
    /// The remote side of `spec` (`remote`, `remote_only`); None when it has no host.
    pub fn of(spec: &BenchSpec) -> Result<Option<Remote>, InputError> {
        if spec.remote.is_empty() {
            if spec.remote_only {
                return Err(InputError("--remote-only needs at least one --remote ssh://host".into()));
            }
            return Ok(None);
        }
        let hosts = spec.remote.iter().map(|h| Host::parse(h)).collect::<Result<Vec<_>, _>>()?;
        for (i, h) in hosts.iter().enumerate() {
            if hosts[..i].contains(h) {
                return Err(InputError(format!("--remote {} is given twice", h.name)));
            }
        }
        Ok(Some(Remote { hosts, local: !spec.remote_only, ssh: ssh_command()? }))
    }

    /// Where the load comes from, in the order of the reports' host lines.
    pub fn sources(&self) -> Vec<String> {
        let local = self.local.then(|| LOCAL.to_string());
        local.into_iter().chain(self.hosts.iter().map(|h| h.name.clone())).collect()
    }

    /// Checks every host at once: it answers, runs a webtune of this version, and its clock is
    /// within a second of this machine's. The error names the host.
    pub fn check(&self) -> Result<(), InputError> {
        std::thread::scope(|s| {
            let checks: Vec<_> = self.hosts.iter().map(|h| s.spawn(move || self.check_host(h))).collect();
            checks.into_iter().try_for_each(|c| c.join().unwrap_or_else(|_| Err(InputError("check panicked".into()))))
        })
    }

    fn check_host(&self, host: &Host) -> Result<(), InputError> {
        let before = SystemTime::now();
        let mut child = host
            .command(&self.ssh, "webtune --version && date +%s.%N")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| InputError(format!("{}: cannot run {}: {e}", host.name, self.ssh[0])))?;
        let out = bounded_output(&mut child, ANSWER_WITHIN).map_err(|e| InputError(format!("{}: {e}", host.name)))?;
        let after = SystemTime::now();
        if !out.status.success() {
            return Err(InputError(format!("{}: {}", host.name, failure(out.status.code(), &out.stderr))));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let version = lines.next().unwrap_or("").trim().strip_prefix("webtune ").unwrap_or("?").to_string();
        // Version and commit: two builds of one version may still measure differently.
        let ours = crate::VERSION;
        if version != ours {
            return Err(InputError(format!(
                "{} has webtune {version}, this machine webtune {ours}: install the same build (version and commit) on both",
                host.name
            )));
        }
        let their_clock: f64 = lines
            .next()
            .and_then(|l| l.trim().parse().ok())
            .filter(|t: &f64| t.is_finite())
            .ok_or_else(|| InputError(format!("{}: `date +%s.%N` did not print the time", host.name)))?;
        let epoch = |t: SystemTime| t.duration_since(SystemTime::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        let (t0, t1) = (epoch(before), epoch(after));
        // The host read its clock somewhere between t0 and t1: off by more than the limit
        // only when it is outside that span widened by the limit.
        let off = if their_clock < t0 { t0 - their_clock } else { (their_clock - t1).max(0.0) };
        if off > MAX_CLOCK_OFFSET.as_secs_f64() {
            return Err(InputError(format!(
                "{}: its clock is {off:.1} s away from this machine's (at most {} s): synchronise the clocks (NTP)",
                host.name,
                MAX_CLOCK_OFFSET.as_secs()
            )));
        }
        Ok(())
    }

    /// Runs `spec` split over the hosts (and this machine, unless remote-only), all started
    /// together, and merges the reports exactly; the merged report has one line per source in
    /// `breakdown.hosts`. Setting `interrupt` stops every share, with the figures so far; a
    /// lost host stops the others and fails the run, naming it.
    pub fn run(&self, spec: &BenchSpec, interrupt: &Arc<AtomicBool>) -> anyhow::Result<BenchReport> {
        let names = self.sources();
        let shares = split(spec, names.len())?;
        let (local_share, remote_shares) =
            if self.local { (Some(&shares[0]), &shares[1..]) } else { (None, &shares[..]) };
        let local_plan = local_share.map(|s| s.plan()).transpose()?;
        let (events, inbox) = mpsc::channel();
        let mut agents = Vec::with_capacity(self.hosts.len());
        for (i, (host, share)) in self.hosts.iter().zip(remote_shares).enumerate() {
            agents.push(Agent::start(i, host, &self.ssh, &agent_command(share)?, events.clone())?);
        }
        drop(events);

        wait_ready(&agents, &inbox, interrupt)?;
        // All at once, this machine's share with them.
        let stop = Arc::new(AtomicBool::new(false));
        for a in &mut agents {
            a.say(GO);
        }
        let report_by = Instant::now() + report_within(spec);
        let (local, reports) = std::thread::scope(|s| {
            let local = local_plan.as_ref().map(|p| {
                let stop = stop.clone();
                s.spawn(move || super::run(p, &stop))
            });
            let reports = collect(&mut agents, &inbox, interrupt, &stop, report_by);
            // A host lost ends this machine's share too; otherwise it runs its own course (its
            // requests or its duration: the hosts may have finished first), but Ctrl-C still
            // ends it.
            if reports.is_err() {
                stop.store(true, Ordering::SeqCst);
            }
            while local.as_ref().is_some_and(|h| !h.is_finished()) {
                if interrupt.load(Ordering::SeqCst) {
                    stop.store(true, Ordering::SeqCst);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let local = match local {
                Some(h) => Some(h.join().map_err(|_| anyhow::anyhow!("the local bench panicked"))??),
                None => None,
            };
            anyhow::Ok((local, reports?))
        })?;
        drop(agents);

        let mut all: Vec<BenchReport> = local.into_iter().collect();
        all.extend(reports);
        merge(all, &names)
    }
}

/// Waits until every agent has said it is ready (its plan checked); fails on Ctrl-C, on an
/// agent that ended instead, or after `ANSWER_WITHIN`.
fn wait_ready(agents: &[Agent], inbox: &mpsc::Receiver<Event>, interrupt: &AtomicBool) -> anyhow::Result<()> {
    let deadline = Instant::now() + ANSWER_WITHIN;
    let mut ready = 0;
    while ready < agents.len() {
        if interrupt.load(Ordering::SeqCst) {
            anyhow::bail!("interrupted before the hosts were ready");
        }
        match inbox.recv_timeout(Duration::from_millis(100)) {
            Ok(Event::Ready) => ready += 1,
            Ok(Event::Done(i, r)) => return Err(lost(&agents[i], r.err().unwrap_or_default())),
            Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() > deadline => {
                let names = agents.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ");
                anyhow::bail!("not every host was ready within {} s ({names})", ANSWER_WITHIN.as_secs());
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => anyhow::bail!("the hosts' readers ended"),
        }
    }
    Ok(())
}

/// Every agent's report, in the agents' order. Ctrl-C (`interrupt`) or a lost host sets
/// `stop` and tells every agent to stop (they report what they measured so far); a lost host,
/// or one that has not reported by `report_by`, fails the whole run, naming it.
fn collect(
    agents: &mut [Agent],
    inbox: &mpsc::Receiver<Event>,
    interrupt: &AtomicBool,
    stop: &AtomicBool,
    report_by: Instant,
) -> anyhow::Result<Vec<BenchReport>> {
    let mut reports: Vec<Option<BenchReport>> = vec![None; agents.len()];
    let mut failure = None;
    let mut stopped = false;
    let mut report_by = report_by;
    let mut waiting = agents.len();
    while waiting > 0 {
        if !stopped && (interrupt.load(Ordering::SeqCst) || failure.is_some()) {
            stopped = true;
            stop.store(true, Ordering::SeqCst);
            agents.iter_mut().for_each(|a| a.say(STOP));
            // Ctrl-C is answered within a second: hosts that do not report by then are lost.
            report_by = report_by.min(Instant::now() + REPORT_AFTER_STOP);
        }
        match inbox.recv_timeout(Duration::from_millis(100)) {
            Ok(Event::Done(i, result)) => {
                waiting -= 1;
                match result {
                    Ok(r) => reports[i] = Some(*r),
                    Err(e) if failure.is_none() => failure = Some(lost(&agents[i], e)),
                    Err(_) => {}
                }
            }
            Ok(Event::Ready) => {}
            Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() > report_by => {
                let late: Vec<&str> =
                    agents.iter().zip(&reports).filter(|(_, r)| r.is_none()).map(|(a, _)| a.name.as_str()).collect();
                return Err(failure.unwrap_or_else(|| anyhow::anyhow!("{}: no report in time: lost", late.join(", "))));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => anyhow::bail!("the hosts' readers ended"),
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(reports.into_iter().flatten().collect()),
    }
}

/// How long after "go" the hosts may take to report: a timed run's length, or with -n the
/// longest the run can take (every connection's requests each waiting the whole timeout, or
/// the requests at the asked rate, whichever is longer), plus one timeout and REPORT_GRACE.
pub fn report_within(spec: &BenchSpec) -> Duration {
    let timeout = spec.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let run = spec.run_length().unwrap_or_else(|| {
        let requests = spec.requests.unwrap_or(0);
        let connections = spec.connections.unwrap_or_else(|| spec.default_connections()).max(1);
        let waiting = timeout.saturating_mul(u32::try_from(requests.div_ceil(connections)).unwrap_or(u32::MAX));
        let paced = spec.rate.and_then(|r| r.per_second()).filter(|r| *r > 0.0).map_or(0.0, |r| requests as f64 / r);
        waiting.max(Duration::try_from_secs_f64(paced).unwrap_or(Duration::MAX))
    });
    run.saturating_add(timeout).saturating_add(REPORT_GRACE)
}

/// The merged report, with each source's own line.
fn merge(reports: Vec<BenchReport>, names: &[String]) -> anyhow::Result<BenchReport> {
    let mut merged = crate::aggregate::merge::merge(&reports, names)?;
    merged.options.requests = reports.iter().map(|r| r.options.requests).sum();
    let max = Duration::from_secs_f64(merged.options.timeout_s.max(0.001));
    merged.breakdown.hosts = reports
        .iter()
        .zip(names)
        .map(|(r, name)| {
            let s = crate::aggregate::Summary::from_result(&r.result, max)?;
            Ok(s.to_part(name.clone(), r.result.duration_s))
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(merged)
}

/// `spec` split into `parts` shares whose connections, requests and rate add up to its own
/// exactly (the first shares take the remainders).
pub fn split(spec: &BenchSpec, parts: usize) -> Result<Vec<BenchSpec>, InputError> {
    if spec.stages.is_some() {
        return Err(InputError("--stages cannot be split between machines yet: use -c or --rate with --remote".into()));
    }
    let parts_n = parts as u64;
    let connections = spec.connections.unwrap_or_else(|| spec.default_connections());
    if connections < parts_n {
        return Err(InputError(format!(
            "-c {connections} is fewer than the {parts} machines sending load: each needs a connection"
        )));
    }
    if !spec.access_log.is_empty() {
        return Err(InputError(
            "--access-log cannot be split between machines yet: write its URL list (webtune urls --from-log) and give --urls with --rate".into(),
        ));
    }
    let share = |total: u64, i: u64| total / parts_n + u64::from(i < total % parts_n);
    let rate = match spec.rate {
        Some(crate::bench::Rate::PerSecond(r)) => Some(r),
        Some(crate::bench::Rate::Log(_)) => return Err(InputError("--rate log needs --access-log".into())),
        None => None,
    };
    let rate_each = rate.map(|r| r / parts as f64);
    Ok((0..parts_n)
        .map(|i| BenchSpec {
            connections: Some(share(connections, i)),
            requests: spec.requests.map(|n| share(n, i)),
            // The last share takes what division lost, so the rates add up to the one asked.
            rate: match (rate, rate_each) {
                (Some(r), Some(each)) if i + 1 == parts_n => Some(r - each * (parts_n - 1) as f64),
                (_, each) => each,
            }
            .map(crate::bench::Rate::PerSecond),
            seed: spec.seed.map(|s| s.wrapping_add(i)),
            remote: Vec::new(),
            remote_only: false,
            ..spec.clone()
        })
        .collect())
}

/// The remote shell line that runs `spec` as an agent. Files are named by absolute paths: a
/// host reads them at the same place (a relative path would start from the remote home).
fn agent_command(spec: &BenchSpec) -> Result<String, InputError> {
    let absolute = |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| std::path::absolute(p).unwrap_or(p.clone()));
    let body = spec.body.as_ref().map(|b| match b.strip_prefix('@') {
        Some(file) => format!("@{}", std::path::absolute(file).map_or(file.into(), |p| p.display().to_string())),
        None => b.clone(),
    });
    let spec = BenchSpec {
        urls: absolute(&spec.urls),
        scenario: absolute(&spec.scenario),
        post_file: absolute(&spec.post_file),
        body,
        ..spec.clone()
    };
    let mut words = vec!["webtune".to_string(), "bench".into()];
    words.extend(spec.to_args());
    words.extend(["--json".into(), "--quiet".into(), "--agent".into()]);
    shlex::try_join(words.iter().map(String::as_str))
        .map_err(|e| InputError(format!("the bench options cannot be sent over ssh: {e}")))
}

/// `ssh`, or the words of `$WEBTUNE_SSH`.
fn ssh_command() -> Result<Vec<String>, InputError> {
    match std::env::var(SSH_ENV) {
        Ok(v) if !v.trim().is_empty() => match shlex::split(&v) {
            Some(words) if !words.is_empty() => Ok(words),
            _ => Err(InputError(format!("{SSH_ENV}={v:?}: unbalanced quotes"))),
        },
        _ => Ok(vec!["ssh".into()]),
    }
}

/// What ssh's exit status and error output say, in one line.
fn failure(code: Option<i32>, stderr: &[u8]) -> String {
    let last = last_line(stderr);
    match code {
        Some(255) if last.contains("Permission denied") || last.contains("verification failed") => {
            format!(
                "ssh failed: {last} (no prompt is possible: the host must accept a key of yours, and be in known_hosts)"
            )
        }
        Some(255) => format!("ssh failed: {last}"),
        Some(127) => format!("no webtune on the host's PATH ({last})"),
        Some(c) => format!("exit status {c}: {last}"),
        None => format!("killed by a signal: {last}"),
    }
}

/// The last line of an error output that says something.
fn last_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    // A host's words are not ours: control characters escaped, the length capped.
    crate::input::echo_max(text.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or(""), STDERR_LINE)
}

fn lost(agent: &Agent, why: String) -> anyhow::Error {
    anyhow::anyhow!("{}: {why}", agent.name)
}

struct Output {
    status: std::process::ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// The child's output and status, or an error when it takes longer than `limit` (it is killed).
fn bounded_output(child: &mut Child, limit: Duration) -> Result<Output, String> {
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = (&mut out).take(1 << 16).read_to_end(&mut buf);
        buf
    });
    let err_reader = std::thread::spawn(move || tail(&mut err));
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {} s", limit.as_secs()));
            }
            Ok(None) if crate::sys::interrupt_if_installed().load(Ordering::SeqCst) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("interrupted".into());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    };
    Ok(Output { status, stdout: reader.join().unwrap_or_default(), stderr: err_reader.join().unwrap_or_default() })
}

/// Bytes a host sent, as text safe to print.
fn echo_bytes(b: &[u8]) -> String {
    crate::input::echo(&String::from_utf8_lossy(b))
}

/// The last `STDERR_TAIL` bytes of a stream, read to its end.
fn tail(r: &mut impl Read) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = r.read(&mut buf) {
        if n == 0 {
            break;
        }
        kept.extend_from_slice(&buf[..n]);
        if kept.len() > STDERR_TAIL {
            kept.drain(..kept.len() - STDERR_TAIL);
        }
    }
    kept
}

enum Event {
    Ready,
    Done(usize, Result<Box<BenchReport>, String>),
}

/// One host's bench under way: its ssh process, stopped (and so its session) on drop.
struct Agent {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    /// Tells its reader to give up (the run is over, whatever the host still sends).
    abandon: Arc<AtomicBool>,
}

impl Agent {
    fn start(
        index: usize,
        host: &Host,
        ssh: &[String],
        remote_command: &str,
        events: mpsc::Sender<Event>,
    ) -> anyhow::Result<Agent> {
        use std::os::unix::process::CommandExt;
        let mut child = host
            .command(ssh, remote_command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: Ctrl-C reaches this process only, which then asks every
            // host to stop and collects the figures so far.
            .process_group(0)
            .spawn()
            .map_err(|e| InputError(format!("{}: cannot run {}: {e}", host.name, ssh[0])))?;
        let stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let abandon = Arc::new(AtomicBool::new(false));
        let abandoned = abandon.clone();
        std::thread::spawn(move || {
            let (err_tx, err_rx) = mpsc::channel();
            std::thread::spawn(move || err_tx.send(tail(&mut stderr)));
            // No deadline of its own: `collect` keeps the time and abandons it (on drop).
            let never = Instant::now() + Duration::from_secs(365 * 24 * 3600);
            let mut out = crate::sys::bounded::Bounded::new(stdout, never, MAX_READY_LINE, &abandoned, "the host");
            let line = out.read_line().ok().flatten().map(|l| echo_bytes(&l)).unwrap_or_default();
            let ready = line.trim_end() == READY;
            if ready {
                let _ = events.send(Event::Ready);
            }
            out.set_cap(MAX_REPORT);
            let read = out.read_to_end();
            // A host that keeps its error output open (still running) is not waited for long.
            let stderr = err_rx.recv_timeout(Duration::from_millis(300)).unwrap_or_default();
            let why = || match last_line(&stderr) {
                last if last.is_empty() => "the connection was lost".to_string(),
                last => last,
            };
            let result = match (ready, read) {
                (false, _) => Err(format!("{}{}", crate::input::echo(line.trim()), why())),
                (true, Err(e)) => Err(format!("reading its report: {e}")),
                (true, Ok(text)) if text.trim_ascii().is_empty() => Err(format!("no report: {}", why())),
                (true, Ok(text)) => match serde_json::from_slice::<BenchReport>(&text) {
                    Ok(r) if r.schema == SCHEMA_ID => Ok(Box::new(r)),
                    Ok(r) => Err(format!("its report has schema {:?}, not {SCHEMA_ID}", r.schema)),
                    Err(e) => Err(format!("its report does not parse: {e}")),
                },
            };
            let _ = events.send(Event::Done(index, result));
        });
        let stdin = child.stdin.take();
        Ok(Agent { name: host.name.clone(), child, stdin, abandon })
    }

    /// Sends one line to the agent; a host already gone is noticed by its reader.
    fn say(&mut self, line: &str) {
        if let Some(s) = &mut self.stdin {
            let _ = writeln!(s, "{line}").and_then(|()| s.flush());
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        // Closing its input ends the remote run; ssh ends with it, or is killed after a grace.
        drop(self.stdin.take());
        self.abandon.store(true, Ordering::SeqCst);
        // Short: every way a run ends (Ctrl-C included) passes here within its second.
        let deadline = Instant::now() + Duration::from_millis(200);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_an_ssh_address_with_an_optional_user_and_port() {
        let h = Host::parse("ssh://bob@loadgen1:2222").unwrap();
        assert_eq!((h.user.as_deref(), h.host.as_str(), h.port), (Some("bob"), "loadgen1", Some(2222)));
        let h = Host::parse("ssh://[::1]").unwrap();
        assert_eq!((h.user, h.host.as_str(), h.port), (None, "::1", None));
        for bad in ["loadgen1", "http://loadgen1", "ssh://", "ssh://a/path", "ssh://a:b@c", "ssh://-oProxy=x"] {
            let e = Host::parse(bad).unwrap_err().0;
            assert!(e.contains("expected ssh://[user@]host[:port]"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_host_runs_the_agent_with_files_at_absolute_paths_and_every_word_quoted() {
        let spec = BenchSpec {
            url: Some("http://10.0.0.5:8080/".into()),
            urls: Some("list.txt".into()),
            body: Some("@body file".into()),
            headers: vec!["X-A: it's; rm -rf /".into()],
            ..Default::default()
        };
        let line = agent_command(&spec).unwrap();
        let words = shlex::split(&line).unwrap();
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(words[..3], ["webtune", "bench", "http://10.0.0.5:8080/"]);
        assert!(words.ends_with(&["--json".into(), "--quiet".into(), "--agent".into()]), "{words:?}");
        let after = |flag: &str| words[words.iter().position(|w| w == flag).unwrap() + 1].clone();
        assert_eq!(after("-H"), "X-A: it's; rm -rf /");
        assert_eq!(after("--urls"), cwd.join("list.txt").display().to_string());
        assert_eq!(after("--body"), format!("@{}", cwd.join("body file").display()));
    }

    #[test]
    fn shares_add_up_to_what_was_asked_exactly() {
        let spec = BenchSpec {
            connections: Some(10),
            requests: Some(1001),
            rate: Some(crate::bench::Rate::PerSecond(1000.0)),
            ..Default::default()
        };
        let shares = split(&spec, 3).unwrap();
        assert_eq!(shares.iter().map(|s| s.connections.unwrap()).collect::<Vec<_>>(), [4, 3, 3]);
        assert_eq!(shares.iter().map(|s| s.requests.unwrap()).sum::<u64>(), 1001);
        let rate: f64 = shares
            .iter()
            .map(|s| match s.rate {
                Some(crate::bench::Rate::PerSecond(r)) => r,
                other => panic!("{other:?}"),
            })
            .sum();
        assert!((rate - 1000.0).abs() < 1e-9, "{rate}");
        let e = split(&BenchSpec { connections: Some(2), ..Default::default() }, 3).unwrap_err().0;
        assert_eq!(e, "-c 2 is fewer than the 3 machines sending load: each needs a connection");
    }
}
