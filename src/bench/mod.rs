//! The bench pipeline as a library: a `BenchSpec` (what is asked) becomes a `BenchPlan` (checked,
//! requests rendered); `run` drives the engine with its sinks and returns the `BenchReport`
//! every exporter reads. The command line, the tuner, the warm-up of a launched server and
//! `mem --url` all call it in code; none of them builds an argv.

pub mod access_log;
pub mod hdrlog;
pub mod remote;
pub mod spec;
pub mod workload;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

pub use spec::{BenchPlan, BenchSpec, Described, LoadedLog, Rate, UrlOrder};

use crate::aggregate::Summary;
use crate::aggregate::breakdown::BreakdownSink;
use crate::aggregate::intervals::IntervalTap;
use crate::aggregate::progress::ProgressBoard;
use crate::aggregate::result::{
    BenchReport, BenchResult, ClientCpu, Coalesced, Options, RateStats, SCHEMA_ID, TargetInfo,
};
use crate::engine::{self, Order, Pacing, Shared, Stop};
use crate::input::InputError;
use crate::sys::{self, CpuTimes};
use hdrlog::{HdrLogWriter, Timing};

/// Share of the available CPU above which the client, not the server, sets the pace.
const CLIENT_BOUND_SHARE: f64 = 0.90;
/// Shorter runs are not judged: the client's start-up (threads, connections) then weighs as
/// much as the load, and a run that failed at once divides nothing by nothing.
/// The warning of an `--h2` run without TLS against a server that answered in HTTP/1.x.
pub const H2C_REFUSED: &str = "the server did not speak HTTP/2: it answered the h2c preface (prior knowledge) in HTTP/1.x, so every request failed as malformed; it serves HTTP/1.1 here (drop --h2)";

const CLIENT_BOUND_MIN_RUN: Duration = Duration::from_millis(200);

/// How far a run has got: `run_watched` passes one every second.
pub struct Tick {
    pub elapsed: Duration,
    pub succeeded: u64,
    pub failed: u64,
    /// Responses per second over the last second.
    pub rate: f64,
    /// The run's bound: a request count or a duration.
    pub goal: Stop,
}

/// A finished run: its report, and whether the HdrHistogram log (when asked for) was written
/// whole. A log that could not be written does not lose the report.
pub struct Ran {
    pub report: BenchReport,
    pub hdr_log: anyhow::Result<()>,
}

/// Runs the plan and returns the report. Setting `interrupt` (Ctrl-C) ends the run early with
/// the figures so far.
pub fn run(plan: &BenchPlan, interrupt: &Arc<AtomicBool>) -> anyhow::Result<BenchReport> {
    Ok(run_watched(plan, interrupt, &mut |_| {})?.report)
}

