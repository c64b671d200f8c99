//! `webtune tune FILE`: the target file's knobs swept by a strategy; every point saved as it
//! is measured; the recommendation in the server's own syntax with one line of evidence per
//! value.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use super::UsageError;
use super::args::TuneArgs;
use super::bench::parse_duration;
use crate::target::{self, TargetFile};
use crate::tune::journal::{Header, Journal};
use crate::tune::strategies::{self, Knobs};
use crate::tune::trial::{self, Launched, Launcher, Load, TrialOptions};
use crate::tune::{Measure, Objective, Outcome, Point, Settings, Tuner, table};

/// Requests per worker sent before measuring.
const WARM_REQUESTS_PER_WORKER: u64 = 20;
/// Repeats spreading more than this are reported and taken again.
const NOISY_SPREAD: f64 = 0.10;

pub fn run(a: &TuneArgs, db: Option<&Path>) -> anyhow::Result<ExitCode> {
    let file = TargetFile::load(&a.file)?;
    let objective = objective(a)?;
    let knee = parse_share(&a.knee)?;
    let sets = super::launch::parse_sets(&a.set)?;
    let base = Settings(file.settings(&sets));
    // A knob fixed by --set is not swept.
    let knobs: Knobs = file.knobs.iter().filter(|(k, _)| !sets.iter().any(|(s, _)| s == k)).cloned().collect();
    let load =
        Load { path: file.load_path.clone(), flags: file.load_flags.clone(), warm: true, idle_before: Duration::ZERO };
    let budget_kib = match a.memory.as_deref().or(file.memory.as_deref()) {
        Some(m) => Some(memory_budget(m)?),
        None => None,
    };
    let time_budget = match a.budget.as_deref().or(file.time.as_deref()) {
        Some(t) => Some(parse_duration("--budget", t)?),
        None => None,
    };
    let opts =
        TrialOptions { repeats: a.repeats.max(1), warm_requests: WARM_REQUESTS_PER_WORKER, noisy_spread: NOISY_SPREAD };

    let journal_path = a.journal.clone().unwrap_or_else(|| default_journal(&a.file));
    let text = std::fs::read_to_string(&a.file).unwrap_or_default();
    let header = Header {
        journal: "webtune.tune.v1".into(),
        target_file: a.file.display().to_string(),
        strategy: a.strategy.clone(),
        target_digest: format!("{:016x}", fnv1a(text.as_bytes())),
    };
    let (mut journal, reused) = Journal::open(&journal_path, &header, a.resume)?;

    let mut launcher = TargetLauncher { file: &file };
    let mut measure = Trials { launcher: &mut launcher, opts: opts.clone(), budget_kib };
    let planned = strategies::planned_trials(&a.strategy, &knobs);
    let estimate = measure.estimate(&load);
    if !a.quiet {
        eprintln!(
            "tune: {} on {} ({}), objective {}; about {planned} trials x ~{} each = ~{}{}; journal {}",
            a.strategy,
            a.file.display(),
            file.adapter().name(),
            objective.describe(),
            crate::tune::fmt_secs(estimate),
            crate::tune::fmt_secs(estimate * planned as u32),
            time_budget.map_or(String::new(), |b| format!(" (budget {})", crate::tune::fmt_secs(b))),
            journal_path.display()
        );
    }
    // Every point goes to the journal (for --resume) and to the history database.
    let mut store = match crate::store::Store::open(&crate::store::default_path(db)) {
        Ok(mut s) => {
            let options = serde_json::json!({ "objective": objective.describe(), "repeats": opts.repeats, "budget_kib": budget_kib });
            match s.begin_tune(&a.file.display().to_string(), &a.strategy, &text, &options) {
                Ok(id) => Some((s, id)),
                Err(e) => {
                    eprintln!("webtune: {e:#}; points go to the journal only");
                    None
                }
            }
        }
        Err(e) => {
            eprintln!("webtune: {e:#}; points go to the journal only");
            None
        }
    };
    let mut save_error = None;
    let mut save = |p: &Point| {
        if let Err(e) = journal.append(p) {
            save_error.get_or_insert(e);
        }
        if let Some((s, id)) = &mut store
            && let Err(e) = s.save_point(*id, p)
        {
            save_error.get_or_insert(e);
        }
    };
    let mut t = Tuner::new(&mut measure, load, objective, &mut save, reused, a.quiet);
    t.budget_kib = budget_kib;
    t.deadline = time_budget.map(|b| Instant::now() + b);
    t.planned = planned;
    let found = match a.strategy.as_str() {
        "workers" => strategies::workers(&mut t, &knobs, &base, knee),
        "recycle" => strategies::recycle(&mut t, &knobs, &base),
        "spares" => strategies::spares(&mut t, &knobs, &base),
        "keepalive" => strategies::keepalive(&mut t, &knobs, &base),
        _ => strategies::one_at_a_time(&mut t, &knobs, &base),
    };
    let stopped = t.stopped.clone();
    let points = std::mem::take(&mut t.points);
    drop(t);
    let config = launcher.render(&found.recommended);
    let outcome = found.into_outcome(&a.strategy, objective.describe(), stopped, config, points);
    print(&outcome, a.json)?;
    if let Some((mut s, id)) = store {
        if let Err(e) = s.finish_tune(id, &outcome) {
            save_error.get_or_insert(e);
        } else if !a.quiet {
            eprintln!(
                "tune: stored as run {id} in {} (webtune show {id}, webtune report {id} --html F)",
                s.path.display()
            );
        }
    }
    if let Some(e) = save_error {
        eprintln!("webtune: the journal is incomplete: {e:#}");
        return Ok(ExitCode::from(1));
    }
    Ok(if outcome.stopped.as_deref() == Some("interrupted") { ExitCode::from(130) } else { ExitCode::SUCCESS })
}

