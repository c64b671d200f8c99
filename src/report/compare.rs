//! `webtune compare`: two stored runs side by side, each metric before and after, its change,
//! and for throughput the change's 99% interval from the spread each run measured (its
//! one-second rates, or a tune's windows), as hyperfine gives "1.52 ± 0.04 times faster".

use std::io::{self, Write};

use serde::Serialize;

use crate::aggregate::BenchReport;
use crate::aggregate::result::{Judged, LatencyStats};
use crate::stats::Summary;
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
    /// Whether the change's 99% interval excludes zero (None when the runs do not say how
    /// much this metric varies: fewer than two measurements each).
    pub beyond_spread: Option<bool>,
    /// The change's 99% interval, % (low, high), when the runs measured their spread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_pct: Option<(f64, f64)>,
    /// The measurements each run's spread comes from (before, after), for a metric that has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<(usize, usize)>,
    /// What those measurements are ("one-second rates", "windows").
    #[serde(skip)]
    pub samples_are: &'static str,
}

/// The confidence the interval is given at.
pub const LEVEL: f64 = 0.99;

/// A metric without a measured spread.
fn row(metric: &str, before: f64, after: f64) -> Row {
    Row {
        metric: metric.into(),
        before,
        after,
        change_pct: (before != 0.0).then(|| (after - before) / before * 100.0),
        beyond_spread: None,
        interval_pct: None,
        samples: None,
        samples_are: "",
    }
}

/// A metric whose runs measured its spread: `what` each run's measurements are.
fn spread_row(metric: &str, before: f64, after: f64, spread: (Summary, Summary), what: &'static str) -> Row {
    let effect = crate::stats::unpaired_effect(spread.0, spread.1, LEVEL);
    Row {
        beyond_spread: effect.map(|e| e.low_pct > 0.0 || e.high_pct < 0.0),
        interval_pct: effect.map(|e| (e.low_pct, e.high_pct)),
        samples: Some((spread.0.n, spread.1.n)),
        samples_are: what,
        ..row(metric, before, after)
    }
}

/// A bench run's one-second rates: kept since the report kept them, else from their summary
/// (its deviation is the population's).
fn per_second(r: &BenchReport) -> Summary {
    match &r.reply_rate {
        Some(rate) if !rate.per_second.is_empty() => Summary::of(&rate.per_second),
        Some(rate) => {
            let n = rate.samples;
            let sd = if n > 1 { rate.stdev * (n as f64 / (n - 1) as f64).sqrt() } else { 0.0 };
            Summary { mean: rate.mean, sd, n }
        }
        None => Summary { mean: r.result.requests_per_s, sd: 0.0, n: 1 },
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
            // Throughput varies second by second: each run's one-second rates are its spread.
            let spread = (per_second(b), per_second(f));
            let lat =
                |r: &BenchReport, f: fn(&LatencyStats) -> f64| r.result.latency_ms.total.as_ref().map_or(f64::NAN, f);
            vec![
                spread_row("requests/s", b.result.requests_per_s, f.result.requests_per_s, spread, "one-second rates"),
                row("latency mean (ms)", lat(b, |l| l.mean), lat(f, |l| l.mean)),
                row("latency p50 (ms)", lat(b, |l| l.p50), lat(f, |l| l.p50)),
                row("latency p99 (ms)", lat(b, |l| l.p99), lat(f, |l| l.p99)),
                row("failed", b.result.failed as f64, f.result.failed as f64),
                row(
                    "client CPU µs/request",
                    b.client_cpu.us_per_request.unwrap_or(f64::NAN),
                    f.client_cpu.us_per_request.unwrap_or(f64::NAN),
                ),
            ]
        }
        (Stored::Tune { .. }, Stored::Tune { .. }) => {
            let (Some(x), Some(y)) = (before.standing_point(), after.standing_point()) else {
                return Err(Incomparable::NoPoint);
            };
            // Each window's rate: one window says nothing of the noise.
            let windows = |p: &Point| Summary::of(&p.samples.iter().map(|s| s.rps).collect::<Vec<_>>());
            let mem = |p: &Point| p.memory().map_or(f64::NAN, |m| m.pss_total_kib as f64);
            let mut rows = vec![
                spread_row("requests/s", x.rps(), y.rps(), (windows(x), windows(y)), "windows"),
                row("p99 (ms)", x.p99(), y.p99()),
                row("server PSS (KiB)", mem(x), mem(y)),
            ];
            // Runs measured at different times read their binaries' pages shared with whatever
            // else ran then: the pages only the server has are what a change of it changed.
            if crate::tune::point::own_pages_read(&[x, y]) {
                let own = |p: &Point| p.memory().and_then(|m| m.own_pss_kib).map_or(f64::NAN, |k| k as f64);
                rows.push(row("server PSS, own pages (KiB)", own(x), own(y)));
            }
            rows
        }
        _ => return Err(Incomparable::Kinds),
    })
}

