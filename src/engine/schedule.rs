//! How much load, when: a value (requests/s in the open loop, clients in the closed loop)
//! that is constant or ramps linearly through stages, and the arrival times an open loop
//! derives from it.

use std::sync::Arc;
use std::time::Duration;

/// One `--stages` step: ramp linearly from the previous stage's value (0 before the first)
/// to `target` over `duration` (k6's stages).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    pub duration: Duration,
    pub target: f64,
}

/// A value over time since the run started.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// The value at t = 0.
    start: f64,
    stages: Vec<Stage>,
}

impl Schedule {
    /// The same value for ever.
    pub fn constant(value: f64) -> Schedule {
        Schedule { start: value, stages: vec![Stage { duration: Duration::from_secs(u32::MAX as u64), target: value }] }
    }

    /// Ramps through `stages`, from 0.
    pub fn stages(stages: Vec<Stage>) -> Schedule {
        Schedule { start: 0.0, stages }
    }

    /// Whether the schedule changes over the run (more than one stage, or a ramp).
    pub fn is_staged(&self) -> bool {
        self.stages.len() > 1 || self.start != self.stages[0].target
    }

    /// The stages, in order.
    pub fn stage_list(&self) -> &[Stage] {
        &self.stages
    }

    /// How long all the stages last together.
    pub fn total(&self) -> Duration {
        self.stages.iter().map(|s| s.duration).sum()
    }

    /// Each stage as (from value, to value, start offset, duration).
    fn pieces(&self) -> impl Iterator<Item = (f64, f64, f64, f64)> + '_ {
        let mut from = self.start;
        let mut at = 0.0;
        self.stages.iter().map(move |s| {
            let piece = (from, s.target, at, s.duration.as_secs_f64());
            from = s.target;
            at += s.duration.as_secs_f64();
            piece
        })
    }

    /// The value at `t`; after the last stage, its target.
    pub fn value_at(&self, t: Duration) -> f64 {
        let t = t.as_secs_f64();
        for (a, b, at, d) in self.pieces() {
            if t < at + d {
                return a + (b - a) * ((t - at) / d).clamp(0.0, 1.0);
            }
        }
        self.stages.last().map_or(self.start, |s| s.target)
    }

    /// Which stage `t` falls in (the last one after the end).
    pub fn stage_at(&self, t: Duration) -> usize {
        let mut end = Duration::ZERO;
        for (i, s) in self.stages.iter().enumerate() {
            end += s.duration;
            if t < end {
                return i;
            }
        }
        self.stages.len().saturating_sub(1)
    }

    /// The integral of the value from 0 to `t` (arrivals by `t`, for a rate).
    pub fn count_by(&self, t: Duration) -> f64 {
        let t = t.as_secs_f64();
        let mut sum = 0.0;
        for (a, b, at, d) in self.pieces() {
            let x = (t - at).clamp(0.0, d);
            sum += a * x + (b - a) / (2.0 * d) * x * x;
            if t < at + d {
                break;
            }
        }
        sum
    }

    /// The time by which the integral of the value reaches `count` (the count-th arrival of a
    /// rate), or None when it never does within the stages.
    pub fn time_for_count(&self, count: f64) -> Option<Duration> {
        let mut left = count;
        for (a, b, at, d) in self.pieces() {
            let area = (a + b) / 2.0 * d;
            if left <= area && area > 0.0 {
                // Solve a*x + (b-a)/(2d)*x^2 = left for x in [0, d].
                let k = (b - a) / (2.0 * d);
                let x = if k.abs() < 1e-12 {
                    left / a
                } else {
                    (-a + (a * a + 4.0 * k * left).max(0.0).sqrt()) / (2.0 * k)
                };
                return Some(Duration::from_secs_f64(at + x.clamp(0.0, d)));
            }
            left -= area;
        }
        None
    }
}

/// How arrivals are spaced in the open loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Evenly, 1/rate apart (wrk2).
    Uniform,
    /// Exponential gaps: independent users (httperf's --period=e).
    Poisson,
    /// The access log's own gaps (--access-log), scaled to the rate.
    Log,
}

/// How the engine spaces arrivals: `Arrival` with what it needs to draw them.
#[derive(Debug, Clone, PartialEq)]
pub enum Spacing {
    Uniform,
    Poisson,
    /// Gaps in units of the mean gap (their mean is 1), taken in order and again from the
    /// start when they run out.
    Trace(Arc<[f32]>),
}

