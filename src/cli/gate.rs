//! Pass/fail thresholds for pipelines (`--fail-if 'p99 > 50ms'`): parsed from text, judged
//! against one bench run, or, as a change (`rps < -5%`), between two stored runs.
//!
//! A threshold states the failure: the run fails when the expression holds. A figure the run
//! did not measure (no successful request, so no latency) fails too: a gate must not pass
//! on nothing.

use std::fmt;
use std::str::FromStr;

use crate::aggregate::BenchReport;
use crate::aggregate::result::{Judged, LatencyStats};
use crate::input::{self, InputError};
use crate::store::Stored;
use crate::tune::Point;

/// What a latency threshold reads: the request's total time, its first byte, or its connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Total,
    FirstByte,
    Connect,
}

/// Which statistic of a latency distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    Min,
    Mean,
    Stdev,
    P50,
    P75,
    P90,
    P99,
    P999,
    Max,
}

const STATS: [(&str, Stat); 10] = [
    ("min", Stat::Min),
    ("mean", Stat::Mean),
    ("stdev", Stat::Stdev),
    ("p50", Stat::P50),
    ("p75", Stat::P75),
    ("p90", Stat::P90),
    ("p99", Stat::P99),
    ("p99.9", Stat::P999),
    ("p999", Stat::P999),
    ("max", Stat::Max),
];

const PHASES: [(&str, Phase); 4] = [
    ("total.", Phase::Total),
    ("ttfb.", Phase::FirstByte),
    ("first_byte.", Phase::FirstByte),
    ("connect.", Phase::Connect),
];

/// The valid metrics, for error messages.
pub const METRICS_HELP: &str = "rps, errors, non2xx, or a latency: min, mean, stdev, p50, p75, p90, p99, p99.9, max \
     (total time; prefix ttfb. or connect. for the first byte or the connect, e.g. ttfb.p99)";

/// A figure a threshold reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Successful requests per second.
    Rps,
    /// Failed requests (no complete response): a count, or with `%` a share of all requests.
    Errors,
    /// Responses with a status outside 200-299 (ab's "Non-2xx responses"): a count, or with
    /// `%` a share of all requests.
    Non2xx,
    /// A latency statistic, in milliseconds.
    Latency(Phase, Stat),
}

/// The comparison; the run fails when `measured OP bound` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
        }
    }
}

/// What the measured figure is compared with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// Milliseconds, requests/s or a count: the figure itself.
    Absolute(f64),
    /// A share of all requests, in % (errors only).
    Share(f64),
    /// A signed change in % from the run before to the run after (`webtune compare`).
    Change(f64),
}

/// A parsed `--fail-if` expression: `METRIC OP VALUE`.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// As the user wrote it, trimmed.
    pub text: String,
    pub metric: Metric,
    pub op: Op,
    pub bound: Bound,
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn metric(name: &str) -> Option<Metric> {
    match name {
        "rps" => return Some(Metric::Rps),
        "errors" => return Some(Metric::Errors),
        "non2xx" => return Some(Metric::Non2xx),
        _ => {}
    }
    let (phase, stat) = PHASES
        .iter()
        .find_map(|(prefix, phase)| name.strip_prefix(prefix).map(|rest| (*phase, rest)))
        .unwrap_or((Phase::Total, name));
    STATS.iter().find(|(n, _)| *n == stat).map(|(_, s)| Metric::Latency(phase, *s))
}

/// A plain non-negative number.
fn number(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0)
}

impl FromStr for Threshold {
    type Err = InputError;

