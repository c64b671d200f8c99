//! How many workers: throughput and p99 against the pool size, at a concurrency above the
//! pool. Throughput rises then flattens (the CPU, or whatever the workers wait on, is full),
//! or falls past the knee: the largest count first, then halving down to the first count
//! under the plateau, then a search between the two, toward where the line through their
//! readings meets the plateau, finds where it starts; a count the one below could not scale
//! up to the plateau is not launched. Among the counts the windows cannot tell from the best,
//! the smallest is the answer: every worker costs memory, and past the knee of a CPU-bound
//! pool more workers contend for the CPUs and serve less (a PHP pool on 2 CPUs: 455 req/s at
//! 8, 409 at 16); a decline the windows of the counts above the pick show is named. The
//! memory budget caps the answer, from the workers' USS measured under load.

use super::verdict::{Challenger, Comparison, FAR_BELOW_ONCE, Judgement, effect_text, judge, judge_seeded};
use crate::server::settings::Settings;
use crate::tune::evidence::Evidence;
use crate::tune::point::MemUse;
use crate::tune::point::Point;
use crate::tune::step::{Step, Verdict};
use crate::tune::strategies::vocabulary::{Found, Knobs, value};
use crate::tune::trial::Load;
use crate::tune::tuner::Tuner;

/// What the user counts as the knee, and the spare workers they ask for past it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KneeRule {
    /// Counts within this share of the best throughput are "as good" (`--knee`).
    pub tolerance: f64,
    /// At least this share more workers than the knee (`--headroom`; 0: none): spares for a
    /// burst, bought with memory and, past the knee of a CPU-bound pool, contention.
    pub headroom: f64,
}

impl KneeRule {
    /// The knee at `tolerance`, no headroom.
    pub fn at(tolerance: f64) -> KneeRule {
        KneeRule { tolerance, headroom: 0.0 }
    }
}

/// Every count meets more clients than the most workers listed, or it could not show its best.
pub fn workers(t: &mut Tuner, knobs: &Knobs, base: &Settings, rule: KneeRule) -> Found {
    let most = counts(knobs).last().copied().unwrap_or(0);
    let load = Load { tail_counts: false, ..t.load.with_connections(t.load.connections().max(2 * most)) };
    let current = users_count(base);
    knee_search(t, knobs, base, rule, load, current)
}

/// The pool size the user's configuration sets (base settings carry only the user's values).
fn users_count(base: &Settings) -> Option<u64> {
    base.get("workers").and_then(|w| w.parse().ok())
}

/// The same search when the pool size alone is searched by another strategy (one at a time,
/// joint: `Strategy::method`), from `start`, the file's starting point, under the file's own
/// load (the knee for the clients the user described, not for as many as the largest pool
/// could serve); the evidence says how the counts were chosen.
pub fn pool_knee(t: &mut Tuner, knobs: &Knobs, base: &Settings, rule: KneeRule) -> Found {
    let load = t.load.clone();
    let start = &super::one_at_a_time::starting_point(knobs, base);
    let mut found = knee_search(t, knobs, start, rule, load, users_count(base));
    // Where the file's pool stood, when the search measured it: the gain the user gets.
    let current = value(start, "workers");
    let file = match t.points.iter().find(|p| p.ok() && p.settings == *start) {
        Some(p) => format!("; the starting {current} workers served {:.1} req/s", p.rps()),
        None => format!(
            "; the starting {current} workers were not measured (far below the knee or past it, they could not be the answer)"
        ),
    };
    for e in found.evidence.iter_mut().filter(|e| e.knob == "workers") {
        e.why.push_str(&format!(
            "; the pool size alone is searched for its knee (the largest count, then halving, then toward where the readings cross the knee's line, as --strategy workers does, under the file's own load), not every count measured and judged{file}"
        ));
    }
    found
}

/// `current`: the count the user's configuration sets, which the pick must beat by a verdict.
fn knee_search(
    t: &mut Tuner,
    knobs: &Knobs,
    base: &Settings,
    rule: KneeRule,
    load: Load,
    current: Option<u64>,
) -> Found {
    let tolerance = rule.tolerance;
    let mut found = Found { baseline: None, steps: Vec::new(), recommended: base.clone(), evidence: Vec::new() };
    let unchanged = |why: &str| Evidence::new("workers", value(base, "workers"), why);
    let Some(mut sweep) = Sweep::of(knobs, base, tolerance, load, t.repeats) else {
        found.evidence.push(unchanged("no worker counts to try in [knobs] workers"));
        return found;
    };
    sweep.coarse(t);
    sweep.refine(t);
    // The contenders' windows up to --repeats, in rounds across them (drift hits all alike);
    // with their medians the knee may move, and the search goes on from there.
    sweep.confirm(t);
    sweep.refine(t);
    sweep.confirm(t);
    sweep.read_the_contenders_again(t);
    // The search began at the largest count listed: a count above the pick, where one is
    // listed, was measured, and a decline past the knee is read from it (`decline_text`).
    let Some(pick) = Pick::within_memory(&sweep) else {
        found.evidence.push(unchanged("no worker count served a request"));
        return found;
    };
    let mut line = pick.line(&sweep);
    found.baseline = sweep.measured.first().map(|(_, p)| p.clone());
    found.recommended = base.with("workers", &pick.chosen.to_string());
    found.steps.extend(pick.sweep_step(&sweep, &line));
    // The knee is the smallest count within the tolerance of the best; whether the best
    // really serves no more is a comparison like any other: both in interleaved rounds.
    let mut chosen = pick.chosen;
    if pick.best_is_worth_checking() {
        if let Some(said) = gain_under_threshold(t, &pick, tolerance) {
            line += &said;
        } else if let Some(step) = check_the_knee(t, &sweep, &pick) {
            if step.adopted {
                chosen = pick.best.0;
                found.recommended = base.with("workers", &chosen.to_string());
            }
            line += &format!("; {}", step.evidence);
            found.steps.push(step);
        }
    }
    if let Some((more, said)) = with_headroom(t, &mut sweep, &pick, chosen, rule) {
        chosen = more;
        found.recommended = base.with("workers", &chosen.to_string());
        line += &said;
        if let Some(step) = found.steps.first_mut() {
            step.after_value = chosen.to_string();
            step.adopted = step.before_value != step.after_value;
            step.after = sweep.at(chosen).unwrap_or_else(|| step.after.clone());
        }
    }
    // What the user runs now is the baseline: the search's pick replaces it only on a verdict.
    if let Some(current) = current.filter(|&c| c != chosen)
        && t.stopped.is_none()
    {
        match against_current(t, &sweep, current, chosen) {
            Some(step) => {
                if !step.adopted {
                    chosen = current;
                    found.recommended = base.with("workers", &chosen.to_string());
                }
                line += &format!("; {}", step.evidence);
                found.steps.push(step);
            }
            None => {
                chosen = current;
                found.recommended = base.clone();
                line += &format!(
                    "; the run stopped before {chosen} (your configuration's) could be judged against it: kept"
                );
            }
        }
    }
    found.evidence.push(Evidence::new("workers", chosen.to_string(), line));
    found
}

