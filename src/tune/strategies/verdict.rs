//! Judging challengers against the incumbent: every configuration measured once per round, in
//! turn (A B A B, the order reversed each round so neither always goes first), so that slow
//! drift of the machine hits all alike; the change judged on the pairs of each round with an
//! interval; more rounds only while the verdict is open, up to a cap.

use std::time::Duration;

use crate::server::settings::Settings;
use crate::stats::Effect;
use crate::tune::objective::{Objective, fits};
use crate::tune::point::Point;
use crate::tune::point::{Tail, compared_memory, own_pages_read};
use crate::tune::step::Verdict;
use crate::tune::trial::Load;
use crate::tune::tuner::{Judging, Tuner};

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
    /// What settled it other than an interval clearing the threshold, when something did.
    pub shortcut: Option<Shortcut>,
    /// Its sure verdict read again on fresh launches (see `LAUNCH_MARGIN_PCT`).
    pub fresh: Option<Fresh>,
}

/// What settled a challenger before (or instead of) an interval clearing the threshold.
#[derive(Debug, Clone, PartialEq)]
pub enum Shortcut {
    /// Its windows fell far below the incumbent's of the same rounds: at most `share` of them.
    FarBelow { share: f64, windows: usize },
    /// Its windows fell far below another challenger's of the same rounds (`by`, its name):
    /// whatever it gains, that one gains far more, so it cannot be the one adopted.
    Dominated { by: String, share: f64, windows: usize },
    /// No number of rounds up to the cap could settle it: the interval projected to the cap
    /// from the spread of the rounds so far.
    CannotSettle { projected: Effect },
    /// The tails (p99.9 of all their windows' requests) differ by `TAIL_RATIO` or more: the
    /// challenger refused for its own, or adopted for the incumbent's.
    Tail { incumbent: Tail, challenger: Tail },
    /// Throughput could not settle it, but in every window of both the machine's CPUs were
    /// full and the server waited for them, so each served what its CPU time bought: the
    /// requests a second of the server's CPU served (`effect`, + is cheaper) settled it as no
    /// effect or a loss (`by_cpu`).
    ByCpu { effect: Effect },
}

/// What a comparison found.
pub struct Judgement {
    /// The incumbent's windows as one point.
    pub incumbent: Point,
    pub challengers: Vec<Judged>,
    /// The adopted challenger (the best score among those adopted).
    pub chosen: Option<usize>,
    /// The step's verdict: adopted; worse when every challenger is a sure loss; no effect
    /// when no challenger can gain the threshold; cheaper when the rounds could not settle it
    /// and one configuration costs less; undecided otherwise.
    pub verdict: Verdict,
    pub rounds: usize,
    /// The windows were lengthened to this many seconds because they scattered too widely for
    /// the rounds allowed (the rounds before, at the load's own windows, were a pilot).
    pub lengthened: Option<f64>,
    /// The adopted challenger was preferred to the one with the best score (its value, and
    /// the change to it from the adopted one): that one was not surely better by the
    /// threshold, and costs more.
    pub over_dearer: Option<(String, Option<Effect>)>,
}

/// A sure verdict (adopted, worse) read again on fresh launches of the incumbent and the
/// challenger.
#[derive(Debug, Clone)]
pub struct Fresh {
    /// The interval on the launches its rounds first ran on.
    pub first: Effect,
    /// The change on the fresh launches; None when none could be read (the run stopped).
    pub effect: Option<Effect>,
    pub rounds: usize,
    /// The fresh launches gave the same verdict; else it is undecided.
    pub confirmed: bool,
}

impl Judgement {
    /// "3 interleaved rounds", with the longer windows and the fresh launches when there were.
    pub fn rounds_text(&self) -> String {
        let mut text = format!("{} interleaved round{}", self.rounds, if self.rounds == 1 { "" } else { "s" });
        if let Some(secs) = self.lengthened {
            text += &format!(" (the windows scattered too widely for a verdict: lengthened to {secs:.1} s)");
        }
        let fresh: Vec<&Fresh> = self.challengers.iter().filter_map(|c| c.fresh.as_ref()).collect();
        match fresh[..] {
            [] => {}
            [f] => {
                let read = f.effect.as_ref().map_or("no interval".to_string(), effect_text);
                text += &if f.confirmed {
                    format!(", and {} more on fresh launches of both: {read}, confirmed", f.rounds)
                } else {
                    format!(
                        " ({} on the first launches, but {read} over {} rounds on fresh launches of both: not confirmed)",
                        effect_text(&f.first),
                        f.rounds
                    )
                };
            }
            _ => {
                let rounds = fresh.iter().map(|f| f.rounds).max().unwrap_or(0);
                let confirmed = fresh.iter().filter(|f| f.confirmed).count();
                text += &format!(", and {rounds} more on fresh launches: {confirmed} of {} confirmed", fresh.len());
            }
        }
        text
    }

