//! The history commands: `runs`, `show`, `compare`, `export`, `report` over the store.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use super::args::{CompareArgs, ExportArgs, ReportArgs, RunsArgs, ShowArgs};
use super::gate;
use super::output::{OutputFile, stdout_format};
use crate::input::InputError;
use crate::report::compare::Comparison;
use crate::report::format::Runs;
use crate::report::{Format, Report};
use crate::store::{self, RunFilter, RunRef, Store, Stored};

fn open(db: Option<&Path>) -> anyhow::Result<Store> {
    Store::open(&store::default_path(db))
}

/// The run a reference names, and its id.
fn get(s: &Store, run: RunRef) -> anyhow::Result<(i64, Stored)> {
    let id = s.resolve(run)?;
    let stored = s.run(id)?.ok_or_else(|| InputError(format!("no run {id} in {}", s.path.display())))?;
    Ok((id, stored))
}

/// `webtune runs`: lists the stored runs, filtered by kind, target and time.
pub fn runs(db: Option<&Path>, a: &RunsArgs) -> anyhow::Result<ExitCode> {
    // Bad input is refused before the database is opened (or created).
    let now = std::time::SystemTime::now();
    let time = |flag: &str, t: &Option<String>| t.as_deref().map(|t| crate::input::instant(flag, t, now)).transpose();
    let filter = RunFilter {
        kind: a.kind.as_deref(),
        target: a.target.as_deref(),
        since: time("--since", &a.since)?,
        until: time("--until", &a.until)?,
    };
    let files = a.output.files::<Runs>()?;
    let s = open(db)?;
    let rows = Runs::new(s.runs(&filter)?);
    written(&rows, stdout_format(a.json), &files)
}

/// `webtune show ID`: one stored run as text, or as JSON with --json.
pub fn show(db: Option<&Path>, a: &ShowArgs) -> anyhow::Result<ExitCode> {
    let files = a.output.files::<Stored>()?;
    let s = open(db)?;
    let (_, run) = get(&s, a.id)?;
    if a.diff {
        let Stored::Tune { outcome: Some(o), .. } = &run else {
            return Err(InputError(format!("run {}: --diff is for a finished tune", a.id)).into());
        };
        if o.diffs.is_empty() {
            eprintln!("run {}: none of the user's configuration files changes", a.id);
        }
        super::print::write_stdout(|out| o.diffs.values().try_for_each(|d| out.write_all(d.as_bytes())))?;
        return Ok(ExitCode::SUCCESS);
    }
    written(&run, stdout_format(a.json), &files)
}

/// `webtune compare A B`: two stored runs' figures side by side, and the `--fail-if` gates
/// between them (exit 3 when one fails).
pub fn compare(db: Option<&Path>, a: &CompareArgs) -> anyhow::Result<ExitCode> {
    let gates = super::thresholds::thresholds(&a.fail_if)?;
    let files = a.output.files::<Comparison>()?;
    let s = open(db)?;
    let ((before_id, before), (after_id, after)) = (get(&s, a.before)?, get(&s, a.after)?);
    let kind = |s: &Stored| if matches!(s, Stored::Bench { .. }) { "bench" } else { "tune" };
    if kind(&before) != kind(&after) {
        let (b, f) = (kind(&before), kind(&after));
        return Err(InputError(format!(
            "compare two bench runs or two tune runs: run {before_id} is a {b} run, run {after_id} a {f} run \
             (webtune compare {f}~1 {f}: the last two {f} runs)"
        ))
        .into());
    }
    let rows = crate::report::compare::rows(&before, &after).map_err(|e| InputError(e.to_string()))?;
    let thresholds = match (gate::figures(&before), gate::figures(&after)) {
        (Some(b), Some(f)) => gates.iter().map(|g| g.judge_between(b, f)).collect::<Result<_, _>>()?,
        // rows() has refused runs without figures already.
        _ => Vec::new(),
    };
    let comparison = Comparison::new(before_id, after_id, rows, thresholds);
    let code = written(&comparison, stdout_format(a.json), &files)?;
    if code == ExitCode::SUCCESS && !gate::all_pass(&comparison.thresholds) {
        return Ok(ExitCode::from(super::exit::THRESHOLD_FAILED));
    }
    Ok(code)
}

/// `webtune export ID`: one stored run on stdout as JSON, CSV or markdown, and in files.
pub fn export(db: Option<&Path>, a: &ExportArgs) -> anyhow::Result<ExitCode> {
    let files = a.output.files::<Stored>()?;
    let format = a.format.0;
    if format.is_none() && files.is_empty() {
        let flags: Vec<String> = Format::exported().map(|f| format!("--{}", f.name())).collect();
        return Err(InputError(format!("export: give {} or -o FILE", flags.join(", "))).into());
    }
    let s = open(db)?;
    let (_, run) = get(&s, a.id)?;
    match format {
        Some(format) => written(&run, format, &files),
        None => written_files(&run, &files),
    }
}

/// Prints `report` on stdout in `format`, then writes the files: exit 1 when one cannot be
/// written (the others are).
fn written<R: Report>(report: &R, format: Format, files: &[OutputFile]) -> anyhow::Result<ExitCode> {
    super::print::emit(report, format)?;
    written_files(report, files)
}

fn written_files<R: Report>(report: &R, files: &[OutputFile]) -> anyhow::Result<ExitCode> {
    match super::output::write_files(report, files) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("webtune: {}", super::print::one_line(&e));
            Ok(ExitCode::from(1))
        }
    }
}

/// `webtune report ID [--html FILE]`: writes one stored run as an HTML page (webtune-ID.html
/// by default) and prints its path.
pub fn report(db: Option<&Path>, a: &ReportArgs) -> anyhow::Result<ExitCode> {
    let s = open(db)?;
    let (id, run) = get(&s, a.id)?;
    let html = crate::report::html::render(&run);
    let path = a.html.clone().unwrap_or_else(|| std::path::PathBuf::from(format!("webtune-{id}.html")));
    crate::safe_write::replace(&path, html.as_bytes())?;
    super::print::write_stdout(|o| writeln!(o, "{}", path.display()))?;
    Ok(ExitCode::SUCCESS)
}
