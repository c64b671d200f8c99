//! The seeds' before/after tables: the metrics, the % change, and the configuration with the
//! changed values marked.

use std::fmt::Write;

use super::strategies::Found;
use crate::server::settings::Settings;
use crate::tune::outcome::Outcome;
use crate::tune::point::Point;

/// One table: `title`, then metrics and configuration of `before` and `after`.
pub fn before_after(title: &str, before: &Point, after: &Point) -> String {
    side_by_side(title, ["Before", "After"], before, after)
}

/// How a row's change is told: relative for quantities; in points for a row that is itself a
/// percentage (others' CPU 0.5% -> 0.7% is +0.2 pt, not +40%).
#[derive(Clone, Copy)]
enum Change {
    Relative,
    Points,
}

/// "+12.9%" or "+0.2 pt"; empty when either side is unknown (or a relative change of zero).
fn change_text(change: Change, before: Option<f64>, after: Option<f64>) -> String {
    match (change, before, after) {
        (Change::Relative, Some(b), Some(a)) if b != 0.0 => format!("{:+.1}%", (a - b) / b * 100.0),
        (Change::Points, Some(b), Some(a)) => format!("{:+.1} pt", a - b),
        _ => String::new(),
    }
}

/// One table: `title`, then the metrics and configuration of two points under `headings`
/// (before and after, or the kept value and its challenger).
pub fn side_by_side(title: &str, headings: [&str; 2], before: &Point, after: &Point) -> String {
    let mut grid = Grid::default();
    grid.row(' ', ["", headings[0], headings[1], "Change"]);
    let mut metric = |name: &str, b: Option<f64>, a: Option<f64>, digits: usize, change: Change| {
        let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.digits$}"));
        grid.row(' ', [name, &fmt(b), &fmt(a), &change_text(change, b, a)]);
    };
    use Change::{Points, Relative};
    let ok = |p: &Point, f: &dyn Fn(&Point) -> f64| p.ok().then(|| f(p));
    metric("Requests/s", ok(before, &|p| p.rps()), ok(after, &|p| p.rps()), 1, Relative);
    metric("p99 latency (ms)", ok(before, &|p| p.p99()), ok(after, &|p| p.p99()), 2, Relative);
    // The tail a throughput gain can hide (connections queued behind kept-alive ones).
    let tail = |p: &Point| p.ok().then(|| p.p999()).flatten();
    metric("p99.9 latency (ms)", tail(before), tail(after), 2, Relative);
    let mem = |p: &Point, f: &dyn Fn(&super::point::MemUse) -> u64| p.memory().map(|m| f(m) as f64);
    let (uss, pss) = (|m: &super::point::MemUse| m.worker_uss_max_kib, |m: &super::point::MemUse| m.pss_total_kib);
    metric("Worker USS (KiB)", mem(before, &uss), mem(after, &uss), 0, Relative);
    metric("Server PSS (KiB)", mem(before, &pss), mem(after, &pss), 0, Relative);
    // A front proxy's part of that, when either side has one (0 for the side without).
    let front = |p: &Point| p.memory().map(|m| m.front_pss_kib.unwrap_or(0) as f64);
    if [before, after].iter().any(|p| p.memory().is_some_and(|m| m.front_pss_kib.is_some())) {
        metric("  of it the front's", front(before), front(after), 0, Relative);
    }
    let others = |p: &Point| p.ok().then_some(p.interference * 100.0);
    metric("Others' CPU, max (%)", others(before), others(after), 1, Points);
    let client = |p: &Point| p.client_share.filter(|_| p.ok()).map(|s| s * 100.0);
    metric("Client CPU, max (%)", client(before), client(after), 1, Points);
    grid.rows.push(Row::Label("Configuration".into()));
    configuration(&mut grid, &before.settings, &after.settings);
    let mut out = format!("{title}\n{}", grid.render());
    // A kept value's step has the same point on both sides: its notes once.
    let points = if before.step == after.step { vec![before] } else { vec![before, after] };
    for p in points {
        if let Some(cause) = p.cause() {
            let _ = writeln!(out, "  ({} failed: {cause})", p.step);
        }
        for note in &p.notes {
            let _ = writeln!(out, "  ({}: {note})", p.step);
        }
    }
    out
}

