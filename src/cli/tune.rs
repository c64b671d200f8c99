//! `webtune tune FILE`: the target file's knobs swept by a strategy; every point saved as it
//! is measured; the recommendation in the server's own syntax with one line of evidence per
//! value.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::args::TuneArgs;
use super::output::OutputFile;
use crate::input::{self, InputError};
use crate::procmem::capacity::Budget;
use crate::report::Format;
use crate::report::format::Tuned;
use crate::server::TargetFile;
use crate::tune::baseline::Baseline;
use crate::tune::journal::{Header, Journal};
use crate::tune::kept::Kept;
use crate::tune::launcher::TargetLauncher;
use crate::tune::strategies::{KneeRule, Knobs};
use crate::tune::trial::{self, Launcher, Load, SteadyOthers, TrialOptions};
use crate::tune::tuner::Setup;
use crate::tune::{
    Eta, Judging, Measure, Objective, Observer, Outcome, Plan, Point, Settings, Strategy, Tuner, fmt_secs, summary_line,
};

/// Requests per worker sent before measuring.
const WARM_REQUESTS_PER_WORKER: u64 = 20;
/// Repeats spreading more than this are reported and taken again.
const NOISY_SPREAD: f64 = 0.10;
/// A window in which others took more than this share of the machine's CPU is taken again.
const DISTURBED: f64 = 0.10;

/// Runs the tuning and prints the outcome; exit 1 when every trial failed or the journal is
/// incomplete, 130 when interrupted.
pub fn run(a: &TuneArgs, db: Option<&Path>) -> anyhow::Result<ExitCode> {
    let spec = TuneSpec::of(a, db)?;
    let interrupt = crate::sys::interrupt_flag();
    let opts = TrialOptions {
        repeats: spec.repeats,
        warm_requests: WARM_REQUESTS_PER_WORKER,
        noisy_spread: NOISY_SPREAD,
        disturbed: DISTURBED,
        steady_others: None,
        budget_kib: spec.budget_kib,
        interrupt: interrupt.clone(),
        placement: Some(spec.file.placement.clone()),
        max_throttled: spec.file.max_throttled,
    };

    let header = journal_header(&spec);
    let journal_at = journal_path(&spec, &header)?;
    // Every point goes to the journal (for --resume) and to the history database.
    let mut store = open_store(&spec);
    let journal_at = journal_at.unwrap_or_else(|| new_journal(&spec.db, store.as_ref().map(|(_, id)| *id)));
    let (journal_path, mut journal, reused) = open_journal(&journal_at, &header, spec.resume)?;

    let mut launcher = TargetLauncher { file: &spec.file, interrupt: interrupt.clone() };
    let mut measure =
        Trials { launcher: &mut launcher, opts: opts.clone(), kept: Kept::default(), others: SteadyOthers::default() };
    let plan = spec.strategy.planned_windows(&spec.knobs, &spec.objective, &spec.judging, spec.repeats);
    if !spec.quiet {
        // A window: a launch, a warm-up, one load, a stop.
        let per_window = measure.estimate(&spec.load) / spec.repeats.max(1) as u32;
        announce(&spec, plan, per_window, &journal_path);
    }
    let mut observer = Progress { quiet: spec.quiet, journal: &mut journal, store: store.as_mut(), save_error: None };
    let mut t = spec.tuner(&mut measure, &mut observer, reused, interrupt, plan);
    let found = spec.strategy.run(&mut t, &spec.knobs, &spec.baseline, spec.knee);
    let stopped = t.stopped.clone();
    let points = std::mem::take(&mut t.points);
    drop(t);
    // The servers kept between windows stop here, whatever ended the tune (errors, Ctrl-C
    // and panics drop them too).
    drop(measure);
    let config = launcher.render(&found.recommended);
    let diffs = launcher.diffs(&spec.baseline.changes(&found.recommended))?;
    let unjudged = found.unjudged(&spec.knobs);
    let mut outcome =
        found.into_outcome(spec.strategy.name(), spec.objective.describe(), stopped, config, diffs, points);
    outcome.baseline_values = spec.baseline.origins.clone();
    outcome.unjudged = unjudged;
    outcome.threshold_pct = Some(spec.judging.threshold_pct);
    let knobs = &spec.knobs;
    let grid = spec.strategy.grid(knobs);
    outcome.cost = crate::tune::Cost::of(&outcome.points, grid, spec.repeats);
    if let Some(dir) = &spec.diff {
        write_diffs(dir, &outcome.diffs, &spec.file)?;
    }
    let save_error = observer.save_error.take();
    report(&spec, &outcome, store, save_error)
}