/// The search's pick against the count the user's configuration sets, in interleaved rounds
/// under the search's load: the pick is adopted only with a verdict (a gain settled by its
/// interval, or the memory budget the current count misses). None when the run stopped first.
fn against_current(t: &mut Tuner, sweep: &Sweep, current: u64, pick: u64) -> Option<Step> {
    let j = t.judging;
    t.plan.add(2 * j.min_rounds, 2 * j.max_rounds.max(j.min_rounds));
    let name_of = |v: &str| format!("workers={v} (against your configuration)");
    let more = [Challenger { value: pick.to_string(), settings: sweep.base.with("workers", &pick.to_string()) }];
    let current_settings = sweep.base.with("workers", &current.to_string());
    let j =
        judge(t, &sweep.load, &format!("workers={current} (your configuration)"), &current_settings, &more, &name_of)?;
    let effect = j.lead().and_then(|c| c.effect);
    let said = effect.as_ref().map_or("no interval".to_string(), effect_text);
    let adopted = j.chosen.is_some();
    let evidence = format!(
        "{pick} workers against your configuration's {current}: {said} (99% interval) over {}: {}",
        j.rounds_text(),
        if adopted {
            format!("{} adopted", j.verdict.word())
        } else {
            format!("{}, so your {current} stays (a change needs a verdict)", j.verdict.word())
        }
    );
    let challenger = (!adopted).then(|| j.lead_index()).flatten();
    Some(judged_step(&j, current, if adopted { pick } else { current }, adopted, challenger, effect, evidence))
}

/// The count `--headroom` asks for over `chosen`: the smallest listed count at least that
/// share over it, within the memory budget and short of the first count whose windows read
/// surely less than `chosen`'s (contention past the knee: spares there cost throughput); the
/// largest such count over `chosen` when none reaches the share. A count not measured yet is
/// measured first (a recommendation needs its reading). With the evidence's words; None
/// without headroom, where memory sets the limit, or where no count over `chosen` may be taken.
fn with_headroom(t: &mut Tuner, sweep: &mut Sweep, pick: &Pick, chosen: u64, rule: KneeRule) -> Option<(u64, String)> {
    if rule.headroom <= 0.0 || pick.limit != "throughput" {
        return None;
    }
    let wanted = (chosen as f64 * (1.0 + rule.headroom)).ceil() as u64;
    let fit = pick.fit.as_ref().map_or(u64::MAX, |(f, _)| *f);
    // Each count measured can only rule itself and those above out: a few launches at most.
    let (more, contended) = loop {
        let declines = declines(&sweep.measured, chosen, rule.tolerance).map(|(_, d)| d).unwrap_or_default();
        let contended = declines.iter().filter(|d| d.sure).map(|d| d.count).min();
        let allowed: Vec<u64> = sweep
            .counts
            .iter()
            .copied()
            .filter(|&n| n > chosen && n <= fit && contended.is_none_or(|c| n < c))
            .collect();
        let more = allowed.iter().copied().find(|&n| n >= wanted).or(allowed.last().copied())?;
        if sweep.at(more).is_some() || !sweep.measure(t, more) {
            break (more, contended);
        }
    };
    sweep.at(more)?;
    let pct = rule.headroom * 100.0;
    let mut said = if more >= wanted {
        format!(
            "; --headroom {pct}%: {more} workers, the smallest count listed at least {pct}% over the knee's {chosen}"
        )
    } else {
        format!("; --headroom {pct}%: {more} workers, short of {pct}% over the knee's {chosen}")
    };
    if more < wanted {
        said += &match contended {
            Some(c) if c <= fit => format!(" ({c} workers serve surely less than {chosen}: contention)"),
            _ if fit < wanted => format!(" ({fit} fit the memory budget)"),
            _ => " (no larger count is listed)".to_string(),
        };
    }
    said += &format!(", read at {:.1} req/s (spares for a burst, asked for)", sweep.at(more)?.rps());
    Some((more, said))
}

/// The counts listed in [knobs] workers, ascending, each once.
fn counts(knobs: &Knobs) -> Vec<u64> {
    let mut counts: Vec<u64> = knobs
        .iter()
        .find(|(k, _)| k == "workers")
        .map(|(_, v)| v.iter().filter_map(|x| x.parse().ok()).filter(|&n| n > 0).collect())
        .unwrap_or_default();
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// The sweep of the worker counts: each measured in the order the search asks for it.
struct Sweep<'a> {
    base: &'a Settings,
    /// What every count is measured under.
    load: Load,
    /// The counts listed in [knobs], in order, each once.
    counts: Vec<u64>,
    tolerance: f64,
    /// The windows each contender gets (--repeats).
    repeats: usize,
    /// The counts measured, in order, each with its point.
    measured: Vec<(u64, Point)>,
    /// The counts not launched because the count below could not scale up to the knee.
    spared: Vec<Spared>,
    /// Where the search went below half a count, as its windows' run queue told.
    jumps: Vec<Jump>,
}

/// A step down past halving: of `from` workers kept busy, only about `at_once` could work at
/// once (the rest waited runnable for a CPU, on average over its windows), so the next count
/// measured is `to`, the smallest listed that many. On a PHP pool on 2 CPUs, 32 workers had
/// about 30 waiting: halving to 16 and 8 cost two windows on a pool whose best was 2 to 4.
struct Jump {
    from: u64,
    at_once: f64,
    to: u64,
}

/// The workers of `p` that could work at once: its count less its threads waiting runnable
/// for a CPU (median over its windows); None where the kernel keeps no run-queue count.
fn at_once(p: &Point) -> Option<f64> {
    let n = p.settings.get("workers")?.parse::<f64>().ok()?;
    let waiting: Vec<f64> = p.samples.iter().filter_map(|s| s.server_waiting).collect();
    (!waiting.is_empty()).then(|| (n - crate::stats::median(&waiting)).max(1.0))
}

/// A count spared its launch (`Sweep::within_reach`).
struct Spared {
    count: u64,
    /// The count below it, and its throughput (median of its windows).
    from: (u64, f64),
}

impl Spared {
    /// The most `count` workers could serve: `from`'s throughput scaled up by the counts.
    fn most(&self) -> f64 {
        self.from.1 * self.count as f64 / self.from.0 as f64
    }
}