/// What `challenger` changes from `incumbent`: "keepalive=off" ("workers=4, max_requests=100").
pub fn changes(incumbent: &Settings, challenger: &Settings) -> String {
    let changed: Vec<String> = challenger
        .0
        .iter()
        .filter(|(k, v)| incumbent.get(k) != Some(v.as_str()))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    changed.join(", ")
}

/// One step's table and its title: an adopted value against the one it replaced; a kept
/// value against the challenger that came closest, so a kept step still shows what was tried.
pub fn step_table(number: usize, step: &crate::tune::step::Step) -> String {
    let verdict = step_verdict(step);
    match step.challenger_point().filter(|_| !step.adopted) {
        Some(ch) => {
            let title = format!(
                "\nStep {number}: {} stays {}; best challenger {} ({verdict})",
                step.knob,
                step.before_value,
                changes(&step.before.settings, &ch.settings)
            );
            side_by_side(&title, ["Kept", "Challenger"], &step.before, ch)
        }
        None => {
            let title =
                format!("\nStep {number}: {} {} -> {} ({verdict})", step.knob, step.before_value, step.after_value);
            before_after(&title, &step.before, &step.after)
        }
    }
}

/// The word for a step's outcome: its verdict, else adopted or kept.
pub fn step_verdict(step: &crate::tune::step::Step) -> &'static str {
    match (step.verdict, step.adopted) {
        (Some(v), _) => v.word(),
        (None, true) => "adopted",
        (None, false) => "kept",
    }
}

/// The configuration of both, one knob per line; a changed knob is marked with '*'.
fn configuration(grid: &mut Grid, before: &Settings, after: &Settings) {
    let mut names: Vec<&String> = before.0.iter().map(|(k, _)| k).collect();
    for (k, _) in &after.0 {
        if !names.contains(&k) {
            names.push(k);
        }
    }
    for k in names {
        let (b, a) = (before.get(k).unwrap_or("-"), after.get(k).unwrap_or("-"));
        grid.row(if a != b { '*' } else { ' ' }, [k, b, a, ""]);
    }
}

/// A before/after table laid out once every cell is known: a long knob name
/// ("PerlSetVar SessionSerialize") or value (a path) widens its column for every row
/// instead of pushing the rest of its own row out of line.
#[derive(Default)]
struct Grid {
    rows: Vec<Row>,
}

enum Row {
    /// A mark ('*' for a changed knob), then name, before, after, change.
    Cells(char, [String; 4]),
    Label(String),
}

/// The narrowest each column is (the seeds' tables as webtune always printed them).
const MIN_WIDTHS: [usize; 4] = [22, 12, 12, 9];

impl Grid {
    fn row(&mut self, mark: char, cells: [&str; 4]) {
        self.rows.push(Row::Cells(mark, cells.map(str::to_string)));
    }