/// The rows as a table, what the interval says in words, then the gates' verdicts.
pub fn write_text(c: &Comparison, out: &mut impl Write) -> io::Result<()> {
    let (before, after, rows) = (c.before, c.after, &c.rows);
    writeln!(out, "Run {before} -> run {after}")?;
    writeln!(
        out,
        "  {:<28} {:>12} {:>12} {:>9}  {:<20}  verdict",
        "metric", "before", "after", "change", "99% interval"
    )?;
    for r in rows {
        let change = r.change_pct.map_or(String::new(), |c| format!("{c:+.1}%"));
        let interval = r.interval_pct.map_or(String::new(), |(lo, hi)| format!("[{}, {}]", pct(lo), pct(hi)));
        let verdict = match (r.beyond_spread, r.samples) {
            (Some(true), _) => "beyond the noise",
            (Some(false), _) => "within the noise",
            (None, Some(_)) => "not known",
            (None, None) => "",
        };
        let line =
            format!("  {:<28} {:>12.2} {:>12.2} {change:>9}  {interval:<20}  {verdict}", r.metric, r.before, r.after);
        writeln!(out, "{}", line.trim_end())?;
    }
    for r in rows.iter().filter(|r| r.samples.is_some()) {
        explain(c, r, out)?;
    }
    super::text::thresholds(&c.thresholds, out)
}

/// "+5.1%", a bound past +999% "+999%+".
fn pct(x: f64) -> String {
    if x > 999.0 { "+999%+".into() } else { format!("{x:+.1}%") }
}

/// A metric with a spread in words: the ratio with its ± as hyperfine says it, and what the
/// verdict means; or why there is no interval.
fn explain(c: &Comparison, r: &Row, out: &mut impl Write) -> io::Result<()> {
    let Some((nb, na)) = r.samples else { return Ok(()) };
    writeln!(out)?;
    match r.interval_pct {
        Some((lo, hi)) => {
            let ratio = |p: f64| 1.0 + p / 100.0;
            let mid = r.change_pct.map_or((ratio(lo) + ratio(hi)) / 2.0, ratio);
            let (after, before, metric) = (c.after, c.before, &r.metric);
            if hi > 999.0 || lo < -99.0 {
                writeln!(
                    out,
                    "Run {after} has {mid:.2} times the {metric} of run {before}; the 99% interval is too wide to bound it."
                )?;
            } else {
                let half = (ratio(hi) - ratio(lo)) / 2.0;
                writeln!(
                    out,
                    "Run {after} has {mid:.2} ± {half:.2} times the {metric} of run {before} (99% interval)."
                )?;
            }
            writeln!(
                out,
                "The interval is where the change lies with 99% confidence, from the spread of each run's {} \
                 ({nb} and {na}); \"beyond the noise\": it excludes 0%; \"within the noise\": it holds 0%, and \
                 the runs cannot tell this change from their own variation.",
                r.samples_are
            )
        }
        None => writeln!(
            out,
            "{}: no interval: runs {} and {} measured {nb} and {na} {}; two or more each are needed to know the \
             noise (bench -d 5s or longer; tune --repeats 2 or more).",
            r.metric, c.before, c.after, r.samples_are
        ),
    }
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
        assert_eq!(rows(&two, &one).unwrap()[0].samples, Some((2, 1)));
    }

    #[test]
    fn the_text_gives_the_change_with_its_interval_and_says_what_noise_means() {
        let spread = |rates: &[f64]| Summary::of(rates);
        let rps = spread_row(
            "requests/s",
            1000.0,
            1100.0,
            (spread(&[1000.0, 1010.0, 990.0, 1005.0, 995.0]), spread(&[1100.0, 1110.0, 1090.0, 1105.0, 1095.0])),
            "one-second rates",
        );
        let c = Comparison::new(3, 4, vec![rps, row("latency p99 (ms)", 2.0, 1.5)], Vec::new());
        let mut out = Vec::new();
        write_text(&c, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "Run 3 -> run 4\n  \
             metric                             before        after    change  99% interval          verdict\n  \
             requests/s                        1000.00      1100.00    +10.0%  [+8.2%, +11.9%]       beyond the noise\n  \
             latency p99 (ms)                     2.00         1.50    -25.0%\n\
             \n\
             Run 4 has 1.10 ± 0.02 times the requests/s of run 3 (99% interval).\n\
             The interval is where the change lies with 99% confidence, from the spread of each run's one-second \
             rates (5 and 5); \"beyond the noise\": it excludes 0%; \"within the noise\": it holds 0%, and the runs \
             cannot tell this change from their own variation.\n"
        );
    }
}
