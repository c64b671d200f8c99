//! Requests per worker before it is replaced (MaxRequestsPerChild, pm.max_requests...): from
//! how fast the workers grow under load (leaks, pages unshared), the largest interval that
//! keeps the pool within the memory budget; then what recycling that often costs in
//! throughput (a fork each time), each interval measured between two readings of never
//! recycling. Intervals costing more than 5% are rejected: the seeds saw MaxRequestsPerChild
//! 1 collapse throughput.

use super::vocabulary::pct;
use crate::server::settings::Settings;
use crate::tune::evidence::Evidence;
use crate::tune::point::Point;
use crate::tune::step::Step;
use crate::tune::strategies::vocabulary::{Found, Knobs};
use crate::tune::tuner::Tuner;

/// The most throughput recycling may cost.
pub const MAX_COST: f64 = 0.05;
/// Below this many KiB per request per worker, memory does not grow.
const FLAT_KIB: f64 = 0.5;

/// Growth of a worker's unique memory per request it serves, and its size when fresh, from
/// the memory sampled in each repeat (KiB).
pub fn growth(p: &Point) -> Option<(f64, f64)> {
    let mems: Vec<(u64, &crate::tune::point::MemUse)> =
        p.samples.iter().filter_map(|s| s.memory.as_ref().map(|m| (s.succeeded, m))).collect();
    if mems.len() < 2 {
        return None;
    }
    let workers = mems[0].1.workers.max(1) as f64;
    // Samples are taken half-way through each repeat.
    let mut served = 0.0;
    let mut points = Vec::new();
    for (i, (succeeded, m)) in mems.iter().enumerate() {
        let before = if i == 0 { p.warmed as f64 } else { mems[i - 1].0 as f64 / 2.0 };
        served += before + *succeeded as f64 / 2.0;
        points.push((served / workers, m.worker_uss_mean_kib as f64));
    }
    // Least squares over (requests per worker, USS).
    let n = points.len() as f64;
    let (sx, sy) = points.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let (num, den) =
        points.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + (x - mx) * (y - my), b + (x - mx) * (x - mx)));
    if den <= 0.0 {
        return None;
    }
    let slope = num / den;
    Some((slope, (my - slope * mx).max(0.0)))
}

