//! The strategies' logic against model servers whose throughput and memory follow known
//! formulas (the real servers are in the integration tests).

use std::time::Duration;

use super::*;
use crate::tune::point::{MemUse, Sample, Status};
use crate::tune::trial::Load;
use crate::tune::{Measure, Objective, Tuner, Verdict};

/// A server model: (settings, repeat) -> (rps, p99, worker USS KiB at that repeat).
struct Model<F: Fn(&Settings, usize) -> (f64, f64, u64)> {
    f: F,
    /// Samples taken so far of each configuration: the next one's index.
    taken: std::collections::HashMap<Settings, usize>,
    measured: Vec<String>,
    budget: Option<u64>,
    /// How long each trial takes (and is estimated to take).
    pace: Duration,
}

impl<F: Fn(&Settings, usize) -> (f64, f64, u64)> Model<F> {
    /// A model whose trials each take `pace`, with no memory budget.
    fn paced(f: F, pace: Duration) -> Model<F> {
        Model { f, measured: Vec::new(), taken: Default::default(), budget: None, pace }
    }
}

impl<F: Fn(&Settings, usize) -> (f64, f64, u64)> Model<F> {
    /// A model measured instantly, under `budget` (KiB) when given.
    fn new(f: F, budget: Option<u64>) -> Model<F> {
        Model { f, taken: Default::default(), measured: Vec::new(), budget, pace: Duration::ZERO }
    }
}

impl<F: Fn(&Settings, usize) -> (f64, f64, u64)> Measure for Model<F> {
    fn measure(&mut self, step: &str, settings: &Settings, _load: &Load, repeats: usize) -> Point {
        self.measured.push(step.to_string());
        std::thread::sleep(self.pace);
        let workers: u64 = settings.get("workers").and_then(|w| w.parse().ok()).unwrap_or(4);
        let first = *self.taken.get(settings).unwrap_or(&0);
        self.taken.insert(settings.clone(), first + repeats);
        let samples = (first..first + repeats)
            .map(|r| {
                let (rps, p99, uss) = (self.f)(settings, r);
                let memory = MemUse {
                    workers: workers as usize,
                    worker_uss_max_kib: uss,
                    worker_uss_mean_kib: uss,
                    parent_uss_kib: 1000,
                    parent_shared_kib: 10_000,
                    workers_fit: self.budget.map(|b| (b - 11_000) / uss.max(1)),
                    ..MemUse::default()
                };
                Sample { rps, p99_ms: p99, succeeded: (rps * 5.0) as u64, memory: Some(memory), ..Sample::default() }
            })
            .collect();
        Point {
            step: step.into(),
            settings: settings.clone(),
            status: Status::Ok,
            samples,
            saturation: Vec::new(),
            config_text: None,
            seconds: self.pace.as_secs_f64(),
            noisy: false,
            warmed: 0,
            workers_at_start: None,
            interference: 0.0,
            remeasured: 0,
            notes: Vec::new(),
            load_from: vec!["local".into()],
            placement: None,
            client_share: None,
            launches: 1,
        }
    }
    fn estimate(&self, _load: &Load) -> Duration {
        self.pace
    }
}

fn load() -> Load {
    Load::of(crate::bench::BenchSpec { connections: Some(10), ..Default::default() })
}

fn knobs(name: &str, values: &[&str]) -> Knobs {
    vec![(name.into(), values.iter().map(|v| v.to_string()).collect())]
}

fn workers_of(s: &Settings) -> f64 {
    s.get("workers").unwrap().parse().unwrap()
}

#[test]
fn workers_finds_the_knee_of_a_cpu_bound_server_without_the_whole_grid() {
    // 2 cores, 5 ms of CPU per request: 200/s per worker up to 400/s; a little jitter.
    let mut m = Model::new(
        |s: &Settings, r| {
            let w = workers_of(s);
            ((200.0 * w).min(400.0) - w * 0.5 + r as f64, 5.0 * w, 3000)
        },
        None,
    );
    let counts: Vec<String> = (1..=64).map(|n| n.to_string()).collect();
    let counts: Vec<&str> = counts.iter().map(String::as_str).collect();
    let mut save = |_: &Point| {};
    let mut t = Tuner::new(&mut m, load(), Objective::Throughput, &mut save, Vec::new(), Default::default());
    let found = workers(&mut t, &knobs("workers", &counts), &Settings::default(), 0.03);
    assert_eq!(found.recommended.get("workers"), Some("2"), "{:?}", found.evidence);
    assert!(found.evidence[0].2.contains("throughput"), "{}", found.evidence[0].2);
    drop(t);
    assert!(m.measured.len() <= 9, "coarse then refine, not 64 trials: {:?}", m.measured);
}

