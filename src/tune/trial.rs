//! A trial: launch the server with one configuration, warm it, load it R times while sampling
//! its memory, stop it; the result is a `Point`. Failures become points with their cause.
//! The steps stand apart (`Trial::start`, `windows`, `finish`) so that a comparison's rounds
//! can measure their windows on a server kept running (`super::kept`).

use std::mem::take;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::point::{ContainerUse, MemUse, Point, Sample, Status, max_requests_scale};
use crate::bench::remote::{self, Remote};
use crate::bench::{self, BenchPlan, BenchSpec, spec};
use crate::procmem::cpu::CpuWatch;
use crate::procmem::{self, Role, Selector};
use crate::server::Settings;
use crate::sys::cgroup::{Limits, Usage};
use crate::sys::cpus::{self, Placement};

/// A server the tuner can start in a given configuration (an adapter from the target file).
pub trait Launcher {
    /// Starts the server with `settings`, ready to serve.
    fn launch(&mut self, settings: &Settings) -> anyhow::Result<Box<dyn Launched>>;
    /// The configuration in the server's own syntax (what the user pastes).
    fn render(&self, settings: &Settings) -> String;
    /// The unified diffs of the user's own configuration files for `settings`, by tree.
    fn diffs(&self, _settings: &Settings) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
        Ok(Default::default())
    }
    /// Whether a second server can run beside one already launched (not on a fixed port).
    fn side_by_side(&self) -> bool {
        false
    }
}

/// A running server; dropping it stops it.
pub trait Launched: Sync {
    /// Base URL (scheme, host, port).
    fn base_url(&self) -> String;
    /// The master process (its descendants are the workers).
    fn master_pid(&self) -> i32;
    /// A front proxy's master, when one stands before the server: its processes' memory and
    /// CPU are the server's too.
    fn front_pid(&self) -> Option<i32> {
        None
    }
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
    /// Whether its `max_requests` counts the client's connections, not its requests.
    fn recycles_per_connection(&self) -> bool {
        false
    }
    /// Why the run must stop when the server now takes traffic beyond loopback (asked after
    /// each window: an app or a daemon may open a port late).
    fn listening_outside(&self) -> Option<String> {
        None
    }
    /// The container the server runs in (its limits) and the kernel's accounting of it now.
    fn container(&self) -> Option<(Limits, Usage)> {
        None
    }
    /// Why the container its settings asked for could not be made (it runs on the host's).
    fn container_refused(&self) -> Option<String> {
        None
    }
}

/// The load of a trial: the bench run of each repeat, and what happens before it.
#[derive(Debug, Clone, PartialEq)]
pub struct Load {
    /// `webtune bench`'s options; `spec.path` is requested on the launched server.
    pub spec: BenchSpec,
    /// Warm every worker before measuring (off to measure a cold start or a burst).
    pub warm: bool,
    /// Leave the server idle this long before the load (spare workers retire meanwhile).
    pub idle_before: Duration,
    /// End a window at its first memory sample over the budget: for a verdict, one such
    /// sample settles a configuration. Off where the memory figures themselves are the result
    /// (the workers strategy's fit), which must come from whole windows.
    pub stop_over_budget: bool,
    /// The load is the user's (or stands for it): a verdict weighs the latency tail it gives.
    /// Off where the strategy overloads the pool on purpose (the workers strategy's clients,
    /// twice its largest pool, wait in the accept queue of any smaller one).
    pub tail_counts: bool,
}

impl Load {
    /// A warmed server under a time-bound load is measured in its steady state; a burst after
    /// idle (spares) or a cold start is measured as it is, however unsteady.
    fn steady_state(&self) -> bool {
        self.warm && self.idle_before.is_zero() && self.spec.requests.is_none() && self.spec.stages.is_none()
    }

    /// The load of `spec`, on a warmed server, at once.
    pub fn of(spec: BenchSpec) -> Load {
        Load { spec, warm: true, idle_before: Duration::ZERO, stop_over_budget: false, tail_counts: true }
    }

    /// Connections (closed loop: clients) each repeat opens.
    pub fn connections(&self) -> u64 {
        self.spec.connections.unwrap_or_else(|| self.spec.default_connections())
    }

    /// A copy whose windows end at their first memory sample over the budget.
    pub fn settling_over_budget(&self) -> Load {
        Load { stop_over_budget: true, ..self.clone() }
    }

    /// A copy whose windows last `window`.
    pub fn windowed(&self, window: Duration) -> Load {
        Load { spec: BenchSpec { duration: Some(window), ..self.spec.clone() }, ..self.clone() }
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

    /// The load a trial of `settings` sends: HTTP/2 when their `http2` knob is on, HTTP/1.1
    /// when it is off (so a tune compares the protocols under the same load), else as the
    /// target file's `[load]` says.
    pub fn for_settings(&self, settings: &Settings) -> Load {
        let Some(value) = settings.get("http2") else { return self.clone() };
        let http2 = value == "on";
        let streams = if http2 { self.spec.streams } else { None };
        Load { spec: BenchSpec { http2, streams, ..self.spec.clone() }, ..self.clone() }
    }

    /// The bench plan against the server at `base`.
    pub fn plan(&self, base: &str) -> anyhow::Result<BenchPlan> {
        Ok(self.spec.against(base).plan()?)
    }
}

/// How a window's load is sent: all from this machine, or split with the `[load] remote` hosts.
enum Sender {
    Here(Box<BenchPlan>),
    Split(Remote, Box<BenchSpec>),
}

impl Sender {
    /// The load against the server at `base`, checked to go to it alone.
    fn new(load: &Load, base: &str) -> anyhow::Result<Sender> {
        let spec = load.spec.against(base);
        let plan = aimed_at(base, spec.plan()?)?;
        Ok(match Remote::of(&spec)? {
            Some(remote) => Sender::Split(remote, Box::new(spec)),
            None => Sender::Here(Box::new(plan)),
        })
    }

    fn run(&self, interrupt: &Arc<AtomicBool>) -> anyhow::Result<crate::aggregate::BenchReport> {
        match self {
            Sender::Here(plan) => bench::run(plan, interrupt),
            // Every error of the split load is the load's (a host lost, late or not ready),
            // never the configuration's.
            Sender::Split(remote, spec) => remote.run(spec, interrupt).map_err(|e| e.context(LOAD_LOST)),
        }
    }