/// Picks `max_requests`: the largest candidate that keeps the pool within the budget and
/// costs at most 5% throughput against never recycling; 0 (never) when workers do not grow.
pub fn recycle(t: &mut Tuner, knobs: &Knobs, base: &Settings) -> Found {
    let knob = "max_requests";
    let mut found = Found { baseline: None, steps: Vec::new(), recommended: base.clone(), evidence: Vec::new() };
    let candidates = candidates(knobs, knob);
    let never = base.with(knob, "0");
    let Some(here) = t.point(&format!("{knob}=0"), &never) else { return found };
    found.baseline = Some(here.clone());
    let say = |found: &mut Found, line: Evidence| {
        found.recommended = base.with(knob, &line.value);
        found.evidence.push(line);
    };
    if !here.ok() {
        let why = format!("the server did not run without recycling: {}", here.cause().unwrap_or(""));
        say(&mut found, Evidence::new(knob, "0", why));
        return found;
    }
    let Some((slope, fresh)) = growth(&here) else {
        say(&mut found, Evidence::new(knob, "0", "memory growth unknown (needs 2 repeats with memory samples)"));
        return found;
    };
    let mem = here.memory().cloned().unwrap_or_default();
    let workers = mem.workers.max(1) as f64;
    if slope < FLAT_KIB {
        let why = format!("workers do not grow ({slope:.2} KiB per request): no recycling needed (0 = never)");
        say(&mut found, Evidence::new(knob, "0", why));
        return found;
    }
    // parent + workers x (fresh + slope x R) <= budget, R in requests; the knob's values are
    // connections where the server counts those, each carrying `scale` requests.
    let scale = here.max_requests_scale();
    let limit_requests = t.budget_kib.map(|b| {
        let room = b.saturating_sub(mem.parent_uss_kib + mem.parent_shared_kib) as f64 / workers - fresh;
        (room / slope).floor().max(0.0)
    });
    let limit = limit_requests.map(|r| (r / scale.unwrap_or(1.0)).floor() as u64);
    let growth_line = format!(
        "workers grow {slope:.1} KiB per request they serve (leaks and pages unshared), from {:.0} KiB fresh",
        fresh
    );
    let fitting: Vec<u64> = candidates.iter().copied().filter(|&c| limit.is_none_or(|l| c <= l)).collect();
    let limit_line = limit_line(limit, limit_requests, here.recycles_per_connection, scale, mem.workers);
    let (tried, chosen) = search(t, knob, base, &never, fitting, &here);
    let rejected: Vec<String> = tried.iter().map(Tried::cost_text).collect();
    let rejected = if rejected.is_empty() { String::new() } else { format!("; rejected: {}", rejected.join(", ")) };
    match chosen {
        Some(tr) => {
            let line = format!("{growth_line}; {limit_line}; recycling every {}{rejected}", tr.cost_text());
            let c = tr.every;
            // The memory budget is a constraint: where the user's interval (never, unless the
            // base sets one) lets the pool outgrow it, the one chosen alone meets it.
            let current = base.get(knob).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            let outgrows = limit.is_some_and(|l| current == 0 || current > l);
            found.steps.push(Step {
                knob: knob.into(),
                before_value: "0".into(),
                after_value: c.to_string(),
                adopted: true,
                verdict: outgrows.then_some(crate::tune::step::Verdict::Adopted),
                effect: None,
                rounds: 0,
                before: tr.never.clone(),
                candidates: tried.iter().map(|r| r.point.clone()).chain([tr.point.clone()]).collect(),
                after: tr.point,
                challenger: None,
                evidence: line.clone(),
            });
            say(&mut found, Evidence::new(knob, c.to_string(), line));
        }
        None if t.stopped.is_some() => {
            let line = format!(
                "{growth_line}; {limit_line}; not decided, the run stopped before an interval was found{rejected}"
            );
            say(&mut found, Evidence::after_stop(knob, "0", line));
        }
        None => {
            let line = format!(
                "{growth_line}; {limit_line}; no interval to try fits at a cost under {:.0}%{rejected}: use fewer workers or more memory",
                MAX_COST * 100.0
            );
            say(&mut found, Evidence::new(knob, "0", line));
        }
    }
    found
}

/// The intervals to try, largest first: the knob's values above 0 (0 is never recycling).
fn candidates(knobs: &Knobs, knob: &str) -> Vec<u64> {
    let mut candidates: Vec<u64> = knobs
        .iter()
        .find(|(k, _)| k == knob)
        .map(|(_, v)| v.iter().filter_map(|x| x.parse().ok()).filter(|&n| n > 0).collect())
        .unwrap_or_default();
    candidates.sort_unstable_by(|a, b| b.cmp(a));
    candidates.dedup();
    candidates
}

/// The evidence's line on the budget: how long `workers` workers stay within it, in requests
/// (`limit_requests`) and in the knob's own unit (`limit`, connections where the server counts
/// those, `per_connection`, each carrying `scale` requests).
fn limit_line(
    limit: Option<u64>,
    limit_requests: Option<f64>,
    per_connection: bool,
    scale: Option<f64>,
    workers: usize,
) -> String {
    match (limit, limit_requests) {
        (Some(l), Some(r)) if per_connection => match scale {
            Some(scale) => format!(
                "{} workers stay within the budget for {r:.0} requests each; max_requests counts connections here, {l} of them at {scale:.1} requests a connection (as this load kept them alive)",
                workers
            ),
            None => format!(
                "{} workers stay within the budget for {l} requests each (max_requests counts connections here: their requests were not counted, so one a connection is assumed)",
                workers
            ),
        },
        (Some(l), _) => format!("{} workers stay within the budget for {l} requests each", workers),
        _ => "no memory budget given: the largest interval that costs little".into(),
    }
}