/// `run`, telling `watch` how far it has got once a second (a progress line on a terminal).
pub fn run_watched(plan: &BenchPlan, interrupt: &Arc<AtomicBool>, watch: &mut dyn FnMut(&Tick)) -> anyhow::Result<Ran> {
    let ep = &plan.engine;
    // Each connection needs a descriptor; leave room for the epoll sets, logs and stdio.
    sys::ensure_fd_limit(ep.connections as u64 + 64).map_err(|e| InputError(e.to_string()))?;

    let shared = Arc::new(Shared::for_run(interrupt.clone(), ep.endpoint.templates.len()));

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
            .map_err(|e| InputError(format!("{e:#}")))?,
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

    let (rates, failures, refused_only) = follow(&done_rx, &board, watch, origin, ep.stop, &shared);
    let outcome = engine.join().map_err(|_| anyhow::anyhow!("the engine panicked"))??;

    let cpu = CpuTimes::now().since(cpu_before);

    let (summary, parts) = merge_sinks(outcome.sinks, ep.timeout);
    let mut log_result = Ok(());
    if let Some(w) = log_writer {
        log_result = w.finish();
    }
    let mut result = summary.to_result(outcome.elapsed, outcome.in_flight_at_end);
    if ep.is_open_loop() {
        result.scheduled = Some(outcome.scheduled);
        result.unsent = Some(outcome.unsent);
    }
    result.coalesced = outcome.batched.map(|b| Coalesced::new(b.responses, b.waited.as_secs_f64() * 1000.0));
    let breakdown = parts.map(|p| p.to_breakdown(&plan.layout, outcome.elapsed)).unwrap_or_default();

    let machine_cores = plan.placement.as_ref().map_or_else(sys::available_cores, |p| p.cores());
    let client_cores = plan.placement.as_ref().map_or_else(sys::available_cores, |p| p.client.len());
    let (client_cpu, client_bound) =
        client_cpu(cpu, outcome.elapsed, ep.threads.min(client_cores), machine_cores, result.succeeded);
    let beside_server = plan.placement.as_ref().and_then(|p| {
        let share = client_cpu.percent_of_machine? / 100.0;
        (outcome.elapsed >= CLIENT_BOUND_MIN_RUN).then(|| sys::cpus::shared_client_warning(p, share))?
    });
    let mut warnings: Vec<String> =
        client_bound.into_iter().chain(beside_server).chain(plan.describe.warning.clone()).collect();
    warnings.extend(load_warnings(&result, ep.connections, outcome.scheduled, outcome.unsent, outcome.answered_http1));
    // Given up (every connect refused) is not the user's Ctrl-C.
    let interrupted = outcome.interrupted && refused_only.is_none();
    if let Some(refused) = refused_only {
        warnings.push(format!(
            "{NOTHING_LISTENS} at {}: every connect was refused ({refused} in {:.1} s), so the run ended there",
            ep.endpoint.addr,
            outcome.elapsed.as_secs_f64()
        ));
    }
    if interrupted {
        warnings.push("interrupted: the figures cover the requests finished before Ctrl-C".into());
    }
    if let Err(e) = &log_result {
        warnings.push(format!("the HdrHistogram log is incomplete: {e:#}"));
    }
    let report = BenchReport {
        schema: SCHEMA_ID.into(),
        webtune_version: crate::VERSION.into(),
        started_at: humantime::format_rfc3339_millis(wall_origin).to_string(),
        target: TargetInfo {
            url: plan.url.clone(),
            method: plan.method.clone(),
            server: outcome.server.filter(|s| !s.is_empty()),
            document_length: shared.document_length(),
            tls_failure: outcome.tls_failure,
        },
        options: options(plan),
        interrupted,
        reply_rate: RateStats::from_samples(&rates).map(|r| RateStats { failed_per_second: failures, ..r }),
        client_cpu,
        result,
        warnings,
        breakdown,
        merged_runs: None,
        placement: plan.placement.clone(),
        thresholds: Vec::new(),
    };
    Ok(Ran { report, hdr_log: log_result })
}

/// One thread's sinks: the summary and the breakdown, the progress tap, the log tap.
type ThreadSinks<T> = ((Summary, Option<BreakdownSink>), T, Option<IntervalTap>);

