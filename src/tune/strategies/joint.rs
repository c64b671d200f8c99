//! A search over the joint space of the knobs (2 to 4 of them), for the optimum one knob at a
//! time cannot reach: two knobs that must move together across a memory boundary (more
//! workers fit only when they recycle). Successive halving, coarse to fine:
//! - rung 0: a coarse subset of the grid (each numeric knob's ends and powers of two between,
//!   every value of the others), one window each, topped up with random configurations;
//! - refine: the unmeasured neighbours (adjacent values, one knob then two at once) of the best;
//! - halve: the best third measured again in interleaved rounds, scored by their median,
//!   until two or three remain; one that is far below the leader gets no more;
//! - judge: the leader against the runner-up and the baseline with the interleaved verdict,
//!   so the recommendation carries 99% intervals.
//!
//! Every choice is deterministic (the random top-up is seeded by the grid) so that a resumed
//! run asks for the same windows and reuses them from the journal.

use super::verdict::{Challenger, Judged, Judgement, effect_text, judge};
use crate::server::settings::Settings;
use crate::tune::evidence::Evidence;
use crate::tune::objective::fits;
use crate::tune::point::Point;
use crate::tune::step::{Step, Verdict};
use crate::tune::strategies::vocabulary::{Found, Knobs, value};
use crate::tune::trial::Load;
use crate::tune::tuner::{Judging, Plan, Tuner};

/// Knobs searched jointly at the most: past four the grid outgrows what a fraction of it tells.
pub const MAX_KNOBS: usize = 4;
/// Configurations at the most, for the same reason.
pub const MAX_CONFIGURATIONS: u64 = 1000;
/// A contender whose every window is under this share of the leader's score gets no more:
/// noise of a few percent cannot close such a gap.
const FAR_BELOW: f64 = 0.7;
/// Grids this large are searched within a quarter of the grid's windows; smaller ones are
/// measured whole at one window each before the halving.
const LARGE_GRID: u64 = 20;

/// Why the joint search refuses `knobs`, in one line; None when it takes them.
pub fn refuses(knobs: &Knobs) -> Option<String> {
    let grid = grid_size(knobs);
    if knobs.len() > MAX_KNOBS {
        Some(format!(
            "--strategy joint searches at most {MAX_KNOBS} knobs jointly, the file has {}: fix the others with --set",
            knobs.len()
        ))
    } else if grid > MAX_CONFIGURATIONS {
        Some(format!(
            "--strategy joint searches at most {MAX_CONFIGURATIONS} configurations, the knobs make {grid}: list fewer values"
        ))
    } else {
        None
    }
}

fn grid_size(knobs: &Knobs) -> u64 {
    knobs.iter().map(|(_, v)| v.len().max(1) as u64).product()
}

/// The windows of rung 0, refinement and halving, before the final judgement.
fn search_windows(knobs: &Knobs, judging: &Judging, repeats: usize) -> usize {
    let grid = grid_size(knobs);
    if grid < LARGE_GRID {
        grid as usize
    } else {
        // A quarter of the grid's windows, the final judgement's first rounds included.
        ((grid as usize * repeats.max(1)) / 4).saturating_sub(2 * judging.min_rounds).max(4)
    }
}

/// The windows the search plans: the search, then the final judgement of two (at the least)
/// or three configurations (at the most, each to the cap of rounds).
pub fn planned_windows(knobs: &Knobs, judging: &Judging, repeats: usize) -> Plan {
    let search = search_windows(knobs, judging, repeats);
    if grid_size(knobs) < 2 {
        return Plan { least: search, most: search };
    }
    let most_rounds = judging.max_rounds.max(judging.min_rounds);
    Plan { least: search + 2 * judging.min_rounds, most: search + 3 * most_rounds }
}

/// One configuration of the grid: an index into each knob's values, and its windows so far.
struct Config {
    at: Vec<usize>,
    settings: Settings,
    windows: Vec<Point>,
}

