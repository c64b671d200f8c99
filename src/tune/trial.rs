//! A trial: launch the server with one configuration, warm it, load it R times while sampling
//! its memory, stop it; the result is a `Point`. Failures become points with their cause.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::point::{MemUse, Point, Sample, Status};
use crate::bench::{self, BenchPlan, BenchSpec, spec};
use crate::procmem::{self, Role, Selector};
use crate::server::Settings;

/// A server the tuner can start in a given configuration (an adapter from the target file).
pub trait Launcher {
    /// Starts the server with `settings`, ready to serve.
    fn launch(&mut self, settings: &Settings) -> anyhow::Result<Box<dyn Launched>>;
    /// The configuration in the server's own syntax (what the user pastes).
    fn render(&self, settings: &Settings) -> String;
}

/// A running server; dropping it stops it.
pub trait Launched: Sync {
    /// Base URL (scheme, host, port).
    fn base_url(&self) -> String;
    /// The master process (its descendants are the workers).
    fn master_pid(&self) -> i32;
    /// The server's own counters (mod_status, stub_status...), when it has them.
    fn counters(&self) -> Option<serde_json::Value> {
        None
    }
    /// Error-log lines saying the server ran out of workers.
    fn saturation(&self) -> Vec<String> {
        Vec::new()
    }
    /// The configuration as written for the server.
    fn config_text(&self) -> Option<String> {
        None
    }
}

/// The load of a trial: the bench run of each repeat, and what happens before it.
#[derive(Debug, Clone)]
pub struct Load {
    /// `webtune bench`'s options; `spec.path` is requested on the launched server.
    pub spec: BenchSpec,
    /// Warm every worker before measuring (off to measure a cold start or a burst).
    pub warm: bool,
    /// Leave the server idle this long before the load (spare workers retire meanwhile).
    pub idle_before: Duration,
}

impl Load {
    /// The load of `spec`, on a warmed server, at once.
    pub fn of(spec: BenchSpec) -> Load {
        Load { spec, warm: true, idle_before: Duration::ZERO }
    }

    /// Connections (closed loop: clients) each repeat opens.
    pub fn connections(&self) -> u64 {
        self.spec.connections.unwrap_or(if self.spec.is_open_loop() {
            spec::DEFAULT_OPEN_CONNECTIONS
        } else {
            spec::DEFAULT_CONNECTIONS
        })
    }

    /// A copy with `n` connections.
    pub fn with_connections(&self, n: u64) -> Load {
        Load { spec: BenchSpec { connections: Some(n), ..self.spec.clone() }, ..self.clone() }
    }

    /// How long one repeat's load lasts (a run bounded by requests: the default duration, as
    /// an estimate).
    pub fn duration(&self) -> Duration {
        self.spec.run_length().unwrap_or(spec::DEFAULT_DURATION)
    }

    /// The bench plan against the server at `base`.
    pub fn plan(&self, base: &str) -> anyhow::Result<BenchPlan> {
        Ok(self.spec.against(base).plan()?)
    }
}

/// How each trial runs.
#[derive(Debug, Clone)]
pub struct TrialOptions {
    pub repeats: usize,
    /// Requests per worker before measuring, so every worker has compiled and cached.
    pub warm_requests: u64,
    /// Repeats spreading more than this share take as many again.
    pub noisy_spread: f64,
    /// Set (by Ctrl-C, or the caller) to end the trial under way.
    pub interrupt: Arc<AtomicBool>,
}