    /// Whether challenger `i`'s verdict is a sure one (adopted, or worse as the step is) that
    /// a launch's difference could have made: read by its interval, nearer zero than
    /// `LAUNCH_MARGIN_PCT`, in rounds that ran on servers kept between windows.
    fn needs_fresh_launches(&self, i: usize) -> bool {
        let c = &self.challengers[i];
        let Some(e) = c.effect.filter(|_| c.shortcut.is_none()) else { return false };
        let sure = match c.verdict {
            Verdict::Adopted => self.chosen == Some(i) && e.low_pct < LAUNCH_MARGIN_PCT,
            Verdict::Worse => self.verdict == Verdict::Worse && e.high_pct > -LAUNCH_MARGIN_PCT,
            _ => false,
        };
        let reused = |p: &Point| p.launches < p.samples.len();
        sure && (reused(&c.point) || reused(&self.incumbent))
    }

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

/// `classify` under the tuner's way of judging: a gain is adopted only when its interval's
/// low end also clears `Judging::sure_by_pct`.
fn verdict_of(judging: &Judging, e: &Effect) -> Verdict {
    match classify(e, judging.threshold_pct) {
        Verdict::Adopted if e.low_pct <= judging.sure_by_pct => Verdict::Undecided,
        v => v,
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
    judge_growing(t, load, incumbent_name, incumbent, challengers.to_vec(), name_of, &mut no_more)
}

/// A comparison whose challengers are all named at the start: it asks for none more.
fn no_more(_: Option<&Point>, _: &[Challenger], _: &[Option<Point>]) -> Vec<Challenger> {
    Vec::new()
}

/// What `judge_growing` asks for more challengers with: the incumbent's windows so far as one
/// point, the challengers, and each one's windows so far (None before its first).
pub type Grow<'g> = dyn FnMut(Option<&Point>, &[Challenger], &[Option<Point>]) -> Vec<Challenger> + 'g;

/// As `judge`; after each round `grow` may add challengers that the windows so far suggest
/// (a configuration that only a measurement can name). Each new one gets rounds of its own,
/// interleaved with the others' and paired with the incumbent's of the same rounds.
///
/// When no challenger could be settled within the rounds allowed because the windows scatter
/// too widely, the comparison is run once more with longer windows (the noise of a window's
/// mean falls with its length), for those challengers only; the first rounds were a pilot.
pub fn judge_growing(
    t: &mut Tuner,
    load: &Load,
    incumbent_name: &str,
    incumbent: &Settings,
    challengers: Vec<Challenger>,
    name_of: &dyn Fn(&str) -> String,
    grow: &mut Grow,
) -> Option<Judgement> {
    judge_rounds(t, Comparison::of(load, incumbent_name, incumbent, name_of), challengers, grow, None)
}

/// As `judge`, from windows a strategy measured already in interleaved rounds (`seed`: the
/// incumbent's, then each challenger's, by round): more rounds only while a verdict is open.
/// Its windows are never lengthened: its one caller, the knee's check, compares counts read
/// within `--knee` of each other, and a gain only longer windows could show is one that
/// `--knee` counts as good (on php-fpm 8 s windows took the check to 73 s, 2.2x the grid).
pub fn judge_seeded(
    t: &mut Tuner,
    asked: Comparison,
    challengers: &[Challenger],
    seed: Vec<Vec<Point>>,
) -> Option<Judgement> {
    let seed = seed.into_iter().map(|w| w.into_iter().map(Some).collect()).collect();
    judge_rounds(t, asked, challengers.to_vec(), &mut no_more, Some(seed))
}

fn judge_rounds(
    t: &mut Tuner,
    asked: Comparison,
    challengers: Vec<Challenger>,
    grow: &mut Grow,
    seed: Option<Vec<Vec<Option<Point>>>>,
) -> Option<Judgement> {
    let Comparison { incumbent_name, incumbent, name_of, .. } = asked;
    // A window seen over the budget settles its configuration (see `assess`): it ends there.
    let load = asked.load.settling_over_budget();
    let seeded = seed.is_some();
    // The challengers share the step's error rate (Bonferroni), the later attempt included.
    let pilot = Rounds::run(t, &Comparison { load: &load, ..asked }, challengers, grow, seed)?;
    let family = pilot.challengers.len();
    let mut judged = pilot.judge(t, family, name_of);
    let mut incumbent_point = pilot.incumbent(incumbent_name)?;
    let mut rounds = pilot.rounds;
    let mut lengthened = None;
    let longer = if seeded { None } else { lengthen(t, &load, &judged) };
    if let Some(longer) = &longer {
        let again: Vec<Challenger> = pilot
            .challengers
            .iter()
            .filter(|c| judged.iter().any(|j| j.value == c.value && worth_lengthening(t, j)))
            .cloned()
            .collect();
        let secs = longer.duration().as_secs_f64();
        t.note(&format!(
            "{incumbent_name}: the windows scattered too widely for a verdict within {} rounds: measured again in windows of {secs:.1} s",
            t.judging.max_rounds
        ));
        let long_name = |v: &str| format!("{} ({secs:.0} s windows)", name_of(v));
        let long_incumbent = format!("{incumbent_name} ({secs:.0} s windows)");
        let factor = secs / load.duration().as_secs_f64();
        let long = Comparison { load: longer, incumbent_name: &long_incumbent, incumbent, name_of: &long_name, family };
        if let Some(second) = lengthened_rounds(t, &long, again, factor, &pilot) {
            let mut better = second.judge(t, family, name_of);
            if let Some(p) = second.incumbent(incumbent_name) {
                incumbent_point = p;
                judged.retain(|j| !better.iter().any(|b| b.value == j.value));
                judged.append(&mut better);
                rounds += second.rounds;
                lengthened = Some(secs);
            }
        }
    }
    let mut judgement = conclude(t, incumbent_point, judged, rounds, lengthened);
    if lengthened.is_none() {
        prefer_cheaper(t, &pilot, &mut judgement, confidence_of(t, family));
    }
    let decided_under = longer.as_ref().filter(|_| lengthened.is_some()).unwrap_or(&load);
    let fresh = Comparison { load: decided_under, incumbent_name, incumbent, name_of, family };
    fresh.confirm(t, &pilot.challengers, &mut judgement);
    Some(judgement)
}

/// A sure verdict (adopted, worse) read on servers kept running between its windows is read
/// again on fresh launches, unless its interval clears this much either side of zero, %. A
/// launch of a server serves a little faster or slower for its whole life (where its
/// processes sit, its memory layout), so rounds on the same two launches pair that difference
/// with the change, and an interval on them is too narrow: 7 of 90 nginx null decisions read
/// a sure change where a 99% interval allows about 1; pairs of nginx launches of one
/// configuration read from -7.1% to +5.2% apart (bench/launches.py; bench/HISTORY.md, "Launch
/// to launch"). Two sets of launches judged alone must agree.
const LAUNCH_MARGIN_PCT: f64 = 8.0;

/// What a comparison's rounds measure and how they name their points: the load, the incumbent
/// (its name and settings), a challenger's name from its value, and `family`: the challengers
/// of the whole comparison when more than the rounds' own (0: theirs).
#[derive(Clone, Copy)]
pub struct Comparison<'a> {
    load: &'a Load,
    incumbent_name: &'a str,
    incumbent: &'a Settings,
    name_of: &'a dyn Fn(&str) -> String,
    family: usize,
}

impl<'a> Comparison<'a> {
    /// The incumbent (named `incumbent_name`) against challengers named by `name_of` their
    /// value, each measured under `load`.
    pub fn of(
        load: &'a Load,
        incumbent_name: &'a str,
        incumbent: &'a Settings,
        name_of: &'a dyn Fn(&str) -> String,
    ) -> Comparison<'a> {
        Comparison { load, incumbent_name, incumbent, name_of, family: 0 }
    }
}

