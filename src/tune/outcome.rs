//! What a tune concluded: its steps, the recommended settings and their evidence, and what
//! the tune cost.

use serde::{Deserialize, Serialize};

use super::baseline;
use super::evidence::Evidence;
use super::noise;
use super::point::Point;
use super::step::Step;
use crate::server::settings::Settings;

/// What a strategy concluded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub strategy: String,
    pub objective: String,
    pub baseline: Option<Point>,
    pub steps: Vec<Step>,
    pub recommended: Settings,
    /// One line of evidence per recommended value.
    pub evidence: Vec<Evidence>,
    /// Why the run stopped before its plan was done (time budget, Ctrl-C).
    pub stopped: Option<String>,
    /// The recommended configuration in the server's own syntax.
    pub config: String,
    /// With the user's own configuration tree: the unified diff of their files, by tree
    /// ("apache2", "nginx", "php-fpm"); `patch -p1 -d DIR` applies each in its main file's
    /// directory. Empty when nothing of theirs changes.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub diffs: std::collections::BTreeMap<String, String>,
    /// What the tune cost, and that against trying every configuration.
    #[serde(default)]
    pub cost: Cost,
    pub points: Vec<Point>,
    /// Where the server and the client ran (every point records its own too).
    #[serde(default)]
    pub placement: Option<crate::sys::cpus::Placement>,
    /// Every swept knob's baseline (what the user runs) and where it came from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub baseline_values: Vec<baseline::Origin>,
    /// The knobs the run stopped before judging in full (time budget, Ctrl-C): they stay as
    /// the baseline has them, unless a verdict adopted a value before the stop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unjudged: Vec<String>,
    /// The noise of the windows measured: their scatter and the CPU others took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<noise::Noise>,
    /// The smallest change worth adopting, % (--threshold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_pct: Option<f64>,
}

/// What a tune measured, and how that compares with measuring the full grid of its knobs'
/// values at the same repeats.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// Load windows measured: every repeat, round and re-measurement.
    pub windows: usize,
    /// Server launches: one per point, but for windows measured on a server kept running
    /// from an earlier window of the same configuration.
    pub launches: usize,
    /// Windows measured on a kept server: no launch, no warm-up before them.
    #[serde(default)]
    pub kept_windows: usize,
    /// Seconds under load, over every window.
    pub measuring_s: f64,
    /// Seconds of the trials, launches and warm-ups included.
    pub trials_s: f64,
    /// Configurations in the full grid of the knobs' values (None without knobs).
    pub grid_configurations: Option<u64>,
    /// The repeats each configuration of the grid would be measured (`--repeats`).
    pub grid_repeats: usize,
    /// The windows measured over the grid's (its configurations times the repeats).
    pub grid_share: Option<f64>,
}

impl Cost {
    /// The cost of `points`, against a grid of `configurations` measured `repeats` times each.
    pub fn of(points: &[Point], configurations: Option<u64>, repeats: usize) -> Cost {
        let windows: usize = points.iter().map(|p| p.samples.len()).sum();
        let grid_windows = configurations.map(|c| c.saturating_mul(repeats.max(1) as u64));
        Cost {
            windows,
            launches: points.iter().map(|p| p.launches).sum(),
            kept_windows: points.iter().filter(|p| p.launches == 0).map(|p| p.samples.len()).sum(),
            measuring_s: points.iter().flat_map(|p| &p.samples).filter_map(|s| s.window_s).sum(),
            trials_s: points.iter().map(|p| p.seconds).sum(),
            grid_configurations: configurations,
            grid_repeats: repeats.max(1),
            grid_share: grid_windows.filter(|g| *g > 0).map(|g| windows as f64 / g as f64),
        }
    }

    /// "Cost: 28 windows in 6 launches (20 windows on kept servers), 42.0 s under load (71.3 s
    /// of trials); 64% of the full grid's windows (11 configurations x 2 repeats)".
    pub fn describe(&self) -> String {
        let kept = match self.kept_windows {
            0 => String::new(),
            n => format!(" ({n} windows on kept servers)"),
        };
        let mut out = format!(
            "{} windows in {} launches{kept}, {:.1} s under load ({:.1} s of trials)",
            self.windows, self.launches, self.measuring_s, self.trials_s
        );
        if let (Some(share), Some(c)) = (self.grid_share, self.grid_configurations) {
            out.push_str(&format!(
                "; {:.0}% of the full grid's windows ({c} configurations x {} repeats)",
                share * 100.0,
                self.grid_repeats
            ));
        }
        out
    }
}

impl Outcome {
    /// The knobs recommended at another value than their baseline, with both values.
    pub fn changes(&self) -> Vec<(String, String, String)> {
        self.baseline_values
            .iter()
            .filter_map(|o| {
                let now = self.recommended.get(&o.knob)?;
                (!baseline::same_value(now, &o.value)).then(|| (o.knob.clone(), o.value.clone(), now.to_string()))
            })
            .collect()
    }

    /// Whether the run ended before its plan: stopped (time budget, Ctrl-C) or with knobs
    /// not judged. Stored as "interrupted".
    pub fn cut_short(&self) -> bool {
        self.stopped.is_some() || !self.unjudged.is_empty()
    }

    /// Whether no knob was judged at all (each swept knob was cut short).
    pub fn judged_nothing(&self) -> bool {
        !self.unjudged.is_empty()
            && self.unjudged.len() >= self.baseline_values.iter().filter(|o| self.swept(&o.knob)).count()
    }

    /// Whether `knob` was swept (it has a step or an evidence line).
    fn swept(&self, knob: &str) -> bool {
        self.evidence.iter().any(|e| e.knob == knob) || self.steps.iter().any(|s| s.knob == knob)
    }

    /// The point that stands for the recommendation: the last adopted step's, else the
    /// baseline, else the first point that was measured at all.
    pub fn best(&self) -> Option<&Point> {
        self.steps
            .iter()
            .rev()
            .find(|s| s.adopted)
            .map(|s| &s.after)
            .or(self.baseline.as_ref())
            .or_else(|| self.points.iter().find(|p| p.ok()))
    }
}
