//! The seeds' method: a baseline, then each knob in turn; a value is adopted only when it
//! beats the current configuration by more than the measured noise.

use super::{Found, Knobs, value};
use crate::tune::{Settings, Step, Tuner};

/// Measures a baseline, then tries each knob's values in turn on the current configuration;
/// a knob that `base` leaves unset starts at its first listed value.
pub fn one_at_a_time(t: &mut Tuner, knobs: &Knobs, base: &Settings) -> Found {
    let mut current = base.clone();
    for (knob, values) in knobs {
        if current.get(knob).is_none()
            && let Some(first) = values.first()
        {
            current = current.with(knob, first);
        }
    }
    let mut found = Found { baseline: None, steps: Vec::new(), recommended: current.clone(), evidence: Vec::new() };
    let Some(mut here) = t.point("baseline", &current) else { return found };
    found.baseline = Some(here.clone());
    for (knob, values) in knobs {
        let before_value = value(&current, knob);
        let mut best = (before_value.clone(), here.clone());
        let mut candidates = Vec::new();
        for v in values.iter().filter(|v| **v != before_value) {
            let settings = current.with(knob, v);
            let Some(p) = t.point(&format!("{knob}={v}"), &settings) else { break };
            if t.objective.beats(&p, &best.1) {
                best = (v.clone(), p.clone());
            }
            candidates.push(p);
        }
        let adopted = best.0 != before_value;
        let evidence = step_evidence(t, knob, &before_value, &here, &best.0, &best.1, &candidates, adopted);
        found.steps.push(Step {
            knob: knob.clone(),
            before_value: before_value.clone(),
            after_value: best.0.clone(),
            adopted,
            before: here.clone(),
            after: best.1.clone(),
            candidates,
            evidence: evidence.clone(),
        });
        if adopted {
            current = current.with(knob, &best.0);
            here = best.1;
        }
        found.evidence.push((knob.clone(), value(&current, knob), evidence));
        if t.stopped.is_some() {
            break;
        }
    }
    found.recommended = current;
    found
}

#[allow(clippy::too_many_arguments)]
fn step_evidence(
    t: &Tuner,
    knob: &str,
    before: &str,
    here: &crate::tune::Point,
    best_value: &str,
    best: &crate::tune::Point,
    candidates: &[crate::tune::Point],
    adopted: bool,
) -> String {
    let failed: Vec<String> =
        candidates.iter().filter_map(|p| p.cause().map(|c| format!("{} failed: {c}", p.step))).collect();
    let failed = if failed.is_empty() { String::new() } else { format!("; {}", failed.join("; ")) };
    if adopted {
        format!(
            "{knob} {before} -> {best_value}: {:.1} -> {:.1} req/s ({:+.1}%), p99 {:.2} -> {:.2} ms, beyond the repeats' spread{failed}",
            here.rps(),
            best.rps(),
            pct(best.rps(), here.rps()),
            here.p99(),
            best.p99()
        )
    } else {
        let tried: Vec<String> = candidates
            .iter()
            .filter(|p| p.ok())
            .map(|p| format!("{} {:.1} req/s ({:+.1}%)", p.step, p.rps(), pct(p.rps(), here.rps())))
            .collect();
        let _ = t;
        format!(
            "{knob} stays {before} ({:.1} req/s): no value beat it by more than the noise [{}]{failed}",
            here.rps(),
            tried.join(", ")
        )
    }
}

/// The change from `before` to `after`, in percent of `before` (0 when `before` is not positive).
pub fn pct(after: f64, before: f64) -> f64 {
    if before > 0.0 { (after - before) / before * 100.0 } else { 0.0 }
}
