//! Keep-alive on or off, measured with a share of slow clients: on a pre-forking server each
//! kept-alive connection holds a worker, so slow clients can starve the fast ones.

use super::verdict::{Challenger, effect_text, judge};
use super::{Found, Knobs, value};
use crate::tune::strategies::one_at_a_time::pct;
use crate::tune::{Settings, Step, Tuner};

/// Measures each keepalive value (on and off by default) under the tuner's load plus slow
/// clients (a fifth at 33.6 kbps unless the load throttles already); the objective picks.
pub fn keepalive(t: &mut Tuner, knobs: &Knobs, base: &Settings) -> Found {
    let mut found = Found { baseline: None, steps: Vec::new(), recommended: base.clone(), evidence: Vec::new() };
    let values: Vec<String> = knobs
        .iter()
        .find(|(k, _)| k == "keepalive")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| vec!["on".into(), "off".into()]);
    let mut load = t.load.clone();
    if load.spec.throttle.is_none() {
        // A modem's 33.6 kbps for a fifth of the clients: the slow clients the seeds mean.
        load.spec.throttle = Some(33_600.0 / 8.0);
        load.spec.slow_share = Some(0.2);
    }
    let Some(first_v) = values.first().cloned() else { return found };
    let challengers: Vec<Challenger> = values[1..]
        .iter()
        .filter(|v| **v != first_v)
        .map(|v| Challenger { value: v.clone(), settings: base.with("keepalive", v) })
        .collect();
    let name_of = |v: &str| format!("keepalive={v}");
    let Some(j) = judge(t, &load, &name_of(&first_v), &base.with("keepalive", &first_v), &challengers, &name_of) else {
        return found;
    };
    let first = j.incumbent.clone();
    found.baseline = Some(first.clone());
    let best = match j.chosen {
        Some(i) => (j.challengers[i].value.clone(), j.challengers[i].point.clone()),
        None => (first_v.clone(), first.clone()),
    };
    let points: Vec<(String, crate::tune::Point)> = std::iter::once((first_v.clone(), first.clone()))
        .chain(j.challengers.iter().map(|c| (c.value.clone(), c.point.clone())))
        .collect();
    let occupancy = |p: &crate::tune::Point| {
        p.samples
            .iter()
            .filter_map(|s| s.counters.as_ref())
            .filter_map(|c| c.get("busy").and_then(|b| b.as_u64()).zip(c.get("alive").and_then(|a| a.as_u64())))
            .map(|(b, a)| format!("{b} of {a} workers busy"))
            .next()
            .unwrap_or_default()
    };
    let rows: Vec<String> = points
        .iter()
        .map(|(v, p)| {
            if p.ok() {
                format!("{v}: {:.1} req/s, p99 {:.1} ms {}", p.rps(), p.p99(), occupancy(p))
            } else {
                format!("{v}: failed: {}", p.cause().unwrap_or(""))
            }
        })
        .collect();
    let short = |x: f64| format!("{x:.1}").trim_end_matches(".0").to_string();
    let share = load.spec.slow_share.map_or("all".to_string(), |s| format!("{}%", short(s * 100.0)));
    let slow = format!("with {share} of clients at {}kbps", short(load.spec.throttle.unwrap_or(0.0) * 8.0 / 1000.0));
    let lead = j.lead();
    let change =
        lead.and_then(|c| c.effect).map_or(format!("{:+.1}%", pct(best.1.rps(), first.rps())), |e| effect_text(&e));
    let line = format!(
        "keepalive {}: {change} against {first_v} {slow}, {} over {} interleaved rounds [{}]",
        best.0,
        j.verdict.word(),
        j.rounds,
        rows.join("; ")
    );
    found.steps.push(Step {
        knob: "keepalive".into(),
        before_value: first_v.clone(),
        after_value: best.0.clone(),
        adopted: j.chosen.is_some(),
        verdict: Some(j.verdict),
        effect: lead.and_then(|c| c.effect),
        rounds: j.rounds,
        before: first,
        after: best.1.clone(),
        candidates: points.iter().map(|(_, p)| p.clone()).collect(),
        evidence: line.clone(),
    });
    found.recommended = base.with("keepalive", &best.0);
    found.evidence.push(("keepalive".into(), value(&found.recommended, "keepalive"), line));
    found
}