    fn render(&self) -> String {
        let mut w = MIN_WIDTHS;
        for row in &self.rows {
            if let Row::Cells(_, cells) = row {
                for (w, c) in w.iter_mut().zip(cells) {
                    *w = (*w).max(c.chars().count());
                }
            }
        }
        let mut out = String::new();
        for row in &self.rows {
            let line = match row {
                Row::Cells(mark, [name, b, a, change]) => {
                    format!("{mark} {name:<0$} {b:>1$} {a:>2$} {change:>3$}", w[0], w[1], w[2], w[3])
                }
                Row::Label(label) => format!("  {label}"),
            };
            let _ = writeln!(out, "{}", line.trim_end());
        }
        out
    }
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
        out += &step_table(i + 1, step);
        if let Some(e) = &step.effect {
            let of = step
                .challenger_point()
                .map_or(String::new(), |c| format!(" of {}", changes(&step.before.settings, &c.settings)));
            let _ = writeln!(
                out,
                "  Effect{of} {} (99% interval), over {} interleaved rounds: {}",
                e.text(),
                step.rounds,
                step_verdict(step)
            );
        }
        let _ = writeln!(out, "  {}", step.evidence);
    }
    if let (Some(first), Some(last)) = (&o.baseline, o.steps.iter().rev().find(|s| s.adopted).map(|s| &s.after)) {
        out += &before_after("\nStart to finish", first, last);
    }
    if let Some(why) = &o.stopped {
        let _ = writeln!(
            out,
            "\nStopped early ({why}): what was judged before the stop stands; the rest stays as the baseline has it."
        );
    }
    let _ = writeln!(out, "\nRecommended configuration:");
    for line in o.config.lines() {
        let _ = writeln!(out, "    {line}");
    }
    for (tree, diff) in &o.diffs {
        let files = crate::server::tree::changed_files(diff).join(", ");
        let _ = writeln!(
            out,
            "Your {tree} files that change: {files} (tune --diff DIR writes {tree}.diff; show --diff prints it)"
        );
    }
    let _ = writeln!(out, "\nEvidence:");
    for e in &o.evidence {
        let _ = writeln!(out, "  {} = {}: {}", e.knob, e.value, e.why);
    }
    if o.cost.launches > 0 {
        let _ = writeln!(out, "\nCost: {}", o.cost.describe());
    }
    out += &answer(o);
    out
}

/// The last lines: what to do with the answer (keep, or change what and by how much), and
/// what was not judged, with what it would take.
pub fn answer(o: &Outcome) -> String {
    let mut out = String::from("\n");
    let changes = o.changes();
    if changes.is_empty() {
        let _ = writeln!(
            out,
            "Answer: keep your configuration: no value was adopted{}.",
            if o.diffs.is_empty() { "" } else { " (nothing of yours changes)" }
        );
    } else {
        let moved: Vec<String> = changes.iter().map(|(k, from, to)| format!("{k} {from} -> {to}")).collect();
        let effect = o
            .steps
            .iter()
            .rev()
            .find(|s| s.adopted)
            .and_then(|s| s.effect)
            .map_or(String::new(), |e| format!(" ({}, 99%)", e.text()));
        let _ = writeln!(out, "Answer: change {}{effect}.", moved.join(", "));
    }
    if !o.unjudged.is_empty() {
        let _ = writeln!(out, "Not judged (kept as you run them): {}; {}", o.unjudged.join(", "), to_judge(o));
    }
    out
}

/// What judging the knobs left unjudged would take, at the noise measured.
fn to_judge(o: &Outcome) -> String {
    let per_window = if o.cost.windows > 0 { o.cost.trials_s / o.cost.windows as f64 } else { 0.0 };
    let threshold = o.threshold_pct.unwrap_or(2.0);
    match o.noise.and_then(|n| Some((n, n.rounds_to_settle(threshold, 0.99)?))) {
        Some((n, rounds)) => format!(
            "at the noise measured ({}), a {threshold}% change takes {} interleaved rounds of two values, about {} a knob at {per_window:.1} s a window; or {}",
            n.describe(),
            super::noise::Noise::rounds_text(rounds),
            crate::tune::tuner::fmt_secs(std::time::Duration::from_secs_f64(rounds as f64 * 2.0 * per_window)),
            super::noise::REMEDIES
        ),
        None => format!("too few windows to know the noise; give it {}", super::noise::REMEDIES),
    }
}