impl Comparison<'_> {
    /// Reads each sure verdict a launch's difference could have made (`needs_fresh_launches`)
    /// again on fresh launches of the incumbent and those challengers, in rounds of their own:
    /// each set of launches judged alone, both must give the verdict, so a launch difference
    /// must have come twice, the same way. Not confirmed, the challenger is undecided: an
    /// adoption leaves the incumbent in place, a loss is no longer called sure.
    fn confirm(&self, t: &mut Tuner, challengers: &[Challenger], j: &mut Judgement) {
        if !t.judging.fresh_launches {
            return;
        }
        let due: Vec<usize> = (0..j.challengers.len()).filter(|&i| j.needs_fresh_launches(i)).collect();
        let again: Vec<Challenger> = due
            .iter()
            .filter_map(|&i| challengers.iter().find(|x| x.value == j.challengers[i].value).cloned())
            .collect();
        if again.is_empty() {
            return;
        }
        t.relaunch(self.incumbent);
        for c in &again {
            t.relaunch(&c.settings);
        }
        let (least, most) = (t.judging.min_rounds, t.judging.max_rounds.max(t.judging.min_rounds));
        t.plan.add((again.len() + 1) * least, (again.len() + 1) * most);
        let name_of = |v: &str| format!("{} (fresh launch)", (self.name_of)(v));
        let incumbent_name = format!("{} (fresh launch)", self.incumbent_name);
        let fresh_names = Comparison { incumbent_name: &incumbent_name, name_of: &name_of, ..*self };
        let fresh = Rounds::run(t, &fresh_names, again, &mut no_more, None);
        let read = fresh.as_ref().map_or_else(Vec::new, |r| r.judge(t, self.family, &name_of));
        for i in due {
            let c = &mut j.challengers[i];
            let Some(first) = c.effect else { continue };
            let here = read.iter().find(|r| r.value == c.value);
            let confirmed = here.is_some_and(|r| r.verdict == c.verdict);
            let rounds = here.map_or(0, |r| r.point.samples.len());
            c.fresh = Some(Fresh { first, effect: here.and_then(|r| r.effect), rounds, confirmed });
            if !confirmed {
                c.verdict = Verdict::Undecided;
                j.verdict = Verdict::Undecided;
                if j.chosen == Some(i) {
                    j.chosen = None;
                    j.over_dearer = None;
                }
            }
        }
    }
}

/// Longer windows narrow white noise by the square root of their length; a machine's drift
/// or a neighbour's bursts they do not (nginx's nulls at 50,000 req/s scattered as widely in
/// 8 s windows as in 1 s ones, and ran 9 rounds of them for nothing). So the longer windows
/// first run `--min-rounds` rounds; unless the scatter of the paired differences fell to
/// `NARROWED` of the pilot's or less for some challenger, that is where they stop.
const NARROWED: f64 = 0.7;

/// The rounds of the lengthened attempt (see `NARROWED`); `factor`: how many times longer its
/// windows are than the pilot's; `long`: the comparison in the longer windows.
fn lengthened_rounds(
    t: &mut Tuner,
    long: &Comparison,
    again: Vec<Challenger>,
    factor: f64,
    pilot: &Rounds,
) -> Option<Rounds> {
    let judging = t.judging;
    // The probe: the cap lowered to the least rounds for this one run, restored at once.
    t.judging.max_rounds = judging.min_rounds;
    let probe = Rounds::run(t, long, again, &mut no_more, None);
    t.judging = judging;
    let probe = probe?;
    // The expected fall at this factor must be clearly below NARROWED to be told from none.
    let narrowed = factor < 4.0
        || probe.challengers.iter().enumerate().any(|(i, c)| {
            let before = pilot
                .challengers
                .iter()
                .position(|p| p.value == c.value)
                .and_then(|k| scatter(t, &pilot.windows[0], &pilot.windows[k + 1]));
            let after = scatter(t, &probe.windows[0], &probe.windows[i + 1]);
            matches!((before, after), (Some(b), Some(a)) if a <= NARROWED * b)
        });
    if !narrowed {
        t.note(&format!(
            "{}: the longer windows scattered as widely as the short ones (not noise that averages out): no more rounds of them",
            long.incumbent_name
        ));
        return Some(probe);
    }
    let seed: Vec<Vec<Option<Point>>> = probe.windows;
    let challengers = probe.challengers;
    Rounds::run(t, long, challengers, &mut no_more, Some(seed))
}

/// The standard deviation of the paired log ratios of the objective's score (challenger over
/// incumbent), over the rounds both were measured in; None under two pairs.
fn scatter(t: &Tuner, incumbent: &[Option<Point>], challenger: &[Option<Point>]) -> Option<f64> {
    let (a, b) = paired(incumbent, challenger);
    let logs: Vec<f64> = a
        .iter()
        .zip(&b)
        .filter_map(|(x, y)| Some((t.objective.score(y)? / t.objective.score(x)?).ln()))
        .filter(|d| d.is_finite())
        .collect();
    if logs.len() < 2 {
        return None;
    }
    let mean = logs.iter().sum::<f64>() / logs.len() as f64;
    Some((logs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (logs.len() - 1) as f64).sqrt())
}

/// Whether more rounds up to the cap could not have settled this challenger.
fn is_unsettleable(j: &Judged) -> bool {
    matches!(j.shortcut, Some(Shortcut::CannotSettle { .. }))
}