/// Runs one trial. Never fails: a server that does not start, crashes or answers nothing
/// gives a failed point with the cause.
pub fn run(
    launcher: &mut dyn Launcher,
    step: &str,
    settings: &Settings,
    load: &Load,
    opts: &TrialOptions,
    budget_kib: Option<u64>,
) -> Point {
    let started = Instant::now();
    let fail = |cause: String| Point::failed(step, settings, cause, started.elapsed().as_secs_f64());
    let server = match launcher.launch(settings) {
        Ok(s) => s,
        Err(e) => return fail(format!("{e:#}")),
    };
    let base = server.base_url();
    let plan = match load.plan(&base).and_then(|p| aimed_at(&base, p)) {
        Ok(p) => p,
        Err(e) => return fail(format!("{e:#}")),
    };
    let workers = procmem::select(&Selector::Pid(server.master_pid())).map_or(1, |p| p.len().max(2) - 1);
    let warm = if load.warm { (opts.warm_requests * workers as u64).max(load.connections()) } else { 0 };
    if warm > 0 {
        // Every worker serves requests (compiles, caches, touches its memory) before any is measured.
        let url = load.spec.against(&base).url.unwrap_or_default();
        if let Err(e) = bench::drive(&url, load.connections(), warm, true, &opts.interrupt) {
            return fail(format!("warm-up: warming {url}: {e:#}"));
        }
    }
    std::thread::sleep(load.idle_before);
    let workers_at_start = procmem::select(&Selector::Pid(server.master_pid())).ok().map(|p| p.len().saturating_sub(1));
    let mut samples = Vec::new();
    let mut noisy = false;
    let mut wanted = opts.repeats.max(1);
    while samples.len() < wanted {
        if opts.interrupt.load(Ordering::Relaxed) {
            return fail("interrupted".into());
        }
        match measure_once(&*server, &plan, load.duration(), budget_kib, &opts.interrupt) {
            Ok(s) if s.succeeded == 0 => return fail(format!("no request succeeded ({} failed)", s.failed)),
            Ok(s) => samples.push(s),
            Err(e) => return fail(format!("{e:#}")),
        }
        if samples.len() == wanted && wanted == opts.repeats.max(1) && wanted > 1 {
            let rps: Vec<f64> = samples.iter().map(|s| s.rps).collect();
            if crate::stats::spread(&rps) > opts.noisy_spread * crate::stats::median(&rps) {
                noisy = true;
                wanted *= 2;
            }
        }
    }
    if procmem::select(&Selector::Pid(server.master_pid())).is_err() {
        return fail("the server died during the run".into());
    }
    let saturation = server.saturation();
    let config_text = server.config_text();
    drop(server);
    Point {
        step: step.into(),
        settings: settings.clone(),
        status: Status::Ok,
        samples,
        saturation,
        config_text,
        seconds: started.elapsed().as_secs_f64(),
        noisy,
        warmed: warm,
        workers_at_start,
    }
}

/// One bench run; memory and counters are read half-way through, under load.
fn measure_once(
    server: &dyn Launched,
    plan: &BenchPlan,
    duration: Duration,
    budget: Option<u64>,
    interrupt: &Arc<AtomicBool>,
) -> anyhow::Result<Sample> {
    let master = server.master_pid();
    let (report, (memory, counters)) = std::thread::scope(|s| {
        let probe = s.spawn(move || {
            std::thread::sleep(duration / 2);
            let pids = procmem::select(&Selector::Pid(master)).unwrap_or_default();
            (mem_use(&procmem::sample(&pids), budget), server.counters())
        });
        let report = bench::run(plan, interrupt);
        (report, probe.join().unwrap_or((None, None)))
    });
    let report = report?;
    let lat = &report.result.latency_ms;
    Ok(Sample {
        rps: report.result.requests_per_s,
        p50_ms: lat.total.as_ref().map_or(0.0, |l| l.p50),
        p99_ms: lat.total.as_ref().map_or(0.0, |l| l.p99),
        first_byte_p99_ms: lat.first_byte.as_ref().map_or(0.0, |l| l.p99),
        succeeded: report.result.succeeded,
        failed: report.result.failed,
        memory,
        counters,
        histogram: report.result.histograms.as_ref().and_then(|h| h.total.clone()),
    })
}

/// The plan, when every request it sends goes to the server at `base` (a URL list or a
/// scenario could name another server, even one off this machine).
fn aimed_at(base: &str, plan: BenchPlan) -> anyhow::Result<BenchPlan> {
    let server = url::Url::parse(base)?;
    let sent_to = plan.engine.endpoint.addr;
    let same_port = server.port_or_known_default() == Some(sent_to.port());
    let same_host = match server.host() {
        Some(url::Host::Ipv4(ip)) => sent_to.ip() == std::net::IpAddr::V4(ip),
        Some(url::Host::Ipv6(ip)) => sent_to.ip() == std::net::IpAddr::V6(ip),
        _ => sent_to.ip().is_loopback(),
    };
    if !(same_port && same_host) {
        anyhow::bail!("[load] sends its requests to {sent_to}, not to the launched server at {base}");
    }
    Ok(plan)
}

/// The memory figures the tuner uses, from one sample of the server's processes.
pub fn mem_use(procs: &[procmem::ProcMem], budget_kib: Option<u64>) -> Option<MemUse> {
    let workers: Vec<_> = procs.iter().filter(|p| p.role == Role::Worker).collect();
    let parent = procs.iter().find(|p| p.role == Role::Parent)?;
    let n = workers.len().max(1) as u64;
    Some(MemUse {
        workers: workers.len(),
        worker_uss_max_kib: workers.iter().map(|w| w.uss).max().unwrap_or(0),
        worker_uss_mean_kib: workers.iter().map(|w| w.uss).sum::<u64>() / n,
        worker_shared_mean_kib: workers.iter().map(|w| w.shared).sum::<u64>() / n,
        parent_uss_kib: parent.uss,
        parent_shared_kib: parent.shared,
        pss_total_kib: procs.iter().map(|p| p.mem.pss).sum(),
        workers_fit: budget_kib.and_then(|b| procmem::capacity::capacity(procs, b)).map(|c| c.workers_fit),
    })
}
