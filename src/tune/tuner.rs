//! The tuner's working state, which the strategies share: the measurements so far, the
//! budgets, the plan and its ETA, and what it tells its observer.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::noise;
use super::objective::Objective;
use super::point::Point;
use super::trial::{self, Load};
use crate::server::settings::Settings;

/// What the tuner tells whoever runs it, as it goes: progress for a terminal, points for the
/// journal and the store. The tuner itself never prints (the engine's `Sink`, for trials).
pub trait Observer {
    /// A trial is about to be measured; `left` is what the rest of the plan should take.
    fn measuring(&mut self, _step: &str, _elapsed: Duration, _left: &Eta) {}
    /// A point was measured, or `reused` from an interrupted run's journal: the moment to
    /// save it, before anything else can go wrong.
    fn measured(&mut self, _point: &Point, _reused: bool) {}
    /// A line of a strategy's reasoning.
    fn note(&mut self, _line: &str) {}
}

/// A closure that saves each newly measured point is an observer (tests, simple callers).
impl<F: FnMut(&Point)> Observer for F {
    fn measured(&mut self, point: &Point, reused: bool) {
        if !reused {
            self(point)
        }
    }
}

/// What is left of a run: the windows the strategy still plans (this one included), at least
/// and at most (a comparison takes more rounds only while its verdict is open), and the time
/// they should take at the seconds per window measured so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Eta {
    pub least_windows: usize,
    pub most_windows: usize,
    pub least: Duration,
    pub most: Duration,
    /// The time budget cut the plan short: `most` is what is left of it.
    pub capped: bool,
}

impl Eta {
    /// "~40s left", or "at least ~40s, at most ~3m10s left" when the rounds still to come are
    /// uncertain; "(the budget)" when the budget ends the run before the plan would.
    pub fn describe(&self) -> String {
        let (least, most) = (fmt_secs(self.least), fmt_secs(self.most));
        let budget = if self.capped { " (the time budget's end)" } else { "" };
        if least == most {
            format!("~{most} left{budget}")
        } else {
            format!("at least ~{least}, at most ~{most} left{budget}")
        }
    }

    /// The same, with neither bound past `left` (what remains of a time budget).
    pub fn within(mut self, left: Option<Duration>) -> Eta {
        if let Some(left) = left
            && self.most > left
        {
            self.most = left;
            self.least = self.least.min(left);
            self.capped = true;
        }
        self
    }
}

/// Windows still planned, at least and at most.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Plan {
    pub least: usize,
    pub most: usize,
}

impl Plan {
    /// `windows` measured: they leave both bounds.
    fn spend(&mut self, windows: usize) {
        self.least = self.least.saturating_sub(windows);
        self.most = self.most.saturating_sub(windows).max(self.least);
    }

    /// More planned (a challenger a measurement named, a knob judged again).
    pub fn add(&mut self, least: usize, most: usize) {
        self.least += least;
        self.most += most.max(least);
    }

    /// A window just measured was beyond the least planned (a round more while a verdict was
    /// open): it came out of the most only.
    pub fn beyond_least(&mut self) {
        self.least += 1;
        self.most = self.most.max(self.least);
    }

    /// Planned windows that will not be measured (a verdict settled early).
    pub fn release(&mut self, least: usize, most: usize) {
        self.least = self.least.saturating_sub(least);
        self.most = self.most.saturating_sub(most).max(self.least);
    }
}

/// Something that measures a configuration: the real trial runner, or a model in tests.
pub trait Measure {
    /// Launches `settings`, measures `repeats` windows of `load`, stops: one point.
    fn measure(&mut self, step: &str, settings: &Settings, load: &Load, repeats: usize) -> Point;
    /// One window of `settings` (a round of a comparison); the real runner measures it on the
    /// server an earlier window of the same configuration left running, when it can.
    fn window(&mut self, step: &str, settings: &Settings, load: &Load) -> Point {
        self.measure(step, settings, load, 1)
    }
    /// The next window of `settings` runs on a fresh launch, not on a server kept running.
    fn relaunch(&mut self, _settings: &Settings) {}
    /// What a trial costs, for plans and ETAs, before any was measured.
    fn estimate(&self, load: &Load) -> Duration;
}

