//! The history commands: `runs`, `show`, `compare`, `export`, `report` over the store.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use super::args::{CompareArgs, ExportArgs, ReportArgs, RunsArgs, ShowArgs};
use crate::input::InputError;
use crate::store::{self, Store, Stored};

fn open(db: Option<&Path>) -> anyhow::Result<Store> {
    Store::open(&store::default_path(db))
}

fn get(s: &Store, id: i64) -> anyhow::Result<Stored> {
    s.run(id)?.ok_or_else(|| InputError(format!("no run {id} in {}", s.path.display())).into())
}

/// `webtune runs`: lists the stored runs, filtered by kind, target and date.
pub fn runs(db: Option<&Path>, a: &RunsArgs) -> anyhow::Result<ExitCode> {
    let s = open(db)?;
    let rows = s.runs(a.kind.as_deref(), a.target.as_deref(), a.since.as_deref())?;
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
    let run = get(&s, a.id)?;
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

/// `webtune compare A B`: two stored runs' figures side by side.
pub fn compare(db: Option<&Path>, a: &CompareArgs) -> anyhow::Result<ExitCode> {
    let s = open(db)?;
    let rows =
        crate::report::compare::rows(&get(&s, a.before)?, &get(&s, a.after)?).map_err(|e| InputError(e.to_string()))?;
    super::emit(&rows, a.json, |rows, out| crate::report::compare::write_text(a.before, a.after, rows, out))?;
    Ok(ExitCode::SUCCESS)
}

/// `webtune export ID`: one stored run as CSV, or as JSON with --json.
pub fn export(db: Option<&Path>, a: &ExportArgs) -> anyhow::Result<ExitCode> {
    let s = open(db)?;
    let run = get(&s, a.id)?;
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
    let run = get(&s, a.id)?;
    let html = crate::report::html::render(&run);
    // Write beside, then rename: never a half-written report.
    let tmp = a.html.with_extension("html.part");
    std::fs::write(&tmp, html).and_then(|()| std::fs::rename(&tmp, &a.html)).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        anyhow::anyhow!("cannot write {}: {e}", a.html.display())
    })?;
    println!("{}", a.html.display());
    Ok(ExitCode::SUCCESS)
}