    /// Where the load comes from, as a point records it.
    fn sources(&self) -> Vec<String> {
        match self {
            Sender::Here(_) => vec![remote::LOCAL.into()],
            Sender::Split(remote, _) => remote.sources(),
        }
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
    /// A window in which others took more than this share of the machine's CPU (0-1) is
    /// measured again (up to `MAX_REMEASURED` times per point), unless they took it steadily.
    pub disturbed: f64,
    /// The share of the machine's CPU others have held steadily, when they have
    /// (`SteadyOthers`): a window at that level (`at_the_level`) is not measured again (a
    /// point's first is taken after a second of that load).
    pub steady_others: Option<f64>,
    /// The memory budget each window's pool is counted against (and stopped over), KiB.
    pub budget_kib: Option<u64>,
    /// Set (by Ctrl-C, or the caller) to end the trial under way.
    pub interrupt: Arc<AtomicBool>,
    /// Where the server (confined by its launcher) and the client run: the load's engine
    /// threads are confined to the client's CPUs, and each point records both and the
    /// client's share. None: wherever this process may run, not recorded.
    pub placement: Option<Placement>,
    /// In a container: the largest share of its CPU quota periods a window may be throttled
    /// in before the configuration misses the constraint (`[container] throttled`).
    pub max_throttled: Option<f64>,
}

/// Runs one trial: a launch, its windows, a stop. Never fails: a server that does not start,
/// crashes or answers nothing gives a failed point with the cause.
pub fn run(launcher: &mut dyn Launcher, step: &str, settings: &Settings, load: &Load, opts: &TrialOptions) -> Point {
    match Trial::start(launcher, step, settings, load, opts) {
        // Dropped at the end of the arm: the server stops.
        Ok(mut trial) => trial.point(step, load, opts),
        Err(failed) => *failed,
    }
}

/// A launched and warmed server between its windows; dropping it stops the server.
pub struct Trial {
    server: Box<dyn Launched>,
    settings: Settings,
    /// The launch and warm-up no point has carried yet: when the launch began and the requests
    /// the warm-up sent. The first point measured on the server pays them, later ones only
    /// their own windows.
    unpaid: Option<(Instant, u64)>,
    /// Workers alive when the first load began (after any idle spell).
    workers_at_start: Option<usize>,
    /// The window the last windows settled on (see `Settled`).
    settled: Option<Settled>,
    /// Saturation lines of the error logs already reported: the logs grow with the server's
    /// life, and each point tells only what its own windows wrote.
    saturation_seen: usize,
    /// The largest footprint (the sum of PSS, a front's included) any window saw, KiB: what
    /// one more server like it would cost.
    largest_pss_kib: u64,
}

/// The window asked for, and what the trial made of it: lengthened to hold several recycles,
/// doubled once while unsteady. A later call for the same window on the same server starts
/// from there rather than finding it out again.
#[derive(Debug, Clone, Copy)]
struct Settled {
    asked: Duration,
    window: Duration,
    lengthened: bool,
    steadied: bool,
}

impl Settled {
    /// What a kept server settled on for this load (`asked` seconds a window), if it did;
    /// else a fresh start.
    fn for_load(settled: Option<Settled>, asked: Duration) -> Settled {
        match settled {
            Some(s) if s.asked == asked => s,
            _ => Settled { asked, window: asked, lengthened: false, steadied: false },
        }
    }
}

/// What the windows of one point measured, before `Trial::finish` makes it a point.
pub struct Windows {
    samples: Vec<Sample>,
    notes: Vec<String>,
    noisy: bool,
    remeasured: u32,
    load_from: Vec<String>,
    workers_at_start: Option<usize>,
    /// When this point began (the launch, for the first point on a server), the warm-up
    /// requests it carries, and whether it paid a launch.
    started: Instant,
    warmed: u64,
    launched: bool,
}

/// The load a trial of `settings` sends: their protocol, from the client's CPUs.
fn trial_load(load: &Load, settings: &Settings, opts: &TrialOptions) -> Load {
    let load = load.for_settings(settings);
    let client = opts.placement.as_ref().map(|p| p.client.clone()).or_else(|| load.spec.cpus.clone());
    Load { spec: BenchSpec { cpus: client, ..load.spec.clone() }, ..load }
}

/// Workers alive under the server's master now; None when it cannot be read.
fn workers_alive(server: &dyn Launched) -> Option<usize> {
    procmem::select(&Selector::Pid(server.master_pid())).ok().map(|p| p.len().saturating_sub(1))
}

impl Trial {
    /// Launches `settings`, warms every worker (unless the load measures a cold start or a
    /// burst) and leaves the server idle for the load's `idle_before`. A failed point for
    /// `step` when it could not start or warm.
    pub fn start(
        launcher: &mut dyn Launcher,
        step: &str,
        settings: &Settings,
        load: &Load,
        opts: &TrialOptions,
    ) -> Result<Trial, Box<Point>> {
        let started = Instant::now();
        let load = &trial_load(load, settings, opts);
        let fail = |cause: String| Box::new(Point::failed(step, settings, cause, started.elapsed().as_secs_f64()));
        let server = launcher.launch(settings).map_err(|e| fail(format!("{e:#}")))?;
        let base = server.base_url();
        // The load goes to this server alone: checked before a request is sent.
        Sender::new(load, &base).map_err(|e| fail(format!("{e:#}")))?;
        let workers = procmem::select(&Selector::Pid(server.master_pid())).map_or(1, |p| p.len().max(2) - 1);
        let warm = if load.warm { (opts.warm_requests * workers as u64).max(load.connections()) } else { 0 };
        if warm > 0 {
            // Every worker serves requests (compiles, caches, touches its memory) before any is measured.
            let url = load.spec.against(&base).url.unwrap_or_default();
            let client = load.spec.cpus.as_ref();
            if let Err(e) = bench::drive(&url, load.connections(), warm, true, client, &opts.interrupt) {
                return Err(fail(format!("warm-up: warming {url}: {e:#}")));
            }
        }
        std::thread::sleep(load.idle_before);
        let workers_at_start = workers_alive(&*server);
        Ok(Trial {
            server,
            settings: settings.clone(),
            unpaid: Some((started, warm)),
            workers_at_start,
            settled: None,
            saturation_seen: 0,
            largest_pss_kib: 0,
        })
    }