impl Found {
    /// The full outcome: these findings plus the run's context, rendered config and every point.
    pub fn into_outcome(
        self,
        strategy: &str,
        objective: String,
        stopped: Option<String>,
        config: String,
        diffs: std::collections::BTreeMap<String, String>,
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
            diffs,
            cost: Default::default(),
            placement: points.iter().find_map(|p| p.placement.clone()),
            noise: (!points.is_empty()).then(|| super::noise::Noise::of(&points)),
            points,
            baseline_values: Vec::new(),
            unjudged: Vec::new(),
            threshold_pct: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::point::{Sample, Status};

    fn point(rps: f64, settings: &[(&str, &str)]) -> Point {
        let settings = Settings(settings.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        let mut p = Point::failed("p", &settings, String::new(), 1.0);
        p.status = Status::Ok;
        p.samples = vec![Sample { rps, p99_ms: 12.5, succeeded: 100, ..Sample::default() }];
        p
    }

    #[test]
    fn long_knob_names_and_values_keep_the_columns_aligned() {
        let before =
            point(22.8, &[("workers", "5"), ("PerlSetVar SessionSerialize", "0"), ("PerlSetVar StateDir", ".state")]);
        let after = point(
            25.74,
            &[
                ("workers", "5"),
                ("PerlSetVar SessionSerialize", "1"),
                ("PerlSetVar StateDir", "/dev/shm/webtune-asp-bookmarks"),
            ],
        );
        let table = before_after("Step 5", &before, &after);
        let lines: Vec<&str> = table.lines().collect();
        let header = lines[1];
        let before_end = header.find("Before").unwrap() + "Before".len();
        let after_end = header.find("After").unwrap() + "After".len();
        let rows: Vec<&str> = lines[2..].iter().copied().filter(|l| l.trim() != "Configuration").collect();
        assert_eq!(rows.len(), 7 + 3, "{table}");
        for row in rows {
            // Right-aligned values end under their heading; the name column starts at 2.
            let b = row[..before_end].trim_end();
            assert_eq!(b.len(), before_end, "{row:?} in\n{table}");
            assert!(row[before_end..].starts_with(' '), "{row:?} in\n{table}");
            assert_eq!(row[..after_end].trim_end().len(), after_end, "{row:?} in\n{table}");
            assert_ne!(&row[2..3], " ", "{row:?}");
        }
        assert!(table.contains("* PerlSetVar SessionSerialize "), "{table}");
        assert!(table.contains(".state /dev/shm/webtune-asp-bookmarks"), "{table}");
        assert!(table.contains("+12.9%"), "{table}");
    }

    /// A window's histogram of `n` requests at 10 ms and one at `tail_ms`, base64 V2.
    fn histogram(n: u64, tail_ms: u64) -> String {
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        h.record_n(10_000, n).unwrap();
        h.record_n(tail_ms * 1000, n / 500).unwrap();
        crate::aggregate::codec::encode(&h).unwrap()
    }

    #[test]
    fn the_table_shows_p999_from_the_histograms_and_percentages_change_in_points() {
        let mut before = point(100.0, &[("keepalive", "off")]);
        let mut after = point(106.0, &[("keepalive", "on")]);
        before.samples[0].histogram = Some(histogram(10_000, 26));
        after.samples[0].histogram = Some(histogram(10_000, 918));
        before.interference = 0.005;
        after.interference = 0.007;
        let table = before_after("Step 1", &before, &after);
        let row = |name: &str| table.lines().find(|l| l.trim_start().starts_with(name)).unwrap().to_string();
        let tail = row("p99.9 latency (ms)");
        assert!(tail.contains("26.") && tail.contains("918.") && tail.contains('+'), "{table}");
        // 0.5% -> 0.7% of the CPU is +0.2 points, not +40%.
        let others = row("Others' CPU");
        assert!(others.ends_with("+0.2 pt"), "{others}");
        assert!(!others.contains("40.0%"), "{others}");
        // And in the progress line of each point measured.
        assert!(
            crate::tune::tuner::summary_line(&after).contains(", p99.9 918."),
            "{}",
            crate::tune::tuner::summary_line(&after)
        );
        // Without histograms the tail is unknown, not zero.
        let plain = before_after("Step 1", &point(1.0, &[]), &point(2.0, &[]));
        assert!(plain.lines().any(|l| l.starts_with("  p99.9 latency (ms)") && l.contains(" - ")), "{plain}");
    }
}
