//! The seeds' method: each knob in turn, its values measured against the current configuration
//! in interleaved rounds and judged with an interval (verdict.rs). A value is adopted only when
//! its gain is both sure and worth having. Knobs judged before a later change moved the
//! operating point by more than the threshold are judged again at the new point, pass after
//! pass, until a pass changes nothing.

use super::verdict::{Challenger, Judgement, Shortcut, cheaper_by, effect_text, judge_growing, judged_text};
use crate::server::settings::Settings;
use crate::tune::evidence::{self, Evidence};
use crate::tune::objective::{Objective, fits};
use crate::tune::point::Point;
use crate::tune::step::{Step, Verdict};
use crate::tune::strategies::vocabulary::{Found, Knobs, value};
use crate::tune::trial::Load;
use crate::tune::tuner::Tuner;

/// Passes over the knobs at the most (the first, then revisits).
const MAX_PASSES: usize = 3;

/// The knob that sizes the pool of workers (every adapter's name for it).
const POOL: &str = "workers";

/// The seeds' MaxClients arithmetic applied to the other knobs' challengers: when the memory
/// budget caps the pool (more workers are listed than fit at the incumbent), a value that makes
/// each worker smaller (recycling, say) is worth only as much as the workers it lets fit. So
/// for each challenger measured within the budget, the most workers its figures say fit (of
/// the listed counts, more than it has) are tried with it; and a challenger with more workers
/// that the budget refused is tried again with fewer, as its own figures say fit (any refused
/// one, when the incumbent misses the budget too). One knob at a time could not find such a
/// pair: each half alone only costs.
fn pool_within_budget(
    knob: &str,
    counts: &[String],
    here: Option<&Point>,
    challengers: &[Challenger],
    points: &[Option<Point>],
) -> Vec<Challenger> {
    let listed: Vec<u64> = counts.iter().filter_map(|c| c.parse().ok()).collect();
    let count = |s: &Settings| s.get(POOL).and_then(|c| c.parse::<u64>().ok());
    let fit = |p: &Point| p.memory().and_then(|m| m.workers_fit);
    let (Some(here), Some(&most)) = (here.filter(|p| p.ok()), listed.iter().max()) else { return Vec::new() };
    let (Some(now), Some(fit_here)) = (count(&here.settings), fit(here)) else { return Vec::new() };
    if fit_here >= most {
        return Vec::new();
    }
    let here_fits = fits(here);
    let mut more = Vec::new();
    for (c, p) in challengers.iter().zip(points) {
        let (Some(p), Some(has)) = (p.as_ref().filter(|p| p.ok()), count(&c.settings)) else { continue };
        let Some(fit) = fit(p) else { continue };
        // Within the budget: grow to what fits; refused with more than the incumbent's
        // workers: shrink, never back to the incumbent's own count. When the incumbent misses
        // the budget too (the user's pool is already too large for it), any refused value is
        // worth what its own figures say fits, below the incumbent's count as well.
        let (above, room) = if fits(p) {
            (has, fit)
        } else if has > now {
            (now, fit.min(has - 1))
        } else if !here_fits {
            (0, fit.min(has - 1))
        } else {
            continue;
        };
        if let Some(&n) = listed.iter().filter(|&&n| n > above && n <= room).max() {
            let v = c.settings.get(knob).unwrap_or("");
            more.push(Challenger {
                value: format!("{v} with {POOL}={n}"),
                settings: c.settings.with(POOL, &n.to_string()),
            });
        }
    }
    more
}

/// A knob with this many values or more, all numbers, is searched coarse to fine.
const COARSE_FROM: usize = 6;

/// The coarse values of an ordered knob: the smallest, then each at least twice the last
/// taken, and the largest (powers of two over a range); None for a knob of few values or of
/// words.
fn coarse_values(values: &[String]) -> Option<Vec<String>> {
    let mut ordered: Vec<(f64, &String)> =
        values.iter().map(|v| Some((v.parse::<f64>().ok()?, v))).collect::<Option<_>>()?;
    if values.len() < COARSE_FROM || ordered.iter().any(|(n, _)| *n < 0.0) {
        return None;
    }
    ordered.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut coarse = vec![ordered[0]];
    for &(n, v) in &ordered[1..] {
        let last = coarse.last().unwrap().0;
        if n >= 2.0 * last.max(1.0) {
            coarse.push((n, v));
        }
    }
    let largest = *ordered.last().unwrap();
    if coarse.last().unwrap().1 != largest.1 {
        coarse.push(largest);
    }
    Some(coarse.into_iter().map(|(_, v)| v.clone()).collect())
}

