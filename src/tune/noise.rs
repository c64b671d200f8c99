//! How noisy the measurements are, as the tune goes: one window's scatter (pooled over the
//! configurations measured more than once), the CPU others took, and what that costs a
//! verdict: the rounds a change of the threshold's size needs before an interval can settle
//! it. Said once it is known, so a user on a busy host learns at the start, not after the
//! budget is spent, that the answer will be "undecided".

use serde::{Deserialize, Serialize};

use crate::tune::point::Point;

/// The rounds a verdict is projected for, at the most.
const MOST_ROUNDS: usize = 1000;

/// The noise of the windows measured so far.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    /// One window's standard deviation of log throughput (about the relative scatter),
    /// pooled over the configurations with two windows or more; None before any has two.
    pub scatter: Option<f64>,
    /// Its degrees of freedom.
    pub df: usize,
    /// The mean share of the machine's CPU others took during the windows (0-1).
    pub others_cpu: f64,
    /// Windows read.
    pub windows: usize,
}

impl Noise {
    /// The noise of `points`' successful windows.
    pub fn of(points: &[Point]) -> Noise {
        let mut groups: Vec<(&crate::server::settings::Settings, Vec<f64>)> = Vec::new();
        let (mut others, mut read, mut windows) = (0.0, 0usize, 0usize);
        for p in points.iter().filter(|p| p.ok()) {
            for s in &p.samples {
                windows += 1;
                if let Some(i) = s.interference {
                    others += i;
                    read += 1;
                }
                if s.rps > 0.0 {
                    match groups.iter_mut().find(|(k, _)| **k == p.settings) {
                        Some((_, v)) => v.push(s.rps.ln()),
                        None => groups.push((&p.settings, vec![s.rps.ln()])),
                    }
                }
            }
        }
        let (mut squares, mut df) = (0.0, 0usize);
        for (_, logs) in groups.iter().filter(|(_, v)| v.len() > 1) {
            let mean = logs.iter().sum::<f64>() / logs.len() as f64;
            squares += logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>();
            df += logs.len() - 1;
        }
        Noise {
            scatter: (df > 0).then(|| (squares / df as f64).sqrt()),
            df,
            others_cpu: if read > 0 { others / read as f64 } else { 0.0 },
            windows,
        }
    }

    /// The interleaved rounds a comparison of two configurations needs before its interval
    /// (at `confidence`) is as narrow as `threshold_pct` on either side: what it takes to
    /// judge a change of the threshold's size, gain or none. The pairs of a round differ by
    /// two windows' noise. None before the scatter is known.
    pub fn rounds_to_settle(&self, threshold_pct: f64, confidence: f64) -> Option<usize> {
        let sd = self.scatter?.max(1e-4) * std::f64::consts::SQRT_2;
        let half = (threshold_pct / 100.0).ln_1p();
        (2..=MOST_ROUNDS)
            .find(|&n| crate::stats::t_quantile(0.5 + confidence / 2.0, n - 1) * sd / (n as f64).sqrt() <= half)
            .or(Some(MOST_ROUNDS))
    }

    /// "~37", or "over 1000" when no number of rounds the projection tries is enough.
    pub fn rounds_text(rounds: usize) -> String {
        if rounds >= MOST_ROUNDS { format!("over {MOST_ROUNDS}") } else { format!("~{rounds}") }
    }

    /// "one window scatters by 6.1% (pooled over 4 degrees of freedom), others took 45% of
    /// the CPU".
    pub fn describe(&self) -> String {
        let scatter = match self.scatter {
            Some(s) => format!("one window scatters by {:.1}% (pooled over {} degrees of freedom)", s * 100.0, self.df),
            None => "the windows' scatter is not known yet".to_string(),
        };
        format!("{scatter}, others took {:.0}% of the CPU", self.others_cpu * 100.0)
    }
}

/// What to do when the noise is too much for the time or the rounds allowed.
pub const REMEDIES: &str = "more time (--max-time), more rounds (--max-rounds), the server and the client on CPUs of their own (--cpus server=...,client=...), a quieter machine, or longer windows ([load] duration)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_grow_with_the_square_of_the_scatter() {
        let at = |scatter| Noise { scatter: Some(scatter), df: 10, others_cpu: 0.0, windows: 12 };
        let quiet = at(0.01).rounds_to_settle(2.0, 0.99).unwrap();
        let busy = at(0.05).rounds_to_settle(2.0, 0.99).unwrap();
        // 1% scatter: 8 rounds settle 2% (t = 3.50 at 7 df); 5% scatter: 88, 25 times the
        // variance, 13 times the rounds (Student's t falls as the rounds grow).
        assert_eq!(quiet, 8);
        assert!((85..=92).contains(&busy), "{busy}");
        assert_eq!(Noise { scatter: None, df: 0, others_cpu: 0.0, windows: 1 }.rounds_to_settle(2.0, 0.99), None);
    }
}