impl Config {
    /// "workers=6 max_requests=100": the searched knobs only.
    fn label(&self, knobs: &Knobs) -> String {
        knobs.iter().zip(&self.at).map(|(k, &i)| format!("{}={}", k.0, k.1[i])).collect::<Vec<_>>().join(" ")
    }

    fn point(&self, step: &str) -> Option<Point> {
        Point::combine(step, &self.windows)
    }
}

/// The search's state: the grid's configurations measured so far and the windows left.
struct Search<'k> {
    knobs: &'k Knobs,
    base: Settings,
    /// Each knob's value indices in ascending order (numeric knobs), else in the file's.
    order: Vec<Vec<usize>>,
    numeric: Vec<bool>,
    configs: Vec<Config>,
    left: usize,
    load: Load,
}

impl<'k> Search<'k> {
    fn new(t: &Tuner, knobs: &'k Knobs, base: &Settings, budget: usize) -> Search<'k> {
        let mut order = Vec::new();
        let mut numeric = Vec::new();
        for (_, values) in knobs {
            let nums: Option<Vec<f64>> = values.iter().map(|v| v.parse::<f64>().ok()).collect();
            let mut idx: Vec<usize> = (0..values.len()).collect();
            if let Some(n) = &nums {
                idx.sort_by(|&a, &b| n[a].total_cmp(&n[b]));
            }
            numeric.push(nums.is_some() && values.len() > 2);
            order.push(idx);
        }
        Search {
            knobs,
            base: base.clone(),
            order,
            numeric,
            configs: Vec::new(),
            left: budget,
            load: t.load.settling_over_budget(),
        }
    }

    fn settings(&self, at: &[usize]) -> Settings {
        let set: Vec<(String, String)> =
            self.knobs.iter().zip(at).map(|((k, values), &i)| (k.clone(), values[i].clone())).collect();
        self.base.with_all(&set)
    }

    fn find(&self, at: &[usize]) -> Option<usize> {
        self.configs.iter().position(|c| c.at == at)
    }

    /// One more window of the configuration at `at` (added when new); false when the tuner
    /// stopped. `name` is its first window's step name.
    fn window(&mut self, t: &mut Tuner, at: &[usize], name: Option<&str>) -> bool {
        let i = match self.find(at) {
            Some(i) => i,
            None => {
                let settings = self.settings(at);
                self.configs.push(Config { at: at.to_vec(), settings, windows: Vec::new() });
                self.configs.len() - 1
            }
        };
        let c = &self.configs[i];
        let label = name.map_or_else(|| c.label(self.knobs), str::to_string);
        let step = if c.windows.is_empty() { label } else { format!("{label} #{}", c.windows.len() + 1) };
        let settings = c.settings.clone();
        let Some(p) = t.window(&step, &settings, &self.load) else { return false };
        self.configs[i].windows.push(p);
        self.left = self.left.saturating_sub(1);
        true
    }

    /// The score of configuration `i` (the median of its windows), None when it failed or
    /// misses the objective (an SLO, the memory budget).
    fn score(&self, t: &Tuner, i: usize) -> Option<f64> {
        let p = self.configs[i].point("")?;
        t.objective.admits(&p).then(|| t.objective.score(&p)).flatten()
    }

    /// The configurations that meet the objective, best first.
    fn ranked(&self, t: &Tuner) -> Vec<(usize, f64)> {
        let mut r: Vec<(usize, f64)> =
            (0..self.configs.len()).filter_map(|i| self.score(t, i).map(|s| (i, s))).collect();
        r.sort_by(|a, b| b.1.total_cmp(&a.1));
        r
    }

    /// Whether every window of configuration `i` is far below `leader`'s score.
    fn far_below(&self, t: &Tuner, i: usize, leader: f64) -> bool {
        self.configs[i].windows.iter().all(|w| t.objective.score(w).is_none_or(|s| s < FAR_BELOW * leader))
    }

    /// Rung 0: per knob its coarse values, thinned until their grid fits `room` windows.
    fn coarse(&self, room: usize) -> Vec<Vec<usize>> {
        let mut picks: Vec<Vec<usize>> = (0..self.knobs.len())
            .map(|k| if self.numeric[k] { self.powers_of_two(k) } else { self.order[k].clone() })
            .collect();
        let size = |p: &[Vec<usize>]| p.iter().map(Vec::len).product::<usize>();
        while size(&picks) > room {
            // The numeric knob with the most coarse values loses one of its inner ones.
            let Some(k) =
                (0..picks.len()).filter(|&k| self.numeric[k] && picks[k].len() > 2).max_by_key(|&k| picks[k].len())
            else {
                break;
            };
            picks[k] = evenly(&picks[k], picks[k].len() - 1);
        }
        picks
    }

    /// A numeric knob's smallest and largest values and, between, those nearest to the
    /// powers of two of the smallest positive one (value indices, ascending).
    fn powers_of_two(&self, k: usize) -> Vec<usize> {
        let values: Vec<f64> = self.order[k].iter().map(|&i| self.knobs[k].1[i].parse().unwrap_or(0.0)).collect();
        let mut picked = vec![0, values.len() - 1];
        let (Some(&low), Some(&high)) = (values.iter().find(|v| **v > 0.0), values.last()) else {
            return picked.iter().map(|&p| self.order[k][p]).collect();
        };
        let mut target = low;
        while target < high {
            let nearest = (0..values.len())
                .filter(|&p| values[p] > 0.0)
                .min_by(|&a, &b| (values[a] / target).ln().abs().total_cmp(&(values[b] / target).ln().abs()));
            picked.extend(nearest);
            target *= 2.0;
        }
        picked.sort();
        picked.dedup();
        picked.iter().map(|&p| self.order[k][p]).collect()
    }

    /// The unmeasured neighbours of the configuration at `at`: one knob moved to an adjacent
    /// value (any other value, for an unordered knob), then two knobs at once.
    fn neighbours(&self, at: &[usize]) -> Vec<Vec<usize>> {
        let moves = |k: usize| -> Vec<usize> {
            let order = &self.order[k];
            let pos = order.iter().position(|&i| i == at[k]).unwrap_or(0);
            if self.numeric[k] {
                [pos.checked_sub(1), Some(pos + 1).filter(|&p| p < order.len())]
                    .into_iter()
                    .flatten()
                    .map(|p| order[p])
                    .collect()
            } else {
                order.iter().copied().filter(|&i| i != at[k]).collect()
            }
        };
        let mut out: Vec<Vec<usize>> = Vec::new();
        for k in 0..at.len() {
            for v in moves(k) {
                let mut n = at.to_vec();
                n[k] = v;
                out.push(n);
            }
        }
        for a in 0..at.len() {
            for b in a + 1..at.len() {
                for va in moves(a) {
                    for vb in moves(b) {
                        let mut n = at.to_vec();
                        n[a] = va;
                        n[b] = vb;
                        out.push(n);
                    }
                }
            }
        }
        out.retain(|n| self.find(n).is_none());
        out
    }
}

/// `n` of `picks`, the first and last kept and the rest evenly spaced between.
fn evenly(picks: &[usize], n: usize) -> Vec<usize> {
    let last = picks.len() - 1;
    let mut out: Vec<usize> = (0..n).map(|j| picks[(j * last + (n - 1) / 2) / (n - 1).max(1)]).collect();
    out.dedup();
    out
}

/// Every configuration of the grid, as settings of the knobs alone (tests, reports).
#[cfg(test)]
pub fn grid_settings(knobs: &Knobs) -> Vec<Settings> {
    grid(knobs)
        .iter()
        .map(|at| Settings(knobs.iter().zip(at).map(|((k, v), &i)| (k.clone(), v[i].clone())).collect()))
        .collect()
}

/// Every configuration of the grid, as value indices (the first knob slowest).
fn grid(knobs: &Knobs) -> Vec<Vec<usize>> {
    knobs.iter().fold(vec![Vec::new()], |acc, (_, values)| {
        acc.iter().flat_map(|a| (0..values.len()).map(move |i| [a.clone(), vec![i]].concat())).collect()
    })
}

/// The joint strategy: the knobs searched together over their grid, the leaders judged in rounds at the end.
pub fn joint(t: &mut Tuner, knobs: &Knobs, base: &Settings) -> Found {
    let knobs: Knobs = knobs.iter().filter(|(_, v)| !v.is_empty()).cloned().collect();
    let budget = search_windows(&knobs, &t.judging, t.repeats);
    let mut s = Search::new(t, &knobs, base, budget);
    // The baseline: the values the base (the user's configuration) sets, else the first listed.
    let baseline_at: Vec<usize> = knobs
        .iter()
        .map(|(k, values)| base.get(k).and_then(|b| values.iter().position(|v| v == b)).unwrap_or(0))
        .collect();
    let mut empty =
        Found { baseline: None, steps: Vec::new(), recommended: s.settings(&baseline_at), evidence: Vec::new() };

    // Rung 0: the baseline first, then the coarse grid, then random others while room is left.
    let all = grid(&knobs);
    let rung0 = if (all.len() as u64) < LARGE_GRID { all.len() } else { (budget * 3).div_ceil(4) };
    let mut first: Vec<Vec<usize>> = vec![baseline_at.clone()];
    let coarse = s.coarse(rung0);
    first.extend(all.iter().filter(|at| at.iter().enumerate().all(|(k, i)| coarse[k].contains(i))).cloned());
    let mut rng = fastrand::Rng::with_seed(all.len() as u64);
    let mut rest: Vec<&Vec<usize>> = all.iter().filter(|at| !first.contains(at)).collect();
    rng.shuffle(&mut rest);
    first.extend(rest.into_iter().cloned());
    // Each once, in this order (the baseline, where the grid's order meets it again, is not).
    let mut seen = std::collections::HashSet::new();
    first.retain(|at| seen.insert(at.clone()));
    for (n, at) in first.iter().take(rung0.max(1)).enumerate() {
        if !s.window(t, at, (n == 0).then_some("baseline")) {
            return stopped(t, s, empty);
        }
    }
    let measured = |s: &Search| s.configs.iter().filter(|c| !c.windows.is_empty()).count();
    t.note(&format!("joint: rung 0 measured {} of {} configurations, one window each", measured(&s), all.len()));

    // Refine: the neighbours of the best, the leader's first; a new leader's come next.
    while s.left > 0 {
        let ranked = s.ranked(t);
        let next = ranked.iter().take(2).find_map(|&(i, _)| s.neighbours(&s.configs[i].at.clone()).into_iter().next());
        let Some(at) = next else { break };
        if !s.window(t, &at, None) {
            return stopped(t, s, empty);
        }
    }

    // Halve: the best third (two at least) in rounds, until two or three remain.
    let ranked = s.ranked(t);
    let Some(&(_, lead_score)) = ranked.first() else {
        t.plan.release(s.left, s.left);
        empty.baseline = s.configs[0].point("baseline");
        empty.evidence = knobs
            .iter()
            .map(|(k, _)| {
                Evidence::new(k, value(&empty.recommended, k), "kept: no configuration measured met the objective")
            })
            .collect();
        return empty;
    };
    let mut contenders: Vec<usize> = ranked
        .iter()
        .take((ranked.len().div_ceil(3)).max(2))
        .map(|&(i, _)| i)
        .filter(|&i| !s.far_below(t, i, lead_score))
        .collect();
    let mut round = 0;
    while contenders.len() > 3 && s.left >= contenders.len() {
        let mut order = contenders.clone();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let at = s.configs[i].at.clone();
            if !s.window(t, &at, None) {
                return stopped(t, s, empty);
            }
        }
        round += 1;
        let mut by_score: Vec<(usize, f64)> =
            contenders.iter().filter_map(|&i| s.score(t, i).map(|v| (i, v))).collect();
        by_score.sort_by(|a, b| b.1.total_cmp(&a.1));
        let lead = by_score.first().map_or(0.0, |b| b.1);
        contenders = by_score
            .iter()
            .take(by_score.len().div_ceil(2).max(2))
            .map(|&(i, _)| i)
            .filter(|&i| !s.far_below(t, i, lead))
            .collect();
    }
    t.plan.release(s.left, s.left);
    finish(t, s, &knobs)
}