/// The command line checked, once: what to measure and how to judge it, and where the
/// results go. Every error is the one line the user sees; the raw flags end here.
struct TuneSpec {
    /// The target file's path, as given, and its text (for the journal's digest and the store).
    path: PathBuf,
    text: String,
    file: TargetFile,
    strategy: Strategy,
    objective: Objective,
    /// The workers strategy's tolerance and headroom.
    knee: KneeRule,
    judging: Judging,
    repeats: usize,
    /// What the user runs: the file's configuration with --set applied, and every swept
    /// knob's starting value and where it comes from.
    baseline: Baseline,
    /// The knobs to sweep: the file's, less those fixed by --set.
    knobs: Knobs,
    load: Load,
    /// Where the load comes from, for the plan.
    load_from: String,
    budget_kib: Option<u64>,
    time_budget: Option<Duration>,
    /// The journal given (--journal; else one beside the history, named by the run) and
    /// whether to resume it.
    journal: Option<PathBuf>,
    resume: bool,
    /// The history database.
    db: PathBuf,
    quiet: bool,
    /// Each step's table in the text (--verbose), not only its line.
    verbose: bool,
    /// stdout's format, and the output files (-o, --export-*), checked.
    stdout: Format,
    files: Vec<OutputFile>,
    /// --diff DIR, checked.
    diff: Option<PathBuf>,
}

impl TuneSpec {
    fn of(a: &TuneArgs, db: Option<&Path>) -> anyhow::Result<TuneSpec> {
        let db = crate::store::default_path(db);
        crate::store::check_path(&db)?;
        let files = a.output.files::<Tuned>()?;
        // --diff DIR is checked now, as -o is: a tune is not run to be lost at its last write.
        if let Some(dir) = &a.diff {
            check_diff_dir(dir)?;
        }
        let mut file = TargetFile::load(&a.file)?;
        super::launch::place(&mut file, a.cpus.as_deref())?;
        let objective = objective(a)?;
        let knee = input::share("--knee", &a.knee)?;
        if knee >= 1.0 {
            return Err(InputError(format!("--knee: bad share {:?}: expected under 100%, e.g. 3%", a.knee)).into());
        }
        let headroom = input::share("--headroom", &a.headroom)?;
        let knee = KneeRule { tolerance: knee, headroom };
        if a.repeats == 0 {
            return Err(InputError("--repeats must be at least 1".into()).into());
        }
        let threshold = input::share("--threshold", &a.threshold)?;
        if !(threshold > 0.0 && threshold < 1.0) {
            return Err(InputError(format!(
                "--threshold: bad share {:?}: expected above 0% and under 100%",
                a.threshold
            ))
            .into());
        }
        if a.max_rounds < 2 || a.max_rounds > 100 {
            return Err(InputError(format!("--max-rounds must be from 2 to 100, not {}", a.max_rounds)).into());
        }
        let judging = Judging {
            min_rounds: a.repeats.min(a.max_rounds),
            max_rounds: a.max_rounds,
            threshold_pct: threshold * 100.0,
            ..Judging::default()
        };
        let sets = super::launch::parse_sets(&file, &a.set)?;
        // A knob fixed by --set is not swept.
        let mut knobs: Knobs = file.knobs.iter().filter(|(k, _)| !sets.iter().any(|(s, _)| s == k)).cloned().collect();
        let baseline = Baseline::of(&file, &sets, &mut knobs).map_err(|e| InputError(format!("{e:#}")))?;
        if let Some(why) = a.strategy.refuses(&knobs) {
            return Err(InputError(why).into());
        }
        if a.strategy == crate::tune::Strategy::Rightsize
            && let Some(why) = crate::tune::strategies::rightsize::refuses(&objective, &file.load)
        {
            return Err(InputError(why).into());
        }
        let load = Load::of(file.load.clone());
        // Every host answers, runs this version and keeps time, before the first trial.
        let remote = crate::bench::remote::Remote::of(&file.load)?;
        if let Some(r) = &remote {
            r.check()?;
        }
        let load_from = remote.map_or_else(|| "this machine".to_string(), |r| r.sources().join(", "));
        let memory = match &a.memory {
            Some(m) => Some(Budget::parse("--memory", m)?),
            None => file.memory,
        };
        // Before the server starts, all it can have is what is available.
        let budget_kib = memory.map(|b| b.resolve(&[]));
        let time_budget = match &a.max_time {
            Some(t) => Some(input::duration("--max-time", t)?),
            None => file.time,
        };
        Ok(TuneSpec {
            path: a.file.clone(),
            text: crate::input::read_text(&a.file, "target file").unwrap_or_default(),
            file,
            strategy: a.strategy,
            objective,
            knee,
            judging,
            repeats: a.repeats,
            baseline,
            knobs,
            load,
            load_from,
            budget_kib,
            time_budget,
            journal: a.journal.clone(),
            resume: a.resume,
            db,
            quiet: a.quiet,
            verbose: a.verbose,
            stdout: super::output::stdout_format(a.json),
            files,
            diff: a.diff.clone(),
        })
    }