/// The tuner's working state, shared by the strategies.
pub struct Tuner<'a> {
    measure: &'a mut dyn Measure,
    pub load: Load,
    pub objective: Objective,
    pub budget_kib: Option<u64>,
    /// Stop starting trials that would end after this.
    pub deadline: Option<Instant>,
    /// Told of every trial and point as they happen.
    observer: &'a mut dyn Observer,
    /// Set (by Ctrl-C, or the caller) to stop after the trial under way.
    interrupt: Arc<AtomicBool>,
    /// Points measured by an earlier, interrupted run of the same plan (--resume).
    reuse: HashMap<(String, Settings), Point>,
    pub points: Vec<Point>,
    /// Why the tuner stopped early, when it did.
    pub stopped: Option<String>,
    started: Instant,
    /// Windows still planned, for the ETA.
    pub plan: Plan,
    /// Windows measured so far (each trial's requested repeats) and the seconds they took
    /// (launches, warm-ups, remeasured and lengthened windows included): the ETA's rate.
    windows_done: usize,
    seconds_done: f64,
    /// Windows per point measured with `point` (the --repeats).
    pub repeats: usize,
    /// How decisions are judged: rounds, threshold, confidence.
    pub judging: Judging,
    /// The noise was said (`say_noise`): once when others' CPU is first seen high, once
    /// when the windows' scatter is first known.
    said_busy: bool,
    said_noise: bool,
    /// Seconds under load so far, over every window (the rest of `seconds_done` is launches,
    /// warm-ups and stops).
    load_seconds_done: f64,
}

/// What a tuner is given at construction besides what it measures with: its budgets, its
/// plan and how it judges. The default: no budgets, no plan, 3 repeats, `Judging::default()`.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The memory the server may take, KiB.
    pub budget_kib: Option<u64>,
    /// Stop starting trials that would end after this.
    pub deadline: Option<Instant>,
    /// Windows planned, for the ETA.
    pub plan: Plan,
    /// Windows per point measured with `point` (the --repeats).
    pub repeats: usize,
    pub judging: Judging,
}

impl Default for Setup {
    fn default() -> Self {
        Setup { budget_kib: None, deadline: None, plan: Plan::default(), repeats: 3, judging: Judging::default() }
    }
}

/// A window in which others took more than this share of the CPU is said at once.
const BUSY: f64 = 0.10;

/// How a comparison between configurations is judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judging {
    /// Rounds (each configuration measured once per round, in turn) before any verdict.
    pub min_rounds: usize,
    /// Rounds at the most: past them an open verdict stays "undecided".
    pub max_rounds: usize,
    /// The smallest change worth adopting, and the half-width of "no effect", % (e.g. 2).
    pub threshold_pct: f64,
    /// How far above zero a gain's interval must lie for it to be adopted, %: 0 (surely a
    /// gain), but the threshold itself where a gain under it leaves the incumbent within the
    /// windows' resolution of the challenger (the knee's check).
    pub sure_by_pct: f64,
    /// The confidence of the intervals (e.g. 0.99), shared by the challengers of a step.
    pub confidence: f64,
    /// A sure verdict read on servers kept between windows is read again on fresh launches
    /// (off only where the caller picks by score, not by the verdict).
    pub fresh_launches: bool,
}

impl Default for Judging {
    fn default() -> Self {
        Judging {
            min_rounds: 3,
            max_rounds: 10,
            threshold_pct: 2.0,
            sure_by_pct: 0.0,
            confidence: 0.99,
            fresh_launches: true,
        }
    }
}