#[test]
fn workers_never_exceed_the_memory_budget() {
    // I/O bound: the knee is at 32, but 50 MiB fits only 10 workers of 4 MiB.
    let mut m =
        Model::new(|s: &Settings, _| (40.0 * workers_of(s).min(32.0), 30.0, 4096), Some(11_000 + 10 * 4096 + 100));
    let counts = ["1", "2", "4", "8", "10", "16", "32", "64"];
    let mut save = |_: &Point| {};
    let mut t = Tuner::new(&mut m, load(), Objective::Throughput, &mut save, Vec::new(), Default::default());
    let found = workers(&mut t, &knobs("workers", &counts), &Settings::default(), 0.03);
    assert_eq!(found.recommended.get("workers"), Some("10"), "{:?}", found.evidence);
    assert!(found.evidence[0].2.contains("memory sets the limit"), "{}", found.evidence[0].2);
}

#[test]
fn one_at_a_time_adopts_what_helps_and_not_what_does_nothing() {
    let mut m = Model::new(
        |s: &Settings, r| {
            let base = if s.get("cache") == Some("on") { 300.0 } else { 200.0 };
            // "debug" does nothing but noise.
            (base + [0.0, 3.0, -3.0][r % 3] + if s.get("debug") == Some("0") { 1.0 } else { 0.0 }, 10.0, 2000)
        },
        None,
    );
    let k: Knobs =
        vec![("debug".into(), vec!["1".into(), "0".into()]), ("cache".into(), vec!["off".into(), "on".into()])];
    let mut saved = 0;
    let mut save = |_: &Point| saved += 1;
    let mut t = Tuner::new(&mut m, load(), Objective::Throughput, &mut save, Vec::new(), Default::default());
    let found = one_at_a_time(&mut t, &k, &Settings::default());
    assert_eq!(found.recommended.label(), "debug=1 cache=on");
    // debug's +0.5% is sure (the noise cancels within each round) but under the 2% worth
    // adopting; cache's +50% is adopted; then debug is judged again at the new operating point.
    let verdicts: Vec<_> = found.steps.iter().map(|s| (s.knob.as_str(), s.verdict)).collect();
    assert_eq!(
        verdicts,
        [("debug", Some(Verdict::NoEffect)), ("cache", Some(Verdict::Adopted)), ("debug", Some(Verdict::NoEffect))]
    );
    let e = found.steps[1].effect.unwrap();
    assert!((e.pct - 50.0).abs() < 1.0 && e.low_pct > 40.0, "{e:?}");
    assert_eq!(found.steps[0].rounds, 3, "decided at the first look");
    drop(t);
    assert_eq!(saved, 18, "three rounds of two windows per step, each saved");
}

#[test]
fn interleaved_rounds_cancel_drift_that_back_to_back_blocks_read_as_an_effect() {
    // The machine slows 4% per window; the knob does nothing. Measured A A A then B B B, B
    // would read 12% slower; in rounds A B, B A..., the pairs see no change.
    let windows = std::cell::Cell::new(0usize);
    let mut m = Model::new(
        |_: &Settings, _| {
            let n = windows.get();
            windows.set(n + 1);
            (1000.0 * 0.96f64.powi(n as i32), 10.0, 2000)
        },
        None,
    );
    let k: Knobs = vec![("backlog".into(), vec!["511".into(), "1024".into()])];
    let mut save = |_: &Point| {};
    let mut t = Tuner::new(&mut m, load(), Objective::Throughput, &mut save, Vec::new(), Default::default());
    let found = one_at_a_time(&mut t, &k, &Settings::default());
    assert_eq!(found.recommended.get("backlog"), Some("511"));
    assert_ne!(found.steps[0].verdict, Some(Verdict::Adopted), "{}", found.steps[0].evidence);
    let e = found.steps[0].effect.unwrap();
    assert!(e.low_pct < 0.0 && e.high_pct > 0.0 || e.high_pct < 2.0, "{e:?}");
}