impl<'a> Sweep<'a> {
    /// The counts listed in [knobs] workers, met with `load`; None when there is none.
    fn of(knobs: &Knobs, base: &'a Settings, tolerance: f64, load: Load, repeats: usize) -> Option<Sweep<'a>> {
        let counts = counts(knobs);
        if counts.is_empty() {
            return None;
        }
        Some(Sweep {
            base,
            load,
            counts,
            tolerance,
            repeats: repeats.max(1),
            measured: Vec::new(),
            spared: Vec::new(),
            jumps: Vec::new(),
        })
    }

    /// Each count first gets one window: a count far below the best needs no more. The
    /// contenders (within `CONTENDERS` of the best) get `--repeats` windows before the knee
    /// is read from their medians (`confirm`). False when the run stopped.
    fn measure(&mut self, t: &mut Tuner, n: u64) -> bool {
        if self.measured.iter().any(|(m, _)| *m == n) {
            return true;
        }
        match t.window(&format!("workers={n}"), &self.base.with("workers", &n.to_string()), &self.load) {
            Some(p) => {
                self.measured.push((n, p));
                self.measured.sort_by_key(|(m, _)| *m);
                true
            }
            None => false,
        }
    }

    /// Coarse: the largest count first. Below it, `refine` halves until a count falls below
    /// the plateau, then bisects: on a curve that rises then flattens, the counts below the
    /// first one clearly under the plateau cannot be the knee, and are never measured (from
    /// the smallest up, a knee near the top cost a window for every doubling below it).
    fn coarse(&mut self, t: &mut Tuner) {
        let most = *self.counts.last().unwrap();
        self.measure(t, most);
    }

    /// Refine: while the knee is the smallest count measured, halve below it; once a count
    /// below the knee is measured, search the file's counts between the two, toward where
    /// their readings cross the knee's line (`toward_the_crossing`). A knee read in
    /// one window nearer the tolerance's edge than its middle is confirmed (`confirm`) before
    /// any count below it is launched: gunicorn's 12 workers read 1.9% under 24 in one window
    /// and 4.7% under in three, and the counts searched below that misread knee were launched
    /// for nothing (16 windows where 12 did).
    fn refine(&mut self, t: &mut Tuner) {
        while let Some(mut knee) = knee(&self.measured, self.tolerance) {
            // A scatter read from one pair of windows stops nothing before `read_once` has read
            // a second: gunicorn's 24 workers read 791 and 756 req/s (3.2%, too wide), and the
            // search stopped with 10 under the knee, where 10's own two windows then put the
            // scatter at 2.3% and 12 was never measured.
            if self.too_scattered().is_some_and(|s| s.df >= 2) {
                break;
            }
            if self.near_the_edge(knee) {
                self.confirm(t);
                // Its windows may have shown the scatter too wide: no launch could settle it.
                if self.too_scattered().is_some() {
                    break;
                }
                let Some(again) = self::knee(&self.measured, self.tolerance) else { break };
                knee = again;
            }
            if t.stopped.is_some() {
                break;
            }
            let below = self.measured.iter().map(|(n, _)| *n).filter(|&n| n < knee).max();
            let next = match below {
                Some(below) => self.toward_the_crossing(below, knee),
                None => self.below_the_smallest(knee),
            };
            let Some(n) = next else { break };
            // The readings the launch between two counts is chosen from, read twice first: the
            // knee and the best (or the count below). Halving below the smallest count measured
            // needs no such reading: the count half its size is launched whatever the scatter
            // (a knee read truly halves on; one read by chance, on a plateau, halves on too).
            if let Some(again) = below.and_then(|b| self.read_once(knee, b)) {
                if !self.once_more(t, again) {
                    break;
                }
                continue;
            }
            if !self.measure(t, n) {
                break;
            }
        }
    }

    /// The count to measure below `knee`, the smallest measured: half its size (else the next
    /// listed below), or lower where its windows say fewer workers could work at once (`Jump`).
    fn below_the_smallest(&mut self, knee: u64) -> Option<u64> {
        let halving = self.half_of(knee)?;
        let Some(at_once) = self.at(knee).and_then(|p| at_once(&p)) else { return Some(halving) };
        match self.counts.iter().copied().filter(|&n| n < knee && n as f64 >= at_once).min() {
            Some(n) if n < halving => {
                self.jumps.push(Jump { from: knee, at_once, to: n });
                Some(n)
            }
            _ => Some(halving),
        }
    }

    /// The count listed half `n`'s size, or the nearest under it (else the next listed below).
    fn half_of(&self, n: u64) -> Option<u64> {
        let smaller = self.counts.iter().copied().filter(|&m| m < n);
        smaller.clone().filter(|&m| 2 * m <= n).max().or_else(|| smaller.max())
    }

    /// The count listed between `below` and `knee`, of those within reach (`within_reach`),
    /// first at or past where the curve crosses the knee's line (the best less the
    /// tolerance), if each of `below`'s workers served as much as now: a pool rises about
    /// linearly until it flattens, so the least count that reaches the line is `below` times
    /// the line over `below`'s reading. The middle count when `below` served nothing. A line
    /// drawn from `below` to the knee's reading cuts that corner of the curve and lands high:
    /// on gunicorn, 8 workers read 646 req/s and 24 read 774, and that line put the crossing
    /// at 21, where 20, 16, 12 and 10 were then launched in turn for a knee at 12 (8 reaching
    /// 761 put it at 9.4: 10, then 12).
    fn toward_the_crossing(&mut self, below: u64, knee: u64) -> Option<u64> {
        let between = self.within_reach(below, knee);
        let Some(low) = self.at(below).map(|p| p.rps()).filter(|&r| r > 0.0) else {
            return between.get(between.len() / 2).copied();
        };
        let crossing = below as f64 * best_rps(&self.measured) * (1.0 - self.tolerance) / low;
        between.iter().copied().find(|&n| n as f64 >= crossing).or(between.last().copied())
    }

    /// The counts listed between `below` and `knee` that could reach the knee's line, as far
    /// as `below`'s windows tell (`could_reach_from`); the others are spared their launch
    /// and recorded in `spared`. On gunicorn, 6 workers read 473 req/s: 8 serve at most 631,
    /// 7% under the line of 698's best, where the windows scattered by 1.5%; 8's launch
    /// (2.1 s, 3% of the grid's time) could not have moved the knee off 10.
    fn within_reach(&mut self, below: u64, knee: u64) -> Vec<u64> {
        let between = self.counts.iter().copied().filter(|&n| n > below && n < knee);
        let Some(scatter) = Scatter::pooled(self.measured.iter()) else { return between.collect() };
        let (reach, spared): (Vec<u64>, Vec<u64>) =
            between.partition(|&n| could_reach_from(&self.measured, below, n, scatter, self.tolerance));
        let from = self.at(below).map_or(0.0, |p| p.rps());
        for n in spared {
            if !self.spared.iter().any(|s| s.count == n) {
                self.spared.push(Spared { count: n, from: (below, from) });
            }
        }
        reach
    }

    /// Whether `knee` has fewer windows than --repeats and reads under the best by more than
    /// half the tolerance: one window more or less could move it out.
    fn near_the_edge(&self, knee: u64) -> bool {
        let Some(p) = self.at(knee) else { return false };
        p.samples.len() < self.repeats && p.rps() < best_rps(&self.measured) * (1.0 - self.tolerance / 2.0)
    }

    /// Until the windows' scatter is known over two degrees of freedom, of the counts the next
    /// launch between `below` and `knee` is chosen from, the knee and the best (the count
    /// below when the knee is the best), the first read in one window (when --repeats gives
    /// two at least). A launch costs a start and a window; two windows of each show the
    /// scatter, and where it is too wide to read the knee the search stops before launching
    /// counts that could not change the answer. On
    /// php-fpm, 8 workers read within 3% of 16, or 5-18% over it, in single windows, and the
    /// search launched 4 and 6 on that reading before the scatter, 6.5%, was known.
    fn read_once(&self, knee: u64, below: u64) -> Option<u64> {
        if Scatter::pooled(self.measured.iter()).is_some_and(|s| s.df >= 2) {
            return None;
        }
        let best = best_of(&self.measured)?.0;
        let partner = if best != knee { best } else { below };
        [knee, partner]
            .into_iter()
            .find(|&n| self.at(n).is_some_and(|p| p.ok() && p.samples.len() < 2.min(self.repeats)))
    }

    /// Where the windows scatter too widely to read the knee, the answer is the smallest
    /// count whose windows' mean reads within the tolerance of the best's, and the largest
    /// measured may be that best: one window of either is not enough to say so (on php-fpm,
    /// 16 workers read 515 req/s in their one window, 19% under 8's two, where 8 serve 93.2%
    /// of 16 over 87 windows each). The smallest count the windows cannot tell from the best
    /// is read twice too: one low window of a flat pool's 8 workers read 5% under 16 and
    /// left 16, twice the memory, the answer.
    fn read_the_contenders_again(&mut self, t: &mut Tuner) {
        let once = |s: &Self, n: u64| s.at(n).is_some_and(|p| p.ok() && p.samples.len() < 2.min(s.repeats));
        let Some(&(largest, _)) = self.measured.last() else { return };
        // Unless its one window reads far below the best, beyond what noise explains
        // (`FAR_BELOW_ONCE`): past the knee of a PHP pool, 32 workers at 180 req/s against 4's 458.
        let far_below = |s: &Self| s.at(largest).is_some_and(|p| p.rps() < FAR_BELOW_ONCE * best_rps(&s.measured));
        if self.too_scattered().is_some() && once(self, largest) && !far_below(self) && !self.once_more(t, largest) {
            return;
        }
        self.halve_while_as_good(t);
        let smallest =
            self.too_scattered().and_then(|s| cannot_tell(&self.measured, self.tolerance, s).first().copied());
        if let Some(n) = smallest.filter(|&n| once(self, n))
            && !self.once_more(t, n)
        {
            return;
        }
        self.read_the_decline(t);
    }

    /// Where the windows scatter too widely to read the knee, the search stops, and the answer
    /// is the smallest count as good as the best (`as_good`): while that is the smallest
    /// count measured, the count half its size (else the next listed below) is measured, a
    /// count the windows cannot tell from the best read twice before it is ruled out. From
    /// the largest count down, the search stopped at 16 of a PHP pool on 2 CPUs whose best
    /// was 2 to 4 workers, 16 serving 82% of it.
    fn halve_while_as_good(&mut self, t: &mut Tuner) {
        let once = |s: &Self, n: u64| s.at(n).is_some_and(|p| p.ok() && p.samples.len() < 2.min(s.repeats));
        while let Some(scatter) = self.too_scattered()
            && let Some(&(smallest, _)) = self.measured.first()
            && t.stopped.is_none()
        {
            if !as_good(&self.measured, self.tolerance).contains(&smallest) {
                let unsure = cannot_tell(&self.measured, self.tolerance, scatter).contains(&smallest);
                if unsure && once(self, smallest) && self.once_more(t, smallest) {
                    continue;
                }
                // After a step down past halving (`Jump`), a count listed between it and the
                // smallest as good, not measured, that could reach the knee's line: the jump
                // may have passed the knee. (Halving's own gaps stay as bench/ measured them.)
                let pick = as_good(&self.measured, self.tolerance).first().copied().filter(|_| !self.jumps.is_empty());
                let next = pick.and_then(|pick| self.toward_the_crossing(smallest, pick));
                if let Some(n) = next.filter(|n| self.at(*n).is_none())
                    && self.measure(t, n)
                {
                    continue;
                }
                return;
            }
            let Some(next) = self.half_of(smallest) else {
                return;
            };
            if !self.measure(t, next) {
                return;
            }
        }
    }

    /// Where the windows scatter too widely to read the knee, a count above the pick that
    /// reads under it by more than the tolerance, but not surely, and the pick get up to
    /// --repeats windows in rounds: a decline past the knee (8-10% on a PHP pool) is wider
    /// than the tolerance the knee could not be read at, and more windows can show it.
    fn read_the_decline(&mut self, t: &mut Tuner) {
        for round in 2..self.repeats {
            if self.too_scattered().is_none() {
                return;
            }
            let Some(&pick) = as_good(&self.measured, self.tolerance).first() else { return };
            let Some((_, found)) = declines(&self.measured, pick, self.tolerance) else { return };
            let open: Vec<u64> = found.iter().filter(|d| !d.sure).map(|d| d.count).collect();
            let mut due: Vec<u64> = std::iter::once(pick)
                .chain(open.iter().copied())
                .filter(|&n| self.at(n).is_some_and(|p| p.samples.len() <= round))
                .collect();
            if open.is_empty() || due.is_empty() {
                return;
            }
            if round % 2 == 1 {
                due.reverse();
            }
            for n in due {
                if !self.once_more(t, n) {
                    return;
                }
            }
        }
    }

    /// One more window of `n`: its second reading, and the windows' scatter known. False
    /// when the run stopped.
    fn once_more(&mut self, t: &mut Tuner, n: u64) -> bool {
        let Some(i) = self.measured.iter().position(|(m, _)| *m == n) else { return true };
        top_up(t, self.base, &self.load, &mut self.measured[i])
    }

    /// The windows' scatter when it is too wide for the knee to be read (`too_scattered`).
    fn too_scattered(&self) -> Option<Scatter> {
        too_scattered(&self.measured, self.repeats, self.tolerance)
    }

    /// The windows of the counts that decide the knee, up to --repeats (`confirm`).
    fn confirm(&mut self, t: &mut Tuner) {
        confirm(t, self.base, &self.load, &mut self.measured, self.tolerance);
    }

    /// The point of a count measured.
    fn at(&self, n: u64) -> Option<Point> {
        self.measured.iter().find(|(m, _)| *m == n).map(|(_, p)| p.clone())
    }
}

/// The count recommended from the sweep: the knee, or the most the memory budget lets fit
/// when that is fewer.
struct Pick {
    knee: u64,
    knee_point: Point,
    /// The count of the best throughput, and its point.
    best: (u64, Point),
    /// The workers that fit the memory budget, and the figures that say so (those of the
    /// largest pool measured, the most telling).
    fit: Option<(u64, MemUse)>,
    chosen: u64,
    /// What sets the limit: "memory" or "throughput".
    limit: &'static str,
    /// The windows' scatter, when it was too wide to read the knee from: then `knee` is the
    /// smallest count whose windows' mean reads within the tolerance of the best's (`as_good`).
    scattered: Option<Scatter>,
    /// The counts as good as the best, within the tolerance of it (their medians, or their
    /// windows' means where the windows scatter too widely), ascending: `knee` is the first.
    as_good: Vec<u64>,
    /// The windows' scatter, when it was narrow enough to settle the knee (`settled`): then
    /// the best is not checked against it.
    settled: Option<Scatter>,
}

impl Pick {
    /// None when no count served a request.
    fn within_memory(sweep: &Sweep) -> Option<Pick> {
        let (counts, measured) = (&sweep.counts, &sweep.measured);
        let scattered = sweep.too_scattered();
        let as_good = match scattered {
            Some(_) => as_good(measured, sweep.tolerance),
            None => within_tolerance(measured, sweep.tolerance),
        };
        let knee = *as_good.first()?;
        let best = best_of(measured).unwrap();
        // The memory figures of the largest pool measured are the most telling.
        let fit =
            measured.iter().rev().filter_map(|(_, p)| p.memory()).find_map(|m| m.workers_fit.map(|f| (f, m.clone())));
        let (chosen, limit) = match &fit {
            Some((f, _)) if *f < knee => {
                let fits: Vec<u64> = counts.iter().copied().filter(|n| n <= f).collect();
                (fits.last().copied().unwrap_or(counts[0]), "memory")
            }
            _ => (knee, "throughput"),
        };
        let knee_point = sweep.at(knee).unwrap();
        let settled = if scattered.is_none() { settled(measured, sweep.tolerance) } else { None };
        Some(Pick { knee, knee_point, best: best.clone(), fit, chosen, limit, scattered, as_good, settled })
    }

