//! The tuning strategies. Each runs trials through the `Tuner` and returns its steps and the
//! evidence for each value it recommends.

mod joint;
mod keepalive;
mod one_at_a_time;
mod recycle;
pub mod rightsize;
mod spares;
pub mod verdict;
pub mod vocabulary;
mod workers;

pub use joint::joint;
pub use keepalive::keepalive;
pub use one_at_a_time::one_at_a_time;
pub use recycle::recycle;
pub use rightsize::rightsize;
pub use spares::spares;
pub use workers::{KneeRule, workers};

use super::baseline::{Baseline, guard};
use super::objective::Objective;

pub use vocabulary::{Found, Knobs};

use super::tuner::{Judging, Plan, Tuner};

/// How the tuner searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Each knob in turn, the seeds' method.
    OneAtATime,
    /// The knee of throughput against the pool size, within the memory.
    Workers,
    /// Requests per worker before it is replaced, within the memory.
    Recycle,
    /// Spare workers, judged by bursts after idle.
    Spares,
    /// Keep-alive on or off, with slow clients.
    Keepalive,
    /// The knobs together (2 to 4): a coarse grid, its best refined, halved, then judged.
    Joint,
    /// The smallest container (CPUs x memory) and workers that serve --min-rps within
    /// --slo-p99, with no OOM kill.
    Rightsize,
}