impl<'a> Tuner<'a> {
    /// A tuner with its budgets, plan and way of judging (`setup`); `reuse` holds the points
    /// of an interrupted run's journal.
    pub fn new(
        measure: &'a mut dyn Measure,
        load: Load,
        objective: Objective,
        setup: Setup,
        observer: &'a mut dyn Observer,
        reuse: Vec<Point>,
        interrupt: Arc<AtomicBool>,
    ) -> Tuner<'a> {
        let Setup { budget_kib, deadline, plan, repeats, judging } = setup;
        Tuner {
            measure,
            load,
            objective,
            budget_kib,
            deadline,
            observer,
            interrupt,
            reuse: reuse.into_iter().map(|p| ((p.step.clone(), p.settings.clone()), p)).collect(),
            points: Vec::new(),
            stopped: None,
            started: Instant::now(),
            plan,
            windows_done: 0,
            seconds_done: 0.0,
            repeats,
            judging,
            said_busy: false,
            said_noise: false,
            load_seconds_done: 0.0,
        }
    }

    /// What is left of the time budget, if one was given.
    pub fn time_left(&self) -> Option<Duration> {
        self.deadline.map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// The noise of the windows so far.
    pub fn noise(&self) -> noise::Noise {
        noise::Noise::of(&self.points)
    }

    /// Says the noise as soon as it is known: others' CPU at the first busy window, and the
    /// windows' scatter once two windows of one configuration show it, with what that costs a
    /// verdict against the rounds and the time allowed, and the remedies when it is too much.
    fn say_noise(&mut self) {
        let noise = self.noise();
        if !self.said_busy && !self.said_noise && noise.others_cpu > BUSY {
            self.said_busy = true;
            self.note(&format!(
                "busy machine: others took {:.0}% of the CPU during the windows so far; disturbed windows are measured again, and the noise is said once two windows of one configuration show it",
                noise.others_cpu * 100.0
            ));
        }
        if self.said_noise || noise.df < 2 {
            return;
        }
        self.said_noise = true;
        let j = self.judging;
        let Some(rounds) = noise.rounds_to_settle(j.threshold_pct, j.confidence) else { return };
        let per_window = self.seconds_per_window().unwrap_or_default();
        // A comparison of two values: a window of each per round.
        let round = per_window * 2;
        let affordable = self.time_left().map(|left| (left.as_secs_f64() / round.as_secs_f64().max(0.001)) as usize);
        let allowed = j.max_rounds.min(affordable.unwrap_or(usize::MAX));
        let cost = fmt_secs(round * rounds.min(100_000) as u32);
        let head = format!(
            "noise: {}: judging a {}% change takes {} interleaved rounds of two values (~{cost} at {:.1} s a window)",
            noise.describe(),
            j.threshold_pct,
            noise::Noise::rounds_text(rounds),
            per_window.as_secs_f64()
        );
        if rounds <= allowed {
            self.note(&format!("{head}: within the rounds and the time allowed"));
            return;
        }
        let limit = match affordable {
            Some(a) if a < j.max_rounds => {
                format!("the time budget has {} left, {a} rounds", fmt_secs(self.time_left().unwrap_or_default()))
            }
            _ => format!("--max-rounds allows {}", j.max_rounds),
        };
        let smallest = (1..=100)
            .map(|p| p as f64)
            .find(|&p| noise.rounds_to_settle(p, j.confidence).is_some_and(|r| r <= allowed.max(2)));
        let judgeable =
            smallest.map_or("no change at all".to_string(), |p| format!("only changes of ~{p:.0}% or more"));
        self.note(&format!(
            "{head}, but {limit}: at this noise {judgeable} can be judged, and an undecided value keeps your configuration's. To judge {}%: {}",
            j.threshold_pct,
            noise::REMEDIES
        ));
    }

    /// The seconds a window has taken, launches, warm-ups and re-measurements included.
    pub fn seconds_per_window(&self) -> Option<Duration> {
        (self.windows_done > 0).then(|| Duration::from_secs_f64(self.seconds_done / self.windows_done as f64))
    }

    /// The expected length of the next trial of `windows` windows under `load`: what a window
    /// has cost so far (launches, warm-ups, stops, windows measured again included), longer
    /// by as much as `load`'s windows are longer than those measured (lengthened windows);
    /// before any, the estimate.
    fn trial_time(&self, load: &Load, windows: usize) -> Duration {
        if self.windows_done == 0 {
            return self.measure.estimate(load) * windows as u32 / self.repeats.max(1) as u32;
        }
        let per_window = self.seconds_done / self.windows_done as f64;
        let longer = if self.load_seconds_done > 0.0 {
            (load.duration().as_secs_f64() - self.load_seconds_done / self.windows_done as f64).max(0.0)
        } else {
            0.0
        };
        Duration::from_secs_f64((per_window + longer) * windows as f64)
    }

    /// Measures (or reuses) one point; None when time is up or the user interrupted, and
    /// then `stopped` says why.
    pub fn point(&mut self, step: &str, settings: &Settings) -> Option<Point> {
        let load = self.load.clone();
        self.point_with(step, settings, &load)
    }

    /// As `point`, under `load` instead of the tuner's own (a strategy's special load, e.g. a burst).
    pub fn point_with(&mut self, step: &str, settings: &Settings, load: &Load) -> Option<Point> {
        let repeats = self.repeats;
        self.measure_point(step, settings, load, Some(repeats))
    }

    /// One window of `settings` (a round of a comparison): measured once, on a server kept
    /// running from its previous window when the measurer can, else launched and warmed.
    pub fn window(&mut self, step: &str, settings: &Settings, load: &Load) -> Option<Point> {
        self.measure_point(step, settings, load, None)
    }

    /// The next window of `settings` runs on a fresh launch (see `Measure::relaunch`).
    pub fn relaunch(&mut self, settings: &Settings) {
        self.measure.relaunch(settings);
    }

    /// A point of `repeats` windows on a fresh launch, or (None) one window, perhaps on a kept server.
    fn measure_point(&mut self, step: &str, settings: &Settings, load: &Load, repeats: Option<usize>) -> Option<Point> {
        let (repeats, one_window) = (repeats.unwrap_or(1), repeats.is_none());
        if self.stopped.is_some() {
            return None;
        }
        if let Some(p) = self.reuse.remove(&(step.to_string(), settings.clone())) {
            self.plan.spend(repeats);
            self.observer.measured(&p, true);
            self.points.push(p.clone());
            return Some(p);
        }
        if self.interrupted() {
            self.stopped = Some("interrupted".into());
            return None;
        }
        let need = self.trial_time(load, repeats);
        if let Some(d) = self.deadline
            && Instant::now() + need > d
        {
            self.stopped = Some("the time budget is spent".into());
            return None;
        }
        let eta = self.eta(load, repeats);
        self.observer.measuring(step, self.started.elapsed(), &eta);
        let p = if one_window {
            self.measure.window(step, settings, load)
        } else {
            self.measure.measure(step, settings, load, repeats)
        };
        if p.cause() == Some("interrupted") || self.interrupted() {
            self.stopped = Some("interrupted".into());
            return None;
        }
        // Not this configuration's failure, and no later trial could be loaded either.
        if let Some(cause) = p.cause().filter(|c| c.starts_with(trial::LOAD_LOST)) {
            self.stopped = Some(cause.to_string());
            return None;
        }
        self.observer.measured(&p, false);
        self.plan.spend(repeats);
        self.windows_done += repeats;
        self.seconds_done += p.seconds;
        self.load_seconds_done += p.samples.iter().filter_map(|s| s.window_s).sum::<f64>();
        self.points.push(p.clone());
        self.say_noise();
        Some(p)
    }

    /// What is left, from the seconds per window measured so far (before any, the estimate)
    /// and the windows still planned (at least the `repeats` about to be measured), never
    /// past the time budget.
    fn eta(&self, load: &Load, repeats: usize) -> Eta {
        let per_window = self.trial_time(load, 1);
        let least_windows = self.plan.least.max(repeats);
        let most_windows = self.plan.most.max(least_windows);
        Eta {
            least_windows,
            most_windows,
            least: per_window * least_windows as u32,
            most: per_window * most_windows as u32,
            capped: false,
        }
        .within(self.time_left())
    }

    /// Whether the run was asked to stop.
    pub fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed)
    }

    /// Passes a line of a strategy's reasoning to the observer.
    pub fn note(&mut self, line: &str) {
        self.observer.note(line);
    }
}