/// The threads' sinks merged: the summary, the breakdown (with a layout), and each
/// thread's HdrHistogram log tap finished.
fn merge_sinks<T>(sinks: Vec<ThreadSinks<T>>, timeout: Duration) -> (Summary, Option<BreakdownSink>) {
    let mut summary = Summary::new(timeout);
    let mut parts: Option<BreakdownSink> = None;
    for ((s, p), _, log) in sinks {
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
    (summary, parts)
}

/// What the load itself warns of: requests that started late or were never sent (the open
/// loop outran the connections), and a server that answered HTTP/1.x where h2c frames were due.
fn load_warnings(
    result: &BenchResult,
    connections: usize,
    scheduled: u64,
    unsent: u64,
    answered_http1: bool,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(late) = &result.late {
        warnings.push(format!(
            "{} requests started late (mean {:.1} ms, max {:.1} ms): all {} connections were busy; their latency counts the wait",
            late.requests, late.mean_ms, late.max_ms, connections
        ));
    }
    if unsent > 0 {
        warnings.push(format!(
            "{} of {} scheduled requests were never sent: the rate outran what {} connections carried; they are in no latency figure",
            unsent, scheduled, connections
        ));
    }
    // Every failure malformed, and HTTP/1.x where frames were due: the server does not speak
    // h2c, which "malformed N" alone does not say.
    let only_malformed = result.errors.iter().all(|(class, n)| *n == 0 || class == "malformed");
    if answered_http1 && result.failed > 0 && only_malformed {
        warnings.push(H2C_REFUSED.into());
    }
    warnings
}

/// Samples the progress counters once a second until the engine is done: tells `watch` and
/// returns the reply rate and the failure rate of each second.
fn follow(
    done: &mpsc::Receiver<()>,
    board: &ProgressBoard,
    watch: &mut dyn FnMut(&Tick),
    origin: Instant,
    goal: Stop,
    shared: &Shared,
) -> (Vec<f64>, Vec<f64>, Option<u64>) {
    let (mut rates, mut failures) = (Vec::new(), Vec::new());
    let mut last = (Instant::now(), 0u64, 0u64);
    let mut refused_only = None;
    // Looked at often at first, for a run whose every connect is refused; then once a second.
    while let Err(mpsc::RecvTimeoutError::Timeout) = done.recv_timeout(REFUSED_LOOK) {
        let (ok, failed) = board.totals();
        if refused_only.is_none() && origin.elapsed() >= REFUSED_FOR && ok == 0 && failed > 0 {
            let refused = board.refused();
            if refused == failed {
                refused_only = Some(refused);
                shared.give_up();
            }
        }
        let now = Instant::now();
        let secs = (now - last.0).as_secs_f64();
        if secs < 1.0 {
            continue;
        }
        let rate = (ok - last.1) as f64 / secs;
        rates.push(rate);
        failures.push(failed.saturating_sub(last.2) as f64 / secs);
        last = (now, ok, failed);
        watch(&Tick { elapsed: origin.elapsed(), succeeded: ok, failed, rate, goal });
    }
    (rates, failures, refused_only)
}

/// The warning's start when nothing listens: the reason "no request succeeded" gives.
pub const NOTHING_LISTENS: &str = "connection refused: nothing listens";

/// How long a run whose every connect is refused goes on before it ends with the cause (wrk
/// and oha users see "connection refused" at once), and how often that is looked at. Long
/// enough for a few tries with the engine's pause after a refusal.
const REFUSED_FOR: Duration = Duration::from_millis(500);
const REFUSED_LOOK: Duration = Duration::from_millis(100);

/// The client's own CPU use over the run (of the `cores` its threads could use, and of the
/// `machine_cores` client and server may use together), and a warning when it was the
/// bottleneck.
fn client_cpu(
    cpu: CpuTimes,
    elapsed: Duration,
    cores: usize,
    machine_cores: usize,
    succeeded: u64,
) -> (ClientCpu, Option<String>) {
    let used = (cpu.user + cpu.sys).as_secs_f64();
    let share = used / (elapsed.as_secs_f64().max(1e-9) * cores as f64);
    let of_machine = used / (elapsed.as_secs_f64().max(1e-9) * machine_cores.max(1) as f64);
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
        percent_of_machine: Some(of_machine * 100.0),
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
            ("open", constant, Some(arrival.name().to_string()))
        }
        Pacing::Closed { .. } => ("closed", None, None),
    };
    let order = match (ep.endpoint.templates.len(), &ep.endpoint.order) {
        (1, _) => "single",
        (_, Order::Sequential) => "sequential",
        (_, Order::Random) => "random",
        (_, Order::Weighted(_)) => "weighted",
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
        http2_streams: ep.http2.map(|h| h.streams),
        access_log: plan.describe.access_log.clone(),
    }
}

/// Runs `requests` requests to `url` over `connections` connections, quietly: the warm-up of a
/// launched server (on the client's `cpus`), and the load while `mem --url` or `syscalls`
/// watch it. Fails when none succeeded.
pub fn drive(
    url: &str,
    connections: u64,
    requests: u64,
    keepalive: bool,
    cpus: Option<&sys::cpus::CpuSet>,
    interrupt: &Arc<AtomicBool>,
) -> anyhow::Result<BenchReport> {
    let connections = connections.clamp(1, requests.max(1));
    let spec = BenchSpec {
        insecure: true,
        no_keepalive: !keepalive,
        cpus: cpus.cloned(),
        ..BenchSpec::requests_to(url, connections, requests.max(connections))
    };
    let report = run(&spec.plan()?, interrupt)?;
    if report.result.succeeded == 0 {
        let why = report.target.tls_failure.as_deref().map(|w| format!(": {w}")).unwrap_or_default();
        anyhow::bail!("no request to {url} succeeded ({} failed){why}", report.result.failed);
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
        let (report, warning) = client_cpu(cpu(Duration::from_millis(950)), Duration::from_secs(1), 1, 2, 1000);
        assert!((report.percent_of_available - 95.0).abs() < 1e-9);
        assert_eq!(report.us_per_request, Some(950.0));
        assert!((report.percent_of_machine.unwrap() - 47.5).abs() < 1e-9, "one of two cores");
        assert!(warning.expect("a warning").starts_with("the client used 95% of its 1 core(s)"));

        let (_, warning) = client_cpu(cpu(Duration::from_millis(850)), Duration::from_secs(1), 1, 2, 1000);
        assert_eq!(warning, None, "85% is the server's pace");

        // Refused at once: a millisecond of start-up in a run of 0.1 ms is not a busy client.
        let (report, warning) = client_cpu(cpu(Duration::from_millis(1)), Duration::from_micros(100), 1, 2, 0);
        assert!(report.percent_of_available > 100.0);
        assert_eq!(report.us_per_request, None);
        assert_eq!(warning, None);
    }
}
