//! What "better" means, and when a difference is more than the noise.

use serde::{Deserialize, Serialize};

use super::point::{Point, compared_memory};
use crate::stats::median;

/// What the tuner optimises: which of two configurations is better.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Objective {
    /// The most requests per second.
    Throughput,
    /// The most requests per second with p99 at or under this many milliseconds.
    ThroughputWithin { p99_ms: f64 },
    /// The least memory that serves at least this many requests/s (with p99 at or under
    /// `p99_ms` when given): the PSS of the server's own pages (`point::compared_memory`),
    /// which other programs beside it do not move.
    LeastMemory {
        rps: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p99_ms: Option<f64>,
    },
}

impl Objective {
    /// The value to maximise for each repeat of a point, or None when the point misses a
    /// constraint (an SLO, a required throughput) or failed.
    fn values(&self, p: &Point) -> Option<Vec<f64>> {
        if !p.ok() {
            return None;
        }
        match *self {
            Objective::Throughput => Some(p.samples.iter().map(|s| s.rps).collect()),
            Objective::ThroughputWithin { p99_ms } => {
                (p.median(|s| s.p99_ms) <= p99_ms).then(|| p.samples.iter().map(|s| s.rps).collect())
            }
            Objective::LeastMemory { rps, p99_ms } => (serves(p, rps, p99_ms)).then(|| {
                let figure = compared_memory(&[p]);
                p.samples.iter().map(|s| -(s.memory.as_ref().map_or(f64::MAX, |m| figure(m) as f64))).collect()
            }),
        }
    }

    /// Whether the point was measured and meets the objective's constraints: its SLO or its
    /// required throughput, and, under a memory budget, the budget (every objective is
    /// "within the memory").
    pub fn admits(&self, p: &Point) -> bool {
        self.values(p).is_some() && fits(p)
    }

    /// The change from `before` to `after`, measured in pairs (window i of each taken in the
    /// same round), with its interval at `confidence`, in the objective's direction: + is
    /// better (more throughput; or, for least memory, less memory). None when either point
    /// misses the constraint or there are fewer than two pairs.
    pub fn effect(&self, before: &Point, after: &Point, confidence: f64) -> Option<crate::stats::Effect> {
        if !(self.admits(before) && self.admits(after)) {
            return None;
        }
        let counted = |p: &Point| p.samples.iter().map(|s| s.succeeded as f64).collect::<Vec<_>>();
        let (b, a): (Vec<f64>, Vec<f64>) = match self {
            Objective::Throughput | Objective::ThroughputWithin { .. } => {
                let (cb, ca) = (counted(before), counted(after));
                let rps = |p: &Point| p.samples.iter().map(|s| s.rps).collect::<Vec<_>>();
                return crate::stats::paired_effect(&rps(before), &rps(after), Some((&cb, &ca)), confidence);
            }
            // Less memory is better: the ratio before/after, so that + is a saving.
            Objective::LeastMemory { .. } => {
                let figure = compared_memory(&[before, after]);
                let pss = |p: &Point| {
                    p.samples.iter().map(|s| s.memory.as_ref().map_or(0.0, |m| figure(m) as f64)).collect::<Vec<_>>()
                };
                (pss(after), pss(before))
            }
        };
        crate::stats::paired_effect(&b, &a, None, confidence)
    }

    /// The point's score (its repeats' median), None when it misses a constraint.
    pub fn score(&self, p: &Point) -> Option<f64> {
        self.values(p).map(|v| median(&v))
    }

    /// The objective in words, for reports ("maximum throughput with p99 <= 50 ms").
    pub fn describe(&self) -> String {
        match self {
            Objective::Throughput => "maximum throughput".into(),
            Objective::ThroughputWithin { p99_ms } => format!("maximum throughput with p99 <= {p99_ms} ms"),
            Objective::LeastMemory { rps, p99_ms: None } => format!("least memory serving >= {rps} requests/s"),
            Objective::LeastMemory { rps, p99_ms: Some(p99) } => {
                format!("least memory serving >= {rps} requests/s with p99 <= {p99} ms")
            }
        }
    }
}