#[test]
fn recycle_keeps_a_leaking_pool_within_budget_and_never_picks_1() {
    // 4 workers leak 100 KiB per request each; a fork costs throughput when frequent.
    let mut m = Model::new(
        |s: &Settings, r| {
            let every: f64 = s.get("max_requests").unwrap().parse().unwrap();
            let rps = if every == 0.0 { 500.0 } else { 500.0 * (1.0 - 10.0 / every).max(0.02) };
            // Each repeat serves 2500 requests (625 per worker) beyond the warm-up.
            (rps, 10.0, 5000 + (100.0 * 625.0 * (r as f64 + 0.5)) as u64)
        },
        None,
    );
    let mut save = |_: &Point| {};
    let mut t = Tuner::new(&mut m, load(), Objective::Throughput, &mut save, Vec::new(), Default::default());
    // Room per worker: (211 MiB - 11000 KiB) / 4 - 5000 KiB fresh, at 100 KiB per request.
    t.budget_kib = Some(11_000 + 4 * (5000 + 100 * 700));
    let k = knobs("max_requests", &["1", "10", "100", "500", "1000", "5000"]);
    let found = recycle(&mut t, &k, &Settings::default());
    let chosen: u64 = found.recommended.get("max_requests").unwrap().parse().unwrap();
    assert_eq!(chosen, 500, "{:?}", found.evidence);
    assert!(found.evidence[0].2.contains("100.0 KiB per request"), "{}", found.evidence[0].2);
}

#[test]
fn the_time_budget_stops_with_the_best_so_far() {
    let mut m = Model::paced(|s: &Settings, _| (100.0 * workers_of(s), 10.0, 1000), Duration::from_millis(300));
    let mut save = |_: &Point| {};
    let mut t = Tuner::new(&mut m, load(), Objective::Throughput, &mut save, Vec::new(), Default::default());
    // Trials of 300 ms in a 750 ms budget: two fit, a third would end past it.
    t.deadline = Some(std::time::Instant::now() + Duration::from_millis(750));
    let k: Knobs = vec![("workers".into(), vec!["1".into(), "2".into(), "4".into(), "8".into()])];
    let found = one_at_a_time(&mut t, &k, &Settings::default());
    assert_eq!(t.stopped.as_deref(), Some("the time budget is spent"));
    drop(t);
    assert_eq!(m.measured, ["baseline", "workers=2"]);
    // One pair cannot be judged: the incumbent stays, and the step says so.
    assert_eq!(found.recommended.get("workers"), Some("1"));
    assert_eq!(found.steps[0].verdict, Some(Verdict::Undecided));
    // The evidence claims nothing of 4 and 8, never measured, nor of 2 beyond its throughput.
    let e = &found.evidence[0].2;
    assert!(e.contains("not judged, the run stopped after 0 interleaved rounds (the time budget is spent)"), "{e}");
    assert!(e.contains("workers=2 200.0 req/s: too few rounds for an interval"), "{e}");
    assert!(e.ends_with("never measured: 4, 8"), "{e}");
}

#[test]
fn a_recycle_search_cut_short_claims_no_interval_fails() {
    // It leaks, so intervals are to be tried; the budget ends after the first point.
    let mut m = Model::paced(
        |_: &Settings, r| (500.0, 10.0, 5000 + (100.0 * 625.0 * (r as f64 + 0.5)) as u64),
        Duration::from_millis(300),
    );
    let mut save = |_: &Point| {};
    let mut t = Tuner::new(&mut m, load(), Objective::Throughput, &mut save, Vec::new(), Default::default());
    t.deadline = Some(std::time::Instant::now() + Duration::from_millis(450));
    t.budget_kib = Some(11_000 + 4 * (5000 + 100 * 700));
    let k = knobs("max_requests", &["100", "500", "1000"]);
    let found = Strategy::Recycle.run(&mut t, &k, &Settings::default(), 0.95);
    assert_eq!(t.stopped.as_deref(), Some("the time budget is spent"));
    let e = &found.evidence[0].2;
    assert!(e.contains("not decided, the run stopped before an interval was found"), "{e}");
    assert!(!e.contains("no interval to try fits"), "{e}");
}