impl Spacing {
    /// The name `--arrival` gives it.
    pub fn name(&self) -> &'static str {
        match self {
            Spacing::Uniform => "uniform",
            Spacing::Poisson => "poisson",
            Spacing::Trace(_) => "log",
        }
    }
}

/// One thread's arrival times: its `share` of the schedule's rate. Uniform threads are offset
/// by `phase` (0..1) so that their arrivals interleave; Poisson arrivals come from
/// exponentially distributed steps of the integrated rate (time rescaling), so ramps stay
/// Poisson too. A trace is dealt out: of `threads` threads, thread `index` takes arrivals
/// `index`, `index + threads`, ..., so together they keep the trace's gaps.
pub struct Arrivals {
    schedule: Schedule,
    share: f64,
    spacing: Spacing,
    /// The integrated rate, in this thread's units, at the next arrival.
    next_count: f64,
    rng: fastrand::Rng,
    /// A trace: the next gap to take, and how many are taken per arrival of this thread.
    at: usize,
    stride: usize,
}

impl Arrivals {
    pub fn new(
        schedule: Schedule,
        share: f64,
        phase: f64,
        spacing: Spacing,
        seed: u64,
        thread: (usize, usize),
    ) -> Arrivals {
        let (index, threads) = (thread.0, thread.1.max(1));
        let rng = fastrand::Rng::with_seed(seed);
        let mut a = Arrivals { schedule, share, spacing, next_count: 0.0, rng, at: 0, stride: threads };
        a.next_count = match &a.spacing {
            Spacing::Uniform => phase,
            Spacing::Poisson => exponential(&mut a.rng),
            // The trace's units are the whole rate's: this thread does not scale them.
            Spacing::Trace(_) => {
                a.share = 1.0;
                a.take(index)
            }
        };
        a
    }

    /// The sum of the trace's next `n` gaps, moving past them.
    fn take(&mut self, n: usize) -> f64 {
        let Spacing::Trace(gaps) = &self.spacing else { return 0.0 };
        if gaps.is_empty() {
            return n as f64;
        }
        let sum = (0..n).map(|i| f64::from(gaps[(self.at + i) % gaps.len()])).sum();
        self.at = (self.at + n) % gaps.len();
        sum
    }

    /// The intended start of the next request, as an offset from the run's start; None once
    /// the schedule has no more.
    pub fn peek(&self) -> Option<Duration> {
        self.schedule.time_for_count(self.next_count / self.share)
    }

    /// How many arrivals not yet advanced past are due by `t` (from the run's start), without
    /// visiting them one by one: a schedule far ahead of what was sent may hold millions.
    /// Exact for uniform arrivals; for Poisson ones and traces, the expected count.
    pub fn due_by(&self, t: Duration) -> u64 {
        let reached = self.schedule.count_by(t) * self.share;
        let per_arrival = match self.spacing {
            Spacing::Trace(_) => self.stride as f64,
            _ => 1.0,
        };
        if reached < self.next_count { 0 } else { ((reached - self.next_count) / per_arrival).floor() as u64 + 1 }
    }

    /// Moves to the next arrival.
    pub fn advance(&mut self) {
        self.next_count += match self.spacing {
            Spacing::Uniform => 1.0,
            Spacing::Poisson => exponential(&mut self.rng),
            Spacing::Trace(_) => self.take(self.stride),
        };
    }
}