/// One line for a measured point: its throughput, latency and memory, or why it failed.
pub fn summary_line(p: &Point) -> String {
    match p.cause() {
        Some(cause) => format!("{}: FAILED: {cause}", p.step),
        None => {
            let mem = p.memory().map_or(String::new(), |m| format!(", worker USS {} KiB", m.worker_uss_max_kib));
            let noisy = if p.noisy { " (noisy: repeats spread over 10%, more taken)" } else { "" };
            let client = match (&p.placement, p.client_share) {
                (Some(pl), Some(share)) => {
                    format!(", client CPU {:.0}% ({})", share * 100.0, if pl.shared { "shared" } else { "apart" })
                }
                _ => String::new(),
            };
            let others = match p.remeasured {
                0 => format!(", others' CPU {:.0}%", p.interference * 100.0),
                n => format!(", others' CPU {:.0}% ({n} disturbed windows measured again)", p.interference * 100.0),
            };
            let tail = p.p999().map_or(String::new(), |t| format!(", p99.9 {t:.2} ms"));
            format!("{}: {:.1} req/s, p99 {:.2} ms{tail}{mem}{others}{client}{noisy}", p.step, p.rps(), p.p99())
        }
    }
}

/// A duration in whole seconds, for progress lines: "42s", or "3m05s" from a minute up.
pub fn fmt_secs(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 { format!("{}m{:02}s", s / 60, s % 60) } else { format!("{s}s") }
}
