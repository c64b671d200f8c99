//! Rightsizing: the smallest container (CPUs x memory) and the worker count in it that serve
//! the user's traffic (a rate, open loop) within their latency objective, with no OOM kill.
//!
//! The search follows what the kernel measures rather than a grid:
//! 1. The rate in the largest container of the ladder: if even that does not serve it, no
//!    smaller one will, and the answer says so. Its CPU time per request (the cgroup's own
//!    count) times the rate is the CPUs the traffic needs.
//! 2. The CPU ladder from the smallest step at or above that need: down while a smaller step
//!    still serves, up while it does not.
//! 3. At that size, the fewest workers of the `workers` list that still serve.
//! 4. The memory: the kernel's charge under that load, with headroom, rounded up (or the
//!    smallest of a `container_memory` list that holds it), measured once more at that limit;
//!    one step up for each trial the OOM killer or the objective refuses.

use crate::bench::BenchSpec;
use crate::bench::spec::Rate;
use crate::input::format_decimal;
use crate::server::container::{CPUS, MEMORY};
use crate::server::settings::Settings;
use crate::tune::evidence::Evidence;
use crate::tune::objective::Objective;
use crate::tune::point::Point;
use crate::tune::step::{Step, Verdict};
use crate::tune::strategies::vocabulary::{Found, Knobs};
use crate::tune::tuner::Tuner;

/// The CPU sizes tried when the target file lists none (Kubernetes' usual requests).
const CPU_LADDER: [f64; 12] = [0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0];
/// The memory limit over the largest charge seen: page cache, a worker's growth, a burst.
const MEMORY_HEADROOM: f64 = 1.25;
/// Memory limits are rounded up to this (Kubernetes and Docker take any size; round figures
/// read better and leave a little more room).
const MEMORY_STEP: u64 = 16 << 20;
/// Memory limits tried at the most before the search gives up (each a step of headroom up).
const MEMORY_TRIES: usize = 3;

/// The traffic and the objective the container must meet.
#[derive(Debug, Clone, Copy)]
struct Goal {
    rps: f64,
    p99_ms: Option<f64>,
}

impl Goal {
    fn describe(self) -> String {
        match self.p99_ms {
            Some(p99) => format!("{} req/s with p99 <= {p99} ms", format_decimal(self.rps)),
            None => format!("{} req/s", format_decimal(self.rps)),
        }
    }
}

/// Why the rightsizing cannot run with this objective and load, in one line.
pub fn refuses(objective: &Objective, load: &BenchSpec) -> Option<String> {
    let traffic = matches!(objective, Objective::LeastMemory { .. })
        || matches!(load.rate, Some(Rate::PerSecond(_)))
        || !load.access_log.is_empty();
    (!traffic).then(|| {
        "rightsize needs the traffic to serve: --min-rps RATE (with --slo-p99 for its latency), [load] rate, or [load] access_log (its busiest minute)".into()
    })
}

/// The goal of the run: `--min-rps` (and `--slo-p99`), else the load's own rate, else the
/// access log's busiest minute.
fn goal(t: &Tuner) -> Option<Goal> {
    let rate = || t.load.spec.rate.and_then(Rate::per_second).or_else(|| t.load.spec.busiest_minute_rate());
    match t.objective {
        Objective::LeastMemory { rps, p99_ms } => Some(Goal { rps, p99_ms }),
        Objective::ThroughputWithin { p99_ms } => rate().map(|rps| Goal { rps, p99_ms: Some(p99_ms) }),
        Objective::Throughput => rate().map(|rps| Goal { rps, p99_ms: None }),
    }
}

/// The CPU sizes to try: the target file's `container_cpus` list, else the ladder up to the
/// CPUs this machine gives the server.
fn cpu_sizes(knobs: &Knobs) -> Vec<f64> {
    let listed: Vec<f64> =
        knobs.iter().filter(|(k, _)| k == CPUS).flat_map(|(_, v)| v.iter().filter_map(|x| x.parse().ok())).collect();
    let mut sizes = if listed.is_empty() {
        let cores = crate::sys::available_cores() as f64;
        CPU_LADDER.iter().copied().filter(|&c| c <= cores).collect()
    } else {
        listed
    };
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    sizes
}

