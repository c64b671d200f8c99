//! `webtune compare`: two stored runs side by side, each metric before and after, its change,
//! and whether the change is larger than the spread the runs measured.

use std::io::{self, Write};

use serde::Serialize;

use crate::aggregate::BenchReport;
use crate::aggregate::result::{Judged, LatencyStats};
use crate::store::Stored;
use crate::tune::Point;

/// The `schema` value written into every comparison, naming its layout.
pub const SCHEMA_ID: &str = "webtune.compare.v1";

/// Two runs compared: `webtune compare`'s result, as text or JSON.
#[derive(Debug, Serialize)]
pub struct Comparison {
    /// Always SCHEMA_ID for this layout.
    pub schema: &'static str,
    /// The runs' ids.
    pub before: i64,
    pub after: i64,
    pub rows: Vec<Row>,
    /// The `--fail-if` gates judged between the runs, in the order given.
    pub thresholds: Vec<Judged>,
}

impl Comparison {
    /// The comparison of stored runs `before` and `after`.
    pub fn new(before: i64, after: i64, rows: Vec<Row>, thresholds: Vec<Judged>) -> Comparison {
        Comparison { schema: SCHEMA_ID, before, after, rows, thresholds }
    }
}

/// One compared metric.
#[derive(Debug, Serialize)]
pub struct Row {
    pub metric: String,
    pub before: f64,
    pub after: f64,
    pub change_pct: Option<f64>,
    /// Whether the change is larger than the spread measured within each run (None when the
    /// runs do not say how much this metric varies).
    pub beyond_spread: Option<bool>,
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

/// Why two runs cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum Incomparable {
    #[error("compare two bench runs or two tune runs")]
    Kinds,
    #[error("a tune run without a successful point cannot be compared")]
    NoPoint,
}

/// The rows comparing `before` with `after`: two bench runs, or two tune runs (each by the
/// point that stands for its recommendation).
pub fn rows(before: &Stored, after: &Stored) -> Result<Vec<Row>, Incomparable> {
    Ok(match (before, after) {
        (Stored::Bench { report: b, .. }, Stored::Bench { report: f, .. }) => {
            // Throughput varies second by second: the larger stdev of the per-second rates.
            let spread = b.reply_rate.as_ref().zip(f.reply_rate.as_ref()).map(|(x, y)| x.stdev.max(y.stdev));
            let lat =
                |r: &BenchReport, f: fn(&LatencyStats) -> f64| r.result.latency_ms.total.as_ref().map_or(f64::NAN, f);
            vec![
                row("requests/s", b.result.requests_per_s, f.result.requests_per_s, spread),
                row("latency mean (ms)", lat(b, |l| l.mean), lat(f, |l| l.mean), None),
                row("latency p50 (ms)", lat(b, |l| l.p50), lat(f, |l| l.p50), None),
                row("latency p99 (ms)", lat(b, |l| l.p99), lat(f, |l| l.p99), None),
                row("failed", b.result.failed as f64, f.result.failed as f64, None),
                row(
                    "client CPU µs/request",
                    b.client_cpu.us_per_request.unwrap_or(f64::NAN),
                    f.client_cpu.us_per_request.unwrap_or(f64::NAN),
                    None,
                ),
            ]
        }
        (Stored::Tune { .. }, Stored::Tune { .. }) => {
            let (Some(x), Some(y)) = (before.standing_point(), after.standing_point()) else {
                return Err(Incomparable::NoPoint);
            };
            // One repeat has no range: a run of one says nothing of the noise.
            let spread = |p: &Point| (p.samples.len() >= 2).then(|| p.rps_range());
            let mem = |p: &Point| p.memory().map_or(f64::NAN, |m| m.pss_total_kib as f64);
            let mut rows = vec![
                row("requests/s", x.rps(), y.rps(), spread(x).zip(spread(y)).map(|(a, b)| a.max(b))),
                row("p99 (ms)", x.p99(), y.p99(), None),
                row("server PSS (KiB)", mem(x), mem(y), None),
            ];
            // Runs measured at different times read their binaries' pages shared with whatever
            // else ran then: the pages only the server has are what a change of it changed.
            if crate::tune::point::own_pages_read(&[x, y]) {
                let own = |p: &Point| p.memory().and_then(|m| m.own_pss_kib).map_or(f64::NAN, |k| k as f64);
                rows.push(row("server PSS, own pages (KiB)", own(x), own(y), None));
            }
            rows
        }
        _ => return Err(Incomparable::Kinds),
    })
}

/// The rows as a table, then the gates' verdicts.
pub fn write_text(c: &Comparison, out: &mut impl Write) -> io::Result<()> {
    let (before, after, rows) = (c.before, c.after, &c.rows);
    writeln!(out, "Run {before} -> run {after}")?;
    writeln!(out, "  {:<28} {:>12} {:>12} {:>9}  beyond the spread", "metric", "before", "after", "change")?;
    for r in rows {
        let change = r.change_pct.map_or(String::new(), |c| format!("{c:+.1}%"));
        let beyond = match r.beyond_spread {
            Some(true) => "yes",
            Some(false) => "no (within the noise)",
            None => "-",
        };
        writeln!(out, "  {:<28} {:>12.2} {:>12.2} {change:>9}  {beyond}", r.metric, r.before, r.after)?;
    }
    super::text::thresholds(&c.thresholds, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::RunRow;
    use crate::tune::point::MemUse;

    fn tune_run(total: u64, own: Option<u64>) -> Stored {
        let mut p = crate::tune::point::tests::point(&[100.0, 100.0]);
        for s in &mut p.samples {
            s.memory = Some(MemUse { workers: 2, pss_total_kib: total, own_pss_kib: own, ..MemUse::default() });
        }
        let row = RunRow {
            id: 1,
            kind: "tune".into(),
            started_at: String::new(),
            target: String::new(),
            summary: String::new(),
            status: "done".into(),
        };
        Stored::Tune { row, strategy: "one-at-a-time".into(), points: vec![p], outcome: None }
    }

    #[test]
    fn tune_runs_are_compared_by_their_own_pages_too_when_both_read_them() {
        let both = rows(&tune_run(7844, Some(2100)), &tune_run(6476, Some(2110))).unwrap();
        let metrics: Vec<_> = both.iter().map(|r| (r.metric.as_str(), r.before, r.after)).collect();
        assert_eq!(
            metrics[2..],
            [("server PSS (KiB)", 7844.0, 6476.0), ("server PSS, own pages (KiB)", 2100.0, 2110.0)]
        );
        // One run stored before the split (or on an older kernel): the whole PSS alone.
        let one = rows(&tune_run(7844, None), &tune_run(6476, Some(2110))).unwrap();
        assert_eq!(one.last().map(|r| r.metric.as_str()), Some("server PSS (KiB)"));
    }

    #[test]
    fn a_tune_run_of_one_repeat_cannot_say_a_change_is_beyond_its_noise() {
        let (two, mut one) = (tune_run(7844, None), tune_run(7844, None));
        if let Stored::Tune { points, .. } = &mut one {
            points[0].samples.truncate(1);
        }
        assert_eq!(rows(&two, &two).unwrap()[0].beyond_spread, Some(false));
        assert_eq!(rows(&two, &one).unwrap()[0].beyond_spread, None);
    }
}
