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
    let cpu = |p: &Point| p.cpu_per_request_ms().filter(|_| p.ok());
    if cpu(before).is_some() || cpu(after).is_some() {
        metric("Server CPU/request (ms)", cpu(before), cpu(after), 3, Relative);
    }
    let mem = |p: &Point, f: &dyn Fn(&super::point::MemUse) -> u64| p.memory().map(|m| f(m) as f64);
    let (uss, pss) = (|m: &super::point::MemUse| m.worker_uss_max_kib, |m: &super::point::MemUse| m.pss_total_kib);
    metric("Worker USS (KiB)", mem(before, &uss), mem(after, &uss), 0, Relative);
    metric("Server PSS (KiB)", mem(before, &pss), mem(after, &pss), 0, Relative);
    // A front proxy's part of that, when either side has one (0 for the side without).
    let front = |p: &Point| p.memory().map(|m| m.front_pss_kib.unwrap_or(0) as f64);
    if [before, after].iter().any(|p| p.memory().is_some_and(|m| m.front_pss_kib.is_some())) {
        metric("  of it the front's", front(before), front(after), 0, Relative);
    }
    // In a container: what the kernel charged, killed and throttled (the worst window).
    if [before, after].iter().any(|p| p.container().is_some()) {
        let container = |p: &Point, f: &dyn Fn(&super::point::ContainerUse) -> f64| p.container().map(|c| f(&c));
        let charge = |c: &super::point::ContainerUse| c.charge_max_bytes as f64 / 1024.0;
        metric("Container charge (KiB)", container(before, &charge), container(after, &charge), 0, Relative);
        let kills = |c: &super::point::ContainerUse| c.oom_kills as f64;
        metric("OOM kills", container(before, &kills), container(after, &kills), 0, Relative);
        let throttled = |c: &super::point::ContainerUse| c.throttled_share.unwrap_or(0.0) * 100.0;
        metric("Throttled periods (%)", container(before, &throttled), container(after, &throttled), 1, Points);
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
    for line in collapse_notes(&points) {
        let _ = writeln!(out, "  {line}");
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

/// How much of a tune the text tells.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Detail {
    /// A line a step, the notes once, then the answer: what `tune` prints.
    #[default]
    Summary,
    /// Every step's table and evidence (`tune --verbose`, `show`).
    Full,
}

/// What the answer's last lines point to: the stored run, and where `--diff` wrote the diffs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pointers<'a> {
    pub run_id: Option<i64>,
    pub diff_dir: Option<&'a std::path::Path>,
}

/// The whole text report: the run's placement, its steps (a line each, or each one's table),
/// then the answer in its last lines.
pub fn report(o: &Outcome, detail: Detail, at: Pointers) -> String {
    let mut out = header(o);
    let steps = distinct_steps(o);
    match detail {
        Detail::Summary => {
            out += &step_lines(&steps, at);
            out += &run_notes(o);
        }
        Detail::Full => {
            for (n, step) in &steps {
                out += &step_detail(*n, step);
            }
            out += &start_to_finish(o, &steps);
        }
    }
    if let Some(why) = &o.stopped {
        let _ = writeln!(
            out,
            "\nStopped early ({why}): what was judged before the stop stands; the rest stays as the baseline has it."
        );
    }
    if detail == Detail::Full {
        out += &evidence(o, &steps);
    }
    if o.cost.launches > 0 {
        let _ = writeln!(out, "\nCost: {}", o.cost.describe());
    }
    let _ = writeln!(out, "\nRecommended configuration:");
    for line in o.config.lines() {
        let _ = writeln!(out, "    {line}");
    }
    out += &answer(o, at);
    out
}

/// The strategy, the objective, where the server and the client ran.
fn header(o: &Outcome) -> String {
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
    out
}

/// The steps, each with its number, less a step that repeats an earlier one's table and
/// evidence (a knob judged again on the same measurements, as after a resumed run).
pub fn distinct_steps(o: &Outcome) -> Vec<(usize, &super::Step)> {
    let mut seen: Vec<String> = Vec::new();
    let mut steps = Vec::new();
    for step in &o.steps {
        let key = format!("{}\n{}", step_table(0, step), step.evidence);
        if !seen.contains(&key) {
            seen.push(key);
            steps.push((steps.len() + 1, step));
        }
    }
    steps
}