/// The intervals that fit, largest first, each read between two readings of never recycling;
/// the ones rejected, and the one chosen if any.
fn search(
    t: &mut Tuner,
    knob: &str,
    base: &Settings,
    never: &Settings,
    fitting: Vec<u64>,
    here: &Point,
) -> (Vec<Tried>, Option<Tried>) {
    let mut tried: Vec<Tried> = Vec::new();
    let mut chosen = None;
    // Never recycling is read again after each candidate (A B A B ...), and a candidate is
    // rejected only when it costs over the bar against both readings beside it: a drift of
    // the machine between the readings then cannot pass for a cost (a clean clone read 500 at
    // 7.7% against one reading before it, where five runs of the same test read 0.1-1.2%).
    let mut before = here.clone();
    for c in fitting {
        let Some(p) = t.point(&format!("{knob}={c}"), &base.with(knob, &c.to_string())) else { break };
        // A candidate that failed costs everything whatever never recycling reads beside it.
        let after = if p.ok() {
            let Some(after) = t.point(&format!("{knob}=0 after {c}"), never) else { break };
            after.ok().then_some(after)
        } else {
            None
        };
        let tr = Tried::new(c, p, &before, after.as_ref());
        let fits = tr.within_the_bar();
        if let Some(a) = after {
            before = a;
        }
        if fits {
            chosen = Some(tr);
            break;
        }
        tried.push(tr);
        // Shorter intervals fork more often: two rejections in a row end the search.
        if tried.len() >= 2 {
            break;
        }
    }
    (tried, chosen)
}

/// One interval tried, with never recycling read before it and (unless that failed or the run
/// stopped) after it.
struct Tried {
    every: u64,
    point: Point,
    /// The reading of never recycling the cost is counted against: of the two beside the
    /// candidate, the one it costs least against.
    never: Point,
    cost: f64,
    /// The cost against the other reading, when there was one.
    other: Option<(f64, f64)>,
    /// The readings' own spread as a share of never recycling's throughput: a cost is over
    /// the bar only by more than this.
    noise: f64,
}

impl Tried {
    fn new(every: u64, point: Point, before: &Point, after: Option<&Point>) -> Tried {
        let cost = |never: &Point| if point.ok() { 1.0 - point.rps() / never.rps() } else { 1.0 };
        let mut readings: Vec<&Point> = [Some(before), after].into_iter().flatten().collect();
        readings.sort_by(|a, b| cost(a).total_cmp(&cost(b)));
        let never = readings[0].clone();
        let noise = if point.ok() {
            readings.iter().map(|r| r.rps_range()).fold(point.rps_range(), f64::max) / never.rps()
        } else {
            0.0
        };
        let other = readings.get(1).map(|r| (cost(r), r.rps()));
        Tried { every, cost: cost(&never), never, point, other, noise }
    }

    fn within_the_bar(&self) -> bool {
        self.point.ok() && self.cost <= MAX_COST + self.noise
    }

    /// "500 costs 2.0% throughput (500.0 -> 490.0 req/s; 10.9% against never recycling read
    /// on the other side of it, 550.0 req/s)".
    fn cost_text(&self) -> String {
        let other = match self.other {
            Some((cost, rps)) => {
                format!("; {:.1}% against never recycling read on the other side of it, {rps:.1} req/s", cost * 100.0)
            }
            None => String::new(),
        };
        format!(
            "{} costs {:.1}% throughput ({:.1} -> {:.1} req/s{other})",
            self.every,
            -pct(self.point.rps(), self.never.rps()),
            self.never.rps(),
            self.point.rps()
        )
    }
}