    fn from_str(s: &str) -> Result<Threshold, InputError> {
        let text = s.trim();
        let bad = |why: String| InputError(format!("bad threshold {text:?}: {why}"));
        let at = text
            .find(['<', '>'])
            .ok_or_else(|| bad("expected METRIC OP VALUE with OP one of < <= > >=, e.g. 'p99 > 50ms'".into()))?;
        let (name, rest) = text.split_at(at);
        let (op, value) = match (rest.as_bytes()[0], rest.as_bytes().get(1)) {
            (b'<', Some(b'=')) => (Op::Le, &rest[2..]),
            (b'>', Some(b'=')) => (Op::Ge, &rest[2..]),
            (b'<', _) => (Op::Lt, &rest[1..]),
            _ => (Op::Gt, &rest[1..]),
        };
        let name = name.trim().to_ascii_lowercase();
        let value = value.trim();
        let metric = metric(&name).ok_or_else(|| bad(format!("unknown metric {name:?} (valid: {METRICS_HELP})")))?;
        let signed = value.starts_with(['+', '-']);
        let bound = if let Some(pct) = value.strip_suffix('%').map(str::trim) {
            let v = pct.trim_start_matches(['+', '-']).trim();
            let v = number(v).ok_or_else(|| bad(format!("bad percentage {value:?}")))?;
            if signed {
                Bound::Change(if pct.starts_with('-') { -v } else { v })
            } else if matches!(metric, Metric::Errors | Metric::Non2xx) {
                if v > 100.0 {
                    return Err(bad("a share of requests is 0% to 100%".into()));
                }
                Bound::Share(v)
            } else {
                return Err(bad(format!(
                    "{name} takes {}; a change between two runs is signed (+10%, -5%) and needs webtune compare",
                    what(metric)
                )));
            }
        } else {
            let v = match metric {
                Metric::Latency(..) => {
                    if number(value).is_some() {
                        return Err(bad(format!("give the latency with its unit, e.g. {value}ms")));
                    }
                    input::duration("", value).map_err(|e| bad(e.0))?.as_secs_f64() * 1000.0
                }
                Metric::Rps | Metric::Errors | Metric::Non2xx => {
                    number(value).ok_or_else(|| bad(format!("{name} takes {}", what(metric))))?
                }
            };
            Bound::Absolute(v)
        };
        Ok(Threshold { text: text.into(), metric, op, bound })
    }
}

/// What a metric is compared with, for error messages.
fn what(metric: Metric) -> &'static str {
    match metric {
        Metric::Rps => "a rate in requests/s, e.g. 1000",
        Metric::Errors | Metric::Non2xx => "a count (e.g. 0) or a share of requests (e.g. 0.1%)",
        Metric::Latency(..) => "a duration, e.g. 50ms",
    }
}

fn stat(l: &LatencyStats, s: Stat) -> f64 {
    match s {
        Stat::Min => l.min,
        Stat::Mean => l.mean,
        Stat::Stdev => l.stdev,
        Stat::P50 => l.p50,
        Stat::P75 => l.p75,
        Stat::P90 => l.p90,
        Stat::P99 => l.p99,
        Stat::P999 => l.p999,
        Stat::Max => l.max,
    }
}

/// What one run measured, as a threshold reads it: a bench report, or the point that stands
/// for a tune run (which records requests/s, p50, p99 and ttfb.p99: medians of its repeats).
#[derive(Debug, Clone, Copy)]
pub enum Figures<'a> {
    Bench(&'a BenchReport),
    Tune(&'a Point),
}

impl Figures<'_> {
    /// The metric's value (None when the run did not measure it), or with `share` the errors
    /// as % of all requests.
    fn value(self, metric: Metric, share: bool) -> Option<f64> {
        match (self, metric) {
            (Figures::Bench(r), Metric::Rps) => Some(r.result.requests_per_s),
            (Figures::Bench(r), Metric::Errors | Metric::Non2xx) => {
                let count: u64 = match metric {
                    Metric::Errors => r.result.failed,
                    _ => r.result.status.iter().filter(|(code, _)| !code.starts_with('2')).map(|(_, n)| n).sum(),
                };
                match share {
                    false => Some(count as f64),
                    true => (r.result.requests > 0).then(|| count as f64 / r.result.requests as f64 * 100.0),
                }
            }
            (Figures::Bench(r), Metric::Latency(phase, s)) => {
                let l = &r.result.latency_ms;
                match phase {
                    Phase::Total => &l.total,
                    Phase::FirstByte => &l.first_byte,
                    Phase::Connect => &l.connect,
                }
                .as_ref()
                .map(|l| stat(l, s))
            }
            (Figures::Tune(p), Metric::Rps) => Some(p.rps()),
            (Figures::Tune(p), Metric::Latency(Phase::Total, Stat::P50)) => Some(p.median(|s| s.p50_ms)),
            (Figures::Tune(p), Metric::Latency(Phase::Total, Stat::P99)) => Some(p.p99()),
            (Figures::Tune(p), Metric::Latency(Phase::FirstByte, Stat::P99)) => Some(p.median(|s| s.first_byte_p99_ms)),
            (Figures::Tune(_), _) => None,
        }
    }
}

