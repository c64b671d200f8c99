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
            let spread = |p: &Point| crate::stats::spread(&p.samples.iter().map(|s| s.rps).collect::<Vec<_>>());
            let mem = |p: &Point| p.memory().map_or(f64::NAN, |m| m.pss_total_kib as f64);
            vec![
                row("requests/s", x.rps(), y.rps(), Some(spread(x).max(spread(y)))),
                row("p99 (ms)", x.p99(), y.p99(), None),
                row("server PSS (KiB)", mem(x), mem(y), None),
            ]
        }
        _ => return Err(Incomparable::Kinds),
    })
}

/// The rows as a table, then the gates' verdicts.
pub fn write_text(c: &Comparison, out: &mut impl Write) -> io::Result<()> {
    let (before, after, rows) = (c.before, c.after, &c.rows);
    writeln!(out, "Run {before} -> run {after}")?;
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
    super::text::thresholds(&c.thresholds, out)
}
