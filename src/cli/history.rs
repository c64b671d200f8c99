//! The history commands: `runs`, `show`, `compare`, `export`, `report` over the store.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use super::args::{CompareArgs, ExportArgs, ReportArgs, RunsArgs, ShowArgs};
use crate::gate;
use crate::input::InputError;
use crate::report::compare::Comparison;
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
    let s = open(db)?;
    let rows = s.runs(&filter)?;
    super::emit(&rows, a.json, |rows, out| {
        writeln!(out, "{:>5}  {:<5}  {:<24}  {:<11}  {:<40}  summary", "id", "kind", "started", "status", "target")?;
        for r in rows {
            writeln!(
                out,
                "{:>5}  {:<5}  {:<24}  {:<11}  {:<40}  {}",
                r.id, r.kind, r.started_at, r.status, r.target, r.summary
            )?;
        }
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `webtune show ID`: one stored run as text, or as JSON with --json.
pub fn show(db: Option<&Path>, a: &ShowArgs) -> anyhow::Result<ExitCode> {
    let s = open(db)?;
    let (_, run) = get(&s, a.id)?;
    if a.diff {
        let Stored::Tune { outcome: Some(o), .. } = &run else {
            return Err(InputError(format!("run {}: --diff is for a finished tune", a.id)).into());
        };
        if o.diffs.is_empty() {
            eprintln!("run {}: none of the user's configuration files changes", a.id);
        }
        super::write_stdout(|out| o.diffs.values().try_for_each(|d| out.write_all(d.as_bytes())))?;
        return Ok(ExitCode::SUCCESS);
    }
    super::emit(&run, a.json, |run, out| match run {
        Stored::Bench { report, .. } => crate::report::text::write(report, out),
        Stored::Tune { row, points, outcome, .. } => {
            writeln!(out, "tune {} on {} ({}), started {}", row.id, row.target, row.status, row.started_at)?;
            match outcome {
                Some(o) => write!(out, "{}", crate::tune::table::report(o)),
                None => {
                    for p in points {
                        writeln!(
                            out,
                            "  {}: {}",
                            p.step,
                            p.cause().map_or(format!("{:.1} req/s, p99 {:.2} ms", p.rps(), p.p99()), |c| format!(
                                "failed: {c}"
                            ))
                        )?;
                    }
                    Ok(())
                }
            }
        }
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `webtune compare A B`: two stored runs' figures side by side, and the `--fail-if` gates
/// between them (exit 3 when one fails).
pub fn compare(db: Option<&Path>, a: &CompareArgs) -> anyhow::Result<ExitCode> {
    let gates = super::thresholds(&a.fail_if)?;
    let s = open(db)?;
    let ((before_id, before), (after_id, after)) = (get(&s, a.before)?, get(&s, a.after)?);
    let rows = crate::report::compare::rows(&before, &after).map_err(|e| InputError(e.to_string()))?;
    let thresholds = match (gate::figures(&before), gate::figures(&after)) {
        (Some(b), Some(f)) => gates.iter().map(|g| g.judge_between(b, f)).collect::<Result<_, _>>()?,
        // rows() has refused runs without figures already.
        _ => Vec::new(),
    };
    let comparison = Comparison { before: before_id, after: after_id, rows, thresholds };
    super::emit(&comparison, a.json, crate::report::compare::write_text)?;
    if !gate::all_pass(&comparison.thresholds) {
        return Ok(ExitCode::from(super::THRESHOLD_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

/// `webtune export ID`: one stored run as CSV, or as JSON with --json.
pub fn export(db: Option<&Path>, a: &ExportArgs) -> anyhow::Result<ExitCode> {
    let s = open(db)?;
    let (_, run) = get(&s, a.id)?;
    if a.json {
        super::emit(&run, true, |_, _| Ok(()))?;
    } else {
        super::emit(&run, false, crate::report::csv::write)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `webtune report ID --html FILE`: writes one stored run as an HTML page and prints its path.
pub fn report(db: Option<&Path>, a: &ReportArgs) -> anyhow::Result<ExitCode> {
    let s = open(db)?;
    let (_, run) = get(&s, a.id)?;
    let html = crate::report::html::render(&run);
    crate::output::replace(&a.html, html.as_bytes())?;
    super::write_stdout(|o| writeln!(o, "{}", a.html.display()))?;
    Ok(ExitCode::SUCCESS)
}