/// Values within this share of the best throughput are as good as it, for the refinement:
/// the cheapest of them is where the curve flattens.
const CLOSE: f64 = 0.05;

/// Coarse to fine: a value held back (`held`) halfway between the smallest value as good as
/// the best (within `CLOSE`: where the curve flattens) and its nearest measured neighbour
/// below; and halfway between the best and its neighbour above when that one serves clearly
/// less (a peak between them). One a side a round, until none lies between.
fn finer_values(
    knob: &str,
    values: &[String],
    held: &[String],
    base: &Settings,
    here: Option<&Point>,
    challengers: &[Challenger],
    points: &[Option<Point>],
) -> Vec<Challenger> {
    if held.is_empty() {
        return Vec::new();
    }
    let number = |v: &str| v.parse::<f64>().ok();
    // The measured values of this knob alone, with their throughput so far (0 when it failed
    // or does not fit).
    let mut seen: Vec<(f64, f64)> = Vec::new();
    if let Some(p) = here
        && let Some(n) = p.settings.get(knob).and_then(number)
    {
        seen.push((n, if p.ok() && fits(p) { p.rps() } else { 0.0 }));
    }
    for (c, p) in challengers.iter().zip(points) {
        let (Some(n), Some(p)) = (number(&c.value), p.as_ref()) else { continue };
        seen.push((n, if p.ok() && fits(p) { p.rps() } else { 0.0 }));
    }
    let Some(&(best, top)) = seen.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else { return Vec::new() };
    if top <= 0.0 {
        return Vec::new();
    }
    let flat = seen.iter().filter(|(_, r)| *r >= top * (1.0 - CLOSE)).map(|(n, _)| *n).fold(best, f64::min);
    let tried = |n: f64| seen.iter().any(|(m, _)| *m == n) || challengers.iter().any(|c| number(&c.value) == Some(n));
    let halfway = |from: f64, side: f64| {
        let beyond = |n: f64| (n - from) * side > 0.0;
        let (neighbour, rps) = seen
            .iter()
            .copied()
            .filter(|(n, _)| beyond(*n))
            .min_by(|a, b| (a.0 - from).abs().total_cmp(&(b.0 - from).abs()))?;
        let mut between: Vec<(f64, &String)> = values
            .iter()
            .filter(|v| held.contains(v))
            .filter_map(|v| Some((number(v)?, v)))
            .filter(|(n, _)| beyond(*n) && (neighbour - n) * side > 0.0 && !tried(*n))
            .collect();
        between.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (_, v) = between.get(between.len() / 2)?;
        Some((rps, Challenger { value: (*v).clone(), settings: base.with(knob, v) }))
    };
    let mut more: Vec<Challenger> = halfway(flat, -1.0).map(|(_, c)| c).into_iter().collect();
    if let Some((rps, c)) = halfway(best, 1.0)
        && rps < top * (1.0 - CLOSE)
        && !more.iter().any(|m| m.value == c.value)
    {
        more.push(c);
    }
    more
}

/// Whether the search is one for the pool's knee (`Strategy::method`): the pool size is the
/// only knob with values to compare, enough of them for coarse to fine, and throughput alone
/// is the objective.
/// Throughput against the pool rises then flattens, so the largest count, halving and a
/// search between two counts (workers.rs) find where it flattens in a fraction of the windows that judging
/// every count against the current one takes: on gunicorn's 11 counts 10 windows against 22
/// (bench/README.md and its history in bench/HISTORY.md). An SLO or a least-memory objective is judged value by value.
pub fn pool_alone(knobs: &Knobs, objective: &Objective) -> bool {
    let compared: Vec<&(String, Vec<String>)> = knobs.iter().filter(|(_, v)| v.len() > 1).collect();
    *objective == Objective::Throughput
        && matches!(compared.as_slice(), [(knob, values)] if knob == POOL && coarse_values(values).is_some())
}

/// `base` with each knob it leaves unset at its first value: where the search starts.
pub fn starting_point(knobs: &Knobs, base: &Settings) -> Settings {
    let mut current = base.clone();
    for (knob, values) in knobs {
        if current.get(knob).is_none()
            && let Some(first) = values.first()
        {
            current = current.with(knob, first);
        }
    }
    current
}