/// A line a step: what moved or stayed, the verdict, the effect with its interval.
fn step_lines(steps: &[(usize, &super::Step)], at: Pointers) -> String {
    if steps.is_empty() {
        return String::new();
    }
    let tables = match at.run_id {
        Some(id) => format!("tune --verbose, webtune show {id}, webtune report {id} --html"),
        None => "tune --verbose".to_string(),
    };
    let mut out = format!("\nSteps (each one's table: {tables}):\n");
    for (n, step) in steps {
        let what = match step.challenger_point().filter(|_| !step.adopted) {
            Some(ch) => format!(
                "{} stays {} (best challenger {})",
                step.knob,
                step.before_value,
                changes(&step.before.settings, &ch.settings)
            ),
            None => format!("{} {} -> {}", step.knob, step.before_value, step.after_value),
        };
        let why = match &step.effect {
            Some(e) => format!("{} (99% interval) over {} interleaved rounds", e.text(), step.rounds),
            None => step.evidence.clone(),
        };
        let _ = writeln!(out, "  {n}. {what}: {}, {why}", step_verdict(step));
    }
    out
}

/// Every point's notes and failures over the run, a sentence once however many windows said it.
fn run_notes(o: &Outcome) -> String {
    let points: Vec<&Point> = if o.points.is_empty() {
        o.baseline.iter().chain(o.steps.iter().flat_map(|s| [&s.before, &s.after])).collect()
    } else {
        o.points.iter().collect()
    };
    let lines = collapse_notes(&points);
    if lines.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nNotes:\n");
    for line in lines {
        let _ = writeln!(out, "  {line}");
    }
    out
}

/// A step's table, its effect, its evidence, its notes.
fn step_detail(number: usize, step: &super::Step) -> String {
    let mut out = step_table(number, step);
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
    out
}

/// The baseline against the last adopted value, unless that is a step's table already (one
/// step adopted, from the baseline).
fn start_to_finish(o: &Outcome, steps: &[(usize, &super::Step)]) -> String {
    let adopted: Vec<&super::Step> = steps.iter().map(|(_, s)| *s).filter(|s| s.adopted).collect();
    match (&o.baseline, adopted.last()) {
        (Some(first), Some(last)) if !(adopted.len() == 1 && last.before.step == first.step) => {
            before_after("\nStart to finish", first, &last.after)
        }
        _ => String::new(),
    }
}

/// Each recommended value's evidence; a step's own is named by its number, not printed again.
fn evidence(o: &Outcome, steps: &[(usize, &super::Step)]) -> String {
    let mut out = String::from("\nEvidence:\n");
    for e in &o.evidence {
        match steps.iter().find(|(_, s)| s.evidence == e.why) {
            Some((n, _)) => writeln!(out, "  {} = {}: step {n}", e.knob, e.value),
            None => writeln!(out, "  {} = {}: {}", e.knob, e.value, e.why),
        }
        .unwrap_or(());
    }
    out
}

/// Notes of many points, each sentence once: notes that differ only in their figures are one
/// line, the figures as ranges ("others took 35-52% of the CPU ..."), with how many times and
/// of which points it was said.
fn collapse_notes(points: &[&Point]) -> Vec<String> {
    // (sentence with its figures taken out, the figures of each time, the points it was said of)
    let mut groups: Vec<(String, Vec<Vec<String>>, Vec<String>)> = Vec::new();
    // A failure's cause reads "(STEP failed: CAUSE)", a note "(STEP: NOTE)".
    let said = points.iter().flat_map(|p| {
        let cause = p.cause().map(|c| (p.step.as_str(), format!(" failed: {c}")));
        cause.into_iter().chain(p.notes.iter().map(|n| (p.step.as_str(), format!(": {n}"))))
    });
    for (step, note) in said {
        // A configuration's rounds ("workers=4 #2") are the configuration's.
        let step = match step.rsplit_once(" #") {
            Some((name, n)) if n.chars().all(|c| c.is_ascii_digit()) => name,
            _ => step,
        };
        let (shape, figures) = figures_of(&note);
        match groups.iter_mut().find(|g| g.0 == shape) {
            Some(g) => {
                g.1.push(figures);
                if !g.2.iter().any(|s| s == step) {
                    g.2.push(step.to_string());
                }
            }
            None => groups.push((shape, vec![figures], vec![step.to_string()])),
        }
    }
    groups
        .into_iter()
        .map(|(shape, figures, steps)| {
            let mut text = String::new();
            for (i, part) in shape.split('\u{0}').enumerate() {
                if i > 0 {
                    text += &range(figures.iter().map(|f| f[i - 1].as_str()));
                }
                text += part;
            }
            let times = if figures.len() > 1 { format!("; {} times", figures.len()) } else { String::new() };
            format!("({}{text}{times})", steps.join(", "))
        })
        .collect()
}