#[test]
fn one_at_a_time_crosses_the_memory_budget_with_two_knobs_at_once() {
    // Without recycling a worker grows to 20 MiB, recycled every 100 requests it stays at
    // 4 MiB for 10% less throughput. The budget fits one big worker or six small ones: four
    // workers are refused at first, then found again with recycling.
    let mut m = Model::new(
        |s: &Settings, r| {
            let recycled = s.get("max_requests") != Some("0");
            let rps = 100.0 * workers_of(s) * if recycled { 0.9 } else { 1.0 } + [0.0, 0.5, -0.5][r % 3];
            (rps, 10.0, if recycled { 4000 } else { 20_000 })
        },
        Some(11_000 + 25_000),
    );
    let k: Knobs =
        vec![("workers".into(), vec!["1".into(), "4".into()]), ("max_requests".into(), vec!["0".into(), "100".into()])];
    let mut save = |_: &Point| {};
    let mut t = Tuner::new(&mut m, load(), Objective::Throughput, &mut save, Vec::new(), Default::default());
    let found = one_at_a_time(&mut t, &k, &Settings::default());
    assert_eq!(found.recommended.label(), "workers=4 max_requests=100", "{:?}", found.evidence);
    assert_eq!(found.steps[0].verdict, Some(Verdict::NoEffect), "4 big workers do not fit");
    assert_eq!(found.steps[1].verdict, Some(Verdict::Adopted));
    assert!(found.steps[1].evidence.contains("with workers=4"), "{}", found.steps[1].evidence);
}

#[test]
fn the_pool_follows_the_memory_budget_when_recycling_shrinks_the_workers() {
    // Grid (a) of bench/verdicts.py in miniature: never recycled, a worker grows to 26 MiB and
    // only one fits; recycled every 100 requests it stays near 8 MiB for a fifth less
    // throughput, and six fit. Neither knob alone gains: only the pair does.
    let per_worker = |mr: &str| match mr {
        "0" => (409.0, 26_000),
        "20" => (199.0, 17_200),
        "100" => (323.0, 8_000),
        _ => (379.0, 36_000),
    };
    let mut m = Model::new(
        |s: &Settings, r| {
            let (rps, uss) = per_worker(s.get("max_requests").unwrap());
            (rps * workers_of(s) + [0.0, 1.5, -1.5][r % 3], 10.0, uss)
        },
        Some(60 * 1024),
    );
    let counts = ["1", "2", "3", "4", "6", "8"];
    let k: Knobs = vec![
        ("workers".into(), counts.iter().map(|c| c.to_string()).collect()),
        ("max_requests".into(), ["0", "20", "100", "500"].iter().map(|c| c.to_string()).collect()),
    ];
    let mut save = |_: &Point| {};
    let mut t = Tuner::new(&mut m, load(), Objective::Throughput, &mut save, Vec::new(), Default::default());
    let found = one_at_a_time(&mut t, &k, &Settings::default());
    drop(t);
    assert_eq!(found.recommended.label(), "workers=6 max_requests=100", "{:#?}", found.evidence);
    // Every larger pool is refused by the budget in its first window, not after three.
    assert_eq!(found.steps[0].rounds, 1, "{}", found.steps[0].evidence);
    assert!(found.steps[1].evidence.contains("100 with workers=6"), "{}", found.steps[1].evidence);
    // The grid measures 24 configurations 3 times each.
    assert!(m.measured.len() < 72, "{} windows: {:?}", m.measured.len(), m.measured);
}

#[test]
fn over_the_budget_the_best_value_within_it_is_adopted_and_said_to_meet_it() {
    // One big worker does not fit; recycled at 20 it fits at half the speed, at 100 at 80%.
    let mut m = Model::new(
        |s: &Settings, _| match s.get("max_requests").unwrap() {
            "0" => (400.0, 10.0, 40_000),
            "20" => (200.0, 10.0, 10_000),
            _ => (320.0, 10.0, 12_000),
        },
        Some(11_000 + 30_000),
    );
    let k: Knobs = vec![("max_requests".into(), vec!["0".into(), "100".into(), "20".into()])];
    let mut save = |_: &Point| {};
    let mut t = Tuner::new(&mut m, load(), Objective::Throughput, &mut save, Vec::new(), Default::default());
    let found = one_at_a_time(&mut t, &k, &Settings::default().with("workers", "1"));
    assert_eq!(found.recommended.get("max_requests"), Some("100"), "{:?}", found.evidence);
    let why = &found.steps[0].evidence;
    assert!(why.contains("max_requests=20 200.0 req/s: meets the objective"), "{why}");
}