    /// The tuner for this spec; its time budget starts now.
    fn tuner<'a>(
        &self,
        measure: &'a mut dyn Measure,
        observer: &'a mut dyn Observer,
        reused: Vec<Point>,
        interrupt: Arc<AtomicBool>,
        plan: Plan,
    ) -> Tuner<'a> {
        let setup = Setup {
            budget_kib: self.budget_kib,
            deadline: self.time_budget.map(|b| Instant::now() + b),
            plan,
            repeats: self.repeats,
            judging: self.judging,
        };
        Tuner::new(measure, self.load.clone(), self.objective, setup, observer, reused, interrupt)
    }
}

/// What a journal of this tune begins with: its target file, strategy, the file's digest and
/// the placement; --resume continues only a journal whose header is this one.
fn journal_header(spec: &TuneSpec) -> Header {
    Header {
        journal: "webtune.tune.v1".into(),
        target_file: spec.path.display().to_string(),
        strategy: spec.strategy.name().into(),
        target_digest: format!("{:016x}", fnv1a(spec.text.as_bytes())),
        placement: Some(spec.file.placement.clone()),
    }
}

/// The journals' directory: beside the history database `db`, in the data directory.
fn journal_dir(db: &Path) -> PathBuf {
    db.parent().map_or_else(|| PathBuf::from("journals"), |d| d.join("journals"))
}

/// The journal to open: --journal, or with --resume the newest journal of the same tune in
/// the journals' directory; None: a new one, named by its run (new_journal).
fn journal_path(spec: &TuneSpec, header: &Header) -> anyhow::Result<Option<PathBuf>> {
    if let Some(path) = &spec.journal {
        return Ok(Some(path.clone()));
    }
    if !spec.resume {
        return Ok(None);
    }
    let dir = journal_dir(&spec.db);
    let newest = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter(|p| Journal::header_of(p).as_ref() == Some(header))
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
    match newest {
        Some(path) => Ok(Some(path)),
        None => Err(InputError(format!(
            "--resume: no journal of this tune ({}, {}, this file's content and placement) in {}: give its --journal PATH",
            spec.path.display(),
            spec.strategy.name(),
            dir.display()
        ))
        .into()),
    }
}

