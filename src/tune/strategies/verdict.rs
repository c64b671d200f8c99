//! Judging challengers against the incumbent: every configuration measured once per round, in
//! turn (A B A B, the order reversed each round so neither always goes first), so that slow
//! drift of the machine hits all alike; the change judged on the pairs of each round with an
//! interval; more rounds only while the verdict is open, up to a cap.

use crate::stats::Effect;
use crate::tune::objective::fits;
use crate::tune::trial::Load;
use crate::tune::{Point, Settings, Tuner, Verdict};

/// A value to try, and the configuration with it.
#[derive(Clone)]
pub struct Challenger {
    pub value: String,
    pub settings: Settings,
}

/// One challenger's result.
pub struct Judged {
    pub value: String,
    /// Its windows as one point (samples in round order).
    pub point: Point,
    /// The change from the incumbent, + is better; None when it failed or missed the
    /// objective's constraint.
    pub effect: Option<Effect>,
    pub verdict: Verdict,
}

/// What a comparison found.
pub struct Judgement {
    /// The incumbent's windows as one point.
    pub incumbent: Point,
    pub challengers: Vec<Judged>,
    /// The adopted challenger (the largest gain among those adopted).
    pub chosen: Option<usize>,
    /// The step's verdict: adopted; worse when every challenger is a sure loss; no effect
    /// when no challenger can gain the threshold; undecided otherwise.
    pub verdict: Verdict,
    pub rounds: usize,
}

impl Judgement {
    /// The challenger whose effect stands for the step: the adopted one, else the largest gain.
    pub fn lead(&self) -> Option<&Judged> {
        self.lead_index().map(|i| &self.challengers[i])
    }

    /// Where `lead` is in `challengers`; without any effect measured, the first that was
    /// measured, so a table still has a challenger to show.
    pub fn lead_index(&self) -> Option<usize> {
        let pct = |c: &Judged| c.effect.map_or(f64::MIN, |e| e.pct);
        self.chosen
            .or_else(|| {
                (0..self.challengers.len())
                    .filter(|&i| self.challengers[i].effect.is_some())
                    .max_by(|&a, &b| pct(&self.challengers[a]).total_cmp(&pct(&self.challengers[b])))
            })
            .or_else(|| (!self.challengers.is_empty()).then_some(0))
    }
}

/// The verdict an interval gives: adopted when it excludes zero and the change clears the
/// threshold; worse when it lies wholly below zero (a sure loss, however small); no effect
/// when it rules out a gain of the threshold (the change lies within plus or minus the
/// threshold); undecided otherwise.
pub fn classify(e: &Effect, threshold_pct: f64) -> Verdict {
    if e.low_pct > 0.0 && e.pct >= threshold_pct {
        Verdict::Adopted
    } else if e.high_pct < 0.0 {
        Verdict::Worse
    } else if e.high_pct <= threshold_pct && e.low_pct >= -threshold_pct {
        Verdict::NoEffect
    } else {
        Verdict::Undecided
    }
}

/// The name of round `round` (0-based) of a measurement named `name`.
fn round_name(name: &str, round: usize) -> String {
    if round == 0 { name.to_string() } else { format!("{name} #{}", round + 1) }
}

/// Measures the incumbent (named `incumbent_name`) and the challengers (named by `name_of`
/// their value) in rounds under `load`, and judges each challenger. None when the incumbent
/// could not be measured at all (the tuner stopped, or its first window failed: then its
/// failed point is in `Tuner::points`).
pub fn judge(
    t: &mut Tuner,
    load: &Load,
    incumbent_name: &str,
    incumbent: &Settings,
    challengers: &[Challenger],
    name_of: &dyn Fn(&str) -> String,
) -> Option<Judgement> {
    judge_growing(t, load, incumbent_name, incumbent, challengers.to_vec(), name_of, &mut |_, _, _| Vec::new())
}

/// What `judge_growing` asks for more challengers with: the incumbent's windows so far as one
/// point, the challengers, and each one's windows so far (None before its first).
pub type Grow<'g> = dyn FnMut(Option<&Point>, &[Challenger], &[Option<Point>]) -> Vec<Challenger> + 'g;

