//! `webtune bench`: validate the flags into a plan, run the engine with its sinks, export.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use super::UsageError;
use super::args::BenchArgs;
use crate::aggregate::Summary;
use crate::aggregate::intervals::IntervalTap;
use crate::aggregate::progress::ProgressBoard;
use crate::aggregate::result::{BenchReport, ClientCpu, Options, RateStats, SCHEMA_ID, TargetInfo};
use crate::engine::request::RequestSpec;
use crate::engine::{self, Plan, Shared, Stop, Target, TlsSettings};
use crate::report::hdrlog::{HdrLogWriter, Timing};
use crate::report::progress::{Goal, ProgressLine};
use crate::sys::{self, CpuTimes};

/// Share of the available CPU above which the client, not the server, sets the pace.
const CLIENT_BOUND_SHARE: f64 = 0.90;

/// The validated run: everything the engine and the exporters need.
pub struct BenchPlan {
    pub engine: Plan,
    pub url: String,
    pub method: String,
    pub json: bool,
    pub hdr_log: Option<PathBuf>,
    pub quiet: bool,
}

impl BenchPlan {
    pub fn from_args(a: &BenchArgs) -> Result<BenchPlan, UsageError> {
        let usage = |msg: String| UsageError(msg);
        if a.connections == 0 {
            return Err(usage("-c must be at least 1".into()));
        }
        let connections = a.connections as usize;
        let stop = match (a.requests, &a.duration) {
            (Some(0), _) => return Err(usage("-n must be at least 1".into())),
            (Some(n), _) if n < a.connections => {
                return Err(usage(format!(
                    "-n {n} is smaller than -c {connections}: every connection needs a request"
                )));
            }
            (Some(n), _) => Stop::Requests(n),
            (None, Some(d)) => Stop::Duration(parse_duration("-d", d)?),
            (None, None) => Stop::Duration(Duration::from_secs(10)),
        };
        if stop == Stop::Duration(Duration::ZERO) {
            return Err(usage("-d must be longer than zero".into()));
        }
        let threads = match a.threads {
            Some(0) => return Err(usage("-t must be at least 1".into())),
            Some(t) => t as usize,
            None => sys::available_cores(),
        }
        .min(connections);
        let timeout = parse_duration("--timeout", &a.timeout)?;
        if timeout.is_zero() {
            return Err(usage("--timeout must be longer than zero".into()));
        }
        let connect_timeout = match &a.connect_timeout {
            Some(t) => parse_duration("--connect-timeout", t)?,
            None => timeout,
        };

        let url = url::Url::parse(&a.url).map_err(|e| usage(format!("bad URL {:?}: {e}", a.url)))?;
        let https = match url.scheme() {
            "http" => false,
            "https" => true,
            other => return Err(usage(format!("bad URL {:?}: scheme {other:?} is not http or https", a.url))),
        };
        let host =
            url.host_str().filter(|h| !h.is_empty()).ok_or_else(|| usage(format!("bad URL {:?}: no host", a.url)))?;
        let port = url.port_or_known_default().unwrap_or(if https { 443 } else { 80 });
        let addr = resolve(host, port)?;
        let host_header = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        };
        let bare_host = host.trim_start_matches('[').trim_end_matches(']');
        let tls = if https {
            Some(TlsSettings::new(bare_host, a.insecure).map_err(|e| usage(format!("TLS set-up failed: {e}")))?)
        } else {
            None
        };

        let body = match (&a.post_file, &a.body) {
            (Some(path), _) => Some(read_body(path)?),
            (None, Some(b)) => match b.strip_prefix('@') {
                Some(path) => Some(read_body(&PathBuf::from(path))?),
                None => Some(b.clone().into_bytes()),
            },
            (None, None) => None,
        };
        let method = if body.is_some() && a.method == "GET" && a.post_file.is_some() {
            "POST".to_string()
        } else {
            a.method.clone()
        };
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.!~*'".contains(&b)) {
            return Err(usage(format!("bad method {method:?}")));
        }
        let headers = a.headers.iter().map(|h| parse_header(h)).collect::<Result<Vec<_>, _>>()?;
        let keepalive = !a.no_keepalive;
        let path = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        let spec = RequestSpec {
            method: method.clone(),
            path,
            host: host_header,
            headers,
            body,
            content_type: a.content_type.clone(),
            keepalive,
        };
        let target = Target { addr, tls, request: spec.render().into(), head_request: method == "HEAD" };
        Ok(BenchPlan {
            engine: Plan { target, connections, threads, stop, keepalive, timeout, connect_timeout },
            url: a.url.clone(),
            method,
            json: a.json,
            hdr_log: a.hdr_log.clone(),
            quiet: a.quiet,
        })
    }
}