/// A new journal's path in the journals' directory, named by the run it belongs to (the
/// history's id; without the history, the time and this process).
fn new_journal(db: &Path, run_id: Option<i64>) -> PathBuf {
    let name = match run_id {
        Some(id) => format!("tune-{id}.jsonl"),
        None => {
            let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            format!("tune-at-{secs}-{}.jsonl", std::process::id())
        }
    };
    journal_dir(db).join(name)
}

/// The journal of this run (a new one, or the interrupted run's with --resume), its path,
/// and the points it already holds.
fn open_journal(path: &Path, header: &Header, resume: bool) -> anyhow::Result<(PathBuf, Journal, Vec<Point>)> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot make the journals' directory {}", dir.display()))?;
    }
    let (journal, reused) = Journal::open(path, header, resume)?;
    if journal.torn_lines() > 0 {
        eprintln!(
            "webtune: {}: {} line(s) were not whole points (cut short or torn), skipped: those points are measured again",
            path.display(),
            journal.torn_lines()
        );
    }
    if journal.replaced_points() > 0 {
        eprintln!(
            "tune: the journal {} held {} point(s) of an earlier tune: this one starts afresh over them (--resume continues a journal)",
            path.display(),
            journal.replaced_points()
        );
    }
    Ok((path.to_path_buf(), journal, reused))
}

/// The plan, before the first trial: what is tuned, how, and about how long it takes.
fn announce(spec: &TuneSpec, plan: Plan, per_window: Duration, journal: &Path) {
    let windows = if plan.least == plan.most {
        format!(
            "about {} windows x ~{} = ~{}",
            plan.most,
            fmt_secs(per_window),
            fmt_secs(per_window * plan.most as u32)
        )
    } else {
        format!(
            "{} to {} windows (more rounds only while a verdict is open) x ~{} = ~{} to at most ~{}",
            plan.least,
            plan.most,
            fmt_secs(per_window),
            fmt_secs(per_window * plan.least as u32),
            fmt_secs(per_window * plan.most as u32)
        )
    };
    let file = &spec.file;
    eprintln!(
        "tune: {} on {} ({}, {}), objective {}, load from {}; {windows}{}; journal {}",
        spec.strategy.name(),
        spec.path.display(),
        file.adapter().name(),
        file.placement.describe(),
        spec.objective.describe(),
        spec.load_from,
        match spec.time_budget {
            Some(b) if b < per_window * plan.most as u32 => format!(
                " (budget {}: it ends the run sooner, after ~{} windows; what it does not reach stays as you run it)",
                fmt_secs(b),
                (b.as_secs_f64() / per_window.as_secs_f64().max(0.001)) as usize
            ),
            Some(b) => format!(" (budget {})", fmt_secs(b)),
            None => String::new(),
        },
        journal.display()
    );
    if !spec.baseline.origins.is_empty() {
        eprintln!("tune: baseline {}", spec.baseline.describe());
    }
    if let Some(log) = &file.load.loaded_log {
        eprintln!("tune: the load is the access log {}: {}", log.0.summary.files.join(", "), log.0.account());
    }
}