/// As `judge`; after each round `grow` may add challengers that the windows so far suggest
/// (a configuration that only a measurement can name). Each new one gets rounds of its own,
/// interleaved with the others' and paired with the incumbent's of the same rounds.
pub fn judge_growing(
    t: &mut Tuner,
    load: &Load,
    incumbent_name: &str,
    incumbent: &Settings,
    mut challengers: Vec<Challenger>,
    name_of: &dyn Fn(&str) -> String,
    grow: &mut Grow,
) -> Option<Judgement> {
    let j = t.judging;
    // A window seen over the budget settles its configuration (see `assess`): it ends there.
    let settling = load.settling_over_budget();
    // The challengers share the step's error rate (Bonferroni).
    let confidence_of = |k: usize| 1.0 - (1.0 - j.confidence) / k.max(1) as f64;
    let all = |w: &[Option<Point>]| w.iter().flatten().cloned().collect::<Vec<_>>();
    let own = |w: &[Option<Point>]| w.iter().flatten().count();
    let mut windows: Vec<Vec<Option<Point>>> = vec![Vec::new(); challengers.len() + 1];
    // Challengers whose verdict more rounds cannot change.
    let mut settled = vec![false; challengers.len() + 1];
    // Rounds each configuration may take, and whether its unused ones have left the plan.
    let (least, most) = (j.min_rounds, j.max_rounds.max(j.min_rounds));
    let mut released = vec![false; challengers.len() + 1];
    let mut rounds = 0;
    'rounds: loop {
        let n = challengers.len() + 1;
        let open: Vec<usize> =
            (1..n).filter(|&i| !settled[i] && own(&windows[i]) < j.max_rounds.max(j.min_rounds)).collect();
        if open.is_empty() && (n > 1 || rounds >= j.min_rounds) {
            break;
        }
        let r = rounds;
        let mut order: Vec<usize> = std::iter::once(0).chain(open).collect();
        if r % 2 == 1 {
            order.reverse();
        }
        for w in windows.iter_mut() {
            w.push(None);
        }
        for i in order {
            let (name, settings) = match i {
                0 => (round_name(incumbent_name, r), incumbent),
                _ => (round_name(&name_of(&challengers[i - 1].value), own(&windows[i])), &challengers[i - 1].settings),
            };
            // A round past the least the plan counted on.
            let beyond = if i == 0 { r >= least } else { own(&windows[i]) >= least };
            let Some(p) = t.window(&name, settings, &settling) else { break 'rounds };
            if beyond {
                t.plan.beyond_least();
            }
            let ok = p.ok();
            windows[i][r] = Some(p);
            if !ok && i == 0 {
                rounds = r + 1;
                break 'rounds;
            }
        }
        rounds = r + 1;
        let confidence = confidence_of(challengers.len());
        for i in 1..n {
            let enough = own(&windows[i]) >= j.min_rounds;
            settled[i] = assess(t, &windows[0], &windows[i], confidence, enough).settled;
            // Settled early: the rounds it will not take leave the plan (and the ETA).
            if settled[i] && !released[i] {
                released[i] = true;
                let had = own(&windows[i]);
                t.plan.release(least.saturating_sub(had), most.saturating_sub(had));
            }
        }
        let so_far: Vec<Option<Point>> = windows[1..].iter().map(|w| Point::combine("", &all(w))).collect();
        let here = Point::combine("", &all(&windows[0]));
        for c in grow(here.as_ref(), &challengers, &so_far) {
            if c.settings != *incumbent && !challengers.iter().any(|x| x.settings == c.settings) {
                challengers.push(c);
                windows.push(vec![None; rounds]);
                settled.push(false);
                released.push(false);
                t.plan.add(least, most);
            }
        }
    }
    // The incumbent's rounds not taken, and those of challengers the run stopped before.
    t.plan.release(least.saturating_sub(rounds), most.saturating_sub(rounds));
    for i in (1..windows.len()).filter(|&i| !released[i]) {
        let had = own(&windows[i]);
        t.plan.release(least.saturating_sub(had), most.saturating_sub(had));
    }
    let incumbent_point = Point::combine(incumbent_name, &all(&windows[0]))?;
    let confidence = confidence_of(challengers.len());
    let mut judged = Vec::new();
    for (i, c) in challengers.iter().enumerate() {
        let Some(point) = Point::combine(&name_of(&c.value), &all(&windows[i + 1])) else { continue };
        let a = assess(t, &windows[0], &windows[i + 1], confidence, own(&windows[i + 1]) >= j.min_rounds);
        judged.push(Judged { value: c.value.clone(), point, effect: a.effect, verdict: a.verdict });
    }
    // The largest gain; a challenger adopted because it meets an objective the incumbent
    // misses has no gain to measure against it: the best score among those.
    let gain = |c: &Judged| match c.effect {
        Some(e) => (1, e.pct),
        None => (0, t.objective.score(&c.point).unwrap_or(f64::MIN)),
    };
    let chosen = judged
        .iter()
        .enumerate()
        .filter(|(_, c)| c.verdict == Verdict::Adopted)
        .max_by(|(_, a), (_, b)| {
            let (a, b) = (gain(a), gain(b));
            a.0.cmp(&b.0).then(a.1.total_cmp(&b.1))
        })
        .map(|(i, _)| i);
    let verdict = if chosen.is_some() {
        Verdict::Adopted
    } else if !judged.is_empty() && judged.iter().all(|c| c.verdict == Verdict::Worse) {
        Verdict::Worse
    } else if !judged.is_empty() && judged.iter().all(|c| matches!(c.verdict, Verdict::NoEffect | Verdict::Worse)) {
        Verdict::NoEffect
    } else {
        Verdict::Undecided
    };
    Some(Judgement { incumbent: incumbent_point, challengers: judged, chosen, verdict, rounds })
}

