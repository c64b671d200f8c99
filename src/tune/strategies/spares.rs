//! Spare workers (StartServers, Min/MaxSpareServers, pm.start/min/max_spare_servers): a burst
//! after an idle spell, with each setting; the time to first byte during the burst against
//! steady state. The cheapest setting (fewest idle workers kept) whose burst p99 stays near
//! steady state wins.

use crate::server::settings::Settings;
use crate::tune::evidence::Evidence;
use crate::tune::step::Step;
use crate::tune::strategies::vocabulary::{Found, Knobs};
use crate::tune::tuner::Tuner;

const SPARE_KNOBS: [&str; 3] = ["start_workers", "min_spare", "max_spare"];
/// How long the server idles before the burst (spares above the maximum retire meanwhile).
const IDLE_SECS: u64 = 3;

/// Every combination of the spare knobs' values, at most 16.
pub fn candidates(knobs: &Knobs) -> Vec<Vec<(String, String)>> {
    let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (k, values) in knobs.iter().filter(|(k, _)| SPARE_KNOBS.contains(&k.as_str())) {
        combos = combos
            .into_iter()
            .flat_map(|c| values.iter().map(move |v| [c.clone(), vec![(k.clone(), v.clone())]].concat()))
            .collect();
    }
    combos.retain(|c| !c.is_empty());
    combos.truncate(16);
    combos
}

/// The burst is the first repeat: later ones meet a pool the burst already grew.
/// A burst's p99 counts only the requests answered within its window: a pool too small for
/// the clients answers a few connections and leaves the others waiting past its end (1 lab
/// worker for 8 clients read a steady 23.9 ms p99 when its next spawn came after the window).
/// A burst that served under this share of the steady throughput did not absorb the load.
const SERVED_SHARE: f64 = 0.5;

fn burst_p99(p: &crate::tune::point::Point) -> f64 {
    p.samples.first().map_or(f64::INFINITY, |s| s.first_byte_p99_ms)
}

/// Idle workers a setting should keep: its cost in memory, when it could not be counted.
fn idle_cost(c: &[(String, String)]) -> u64 {
    let get = |k: &str| c.iter().find(|(n, _)| n == k).and_then(|(_, v)| v.parse::<u64>().ok()).unwrap_or(0);
    get("min_spare").max(get("start_workers").min(get("max_spare").max(get("min_spare"))))
}

/// Measures steady state, then a cold burst after an idle spell for each spare setting;
/// recommends the one keeping fewest idle workers whose burst first-byte p99 stays near steady.
pub fn spares(t: &mut Tuner, knobs: &Knobs, base: &Settings) -> Found {
    let mut found = Found { baseline: None, steps: Vec::new(), recommended: base.clone(), evidence: Vec::new() };
    let Some(steady) = t.point("steady", base) else { return found };
    found.baseline = Some(steady.clone());
    let steady_p99 = steady.median(|s| s.first_byte_p99_ms);
    let allowed = (steady_p99 * 1.5).max(steady_p99 + 5.0);
    let burst = t.load.clone();
    let burst =
        crate::tune::trial::Load { warm: false, idle_before: std::time::Duration::from_secs(IDLE_SECS), ..burst };
    let mut results = Vec::new();
    for c in candidates(knobs) {
        let settings = c.iter().fold(base.clone(), |s, (k, v)| s.with(k, v));
        let label = c.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ");
        let Some(p) = t.point_with(&format!("burst {label}"), &settings, &burst) else { break };
        // The workers the server really kept through the idle spell, else what the settings say.
        let cost = p.workers_at_start.map_or_else(|| idle_cost(&c), |n| n as u64);
        results.push((cost, settings, p));
    }
    let served = |p: &crate::tune::point::Point| p.samples.first().map_or(0.0, |s| s.rps);
    let absorbed =
        |p: &crate::tune::point::Point| p.ok() && burst_p99(p) <= allowed && served(p) >= steady.rps() * SERVED_SHARE;
    let good = results.iter().filter(|(_, _, p)| absorbed(p)).min_by_key(|(cost, _, _)| *cost);
    let table: Vec<String> = results
        .iter()
        .map(|(cost, s, p)| {
            let spare: Vec<String> = SPARE_KNOBS.iter().filter_map(|k| s.get(k).map(|v| format!("{k}={v}"))).collect();
            if p.ok() {
                format!("{} ({cost} idle): burst p99 {:.1} ms, {:.1} req/s", spare.join(" "), burst_p99(p), served(p))
            } else {
                format!("{} failed: {}", spare.join(" "), p.cause().unwrap_or(""))
            }
        })
        .collect();
    let head = format!(
        "steady first-byte p99 {steady_p99:.1} ms at {:.1} req/s; a burst after {IDLE_SECS} s idle may reach {allowed:.1} ms, serving half that or more; {}",
        steady.rps(),
        table.join("; ")
    );
    let measured = if t.stopped.is_some() { " measured before the run stopped" } else { "" };
    let cut_short = t.stopped.is_some();
    let line = |knob: &str, value: &str, why: String| Evidence { cut_short, ..Evidence::new(knob, value, why) };
    match good {
        Some((cost, settings, p)) => {
            for k in SPARE_KNOBS {
                if let Some(v) = settings.get(k) {
                    found.evidence.push(line(
                        k,
                        v,
                        format!(
                            "cheapest setting{measured} ({cost} idle workers) that keeps the burst near steady state: {head}"
                        ),
                    ));
                }
            }
            // Against the user's own spares (those the base sets): a setting that starves the
            // burst is a constraint only the chosen one meets, a verdict; one that absorbs it
            // keeps them (the cheaper setting saves memory, but gains nothing measured).
            let sets_any = SPARE_KNOBS.iter().any(|k| base.get(k).is_some());
            let users = |s: &Settings| SPARE_KNOBS.iter().all(|k| base.get(k).is_none_or(|v| s.get(k) == Some(v)));
            let users_starve =
                results.iter().filter(|(_, s, _)| users(s)).all(|(_, _, p)| !absorbed(p)) && !users(settings);
            found.steps.push(Step {
                knob: "spares".into(),
                before_value: "steady".into(),
                after_value: format!("{cost} idle"),
                adopted: true,
                verdict: (sets_any && users_starve).then_some(crate::tune::step::Verdict::Adopted),
                effect: None,
                rounds: 0,
                before: steady.clone(),
                after: p.clone(),
                candidates: results.iter().map(|(_, _, p)| p.clone()).collect(),
                challenger: None,
                evidence: head.clone(),
            });
            found.recommended = settings.clone();
        }
        None => found.evidence.push(line(
            "spares",
            "-",
            format!("no setting{measured} kept the burst near steady state: {head}"),
        )),
    }
    found
}