/// Unsettleable, and its estimate a gain over the threshold (see `lengthen`): only a gain can
/// move the configuration, so only a gain is worth the longer windows.
fn worth_lengthening(t: &Tuner, j: &Judged) -> bool {
    is_unsettleable(j) && j.effect.is_some_and(|e| e.pct > t.judging.threshold_pct)
}

/// Windows are lengthened at most this many times, once per comparison, when they scatter
/// too widely for any verdict within the rounds allowed; and never past `MAX_WINDOW`.
const MAX_LENGTHEN: f64 = 8.0;
const MAX_WINDOW: Duration = Duration::from_secs(30);

/// The longer windows to judge again with, when nothing was adopted and a challenger could
/// not be settled because its interval, projected to the cap, is wider than the threshold
/// (noise, not a mean sitting at the threshold, which longer windows would not move); None
/// when the load is not a steady, time-bound one or the windows are long already.
///
/// Only a challenger whose estimate is a gain beyond the threshold is worth the longer
/// windows: below it, settled or not, the incumbent stays (a move needs a verdict), so they
/// could not change the deployment. The joint search's final judgement spent 66-123 s of 8 s
/// windows on 8 against 12 workers, and nginx nulls a minute each, settling such differences;
/// Apache's max_requests=1000 against 0 read -5.6% over 3 rounds, one window 12% low, and
/// took 6 windows of 8 s to end undecided: 48 s under load, 7.4% of its grid's time.
fn lengthen(t: &Tuner, load: &Load, judged: &[Judged]) -> Option<Load> {
    if judged.iter().any(|j| j.verdict == Verdict::Adopted) || t.stopped.is_some() {
        return None;
    }
    let steady = load.warm
        && load.idle_before.is_zero()
        && load.spec.duration.is_some()
        && load.spec.requests.is_none()
        && load.spec.stages.is_none();
    let window = load.duration();
    let threshold = (t.judging.threshold_pct / 100.0).ln_1p();
    // The widest projected half-width, in log ratio.
    let widest = judged
        .iter()
        .filter(|j| worth_lengthening(t, j))
        .filter_map(|j| match j.shortcut {
            Some(Shortcut::CannotSettle { projected }) => {
                Some(((projected.high_pct / 100.0).ln_1p() - (projected.low_pct / 100.0).ln_1p()) / 2.0)
            }
            _ => None,
        })
        .fold(0.0, f64::max);
    if !steady || widest <= threshold || window * 2 > MAX_WINDOW {
        return None;
    }
    // White noise: the half-width falls with the square root of the window's length.
    let factor = (widest / threshold).powi(2).clamp(2.0, MAX_LENGTHEN).ceil();
    let longer = window.mul_f64(factor).min(MAX_WINDOW);
    Some(load.windowed(longer))
}

/// The windows of one comparison's rounds.
struct Rounds {
    challengers: Vec<Challenger>,
    /// Per configuration (the incumbent first), its window of each round (None: not measured).
    windows: Vec<Vec<Option<Point>>>,
    rounds: usize,
    /// The load's tail counts in the verdicts (`Load::tail_counts`).
    tail_counts: bool,
}