/// What the rounds so far say of one challenger against the incumbent.
struct Assessment {
    effect: Option<Effect>,
    verdict: Verdict,
    /// More rounds cannot change the verdict.
    settled: bool,
}

/// Judges a challenger's windows against the incumbent's, pair by pair; `enough` says
/// whether the rounds so far may carry a verdict from an interval.
fn assess(
    t: &Tuner,
    incumbent: &[Option<Point>],
    challenger: &[Option<Point>],
    confidence: f64,
    enough: bool,
) -> Assessment {
    let settled = |verdict, effect| Assessment { effect, verdict, settled: true };
    let open = |effect| Assessment { effect, verdict: Verdict::Undecided, settled: false };
    let objective = &t.objective;
    // A challenger that failed cannot gain (nor can anything be said when the incumbent
    // itself misses the objective).
    if challenger.iter().flatten().any(|p| !p.ok()) {
        let whole = Point::combine("", &incumbent.iter().flatten().cloned().collect::<Vec<_>>());
        let admitted = whole.is_some_and(|p| objective.admits(&p));
        return settled(if admitted { Verdict::NoEffect } else { Verdict::Undecided }, None);
    }
    // Seen over the memory budget once, a pool can be there again: more rounds cannot admit it.
    let whole = Point::combine("", &challenger.iter().flatten().cloned().collect::<Vec<_>>());
    if whole.is_some_and(|p| !fits(&p)) {
        let here = Point::combine("", &incumbent.iter().flatten().cloned().collect::<Vec<_>>());
        let admitted = here.is_some_and(|p| objective.admits(&p));
        return settled(if admitted { Verdict::NoEffect } else { Verdict::Undecided }, None);
    }
    let (inc, ch) = paired(incumbent, challenger);
    let (Some(a), Some(b)) = (Point::combine("", &inc), Point::combine("", &ch)) else { return open(None) };
    let effect = objective.effect(&a, &b, confidence);
    if !enough {
        return open(effect);
    }
    match (objective.admits(&a), objective.admits(&b)) {
        // It misses the objective's constraint (an SLO, the budget) that the incumbent meets.
        (true, false) => settled(Verdict::NoEffect, None),
        // It meets the constraint the incumbent misses.
        (false, true) => settled(Verdict::Adopted, None),
        // Neither meets it: more rounds cannot make either admissible.
        (false, false) => settled(Verdict::Undecided, None),
        (true, true) => match effect {
            Some(e) => {
                let v = classify(&e, t.judging.threshold_pct);
                Assessment { effect, verdict: v, settled: v != Verdict::Undecided }
            }
            None => open(None),
        },
    }
}

/// The windows of two configurations from the rounds in which both were measured and ok.
fn paired(a: &[Option<Point>], b: &[Option<Point>]) -> (Vec<Point>, Vec<Point>) {
    a.iter()
        .zip(b)
        .filter_map(|(x, y)| match (x, y) {
            (Some(x), Some(y)) if x.ok() && y.ok() => Some((x.clone(), y.clone())),
            _ => None,
        })
        .unzip()
}

/// "+5.1% [+3.2%, +7.0%]".
pub fn effect_text(e: &Effect) -> String {
    format!("{:+.1}% [{:+.1}%, {:+.1}%]", e.pct, e.low_pct, e.high_pct)
}
