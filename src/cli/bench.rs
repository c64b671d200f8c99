//! `webtune bench`: validate the flags into a plan, run the engine with its sinks, export.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use super::UsageError;
use super::args::BenchArgs;
use super::workload::{self, Common, Workload};
use crate::aggregate::Summary;
use crate::aggregate::breakdown::{BreakdownSink, Layout};
use crate::aggregate::intervals::IntervalTap;
use crate::aggregate::progress::ProgressBoard;
use crate::aggregate::result::{BenchReport, ClientCpu, Coalesced, Options, RateStats, SCHEMA_ID, TargetInfo};
use crate::engine::{self, Arrival, Endpoint, Order, Pacing, Plan, Schedule, Shared, Stage, Stop, Throttle};
use crate::report::hdrlog::{HdrLogWriter, Timing};
use crate::report::progress::{Goal, ProgressLine};
use crate::sys::{self, CpuTimes};

/// Share of the available CPU above which the client, not the server, sets the pace.
const CLIENT_BOUND_SHARE: f64 = 0.90;
/// Shorter runs are not judged: the client's start-up (threads, connections) then weighs as
/// much as the load, and a run that failed at once divides nothing by nothing.
const CLIENT_BOUND_MIN_RUN: Duration = Duration::from_millis(200);

/// The validated run: everything the engine and the exporters need.
pub struct BenchPlan {
    pub engine: Plan,
    pub url: String,
    pub method: String,
    pub json: bool,
    pub hdr_log: Option<PathBuf>,
    pub quiet: bool,
    /// How the report splits the figures.
    pub layout: Layout,
    pub describe: Described,
}

/// What the report says about the plan beyond the engine's settings.
pub struct Described {
    pub stages: Option<String>,
    pub requests_file: Option<String>,
    pub warning: Option<String>,
}

impl BenchPlan {
    pub fn from_args(a: &BenchArgs) -> Result<BenchPlan, UsageError> {
        let usage = |msg: String| UsageError(msg);
        let stages = a.stages.as_deref().map(parse_stages).transpose()?;
        let open = a.rate.is_some() || a.arrival.is_some() || a.open;
        if open && a.rate.is_none() && stages.is_none() {
            return Err(usage("the open loop needs --rate R or --stages".into()));
        }
        if let Some(r) = a.rate
            && !(r.is_finite() && r > 0.0)
        {
            return Err(usage(format!("--rate must be a positive number of requests per second, not {r}")));
        }
        let highest = stages.as_ref().map(|s| s.iter().map(|s| s.target).fold(0.0, f64::max));
        if highest == Some(0.0) {
            return Err(usage("--stages: every stage's value is 0: nothing would be sent".into()));
        }
        let connections = match (a.connections, highest) {
            (Some(0), _) => return Err(usage("-c must be at least 1".into())),
            (Some(c), Some(h)) if !open && (c as f64) < h => {
                return Err(usage(format!("-c {c} is lower than the highest stage ({h} clients)")));
            }
            (Some(c), _) => c,
            (None, _) if open => 1000,
            (None, Some(h)) => h.ceil() as u64,
            (None, None) => 10,
        };
        let stop = match (a.requests, &a.duration, &stages) {
            (_, _, Some(s)) => Stop::Duration(s.iter().map(|s| s.duration).sum()),
            (Some(0), _, _) => return Err(usage("-n must be at least 1".into())),
            (Some(n), _, _) if n < connections && !open => {
                return Err(usage(format!(
                    "-n {n} is smaller than -c {connections}: every connection needs a request"
                )));
            }
            (Some(n), _, _) => Stop::Requests(n),
            (None, Some(d), _) => Stop::Duration(parse_duration("-d", d)?),
            (None, None, _) => Stop::Duration(Duration::from_secs(10)),
        };
        if stop == Stop::Duration(Duration::ZERO) {
            return Err(usage("-d must be longer than zero".into()));
        }
        let connections = connections as usize;
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
        workload::check_method(&method)?;
        let common = Common {
            headers: a.headers.iter().map(|h| parse_header(h)).collect::<Result<Vec<_>, _>>()?,
            body,
            content_type: a.content_type.clone(),
            keepalive: !a.no_keepalive,
        };
        let work = match (&a.urls, &a.scenario, &a.url) {
            (Some(file), _, base) => {
                let random = a.order.as_deref() == Some("random");
                Workload::url_file(file, base.as_deref(), random, &common, a.insecure)?
            }
            (None, Some(file), base) => Workload::scenario(file, base.as_deref(), &common, a.insecure)?,
            (None, None, Some(url)) => Workload::single(url, &method, &common, a.insecure)?,
            (None, None, None) => return Err(usage("give a URL, --urls FILE or --scenario FILE".into())),
        };
        let throttle = match &a.throttle {
            Some(t) => {
                let share = match &a.slow_share {
                    Some(s) => parse_share(s)?,
                    None => 1.0,
                };
                Some(Throttle { bytes_per_s: parse_bandwidth(t)?, share })
            }
            None => None,
        };
        let pacing = match (&stages, open) {
            (Some(s), true) => Pacing::Open { rate: Schedule::stages(s.clone()), arrival: arrival(a) },
            (Some(s), false) => Pacing::Closed { clients: Some(Schedule::stages(s.clone())) },
            (None, true) => Pacing::Open { rate: Schedule::constant(a.rate.unwrap_or(1.0)), arrival: arrival(a) },
            (None, false) => Pacing::Closed { clients: None },
        };
        let seed = a.seed.unwrap_or_else(|| {
            SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
        });

        let mut layout = Layout::default();
        work.apply(&mut layout);
        if let Some(s) = &stages {
            let unit = if open { "/s" } else { " clients" };
            layout.stages = s
                .iter()
                .enumerate()
                .map(|(i, st)| {
                    (
                        format!("{} {} to {}{unit}", i + 1, humantime::format_duration(st.duration), st.target),
                        st.duration,
                    )
                })
                .collect();
        }
        layout.clients = throttle.is_some_and(|t| t.share < 1.0);
        let endpoint = Endpoint {
            addr: work.origin.addr,
            tls: work.origin.tls.clone(),
            templates: work.templates.clone().into(),
            order: work.order,
        };
        let engine = Plan {
            endpoint,
            connections,
            threads,
            stop,
            keepalive: common.keepalive,
            timeout,
            connect_timeout,
            pacing,
            cookies: a.cookies,
            throttle,
            seed,
            coalesce: !a.no_coalesce,
        };
        Ok(BenchPlan {
            engine,
            url: work.url.clone(),
            method: work.method.clone(),
            json: a.json,
            hdr_log: a.hdr_log.clone(),
            quiet: a.quiet,
            layout,
            describe: Described {
                stages: a.stages.clone(),
                requests_file: a.urls.as_ref().or(a.scenario.as_ref()).map(|p| p.display().to_string()),
                warning: work.warning,
            },
        })
    }
}