    /// The evidence line: the knee's throughput against the best, what fits the memory, what
    /// sets the limit, where the server ran, and whether p99 climbs past the knee.
    fn line(&self, sweep: &Sweep) -> String {
        let (knee, knee_point, best) = (self.knee, &self.knee_point, &self.best);
        let mut line = format!(
            "{knee} workers reach {:.1} req/s, {:.1}% of the best ({:.1} req/s at {}), p99 {:.2} ms (at {} clients)",
            knee_point.rps(),
            knee_point.rps() / best.1.rps() * 100.0,
            best.1.rps(),
            best.0,
            knee_point.p99(),
            sweep.load.connections()
        );
        if let Some((f, m)) = &self.fit {
            line += &format!(
                "; {f} fit the memory budget (worker USS {} KiB under load, parent {} KiB + {} KiB shared)",
                m.worker_uss_max_kib, m.parent_uss_kib, m.parent_shared_kib
            );
        }
        line += &format!(
            "; {} sets the limit",
            if self.limit == "memory" {
                "memory".to_string()
            } else {
                "throughput (CPU or what the workers wait on)".to_string()
            }
        );
        if let Some(scatter) = self.scattered {
            line += &format!(
                "; but the windows scatter by {:.1}% (one window's standard deviation, pooled over {} degrees of freedom): {} windows of a count and {} of the best could not show it within {}% of the best ({:.0}% one-sided), so the knee of these readings is chance: the smallest count whose windows' mean reads within {}% of the best's is recommended (every worker costs memory, and past the knee more workers contend for the CPUs), not the largest that could be as good; longer windows or more --repeats would narrow it",
                scatter.sd * 100.0,
                scatter.df,
                sweep.repeats,
                sweep.repeats,
                sweep.tolerance * 100.0,
                KNEE_CONFIDENCE * 100.0,
                sweep.tolerance * 100.0
            );
        }
        line += &self.smallest_text(sweep);
        if let Some(scatter) = self.settled.filter(|_| best.0 != knee) {
            line += &format!(
                "; at the windows' scatter ({:.1}%, pooled over {} degrees of freedom) its {} windows put it within {}% of every larger count ({:.0}% one-sided) and the count below could not reach it: more windows could not move the knee, and the best is not checked against it",
                scatter.sd * 100.0,
                scatter.df,
                knee_point.samples.len(),
                sweep.tolerance * 100.0,
                SETTLED_CONFIDENCE * 100.0
            );
        }
        for j in &sweep.jumps {
            line += &format!(
                "; {} workers measured after {}, not half of it: of {} kept busy about {:.1} could work at once (the rest waited for a CPU, the kernel's run queue said)",
                j.to, j.from, j.from, j.at_once
            );
        }
        for s in sweep.spared.iter().filter(|s| s.count < knee) {
            line += &format!(
                "; {} workers not launched: {} served {:.1} req/s, so {} serve at most {:.1} (a worker serves no more for more company), under the knee's line ({:.1} req/s) by more than the windows' scatter lets that reading miss ({:.0}% one-sided)",
                s.count,
                s.from.0,
                s.from.1,
                s.count,
                s.most(),
                best.1.rps() * (1.0 - sweep.tolerance),
                BELOW_CONFIDENCE * 100.0
            );
        }
        if let Some(pl) = &knee_point.placement
            && let Some(server) = &pl.server
        {
            let with = if pl.shared { "shared with the client" } else { "the client apart" };
            line += &format!("; the server ran on {} CPU(s) ({server}, {with})", server.len());
        }
        if let Some((n, p99)) = p99_climbs_after(&sweep.measured, knee) {
            line += &format!("; past it p99 climbs ({p99:.2} ms at {n})");
        }
        if self.limit == "throughput" {
            line += &decline_text(&sweep.measured, self.chosen, sweep.tolerance);
        }
        line
    }