/// The one-at-a-time strategy: each knob in turn, its values against the kept one, the others held.
pub fn one_at_a_time(t: &mut Tuner, knobs: &Knobs, base: &Settings) -> Found {
    let mut walk = Walk::from(knobs, base, t.load.clone());
    // Knobs to judge in this pass, in the file's order.
    let mut due: Vec<String> = knobs.iter().map(|(k, _)| k.clone()).collect();
    'passes: for pass in 0..MAX_PASSES {
        // The knobs judged at an operating point that has since moved.
        let mut stale = Vec::new();
        for (knob, values) in knobs.iter().filter(|(k, _)| due.contains(k)) {
            match walk.judge(t, knob, values, pass) {
                Turn::NothingToTry => continue,
                Turn::Stopped => break 'passes,
                Turn::Judged { moved } => {
                    stale.retain(|k| k != knob);
                    if moved {
                        // The knobs judged before this change were judged at another operating point.
                        stale.extend(walk.found.steps.iter().map(|s| s.knob.clone()).filter(|k| k != knob));
                    }
                }
            }
            if t.stopped.is_some() {
                break 'passes;
            }
        }
        match revisit(t, knobs, stale) {
            Some(again) => due = again,
            None => break,
        }
    }
    walk.measure_if_never_compared(t);
    if let Some(why) = t.stopped.clone() {
        walk.unjudged(&why);
    }
    walk.fall_back_if_missed(t);
    walk.finish()
}

/// The knobs to judge again in another pass, in the file's order (`stale`: those judged at
/// an operating point that has since moved), the pass entered in the plan; None when none is.
fn revisit(t: &mut Tuner, knobs: &Knobs, mut stale: Vec<String>) -> Option<Vec<String>> {
    stale.sort();
    stale.dedup();
    if stale.is_empty() {
        return None;
    }
    t.note(&format!("the operating point moved: {} judged again", stale.join(", ")));
    // The pass to come enters the plan (and the ETA) once it is known to come.
    let again: usize = knobs.iter().filter(|(k, v)| stale.contains(k) && v.len() > 1).map(|(_, v)| v.len()).sum();
    let j = t.judging;
    t.plan.add(again * j.min_rounds, again * j.max_rounds.max(j.min_rounds));
    Some(stale)
}

/// The method's state from one knob to the next.
struct Walk<'a> {
    knobs: &'a Knobs,
    load: Load,
    found: Found,
    /// The operating point: every value adopted so far.
    current: Settings,
    /// A value refused only because its workers did not fit the memory budget, kept for the
    /// later knobs: one of them (recycling, say) may bring it within the budget, which no
    /// change of one knob at a time could find.
    blocked: Vec<(String, String)>,
    /// The operating points, oldest first.
    path: Vec<Settings>,
}

/// How a knob's turn ended.
enum Turn {
    /// No value to try against the current one.
    NothingToTry,
    /// The run stopped before anything could be judged.
    Stopped,
    /// A step was recorded; `moved`: its change moved the operating point beyond the threshold.
    Judged { moved: bool },
}

/// Each challenger's label and the knobs it changes.
type Changes = Vec<(String, Vec<(String, String)>)>;

/// The challengers of a knob at the current operating point.
struct Challengers {
    /// Every value to try: the knob's other values, and each with a value another knob holds
    /// blocked.
    changes: Changes,
    /// Held back by the coarse-to-fine search, tried only around the best.
    held: Vec<String>,
    /// Measured from the start: the changes not held back.
    first: Vec<Challenger>,
}