impl Threshold {
    /// Whether it judges a change between two runs (`webtune compare` only).
    pub fn is_change(&self) -> bool {
        matches!(self.bound, Bound::Change(_))
    }

    /// The unit its measured value is given in.
    fn unit(&self) -> &'static str {
        match (self.bound, self.metric) {
            (Bound::Change(_), _) => "% change",
            (Bound::Share(_), _) => "%",
            (_, Metric::Rps) => "req/s",
            (_, Metric::Errors | Metric::Non2xx) => "requests",
            (_, Metric::Latency(..)) => "ms",
        }
    }

    fn verdict(&self, value: Option<f64>, bound: f64) -> Judged {
        Judged {
            expr: self.text.clone(),
            value,
            unit: self.unit().into(),
            pass: value.is_some_and(|v| !self.op.holds(v, bound)),
        }
    }

    /// Judges one run. A change needs two runs: an error here (check with `is_change` before
    /// the run).
    pub fn judge(&self, run: Figures) -> Result<Judged, InputError> {
        match self.bound {
            Bound::Absolute(b) => Ok(self.verdict(run.value(self.metric, false), b)),
            Bound::Share(b) => Ok(self.verdict(run.value(self.metric, true), b)),
            Bound::Change(_) => Err(self.needs_two_runs()),
        }
    }

    /// The error for a change given where there is one run.
    pub fn needs_two_runs(&self) -> InputError {
        InputError(format!(
            "threshold {:?}: a signed change needs two runs: webtune compare A B --fail-if '{}'",
            self.text, self.text
        ))
    }

    /// Judges the run `after` against the run `before`: a change from one to the other, or
    /// an absolute threshold on `after` alone. A metric a run does not record is an error (a
    /// tune run records rps, p50, p99 and ttfb.p99 only).
    pub fn judge_between(&self, before: Figures, after: Figures) -> Result<Judged, InputError> {
        let recorded = |f: Figures| !matches!(f, Figures::Tune(_)) || f.value(self.metric, false).is_some();
        if !recorded(before) || !recorded(after) {
            return Err(InputError(format!(
                "threshold {:?}: tune runs record only rps, p50, p99 and ttfb.p99",
                self.text
            )));
        }
        let Bound::Change(b) = self.bound else { return self.judge(after) };
        let change = match (before.value(self.metric, false), after.value(self.metric, false)) {
            (Some(x), Some(y)) if x != 0.0 => Some((y - x) / x * 100.0),
            (Some(_), Some(0.0)) => Some(0.0),
            (Some(_), Some(y)) => Some(f64::INFINITY.copysign(y)),
            _ => None,
        };
        Ok(self.verdict(change, b))
    }
}

/// The figures of a stored run, as `webtune compare` judges them: a bench run's report, or a
/// tune run's recommended point (its first successful point when it has no outcome).
pub fn figures(run: &Stored) -> Option<Figures<'_>> {
    match run {
        Stored::Bench { report, .. } => Some(Figures::Bench(report)),
        Stored::Tune { .. } => run.standing_point().map(Figures::Tune),
    }
}