/// A note with each figure replaced by a NUL, and its figures.
fn figures_of(note: &str) -> (String, Vec<String>) {
    let (mut shape, mut figures) = (String::new(), Vec::new());
    let mut chars = note.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            let mut figure = c.to_string();
            while let Some(&d) = chars.peek() {
                if !(d.is_ascii_digit() || d == '.') {
                    break;
                }
                figure.push(d);
                chars.next();
            }
            // A sentence's full stop is not the figure's.
            let stop = figure.ends_with('.');
            figures.push(figure.trim_end_matches('.').to_string());
            shape.push('\u{0}');
            if stop {
                shape.push('.');
            }
        } else {
            shape.push(c);
        }
    }
    (shape, figures)
}

/// "50" when every figure is the same, else "35-52" (lowest to highest).
fn range<'a>(figures: impl Iterator<Item = &'a str>) -> String {
    let figures: Vec<&str> = figures.collect();
    let value = |f: &&str| f.parse::<f64>().unwrap_or(0.0);
    let lo = figures.iter().min_by(|a, b| value(a).total_cmp(&value(b))).copied().unwrap_or("");
    let hi = figures.iter().max_by(|a, b| value(a).total_cmp(&value(b))).copied().unwrap_or("");
    if value(&lo) == value(&hi) { lo.to_string() } else { format!("{lo}-{hi}") }
}

/// The last lines: what to do with the answer (keep, or change what and by how much), where
/// the diff of the user's files is, and what was not judged, with what it would take.
pub fn answer(o: &Outcome, at: Pointers) -> String {
    let mut out = String::new();
    let changes = o.changes();
    if changes.is_empty() {
        let _ = writeln!(
            out,
            "Answer: keep your configuration: no value was adopted{}.",
            if o.diffs.is_empty() { "" } else { " (nothing of yours changes)" }
        );
    } else {
        let moved: Vec<String> = changes.iter().map(|(k, from, to)| format!("{k} {from} -> {to}")).collect();
        let adopted: Vec<&super::Step> =
            distinct_steps(o).into_iter().map(|(_, s)| s).filter(|s| s.adopted && s.effect.is_some()).collect();
        let effect = match adopted.as_slice() {
            [] => String::new(),
            [one] => format!(" ({}, 99% interval)", one.effect.map(|e| e.text()).unwrap_or_default()),
            many => {
                let each: Vec<String> = many
                    .iter()
                    .map(|s| format!("{} {}", s.knob, s.effect.map(|e| e.text()).unwrap_or_default()))
                    .collect();
                format!(" (step by step: {}; 99% intervals)", each.join("; "))
            }
        };
        let _ = writeln!(out, "Answer: change {}{effect}.", moved.join(", "));
    }
    let container = crate::server::container::limits(&o.recommended.0);
    if container.memory.is_some() || container.cpus.is_some() {
        let _ = writeln!(
            out,
            "Container: {}, the size it served in (Kubernetes resources and docker run flags above).",
            container.describe()
        );
    }
    out += &diff_lines(o, at);
    if !o.unjudged.is_empty() {
        let _ = writeln!(out, "Not judged (kept as you run them): {}; {}", o.unjudged.join(", "), to_judge(o));
    }
    out
}