    /// The evidence of the tie-break, when several counts are as good: the smallest is the
    /// pick, and the memory it saves against the largest of them, where both were read.
    fn smallest_text(&self, sweep: &Sweep) -> String {
        let Some(&largest) = self.as_good.last().filter(|&&l| l != self.knee) else { return String::new() };
        let others: Vec<String> = self.as_good[1..].iter().map(u64::to_string).collect();
        let mut text = format!(
            "; the smallest count the windows cannot tell from the best: {}; {} served no more, as far as the windows tell (a worker costs memory, and more contend for the CPUs)",
            self.knee,
            others.join(", ")
        );
        if let Some(large) = sweep.at(largest)
            && let Some((small, big)) = memory_of(&self.knee_point, &large)
            && big > small
        {
            text += &format!(
                "; {} workers use {:.1} MiB less than {largest} ({:.1} against {:.1} MiB of the server's PSS)",
                self.knee,
                (big - small) / 1024.0,
                small / 1024.0,
                big / 1024.0
            );
        }
        text
    }

    /// The sweep's step: from the smallest count measured to the one chosen, every count
    /// measured its candidate; None when nothing was measured.
    fn sweep_step(&self, sweep: &Sweep, line: &str) -> Option<Step> {
        let smallest = sweep.measured.first()?.0;
        Some(Step {
            knob: "workers".into(),
            before_value: smallest.to_string(),
            after_value: self.chosen.to_string(),
            adopted: self.chosen != smallest,
            verdict: None,
            effect: None,
            rounds: 0,
            before: sweep.at(smallest)?,
            after: sweep.at(self.chosen).unwrap_or_else(|| self.knee_point.clone()),
            candidates: sweep.measured.iter().map(|(_, p)| p.clone()).collect(),
            challenger: None,
            evidence: line.to_string(),
        })
    }

