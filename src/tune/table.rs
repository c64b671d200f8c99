//! The seeds' before/after tables: the metrics, the % change, and the configuration with the
//! changed values marked.

use std::fmt::Write;

use super::strategies::Found;
use super::{Outcome, Point, Settings};

/// One table: `title`, then metrics and configuration of `before` and `after`.
pub fn before_after(title: &str, before: &Point, after: &Point) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{title}");
    let _ = writeln!(out, "  {:<22} {:>12} {:>12} {:>9}", "", "Before", "After", "Change");
    let mut metric = |name: &str, b: Option<f64>, a: Option<f64>, digits: usize| {
        let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.digits$}"));
        let change = match (b, a) {
            (Some(b), Some(a)) if b != 0.0 => format!("{:+.1}%", (a - b) / b * 100.0),
            _ => String::new(),
        };
        let _ = writeln!(out, "  {name:<22} {:>12} {:>12} {change:>9}", fmt(b), fmt(a));
    };
    let ok = |p: &Point, f: &dyn Fn(&Point) -> f64| p.ok().then(|| f(p));
    metric("Requests/s", ok(before, &|p| p.rps()), ok(after, &|p| p.rps()), 1);
    metric("p99 latency (ms)", ok(before, &|p| p.p99()), ok(after, &|p| p.p99()), 2);
    let mem = |p: &Point, f: &dyn Fn(&super::point::MemUse) -> u64| p.memory().map(|m| f(m) as f64);
    metric("Worker USS (KiB)", mem(before, &|m| m.worker_uss_max_kib), mem(after, &|m| m.worker_uss_max_kib), 0);
    metric("Server PSS (KiB)", mem(before, &|m| m.pss_total_kib), mem(after, &|m| m.pss_total_kib), 0);
    let others = |p: &Point| p.ok().then_some(p.interference * 100.0);
    metric("Others' CPU, max (%)", others(before), others(after), 1);
    let client = |p: &Point| p.client_share.filter(|_| p.ok()).map(|s| s * 100.0);
    metric("Client CPU, max (%)", client(before), client(after), 1);
    let _ = writeln!(out, "  Configuration");
    out += &configuration(&before.settings, &after.settings);
    for p in [before, after] {
        if let Some(cause) = p.cause() {
            let _ = writeln!(out, "  ({} failed: {cause})", p.step);
        }
        for note in &p.notes {
            let _ = writeln!(out, "  ({}: {note})", p.step);
        }
    }
    out
}

/// The configuration of both, one knob per line; a changed knob is marked with '*'.
fn configuration(before: &Settings, after: &Settings) -> String {
    let mut out = String::new();
    let mut names: Vec<&String> = before.0.iter().map(|(k, _)| k).collect();
    for (k, _) in &after.0 {
        if !names.contains(&k) {
            names.push(k);
        }
    }
    for k in names {
        let (b, a) = (before.get(k).unwrap_or("-"), after.get(k).unwrap_or("-"));
        let mark = if a != b { '*' } else { ' ' };
        let _ = writeln!(out, "{mark} {k:<22} {b:>12} {a:>12}");
    }
    out
}

/// The whole text report: each step's table, the start-to-finish table, the recommendation.
pub fn report(o: &Outcome) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Strategy: {}; objective: {}", o.strategy, o.objective);
    if let Some(p) = &o.placement {
        let share = o.points.iter().map(|p| p.client_share).fold(None, super::point::max_share);
        let share = share.map_or(String::new(), |s| {
            format!("; the client took at most {:.1}% of the {} core(s) they may use", s * 100.0, p.cores())
        });
        let _ = writeln!(out, "Placement: {}{share}", p.describe());
        // Once in the report, whichever point crossed the line first (each keeps its own note).
        if let Some(w) = o.points.iter().find_map(|pt| crate::sys::cpus::shared_client_warning(p, pt.client_share?)) {
            let _ = writeln!(out, "WARNING: {w}");
        }
    }
    for (i, step) in o.steps.iter().enumerate() {
        let verdict = match (step.verdict, step.adopted) {
            (Some(v), _) => v.word(),
            (None, true) => "adopted",
            (None, false) => "kept",
        };
        let title =
            format!("\nStep {}: {} {} -> {} ({verdict})", i + 1, step.knob, step.before_value, step.after_value);
        out += &before_after(&title, &step.before, &step.after);
        if let Some(e) = &step.effect {
            let _ = writeln!(
                out,
                "  Effect {:+.1}%, 99% interval [{:+.1}%, {:+.1}%], over {} interleaved rounds",
                e.pct, e.low_pct, e.high_pct, step.rounds
            );
        }
        let _ = writeln!(out, "  {}", step.evidence);
    }
    if let (Some(first), Some(last)) = (&o.baseline, o.steps.iter().rev().find(|s| s.adopted).map(|s| &s.after)) {
        out += &before_after("\nStart to finish", first, last);
    }
    if let Some(why) = &o.stopped {
        let _ = writeln!(out, "\nStopped early ({why}): the recommendation is the best found so far.");
    }
    let _ = writeln!(out, "\nRecommended configuration:");
    for line in o.config.lines() {
        let _ = writeln!(out, "    {line}");
    }
    let _ = writeln!(out, "\nEvidence:");
    for (knob, value, why) in &o.evidence {
        let _ = writeln!(out, "  {knob} = {value}: {why}");
    }
    out
}

impl Found {
    /// The full outcome: these findings plus the run's context, rendered config and every point.
    pub fn into_outcome(
        self,
        strategy: &str,
        objective: String,
        stopped: Option<String>,
        config: String,
        points: Vec<Point>,
    ) -> Outcome {
        Outcome {
            strategy: strategy.into(),
            objective,
            baseline: self.baseline,
            steps: self.steps,
            recommended: self.recommended,
            evidence: self.evidence,
            stopped,
            config,
            placement: points.iter().find_map(|p| p.placement.clone()),
            points,
        }
    }
}