fn arrival(a: &BenchArgs) -> Arrival {
    match a.arrival.as_deref() {
        Some("poisson") => Arrival::Poisson,
        _ => Arrival::Uniform,
    }
}

/// "10s:100,30s:1000,10s:0".
fn parse_stages(text: &str) -> Result<Vec<Stage>, UsageError> {
    let stages = text
        .split(',')
        .map(|part| {
            let bad = || UsageError(format!("--stages: bad stage {part:?}: expected DURATION:VALUE, e.g. 30s:100"));
            let (d, v) = part.trim().split_once(':').ok_or_else(bad)?;
            let duration = parse_duration("--stages", d)?;
            let target: f64 = v.trim().parse().map_err(|_| bad())?;
            if duration.is_zero() || !(target.is_finite() && target >= 0.0) {
                return Err(bad());
            }
            Ok(Stage { duration, target })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if stages.len() > u16::MAX as usize {
        return Err(UsageError("--stages: too many stages".into()));
    }
    Ok(stages)
}

/// "33.6kbps" (bits/s: bps, kbps, Mbps, Gbps) or "100KB/s" (bytes/s: B/s, KB/s, KiB/s, MB/s,
/// MiB/s) -> bytes per second.
pub fn parse_bandwidth(text: &str) -> Result<f64, UsageError> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || UsageError(format!("--throttle: bad bandwidth {text:?}: expected e.g. 33.6kbps, 1Mbps, 100KB/s"));
    let n: f64 = num.parse().map_err(|_| bad())?;
    let factor = match unit.trim().to_ascii_lowercase().as_str() {
        "bps" => 1.0 / 8.0,
        "kbps" => 1e3 / 8.0,
        "mbps" => 1e6 / 8.0,
        "gbps" => 1e9 / 8.0,
        "b/s" => 1.0,
        "kb/s" => 1e3,
        "kib/s" => 1024.0,
        "mb/s" => 1e6,
        "mib/s" => 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    let bytes = n * factor;
    if !(bytes.is_finite() && bytes >= 1.0) {
        return Err(bad());
    }
    Ok(bytes)
}

/// "20%" or "0.2".
fn parse_share(text: &str) -> Result<f64, UsageError> {
    let t = text.trim();
    let share = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    };
    match share {
        Ok(s) if s > 0.0 && s <= 1.0 => Ok(s),
        _ => Err(UsageError(format!("--slow-share: bad share {text:?}: expected a percentage in (0%, 100%]"))),
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

fn read_body(path: &PathBuf) -> Result<Vec<u8>, UsageError> {
    std::fs::read(path).map_err(|e| UsageError(format!("cannot read body file {}: {e}", path.display())))
}

pub(super) fn parse_header(h: &str) -> Result<(String, String), UsageError> {
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

    let shared = Arc::new(Shared::with_interrupt(sys::interrupt_flag()));

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
            let parts = (!plan.layout.is_empty()).then(|| BreakdownSink::new(&plan.layout, ep.timeout));
            ((Summary::new(ep.timeout), parts), board.tap(), log)
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
    let mut parts: Option<BreakdownSink> = None;
    let mut log_result = Ok(());
    for ((s, p), _, log) in outcome.sinks {
        summary.merge(&s);
        match (&mut parts, p) {
            (Some(all), Some(p)) => all.merge(&p),
            (none @ None, p) => *none = p,
            _ => {}
        }
        if let Some(log) = log {
            log.finish();
        }
    }
    if let Some(w) = log_writer {
        log_result = w.finish();
    }
    let mut result = summary.to_result(outcome.elapsed, outcome.in_flight_at_end);
    if ep.is_open_loop() {
        result.scheduled = Some(outcome.scheduled);
    }
    result.coalesced = outcome.batched.map(|b| Coalesced::new(b.responses, b.waited.as_secs_f64() * 1000.0));
    let breakdown = parts.map(|p| p.to_breakdown(&plan.layout, outcome.elapsed)).unwrap_or_default();

    let (client_cpu, client_bound) = client_cpu(cpu, outcome.elapsed, ep.threads, result.succeeded);
    let mut warnings: Vec<String> = client_bound.into_iter().chain(plan.describe.warning.clone()).collect();
    if let Some(late) = &result.late {
        warnings.push(format!(
            "{} requests started late (mean {:.1} ms, max {:.1} ms): all {} connections were busy; their latency counts the wait",
            late.requests, late.mean_ms, late.max_ms, ep.connections
        ));
    }
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
        options: options(plan),
        interrupted: outcome.interrupted,
        reply_rate: RateStats::from_samples(&rates),
        client_cpu,
        result,
        warnings,
        breakdown,
        merged_runs: None,
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
    let warning = (share > CLIENT_BOUND_SHARE && elapsed >= CLIENT_BOUND_MIN_RUN).then(|| {
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

fn options(plan: &BenchPlan) -> Options {
    let ep = &plan.engine;
    let (requests, duration_s) = match ep.stop {
        Stop::Requests(n) => (Some(n), None),
        Stop::Duration(d) => (None, Some(d.as_secs_f64())),
    };
    let (pacing, rate, arrival) = match &ep.pacing {
        Pacing::Open { rate, arrival } => {
            let constant = (!rate.is_staged()).then(|| rate.value_at(Duration::ZERO));
            let arrival = match arrival {
                Arrival::Uniform => "uniform",
                Arrival::Poisson => "poisson",
            };
            ("open", constant, Some(arrival.to_string()))
        }
        Pacing::Closed { .. } => ("closed", None, None),
    };
    let order = match (ep.endpoint.templates.len(), ep.endpoint.order) {
        (1, _) => "single",
        (_, Order::Sequential) => "sequential",
        (_, Order::Random) => "random",
        (_, Order::Scenario) => "scenario",
    };
    Options {
        connections: ep.connections,
        threads: ep.threads,
        keepalive: ep.keepalive,
        requests,
        duration_s,
        timeout_s: ep.timeout.as_secs_f64(),
        pacing: pacing.into(),
        rate,
        arrival,
        stages: plan.describe.stages.clone(),
        requests_file: plan.describe.requests_file.clone(),
        order: Some(order.into()),
        cookies: ep.cookies,
        throttle_bytes_per_s: ep.throttle.map(|t| t.bytes_per_s),
        slow_share: ep.throttle.map(|t| t.share),
        seed: ep.seed,
        coalesce: ep.coalesces_any(),
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
        url: Some(url.to_string()),
        connections: Some(connections),
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
        rate: None,
        arrival: None,
        stages: None,
        open: false,
        urls: None,
        order: None,
        cookies: false,
        scenario: None,
        throttle: None,
        slow_share: None,
        no_coalesce: false,
        seed: None,
    };
    let plan = BenchPlan::from_args(&args)?;
    let report = run(&plan)?;
    if report.result.succeeded == 0 {
        anyhow::bail!("no request to {url} succeeded; growth per request cannot be measured");
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(used: Duration) -> CpuTimes {
        CpuTimes { user: used / 4, sys: used - used / 4 }
    }

    #[test]
    fn a_busy_client_is_warned_about_only_in_a_run_long_enough_to_judge() {
        let (report, warning) = client_cpu(cpu(Duration::from_millis(950)), Duration::from_secs(1), 1, 1000);
        assert!((report.percent_of_available - 95.0).abs() < 1e-9);
        assert_eq!(report.us_per_request, Some(950.0));
        assert!(warning.expect("a warning").starts_with("the client used 95% of its 1 core(s)"));

        let (_, warning) = client_cpu(cpu(Duration::from_millis(850)), Duration::from_secs(1), 1, 1000);
        assert_eq!(warning, None, "85% is the server's pace");

        // Refused at once: a millisecond of start-up in a run of 0.1 ms is not a busy client.
        let (report, warning) = client_cpu(cpu(Duration::from_millis(1)), Duration::from_micros(100), 1, 0);
        assert!(report.percent_of_available > 100.0);
        assert_eq!(report.us_per_request, None);
        assert_eq!(warning, None);
    }
}
