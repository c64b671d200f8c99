//! The tuning strategies. Each runs trials through the `Tuner` and returns its steps and the
//! evidence for each value it recommends.

mod keepalive;
mod one_at_a_time;
mod recycle;
mod spares;
mod workers;

pub use keepalive::keepalive;
pub use one_at_a_time::one_at_a_time;
pub use recycle::recycle;
pub use spares::spares;
pub use workers::workers;

use super::{Point, Settings, Step};

/// The knobs to sweep, in the target file's order, each with the values to try.
pub type Knobs = Vec<(String, Vec<String>)>;

/// What every strategy returns before the caller renders the configuration.
pub struct Found {
    pub baseline: Option<Point>,
    pub steps: Vec<Step>,
    pub recommended: Settings,
    pub evidence: Vec<(String, String, String)>,
}

pub const STRATEGIES: [&str; 5] = ["one-at-a-time", "workers", "recycle", "spares", "keepalive"];

/// Trials a strategy plans, for the plan shown before it starts.
pub fn planned_trials(strategy: &str, knobs: &Knobs) -> usize {
    let values = |name: &str| knobs.iter().find(|(k, _)| k == name).map_or(0, |(_, v)| v.len());
    match strategy {
        "one-at-a-time" => 1 + knobs.iter().map(|(_, v)| v.len().saturating_sub(1)).sum::<usize>(),
        // Coarse powers of two, then a bisection.
        "workers" => {
            let n = values("workers");
            if n <= 5 { n } else { (n as f64).log2().ceil() as usize + 1 + (n as f64).log2().ceil() as usize / 2 + 1 }
        }
        "recycle" => 3,
        "spares" => 1 + spares::candidates(knobs).len(),
        "keepalive" => values("keepalive").max(2),
        _ => 0,
    }
}

/// The value of a knob in settings, or "" when unset.
fn value(s: &Settings, knob: &str) -> String {
    s.get(knob).unwrap_or("").to_string()
}

#[cfg(test)]
mod tests;
