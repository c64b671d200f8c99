//! Markdown, for pull requests and wikis (as hyperfine's --export-markdown): each report as
//! a heading and GitHub-flavoured tables.

use std::io::{self, Write};

use crate::aggregate::BenchReport;
use crate::aggregate::result::{Judged, LatencyStats};
use crate::report::compare::Comparison;
use crate::store::RunRow;
use crate::tune::{Outcome, Point};

/// A table cell: pipes escaped, line breaks as spaces.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// A table; a column of numbers (or "-") is aligned right, any other left.
fn table(out: &mut impl Write, header: &[&str], rows: &[Vec<String>]) -> io::Result<()> {
    let numeric = |i: usize| {
        rows.iter().all(|r| r.get(i).is_some_and(|c| c == "-" || c.trim_end_matches('%').parse::<f64>().is_ok()))
    };
    writeln!(out, "| {} |", header.join(" | "))?;
    writeln!(out, "|{}", (0..header.len()).map(|i| if numeric(i) { "---:|" } else { "---|" }).collect::<String>())?;
    for row in rows {
        writeln!(out, "| {} |", row.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | "))?;
    }
    Ok(())
}

fn ms(v: f64) -> String {
    format!("{v:.3}")
}

/// The bench report: what ran, the figures, the latency of each phase.
pub fn bench(r: &BenchReport, out: &mut impl Write) -> io::Result<()> {
    let res = &r.result;
    writeln!(out, "## webtune bench: {} {}", r.target.method, cell(&r.target.url))?;
    writeln!(out)?;
    let codes: Vec<String> = res.status.iter().map(|(c, n)| format!("{c}: {n}")).collect();
    let errors: Vec<String> = res.errors.iter().filter(|(_, n)| **n > 0).map(|(c, n)| format!("{c}: {n}")).collect();
    let rows = vec![
        vec!["Started".into(), r.started_at.clone()],
        vec!["Server".into(), r.target.server.clone().unwrap_or_else(|| "-".into())],
        vec!["Connections".into(), r.options.connections.to_string()],
        vec![
            "Duration (s)".into(),
            format!("{:.3}{}", res.duration_s, if r.interrupted { " (interrupted)" } else { "" }),
        ],
        vec!["Requests".into(), res.requests.to_string()],
        vec!["Succeeded".into(), res.succeeded.to_string()],
        vec!["Failed".into(), res.failed.to_string()],
        vec!["Errors".into(), if errors.is_empty() { "none".into() } else { errors.join(", ") }],
        vec!["Status codes".into(), if codes.is_empty() { "none".into() } else { codes.join(", ") }],
        vec!["Requests/s".into(), format!("{:.2}", res.requests_per_s)],
        vec!["Bytes received".into(), res.bytes.total.to_string()],
    ];
    table(out, &["", "value"], &rows)?;
    writeln!(out)?;
    let lat = &res.latency_ms;
    let rows: Vec<Vec<String>> = [("Total", &lat.total), ("First byte", &lat.first_byte), ("Connect", &lat.connect)]
        .into_iter()
        .map(|(name, s)| {
            let mut row = vec![name.to_string()];
            match s {
                Some(s) => row.extend(stats(s)),
                None => row.extend(std::iter::repeat_n("-".to_string(), 8)),
            }
            row
        })
        .collect();
    table(out, &["Latency (ms)", "min", "mean", "p50", "p75", "p90", "p99", "p99.9", "max"], &rows)?;
    for w in &r.warnings {
        writeln!(out, "\n> **Warning:** {}", cell(w))?;
    }
    thresholds(&r.thresholds, out)
}

fn stats(s: &LatencyStats) -> Vec<String> {
    [s.min, s.mean, s.p50, s.p75, s.p90, s.p99, s.p999, s.max].into_iter().map(ms).collect()
}

fn thresholds(judged: &[Judged], out: &mut impl Write) -> io::Result<()> {
    if judged.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    let rows: Vec<Vec<String>> = judged
        .iter()
        .map(|j| {
            let value = j.value.map_or("not measured".into(), |v| format!("{v:.3} {}", j.unit));
            vec![j.expr.clone(), (if j.pass { "pass" } else { "FAIL" }).into(), value]
        })
        .collect();
    table(out, &["--fail-if", "verdict", "measured"], &rows)
}

/// Two runs compared.
pub fn comparison(c: &Comparison, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "## webtune compare: run {} -> run {}", c.before, c.after)?;
    writeln!(out)?;
    let rows: Vec<Vec<String>> = c
        .rows
        .iter()
        .map(|r| {
            vec![
                r.metric.clone(),
                format!("{:.2}", r.before),
                format!("{:.2}", r.after),
                r.change_pct.map_or("-".into(), |p| format!("{p:+.1}%")),
                r.interval_pct.map_or("-".into(), |(lo, hi)| format!("[{lo:+.1}%, {hi:+.1}%]")),
                match (r.beyond_spread, r.samples) {
                    (Some(true), _) => "beyond the noise".into(),
                    (Some(false), _) => "within the noise".into(),
                    (None, Some(_)) => "not known".into(),
                    (None, None) => "-".into(),
                },
            ]
        })
        .collect();
    table(out, &["metric", "before", "after", "change", "99% interval", "verdict"], &rows)?;
    thresholds(&c.thresholds, out)
}

/// A tune run's outcome: the recommendation, its evidence, every point.
pub fn outcome(o: &Outcome, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "## webtune tune: {}, objective {}", o.strategy, cell(&o.objective))?;
    if let Some(why) = &o.stopped {
        writeln!(out, "\nStopped early ({}): the recommendation is the best found so far.", cell(why))?;
    }
    writeln!(out, "\n### Recommended configuration\n\n```\n{}\n```\n", o.config.trim_end())?;
    let rows: Vec<Vec<String>> =
        o.evidence.iter().map(|e| vec![e.knob.clone(), e.value.clone(), e.why.clone()]).collect();
    table(out, &["knob", "value", "evidence"], &rows)?;
    writeln!(out, "\n### Points measured\n")?;
    points_table(&o.points, out)
}

/// A stored tune run: its outcome, or (cut short) the points it measured.
pub fn tune(row: &RunRow, outcome: Option<&Outcome>, points: &[Point], out: &mut impl Write) -> io::Result<()> {
    match outcome {
        Some(o) => self::outcome(o, out),
        None => {
            writeln!(out, "## webtune tune {} on {} ({})\n", row.id, cell(&row.target), row.status)?;
            points_table(points, out)
        }
    }
}

fn points_table(points: &[Point], out: &mut impl Write) -> io::Result<()> {
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            let (rps, p99) = if p.ok() { (format!("{:.1}", p.rps()), ms(p.p99())) } else { ("-".into(), "-".into()) };
            let pss = p.memory().map_or("-".into(), |m| format!("{:.1}", m.pss_total_kib as f64 / 1024.0));
            vec![p.step.clone(), p.settings.label(), rps, p99, pss, p.cause().unwrap_or("").to_string()]
        })
        .collect();
    table(out, &["step", "settings", "requests/s", "p99 (ms)", "server PSS (MiB)", "failed"], &rows)
}

/// The stored runs.
pub fn runs(rows: &[RunRow], out: &mut impl Write) -> io::Result<()> {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.id.to_string(),
                r.kind.clone(),
                r.started_at.clone(),
                r.status.clone(),
                r.target.clone(),
                r.summary.clone(),
            ]
        })
        .collect();
    table(out, &["id", "kind", "started", "status", "target", "summary"], &rows)
}