/// The run stopped during the search: the best measured so far, said to be only that.
fn stopped(t: &mut Tuner, s: Search, mut found: Found) -> Found {
    t.plan.release(s.left, s.left);
    found.baseline = s.configs.first().and_then(|c| c.point("baseline"));
    if let Some(&(i, score)) = s.ranked(t).first() {
        found.recommended = s.configs[i].settings.clone();
        let label = s.configs[i].label(s.knobs);
        found.evidence = s
            .knobs
            .iter()
            .map(|(k, _)| {
                let v = value(&found.recommended, k);
                Evidence::new(
                    k,
                    v,
                    format!("the best measured before the stop, {label} scoring {score:.1}, not judged"),
                )
            })
            .collect();
    }
    found
}

/// The final judgement: the leader against the runner-up, and against the baseline unless
/// the baseline is far below or misses the objective (then its one window says enough).
fn finish(t: &mut Tuner, s: Search, knobs: &Knobs) -> Found {
    let ranked = s.ranked(t);
    let (leader, lead_score) = ranked[0];
    let runner_up = ranked.get(1).map(|&(i, _)| i);
    let baseline = 0;
    let base_point = s.configs[baseline].point("baseline");
    let base_admitted = s.score(t, baseline).is_some();
    let base_in =
        base_admitted && leader != baseline && runner_up != Some(baseline) && !s.far_below(t, baseline, lead_score);
    let most = t.judging.max_rounds.max(t.judging.min_rounds);
    // The plan counted two configurations at least, three at most.
    let judged_configs = 1 + runner_up.is_some() as usize + base_in as usize;
    t.plan.release(2usize.saturating_sub(judged_configs) * t.judging.min_rounds, (3 - judged_configs) * most);
    let label = |i: usize| s.configs[i].label(knobs);
    let final_name = |v: &str| format!("{v} (final)");
    // The incumbent is what a user keeps without evidence: the baseline when it is in, else
    // the runner-up; the leader is always a challenger (unless it is the baseline).
    let (incumbent, challengers): (usize, Vec<usize>) = match (base_in, runner_up) {
        (true, Some(r)) => (baseline, vec![leader, r]),
        (_, Some(r)) if leader == baseline => (baseline, vec![r]),
        (_, Some(r)) => (r, vec![leader]),
        (_, None) => (leader, Vec::new()),
    };
    let chs: Vec<Challenger> =
        challengers.iter().map(|&i| Challenger { value: label(i), settings: s.configs[i].settings.clone() }).collect();
    let incumbent_settings = s.configs[incumbent].settings.clone();
    let j = judge_final(t, &final_name(&label(incumbent)), &incumbent_settings, &chs, incumbent == baseline);
    let Some(j) = j else {
        return unjudged(t.stopped.is_some(), &s, knobs, leader, lead_score, base_point);
    };
    let judged = |i: usize| j.challengers.iter().position(|c| c.value == label(i));
    let final_point = |i: usize| -> Point {
        match judged(i) {
            Some(c) => j.challengers[c].point.clone(),
            None if i == incumbent => j.incumbent.clone(),
            None => s.configs[i].point(&label(i)).expect("a ranked configuration was measured"),
        }
    };
    let score = |p: &Point| t.objective.admits(p).then(|| t.objective.score(p)).flatten();
    // The winner: of the leader and the runner-up, the better final median; then the
    // baseline, when it was judged, unless the winner's gain over it is sure.
    let top: Vec<usize> = [Some(leader), runner_up].into_iter().flatten().collect();
    let best = top
        .iter()
        .copied()
        .max_by(|&a, &b| {
            score(&final_point(a)).unwrap_or(f64::MIN).total_cmp(&score(&final_point(b)).unwrap_or(f64::MIN))
        })
        .unwrap_or(leader);
    let against_base = (incumbent == baseline).then(|| judged(best)).flatten();
    let chosen = match against_base {
        Some(c) if j.challengers[c].verdict != Verdict::Adopted => baseline,
        _ => best,
    };
    let recommended = s.configs[chosen].settings.clone();
    let rec = final_point(chosen);
    let mut steps = Vec::new();
    // Against the baseline: judged in rounds, or its one window far below.
    let base_line = match against_base {
        Some(c) => {
            let ch = &j.challengers[c];
            steps.push(Step {
                challenger: (chosen == baseline).then_some(c),
                rounds: j.rounds,
                ..step(knobs, &j.incumbent, &ch.point, Some(ch.verdict), ch.effect, chosen != baseline, &j.challengers)
            });
            let interval = ch.effect.map_or(String::new(), |e| format!(" {} (99% interval),", effect_text(&e)));
            format!(
                "{} against the baseline {}:{interval} {} after {}",
                label(best),
                label(baseline),
                ch.verdict.word(),
                j.rounds_text()
            )
        }
        None => {
            let base_label = label(baseline);
            baseline_not_judged(
                knobs,
                &base_label,
                base_point.as_ref(),
                &rec,
                chosen == baseline,
                base_admitted,
                &mut steps,
            )
        }
    };
    // Against the runner-up: measured in the same rounds as the winner (or as its incumbent),
    // so their windows pair round by round.
    let other = top.iter().copied().find(|&i| i != chosen && i != baseline);
    let runner_line =
        other.map(|o| against_runner_up(t, knobs, &label(o), &final_point(o), &rec, chosen != baseline, &mut steps));
    let head = format!(
        "{} {:.1} req/s, p99 {:.2} ms over {} windows; {} of the {} configurations measured",
        label(chosen),
        rec.rps(),
        rec.p99(),
        rec.samples.len(),
        s.configs.len(),
        grid_size(knobs)
    );
    let mut why = format!("{head}; {base_line}");
    if let Some(r) = &runner_line {
        why.push_str(&format!("; {r}"));
    }
    let evidence = knob_evidence(&s, knobs, chosen, &recommended, &score, &why);
    let baseline = if incumbent == baseline { Some(j.incumbent.clone()) } else { base_point };
    Found { baseline, steps, recommended, evidence }
}