/// Where each diff of the user's files is: the file --diff wrote, else how to have it.
fn diff_lines(o: &Outcome, at: Pointers) -> String {
    let mut out = String::new();
    for (tree, diff) in &o.diffs {
        let files = crate::server::tree::changed_files(diff).join(", ");
        let _ = match (at.diff_dir, at.run_id) {
            (Some(dir), _) => {
                writeln!(out, "Diff: {} (your {tree} files {files})", dir.join(format!("{tree}.diff")).display())
            }
            (None, Some(id)) => writeln!(
                out,
                "Diff: your {tree} files {files}: webtune show {id} --diff prints it; tune --diff DIR writes {tree}.diff"
            ),
            (None, None) => {
                writeln!(out, "Diff: your {tree} files {files}: tune --diff DIR writes {tree}.diff")
            }
        };
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

    /// A tune of one knob whose step was judged twice on the same measurements (a resumed
    /// run), every window of it noted as disturbed.
    fn resumed_tune() -> Outcome {
        let disturbed =
            |pct: u32| format!("others took {pct}% of the CPU in a window measured 3 times: kept, but disturbed");
        let mut before = point(315.0, &[("workers", "1")]);
        before.step = "baseline".into();
        before.notes = vec![disturbed(50), disturbed(51)];
        let mut after = point(895.0, &[("workers", "4")]);
        after.step = "workers=4".into();
        after.notes = vec![disturbed(49)];
        let mut again = after.clone();
        again.step = "workers=4 #2".into();
        again.notes = vec![disturbed(67)];
        let step = super::super::Step {
            knob: "workers".into(),
            before_value: "1".into(),
            after_value: "4".into(),
            adopted: true,
            verdict: Some(super::super::Verdict::Adopted),
            effect: Some(crate::stats::Effect { pct: 184.1, low_pct: 160.3, high_pct: 210.1 }),
            rounds: 2,
            before: before.clone(),
            after: after.clone(),
            candidates: vec![after.clone()],
            challenger: None,
            evidence: "workers 1 -> 4: 315.0 -> 895.0 req/s, +184.1% [+160.3%, +210.1%]; adopted".into(),
        };
        let found = Found {
            baseline: Some(before.clone()),
            steps: vec![step.clone(), step.clone()],
            recommended: after.settings.clone(),
            evidence: vec![crate::tune::Evidence::new("workers", "4", step.evidence.clone())],
        };
        let config = "webtune lab --workers 4".to_string();
        let mut o = found.into_outcome(
            "one-at-a-time",
            "maximum throughput".into(),
            None,
            config,
            Default::default(),
            vec![before, after, again],
        );
        o.baseline_values = vec![crate::tune::baseline::Origin {
            knob: "workers".into(),
            value: "1".into(),
            source: crate::tune::baseline::Source::FirstListed,
            added: false,
        }];
        o
    }

    #[test]
    fn a_tune_ends_with_its_answer_and_says_each_thing_once() {
        let o = resumed_tune();
        let at = Pointers { run_id: Some(7), diff_dir: None };
        assert_eq!(
            report(&o, Detail::Summary, at),
            "Strategy: one-at-a-time; objective: maximum throughput\n\
             \n\
             Steps (each one's table: tune --verbose, webtune show 7, webtune report 7 --html):\n  \
             1. workers 1 -> 4: adopted, +184.1% [+160.3%, +210.1%] (99% interval) over 2 interleaved rounds\n\
             \n\
             Notes:\n  \
             (baseline, workers=4: others took 49-67% of the CPU in a window measured 3 times: kept, but disturbed; 4 times)\n\
             \n\
             Recommended configuration:\n    \
             webtune lab --workers 4\n\
             Answer: change workers 1 -> 4 (+184.1% [+160.3%, +210.1%], 99% interval).\n"
        );
        let full = report(&o, Detail::Full, at);
        // One step (the resumed copy is the same table), its evidence once, its notes once, and
        // no start-to-finish table repeating it.
        assert_eq!(full.matches("Step ").count(), 1, "{full}");
        assert_eq!(full.matches(&o.steps[0].evidence).count(), 1, "{full}");
        assert!(full.contains("\nEvidence:\n  workers = 4: step 1\n"), "{full}");
        assert!(!full.contains("Start to finish"), "{full}");
        assert!(
            full.contains(
                "  (baseline, workers=4: others took 49-51% of the CPU in a window measured 3 times: kept, but disturbed; 3 times)\n"
            ),
            "{full}"
        );
        assert!(
            full.ends_with("Answer: change workers 1 -> 4 (+184.1% [+160.3%, +210.1%], 99% interval).\n"),
            "{full}"
        );
    }

    #[test]
    fn the_answer_names_the_diff_written() {
        let mut o = resumed_tune();
        o.diffs.insert("nginx".into(), "--- a/nginx.conf\n+++ b/nginx.conf\n@@ -1 +1 @@\n-a\n+b\n".into());
        let dir = std::path::Path::new("/tmp/diffs");
        let text = answer(&o, Pointers { run_id: Some(3), diff_dir: Some(dir) });
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "Diff: /tmp/diffs/nginx.diff (your nginx files nginx.conf)", "{text}");
        let text = answer(&o, Pointers { run_id: Some(3), diff_dir: None });
        assert_eq!(
            text.lines().nth(1),
            Some(
                "Diff: your nginx files nginx.conf: webtune show 3 --diff prints it; tune --diff DIR writes nginx.diff"
            )
        );
    }
}
