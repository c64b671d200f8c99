//! The history commands: `runs`, `show`, `compare`, `export`, `report` over the store.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use serde::Serialize;

use super::args::{CompareArgs, ExportArgs, ReportArgs, RunsArgs, ShowArgs};
use crate::input::InputError;
use crate::store::{self, Store, Stored};

fn open(db: Option<&Path>) -> anyhow::Result<Store> {
    Store::open(&store::default_path(db))
}

fn get(s: &Store, id: i64) -> anyhow::Result<Stored> {
    s.run(id)?.ok_or_else(|| InputError(format!("no run {id} in {}", s.path.display())).into())
}

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

/// One compared metric.
#[derive(Serialize)]
struct Row {
    metric: String,
    before: f64,
    after: f64,
    change_pct: Option<f64>,
    /// Whether the change is larger than the spread measured within each run (None when the
    /// runs do not say how much this metric varies).
    beyond_spread: Option<bool>,
}

fn row(metric: &str, before: f64, after: f64, spread: Option<f64>) -> Row {
    Row {
        metric: metric.into(),
        before,
        after,
        change_pct: (before != 0.0).then(|| (after - before) / before * 100.0),
        beyond_spread: spread.map(|s| (after - before).abs() > s),
    }
}

pub fn compare(db: Option<&Path>, a: &CompareArgs) -> anyhow::Result<ExitCode> {
    let s = open(db)?;
    let rows = match (get(&s, a.before)?, get(&s, a.after)?) {
        (Stored::Bench { report: b, .. }, Stored::Bench { report: f, .. }) => {
            // Throughput varies second by second: the larger stdev of the per-second rates.
            let spread = b.reply_rate.as_ref().zip(f.reply_rate.as_ref()).map(|(x, y)| x.stdev.max(y.stdev));
            let lat = |r: &crate::aggregate::BenchReport, f: fn(&crate::aggregate::result::LatencyStats) -> f64| {
                r.result.latency_ms.total.as_ref().map_or(f64::NAN, f)
            };
            vec![
                row("requests/s", b.result.requests_per_s, f.result.requests_per_s, spread),
                row("latency mean (ms)", lat(&b, |l| l.mean), lat(&f, |l| l.mean), None),
                row("latency p50 (ms)", lat(&b, |l| l.p50), lat(&f, |l| l.p50), None),
                row("latency p99 (ms)", lat(&b, |l| l.p99), lat(&f, |l| l.p99), None),
                row("failed", b.result.failed as f64, f.result.failed as f64, None),
                row(
                    "client CPU µs/request",
                    b.client_cpu.us_per_request.unwrap_or(f64::NAN),
                    f.client_cpu.us_per_request.unwrap_or(f64::NAN),
                    None,
                ),
            ]
        }
        (Stored::Tune { points: b, outcome: ob, .. }, Stored::Tune { points: f, outcome: of, .. }) => {
            // Each experiment's best: its recommendation's point.
            let best = |points: &[crate::tune::Point], o: &Option<Box<crate::tune::Outcome>>| {
                o.as_ref()
                    .and_then(|o| {
                        o.steps.iter().rev().find(|s| s.adopted).map(|s| s.after.clone()).or(o.baseline.clone())
                    })
                    .or_else(|| points.iter().find(|p| p.ok()).cloned())
            };
            let (Some(x), Some(y)) = (best(&b, &ob), best(&f, &of)) else {
                return Err(InputError("a tune run without a successful point cannot be compared".into()).into());
            };
            let spread =
                |p: &crate::tune::Point| crate::stats::spread(&p.samples.iter().map(|s| s.rps).collect::<Vec<_>>());
            let mem = |p: &crate::tune::Point| p.memory().map_or(f64::NAN, |m| m.pss_total_kib as f64);
            vec![
                row("requests/s", x.rps(), y.rps(), Some(spread(&x).max(spread(&y)))),
                row("p99 (ms)", x.p99(), y.p99(), None),
                row("server PSS (KiB)", mem(&x), mem(&y), None),
            ]
        }
        _ => return Err(InputError("compare two bench runs or two tune runs".into()).into()),
    };
    super::emit(&rows, a.json, |rows, out| {
        writeln!(out, "Run {} -> run {}", a.before, a.after)?;
        writeln!(out, "  {:<24} {:>12} {:>12} {:>9}  beyond the spread", "metric", "before", "after", "change")?;
        for r in rows {
            let change = r.change_pct.map_or(String::new(), |c| format!("{c:+.1}%"));
            let beyond = match r.beyond_spread {
                Some(true) => "yes",
                Some(false) => "no (within the noise)",
                None => "-",
            };
            writeln!(out, "  {:<24} {:>12.2} {:>12.2} {change:>9}  {beyond}", r.metric, r.before, r.after)?;
        }
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

pub fn export(db: Option<&Path>, a: &ExportArgs) -> anyhow::Result<ExitCode> {
    let s = open(db)?;
    let run = get(&s, a.id)?;
    if a.json {
        super::emit(&run, true, |_, _| Ok(()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    match &run {
        Stored::Bench { row, report } => {
            let r = &report.result;
            let l = r.latency_ms.total.as_ref();
            let f = |g: fn(&crate::aggregate::result::LatencyStats) -> f64| {
                l.map_or(String::new(), |l| format!("{:.3}", g(l)))
            };
            writeln!(
                out,
                "id,started_at,url,connections,requests,succeeded,failed,requests_per_s,mean_ms,p50_ms,p90_ms,p99_ms,p999_ms,max_ms"
            )?;
            writeln!(
                out,
                "{},{},{},{},{},{},{},{:.3},{},{},{},{},{},{}",
                row.id,
                row.started_at,
                csv_field(&row.target),
                report.options.connections,
                r.requests,
                r.succeeded,
                r.failed,
                r.requests_per_s,
                f(|l| l.mean),
                f(|l| l.p50),
                f(|l| l.p90),
                f(|l| l.p99),
                f(|l| l.p999),
                f(|l| l.max)
            )?;
        }
        Stored::Tune { points, .. } => {
            writeln!(out, "step,status,cause,requests_per_s,p99_ms,worker_uss_max_kib,pss_total_kib,settings")?;
            for p in points {
                let m = p.memory();
                writeln!(
                    out,
                    "{},{},{},{},{},{},{},{}",
                    csv_field(&p.step),
                    if p.ok() { "ok" } else { "failed" },
                    csv_field(p.cause().unwrap_or("")),
                    if p.ok() { format!("{:.3}", p.rps()) } else { String::new() },
                    if p.ok() { format!("{:.3}", p.p99()) } else { String::new() },
                    m.map_or(String::new(), |m| m.worker_uss_max_kib.to_string()),
                    m.map_or(String::new(), |m| m.pss_total_kib.to_string()),
                    csv_field(&p.settings.label())
                )?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

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