/// The evidence when nothing was judged: one configuration met the objective, or the run
/// stopped first; the leader is recommended.
fn unjudged(
    stopped: bool,
    s: &Search,
    knobs: &Knobs,
    leader: usize,
    lead_score: f64,
    base_point: Option<Point>,
) -> Found {
    let label = s.configs[leader].label(knobs);
    let recommended = s.configs[leader].settings.clone();
    let why = if stopped {
        format!("the best measured, {label} scoring {lead_score:.1}, not judged")
    } else {
        format!("{label} scoring {lead_score:.1}: the only configuration measured that meets the objective")
    };
    let evidence = knobs.iter().map(|(k, _)| Evidence::new(k, value(&recommended, k), &why)).collect();
    Found { baseline: base_point, steps: Vec::new(), recommended, evidence }
}

/// The final rounds, the incumbent against `challengers` (None without any). Against the
/// runner-up alone (not `against_baseline`) the better median wins, whatever the verdict:
/// fresh launches would change nothing (they cost 8 windows on bench grid (a)).
fn judge_final(
    t: &mut Tuner,
    incumbent_name: &str,
    incumbent: &Settings,
    challengers: &[Challenger],
    against_baseline: bool,
) -> Option<Judgement> {
    if challengers.is_empty() {
        return None;
    }
    let load = t.load.clone();
    let judging = t.judging;
    t.judging.fresh_launches = against_baseline;
    let j = judge(t, &load, incumbent_name, incumbent, challengers, &|v: &str| format!("{v} (final)"));
    t.judging = judging;
    j
}