impl<'a> Walk<'a> {
    /// The start: `base`, with each knob it leaves unset at its first value.
    fn from(knobs: &'a Knobs, base: &Settings, load: Load) -> Walk<'a> {
        let current = starting_point(knobs, base);
        let found = Found { baseline: None, steps: Vec::new(), recommended: current.clone(), evidence: Vec::new() };
        Walk { knobs, load, found, path: vec![current.clone()], current, blocked: Vec::new() }
    }

    /// The knob's other values, and each with a value another knob holds blocked; with many
    /// ordered values, the coarse ones first, the rest held back for around the best.
    fn challengers(&self, knob: &str, values: &[String], before_value: &str) -> Challengers {
        let mut changes: Changes = values
            .iter()
            .filter(|v| **v != before_value)
            .map(|v| (v.clone(), vec![(knob.to_string(), v.clone())]))
            .collect();
        for (other, held) in self.blocked.iter().filter(|(k, _)| k != knob) {
            for v in values.iter().filter(|v| **v != before_value) {
                changes.push((
                    format!("{v} with {other}={held}"),
                    vec![(knob.to_string(), v.clone()), (other.clone(), held.clone())],
                ));
            }
        }
        let held: Vec<String> = match coarse_values(values) {
            Some(c) => values.iter().filter(|v| !c.contains(v) && **v != before_value).cloned().collect(),
            None => Vec::new(),
        };
        let first = changes
            .iter()
            .filter(|(label, _)| !held.contains(label))
            .map(|(label, set)| Challenger { value: label.clone(), settings: self.current.with_all(set) })
            .collect();
        Challengers { changes, held, first }
    }

    /// One knob's turn: its values judged against the current one in interleaved rounds,
    /// the step and its evidence recorded, the adopted value made current.
    fn judge(&mut self, t: &mut Tuner, knob: &str, values: &[String], pass: usize) -> Turn {
        let before_value = value(&self.current, knob);
        let ch = self.challengers(knob, values, &before_value);
        if ch.first.is_empty() {
            return Turn::NothingToTry;
        }
        let Some(j) = self.compare(t, knob, values, pass, &before_value, &ch) else {
            return Turn::Stopped;
        };
        if self.found.baseline.is_none() {
            self.found.baseline = Some(j.incumbent.clone());
        }
        let context = Context {
            admitted: t.objective.admits(&j.incumbent),
            threshold: t.judging.threshold_pct,
            max_rounds: t.judging.max_rounds,
            again: pass > 0,
            objective: &t.objective,
            cut_short: t.stopped.as_deref(),
            never_measured: ch
                .changes
                .iter()
                .filter(|(label, _)| !j.challengers.iter().any(|m| m.value == *label))
                .map(|(label, _)| label.clone())
                .collect(),
            passed_over: ch.held.iter().filter(|v| !j.challengers.iter().any(|m| m.value == **v)).cloned().collect(),
        };
        let evidence = step_evidence(knob, &before_value, &j, &context);
        let cut_short = context.stopped_in(&j).is_some();
        let adopted_set = self.adopted_set(&j);
        self.hold_blocked(knob, &j, &ch.changes, &adopted_set);
        let moved =
            j.chosen.is_some_and(|i| j.challengers[i].effect.is_none_or(|e| e.pct.abs() > t.judging.threshold_pct));
        self.record_step(knob, &before_value, &j, &adopted_set, &evidence, cut_short);
        self.record_evidence(knob, &adopted_set, evidence, cut_short);
        Turn::Judged { moved }
    }

    /// The comparison in interleaved rounds (verdict.rs), growing as it goes: the finer
    /// values around the best, and the pool that fits the memory budget with a challenger.
    /// None when the run stopped before anything could be judged.
    fn compare(
        &self,
        t: &mut Tuner,
        knob: &str,
        values: &[String],
        pass: usize,
        before_value: &str,
        ch: &Challengers,
    ) -> Option<Judgement> {
        let again = if pass > 0 { format!(" (pass {})", pass + 1) } else { String::new() };
        let incumbent = if self.found.baseline.is_none() {
            "baseline".to_string()
        } else {
            format!("{knob}={before_value} (kept){again}")
        };
        let name_of = |v: &str| format!("{knob}={v}{again}");
        let pool = (knob != POOL).then(|| self.knobs.iter().find(|(k, _)| k == POOL)).flatten();
        let base = &self.current;
        let mut follow = |here: Option<&Point>, chs: &[Challenger], pts: &[Option<Point>]| {
            let mut more = finer_values(knob, values, &ch.held, base, here, chs, pts);
            if let Some((_, counts)) = pool {
                more.extend(pool_within_budget(knob, counts, here, chs, pts));
            }
            more
        };
        judge_growing(t, &self.load, &incumbent, &self.current, ch.first.clone(), &name_of, &mut follow)
    }

    /// What the adopted challenger changes: this knob, and any other changed with it.
    fn adopted_set(&self, j: &Judgement) -> Vec<(String, String)> {
        j.chosen
            .map(|i| {
                j.challengers[i]
                    .point
                    .settings
                    .iter()
                    .filter(|(k, v)| self.current.get(k) != Some(v.as_str()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Keeps this knob's best value that only the memory budget refused, for the knobs to
    /// come (the pool's size is not carried: it follows the budget instead,
    /// pool_within_budget); forgets what this knob held and what was just adopted.
    fn hold_blocked(&mut self, knob: &str, j: &Judgement, changes: &Changes, adopted_set: &[(String, String)]) {
        self.blocked.retain(|(k, _)| k != knob && !adopted_set.iter().any(|(a, _)| a == k));
        if j.chosen.is_none()
            && knob != POOL
            && let Some(c) = j
                .challengers
                .iter()
                .filter(|c| {
                    c.point.ok() && !fits(&c.point) && changes.iter().any(|(l, set)| *l == c.value && set.len() == 1)
                })
                .max_by(|a, b| a.point.rps().total_cmp(&b.point.rps()))
                .filter(|c| c.point.rps() > j.incumbent.rps())
        {
            self.blocked.push((knob.to_string(), c.value.clone()));
        }
    }

    /// The step, and the adopted change made the operating point. A step the run stopped in
    /// (`cut_short`) is undecided whatever its first windows read: its evidence says "not
    /// judged", and its verdict must not say more to whoever reads the JSON.
    fn record_step(
        &mut self,
        knob: &str,
        before_value: &str,
        j: &Judgement,
        adopted_set: &[(String, String)],
        evidence: &str,
        cut_short: bool,
    ) {
        let (after_value, after) = match j.chosen {
            Some(i) => (value(&self.current.with_all(adopted_set), knob), j.challengers[i].point.clone()),
            None => (before_value.to_string(), j.incumbent.clone()),
        };
        self.found.steps.push(Step {
            knob: knob.to_string(),
            before_value: before_value.to_string(),
            after_value,
            adopted: j.chosen.is_some(),
            verdict: Some(if cut_short { Verdict::Undecided } else { j.verdict }),
            effect: j.lead().and_then(|c| c.effect),
            rounds: j.rounds,
            before: j.incumbent.clone(),
            after,
            candidates: j.challengers.iter().map(|c| c.point.clone()).collect(),
            challenger: j.chosen.is_none().then(|| j.lead_index()).flatten(),
            evidence: evidence.to_string(),
        });
        if j.chosen.is_some() {
            self.current = self.current.with_all(adopted_set);
            self.path.push(self.current.clone());
        }
    }

    /// The evidence of this knob, and of any other knob adopted together with it.
    fn record_evidence(&mut self, knob: &str, adopted_set: &[(String, String)], evidence: String, cut_short: bool) {
        for (k, _) in adopted_set.iter().filter(|(k, _)| k != knob) {
            let why = format!("adopted together with {knob}: {evidence}");
            evidence::replace(&mut self.found.evidence, Evidence::new(k, value(&self.current, k), why));
        }
        match evidence::line_of(&mut self.found.evidence, knob) {
            // A revisit cut short says nothing new: the earlier verdict stands, so noted.
            Some(earlier) if cut_short => {
                earlier.why.push_str(&format!("; its revisit at the new operating point was cut short: {evidence}"));
                earlier.cut_short = true;
            }
            _ => {
                let line = Evidence { cut_short, ..Evidence::new(knob, value(&self.current, knob), evidence) };
                evidence::replace(&mut self.found.evidence, line);
            }
        }
    }

    /// Every knob had a single value: the configuration is still measured.
    fn measure_if_never_compared(&mut self, t: &mut Tuner) {
        if self.found.baseline.is_none() && t.stopped.is_none() {
            self.found.baseline = t.point("baseline", &self.current);
        }
    }

    /// Knobs the run stopped before: kept as they were, and said to be unjudged.
    fn unjudged(&mut self, why: &str) {
        let unjudged: Vec<_> =
            self.knobs.iter().filter(|(k, _)| !self.found.evidence.iter().any(|e| e.knob == *k)).collect();
        for (knob, values) in unjudged {
            let kept = value(&self.current, knob);
            let others: Vec<&str> = values.iter().filter(|v| **v != kept).map(String::as_str).collect();
            if others.is_empty() {
                continue;
            }
            let text = format!(
                "{knob} stays {kept}: not judged, the run stopped before its turn ({why}); never measured: {}",
                others.join(", ")
            );
            self.found.evidence.push(Evidence::after_stop(knob, &kept, text));
        }
    }

    /// A configuration adopted in one pass may be seen over the budget (or missing an SLO)
    /// when it is measured again in a later one: once seen there, it can be there again. The
    /// recommendation is then the newest configuration on the path that met the objective in
    /// every window it had.
    fn fall_back_if_missed(&mut self, t: &mut Tuner) {
        let Some(back) = fall_back(t, &self.path, &self.current) else { return };
        for (knob, value) in back.iter().filter(|(k, v)| self.current.get(k) != Some(v.as_str())) {
            let why = format!(
                "{knob} back to {value}: {} missed the objective in a later window (seen over the memory budget, or \
                 beyond the SLO, it can be there again); {} met it in every window",
                self.current.label(),
                back.label()
            );
            evidence::replace(&mut self.found.evidence, Evidence::new(knob, value, why));
        }
        t.note(&format!(
            "{} missed the objective at its revisit: falling back to {}",
            self.current.label(),
            back.label()
        ));
        self.current = back;
    }

    /// The findings: the evidence in the file's order, the operating point recommended.
    fn finish(mut self) -> Found {
        self.found.evidence.sort_by_key(|e| self.knobs.iter().position(|(n, _)| *n == e.knob));
        self.found.recommended = self.current;
        self.found
    }
}

/// The newest configuration of `path` (the operating points, oldest first) that meets the
/// objective over all its windows (as a step judges it: the costliest memory sample, the
/// median p99), when `current` does not; None when `current` does, or when none does (then
/// nothing better can be said than what the evidence says).
fn fall_back(t: &Tuner, path: &[Settings], current: &Settings) -> Option<Settings> {
    let all = |s: &Settings| {
        let windows: Vec<Point> = t.points.iter().filter(|p| p.settings == *s && p.ok()).cloned().collect();
        Point::combine("", &windows)
    };
    let admitted = |s: &Settings| all(s).is_some_and(|p| t.objective.admits(&p));
    if all(current).is_none() || admitted(current) {
        return None;
    }
    path.iter().rev().find(|s| *s != current && admitted(s)).cloned()
}

/// What the evidence of a step needs besides the judgement.
struct Context<'a> {
    /// The incumbent meets the objective.
    admitted: bool,
    threshold: f64,
    /// Judged again at a new operating point.
    again: bool,
    objective: &'a crate::tune::objective::Objective,
    /// Why the run stopped during this step (interrupted, time budget), if it did.
    cut_short: Option<&'a str>,
    /// Values the step was to try but never measured (the run stopped first).
    never_measured: Vec<String>,
    /// Rounds at the most (--max-rounds).
    max_rounds: usize,
    /// Values left out by the coarse-to-fine search: not around the best.
    passed_over: Vec<String>,
}

impl Context<'_> {
    /// Why the run stopped during this step, when that leaves it unjudged (an adoption
    /// already sure before the stop stands).
    fn stopped_in(&self, j: &Judgement) -> Option<&str> {
        self.cut_short.filter(|_| j.chosen.is_none())
    }
}

fn step_evidence(knob: &str, before: &str, j: &Judgement, cx: &Context) -> String {
    let mut text = judged_evidence(knob, before, j, cx);
    if !cx.passed_over.is_empty() && cx.cut_short.is_none() {
        text.push_str(&format!(
            "; not measured, coarse to fine (powers of two first, then only the values around the best): {}",
            cx.passed_over.join(", ")
        ));
    }
    text
}

fn judged_evidence(knob: &str, before: &str, j: &Judgement, cx: &Context) -> String {
    let (admitted, threshold) = (cx.admitted, cx.threshold);
    let again = if cx.again { " (judged again at the new operating point)" } else { "" };
    let here = &j.incumbent;
    let tried: Vec<String> = j
        .challengers
        .iter()
        .map(|c| judged_text(&format!("{knob}={}", c.value), c, cx.objective, cx.admitted))
        .collect();
    // A step the run stopped in: only what was measured is reported, nothing is claimed of
    // the rest. (An adoption already sure before the stop stands, below.)
    if let Some(why) = cx.stopped_in(j) {
        let never = if cx.never_measured.is_empty() {
            String::new()
        } else {
            format!("; never measured: {}", cx.never_measured.join(", "))
        };
        return format!(
            "{knob} stays {before} ({:.1} req/s): not judged, the run stopped after {} interleaved rounds ({why}); kept{again} [{}]{never}",
            here.rps(),
            j.rounds,
            tried.join("; ")
        );
    }
    let rounds = j.rounds_text();
    if !admitted && j.chosen.is_none() {
        return format!(
            "{knob} stays {before} ({:.1} req/s), though it misses the objective (an SLO, or the memory budget): no value tried meets it either, after {rounds}{again} [{}]",
            here.rps(),
            tried.join("; ")
        );
    }
    match (j.verdict, j.chosen) {
        (Verdict::Adopted, Some(i)) => {
            let c = &j.challengers[i];
            let mut change =
                c.effect.as_ref().map_or("meets the objective the incumbent misses".to_string(), effect_text);
            if let Some((dearer, to_it)) = &j.over_dearer {
                change += &format!(
                    ", preferred to {knob}={dearer} ({}): that one is not surely {threshold}% better and costs more",
                    to_it.as_ref().map_or("no interval".to_string(), |e| format!("{} more", effect_text(e)))
                );
            }
            if let Some(Shortcut::Tail { incumbent, challenger }) = &c.shortcut {
                change +=
                    &format!(", adopted for its tail: p99.9 {:.1} -> {:.1} ms", incumbent.p999_ms, challenger.p999_ms);
            }
            format!(
                "{knob} {before} -> {}: {:.1} -> {:.1} req/s, {change} (99% interval), p99 {:.2} -> {:.2} ms; adopted over {rounds}{again} [{}]",
                c.value,
                here.rps(),
                c.point.rps(),
                here.p99(),
                c.point.p99(),
                tried.join("; ")
            )
        }
        (Verdict::Worse, _) => format!(
            "{knob} stays {before} ({:.1} req/s): every value tried is worse (over {rounds}){again} [{}]",
            here.rps(),
            tried.join("; ")
        ),
        (Verdict::WorseTail, _) => format!(
            "{knob} stays {before} ({:.1} req/s, p99.9 {}): every value tried has a tail many times longer, not traded for throughput (over {rounds}){again} [{}]",
            here.rps(),
            here.tail().map_or("-".into(), |t| format!("{:.1} ms", t.p999_ms)),
            tried.join("; ")
        ),
        (Verdict::Cheaper, _) => {
            let cheaper_one = j.challengers.iter().find_map(|c| Some((c, cheaper_by(&c.point, here)?)));
            match cheaper_one {
                Some((c, why)) => format!(
                    "{knob} stays {before} ({:.1} req/s): {} costs less ({why}), but no number of rounds up to {} could show it serves as well, and a move from the current value needs a verdict: kept, over {rounds}{again} [{}]",
                    here.rps(),
                    c.value,
                    cx.max_rounds,
                    tried.join("; ")
                ),
                None => format!(
                    "{knob} stays {before} ({:.1} req/s): no number of rounds up to {} could settle the change, and {before} costs less{}: kept as the cheaper, over {rounds}{again} [{}]",
                    here.rps(),
                    cx.max_rounds,
                    j.lead().and_then(|c| cheaper_by(here, &c.point)).map_or(String::new(), |why| format!(" ({why})")),
                    tried.join("; ")
                ),
            }
        }
        (Verdict::NoEffect, _) => format!(
            "{knob} stays {before} ({:.1} req/s): no effect, no value within the objective can gain {threshold}% (99% intervals over {rounds}){again} [{}]",
            here.rps(),
            tried.join("; ")
        ),
        _ if j.challengers.iter().any(|c| c.fresh.as_ref().is_some_and(|f| !f.confirmed)) => format!(
            "{knob} stays {before} ({:.1} req/s): undecided after {rounds}; kept{again} [{}]",
            here.rps(),
            tried.join("; ")
        ),
        _ if j.challengers.iter().any(|c| matches!(c.shortcut, Some(Shortcut::CannotSettle { .. }))) => format!(
            "{knob} stays {before} ({:.1} req/s): undecided after {rounds}, and no number of rounds up to {} could settle it (the intervals projected to the cap allow neither a gain of {threshold}% nor its absence); kept{again} [{}]",
            here.rps(),
            cx.max_rounds,
            tried.join("; ")
        ),
        _ => format!(
            "{knob} stays {before} ({:.1} req/s): undecided after {rounds}, the intervals allow neither a gain of {threshold}% nor its absence; kept{again} [{}]",
            here.rps(),
            tried.join("; ")
        ),
    }
}