fn print(o: &Outcome, json: bool) -> anyhow::Result<()> {
    super::emit(o, json, |o, out| {
        use std::io::Write;
        write!(out, "{}", table::report(o))
    })
}

fn objective(a: &TuneArgs) -> Result<Objective, UsageError> {
    Ok(match (&a.slo_p99, a.min_rps) {
        (Some(slo), _) => {
            Objective::ThroughputWithin { p99_ms: parse_duration("--slo-p99", slo)?.as_secs_f64() * 1000.0 }
        }
        (None, Some(rps)) if rps > 0.0 => Objective::LeastMemory { rps },
        (None, Some(rps)) => return Err(UsageError(format!("--min-rps must be positive, not {rps}"))),
        (None, None) => Objective::Throughput,
    })
}

fn parse_share(s: &str) -> Result<f64, UsageError> {
    let v = match s.trim().strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => s.trim().parse::<f64>(),
    };
    match v {
        Ok(v) if (0.0..1.0).contains(&v) => Ok(v),
        _ => Err(UsageError(format!("--knee: bad share {s:?} (e.g. 3%)"))),
    }
}

fn memory_budget(s: &str) -> Result<u64, UsageError> {
    match super::mem::parse_budget(s)? {
        super::mem::Budget::KiB(k) => Ok(k),
        // Before the server starts, all it can have is what is available.
        super::mem::Budget::Auto => Ok(super::mem::mem_available_kib()),
    }
}

fn default_journal(file: &Path) -> PathBuf {
    let stem = file.file_stem().map_or("target".into(), |s| s.to_string_lossy().into_owned());
    PathBuf::from(format!("{stem}.tune.jsonl"))
}

/// FNV-1a: a stable digest of the target file (std's hasher may change between releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// The real measurements: a trial per point.
struct Trials<'a> {
    launcher: &'a mut dyn Launcher,
    opts: TrialOptions,
    budget_kib: Option<u64>,
}

impl Measure for Trials<'_> {
    fn measure(&mut self, step: &str, settings: &Settings, load: &Load) -> Point {
        trial::run(self.launcher, step, settings, load, &self.opts, self.budget_kib)
    }

    fn estimate(&self, load: &Load) -> Duration {
        // Launch and warm-up, the repeats, the stop.
        Duration::from_secs(2) + load.idle_before + load.duration() * self.opts.repeats as u32
    }
}

/// Launches the target file's server through its adapter.
struct TargetLauncher<'a> {
    file: &'a TargetFile,
}

impl Launcher for TargetLauncher<'_> {
    fn launch(&mut self, settings: &Settings) -> anyhow::Result<Box<dyn Launched>> {
        Ok(Box::new(target::launch(self.file, &settings.0)?))
    }

    fn render(&self, settings: &Settings) -> String {
        self.file.recommend(&settings.0)
    }
}