    /// Throughput sets the limit, the knee was read (not too scattered: the check could not
    /// settle it either) but not settled (the check could not move it), the best is another
    /// count than the knee, and it fits the memory budget.
    fn best_is_worth_checking(&self) -> bool {
        self.limit == "throughput"
            && self.scattered.is_none()
            && self.settled.is_none()
            && self.best.0 != self.knee
            && self.fit.as_ref().is_none_or(|(f, _)| *f >= self.best.0)
    }
}

/// The gain the knee's check must see surely (its interval's low end) for the best: the
/// threshold, or `--knee` when larger, %. A gain the windows cannot show past the tolerance
/// leaves the knee within their resolution of the best, and the smaller count stands. Beside
/// a CPU hog, php-fpm's 4 workers read +4.0% over the knee's 1 in the sweep's 3 rounds, the
/// best of ten counts and so read high; a check judged on the estimate alone ran 3 rounds
/// more to +3.0% [+0.7%, +5.3%] and kept 1, 26.2% of the grid's time where 25% was the bar.
fn check_threshold(t: &Tuner, tolerance: f64) -> f64 {
    t.judging.threshold_pct.max(tolerance * 100.0)
}

/// The best's gain over the knee from the windows the sweep measured of both (`--repeats`,
/// in interleaved rounds), in words, when it lies under the check's threshold: then the
/// check takes no rounds of its own. The knee is within `--knee` of the best by
/// construction; the check looks for a best that serves surely more by that threshold, which
/// a gain read under it is not yet (20 against 16 workers on gunicorn took 2 more rounds of
/// both, 4 windows, to read -0.9% [-3.1%, +1.3%]).
fn gain_under_threshold(t: &Tuner, pick: &Pick, tolerance: f64) -> Option<String> {
    let (knee, best) = (&pick.knee_point, &pick.best.1);
    if knee.samples.len().min(best.samples.len()) < t.judging.min_rounds {
        return None;
    }
    let e = t.objective.effect(knee, best, t.judging.confidence)?;
    let threshold = check_threshold(t, tolerance);
    (e.pct < threshold).then(|| {
        format!(
            "; {} workers against the knee's {}: {} (99% interval) over the sweep's {} rounds, a gain read under the {}% threshold: the knee stands, its interval not narrowed (only a gain read over the threshold is judged in rounds of its own)",
            pick.best.0,
            pick.knee,
            effect_text(&e),
            knee.samples.len().min(best.samples.len()),
            threshold
        )
    })
}

/// The knee against the best count in interleaved rounds, as a step whose evidence says the
/// verdict; the step is adopted when the best serves surely more. None when the run stopped
/// before anything could be judged.
fn check_the_knee(t: &mut Tuner, sweep: &Sweep, pick: &Pick) -> Option<Step> {
    let (knee, best) = (pick.knee, &pick.best);
    let name_of = |v: &str| format!("workers={v} (against the knee)");
    let more = [Challenger { value: best.0.to_string(), settings: sweep.base.with("workers", &best.0.to_string()) }];
    let knee_settings = sweep.base.with("workers", &knee.to_string());
    // The windows both took in the sweep and its confirmation, by round, are the check's
    // first rounds: more only while its verdict is open.
    let seed = vec![sweep.at(knee).map_or_else(Vec::new, |p| windows_of(&p)), windows_of(&best.1)];
    let incumbent_name = format!("workers={knee} (the knee)");
    // Judged at the check's threshold for this one comparison, restored at once: the best
    // is adopted only when its interval's low end clears it (`check_threshold`).
    let judging = t.judging;
    t.judging.threshold_pct = check_threshold(t, sweep.tolerance);
    t.judging.sure_by_pct = t.judging.threshold_pct;
    let j = judge_seeded(t, Comparison::of(&sweep.load, &incumbent_name, &knee_settings, &name_of), &more, seed);
    t.judging = judging;
    let j = j?;
    let effect = j.lead().and_then(|c| c.effect);
    let said = effect.as_ref().map_or("no interval".to_string(), effect_text);
    let check = format!(
        "{} workers against the knee's {knee}: {said} (99% interval) over {}: {}",
        best.0,
        j.rounds_text(),
        match j.verdict {
            Verdict::Adopted => "more workers adopted",
            Verdict::NoEffect => "no effect, the knee stands",
            Verdict::Worse => "worse, the knee stands",
            Verdict::WorseTail => "a tail many times longer, the knee stands",
            Verdict::Cheaper =>
                "no number of rounds could show it surely past the threshold, the knee is kept as the cheaper",
            Verdict::Undecided => "not surely past the threshold, the knee is kept",
        }
    );
    let chosen = if j.chosen.is_some() { best.0 } else { knee };
    let challenger = j.chosen.is_none().then(|| j.lead_index()).flatten();
    Some(judged_step(&j, knee, chosen, j.chosen.is_some(), challenger, effect, check))
}

/// A count below the knee within this share of the best (or three knee tolerances, if more)
/// could be the knee once measured again: it gets all its windows too, unless the scatter of
/// the other contenders' windows says it cannot (`could_reach_the_knee`).
const CONTENDERS: f64 = 0.15;

/// How sure the scatter must make it that the count below the knee stays below before its
/// windows are spared (one-sided). Wrongly spared, the knee is read one count too high: more
/// workers than needed, never less throughput.
const BELOW_CONFIDENCE: f64 = 0.95;

/// The least relative scatter of one window assumed, however still a few windows read: a
/// launch, the scheduler and the clock move a window by about this much.
const MIN_SCATTER: f64 = 0.01;

/// Tops up the windows of the counts that decide the knee to the tuner's repeats: the knee,
/// the best (the reference it is within the tolerance of), the count just above it, and the
/// count just below the knee while it could still reach the knee. Counts far below, or on the
/// plateau past the knee, keep their one window: more would not move the answer. One window
/// per count per round, the order reversed every other round (drift hits all alike); the count
/// below comes last in its round, judged from the others' windows so far.
fn confirm(t: &mut Tuner, base: &Settings, load: &Load, measured: &mut [(u64, Point)], tolerance: f64) {
    let share = CONTENDERS.max(3.0 * tolerance);
    let Some(k) = knee(measured, tolerance) else { return };
    let best = best_rps(measured);
    let best_count = measured.iter().find(|(_, p)| p.ok() && p.rps() == best).map(|(n, _)| *n);
    let below =
        measured.iter().filter(|(n, p)| *n < k && p.ok() && p.rps() >= best * (1.0 - share)).map(|(n, _)| *n).max();
    // More workers reading less than the knee's throughput is a disturbed window, or
    // contention past the knee: the count just above the knee is checked too, and its
    // windows say which (`decline_text`).
    let above = measured.iter().map(|(n, _)| *n).filter(|&n| n > k).min();
    let decisive: Vec<u64> = [Some(k), above, best_count].into_iter().flatten().collect();
    let due_in = |measured: &[(u64, Point)], n: u64, round: usize| {
        measured.iter().position(|(m, p)| *m == n && p.ok() && p.samples.len() <= round)
    };
    for round in 1..t.repeats.max(1) {
        // At a scatter no --repeats windows could read the knee through, more cannot help;
        // at one so small that the knee is settled, they cannot move it.
        if too_scattered(measured, t.repeats, tolerance).is_some() || settled(measured, tolerance).is_some() {
            return;
        }
        let mut due: Vec<usize> = decisive.iter().filter_map(|&n| due_in(measured, n, round)).collect();
        due.sort_unstable();
        due.dedup();
        if round % 2 == 1 {
            due.reverse();
        }
        for i in due {
            if !top_up(t, base, load, &mut measured[i]) {
                return;
            }
        }
        if let Some(i) = below.and_then(|b| due_in(measured, b, round))
            && could_reach_the_knee(measured, measured[i].0, &decisive, tolerance)
            && !top_up(t, base, load, &mut measured[i])
        {
            return;
        }
    }
}

/// One more window of a count measured, named by its windows so far (a count behind by two
/// rounds is topped up once a round, and its name says which window it is); false when the
/// run stopped.
fn top_up(t: &mut Tuner, base: &Settings, load: &Load, at: &mut (u64, Point)) -> bool {
    let n = at.0;
    let name = format!("workers={n} #{}", at.1.samples.len() + 1);
    let Some(p) = t.window(&name, &base.with("workers", &n.to_string()), load) else { return false };
    if let Some(both) = Point::combine(&format!("workers={n}"), &[at.1.clone(), p]) {
        at.1 = both;
    }
    true
}

/// Whether the count `n`, below the knee, could read within `tolerance` of the best once
/// measured again: its windows' mean sits under the knee's line (the best less the tolerance)
/// by less than the scatter of one window (pooled over the `others`' windows, at least
/// `MIN_SCATTER`) lets a mean of its windows miss by (`BELOW_CONFIDENCE`, Student's t). True
/// while no other count has two windows. gunicorn's 10 workers read 9% under the best in
/// their one window where 12 and 24 scattered by 1% between theirs: its two more windows
/// (2 s of a 15 s tune) could not have moved the knee.
fn could_reach_the_knee(measured: &[(u64, Point)], n: u64, others: &[u64], tolerance: f64) -> bool {
    Scatter::pooled(measured.iter().filter(|(m, _)| others.contains(m)))
        .is_none_or(|scatter| could_reach_at(measured, n, scatter, tolerance))
}

/// Whether the count `n` could read within `tolerance` of the best at this `scatter`
/// (`could_reach_the_knee`).
fn could_reach_at(measured: &[(u64, Point)], n: u64, scatter: Scatter, tolerance: f64) -> bool {
    measured.iter().any(|(m, _)| *m == n) && could_reach_from(measured, n, n, scatter, tolerance)
}

/// Whether `n` workers could read within `tolerance` of the best, as far as the windows of
/// `from` workers (measured, no more than `n`) tell: a worker serves no more for having more
/// company (they share the CPUs and whatever they wait on), so `n` serve at most `n / from`
/// times what `from` serve. Under the knee's line by more than the scatter lets the mean of
/// `from`'s windows miss (`BELOW_CONFIDENCE`), it could not. True when `from` was not read.
fn could_reach_from(measured: &[(u64, Point)], from: u64, n: u64, scatter: Scatter, tolerance: f64) -> bool {
    let Some((_, below)) = measured.iter().find(|(m, _)| *m == from) else { return true };
    let (best, best_windows) = best_of(measured).map_or((0.0, 1), |(_, p)| (p.rps(), p.samples.len()));
    let own = log_windows(below);
    if own.is_empty() || best <= 0.0 || from == 0 {
        return true;
    }
    let most = crate::stats::mean(&own) + (n as f64 / from as f64).ln();
    let gap = (best * (1.0 - tolerance)).ln() - most;
    gap < scatter.margin(BELOW_CONFIDENCE, own.len(), best_windows)
}

/// How sure a count must be shown within the tolerance of the best (one-sided) for its
/// reading to be the knee, when the windows scatter (`too_scattered`).
const KNEE_CONFIDENCE: f64 = 0.8;

/// The scatter of one window's throughput, in logs (a relative standard deviation), pooled
/// over the counts measured more than once.
#[derive(Clone, Copy, Debug)]
struct Scatter {
    sd: f64,
    df: usize,
}

impl Scatter {
    /// Pooled over `points`' ok windows; None while none has two. At least `MIN_SCATTER`.
    fn pooled<'p>(points: impl Iterator<Item = &'p (u64, Point)>) -> Option<Scatter> {
        let (mut squares, mut df) = (0.0, 0);
        for (_, p) in points.filter(|(_, p)| p.ok()) {
            let l = log_windows(p);
            if l.len() >= 2 {
                squares += crate::stats::stdev(&l).powi(2) * (l.len() - 1) as f64;
                df += l.len() - 1;
            }
        }
        (df > 0).then(|| Scatter { sd: (squares / df as f64).sqrt().max(MIN_SCATTER), df })
    }

