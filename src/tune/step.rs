//! One comparison and what it concluded: the steps a tune's report lists.

use serde::{Deserialize, Serialize};

use super::point::Point;

/// What a comparison concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// The interval excludes zero and the change clears the threshold.
    #[serde(rename = "adopted")]
    Adopted,
    /// The interval lies within plus or minus the threshold.
    #[serde(rename = "no effect")]
    NoEffect,
    /// The interval lies wholly below zero: a loss beyond noise, which "no effect" would hide.
    #[serde(rename = "worse")]
    Worse,
    /// Its tail (p99.9) is many times the incumbent's: refused whatever its throughput.
    #[serde(rename = "worse tail")]
    WorseTail,
    /// No number of rounds up to the cap could settle the change (its interval, projected to
    /// the cap, still straddles the threshold): the cheaper configuration is the one kept.
    #[serde(rename = "cheaper")]
    Cheaper,
    /// Neither, within the rounds allowed: the incumbent is kept, and the report says so.
    #[serde(rename = "undecided")]
    Undecided,
}

impl Verdict {
    /// The word the tables and evidence use.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Adopted => "adopted",
            Verdict::NoEffect => "no effect",
            Verdict::Worse => "worse",
            Verdict::WorseTail => "worse tail",
            Verdict::Cheaper => "cheaper",
            Verdict::Undecided => "undecided",
        }
    }
}

/// One before/after comparison (a step of one-at-a-time, or a strategy's conclusion).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    pub knob: String,
    pub before_value: String,
    pub after_value: String,
    pub adopted: bool,
    /// The judgement, with its measured confidence (None: a strategy that picks by its own
    /// rule, such as the knee of the workers curve).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// The change of the objective from `before` to `after` (to the best challenger when none
    /// was adopted), with its interval, %; + is better.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<crate::stats::Effect>,
    /// Rounds measured: each value once per round, in turn.
    #[serde(default)]
    pub rounds: usize,
    pub before: Point,
    pub after: Point,
    /// Every candidate measured for this step.
    pub candidates: Vec<Point>,
    /// Which of `candidates` challenged the kept value most closely (the one `effect` is
    /// of); None when adopted (then it is `after`) or for a strategy that picks by its rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub challenger: Option<usize>,
    pub evidence: String,
}

impl Step {
    /// The point the kept or adopted value was judged against: the adopted one, the recorded
    /// challenger, else the best candidate that differs from `before` (older stored steps).
    pub fn challenger_point(&self) -> Option<&Point> {
        if self.adopted {
            return Some(&self.after);
        }
        if let Some(p) = self.challenger.and_then(|i| self.candidates.get(i)) {
            return Some(p);
        }
        self.candidates
            .iter()
            .filter(|p| p.ok() && p.settings != self.before.settings)
            .max_by(|a, b| a.rps().total_cmp(&b.rps()))
            .or_else(|| self.candidates.iter().find(|p| p.settings != self.before.settings))
    }
}