/// Whether a point served `rps` requests/s (its median window, counting what it was still
/// answering at the end while it kept up: `Point::served_rps`; 2% is allowed) with its median
/// p99 at or under `p99_ms`.
pub fn serves(p: &Point, rps: f64, p99_ms: Option<f64>) -> bool {
    p.ok() && p.served_rps() >= rps * SERVED_SHARE && p99_ms.is_none_or(|slo| p.median(|s| s.p99_ms) <= slo)
}

/// The share of a rate an open loop at that rate must deliver to count as serving it: its
/// starts are spaced randomly, and a window's count falls a little short of rate x duration.
const SERVED_SHARE: f64 = 0.98;

/// Whether the point's workers fit the memory budget, by the seeds' arithmetic with the
/// figures measured under load (true without a budget, or without memory figures). The pool
/// that must fit is the largest the server may run: its configured size (the seeds'
/// MaxClients rule), or more if more were seen; never only the workers alive at the moment of
/// the costliest sample, which in a recycling pool may be one of eight.
///
/// In a container, a window in which the OOM killer killed a process does not fit, whatever
/// the figures: the kernel has judged; nor one throttled beyond `[container] throttled`.
pub fn fits(p: &Point) -> bool {
    let seen = p.samples.iter().filter_map(|s| s.memory.as_ref()).map(|m| m.workers).max().unwrap_or(0);
    let refused = p
        .samples
        .iter()
        .filter_map(|s| s.container.as_ref())
        .any(|c| c.oom_kills_since_launch > 0 || c.over_throttle_bound);
    !refused && p.memory().is_none_or(|m| pool_fits(m, pool(&p.settings, p.workers_at_start).max(seen)))
}

/// Why a point does not fit, for a verdict's words: " (the OOM killer killed in its
/// container)", " (throttled beyond the bound of its container)" or " (its workers do not fit
/// the memory budget)"; empty when it fits.
pub fn misfit(p: &Point) -> &'static str {
    if fits(p) {
        ""
    } else if p.samples.iter().filter_map(|s| s.container.as_ref()).any(|c| c.oom_kills_since_launch > 0) {
        " (the OOM killer killed in its container)"
    } else if p.samples.iter().filter_map(|s| s.container.as_ref()).any(|c| c.over_throttle_bound) {
        " (throttled beyond the bound of its container)"
    } else {
        " (its workers do not fit the memory budget)"
    }
}

/// The pool that must fit: its configured size, or more if more workers were there at the
/// start of the load.
pub fn pool(settings: &crate::server::Settings, workers_at_start: Option<usize>) -> usize {
    let configured = settings.get("workers").and_then(|w| w.parse::<usize>().ok()).unwrap_or(0);
    configured.max(workers_at_start.unwrap_or(0))
}

/// Whether a pool of `pool` workers (or the workers `m` saw, if more) fits by `m`'s figures
/// (true without a budget or a worker to measure).
pub fn pool_fits(m: &super::point::MemUse, pool: usize) -> bool {
    m.workers_fit.is_none_or(|fit| fit >= pool.max(m.workers) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::point::{Sample, tests::point};

    #[test]
    fn constraints_exclude_points() {
        let mut fast_but_slow_tail = point(&[200.0, 200.0, 200.0]);
        for s in &mut fast_but_slow_tail.samples {
            s.p99_ms = 80.0;
        }
        let steady = point(&[150.0, 150.0, 150.0]);
        let slo = Objective::ThroughputWithin { p99_ms: 50.0 };
        assert!(slo.admits(&steady));
        assert!(!slo.admits(&fast_but_slow_tail));
        assert_eq!(slo.effect(&steady, &fast_but_slow_tail, 0.99), None, "a point that misses the SLO is not compared");
        assert_eq!(slo.score(&fast_but_slow_tail), None);
        let _ = Sample::default();
    }
}