    /// Before a window on a server kept from an earlier one: a request on each connection of
    /// the load, answered in full. A closed-loop load leaves requests queued in the server
    /// (accepted, or in its listen backlog) when its window ends; they queue ahead of these,
    /// so once these are answered the server is drained. Without it, a window measured right
    /// after the same server's last (a round's order reversed) read 35 req/s instead of 94
    /// on one gunicorn worker behind 64 connections.
    pub fn settle(&self, load: &Load, opts: &TrialOptions) -> anyhow::Result<()> {
        let load = &trial_load(load, &self.settings, opts);
        let url = load.spec.against(&self.server.base_url()).url.unwrap_or_default();
        let n = load.connections();
        bench::drive(&url, n, n, true, load.spec.cpus.as_ref(), &opts.interrupt).map(|_| ())
    }

    /// The point of `opts.repeats` windows of `load` on the running server (which keeps running).
    pub fn point(&mut self, step: &str, load: &Load, opts: &TrialOptions) -> Point {
        match self.windows(step, load, opts) {
            Ok(w) => self.finish(step, w, opts),
            Err(failed) => *failed,
        }
    }

    /// The largest footprint of the whole server any window saw, KiB (0 before any).
    pub fn largest_pss_kib(&self) -> u64 {
        self.largest_pss_kib
    }

    /// Measures `opts.repeats` windows of `load`: a disturbed window is measured again, a
    /// window too short for recycling workers is lengthened, an unsteady one doubled once,
    /// noisy repeats taken again, and a window over the budget ends the point. A failed point
    /// when the server stopped answering or the run was interrupted.
    pub fn windows(&mut self, step: &str, load: &Load, opts: &TrialOptions) -> Result<Windows, Box<Point>> {
        let launched = self.unpaid.is_some();
        let (started, warmed) = self.unpaid.take().unwrap_or((Instant::now(), 0));
        let settings = &self.settings;
        let failed = |cause: String| {
            let p = Point::failed(step, settings, cause, started.elapsed().as_secs_f64());
            Box::new(Point { launches: usize::from(launched), ..p })
        };
        let load = &trial_load(load, settings, opts);
        let base = self.server.base_url();
        let cores = opts.placement.as_ref().map_or_else(crate::sys::available_cores, Placement::cores);
        // A kept server's later point starts when its own load does.
        let workers_at_start = if launched { self.workers_at_start } else { workers_alive(&*self.server) };
        let pool = super::objective::pool(settings, workers_at_start);
        let recycling = max_requests(settings).is_some();
        let steady_state = load.steady_state();
        let asked = load.duration();
        let Settled { mut window, mut lengthened, mut steadied, .. } = Settled::for_load(self.settled, asked);
        let mut plan = Sender::new(&load.windowed(window), &base).map_err(|e| failed(format!("{e:#}")))?;
        let mut samples = Vec::new();
        let mut notes = Vec::new();
        let mut noisy = false;
        let mut remeasured = 0;
        let mut disturbed_memory = None;
        // Beside a steady load the first second after idle is no steady state: measured, not kept.
        let mut settling = opts.steady_others.is_some() && steady_state;
        let mut wanted = opts.repeats.max(1);
        while samples.len() < wanted {
            if opts.interrupt.load(Ordering::Relaxed) {
                return Err(failed("interrupted".into()));
            }
            let measuring = WindowPlan {
                sender: &plan,
                duration: window,
                budget: opts.budget_kib,
                stop_over: load.stop_over_budget,
                pool,
                recycling,
                cores,
                interrupt: &opts.interrupt,
            };
            let mut sample = measure_window(&*self.server, &measuring, &mut self.largest_pss_kib).map_err(failed)?;
            let (container_notes, killed) = container_notes(&mut sample.sample, opts.max_throttled);
            notes.extend(container_notes.into_iter().chain(sample.over_budget.map(over_budget_note)));
            // A window measured again comes later in the server's life: a leaking pool has grown
            // meanwhile. Its memory is the one read in the first attempt, at the same moment of the
            // server's life as every other configuration's (others' CPU barely moves memory).
            if let Some(m) = disturbed_memory.take() {
                sample.sample.memory = m;
            }
            // Killed by the OOM killer, or seen over the budget once: the pool can be there again,
            // no longer window, repeat or re-measurement can admit it; the trial ends with what
            // settles it.
            if killed || sample.over_budget.is_some() {
                samples.push(sample.sample);
                break;
            }
            // A window others disturbed measured the machine, not the configuration. (A burst
            // after idle cannot be taken again on the same server: it is kept, with a note.)
            if let Some(others) = sample.sample.interference.filter(|&o| o > opts.disturbed) {
                let as_steady = opts.steady_others.is_some_and(|level| at_the_level(others, level, opts.disturbed));
                let again = if as_steady { take(&mut settling) } else { remeasured < MAX_REMEASURED && steady_state };
                if again {
                    remeasured += u32::from(!as_steady);
                    disturbed_memory = Some(sample.sample.memory);
                    continue;
                }
                notes.push(disturbed_note(others, remeasured + 1, as_steady));
            }
            // Workers that recycle: a window must hold several recycles of each, or each window
            // catches a different phase of the pool's replacement.
            if !lengthened && steady_state {
                lengthened = true;
                let workers = sample.sample.memory.as_ref().map_or(0, |m| m.workers).max(workers_at_start.unwrap_or(0));
                let per_connection = self.server.recycles_per_connection();
                if let Some(longer) =
                    recycle_window(settings, &sample.sample, per_connection, workers, window, &mut notes)
                {
                    window = longer;
                    plan = Sender::new(&load.windowed(window), &base).map_err(|e| failed(format!("{e:#}")))?;
                    continue;
                }
            }
            if let Some(t) = sample.trend {
                // Not yet steady (caches filling, a pool still growing): once, a window twice as long.
                if !steadied && steady_state && window * 2 <= MAX_WINDOW {
                    steadied = true;
                    window *= 2;
                    notes.push(format!("{t}; windows doubled to {:.1} s", window.as_secs_f64()));
                    plan = Sender::new(&load.windowed(window), &base).map_err(|e| failed(format!("{e:#}")))?;
                    continue;
                }
                notes.push(t);
            }
            samples.push(sample.sample);
            if samples.len() == wanted
                && wanted == opts.repeats.max(1)
                && wanted > 1
                && spread_over(&samples, opts.noisy_spread)
            {
                noisy = true;
                wanted *= 2;
            }
        }
        self.settled = Some(Settled { asked, window, lengthened, steadied });
        Ok(Windows {
            samples,
            notes,
            noisy,
            remeasured,
            load_from: plan.sources(),
            workers_at_start,
            started,
            warmed,
            launched,
        })
    }