impl Strategy {
    /// The name the command line and the journal use.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::OneAtATime => "one-at-a-time",
            Strategy::Workers => "workers",
            Strategy::Recycle => "recycle",
            Strategy::Spares => "spares",
            Strategy::Keepalive => "keepalive",
            Strategy::Joint => "joint",
            Strategy::Rightsize => "rightsize",
        }
    }

    /// Trials this strategy plans, for the plan shown before it starts.
    pub fn planned_trials(self, knobs: &Knobs) -> usize {
        let values = |name: &str| knobs.iter().find(|(k, _)| k == name).map_or(0, |(_, v)| v.len());
        match self {
            // Each knob's values, the current one included, for the rounds of its comparison
            // (about --repeats windows each, as many as a point of the other strategies).
            Strategy::OneAtATime => knobs.iter().map(|(_, v)| v.len()).sum::<usize>().max(1),
            // Halving from the largest count, then a search between two counts.
            Strategy::Workers => {
                let n = values("workers");
                if n <= 5 {
                    n
                } else {
                    (n as f64).log2().ceil() as usize + 1 + (n as f64).log2().ceil() as usize / 2 + 1
                }
            }
            Strategy::Recycle => 3,
            Strategy::Spares => 1 + spares::candidates(knobs).len(),
            Strategy::Keepalive => values("keepalive").max(2),
            // Every window is a launch: the search's, then the final judgement's first rounds.
            Strategy::Joint => joint::planned_windows(knobs, &Judging::default(), 1).least,
            // The largest size, about two CPU steps, the smaller worker counts, one memory limit.
            Strategy::Rightsize => 4 + values("workers").saturating_sub(1),
        }
    }

    /// The method this strategy runs on `knobs`: one at a time, or jointly, over the pool size
    /// alone is the workers strategy's search for the knee (`one_at_a_time::pool_alone`; with
    /// one knob nothing moves together, and the joint search measured every count and then
    /// lengthened its final windows: 2 to 4 times the grid's time on php-fpm, bench/README.md and its history in bench/HISTORY.md).
    pub fn method(self, knobs: &Knobs, objective: &Objective) -> Strategy {
        let searches_the_knee = matches!(self, Strategy::OneAtATime | Strategy::Joint);
        if searches_the_knee && one_at_a_time::pool_alone(knobs, objective) { Strategy::Workers } else { self }
    }

    /// Windows this strategy plans, at least and at most: a comparison (one-at-a-time,
    /// keepalive, the workers' check of the knee) measures each of its values in
    /// `judging.min_rounds` to `judging.max_rounds` rounds; a point is `repeats` windows.
    pub fn planned_windows(self, knobs: &Knobs, objective: &Objective, judging: &Judging, repeats: usize) -> Plan {
        let method = self.method(knobs, objective);
        if method != self {
            return method.planned_windows(knobs, objective, judging, repeats);
        }
        let (min, max) = (judging.min_rounds, judging.max_rounds.max(judging.min_rounds));
        let compared = |values: usize| Plan { least: values * min, most: values * max };
        match self {
            Strategy::OneAtATime => {
                // A knob of one value is never compared; with none to compare, one point.
                let values: usize = knobs.iter().map(|(_, v)| v.len()).filter(|&n| n > 1).sum();
                if values == 0 { Plan { least: repeats, most: repeats } } else { compared(values) }
            }
            Strategy::Keepalive => compared(self.planned_trials(knobs)),
            Strategy::Joint => joint::planned_windows(knobs, judging, repeats),
            // A window per count, --repeats for the contenders (two at least), and the check of
            // the knee against the best.
            Strategy::Workers => {
                let counts = self.planned_trials(knobs);
                let least = counts + 2.min(counts) * repeats.saturating_sub(1);
                Plan { least, most: counts * repeats + 2 * max }
            }
            _ => {
                let points = self.planned_trials(knobs) * repeats;
                Plan { least: points, most: points }
            }
        }
    }

    /// The configurations an exhaustive search would measure, for the tune's cost: every
    /// combination of the knobs' values (the rightsizing's ladder of CPU sizes counting as the
    /// values of `container_cpus`); None without knobs.
    pub fn grid(self, knobs: &Knobs) -> Option<u64> {
        match self {
            Strategy::Rightsize => Some(rightsize::grid(knobs)),
            _ => (!knobs.is_empty()).then(|| knobs.iter().map(|(_, values)| values.len() as u64).product()),
        }
    }

    /// Why this strategy cannot search `knobs`, in one line (the joint search's limits).
    pub fn refuses(self, knobs: &Knobs) -> Option<String> {
        match self {
            Strategy::Joint => joint::refuses(knobs),
            _ => None,
        }
    }

    /// Runs the search from `baseline`; `knee` is the workers strategy's rule. Whatever
    /// the strategy found, a knob whose baseline is the user's moves only where a verdict
    /// adopted the new value (`baseline::guard`).
    pub fn run(self, t: &mut Tuner, knobs: &Knobs, baseline: &Baseline, knee: KneeRule) -> Found {
        let base = &baseline.settings;
        let method = self.method(knobs, &t.objective);
        let mut found = match self {
            Strategy::OneAtATime | Strategy::Joint if method == Strategy::Workers => {
                workers::pool_knee(t, knobs, base, knee)
            }
            Strategy::OneAtATime => one_at_a_time(t, knobs, base),
            Strategy::Workers => workers(t, knobs, base, knee),
            Strategy::Recycle => recycle(t, knobs, base),
            Strategy::Spares => spares(t, knobs, base),
            Strategy::Keepalive => keepalive(t, knobs, base),
            Strategy::Joint => joint(t, knobs, base),
            Strategy::Rightsize => rightsize(t, knobs, base),
        };
        // A run cut short compared only what it measured: evidence that does not say so
        // already is qualified, so no line reads as a verdict on values never measured.
        // (One at a time says so knob by knob: a knob judged in full before the stop stands.)
        if let Some(why) = t.stopped.as_ref().filter(|_| method != Strategy::OneAtATime) {
            for line in found.evidence.iter_mut().filter(|e| !e.cut_short) {
                line.why.push_str(&format!(
                    "; the run stopped ({why}): only the values measured were compared, the rest were never measured"
                ));
                line.cut_short = true;
            }
        }
        let undone = guard(baseline, &found.steps, &mut found.recommended, &mut found.evidence);
        if !undone.is_empty() {
            t.note(&format!("kept as you run them, no verdict adopted another value: {}", undone.join(", ")));
        }
        found
    }
}

#[cfg(test)]
mod tests;
