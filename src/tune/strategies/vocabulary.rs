//! The words the strategies share: the knobs to sweep, what a strategy found, a knob's value
//! in settings, a change in percent.

use crate::server::settings::Settings;
use crate::tune::evidence::Evidence;
use crate::tune::point::Point;
use crate::tune::step::Step;

/// The knobs to sweep, in the target file's order, each with the values to try.
pub type Knobs = Vec<(String, Vec<String>)>;

/// What every strategy returns before the caller renders the configuration.
pub struct Found {
    pub baseline: Option<Point>,
    pub steps: Vec<Step>,
    pub recommended: Settings,
    pub evidence: Vec<Evidence>,
}

impl Found {
    /// The knobs of `knobs` with values to compare whose evidence says the run stopped before
    /// judging them in full, or that have no evidence at all.
    pub fn unjudged(&self, knobs: &Knobs) -> Vec<String> {
        knobs
            .iter()
            .filter(|(_, v)| v.len() > 1)
            .filter(|(k, _)| self.evidence.iter().find(|e| e.knob == *k).is_none_or(|e| e.cut_short))
            .map(|(k, _)| k.clone())
            .collect()
    }
}

/// The value of a knob in settings, or "" when unset.
pub fn value(s: &Settings, knob: &str) -> String {
    s.get(knob).unwrap_or("").to_string()
}

/// The change from `before` to `after`, % of `before` (0 when `before` is not positive).
pub fn pct(after: f64, before: f64) -> f64 {
    if before > 0.0 { (after - before) / before * 100.0 } else { 0.0 }
}