    /// How far, in logs, the difference of two means of `a` and `b` windows may miss at
    /// `confidence` (one-sided, Student's t).
    fn margin(&self, confidence: f64, a: usize, b: usize) -> f64 {
        crate::stats::t_quantile(confidence, self.df) * self.sd * (1.0 / a.max(1) as f64 + 1.0 / b.max(1) as f64).sqrt()
    }
}

/// The scatter, when it is too wide for --repeats windows to read the knee: even a count
/// reading the best's throughput, in `repeats` windows against the best's `repeats`, could
/// not be shown within `tolerance` of it (`KNEE_CONFIDENCE`). The knee of such readings is
/// chance: grid (d) in bench/verdicts.py, a PHP page whose 1 s windows scatter by 9.5%, put
/// 8 workers at 93.2% of 16 over 87 windows each, and its first windows read 8 within the
/// 3% tolerance often enough for a search to keep it.
fn too_scattered(measured: &[(u64, Point)], repeats: usize, tolerance: f64) -> Option<Scatter> {
    let scatter = Scatter::pooled(measured.iter())?;
    (scatter.margin(KNEE_CONFIDENCE, repeats, repeats) >= -(1.0 - tolerance).ln()).then_some(scatter)
}

/// How sure the knee's windows must make it that no larger count serves more than the
/// tolerance over it before more windows are spared (one-sided). Wrongly spared, the knee is
/// read a count too low, which costs throughput: surer than `KNEE_CONFIDENCE`.
const SETTLED_CONFIDENCE: f64 = 0.9;

/// The degrees of freedom the scatter needs before it spares windows: one pair of windows
/// reads a 10% scatter as under 1% about one time in 12 (chi-squared), three pairs about one
/// time in 800.
const SETTLED_DF: usize = 3;

/// The windows' scatter when the knee is settled: at it (known over `SETTLED_DF` degrees of
/// freedom at least) the knee's windows put it within `tolerance` of every larger count
/// (`SETTLED_CONFIDENCE`), and the count measured just below could not reach the knee's line
/// (`could_reach_at`). More windows could not move the knee, nor show the best surely more.
/// On gunicorn, whose windows scatter by about 1%, 16 workers read 0.9% under 24 in two
/// windows each; the third windows of the knee, the count above and the best, and a check of
/// the best against the knee, took 3 to 7 windows more without moving an answer.
fn settled(measured: &[(u64, Point)], tolerance: f64) -> Option<Scatter> {
    let scatter = Scatter::pooled(measured.iter()).filter(|s| s.df >= SETTLED_DF)?;
    let k = knee(measured, tolerance)?;
    let own = measured.iter().find(|(n, _)| *n == k).map(|(_, p)| log_windows(p))?;
    let line = (1.0 - tolerance).ln();
    let within = measured.iter().filter(|(n, p)| *n > k && p.ok()).all(|(_, p)| {
        let logs = log_windows(p);
        logs.is_empty()
            || crate::stats::mean(&own) - crate::stats::mean(&logs)
                >= line + scatter.margin(SETTLED_CONFIDENCE, own.len(), logs.len())
    });
    let below = measured.iter().filter(|(n, p)| *n < k && p.ok()).map(|(n, _)| *n).max();
    (within && below.is_none_or(|b| !could_reach_at(measured, b, scatter, tolerance))).then_some(scatter)
}

/// The counts whose windows could be within `tolerance` of the best's at this scatter
/// (`KNEE_CONFIDENCE`), ascending: those the windows cannot tell from the best.
fn cannot_tell(measured: &[(u64, Point)], tolerance: f64, scatter: Scatter) -> Vec<u64> {
    // Each count that served: its mean log throughput and its windows, read once.
    let read: Vec<(u64, f64, usize)> = measured
        .iter()
        .filter(|(_, p)| p.ok())
        .filter_map(|(n, p)| {
            let logs = log_windows(p);
            (!logs.is_empty()).then(|| (*n, crate::stats::mean(&logs), p.samples.len()))
        })
        .collect();
    let Some(&(_, best, best_windows)) = read.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else { return Vec::new() };
    let line = best + (1.0 - tolerance).ln();
    read.iter()
        .filter(|(_, mean, windows)| mean + scatter.margin(KNEE_CONFIDENCE, *windows, best_windows) >= line)
        .map(|(n, _, _)| *n)
        .collect()
}