/// The worker counts to try, fewest first: the `workers` list, else the base's own.
fn worker_counts(knobs: &Knobs, base: &Settings) -> Vec<u64> {
    let mut counts: Vec<u64> = knobs
        .iter()
        .filter(|(k, _)| k == "workers")
        .flat_map(|(_, v)| v.iter().filter_map(|x| x.parse().ok()))
        .collect();
    if counts.is_empty() {
        counts.extend(base.get("workers").and_then(|w| w.parse::<u64>().ok()));
    }
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// The memory limits listed in the target file (`container_memory`), bytes, smallest first.
fn memory_sizes(knobs: &Knobs) -> Vec<u64> {
    let mut sizes: Vec<u64> = knobs
        .iter()
        .filter(|(k, _)| k == MEMORY)
        .flat_map(|(_, v)| v.iter().filter_map(|x| crate::input::size_bytes(MEMORY, x).ok()))
        .collect();
    sizes.sort_unstable();
    sizes
}

/// The sizes an exhaustive search would measure: CPU sizes x worker counts x memory limits
/// (those listed; one without a list).
pub fn grid(knobs: &Knobs) -> u64 {
    let workers = knobs.iter().find(|(k, _)| k == "workers").map_or(1, |(_, v)| v.len());
    (cpu_sizes(knobs).len() * workers * memory_sizes(knobs).len().max(1)) as u64
}

/// One measured size and what it showed.
struct Tried {
    label: String,
    point: Point,
    serves: bool,
}

impl Tried {
    /// "1 CPU: 198.2 req/s, p99 12.40 ms" or "0.5 CPU: failed: ...".
    fn line(&self) -> String {
        let p = &self.point;
        let verdict = if self.serves { "serves" } else { "does not serve" };
        match p.cause() {
            Some(cause) => format!("{}: failed ({cause})", self.label),
            None => {
                let killed = p.container().map_or(0, |c| c.oom_kills_since_launch);
                let killed = if killed > 0 { format!(", {killed} OOM kills") } else { String::new() };
                format!("{}: {:.1} req/s, p99 {:.2} ms{killed}: {verdict}", self.label, p.rps(), p.p99())
            }
        }
    }
}

/// The search's state: what it sizes for, the sizes it may try, and every size it measured.
struct Search {
    goal: Goal,
    /// CPU sizes and worker counts, smallest first.
    cpus: Vec<f64>,
    workers: Vec<u64>,
    most_workers: Option<String>,
    /// The base settings in the budget's memory (or the host's): the CPU and workers trials'.
    roomy: Settings,
    tried: Vec<Tried>,
}

impl Search {
    /// The roomy settings at `cpus` CPUs and `workers` workers (the base's count when None).
    fn settings(&self, cpus: f64, workers: Option<&String>) -> Settings {
        let s = self.roomy.with(CPUS, &format_decimal(cpus));
        match workers {
            Some(w) => s.with("workers", w),
            None => s,
        }
    }

    /// Measures `s` as `label`: whether it serves the goal (and fits), and its point; None
    /// when the run stopped.
    fn measure(&mut self, t: &mut Tuner, label: String, s: &Settings) -> Option<(bool, Point)> {
        let p = t.point(&label, s)?;
        let serves =
            crate::tune::objective::serves(&p, self.goal.rps, self.goal.p99_ms) && crate::tune::objective::fits(&p);
        self.tried.push(Tried { label, point: p.clone(), serves });
        Some((serves, p))
    }

    /// Measures `cpus` CPUs with the most workers.
    fn at_cpus(&mut self, t: &mut Tuner, cpus: f64) -> Option<(bool, Point)> {
        let label = format!("{} CPUs, {} workers", format_decimal(cpus), self.most_workers.clone().unwrap_or_default());
        let s = self.settings(cpus, self.most_workers.clone().as_ref());
        self.measure(t, label, &s)
    }

    /// Step 2: the ladder from the smallest size that covers `need` CPUs, down while a
    /// smaller size serves, up while it does not. The chosen size's index, and what each
    /// size showed (the largest served already).
    fn cpu_ladder(&mut self, t: &mut Tuner, need: Option<f64>) -> (usize, Vec<Option<bool>>) {
        let n = self.cpus.len();
        let mut results: Vec<Option<bool>> = vec![None; n];
        results[n - 1] = Some(true);
        let mut at = need.map_or(0, |need| self.cpus.iter().position(|&c| c >= need).unwrap_or(n - 1));
        loop {
            let serves = match results[at] {
                Some(s) => s,
                None => {
                    let Some((serves, _)) = self.at_cpus(t, self.cpus[at]) else { break };
                    results[at] = Some(serves);
                    serves
                }
            };
            let next = if serves { at.checked_sub(1) } else { Some(at + 1).filter(|&i| i < n) };
            match next {
                Some(i) if results[i].is_none() => at = i,
                _ => break,
            }
        }
        let chosen = (0..n).find(|&i| results[i] == Some(true) && (i == 0 || results[i - 1] == Some(false)));
        (chosen.unwrap_or(n - 1), results)
    }

    /// Step 3: the fewest workers that still serve at `cpus` (the most when none fewer does).
    fn fewest_workers(&mut self, t: &mut Tuner, cpus: f64) -> Option<String> {
        let fewer: Vec<String> = self.workers.iter().rev().skip(1).rev().map(u64::to_string).collect();
        for w in fewer {
            if t.stopped.is_some() {
                break;
            }
            let s = self.settings(cpus, Some(&w));
            let Some((serves, _)) = self.measure(t, format!("{} CPUs, {w} workers", format_decimal(cpus)), &s) else {
                break;
            };
            if serves {
                return Some(w);
            }
        }
        self.most_workers.clone()
    }

    /// Step 4: the memory limit for `sized`: the charge its trial read, with headroom, rounded
    /// up (or the smallest of `listed` that holds it), measured; a step up for each refusal.
    /// The limit confirmed, and the charge it came from.
    fn memory(&mut self, t: &mut Tuner, sized: &Settings, listed: &[u64]) -> (Option<u64>, Option<u64>) {
        let at_size = self.tried.iter().rev().find(|r| r.serves && r.point.settings == *sized);
        let charge = at_size.and_then(|r| r.point.container()).map(|c| c.charge_max_bytes);
        let mut want = charge.map(|c| round_up((c as f64 * MEMORY_HEADROOM) as u64));
        for _ in 0..MEMORY_TRIES {
            let Some(w) = want else { break };
            let limit = match listed.iter().find(|&&m| m >= w) {
                Some(&m) => m,
                None if listed.is_empty() => w,
                None => break,
            };
            if t.stopped.is_some() {
                break;
            }
            let label = format!("{}, {}", label_of(sized), crate::input::format_bytes(limit));
            let Some((serves, _)) = self.measure(t, label, &sized.with(MEMORY, &crate::input::format_bytes(limit)))
            else {
                break;
            };
            if serves {
                return (Some(limit), charge);
            }
            want = Some(round_up((limit as f64 * MEMORY_HEADROOM) as u64));
        }
        (None, charge)
    }
}

/// "0.75 CPUs, 2 workers" of settings.
fn label_of(s: &Settings) -> String {
    format!("{} CPUs, {} workers", s.get(CPUS).unwrap_or("-"), s.get("workers").unwrap_or("-"))
}

/// The smallest container that serves the goal; see the module's header for the search.
pub fn rightsize(t: &mut Tuner, knobs: &Knobs, base: &Settings) -> Found {
    let mut found = Found { baseline: None, steps: Vec::new(), recommended: base.clone(), evidence: Vec::new() };
    let Some(goal) = goal(t) else {
        let why = refuses(&t.objective, &t.load.spec).unwrap_or_else(|| "the access log has no timed requests".into());
        found.evidence.push(Evidence::new("container", "-", why));
        return found;
    };
    // The user's traffic, as an open loop: a closed loop would slow down with the server and
    // hide the queue a small container builds.
    t.load.spec.rate = Some(Rate::PerSecond(goal.rps));
    // Without a stated memory, the first trials run in the budget's (else the host's).
    let roomy = match (base.get(MEMORY), t.budget_kib) {
        (None, Some(kib)) => base.with(MEMORY, &crate::input::format_bytes(kib * 1024)),
        _ => base.clone(),
    };
    let workers = worker_counts(knobs, base);
    let most_workers = workers.last().map(u64::to_string);
    let mut search = Search { goal, cpus: cpu_sizes(knobs), workers, most_workers, roomy, tried: Vec::new() };
    let Some(&largest) = search.cpus.last() else { return found };

    // 1. The largest container, the most workers: the need in CPUs.
    let Some((serves, first)) = search.at_cpus(t, largest) else { return found };
    found.baseline = Some(first.clone());
    if !serves {
        let lines: Vec<String> = search.tried.iter().map(Tried::line).collect();
        let why = format!("even the largest container tried does not serve {}: {}", goal.describe(), lines.join("; "));
        found.evidence.push(Evidence::new(CPUS, "-", why));
        return found;
    }
    let per_request_s = first.cpu_per_request_ms().map(|ms| ms / 1000.0);
    let need = per_request_s.map(|s| s * goal.rps);
    let (chosen_at, results) = search.cpu_ladder(t, need);
    let cpu = search.cpus[chosen_at];
    let workers = search.fewest_workers(t, cpu);
    let sized = search.settings(cpu, workers.as_ref());
    let listed = memory_sizes(knobs);
    let (memory, charge) = search.memory(t, &sized, &listed);

    let need_line = match (per_request_s, need) {
        (Some(s), Some(n)) => {
            format!("{:.2} ms of CPU a request x {} req/s = {n:.2} CPUs needed; ", s * 1000.0, format_decimal(goal.rps))
        }
        _ => String::new(),
    };
    let lines: Vec<String> = search.tried.iter().map(Tried::line).collect();
    let head = format!(
        "{need_line}measured {} of the {} CPU x workers{} sizes: {}",
        search.tried.len(),
        grid(knobs),
        if listed.is_empty() { "" } else { " x memory" },
        lines.join("; ")
    );
    let cut_short = t.stopped.is_some();
    let line = |knob: &str, value: String, why: String| Evidence { cut_short, ..Evidence::new(knob, value, why) };
    let below = below(&search.cpus, &results, chosen_at);
    found.evidence.push(line(
        CPUS,
        format_decimal(cpu),
        format!("the smallest CPU size that serves {}{below}: {head}", goal.describe()),
    ));
    if let Some(w) = &workers {
        let why = format!("the fewest workers of {:?} that serve it at {} CPUs", search.workers, format_decimal(cpu));
        found.evidence.push(line("workers", w.clone(), why));
    }
    let recommended = match memory {
        Some(m) => {
            let why = format!(
                "the kernel charged {} at most under the load; x{MEMORY_HEADROOM} headroom, rounded up, measured: no OOM kill, the traffic served",
                charge.map_or("-".into(), crate::input::format_bytes)
            );
            found.evidence.push(line(MEMORY, crate::input::format_bytes(m), why));
            sized.with(MEMORY, &crate::input::format_bytes(m))
        }
        None => {
            let why = "no memory limit was confirmed (no charge was read, or every limit tried was refused): set it from the charge above, with room";
            found.evidence.push(line(MEMORY, "-".into(), why.into()));
            sized
        }
    };
    let after =
        search.tried.iter().rev().find(|r| r.serves && r.point.settings == recommended).map(|r| r.point.clone());
    if let Some(after) = after {
        let memory = memory.map_or(String::new(), |m| format!(", {}", crate::input::format_bytes(m)));
        found.steps.push(Step {
            knob: "container".into(),
            before_value: format!("{} CPUs", format_decimal(largest)),
            after_value: format!("{} CPUs{memory}", format_decimal(cpu)),
            adopted: true,
            // A constraint only the chosen size meets at its cost: the smaller sizes did not serve.
            verdict: Some(Verdict::Adopted),
            effect: None,
            rounds: 0,
            before: first,
            after,
            candidates: search.tried.iter().map(|r| r.point.clone()).collect(),
            challenger: None,
            evidence: head,
        });
        found.recommended = recommended;
    }
    found
}

/// " (0.5 CPUs did not)" when the step below the chosen one was measured and failed.
fn below(cpus: &[f64], results: &[Option<bool>], at: usize) -> String {
    match at.checked_sub(1) {
        None => " (the smallest size of the ladder)".into(),
        Some(b) if results[b] == Some(false) => format!(" ({} CPUs did not)", format_decimal(cpus[b])),
        Some(_) => " (the run stopped before a smaller size was measured)".into(),
    }
}

/// Bytes rounded up to the memory step.
fn round_up(bytes: u64) -> u64 {
    bytes.div_ceil(MEMORY_STEP).max(1) * MEMORY_STEP
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_come_from_the_file_else_the_ladder_within_the_machine() {
        let knobs: Knobs = vec![(CPUS.into(), vec!["2".into(), "0.5".into(), "1".into()])];
        assert_eq!(cpu_sizes(&knobs), [0.5, 1.0, 2.0]);
        let ladder = cpu_sizes(&Vec::new());
        assert_eq!(ladder[0], 0.25);
        assert!(ladder.iter().all(|&c| c <= crate::sys::available_cores() as f64));
        assert_eq!(round_up(1), 16 << 20);
        assert_eq!(round_up(100 << 20), 112 << 20);
    }
}