/// Parses "30s", "250ms", "2m"; a bare number is seconds.
pub fn parse_duration(flag: &str, s: &str) -> Result<Duration, UsageError> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<f64>()
        && secs.is_finite()
        && secs >= 0.0
    {
        return Ok(Duration::from_secs_f64(secs));
    }
    humantime::parse_duration(s).map_err(|e| UsageError(format!("{flag}: bad duration {s:?} ({e})")))
}

/// Resolves the host. When it has several addresses (localhost: ::1 and 127.0.0.1), the
/// first that accepts a connection is used, as browsers and curl do; the engine then sticks
/// to it. With none accepting, the first is used and the run reports the refusals.
fn resolve(host: &str, port: u16) -> Result<SocketAddr, UsageError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> =
        (bare, port).to_socket_addrs().map_err(|e| UsageError(format!("cannot resolve host {host:?}: {e}")))?.collect();
    match addrs.as_slice() {
        [] => Err(UsageError(format!("cannot resolve host {host:?}: no address"))),
        [only] => Ok(*only),
        several => Ok(several
            .iter()
            .find(|a| std::net::TcpStream::connect_timeout(a, Duration::from_secs(1)).is_ok())
            .unwrap_or(&several[0])
            .to_owned()),
    }
}

fn read_body(path: &PathBuf) -> Result<Vec<u8>, UsageError> {
    std::fs::read(path).map_err(|e| UsageError(format!("cannot read body file {}: {e}", path.display())))
}

fn parse_header(h: &str) -> Result<(String, String), UsageError> {
    let bad = || UsageError(format!("bad header {h:?}: expected 'Name: value'"));
    let (name, value) = h.split_once(':').ok_or_else(bad)?;
    let name = name.trim();
    let valid_name = !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic() && b != b':');
    if !valid_name || value.contains(['\r', '\n']) {
        return Err(bad());
    }
    Ok((name.to_string(), value.trim().to_string()))
}

/// Runs the plan and returns the report. Ctrl-C ends the run early with the figures so far.
pub fn run(plan: &BenchPlan) -> anyhow::Result<BenchReport> {
    let ep = &plan.engine;
    // Each connection needs a descriptor; leave room for the epoll sets, logs and stdio.
    sys::ensure_fd_limit(ep.connections as u64 + 64).map_err(|e| UsageError(e.to_string()))?;

    let shared = Arc::new(Shared::default());
    let on_signal = shared.clone();
    // A second handler cannot be installed (tests may run twice in-process); keep the first.
    let _ = ctrlc::set_handler(move || on_signal.interrupt.store(true, std::sync::atomic::Ordering::Relaxed));

    let origin = Instant::now();
    let wall_origin = SystemTime::now();
    let max_us = ep.timeout.as_micros() as u64;
    let interval = Duration::from_secs(1);
    let (log_tx, log_rx) = mpsc::channel();
    let log_writer = match &plan.hdr_log {
        Some(path) => Some(
            HdrLogWriter::start(
                path,
                log_rx,
                Timing { origin, wall_origin, interval, grace: ep.timeout + Duration::from_secs(1) },
            )
            .map_err(|e| UsageError(format!("{e:#}")))?,
        ),
        None => None,
    };
    let mut board = ProgressBoard::default();
    let sinks: Vec<_> = (0..ep.threads)
        .map(|_| {
            let log = log_writer.as_ref().map(|_| IntervalTap::new(origin, interval, max_us, log_tx.clone()));
            (Summary::new(ep.timeout), board.tap(), log)
        })
        .collect();
    drop(log_tx);

    let cpu_before = CpuTimes::now();
    let (done_tx, done_rx) = mpsc::channel();
    let engine_plan = ep.clone();
    let engine_shared = shared.clone();
    let engine = std::thread::Builder::new().name("webtune-engine".into()).spawn(move || {
        let outcome = engine::run(&engine_plan, sinks, engine_shared);
        let _ = done_tx.send(());
        outcome
    })?;

    let goal = match ep.stop {
        Stop::Requests(n) => Goal::Requests(n),
        Stop::Duration(d) => Goal::Duration(d),
    };
    let mut line = ProgressLine::new(plan.quiet || plan.json);
    let rates = follow(&done_rx, &board, &mut line, origin, goal);
    line.clear();
    let outcome = engine.join().map_err(|_| anyhow::anyhow!("the engine panicked"))??;
    let cpu = CpuTimes::now().since(cpu_before);

    let mut summary = Summary::new(ep.timeout);
    let mut log_result = Ok(());
    for (s, _, log) in outcome.sinks {
        summary.merge(&s);
        if let Some(log) = log {
            log.finish();
        }
    }
    if let Some(w) = log_writer {
        log_result = w.finish();
    }
    let result = summary.to_result(outcome.elapsed, outcome.in_flight_at_end);

    let (client_cpu, client_bound) = client_cpu(cpu, outcome.elapsed, ep.threads, result.succeeded);
    let mut warnings: Vec<String> = client_bound.into_iter().collect();
    if outcome.interrupted {
        warnings.push("interrupted: the figures cover the requests finished before Ctrl-C".into());
    }
    if let Err(e) = &log_result {
        warnings.push(format!("the HdrHistogram log is incomplete: {e:#}"));
    }
    Ok(BenchReport {
        schema: SCHEMA_ID.into(),
        webtune_version: env!("CARGO_PKG_VERSION").into(),
        started_at: humantime::format_rfc3339_millis(wall_origin).to_string(),
        target: TargetInfo {
            url: plan.url.clone(),
            method: plan.method.clone(),
            server: outcome.server.filter(|s| !s.is_empty()),
            document_length: shared.document_length(),
        },
        options: options(ep),
        interrupted: outcome.interrupted,
        reply_rate: RateStats::from_samples(&rates),
        client_cpu,
        result,
        warnings,
    })
}