/// The baseline not judged in rounds because it misses the objective (a constraint the
/// winner meets) or every window of it fell far below the leader's: the same kind of evidence
/// a verdict's shortcuts take, so the move is adopted by it. The evidence's line, and a step.
fn baseline_not_judged(
    knobs: &Knobs,
    label: &str,
    base_point: Option<&Point>,
    rec: &Point,
    kept: bool,
    admitted: bool,
    steps: &mut Vec<Step>,
) -> String {
    if let Some(p) = base_point {
        let verdict = (!kept).then_some(Verdict::Adopted);
        steps.push(step(knobs, p, rec, verdict, None, !kept, &[]));
    }
    match base_point {
        Some(p) if kept => format!("the baseline {label} leads, {:.1} req/s", p.rps()),
        Some(p) if !admitted => {
            format!("the baseline {label} misses the objective{}", crate::tune::objective::misfit(p))
        }
        Some(p) => format!(
            "the baseline {label} {:.1} req/s in {} window(s), under {:.0}% of the leader: not measured again",
            p.rps(),
            p.samples.len(),
            FAR_BELOW * 100.0
        ),
        None => format!("the baseline {label} failed"),
    }
}

/// The winner `rec` against the runner-up `other` (`label`), their windows paired round by
/// round: the evidence's line, and a step when the winner is not the baseline (`moved`).
fn against_runner_up(
    t: &Tuner,
    knobs: &Knobs,
    label: &str,
    other: &Point,
    rec: &Point,
    moved: bool,
    steps: &mut Vec<Step>,
) -> String {
    let (mut a, mut b) = (other.clone(), rec.clone());
    let n = a.samples.len().min(b.samples.len());
    a.samples.truncate(n);
    b.samples.truncate(n);
    let effect = t.objective.effect(&a, &b, t.judging.confidence);
    if moved {
        steps.push(Step { rounds: n, ..step(knobs, other, rec, None, effect, true, &[]) });
    }
    match effect {
        Some(e) => format!(
            "against the runner-up {label} ({:.1} req/s): {} (99% interval, {n} paired rounds)",
            other.rps(),
            effect_text(&e)
        ),
        None => format!("against the runner-up {label}: no interval (it missed the objective or failed)"),
    }
}