#[test]
fn the_knee_is_checked_against_the_best_count_in_interleaved_rounds() {
    // Flat from 2 workers on, but 4 workers serve `gain` more: the tolerance calls 2 the knee;
    // the interleaved check adopts 4 only when its gain clears the threshold.
    for (gain, expect, verdict) in [(1.025, "4", Verdict::Adopted), (1.005, "2", Verdict::NoEffect)] {
        let mut m = Model::new(
            move |s: &Settings, r| {
                let w = workers_of(s);
                let rps = (200.0 * w).min(400.0) * if w == 4.0 { gain } else { 1.0 };
                (rps + [0.0, 0.4, -0.4][r % 3], 5.0, 3000)
            },
            None,
        );
        let mut save = |_: &Point| {};
        let mut t = Tuner::new(&mut m, load(), Objective::Throughput, &mut save, Vec::new(), Default::default());
        let found = workers(&mut t, &knobs("workers", &["1", "2", "4"]), &Settings::default(), 0.03);
        assert_eq!(found.recommended.get("workers"), Some(expect), "{:?}", found.evidence);
        let check = found.steps.last().unwrap();
        assert_eq!((check.before_value.as_str(), check.verdict), ("2", Some(verdict)), "{}", check.evidence);
        assert!(check.effect.is_some_and(|e| e.low_pct < (gain - 1.0) * 100.0 && e.high_pct > (gain - 1.0) * 100.0));
    }
}

#[test]
fn a_configuration_seen_over_the_budget_at_its_revisit_is_not_recommended() {
    // Three workers fit while young (their first three windows) and not after: the first
    // pass adopts them, a later window shows them over the budget, and the recommendation
    // falls back to the newest configuration that fitted in every window, two workers.
    let mut m = Model::new(
        |s: &Settings, r| {
            let w = workers_of(s);
            let mode = if s.get("mode") == Some("b") { 1.1 } else { 1.0 };
            // Mode b makes three workers too large from the start.
            let uss = if w > 2.0 && (r >= 3 || mode > 1.0) { 20_000 } else { 10_000 };
            (100.0 * w * mode + r as f64 % 2.0, 10.0, uss)
        },
        Some(11_000 + 3 * 10_000 + 100),
    );
    let mut save = |_: &Point| {};
    let mut t = Tuner::new(&mut m, load(), Objective::Throughput, &mut save, Vec::new(), Default::default());
    let k = vec![
        ("workers".to_string(), vec!["2".to_string(), "3".to_string()]),
        ("mode".to_string(), vec!["a".to_string(), "b".to_string()]),
    ];
    let found = one_at_a_time(&mut t, &k, &Settings::default());
    assert!(found.steps.iter().any(|s| s.knob == "workers" && s.after_value == "3"), "{:?}", found.evidence);
    assert_eq!(found.recommended.get("workers"), Some("2"), "{:?}", found.evidence);
    let why = &found.evidence.iter().find(|(k, _, _)| k == "workers").unwrap().2;
    assert!(why.contains("workers back to 2"), "{why}");
}

#[test]
fn a_sure_loss_is_worse_not_no_effect_and_its_table_shows_the_challenger() {
    // keepalive off serves 6% less, whatever the round's noise.
    let mut m = Model::new(
        |s: &Settings, r| {
            let base = if s.get("keepalive") == Some("off") { 940.0 } else { 1000.0 };
            (base * [1.0, 1.01, 0.99][r % 3], if s.get("keepalive") == Some("off") { 14.0 } else { 12.0 }, 2000)
        },
        None,
    );
    let k: Knobs = vec![("keepalive".into(), vec!["on".into(), "off".into()])];
    let mut save = |_: &Point| {};
    let mut t = Tuner::new(&mut m, load(), Objective::Throughput, &mut save, Vec::new(), Default::default());
    let found = one_at_a_time(&mut t, &k, &Settings::default());
    drop(t);
    assert_eq!(found.recommended.get("keepalive"), Some("on"));
    let step = &found.steps[0];
    assert_eq!(step.verdict, Some(Verdict::Worse), "{}", step.evidence);
    assert!(step.evidence.contains("worse"), "{}", step.evidence);
    assert!(!step.evidence.contains("no effect"), "{}", step.evidence);
    assert_eq!(serde_json::to_value(step).unwrap()["verdict"], "worse");
    let outcome =
        found.into_outcome("one-at-a-time", "throughput".into(), None, String::new(), Default::default(), Vec::new());
    let text = crate::tune::table::report(&outcome);
    // Never the kept value against itself: the challenger's column and its change.
    assert!(!text.contains("keepalive on -> on"), "{text}");
    assert!(text.contains("Step 1: keepalive stays on; best challenger keepalive=off (worse)"), "{text}");
    let rps = text.lines().find(|l| l.trim_start().starts_with("Requests/s")).unwrap();
    assert!(rps.contains("1000.0") && rps.contains("940.0") && rps.contains("-6.0%"), "{rps}");
    let p99 = text.lines().find(|l| l.trim_start().starts_with("p99 latency")).unwrap();
    assert!(p99.contains("+16.7%"), "{p99}");
    assert!(text.contains("keepalive   on   off") || text.lines().any(|l| l.starts_with("* keepalive")), "{text}");
    assert!(text.contains("Effect of keepalive=off -6.0%"), "{text}");
    assert!(text.contains("interleaved rounds: worse"), "{text}");
}