/// Samples the progress counters once a second until the engine is done: draws the progress
/// line and returns the reply rate of each second.
fn follow(
    done: &mpsc::Receiver<()>,
    board: &ProgressBoard,
    line: &mut ProgressLine,
    origin: Instant,
    goal: Goal,
) -> Vec<f64> {
    let mut rates = Vec::new();
    let mut last = (Instant::now(), 0u64);
    while let Err(mpsc::RecvTimeoutError::Timeout) = done.recv_timeout(Duration::from_secs(1)) {
        let (ok, failed) = board.totals();
        let now = Instant::now();
        let rate = (ok - last.1) as f64 / (now - last.0).as_secs_f64();
        rates.push(rate);
        last = (now, ok);
        line.draw(origin.elapsed(), ok, failed, rate, goal);
    }
    line.clear();
    rates
}

/// The client's own CPU use over the run, and a warning when it was the bottleneck.
fn client_cpu(cpu: CpuTimes, elapsed: Duration, threads: usize, succeeded: u64) -> (ClientCpu, Option<String>) {
    let cores = threads.min(sys::available_cores());
    let used = (cpu.user + cpu.sys).as_secs_f64();
    let share = used / (elapsed.as_secs_f64().max(1e-9) * cores as f64);
    let warning = (share > CLIENT_BOUND_SHARE).then(|| {
        format!(
            "the client used {:.0}% of its {cores} core(s): these figures are the client's limit, not the server's; add cores or threads",
            share * 100.0
        )
    });
    let cpu = ClientCpu {
        user_s: cpu.user.as_secs_f64(),
        sys_s: cpu.sys.as_secs_f64(),
        percent_of_available: share * 100.0,
        cores_available: cores,
        us_per_request: (succeeded > 0).then(|| used * 1e6 / succeeded as f64),
    };
    (cpu, warning)
}

fn options(ep: &Plan) -> Options {
    let (requests, duration_s) = match ep.stop {
        Stop::Requests(n) => (Some(n), None),
        Stop::Duration(d) => (None, Some(d.as_secs_f64())),
    };
    Options {
        connections: ep.connections,
        threads: ep.threads,
        keepalive: ep.keepalive,
        requests,
        duration_s,
        timeout_s: ep.timeout.as_secs_f64(),
    }
}

/// Runs N requests through the load engine, quietly, for commands that measure a server
/// while it serves (mem, syscalls). Fails when none succeeded.
pub fn drive(
    url: &str,
    connections: u64,
    requests: u64,
    keepalive: bool,
) -> anyhow::Result<crate::aggregate::BenchReport> {
    let args = BenchArgs {
        url: url.to_string(),
        connections,
        requests: Some(requests),
        duration: None,
        threads: None,
        keepalive,
        no_keepalive: !keepalive,
        method: "GET".into(),
        headers: Vec::new(),
        post_file: None,
        content_type: None,
        body: None,
        timeout: "30s".into(),
        connect_timeout: None,
        insecure: true,
        json: true,
        hdr_log: None,
        quiet: true,
    };
    let plan = BenchPlan::from_args(&args)?;
    let report = run(&plan)?;
    if report.result.succeeded == 0 {
        anyhow::bail!("no request to {url} succeeded; growth per request cannot be measured");
    }
    Ok(report)
}