fn exponential(rng: &mut fastrand::Rng) -> f64 {
    // 1 - f64() is in (0, 1]: never ln(0).
    -(1.0 - rng.f64()).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn constant_rate_arrivals_are_evenly_spaced() {
        let s = Schedule::constant(100.0);
        assert_eq!(s.time_for_count(1.0), Some(secs(0.01)));
        assert_eq!(s.time_for_count(250.0), Some(secs(2.5)));
        assert!(!s.is_staged());
    }

    #[test]
    fn ramps_integrate_linearly() {
        // 0 -> 100/s over 10 s (500 requests), 100/s for 10 s (1000), 100 -> 0 over 10 s (500).
        let s = Schedule::stages(vec![
            Stage { duration: secs(10.0), target: 100.0 },
            Stage { duration: secs(10.0), target: 100.0 },
            Stage { duration: secs(10.0), target: 0.0 },
        ]);
        assert!(s.is_staged());
        assert_eq!(s.total(), secs(30.0));
        assert!((s.value_at(secs(5.0)) - 50.0).abs() < 1e-9);
        assert!((s.value_at(secs(25.0)) - 50.0).abs() < 1e-9);
        let at = |n: f64| s.time_for_count(n).unwrap().as_secs_f64();
        assert!((at(125.0) - 5.0).abs() < 1e-6, "half way up the first ramp: {}", at(125.0));
        assert!((at(500.0) - 10.0).abs() < 1e-6);
        assert!((at(1000.0) - 15.0).abs() < 1e-6);
        assert!((at(2000.0) - 30.0).abs() < 1e-3);
        assert_eq!(s.time_for_count(2001.0), None);
        assert_eq!(s.stage_at(secs(0.0)), 0);
        assert_eq!(s.stage_at(secs(10.0)), 1);
        assert_eq!(s.stage_at(secs(99.0)), 2);
    }

    #[test]
    fn a_zero_stage_has_no_arrivals() {
        let s = Schedule::stages(vec![
            Stage { duration: secs(1.0), target: 0.0 },
            Stage { duration: secs(1.0), target: 0.0 },
        ]);
        assert_eq!(s.time_for_count(0.5), None);
    }

    #[test]
    fn threads_share_the_rate_and_interleave() {
        let mut a = Arrivals::new(Schedule::constant(1000.0), 0.5, 0.0, Spacing::Uniform, 1, (0, 1));
        let mut b = Arrivals::new(Schedule::constant(1000.0), 0.5, 0.5, Spacing::Uniform, 2, (0, 1));
        let mut times = Vec::new();
        for _ in 0..500 {
            times.push(a.peek().unwrap());
            times.push(b.peek().unwrap());
            a.advance();
            b.advance();
        }
        times.sort();
        assert_eq!(times[1], secs(0.001));
        assert_eq!(times[999], secs(0.999));
    }

    #[test]
    fn due_arrivals_are_counted_without_visiting_them() {
        let stages = Schedule::stages(vec![
            Stage { duration: secs(10.0), target: 100.0 },
            Stage { duration: secs(10.0), target: 100.0 },
        ]);
        assert!((stages.count_by(secs(5.0)) - 125.0).abs() < 1e-6);
        assert!((stages.count_by(secs(15.0)) - 1000.0).abs() < 1e-6);
        assert!((stages.count_by(secs(99.0)) - 1500.0).abs() < 1e-6);
        for (schedule, share, phase) in [(Schedule::constant(1000.0), 0.5, 0.5), (stages, 1.0, 0.0)] {
            let mut a = Arrivals::new(schedule, share, phase, Spacing::Uniform, 1, (0, 1));
            for _ in 0..3 {
                let by = secs(7.3);
                let mut visited = 0;
                let mut b = Arrivals::new(a.schedule.clone(), share, 0.0, Spacing::Uniform, 1, (0, 1));
                b.next_count = a.next_count;
                while b.peek().is_some_and(|t| t <= by) {
                    visited += 1;
                    b.advance();
                }
                assert_eq!(a.due_by(by), visited);
                (0..100).for_each(|_| a.advance());
            }
        }
        // Ten million a second, an hour behind: counted at once.
        let a = Arrivals::new(Schedule::constant(1e7), 1.0, 0.0, Spacing::Uniform, 1, (0, 1));
        assert_eq!(a.due_by(secs(3600.0)), 36_000_000_000 + 1);
    }

    #[test]
    fn threads_dealt_a_trace_keep_its_gaps_together() {
        // Gaps of 0.5 and 1.5 mean gaps, at 100/s: 5 ms and 15 ms apart.
        let gaps: Arc<[f32]> = vec![0.5, 1.5, 0.5, 1.5, 0.5, 1.5].into();
        let mut times = Vec::new();
        for index in 0..3 {
            let mut a =
                Arrivals::new(Schedule::constant(100.0), 0.25, 0.0, Spacing::Trace(gaps.clone()), 1, (index, 3));
            for _ in 0..8 {
                times.push(a.peek().unwrap().as_secs_f64());
                a.advance();
            }
        }
        times.sort_by(f64::total_cmp);
        let got: Vec<f64> = times.windows(2).map(|w| ((w[1] - w[0]) * 1e4).round() / 10.0).collect();
        let expected: Vec<f64> = (0..23).map(|i| if i % 2 == 0 { 5.0 } else { 15.0 }).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn poisson_arrivals_keep_the_mean_rate() {
        let mut a = Arrivals::new(Schedule::constant(1000.0), 1.0, 0.0, Spacing::Poisson, 7, (0, 1));
        let mut n = 0;
        while a.peek().is_some_and(|t| t < secs(20.0)) {
            n += 1;
            a.advance();
        }
        // 20000 expected; Poisson sd is sqrt(20000) = 141.
        assert!((n as f64 - 20000.0).abs() < 600.0, "{n} arrivals");
    }
}