    /// The point of `w`: the server must still be alive; the saturation its logs wrote
    /// meanwhile and the configuration it read are the evidence.
    pub fn finish(&mut self, step: &str, w: Windows, opts: &TrialOptions) -> Point {
        let Windows { samples, mut notes, noisy, remeasured, load_from, workers_at_start, started, warmed, launched } =
            w;
        let seconds = || started.elapsed().as_secs_f64();
        if procmem::select(&Selector::Pid(self.server.master_pid())).is_err() {
            let cause = match oom_killed(&*self.server) {
                Some(killed) => format!("the server died during the run: {killed}"),
                None => "the server died during the run".into(),
            };
            let failed = Point::failed(step, &self.settings, cause, seconds());
            return Point { launches: usize::from(launched), ..failed };
        }
        let all = self.server.saturation();
        let saturation = all.get(self.saturation_seen..).unwrap_or_default().to_vec();
        self.saturation_seen = all.len();
        let client_share = samples.iter().map(|s| s.client_share).fold(None, super::point::max_share);
        if let (Some(p), Some(share)) = (&opts.placement, client_share) {
            notes.extend(cpus::shared_client_warning(p, share));
        }
        notes.extend(self.server.container_refused());
        notes.dedup();
        Point {
            load_from,
            step: step.into(),
            settings: self.settings.clone(),
            status: Status::Ok,
            interference: samples.iter().filter_map(|s| s.interference).fold(0.0, f64::max),
            samples,
            saturation,
            config_text: self.server.config_text(),
            seconds: seconds(),
            noisy,
            warmed,
            workers_at_start,
            remeasured,
            notes,
            placement: opts.placement.clone(),
            client_share,
            launches: usize::from(launched),
            recycles_per_connection: self.server.recycles_per_connection(),
        }
    }
}

/// How the cause of a trial whose load could not be sent (from other hosts) starts: the
/// configuration did nothing wrong, and every later trial would fail alike, so the tuner stops.
pub const LOAD_LOST: &str = "the load could not be sent";

/// Recycles of each worker a window must hold when workers are replaced every
/// `max_requests` requests.
const MIN_RECYCLES: f64 = 3.0;
/// The longest window a trial lengthens itself to.
const MAX_WINDOW: Duration = Duration::from_secs(60);
/// Windows measured again per point because others disturbed them.
const MAX_REMEASURED: u32 = 2;

/// The share of the machine's CPU others hold steadily, as the points measured so far saw it.
/// A point whose every try was disturbed, after all its re-measurements, met a load, not a
/// burst to wait out: beside a CPU hog each 1 s window took 3.3 s so, and read the same (grid
/// (f) in bench/verdicts.py). From then on a window is disturbed only when others' share moves
/// from that level by more than half the disturbance threshold: windows at the level are measured
/// under the same load as the others and kept with their note, a point's first after one
/// second of that load (`Trial::windows`: a server back from idle has a head start on a
/// CPU-bound neighbour, and beside the hog 1 php-fpm worker read 7-12% more in a first window
/// than the grid in a third); one where the neighbour took a quarter of the CPU, not half,
/// read 50% more and is measured again. The first undisturbed window ends the spell.
#[derive(Debug, Default)]
pub struct SteadyOthers {
    level: Option<f64>,
}

impl SteadyOthers {
    /// Others' steady share of the CPU, for the next point's `TrialOptions::steady_others`.
    pub fn level(&self) -> Option<f64> {
        self.level
    }