impl Rounds {
    /// Measures rounds of `c` until every challenger is settled or at the cap. `seed`: windows
    /// measured already in interleaved rounds, the incumbent's first, then each challenger's,
    /// by round.
    fn run(
        t: &mut Tuner,
        c: &Comparison,
        mut challengers: Vec<Challenger>,
        grow: &mut Grow,
        seed: Option<Vec<Vec<Option<Point>>>>,
    ) -> Option<Rounds> {
        let Comparison { load, incumbent_name, incumbent, name_of, family } = *c;
        let j = t.judging;
        let own = |w: &[Option<Point>]| w.iter().flatten().count();
        let all = |w: &[Option<Point>]| w.iter().flatten().cloned().collect::<Vec<_>>();
        let mut windows: Vec<Vec<Option<Point>>> = vec![Vec::new(); challengers.len() + 1];
        // Challengers whose verdict more rounds cannot change.
        let mut settled = vec![false; challengers.len() + 1];
        // Rounds each configuration may take, and whether its unused ones have left the plan.
        let (least, most) = (j.min_rounds, j.max_rounds.max(j.min_rounds));
        let mut released = vec![false; challengers.len() + 1];
        let mut rounds = 0;
        // Rounds measured before (by the strategy, interleaved alike) are judged first.
        let mut seeded = false;
        if let Some(seed) = seed {
            rounds = seed.iter().map(Vec::len).max().unwrap_or(0);
            for (w, s) in windows.iter_mut().zip(seed) {
                *w = s;
                w.resize(rounds, None);
            }
            seeded = rounds > 0;
        }
        'rounds: loop {
            let n = challengers.len() + 1;
            if seeded {
                seeded = false;
                let confidence = confidence_of(t, family.max(challengers.len()));
                let names = labels(&challengers, name_of);
                for (i, done) in settled.iter_mut().enumerate().take(n).skip(1) {
                    *done = assess_among(t, &windows, &names, i, confidence, load.tail_counts).settled;
                }
                continue;
            }
            let open: Vec<usize> = (1..n).filter(|&i| !settled[i] && own(&windows[i]) < most).collect();
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
                    _ => (
                        round_name(&name_of(&challengers[i - 1].value), own(&windows[i])),
                        &challengers[i - 1].settings,
                    ),
                };
                // A round past the least the plan counted on.
                let beyond = if i == 0 { r >= least } else { own(&windows[i]) >= least };
                let Some(p) = t.window(&name, settings, load) else { break 'rounds };
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
            let confidence = confidence_of(t, family.max(challengers.len()));
            for i in 1..n {
                settled[i] =
                    assess_among(t, &windows, &labels(&challengers, name_of), i, confidence, load.tail_counts).settled;
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
        // Nothing of the incumbent measured: nothing to judge against.
        windows[0].iter().flatten().next()?;
        Some(Rounds { challengers, windows, rounds, tail_counts: load.tail_counts })
    }

    /// The incumbent's windows as one point.
    fn incumbent(&self, name: &str) -> Option<Point> {
        Point::combine(name, &self.windows[0].iter().flatten().cloned().collect::<Vec<_>>())
    }

    /// Each measured challenger judged against the incumbent, at the confidence of `family`.
    fn judge(&self, t: &Tuner, family: usize, name_of: &dyn Fn(&str) -> String) -> Vec<Judged> {
        let confidence = confidence_of(t, family.max(self.challengers.len()));
        let mut judged = Vec::new();
        for (i, c) in self.challengers.iter().enumerate() {
            let w = &self.windows[i + 1];
            let Some(point) = Point::combine(&name_of(&c.value), &w.iter().flatten().cloned().collect::<Vec<_>>())
            else {
                continue;
            };
            let a = assess_among(
                t,
                &self.windows,
                &labels(&self.challengers, name_of),
                i + 1,
                confidence,
                self.tail_counts,
            );
            judged.push(Judged {
                value: c.value.clone(),
                point,
                effect: a.effect,
                verdict: a.verdict,
                shortcut: a.shortcut,
                fresh: None,
            });
        }
        judged
    }
}

/// The challengers' names, by index.
fn labels(challengers: &[Challenger], name_of: &dyn Fn(&str) -> String) -> Vec<String> {
    challengers.iter().map(|c| name_of(&c.value)).collect()
}

/// The confidence each of `k` challengers is judged at, so that together they keep the step's.
fn confidence_of(t: &Tuner, k: usize) -> f64 {
    1.0 - (1.0 - t.judging.confidence) / k.max(1) as f64
}

/// The step's verdict from its challengers' verdicts.
fn conclude(t: &Tuner, incumbent: Point, judged: Vec<Judged>, rounds: usize, lengthened: Option<f64>) -> Judgement {
    // The best score (median) among those adopted with a measured gain, then among those
    // adopted because they meet an objective the incumbent misses. Not the largest gain: a
    // value added in later rounds (coarse to fine) is paired with other rounds of the
    // incumbent, and a slow incumbent window inflates its gain (10 workers read +1303%
    // against 16's +1148% while serving 747 req/s to 16's 806).
    let gain = |c: &Judged| (c.effect.is_some() as u8, t.objective.score(&c.point).unwrap_or(f64::MIN));
    let chosen = judged
        .iter()
        .enumerate()
        .filter(|(_, c)| c.verdict == Verdict::Adopted)
        .max_by(|(_, a), (_, b)| {
            let (a, b) = (gain(a), gain(b));
            a.0.cmp(&b.0).then(a.1.total_cmp(&b.1))
        })
        .map(|(i, _)| i);
    let decided = |c: &Judged| {
        matches!(c.verdict, Verdict::NoEffect | Verdict::Worse | Verdict::WorseTail)
            || matches!(c.shortcut, Some(Shortcut::Dominated { .. }))
    };
    let verdict = if chosen.is_some() {
        Verdict::Adopted
    } else if !judged.is_empty() && judged.iter().all(|c| c.verdict == Verdict::WorseTail) {
        Verdict::WorseTail
    } else if !judged.is_empty() && judged.iter().all(|c| matches!(c.verdict, Verdict::Worse | Verdict::WorseTail)) {
        Verdict::Worse
    } else if !judged.is_empty() && judged.iter().all(decided) {
        Verdict::NoEffect
    } else if !judged.is_empty() && judged.iter().all(|c| decided(c) || is_unsettleable(c)) {
        // No number of rounds could tell them apart, and one costs less. The incumbent stays
        // even when a challenger is the cheaper: its interval still allows a loss, and a
        // move from what the user runs needs a verdict (tune::baseline).
        let unsettled: Vec<usize> = (0..judged.len()).filter(|&i| is_unsettleable(&judged[i])).collect();
        let cheapest = unsettled.iter().any(|&i| cheaper(&judged[i].point, &incumbent));
        let incumbent_cheaper = unsettled.iter().all(|&i| cheaper(&incumbent, &judged[i].point));
        if cheapest || incumbent_cheaper { Verdict::Cheaper } else { Verdict::Undecided }
    } else {
        Verdict::Undecided
    };
    Judgement { incumbent, challengers: judged, chosen, verdict, rounds, lengthened, over_dearer: None }
}

/// Among the adopted challengers, the cheapest that the one with the best score does not
/// beat by the threshold (paired on the rounds both were measured in: no effect, a loss, or a
/// difference no number of rounds up to the cap could settle): more workers for a gain no
/// measurement can tell from noise is not what anyone should deploy.
fn prefer_cheaper(t: &Tuner, rounds: &Rounds, j: &mut Judgement, confidence: f64) {
    let Some(lead) = j.chosen.filter(|&c| j.challengers[c].effect.is_some()) else { return };
    let windows_of =
        |value: &str| rounds.challengers.iter().position(|c| c.value == value).map(|i| &rounds.windows[i + 1]);
    let Some(lead_windows) = windows_of(&j.challengers[lead].value) else { return };
    let mut options: Vec<usize> = (0..j.challengers.len())
        .filter(|&k| k != lead && j.challengers[k].verdict == Verdict::Adopted)
        .filter(|&k| cheaper(&j.challengers[k].point, &j.challengers[lead].point))
        .collect();
    // The cheapest first.
    options.sort_by(|&a, &b| by_cost(&j.challengers[a].point, &j.challengers[b].point));
    for k in options {
        let Some(own) = windows_of(&j.challengers[k].value) else { continue };
        let (a, b) = paired(own, lead_windows);
        // Too few rounds in common to say anything: the best score stands (16 against 12
        // from 2 shared rounds read +4.5% [-100.0%, +62824179.1%]).
        if a.len() < t.judging.min_rounds {
            continue;
        }
        let (Some(a), Some(b)) = (Point::combine("", &a), Point::combine("", &b)) else { continue };
        let to_lead = t.objective.effect(&a, &b, confidence);
        // The dearer one's gain must be settled as not worth it (no effect, a loss, or beyond
        // what the rounds allowed could show), not merely open after a few rounds.
        let thr = t.judging.threshold_pct;
        let not_worth = to_lead.is_some_and(|e| match classify(&e, thr) {
            Verdict::Adopted => false,
            Verdict::Undecided => projected(&e, a.samples.len(), t.judging.max_rounds, confidence)
                .is_none_or(|p| classify(&p, thr) == Verdict::Undecided),
            _ => true,
        });
        if not_worth {
            j.over_dearer = Some((j.challengers[lead].value.clone(), to_lead));
            j.chosen = Some(k);
            return;
        }
    }
}

/// The cheaper first (`cheaper` both ways); equal when neither is clearly cheaper.
fn by_cost(a: &Point, b: &Point) -> std::cmp::Ordering {
    if cheaper(a, b) {
        std::cmp::Ordering::Less
    } else if cheaper(b, a) {
        std::cmp::Ordering::Greater
    } else {
        std::cmp::Ordering::Equal
    }
}

/// Whether `a` costs clearly less than `b`: fewer workers, or with as many a whole server
/// smaller by a tenth or more (the PSS of its own pages, `compared_memory`: read beside
/// different neighbours, the whole PSS of one server differed by 17% for a knob that changes
/// no memory).
pub fn cheaper(a: &Point, b: &Point) -> bool {
    cheaper_by(a, b).is_some()
}

/// How `a` costs clearly less than `b`, in words ("2 workers instead of 4", "a server 18%
/// smaller (PSS)"); None when it does not.
pub fn cheaper_by(a: &Point, b: &Point) -> Option<String> {
    let workers = |p: &Point| p.settings.get("workers").and_then(|w| w.parse::<u64>().ok());
    if let (Some(x), Some(y)) = (workers(a), workers(b))
        && x != y
    {
        return (x < y).then(|| format!("{x} workers instead of {y}"));
    }
    let figure = compared_memory(&[a, b]);
    let pss = |p: &Point| {
        let v: Vec<f64> = p.samples.iter().filter_map(|s| s.memory.as_ref()).map(|m| figure(m) as f64).collect();
        (!v.is_empty()).then(|| crate::stats::median(&v))
    };
    let (x, y) = (pss(a)?, pss(b)?);
    let own = if own_pages_read(&[a, b]) { " of its own pages" } else { "" };
    (x < 0.9 * y)
        .then(|| format!("a server {:.0}% smaller (PSS{own} {:.0} KiB against {:.0})", (1.0 - x / y) * 100.0, x, y))
}

/// What the rounds so far say of one challenger against the incumbent.
struct Assessment {
    effect: Option<Effect>,
    verdict: Verdict,
    /// More rounds cannot change the verdict.
    settled: bool,
    shortcut: Option<Shortcut>,
}

/// Judges challenger `i` of `windows` (the incumbent's first) against the incumbent; and,
/// unless that already settles it as a loss, against the other challengers: one whose windows
/// fall far below another's cannot be the one adopted, and needs no more rounds.
fn assess_among(
    t: &Tuner,
    windows: &[Vec<Option<Point>>],
    labels: &[String],
    i: usize,
    confidence: f64,
    tail_counts: bool,
) -> Assessment {
    let a = assess(t, &windows[0], &windows[i], confidence, tail_counts);
    if a.verdict == Verdict::Worse || matches!(t.objective, Objective::LeastMemory { .. }) {
        return a;
    }
    let admitted = |w: &[Option<Point>]| {
        w.iter().flatten().all(|p| p.ok())
            && Point::combine("", &w.iter().flatten().cloned().collect::<Vec<_>>())
                .is_some_and(|p| t.objective.admits(&p))
    };
    for k in (1..windows.len()).filter(|&k| k != i && admitted(&windows[k])) {
        let (other, own) = paired(&windows[k], &windows[i]);
        if let Some(share) = far_below(&t.objective, &other, &own) {
            let by = labels.get(k - 1).cloned().unwrap_or_default();
            let shortcut = Some(Shortcut::Dominated { by, share, windows: other.len() });
            return Assessment { effect: a.effect, verdict: Verdict::Undecided, settled: true, shortcut };
        }
    }
    a
}

/// Judges a challenger's windows against the incumbent's, pair by pair.
fn assess(
    t: &Tuner,
    incumbent: &[Option<Point>],
    challenger: &[Option<Point>],
    confidence: f64,
    tail_counts: bool,
) -> Assessment {
    let settled = |verdict, effect| Assessment { effect, verdict, settled: true, shortcut: None };
    let open = |effect| Assessment { effect, verdict: Verdict::Undecided, settled: false, shortcut: None };
    let objective = &t.objective;
    let whole = |w: &[Option<Point>]| Point::combine("", &w.iter().flatten().cloned().collect::<Vec<_>>());
    // A challenger that failed cannot gain (nor can anything be said when the incumbent
    // itself misses the objective).
    if challenger.iter().flatten().any(|p| !p.ok()) {
        let admitted = whole(incumbent).is_some_and(|p| objective.admits(&p));
        return settled(if admitted { Verdict::NoEffect } else { Verdict::Undecided }, None);
    }
    // Seen over the memory budget once, a pool can be there again: more rounds cannot admit it.
    if whole(challenger).is_some_and(|p| !fits(&p)) {
        let admitted = whole(incumbent).is_some_and(|p| objective.admits(&p));
        return settled(if admitted { Verdict::NoEffect } else { Verdict::Undecided }, None);
    }
    let (inc, ch) = paired(incumbent, challenger);
    let (Some(a), Some(b)) = (Point::combine("", &inc), Point::combine("", &ch)) else { return open(None) };
    if let Some(share) = far_below(objective, &inc, &ch) {
        let shortcut = Some(Shortcut::FarBelow { share, windows: inc.len() });
        return Assessment { effect: None, verdict: Verdict::Worse, settled: true, shortcut };
    }
    let effect = objective.effect(&a, &b, confidence);
    if inc.len() < t.judging.min_rounds {
        let both_admitted = objective.admits(&a) && objective.admits(&b);
        let early = tail_verdict(objective, &a, &b, effect.as_ref()).filter(|x| {
            tail_counts && both_admitted && x.verdict == Verdict::WorseTail && counts_as_rounds(&a, &b, inc.len(), t)
        });
        return early.unwrap_or_else(|| open(effect));
    }
    match (objective.admits(&a), objective.admits(&b)) {
        // It misses the objective's constraint (an SLO, the budget) that the incumbent meets.
        (true, false) => settled(Verdict::NoEffect, None),
        // It meets the constraint the incumbent misses.
        (false, true) => settled(Verdict::Adopted, None),
        // Neither meets it: more rounds cannot make either admissible.
        (false, false) => settled(Verdict::Undecided, None),
        (true, true) => {
            let Some(e) = effect else { return open(None) };
            if let Some(tail) = tail_verdict(objective, &a, &b, Some(&e)).filter(|_| tail_counts) {
                return tail;
            }
            let v = verdict_of(&t.judging, &e);
            if v != Verdict::Undecided {
                return Assessment { effect, verdict: v, settled: true, shortcut: None };
            }
            if let Some(by_cpu) = by_cpu(&inc, &ch, confidence, t.judging.threshold_pct) {
                return by_cpu.with_effect(effect);
            }
            match projected(&e, inc.len(), t.judging.max_rounds, confidence) {
                Some(p) if verdict_of(&t.judging, &p) == Verdict::Undecided => Assessment {
                    effect,
                    verdict: Verdict::Undecided,
                    settled: true,
                    shortcut: Some(Shortcut::CannotSettle { projected: p }),
                },
                _ => open(effect),
            }
        }
    }
}

/// The machine's idle share under which its CPUs count as full (`by_cpu`): ticks, the
/// sampler and short sleeps leave a few percent idle on a machine whose run queue is never
/// empty.
const CPU_FULL_IDLE: f64 = 0.1;

/// The server's threads waiting runnable for a CPU, on average, from which the CPU holds it
/// back (`by_cpu`): a pool waiting on I/O on a machine others fill queues for next to
/// nothing, and its CPU time a request says nothing of what it serves.
const CPU_HELD_WAITING: f64 = 0.25;

/// The verdict the server's CPU time per request gives where throughput's interval could
/// not: when the machine's CPUs were full in every paired window of both (`CPU_FULL_IDLE`)
/// and the server's threads waited for them (`CPU_HELD_WAITING`: the CPU held it back),
/// each configuration served what the CPU time it got could buy, and others' share of the
/// CPU, which moves requests per second window by window, barely moves requests per CPU
/// second. Beside a busy loop on one of two cores, the lab's windows scatter by about 20% in
/// req/s and a few percent in CPU per request. Only ever no effect (within the threshold)
/// or a loss (wholly below zero): a gain is adopted by throughput alone, since a server not
/// bound by its CPU can serve more at the same cost (an I/O-bound pool with more workers).
fn by_cpu(incumbent: &[Point], challenger: &[Point], confidence: f64, threshold_pct: f64) -> Option<Assessment> {
    let full = |p: &Point| {
        p.samples.iter().all(|s| {
            s.cpu_idle.is_some_and(|i| i < CPU_FULL_IDLE) && s.server_waiting.is_some_and(|w| w >= CPU_HELD_WAITING)
        })
    };
    if !(incumbent.iter().chain(challenger).all(full)) {
        return None;
    }
    // Requests a second of the server's CPU, a window each.
    let per_cpu_s = |points: &[Point]| -> Option<Vec<f64>> {
        points
            .iter()
            .flat_map(|p| &p.samples)
            .map(|s| s.server_cpu_ms_per_request.filter(|&ms| ms > 0.0).map(|ms| 1000.0 / ms))
            .collect()
    };
    let (a, b) = (per_cpu_s(incumbent)?, per_cpu_s(challenger)?);
    if a.len() != b.len() {
        return None;
    }
    let e = crate::stats::paired_effect(&a, &b, None, confidence)?;
    let verdict = match classify(&e, threshold_pct) {
        v @ (Verdict::NoEffect | Verdict::Worse) => v,
        _ => return None,
    };
    Some(Assessment { effect: None, verdict, settled: true, shortcut: Some(Shortcut::ByCpu { effect: e }) })
}

impl Assessment {
    /// The same, with throughput's interval as its effect.
    fn with_effect(self, effect: Option<Effect>) -> Assessment {
        Assessment { effect, ..self }
    }
}

/// A window under this share of the incumbent's in the same round is far below anything a
/// contender's noise explains (windows scattering by +-20% give ratios down to about 0.67);
/// two under `FAR_BELOW_TWICE` are too. One window settles such a challenger, not three.
pub const FAR_BELOW_ONCE: f64 = 0.6;
const FAR_BELOW_TWICE: f64 = 0.75;

/// The share of the incumbent's throughput the challenger reached in its best round, when
/// every round puts it far below (a throughput objective, the incumbent's windows within it).
fn far_below(objective: &Objective, incumbent: &[Point], challenger: &[Point]) -> Option<f64> {
    if matches!(objective, Objective::LeastMemory { .. }) || incumbent.is_empty() {
        return None;
    }
    let whole = Point::combine("", incumbent)?;
    if !objective.admits(&whole) {
        return None;
    }
    let limit = if incumbent.len() == 1 { FAR_BELOW_ONCE } else { FAR_BELOW_TWICE };
    let shares: Vec<f64> =
        incumbent.iter().zip(challenger).map(|(a, b)| b.rps() / a.rps().max(f64::MIN_POSITIVE)).collect();
    let best = shares.iter().copied().fold(0.0, f64::max);
    (best < limit).then_some(best)
}

/// Whether the challenger's windows so far (`b`, in `rounds` rounds) hold as many requests as
/// --min-rounds of the incumbent's (`a`) would: then a tail many times longer is refused
/// before --min-rounds rounds, as a throughput far below is. Windows that hold three recycles
/// run long: Apache recycling every 50 requests with keep-alive on read p99.9 88.5 ms against
/// 4.8 ms in three windows of 33 s (569,638 requests, each window more than three of the
/// incumbent's 1 s ones, 20,176 in all), two of them (66 s, 10% of its grid's time) only to
/// reach the rounds. The requests, not the rounds, resolve a p99.9.
fn counts_as_rounds(a: &Point, b: &Point, rounds: usize, t: &Tuner) -> bool {
    let (Some(x), Some(y)) = (a.tail(), b.tail()) else { return false };
    rounds > 0 && y.requests * rounds as u64 >= x.requests * t.judging.min_rounds as u64
}

/// Tails (p99.9) this many times apart, and at least `TAIL_MS` apart, are a different service,
/// whatever the throughput: half the connections waiting a second in the accept queue behind
/// kept-alive ones is not bought by a few percent more requests per second (seed 001).
const TAIL_RATIO: f64 = 5.0;
const TAIL_MS: f64 = 20.0;
/// A challenger whose tail is `TAIL_RATIO` times better is adopted for it unless it loses
/// more than this share of the throughput, %.
const TAIL_LOSS_PCT: f64 = 10.0;

/// The verdict the tails give, when they are `TAIL_RATIO` apart (a throughput objective
/// only: with an SLO on p99 the user chose what the tail may be). A tail much shorter is
/// adopted only with a throughput interval `e` that loses at most `TAIL_LOSS_PCT`.
fn tail_verdict(
    objective: &Objective,
    incumbent: &Point,
    challenger: &Point,
    e: Option<&Effect>,
) -> Option<Assessment> {
    if *objective != Objective::Throughput {
        return None;
    }
    let (a, b) = (incumbent.tail()?, challenger.tail()?);
    if !(a.resolved() && b.resolved()) {
        return None;
    }
    let shortcut = Some(Shortcut::Tail { incumbent: a, challenger: b });
    let apart = |worse: f64, better: f64| worse >= TAIL_RATIO * better && worse - better >= TAIL_MS;
    let verdict = if apart(b.p999_ms, a.p999_ms) {
        Verdict::WorseTail
    } else if apart(a.p999_ms, b.p999_ms) && e.is_some_and(|e| e.pct >= -TAIL_LOSS_PCT) {
        Verdict::Adopted
    } else {
        return None;
    };
    Some(Assessment { effect: e.copied(), verdict, settled: true, shortcut })
}

/// The interval `e` (from `n` paired rounds at `confidence`) would have at `cap` rounds if
/// the rounds to come scatter as these did and the mean stays; None at the cap already.
fn projected(e: &Effect, n: usize, cap: usize, confidence: f64) -> Option<Effect> {
    if n >= cap || n < 2 {
        return None;
    }
    let log = |pct: f64| (pct / 100.0).ln_1p();
    let (m, low, high) = (log(e.pct), log(e.low_pct), log(e.high_pct));
    let q = |df: usize| crate::stats::t_quantile(0.5 + confidence / 2.0, df);
    let sd = (high - low) / 2.0 / q(n - 1) * (n as f64).sqrt();
    let half = q(cap - 1) * sd / (cap as f64).sqrt();
    let pct = |x: f64| x.exp_m1() * 100.0;
    Some(Effect { pct: e.pct, low_pct: pct(m - half), high_pct: pct(m + half) })
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
    e.text()
}

/// What a challenger's windows said, for the evidence: "workers=4 812.0 req/s +5.1% [+3.2%,
/// +7.0%] adopted", or why it was settled without an interval. `label` names it
/// ("workers=4"); `incumbent_admitted`: the incumbent met the objective.
pub fn judged_text(label: &str, c: &Judged, objective: &Objective, incumbent_admitted: bool) -> String {
    let rps = c.point.rps();
    if let Some(cause) = c.point.cause() {
        return format!("{label} failed: {cause}");
    }
    let effect = c.effect.as_ref().map_or(String::new(), |e| format!(" {}", effect_text(e)));
    match (&c.shortcut, &c.effect) {
        (Some(Shortcut::FarBelow { share, windows }), _) => format!(
            "{label} {rps:.1} req/s: far below, {:.0}% of the incumbent's at best in {windows} window{}, not measured further",
            share * 100.0,
            if *windows == 1 { "" } else { "s" }
        ),
        (Some(Shortcut::Dominated { by, share, windows }), _) => format!(
            "{label} {rps:.1} req/s{effect}: far below {by}, {:.0}% of its throughput at best in {windows} window{}, not measured further",
            share * 100.0,
            if *windows == 1 { "" } else { "s" }
        ),
        (Some(Shortcut::CannotSettle { projected }), _) => format!(
            "{label} {rps:.1} req/s{effect}: no more rounds could settle it (about {} at the cap)",
            effect_text(projected)
        ),
        (Some(Shortcut::Tail { incumbent, challenger }), _) => format!(
            "{label} {rps:.1} req/s{effect} {}: p99.9 {:.1} ms (max {:.1}) against the incumbent's {:.1} ms (max {:.1}), over {} and {} requests",
            c.verdict.word(),
            challenger.p999_ms,
            challenger.max_ms,
            incumbent.p999_ms,
            incumbent.max_ms,
            challenger.requests,
            incumbent.requests
        ),
        (Some(Shortcut::ByCpu { effect: by_cpu }), _) => format!(
            "{label} {rps:.1} req/s{effect}, undecided by throughput; {} by the requests a second of the server's CPU served, {} (in every window of both the machine's CPUs were full and the server waited for them: each served what its CPU time bought)",
            c.verdict.word(),
            effect_text(by_cpu)
        ),
        (None, Some(_)) => format!("{label} {rps:.1} req/s{effect} {}", c.verdict.word()),
        (None, None) if objective.admits(&c.point) && !incumbent_admitted => {
            format!("{label} {rps:.1} req/s: meets the objective")
        }
        (None, None) if objective.admits(&c.point) => format!("{label} {rps:.1} req/s: too few rounds for an interval"),
        (None, None) => {
            format!("{label} {rps:.1} req/s: misses the objective{}", crate::tune::objective::misfit(&c.point))
        }
    }
}