/// The history database's run for this tune; None (said on stderr) when it cannot be had:
/// the points then go to the journal only.
fn open_store(spec: &TuneSpec) -> Option<(crate::store::Store, i64)> {
    match crate::store::Store::open(&spec.db) {
        Ok(mut s) => {
            let options = serde_json::json!({ "objective": spec.objective.describe(), "repeats": spec.repeats, "budget_kib": spec.budget_kib });
            // The target file's whole path: files of one name in different directories differ.
            let target = std::path::absolute(&spec.path).unwrap_or_else(|_| spec.path.clone());
            match s.begin_tune(&target.display().to_string(), spec.strategy.name(), &spec.text, &options) {
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
    }
}

/// Prints the outcome, writes the output files, stores it; the exit code says how it went.
fn report(
    spec: &TuneSpec,
    outcome: &Outcome,
    store: Option<(crate::store::Store, i64)>,
    mut save_error: Option<anyhow::Error>,
) -> anyhow::Result<ExitCode> {
    let detail = if spec.verbose { crate::tune::table::Detail::Full } else { crate::tune::table::Detail::Summary };
    let tuned =
        Tuned { run_id: store.as_ref().map(|(_, id)| *id), detail, diff_dir: spec.diff.clone(), ..Tuned::new(outcome) };
    super::print::emit(&tuned, spec.stdout)?;
    let written = super::output::write_files(&tuned, &spec.files);
    if let Some((mut s, id)) = store {
        if let Err(e) = s.finish_tune(id, outcome) {
            save_error.get_or_insert(e);
        } else if !spec.quiet {
            eprintln!("{}", super::bench::stored_line("tune", id, &s));
        }
    }
    if let Some(e) = save_error {
        eprintln!("webtune: the journal is incomplete: {e:#}");
        return Ok(ExitCode::from(1));
    }
    if let Err(e) = written {
        eprintln!("webtune: {}", super::print::one_line(&e));
        return Ok(ExitCode::from(1));
    }
    if outcome.stopped.as_deref() == Some("interrupted") {
        return Ok(ExitCode::from(130));
    }
    if let Some(why) = outcome.stopped.as_deref().filter(|w| w.starts_with(crate::tune::trial::LOAD_LOST)) {
        eprintln!("webtune: the tune stopped: {why}");
        return Ok(ExitCode::from(1));
    }
    // A recommendation nothing measured is not one: every trial failed.
    if !outcome.points.is_empty() && !outcome.points.iter().any(Point::ok) {
        eprintln!("webtune: every trial failed (see the causes above); nothing was measured to recommend");
        return Ok(ExitCode::from(1));
    }
    if outcome.judged_nothing() {
        eprintln!(
            "webtune: nothing was judged ({}): keep your configuration",
            outcome.stopped.as_deref().unwrap_or("the run stopped")
        );
        return Ok(ExitCode::from(super::exit::NOTHING_JUDGED));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--diff DIR` before any launch: a directory of this user's (made when missing), and every
/// diff it may hold a file that can be replaced (not a symlink elsewhere, a FIFO, another's).
fn check_diff_dir(dir: &Path) -> anyhow::Result<()> {
    if std::fs::metadata(dir).is_ok_and(|m| !m.is_dir()) {
        let why = format!("--diff: {} is not a directory: give the directory the diffs go in", dir.display());
        return Err(InputError(why).into());
    }
    crate::safe_write::directory(dir).map_err(|e| e.at("--diff"))?;
    let suffixes = ["", crate::server::tree::ROOT_SUFFIX];
    for name in crate::server::tree::DIFF_NAMES.iter().flat_map(|n| suffixes.map(|s| format!("{n}{s}"))) {
        let path = dir.join(format!("{name}.diff"));
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(InputError(format!(
                "--diff: {} is a symlink; webtune writes no diff through one",
                path.display()
            ))
            .into());
        }
        crate::safe_write::check(&path).map_err(|e| e.at("--diff"))?;
    }
    Ok(())
}

/// `--diff DIR`: one file per tree that changes (`apache2.diff`...); a tree that does not
/// change gets none, and an old one of its name is removed so the directory says what is true.
fn write_diffs(
    dir: &Path,
    diffs: &std::collections::BTreeMap<String, String>,
    file: &TargetFile,
) -> anyhow::Result<()> {
    crate::safe_write::directory(dir)?;
    for (tree, diff) in diffs {
        crate::safe_write::replace(&dir.join(format!("{tree}.diff")), diff.as_bytes())?;
    }
    if diffs.is_empty() {
        eprintln!("tune: keep your configuration: none of your files changes, nothing written to {}", dir.display());
    } else {
        for tree in diffs.keys() {
            let diff = dir.join(format!("{tree}.diff"));
            match file.diff_dir(tree) {
                Some(at) => eprintln!(
                    "tune: wrote {}: apply it with: patch -p1 -d {} < {}",
                    diff.display(),
                    shell_word(&at),
                    shell_word(&diff)
                ),
                None => eprintln!("tune: wrote {}", diff.display()),
            }
        }
    }
    Ok(())
}

/// A path as one shell word, quoted when it holds anything but letters, digits and `/._-+`.
fn shell_word(path: &Path) -> String {
    let text = path.display().to_string();
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c)) {
        text
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

fn objective(a: &TuneArgs) -> Result<Objective, InputError> {
    let p99_ms = a
        .slo_p99
        .as_deref()
        .map(|slo| input::duration("--slo-p99", slo))
        .transpose()?
        .map(|d| d.as_secs_f64() * 1000.0);
    Ok(match (p99_ms, a.min_rps) {
        (_, Some(rps)) if rps > 0.0 => Objective::LeastMemory { rps, p99_ms },
        (_, Some(rps)) => return Err(InputError(format!("--min-rps must be positive, not {rps}"))),
        (Some(p99_ms), None) => Objective::ThroughputWithin { p99_ms },
        (None, None) => Objective::Throughput,
    })
}

/// FNV-1a: a stable digest of the target file (std's hasher may change between releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// The real measurements: a trial per point; a comparison's windows on servers kept running.
struct Trials<'a> {
    launcher: &'a mut dyn Launcher,
    opts: TrialOptions,
    kept: Kept,
    /// The share of the CPU others hold steadily, if they do: a window at it is not waited out.
    others: SteadyOthers,
}

impl Trials<'_> {
    /// The options of the next point: `repeats` windows, judged disturbed against the share of
    /// the CPU others have held steadily.
    fn next(&self, repeats: usize) -> TrialOptions {
        TrialOptions { repeats, steady_others: self.others.level(), ..self.opts.clone() }
    }

    /// `p`, once the others' CPU in its windows is learnt from.
    fn seen(&mut self, p: Point, opts: &TrialOptions) -> Point {
        self.others.saw(&p, opts);
        p
    }
}

impl Measure for Trials<'_> {
    fn measure(&mut self, step: &str, settings: &Settings, load: &Load, repeats: usize) -> Point {
        let opts = self.next(repeats);
        self.kept.make_room();
        let p = trial::run(self.launcher, step, settings, load, &opts);
        self.seen(p, &opts)
    }

    fn window(&mut self, step: &str, settings: &Settings, load: &Load) -> Point {
        let opts = self.next(1);
        let p = self.kept.window(self.launcher, step, settings, load, &opts);
        self.seen(p, &opts)
    }

    fn relaunch(&mut self, settings: &Settings) {
        self.kept.forget(settings);
    }

    fn estimate(&self, load: &Load) -> Duration {
        // Launch and warm-up, the repeats, the stop.
        Duration::from_secs(2) + load.idle_before + load.duration() * self.opts.repeats as u32
    }
}

/// Prints the tuner's progress on stderr (unless quiet) and saves every new point to the
/// journal (for --resume) and the history database, as soon as it is measured.
struct Progress<'a> {
    quiet: bool,
    journal: &'a mut Journal,
    store: Option<&'a mut (crate::store::Store, i64)>,
    /// The first save that failed: the run goes on, and ends with exit status 1.
    save_error: Option<anyhow::Error>,
}

impl Observer for Progress<'_> {
    fn measuring(&mut self, step: &str, elapsed: Duration, left: &Eta) {
        self.note(&format!("[{} elapsed, {}] measuring {step}", fmt_secs(elapsed), left.describe()));
    }

    fn measured(&mut self, p: &Point, reused: bool) {
        if reused {
            self.note(&format!("{}: reused from the interrupted run", p.step));
            return;
        }
        if let Err(e) = self.journal.append(p) {
            self.save_error.get_or_insert(e);
        }
        if let Some((s, id)) = &mut self.store
            && let Err(e) = s.save_point(*id, p)
        {
            self.save_error.get_or_insert(e);
        }
        self.note(&summary_line(p));
    }

    fn note(&mut self, line: &str) {
        if !self.quiet {
            eprintln!("tune: {line}");
        }
    }
}
