//! Keep-alive on or off, measured with a share of slow clients: on a pre-forking server each
//! kept-alive connection holds a worker, so slow clients can starve the fast ones.

use super::verdict::{Challenger, effect_text, judge};
use super::vocabulary::pct;
use crate::server::front;
use crate::server::settings::Settings;
use crate::tune::evidence::Evidence;
use crate::tune::step::Step;
use crate::tune::strategies::vocabulary::{Found, Knobs, value};
use crate::tune::tuner::Tuner;

/// Measures each keepalive value (on and off by default), with and without a front proxy when
/// the knobs list `front`, under the tuner's load plus slow clients (a fifth at 33.6 kbps
/// unless the load throttles already); the objective picks.
pub fn keepalive(t: &mut Tuner, knobs: &Knobs, base: &Settings) -> Found {
    let mut found = Found { baseline: None, steps: Vec::new(), recommended: base.clone(), evidence: Vec::new() };
    let listed = |knob: &str| knobs.iter().find(|(k, _)| k == knob).map(|(_, v)| v.clone());
    let values: Vec<String> = listed("keepalive").unwrap_or_else(|| vec!["on".into(), "off".into()]);
    // With a `front` knob, every keep-alive value is measured with and without the front (a
    // front takes the clients' keep-alive off the workers), all in the same rounds.
    let fronts: Vec<Option<String>> = match listed(front::KNOB) {
        Some(f) if !f.is_empty() => f.into_iter().map(Some).collect(),
        _ => vec![None],
    };
    let mut load = t.load.clone();
    if load.spec.throttle.is_none() {
        // A modem's 33.6 kbps for a fifth of the clients: the slow clients the seeds mean.
        load.spec.throttle = Some(33_600.0 / 8.0);
        load.spec.slow_share = Some(0.2);
    }
    let mut combos: Vec<(String, Option<String>)> = Vec::new();
    for f in &fronts {
        for v in &values {
            if !combos.contains(&(v.clone(), f.clone())) {
                combos.push((v.clone(), f.clone()));
            }
        }
    }
    let Some(first) = combos.first().cloned() else { return found };
    let settings_of = |(v, f): &(String, Option<String>)| {
        let s = base.with("keepalive", v);
        match f {
            Some(f) => s.with(front::KNOB, f),
            None => s,
        }
    };
    let label = |(v, f): &(String, Option<String>)| match f {
        Some(f) => format!("{v}, front {f}"),
        None => v.clone(),
    };
    let challengers: Vec<Challenger> =
        combos[1..].iter().map(|c| Challenger { value: label(c), settings: settings_of(c) }).collect();
    let name_of = |v: &str| format!("keepalive={}", v.replace(", front ", " front="));
    let Some(j) = judge(t, &load, &name_of(&label(&first)), &settings_of(&first), &challengers, &name_of) else {
        return found;
    };
    let first_point = j.incumbent.clone();
    found.baseline = Some(first_point.clone());
    let (best, best_point) = match j.chosen {
        Some(i) => (combos[i + 1].clone(), j.challengers[i].point.clone()),
        None => (first.clone(), first_point.clone()),
    };
    let points: Vec<(String, crate::tune::point::Point)> = std::iter::once((label(&first), first_point.clone()))
        .chain(j.challengers.iter().map(|c| (c.value.clone(), c.point.clone())))
        .collect();
    let occupancy = |p: &crate::tune::point::Point| {
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
    let change = lead
        .and_then(|c| c.effect)
        .map_or(format!("{:+.1}%", pct(best_point.rps(), first_point.rps())), |e| effect_text(&e));
    let line = format!(
        "keepalive {}: {change} against {} {slow}, {} over {} [{}]",
        label(&best),
        label(&first),
        j.verdict.word(),
        j.rounds_text(),
        rows.join("; ")
    );
    let knob = if best.1.is_some() { "keepalive, front" } else { "keepalive" };
    found.steps.push(Step {
        knob: knob.into(),
        before_value: label(&first),
        after_value: label(&best),
        adopted: j.chosen.is_some(),
        verdict: Some(j.verdict),
        effect: lead.and_then(|c| c.effect),
        rounds: j.rounds,
        before: first_point,
        after: best_point,
        candidates: points.iter().map(|(_, p)| p.clone()).collect(),
        // The candidates begin with the incumbent.
        challenger: j.chosen.is_none().then(|| j.lead_index().map(|i| i + 1)).flatten(),
        evidence: line.clone(),
    });
    found.recommended = settings_of(&best);
    found.evidence.push(Evidence::new("keepalive", value(&found.recommended, "keepalive"), line.clone()));
    if best.1.is_some() {
        found.evidence.push(Evidence::new(front::KNOB, value(&found.recommended, front::KNOB), line));
    }
    found
}