    /// Learns from a point measured with `opts`: steady once a point's every try was disturbed
    /// after all its re-measurements, at the mean of its windows' shares; quiet again once any
    /// window was undisturbed.
    pub fn saw(&mut self, p: &Point, opts: &TrialOptions) {
        let shares: Vec<f64> = p.samples.iter().filter_map(|s| s.interference).collect();
        if shares.is_empty() {
            return;
        }
        let all_disturbed = shares.iter().all(|&o| o > opts.disturbed);
        self.level = (all_disturbed && (self.level.is_some() || p.remeasured >= MAX_REMEASURED))
            .then(|| crate::stats::mean(&shares));
    }
}

/// Requests per worker before it is replaced, when the settings recycle workers.
fn max_requests(settings: &Settings) -> Option<f64> {
    settings.get("max_requests")?.parse().ok().filter(|&m: &f64| m > 0.0)
}

/// The window that holds `MIN_RECYCLES` recycles of each of `workers` at the rate `first`
/// measured, when `window` holds fewer; None when it is long enough, when workers never recycle,
/// or when they live longer than the longest window: no window can then hold a recycle, and a
/// longer one would only cost time (recycling that rarely costs a fork per life, too little to
/// read; the recycle strategy reads the pool's growth per request instead).
/// `per_connection`: the server counts connections, each carrying the requests `first` read.
fn recycle_window(
    settings: &Settings,
    first: &Sample,
    per_connection: bool,
    workers: usize,
    window: Duration,
    notes: &mut Vec<String>,
) -> Option<Duration> {
    let every = max_requests(settings)?;
    let workers = workers.max(1) as f64;
    let per_worker = first.rps / workers;
    if per_worker <= 0.0 {
        return None;
    }
    let scale = max_requests_scale(per_connection, std::slice::from_ref(first)).unwrap_or(1.0);
    let life = every * scale;
    let counted = if per_connection {
        format!("max_requests {every:.0} connections, about {life:.0} requests at {scale:.1} a connection")
    } else {
        format!("max_requests {every:.0}")
    };
    let lifetime = life / per_worker;
    if lifetime > MAX_WINDOW.as_secs_f64() {
        notes.push(format!(
            "each worker lives about {lifetime:.0} s ({counted} at {per_worker:.0} req/s each), longer than the longest window ({:.0} s): windows kept at {:.1} s, between recycles",
            MAX_WINDOW.as_secs_f64(),
            window.as_secs_f64()
        ));
        return None;
    }
    let needed = Duration::from_secs_f64(MIN_RECYCLES * lifetime);
    if needed <= window {
        return None;
    }
    let longer = needed.mul_f64(1.1).min(MAX_WINDOW);
    let covers = longer.as_secs_f64() / lifetime;
    notes.push(if longer >= needed {
        format!(
            "windows of {:.1} s, to hold {MIN_RECYCLES:.0} recycles of each of {workers:.0} workers ({counted} at {per_worker:.0} req/s each)",
            longer.as_secs_f64()
        )
    } else {
        format!(
            "windows of {:.0} s (the longest) hold only {covers:.1} recycles of each worker ({counted} at {per_worker:.0} req/s each)",
            longer.as_secs_f64()
        )
    });
    Some(longer)
}

/// One measured window: the sample, and a note when its throughput drifted within it.
struct Window {
    sample: Sample,
    trend: Option<String>,
    /// The window was stopped this many seconds in: a memory sample showed its workers over
    /// the budget.
    over_budget: Option<f64>,
}

/// Memory samples taken during each window: about one a second, at least 3 and at most 10,
/// each at a random moment of its share of the window. A pool whose workers recycle together
/// swings between young and grown workers; samples at fixed moments would read the same
/// phase of that swing in every window (and every round), and a recycling pool would look
/// cheaper, or dearer, than it is.
///
/// When workers recycle (`recycling`), about five a second, at least 10 and at most 30: a
/// worker that grows through its life is at its costliest only near its end, and each
/// sample reads one phase. If that is a quarter of the cycle, 3 samples all miss it 42% of
/// the time, 10 samples 5.6%, 20 samples 0.3%; the budget must hold the costliest phase
/// (the seeds' rule), and the lab's 3 workers recycled every 20 requests read 9-10 MiB or
/// 17.5 MiB a worker depending on the phase caught.
fn memory_sample_times(window: Duration, recycling: bool) -> Vec<Duration> {
    let secs = window.as_secs_f64();
    let n = if recycling { ((secs * 5.0).round() as u32).clamp(10, 30) } else { (secs.round() as u32).clamp(3, 10) };
    // Kept off the window's first and last tenth: the load is still starting, or stopping.
    let (lead, span) = (window.mul_f64(0.1), window.mul_f64(0.8));
    let mut rng = fastrand::Rng::new();
    (0..n).map(|i| lead + span.mul_f64((i as f64 + rng.f64()) / n as f64)).collect()
}

/// How one window is measured.
#[derive(Clone, Copy)]
struct WindowPlan<'a> {
    sender: &'a Sender,
    duration: Duration,
    /// The memory budget, KiB.
    budget: Option<u64>,
    /// End the window at the first memory sample that shows the workers (a pool of at least
    /// `pool`) over the budget.
    stop_over: bool,
    pool: usize,
    /// Workers recycle: memory is sampled more often (see `memory_sample_times`).
    recycling: bool,
    /// The cores others' CPU share is measured against.
    cores: usize,
    interrupt: &'a Arc<AtomicBool>,
}

/// Whether the samples' throughputs spread more than `share` of their median: noisy repeats.
fn spread_over(samples: &[Sample], share: f64) -> bool {
    let rps: Vec<f64> = samples.iter().map(|s| s.rps).collect();
    crate::stats::spread(&rps) > share * crate::stats::median(&rps)
}

/// One window measured on the server, `largest_pss_kib` updated; the cause when it failed
/// or no request succeeded (unless the budget stopped it).
fn measure_window(server: &dyn Launched, measuring: &WindowPlan, largest_pss_kib: &mut u64) -> Result<Window, String> {
    let sample = match measure_once(server, measuring) {
        Ok(w) if w.sample.succeeded == 0 && w.over_budget.is_none() => {
            let killed = oom_killed(server).map_or(String::new(), |k| format!(": {k}"));
            return Err(format!("no request succeeded ({} failed){killed}", w.sample.failed));
        }
        Ok(s) => s,
        Err(e) => {
            let killed = oom_killed(server).map_or(String::new(), |k| format!(" ({k})"));
            return Err(format!("{e:#}{killed}"));
        }
    };
    if let Some(m) = &sample.sample.memory {
        *largest_pss_kib = (*largest_pss_kib).max(m.pss_total_kib);
    }
    Ok(sample)
}

/// "the OOM killer killed 3 of its processes (container memory limit 200MiB)", when it did:
/// a server that dies in a container is told apart from one that crashed.
fn oom_killed(server: &dyn Launched) -> Option<String> {
    let (limits, usage) = server.container()?;
    let limit =
        limits.memory.map_or(String::new(), |m| format!(" (container memory limit {})", crate::input::format_bytes(m)));
    (usage.oom_kills > 0).then(|| format!("the OOM killer killed {} of its processes{limit}", usage.oom_kills))
}

/// The notes a window's container figures call for, and whether the OOM killer has killed
/// in it since the launch. PSS counts a shared page once among its sharers, the kernel charges
/// it whole to the cgroup that touched it first: where their fits disagree, both are said.
///
/// A window throttled in more of its quota periods than `max_throttled` is marked so: the
/// configuration misses the constraint.
fn container_notes(sample: &mut Sample, max_throttled: Option<f64>) -> (Vec<String>, bool) {
    let Some(c) = &mut sample.container else { return (Vec::new(), false) };
    let mut notes = Vec::new();
    if let (Some(bound), Some(share)) = (max_throttled, c.throttled_share)
        && share > bound
    {
        c.over_throttle_bound = true;
        notes.push(format!(
            "throttled in {:.0}% of its CPU quota periods, over the {:.0}% its container allows ([container] throttled)",
            share * 100.0,
            bound * 100.0
        ));
    }
    if let (Some(charge), Some(pss)) = (c.workers_fit, c.pss_workers_fit)
        && charge < pss
    {
        notes.push(format!(
            "by PSS {pss} workers fit the memory budget, by the container's charge {charge} (the kernel charged {} against a limit of {}): {charge} is the fit",
            crate::input::format_bytes(c.charge_max_bytes),
            c.memory_limit_bytes.map_or("-".into(), crate::input::format_bytes)
        ));
    }
    let killed = c.oom_kills_since_launch > 0;
    if killed {
        let limit = c.memory_limit_bytes.map_or(String::new(), |m| format!(" of {}", crate::input::format_bytes(m)));
        notes.push(format!(
            "the OOM killer killed {} of its processes since its launch: it does not fit its container's memory{limit} (charged {} at most in a window)",
            c.oom_kills_since_launch,
            crate::input::format_bytes(c.charge_max_bytes)
        ));
    }
    (notes, killed)
}

/// The note of a window the memory budget stopped after `after` seconds.
fn over_budget_note(after: f64) -> String {
    format!(
        "the window stopped after {after:.1} s: the workers did not fit the memory budget (a pool over it once can be there again)"
    )
}

/// How far others' share of the CPU may move from the level they held steadily before a
/// window is measured again, as a share of the disturbance threshold. Beside a CPU hog, 114 of
/// 115 windows at the level sat within 3 points of it (bench/verdicts.py grid (f), five
/// runs); the one 6.9 points under it read 13.3% over the grid's median of its count, and made
/// `one-at-a-time` pick 3 workers at 92.9% of the best. The server's own pool moves that share
/// too (32 php-fpm workers left the hog 43-44% of the CPU, 1 worker 50%), so a point far from
/// the last in size may be measured again once or twice before the level follows it.
const AT_THE_LEVEL: f64 = 0.5;

/// Whether `others` (a window's share of the CPU others took) is at their steady `level`,
/// given the disturbance threshold `disturbed` (`AT_THE_LEVEL`).
fn at_the_level(others: f64, level: f64, disturbed: f64) -> bool {
    (others - level).abs() <= AT_THE_LEVEL * disturbed
}

/// The note of a window others disturbed (their share of the CPU), kept after `times` tries,
/// or at once at the share they held steadily (`SteadyOthers`).
fn disturbed_note(others: f64, times: u32, steady: bool) -> String {
    let pct = others * 100.0;
    if steady {
        format!(
            "others took {pct:.0}% of the CPU in a window, as they did steadily since an earlier point (a load, not waited out: a second of it first, then the window): kept, but disturbed"
        )
    } else {
        format!("others took {pct:.0}% of the CPU in a window measured {times} times: kept, but disturbed")
    }
}

/// One bench run; memory and counters are read several times under load, and the CPU that
/// others took meanwhile is measured.
fn measure_once(server: &dyn Launched, w: &WindowPlan) -> anyhow::Result<Window> {
    let WindowPlan { sender: plan, duration, budget, stop_over, pool, recycling, cores, interrupt } = *w;
    let master = server.master_pid();
    let front = server.front_pid();
    let watch = CpuWatch::start(&[Some(master), front].into_iter().flatten().collect::<Vec<_>>());
    let container_before = server.container();
    let done = AtomicBool::new(false);
    // The engine's stop: Ctrl-C (relayed by the probe), or the probe's over-budget sample.
    let stop = Arc::new(AtomicBool::new(interrupt.load(Ordering::Relaxed)));
    let (report, probed) = std::thread::scope(|s| {
        let done = &done;
        let window_start = Instant::now();
        let stop_engine = stop.clone();
        let probe = s.spawn(move || {
            let relay = || {
                if interrupt.load(Ordering::Relaxed) {
                    stop_engine.store(true, Ordering::Relaxed);
                }
            };
            let mut probed = Probed::default();
            let times = memory_sample_times(duration, recycling);
            let middle = times.len().div_ceil(2);
            for (i, at) in times.into_iter().enumerate() {
                if !sleep_until(window_start + at, done, &relay) {
                    break;
                }
                if let Some((_, u)) = server.container()
                    && probed
                        .charge
                        .is_none_or(|c: Usage| u.charge.saturating_sub(u.file) > c.charge.saturating_sub(c.file))
                {
                    probed.charge = Some(u);
                }
                match read_memory(master, front, budget, done) {
                    // The costliest moment is the conservative one.
                    Ok(Some(m)) => {
                        let over = stop_over && !super::objective::pool_fits(&m, pool);
                        if probed.memory.as_ref().is_none_or(|old| m.worker_uss_max_kib > old.worker_uss_max_kib) {
                            probed.memory = Some(m);
                        }
                        if over {
                            probed.over_budget = Some(window_start.elapsed().as_secs_f64());
                            stop_engine.store(true, Ordering::Relaxed);
                            break;
                        }
                    }
                    Err(e) => {
                        probed.refused = Some(e);
                        break;
                    }
                    Ok(None) => {}
                }
                if i + 1 == middle {
                    probed.counters = server.counters();
                }
            }
            while !done.load(Ordering::Relaxed) {
                relay();
                std::thread::sleep(Duration::from_millis(20));
            }
            probed
        });
        let report = plan.run(&stop);
        done.store(true, Ordering::Relaxed);
        (report, probe.join().unwrap_or_default())
    });
    let Probed { mut memory, counters, refused, over_budget, charge } = probed;
    let container = container_before.map(|(limits, before)| {
        let after = server.container().map_or(before, |(_, u)| u);
        container_use(&limits, before, after, charge, memory.as_mut())
    });
    let interference = watch.finish(cores);
    let report = report?;
    if let Some(refused) = refused {
        return Err(refused.into());
    }
    if let Some(outside) = server.listening_outside() {
        anyhow::bail!(outside);
    }
    let lat = &report.result.latency_ms;
    let trend = report.reply_rate.as_ref().and_then(|r| {
        let (pct, t) = (r.trend_pct?, r.trend_t?);
        (r.samples >= 4 && pct.abs() > TREND_PCT && t.abs() > TREND_T)
            .then(|| format!("throughput drifted {pct:+.0}% within a window: the server was not in a steady state"))
    });
    Ok(Window {
        sample: Sample {
            rps: report.result.requests_per_s,
            p50_ms: lat.total.as_ref().map_or(0.0, |l| l.p50),
            p99_ms: lat.total.as_ref().map_or(0.0, |l| l.p99),
            first_byte_p99_ms: lat.first_byte.as_ref().map_or(0.0, |l| l.p99),
            succeeded: report.result.succeeded,
            failed: report.result.failed,
            memory,
            counters,
            histogram: report.result.histograms.as_ref().and_then(|h| h.total.clone()),
            interference: interference.map(|i| i.others),
            steal: interference.map(|i| i.steal),
            window_s: Some(report.result.duration_s),
            client_share: interference.map(|i| i.own),
            connections: Some(report.result.connections.opened),
            answering_at_end: report.result.scheduled.and_then(|_| {
                let waited = report.result.late.as_ref().map_or(0, |l| l.requests) + report.result.unsent.unwrap_or(0);
                (waited == 0).then_some(report.result.in_flight_at_end)
            }),
            server_cpu_ms_per_request: {
                let cpu_s =
                    container.as_ref().map(|c| c.cpu_s).filter(|&s| s > 0.0).or(interference.map(|i| i.server_s));
                cpu_s.filter(|_| report.result.succeeded > 0).map(|s| s * 1000.0 / report.result.succeeded as f64)
            },
            cpu_idle: interference.map(|i| i.idle),
            server_waiting: interference.and_then(|i| i.server_waiting),
            container,
        },
        trend,
        over_budget,
    })
}

/// What the probe beside the load found.
#[derive(Default)]
struct Probed {
    memory: Option<MemUse>,
    counters: Option<serde_json::Value>,
    refused: Option<procmem::Refused>,
    over_budget: Option<f64>,
    /// The container's accounting at the sample where the most was charged (page cache aside).
    charge: Option<Usage>,
}

/// A window's container figures, from the kernel's counters before and after it and its
/// costliest sample. The workers that fit come from the charge, not from PSS: the kernel
/// charges a page to the cgroup that touched it first and kills on the charge; a pool PSS says
/// fits but the charge does not has its fit lowered to the charge's (`memory` is changed).
fn container_use(
    limits: &Limits,
    before: Usage,
    after: Usage,
    peak: Option<Usage>,
    memory: Option<&mut MemUse>,
) -> ContainerUse {
    let at = peak.unwrap_or(after);
    let periods = after.periods.saturating_sub(before.periods);
    let mut c = ContainerUse {
        memory_limit_bytes: limits.memory,
        cpus: limits.cpus,
        charge_max_bytes: at.charge,
        anon_bytes: at.anon,
        file_bytes: at.file,
        sock_bytes: at.sock,
        kernel_bytes: at.kernel,
        oom_kills: after.oom_kills.saturating_sub(before.oom_kills),
        oom_kills_since_launch: after.oom_kills,
        throttled_share: (periods > 0)
            .then(|| after.throttled_periods.saturating_sub(before.throttled_periods) as f64 / periods as f64),
        throttled_s: after.throttled_us.saturating_sub(before.throttled_us) as f64 / 1e6,
        over_throttle_bound: false,
        cpu_s: after.cpu_us.saturating_sub(before.cpu_us) as f64 / 1e6,
        workers_fit: None,
        pss_workers_fit: None,
    };
    if let (Some(limit), Some(m)) = (limits.memory, memory)
        && m.workers > 0
        && m.worker_uss_max_kib > 0
    {
        let per_worker = (m.worker_uss_max_kib * 1024) as i64;
        let room = limit as i64 - c.unreclaimable_bytes() as i64;
        let fit = (m.workers as i64 + room.div_euclid(per_worker)).max(0) as u64;
        c.workers_fit = Some(fit);
        // By PSS too, the budget is at most the container's memory (the seeds' arithmetic:
        // the parent's memory, then one worker's unique memory each).
        let parent = m.parent_shared_kib + m.parent_uss_kib;
        let pss_at_limit = (limit / 1024).saturating_sub(parent) / m.worker_uss_max_kib;
        let pss = m.workers_fit.map_or(pss_at_limit, |f| f.min(pss_at_limit));
        c.pss_workers_fit = Some(pss);
        m.workers_fit = Some(pss.min(fit));
    }
    c
}

/// A drift within a window larger than this (% of its mean) and beyond noise (`TREND_T`)
/// is noted on the point.
const TREND_PCT: f64 = 10.0;
const TREND_T: f64 = 3.0;

/// Sleeps until `until`, unless the run is `done` first (false then); `tick` runs meanwhile.
fn sleep_until(until: Instant, done: &AtomicBool, tick: &dyn Fn()) -> bool {
    while Instant::now() < until {
        if done.load(Ordering::Relaxed) {
            return false;
        }
        tick();
        std::thread::sleep(Duration::from_millis(20).min(until.saturating_duration_since(Instant::now())));
    }
    true
}

/// One memory sample of the server. A sample that finds no readable worker while the master
/// has workers (one was being replaced) is taken again, a few times. A process the kernel
/// refuses to show makes every figure wrong: that is an error, not a sample.
fn read_memory(
    master: i32,
    front: Option<i32>,
    budget: Option<u64>,
    done: &AtomicBool,
) -> Result<Option<MemUse>, procmem::Refused> {
    let front = match front {
        Some(f) => Some(procmem::sample(&procmem::select(&Selector::Pid(f)).unwrap_or_default()).complete()?),
        None => None,
    };
    for _ in 0..5 {
        let pids = procmem::select(&Selector::Pid(master)).unwrap_or_default();
        let has_workers = pids.len() > 1;
        match mem_use(&procmem::sample(&pids).complete()?, front.as_deref(), budget) {
            Some(m) if m.workers > 0 || !has_workers => return Ok(Some(m)),
            _ if done.load(Ordering::Relaxed) => return Ok(None),
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    Ok(None)
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

/// The memory figures the tuner uses, from one sample of the server's processes (and of a
/// front proxy's, which the budget pays for before any worker); a worker whose memory could
/// not be read (it was exiting) is left out rather than counted as 0.
pub fn mem_use(
    procs: &[procmem::ProcMem],
    front: Option<&[procmem::ProcMem]>,
    budget_kib: Option<u64>,
) -> Option<MemUse> {
    let workers: Vec<_> = procs.iter().filter(|p| p.role == Role::Worker && p.mem.rss > 0).collect();
    let parent = procs.iter().find(|p| p.role == Role::Parent)?;
    let n = workers.len().max(1) as u64;
    let front_pss = front.map(|f| f.iter().map(|p| p.mem.pss).sum::<u64>());
    let budget_kib = budget_kib.map(|b| b.saturating_sub(front_pss.unwrap_or(0)));
    Some(MemUse {
        workers: workers.len(),
        worker_uss_max_kib: workers.iter().map(|w| w.uss).max().unwrap_or(0),
        worker_uss_mean_kib: workers.iter().map(|w| w.uss).sum::<u64>() / n,
        worker_shared_mean_kib: workers.iter().map(|w| w.shared).sum::<u64>() / n,
        parent_uss_kib: parent.uss,
        parent_shared_kib: parent.shared,
        pss_total_kib: procs.iter().map(|p| p.mem.pss).sum::<u64>() + front_pss.unwrap_or(0),
        own_pss_kib: procs.iter().chain(front.unwrap_or_default()).map(|p| p.mem.pss_own).sum(),
        front_pss_kib: front_pss,
        workers_fit: budget_kib.and_then(|b| procmem::capacity::capacity(procs, b)).map(|c| c.workers_fit),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Http2;

    #[test]
    fn others_that_held_the_cpu_through_every_try_are_not_waited_out_again() {
        let opts = TrialOptions {
            repeats: 1,
            warm_requests: 0,
            noisy_spread: 0.1,
            disturbed: 0.1,
            steady_others: None,
            budget_kib: None,
            interrupt: Arc::default(),
            placement: None,
            max_throttled: None,
        };
        let seen = |others: &[f64], remeasured: u32| {
            let mut p = crate::tune::point::tests::point(&vec![100.0; others.len()]);
            for (s, &o) in p.samples.iter_mut().zip(others) {
                s.interference = Some(o);
            }
            Point { remeasured, ..p }
        };
        let mut steady = SteadyOthers::default();
        assert_eq!(steady.level(), None);
        // A burst that one re-measurement waited out, then a window kept disturbed after one
        // try: not yet a steady load.
        steady.saw(&seen(&[0.02], 1), &opts);
        steady.saw(&seen(&[0.5], 1), &opts);
        assert_eq!(steady.level(), None);
        // Every try of a point disturbed: others hold the CPU at the mean of its windows ...
        steady.saw(&seen(&[0.5, 0.46], MAX_REMEASURED), &opts);
        assert_eq!(steady.level(), Some(0.48));
        // ... which follows them while every window is disturbed ...
        steady.saw(&seen(&[0.52], 0), &opts);
        assert_eq!(steady.level(), Some(0.52));
        // ... a failed point (no window) says nothing of the others ...
        steady.saw(&seen(&[], 0), &opts);
        assert_eq!(steady.level(), Some(0.52));
        // ... and the first undisturbed window ends the spell.
        steady.saw(&seen(&[0.5, 0.03], 0), &opts);
        assert_eq!(steady.level(), None);
        // A window is at the level within half the disturbance threshold: beside the hog a
        // window 6.9 points under the level read 13.3% high.
        assert!(at_the_level(0.51, 0.485, 0.1) && at_the_level(0.45, 0.485, 0.1));
        assert!(!at_the_level(0.40, 0.485, 0.1) && !at_the_level(0.56, 0.485, 0.1));
        assert!(disturbed_note(0.5, 1, true).contains("as they did steadily since an earlier point"));
        assert!(disturbed_note(0.5, 3, false).contains("measured 3 times"));
    }

    #[test]
    fn memory_samples_cover_the_window_at_random_moments() {
        for (window, recycling, n) in
            [(1.0, false, 3), (5.0, false, 5), (60.0, false, 10), (1.0, true, 10), (4.0, true, 20), (60.0, true, 30)]
        {
            let w = Duration::from_secs_f64(window);
            let a = memory_sample_times(w, recycling);
            assert_eq!(a.len(), n);
            // One in each share of the window's middle 80%, in order.
            for (i, t) in a.iter().enumerate() {
                let share = (t.as_secs_f64() - 0.1 * window) / (0.8 * window) * n as f64;
                assert!(share >= i as f64 && share < (i + 1) as f64, "{window} s: sample {i} at {t:?}");
            }
            // Not the same moments in every window (a 2^-52 chance per sample to repeat).
            assert_ne!(a, memory_sample_times(w, recycling));
        }
    }

    #[test]
    fn windows_hold_recycles_counted_in_the_servers_own_unit() {
        let settings =
            |every: &str| Settings(vec![("workers".into(), "16".into()), ("max_requests".into(), every.into())]);
        let sample = |rps: f64, connections: u64| Sample {
            rps,
            succeeded: (rps * 4.0) as u64,
            connections: Some(connections),
            ..Sample::default()
        };
        let window = Duration::from_secs(4);
        let mut notes = Vec::new();
        // Counted in requests: 1000 a life at 125 req/s a worker is 8 s, three of them 24 s.
        let longer = recycle_window(&settings("1000"), &sample(2000.0, 64), false, 16, window, &mut notes);
        assert_eq!(longer.map(|w| w.as_secs_f64().round()), Some(26.0), "{notes:?}");
        assert!(
            notes[0].contains("to hold 3 recycles of each of 16 workers (max_requests 1000 at 125 req/s each)"),
            "{notes:?}"
        );
        // Counted in connections closed after each request (keep-alive off): the same.
        notes.clear();
        let longer = recycle_window(&settings("1000"), &sample(2000.0, 8000), true, 16, window, &mut notes);
        assert_eq!(longer.map(|w| w.as_secs_f64().round()), Some(26.0), "{notes:?}");
        assert!(
            notes[0].contains("max_requests 1000 connections, about 1000 requests at 1.0 a connection"),
            "{notes:?}"
        );
        // Kept alive for 100 requests each: a life of 100000 requests, 800 s; no window holds
        // one, and the window stays as asked.
        notes.clear();
        assert_eq!(recycle_window(&settings("1000"), &sample(2000.0, 80), true, 16, window, &mut notes), None);
        assert!(notes[0].contains("each worker lives about 800 s (max_requests 1000 connections, about 100000 requests at 100.0 a connection at 125 req/s each), longer than the longest window (60 s): windows kept at 4.0 s"), "{notes:?}");
        // Between: 40 s lives, the longest window holds 1.5 of them.
        notes.clear();
        let longer = recycle_window(&settings("50"), &sample(2000.0, 80), true, 16, window, &mut notes);
        assert_eq!(longer, Some(MAX_WINDOW), "{notes:?}");
        assert!(notes[0].contains("hold only 1.5 recycles"), "{notes:?}");
        // Never recycled: no note.
        notes.clear();
        assert_eq!(recycle_window(&settings("0"), &sample(2000.0, 80), true, 16, window, &mut notes), None);
        assert!(notes.is_empty());
    }

    /// The `http2` knob decides each trial's protocol; without it, `[load]` does.
    #[test]
    fn the_http2_knob_sets_the_trials_protocol() {
        let knob = |v: &str| Settings(vec![("workers".into(), "2".into()), ("http2".into(), v.into())]);
        let protocol = |l: &Load| l.plan("http://127.0.0.1:9").unwrap().engine.http2;
        let asked = Load::of(BenchSpec { http2: true, streams: Some(10), ..BenchSpec::default() });
        assert_eq!(protocol(&asked.for_settings(&knob("on"))), Some(Http2 { streams: 10 }));
        assert_eq!(protocol(&asked.for_settings(&knob("off"))), None, "--streams goes with HTTP/2");
        assert_eq!(protocol(&asked.for_settings(&Settings::default())), Some(Http2 { streams: 10 }));
        let plain = Load::of(BenchSpec::default());
        assert_eq!(protocol(&plain.for_settings(&knob("on"))), Some(Http2 { streams: 1 }));
        assert_eq!(protocol(&plain.for_settings(&knob("off"))), None);
    }
}