#[test]
fn an_interval_wholly_below_zero_is_worse_one_around_zero_no_effect() {
    use crate::stats::Effect;
    use crate::tune::strategies::verdict::classify;
    let e = |pct, low_pct, high_pct| Effect { pct, low_pct, high_pct };
    assert_eq!(classify(&e(-6.2, -10.2, -2.0), 2.0), Verdict::Worse);
    assert_eq!(classify(&e(-0.8, -1.5, -0.1), 2.0), Verdict::Worse);
    assert_eq!(classify(&e(0.2, -1.5, 1.9), 2.0), Verdict::NoEffect);
    assert_eq!(classify(&e(5.0, 3.0, 7.0), 2.0), Verdict::Adopted);
    assert_eq!(classify(&e(-3.0, -9.0, 1.0), 2.0), Verdict::Undecided);
}

/// Records what each progress line would say is left.
#[derive(Default)]
struct Etas(Vec<crate::tune::Eta>);

impl crate::tune::Observer for Etas {
    fn measuring(&mut self, _step: &str, _elapsed: Duration, left: &crate::tune::Eta) {
        self.0.push(*left);
    }
}

#[test]
fn the_eta_counts_the_rounds_still_to_come_and_bounds_them() {
    // "noisy" scatters its challenger by +-5% around the incumbent: undecided until the cap
    // of rounds; "quiet" does nothing, settled at the first look.
    let mut m = Model::paced(
        |s: &Settings, r| {
            let rps = if s.get("noisy") == Some("b") { 1000.0 * [1.05, 0.95, 1.06, 0.94][r % 4] } else { 1000.0 };
            (rps, 10.0, 2000)
        },
        Duration::from_millis(2),
    );
    let k: Knobs = vec![
        ("noisy".into(), vec!["a".into(), "b".into()]),
        ("quiet".into(), vec!["x".into(), "y".into(), "z".into()]),
    ];
    let mut etas = Etas::default();
    let judging = crate::tune::Judging::default();
    let mut t = Tuner::new(&mut m, load(), Objective::Throughput, &mut etas, Vec::new(), Default::default());
    t.plan = Strategy::OneAtATime.planned_windows(&k, &judging, 3);
    let found = one_at_a_time(&mut t, &k, &Settings::default());
    drop(t);
    assert_eq!(found.steps[0].verdict, Some(Verdict::Undecided), "{}", found.steps[0].evidence);
    assert_eq!(found.steps[0].rounds, judging.max_rounds);
    let total = etas.0.len();
    assert_eq!(total, m.measured.len());
    // Before each window, the windows left (this one included) lie within the bounds told.
    for (i, eta) in etas.0.iter().enumerate() {
        let left = total - i;
        assert!(eta.least_windows <= left && left <= eta.most_windows, "window {i}: {left} left, told {eta:?}");
        assert!(eta.least <= eta.most);
    }
    // At the start: the least is the first look at each (2 + 3 values x 3 rounds), the most
    // the cap (5 x 10): 29 windows were taken, far more than a count of values (5) would say.
    assert_eq!((etas.0[0].least_windows, etas.0[0].most_windows), (15, 50));
    assert_eq!(total, 2 * 10 + 3 * 3);
    // Once "noisy" is done, only "quiet"'s 9 windows remain, and the bound says so.
    let after_noisy = &etas.0[20];
    assert_eq!((after_noisy.least_windows, after_noisy.most_windows), (9, 30));
    let eta = crate::tune::Eta {
        least_windows: 9,
        most_windows: 30,
        least: Duration::from_secs(40),
        most: Duration::from_secs(190),
    };
    assert_eq!(eta.describe(), "at least ~40s, at most ~3m10s left");
}