/// Whether every judged threshold passed.
pub fn all_pass(judged: &[Judged]) -> bool {
    judged.iter().all(|j| j.pass)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Threshold {
        s.parse().unwrap_or_else(|e: InputError| panic!("{s}: {e}"))
    }

    fn err(s: &str) -> String {
        s.parse::<Threshold>().unwrap_err().0
    }

    #[test]
    fn the_documented_forms_parse() {
        assert_eq!(t("p99 > 50ms").metric, Metric::Latency(Phase::Total, Stat::P99));
        assert_eq!(t("p99 > 50ms").bound, Bound::Absolute(50.0));
        assert_eq!(t("p99>1s").bound, Bound::Absolute(1000.0));
        assert_eq!(t("ttfb.p99.9 >= 250us").metric, Metric::Latency(Phase::FirstByte, Stat::P999));
        assert_eq!(t("ttfb.p99.9 >= 250us").bound, Bound::Absolute(0.25));
        assert_eq!(t("ttfb.p99.9 >= 250us").op, Op::Ge);
        assert_eq!(t("connect.max <= 2s").metric, Metric::Latency(Phase::Connect, Stat::Max));
        assert_eq!(t("MEAN < 5ms").metric, Metric::Latency(Phase::Total, Stat::Mean));
        assert_eq!(t("errors > 0.1%").bound, Bound::Share(0.1));
        assert_eq!(t("errors > 0").bound, Bound::Absolute(0.0));
        assert_eq!(t("rps < 1000").bound, Bound::Absolute(1000.0));
        assert_eq!(t("rps < 1000").op, Op::Lt);
        assert_eq!(t(" rps < -5% ").bound, Bound::Change(-5.0));
        assert_eq!(t(" rps < -5% ").text, "rps < -5%");
        assert_eq!(t("p99 > +10%").bound, Bound::Change(10.0));
        assert!(t("p99 > +10%").is_change());
    }

    #[test]
    fn bad_thresholds_say_what_is_valid() {
        let e = err("p98 > 5ms");
        assert!(e.contains("unknown metric \"p98\"") && e.contains("ttfb.p99") && e.contains("rps"), "{e}");
        assert!(err("p99 = 5ms").contains("< <= > >="));
        assert!(err("p99 > 50").contains("with its unit, e.g. 50ms"));
        assert!(err("p99 > 10%").contains("signed (+10%, -5%)"));
        assert!(err("rps < 1k").contains("a rate in requests/s"));
        assert!(err("rps < -5").contains("a rate in requests/s"));
        assert!(err("errors > 101%").contains("0% to 100%"));
        assert!(err("p99 > fast").contains("bad duration"));
        assert!(!err("p99 > 50").contains('\n'));
    }

    fn report(requests_per_s: f64, failed: u64, p99: f64) -> BenchReport {
        let latency = serde_json::json!({"count": 1000, "min": 1.0, "mean": 10.0, "stdev": 5.0, "p50": 9.0,
            "p75": 12.0, "p90": 15.0, "p99": p99, "p999": p99 + 1.0, "max": p99 + 2.0});
        let v = serde_json::json!({
            "schema": "webtune.bench.v1", "webtune_version": "0", "started_at": "", "interrupted": false,
            "target": {"url": "http://x/", "method": "GET"},
            "options": {"connections": 1, "threads": 1, "keepalive": true, "timeout_s": 10.0},
            "result": {"duration_s": 1.0, "requests": 1000, "succeeded": 1000 - failed, "failed": failed,
                "requests_per_s": requests_per_s, "length_differed": 0, "in_flight_at_end": 0,
                "status": {}, "errors": {}, "bytes": {"headers": 0, "body": 0, "total": 0, "per_s": 0.0},
                "connections": {"opened": 1, "server_closed_idle": 0},
                "latency_ms": {"connect": latency, "first_byte": latency, "total": latency}},
            "client_cpu": {"user_s": 0.0, "sys_s": 0.0, "percent_of_available": 0.0, "cores_available": 1},
            "warnings": []
        });
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_threshold_fails_the_run_when_it_holds() {
        let r = report(500.0, 2, 40.0);
        let j = t("p99 > 50ms").judge(Figures::Bench(&r)).unwrap();
        assert_eq!(j, Judged { expr: "p99 > 50ms".into(), value: Some(40.0), unit: "ms".into(), pass: true });
        assert!(!t("p99 >= 40ms").judge(Figures::Bench(&r)).unwrap().pass);
        assert!(!t("rps < 1000").judge(Figures::Bench(&r)).unwrap().pass);
        let share = t("errors > 0.1%").judge(Figures::Bench(&r)).unwrap();
        assert_eq!((share.value, share.pass, share.unit.as_str()), (Some(0.2), false, "%"));
        assert!(t("errors > 2").judge(Figures::Bench(&r)).unwrap().pass);
        let mut r5 = r.clone();
        r5.result.status = [("200".to_string(), 990), ("404".into(), 3), ("503".into(), 5)].into_iter().collect();
        let j = t("non2xx > 0.5%").judge(Figures::Bench(&r5)).unwrap();
        assert_eq!((j.value, j.pass), (Some(0.8), false));
        assert_eq!(t("non2xx >= 8").judge(Figures::Bench(&r5)).unwrap().value, Some(8.0));
        assert!(t("rps < -5%").judge(Figures::Bench(&r)).is_err());
    }

    #[test]
    fn nothing_measured_fails() {
        let mut r = report(0.0, 1000, 1.0);
        r.result.latency_ms.total = None;
        let j = t("p99 > 50ms").judge(Figures::Bench(&r)).unwrap();
        assert_eq!((j.value, j.pass), (None, false));
    }

    #[test]
    fn changes_are_judged_from_before_to_after() {
        let (before, after) = (report(1000.0, 0, 20.0), report(930.0, 3, 25.0));
        let (b, a) = (Figures::Bench(&before), Figures::Bench(&after));
        let j = t("rps < -5%").judge_between(b, a).unwrap();
        assert!((j.value.unwrap() + 7.0).abs() < 1e-9 && !j.pass, "{j:?}");
        assert!(t("rps < -10%").judge_between(b, a).unwrap().pass);
        let j = t("p99 > +10%").judge_between(b, a).unwrap();
        assert!((j.value.unwrap() - 25.0).abs() < 1e-9 && !j.pass, "{j:?}");
        // From no errors to some: an infinite rise, which any rise bound catches.
        assert_eq!(t("errors > +50%").judge_between(b, a).unwrap().value, Some(f64::INFINITY));
        assert_eq!(t("errors > +50%").judge_between(b, b).unwrap().value, Some(0.0));
        // An absolute threshold judges the run after.
        assert!(!t("p99 > 24ms").judge_between(b, a).unwrap().pass);
    }

    fn point(rps: &[f64], p99: &[f64]) -> Point {
        use crate::tune::point::{Sample, Status};
        let mut p = Point::failed("baseline", &Default::default(), String::new(), 1.0);
        p.status = Status::Ok;
        p.samples = rps.iter().zip(p99).map(|(&rps, &p99_ms)| Sample { rps, p99_ms, ..Default::default() }).collect();
        p
    }

    #[test]
    fn tune_runs_are_judged_by_the_medians_of_their_repeats() {
        let (before, after) =
            (point(&[990.0, 1000.0, 1010.0], &[20.0, 21.0, 40.0]), point(&[900.0, 880.0, 2000.0], &[22.0, 22.0, 1.0]));
        let (b, a) = (Figures::Tune(&before), Figures::Tune(&after));
        let j = t("rps < -5%").judge_between(b, a).unwrap();
        assert!((j.value.unwrap() + 10.0).abs() < 1e-9 && !j.pass, "{j:?}");
        let j = t("p99 > +10%").judge_between(b, a).unwrap();
        assert!((j.value.unwrap() - 100.0 / 21.0).abs() < 1e-9 && j.pass, "{j:?}");
        let e = t("errors > 0").judge_between(b, a).unwrap_err().0;
        assert!(e.contains("tune runs record only rps, p50, p99 and ttfb.p99"), "{e}");
    }
}
