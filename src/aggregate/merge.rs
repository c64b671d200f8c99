//! Combines the reports of runs made at the same time from several client machines into one,
//! exactly: the histograms travel in the JSON, so the merged percentiles are those of one
//! histogram of all the requests.

use std::time::Duration;

use anyhow::Context;

use super::Summary;
use super::result::{BenchReport, Breakdown, ClientCpu, Coalesced, Part};

/// Merges `reports` (named by `names` in errors). The runs are taken as concurrent: the
/// duration is the longest, the rates are summed.
pub fn merge(reports: &[BenchReport], names: &[String]) -> anyhow::Result<BenchReport> {
    let first = reports.first().context("nothing to merge")?;
    for (r, name) in reports.iter().zip(names) {
        check_numbers(r).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    }
    let max = Duration::from_secs_f64(reports.iter().map(|r| r.options.timeout_s).fold(0.0, f64::max).max(0.001));
    let mut summary = Summary::new(max);
    for (r, name) in reports.iter().zip(names) {
        let s = Summary::from_result(&r.result, max).with_context(|| format!("{name} cannot be merged"))?;
        summary.merge(&s);
    }
    let longest = reports.iter().map(|r| r.result.duration_s).fold(0.0, f64::max);
    let mut result =
        summary.to_result(Duration::from_secs_f64(longest), reports.iter().map(|r| r.result.in_flight_at_end).sum());
    result.requests_per_s = reports.iter().map(|r| r.result.requests_per_s).sum();
    result.bytes.per_s = reports.iter().map(|r| r.result.bytes.per_s).sum();
    result.scheduled = reports.iter().map(|r| r.result.scheduled).sum();
    result.unsent = reports.iter().map(|r| r.result.unsent).sum();
    result.coalesced = Coalesced::merged(reports.iter().map(|r| r.result.coalesced.as_ref()));

    let mut options = first.options.clone();
    options.connections = reports.iter().map(|r| r.options.connections).sum();
    options.threads = reports.iter().map(|r| r.options.threads).sum();
    options.rate = reports.iter().map(|r| r.options.rate).sum();

    let (user, sys) = reports.iter().fold((0.0, 0.0), |(u, s), r| (u + r.client_cpu.user_s, s + r.client_cpu.sys_s));
    let cores = reports.iter().map(|r| r.client_cpu.cores_available).sum::<usize>();
    let client_cpu = ClientCpu {
        user_s: user,
        sys_s: sys,
        percent_of_available: (user + sys) / (longest.max(1e-9) * cores.max(1) as f64) * 100.0,
        cores_available: cores,
        us_per_request: (result.succeeded > 0).then(|| (user + sys) * 1e6 / result.succeeded as f64),
        percent_of_machine: None,
    };
    let warnings = reports
        .iter()
        .zip(names)
        .flat_map(|(r, name)| r.warnings.iter().map(move |w| format!("{name}: {w}")))
        .collect();
    let breakdown = Breakdown {
        stages: merge_parts(reports.iter().map(|r| &r.breakdown.stages), max)?,
        requests: merge_parts(reports.iter().map(|r| &r.breakdown.requests), max)?,
        clients: merge_parts(reports.iter().map(|r| &r.breakdown.clients), max)?,
        hosts: merge_parts(reports.iter().map(|r| &r.breakdown.hosts), max)?,
    };
    Ok(BenchReport {
        // Written in this version's layout, whichever the reports were in.
        schema: super::result::SCHEMA_ID.into(),
        webtune_version: crate::VERSION.into(),
        started_at: reports.iter().map(|r| r.started_at.clone()).min().unwrap_or_default(),
        target: first.target.clone(),
        options,
        interrupted: reports.iter().any(|r| r.interrupted),
        result,
        // Per-second samples of different machines do not line up.
        reply_rate: None,
        client_cpu,
        warnings,
        breakdown,
        merged_runs: Some(reports.iter().map(|r| r.merged_runs.unwrap_or(1)).sum()),
        // Several machines: no one placement.
        placement: None,
        thresholds: Vec::new(),
    })
}

/// Parts with the same label are one part; order of first appearance.
fn merge_parts<'a>(lists: impl Iterator<Item = &'a Vec<Part>>, max: Duration) -> anyhow::Result<Vec<Part>> {
    let mut merged: Vec<(String, f64, Summary)> = Vec::new();
    for part in lists.flatten() {
        let s = Summary::from_part(part, max).with_context(|| format!("part {:?}", part.label))?;
        match merged.iter_mut().find(|(label, _, _)| *label == part.label) {
            Some((_, secs, sum)) => {
                *secs = secs.max(part.duration_s);
                sum.merge(&s);
            }
            None => merged.push((part.label.clone(), part.duration_s, s)),
        }
    }
    Ok(merged.into_iter().map(|(label, secs, s)| s.to_part(label, secs)).collect())
}

/// The largest time (in seconds) a report may hold: a year, as any input duration.
const MAX_SECONDS: f64 = crate::input::MAX_DURATION.as_secs() as f64;
/// The names of a latency summary's figures (milliseconds).
const LATENCY_FIGURES: [&str; 9] = ["min", "mean", "stdev", "max", "p50", "p75", "p90", "p99", "p999"];
/// The largest rate (per second) a report may hold.
const MAX_RATE: f64 = 1e12;

/// Every number of a report (it may come from another machine, or be crafted) finite and in
/// its range: times (`*_s`, `*_ms`, `*_us`) from 0 to a year, rates (`*per_s`, `rate`) from
/// 0 to 1e12, shares and percentages not negative. The error names the first field that is not.
pub fn check_numbers(report: &BenchReport) -> Result<(), String> {
    let value = serde_json::to_value(report).map_err(|e| format!("cannot be read back: {e}"))?;
    check_value(&value, "")
}

fn check_value(v: &serde_json::Value, path: &str) -> Result<(), String> {
    match v {
        serde_json::Value::Object(map) => map.iter().try_for_each(|(k, v)| check_value(v, &format!("{path}/{k}"))),
        serde_json::Value::Array(items) => {
            items.iter().enumerate().try_for_each(|(i, v)| check_value(v, &format!("{path}/{i}")))
        }
        serde_json::Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            let key = path.rsplit('/').next().unwrap_or("");
            let limit = if key.ends_with("_s") && !key.ends_with("per_s") {
                MAX_SECONDS
            } else if key.ends_with("_ms") || LATENCY_FIGURES.contains(&key) {
                MAX_SECONDS * 1e3
            } else if key.ends_with("_us") || key.ends_with("us_per_request") {
                MAX_SECONDS * 1e6
            } else if key.ends_with("per_s") || key == "rate" {
                MAX_RATE
            } else {
                f64::MAX
            };
            // A figure with a unit is never negative; others only need to be finite.
            if !x.is_finite() || x > limit || (x < 0.0 && limit < f64::MAX) {
                return Err(format!(
                    "{path} is {} (expected a number from 0 to {limit})",
                    crate::input::echo(&n.to_string())
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}