/// Each knob's evidence: `why` (the winner and its comparisons), then what this knob's other
/// values scored, measured with the others held as the winner has them.
fn knob_evidence(
    s: &Search,
    knobs: &Knobs,
    chosen: usize,
    recommended: &Settings,
    score: &dyn Fn(&Point) -> Option<f64>,
    why: &str,
) -> Vec<Evidence> {
    let at = &s.configs[chosen].at;
    knobs
        .iter()
        .enumerate()
        .map(|(k, (name, values))| {
            // This knob's other values measured with the others held: what moving it alone does.
            let along: Vec<String> = s
                .configs
                .iter()
                .filter(|c| c.at[k] != at[k] && (0..at.len()).all(|m| m == k || c.at[m] == at[m]))
                .filter_map(|c| Some((values[c.at[k]].as_str(), c.point("")?)))
                .map(|(v, p)| match score(&p) {
                    Some(sc) => format!("{name}={v} {sc:.1}"),
                    None if !p.ok() => format!("{name}={v} failed"),
                    None if !fits(&p) => format!("{name}={v} over the memory budget"),
                    None => format!("{name}={v} misses the objective"),
                })
                .collect();
            let mut why = why.to_string();
            if !along.is_empty() {
                why.push_str(&format!("; this knob moved alone: {}", along.join(", ")));
            }
            Evidence::new(name, value(recommended, name), why)
        })
        .collect()
}

/// A final comparison in the steps' form: `before` against `after`, the knobs searched as
/// one; `after` only when `adopted`.
fn step(
    knobs: &Knobs,
    before: &Point,
    after: &Point,
    verdict: Option<Verdict>,
    effect: Option<crate::stats::Effect>,
    adopted: bool,
    candidates: &[Judged],
) -> Step {
    let of =
        |p: &Point| knobs.iter().map(|(k, _)| format!("{k}={}", value(&p.settings, k))).collect::<Vec<_>>().join(" ");
    let after = if adopted { after } else { before };
    Step {
        knob: knobs.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(", "),
        before_value: of(before),
        after_value: of(after),
        adopted,
        verdict,
        effect,
        rounds: before.samples.len(),
        before: before.clone(),
        after: after.clone(),
        candidates: candidates.iter().map(|c| c.point.clone()).collect(),
        challenger: None,
        evidence: String::new(),
    }
}