/// Where the windows scatter too widely to read the knee, the counts whose windows' mean
/// reads within `tolerance` of the best's, ascending; the smallest is the pick (a larger pool
/// costs memory, and past the knee of a CPU-bound pool serves less). Not every count the
/// scatter cannot tell from the best (`cannot_tell`): at 8-10% a count 6.5% under the best
/// passes for one, a loss the tolerance the user set does not allow (grid (d) in
/// bench/verdicts.py, whose 8 workers serve 93.2% of 16: on its model that rule picked 8 in
/// 24 phases of 27, this one in 6).
fn as_good(measured: &[(u64, Point)], tolerance: f64) -> Vec<u64> {
    // Each count that served, with its mean log throughput.
    let read: Vec<(u64, f64)> = measured
        .iter()
        .filter(|(_, p)| p.ok())
        .filter_map(|(n, p)| {
            let logs = log_windows(p);
            (!logs.is_empty()).then(|| (*n, crate::stats::mean(&logs)))
        })
        .collect();
    let best = read.iter().map(|(_, mean)| *mean).fold(f64::NEG_INFINITY, f64::max);
    read.iter().filter(|(_, mean)| *mean >= best + (1.0 - tolerance).ln()).map(|(n, _)| *n).collect()
}

/// The counts within `tolerance` of the best throughput (their medians), ascending: where the
/// windows scatter little, those the tolerance cannot tell from the best.
fn within_tolerance(measured: &[(u64, Point)], tolerance: f64) -> Vec<u64> {
    let best = best_rps(measured);
    if best <= 0.0 {
        return Vec::new();
    }
    measured.iter().filter(|(_, p)| p.ok() && p.rps() >= best * (1.0 - tolerance)).map(|(n, _)| *n).collect()
}

/// How sure a reading past the pick must be to fall below it before the decline is named
/// (one-sided, Student's t): a claim of contention, not a verdict that moves anything.
const DECLINE_CONFIDENCE: f64 = 0.9;

/// A count above the pick that read below it by more than the tolerance.
struct Decline {
    count: u64,
    /// The pick's mean log throughput less this count's.
    drop: f64,
    /// Beyond what the windows' scatter lets the difference of the means miss
    /// (`DECLINE_CONFIDENCE`).
    sure: bool,
}

impl Decline {
    /// "16 workers serve 10.2% less than 8".
    fn text(&self, pick: u64) -> String {
        format!("{} workers serve {:.1}% less than {pick}", self.count, (1.0 - (-self.drop).exp()) * 100.0)
    }
}

/// The counts above `pick` whose windows read below its own by more than the tolerance, and
/// the windows' scatter they are judged at; None while it is unknown (no count read twice).
fn declines(measured: &[(u64, Point)], pick: u64, tolerance: f64) -> Option<(Scatter, Vec<Decline>)> {
    let scatter = Scatter::pooled(measured.iter())?;
    let own = measured.iter().find(|(n, p)| *n == pick && p.ok()).map(|(_, p)| log_windows(p))?;
    if own.is_empty() {
        return None;
    }
    let found = measured
        .iter()
        .filter(|(n, p)| *n > pick && p.ok())
        .filter_map(|(n, p)| {
            let logs = log_windows(p);
            let drop = crate::stats::mean(&own) - crate::stats::mean(&logs);
            let sure = drop > scatter.margin(DECLINE_CONFIDENCE, own.len(), logs.len());
            (!logs.is_empty() && drop > -(1.0 - tolerance).ln()).then_some(Decline { count: *n, drop, sure })
        })
        .collect();
    Some((scatter, found))
}

/// The sure declines past `pick`, in words: the contention past the knee. Empty where there
/// is none, or the scatter is unknown.
fn decline_text(measured: &[(u64, Point)], pick: u64, tolerance: f64) -> String {
    let Some((scatter, found)) = declines(measured, pick, tolerance) else { return String::new() };
    let sure: Vec<String> = found.iter().filter(|d| d.sure).map(|d| d.text(pick)).collect();
    if sure.is_empty() {
        return String::new();
    }
    format!(
        "; {}: contention past the knee (each beyond the {}% tolerance and the {:.1}% scatter of a window, {:.0}% one-sided)",
        sure.join(", "),
        tolerance * 100.0,
        scatter.sd * 100.0,
        DECLINE_CONFIDENCE * 100.0
    )
}

/// The memory two points cost, KiB, by the figure they can be compared by (the server's own
/// pages, else the whole PSS): the median over each one's windows. None where either read none.
fn memory_of(a: &Point, b: &Point) -> Option<(f64, f64)> {
    let figure = crate::tune::point::compared_memory(&[a, b]);
    let of = |p: &Point| {
        let kib: Vec<f64> = p.samples.iter().filter_map(|s| s.memory.as_ref()).map(|m| figure(m) as f64).collect();
        let m = crate::stats::median(&kib);
        (m > 0.0).then_some(m)
    };
    Some((of(a)?, of(b)?))
}

/// The logs of a point's windows' throughput (those that served).
fn log_windows(p: &Point) -> Vec<f64> {
    p.samples.iter().map(|s| s.rps).filter(|&r| r > 0.0).map(f64::ln).collect()
}

/// Each window of a point as a point of its own (a round of a comparison).
fn windows_of(p: &Point) -> Vec<Point> {
    p.samples.iter().map(|s| Point { samples: vec![s.clone()], ..p.clone() }).collect()
}

/// The count that served the most, with its point.
fn best_of(measured: &[(u64, Point)]) -> Option<&(u64, Point)> {
    measured.iter().filter(|(_, p)| p.ok()).max_by(|a, b| a.1.rps().total_cmp(&b.1.rps()))
}

fn best_rps(measured: &[(u64, Point)]) -> f64 {
    measured.iter().filter(|(_, p)| p.ok()).map(|(_, p)| p.rps()).fold(0.0, f64::max)
}

/// The smallest count within `tolerance` of the best throughput.
pub fn knee(measured: &[(u64, Point)], tolerance: f64) -> Option<u64> {
    within_tolerance(measured, tolerance).first().copied()
}

/// The first count past the knee whose p99 is over 1.5 times the knee's.
fn p99_climbs_after(measured: &[(u64, Point)], knee: u64) -> Option<(u64, f64)> {
    let base = measured.iter().find(|(n, _)| *n == knee)?.1.p99();
    measured.iter().filter(|(n, p)| *n > knee && p.ok() && p.p99() > 1.5 * base).map(|(n, p)| (*n, p.p99())).next()
}

/// The workers step a judgement gives: `before` workers against `after`, its rounds and
/// points, the chosen challenger's point as `after` (the incumbent's when none was).
fn judged_step(
    j: &Judgement,
    before: impl std::fmt::Display,
    after: impl std::fmt::Display,
    adopted: bool,
    challenger: Option<usize>,
    effect: Option<crate::stats::Effect>,
    evidence: String,
) -> Step {
    Step {
        knob: "workers".into(),
        before_value: before.to_string(),
        after_value: after.to_string(),
        adopted,
        verdict: Some(j.verdict),
        effect,
        rounds: j.rounds,
        before: j.incumbent.clone(),
        after: j.chosen.map_or(j.incumbent.clone(), |i| j.challengers[i].point.clone()),
        candidates: j.challengers.iter().map(|c| c.point.clone()).collect(),
        challenger,
        evidence,
    }
}
