"""After a grid: each barred pick that is not the grid's best, measured against that best
again in rounds of longer windows."""

import math
import statistics
from dataclasses import dataclass, field

from benchlib import progress, t_quantile

from .grid import SCORE_BAR, barred, fmt_config, measure_window, same

# After the grid, a barred pick that is not its best is measured against it again, in up to
# H2H_PAIRS rounds of one H2H_WINDOW_S-second window each (--head-to-head, --head-to-head-window):
# (d)'s 1 s windows scatter 7-11% (sd); 5 s windows hold 5x the requests, a launch's cost once.
H2H_PAIRS = 20
H2H_WINDOW_S = 5.0
H2H_MIN_PAIRS = 5        # before an interval clear of the bar may end a head-to-head


@dataclass
class HeadToHead:
    """A barred pick that is not the grid's best, measured against that best after the grid:
    rounds of one window each (longer than the grid's, the order alternating), the pick's
    share of the best estimated from these fresh pairs. The grid's best is the largest of
    noisy scores, so its score reads high (the winner's curse): against a plateau of equals a
    pick reads a few percent short of a best that is no better. Chosen by the grid, measured
    again here, the share is not biased by the choice."""
    pick: dict
    best: dict
    window_s: float
    pairs: list = field(default_factory=list)   # [pick window, best window] of one round
    settled: bool = False                       # the interval cleared the bar (either side)

    def ratios(self):
        return [p.rps / b.rps for p, b in self.pairs if not p.error and not b.error and p.rps > 0 and b.rps > 0]

    def share(self):
        """(estimate, low, high) of the pick's requests/s over the best's: the geometric mean of
        the pairs' ratios and its 95% t-interval; None under two pairs."""
        logs = [math.log(x) for x in self.ratios()]
        if len(logs) < 2:
            return None
        m = statistics.fmean(logs)
        half = t_quantile(0.95, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
        return math.exp(m), math.exp(m - half), math.exp(m + half)

    def over_budget(self, budget_kib):
        return sum(not p.error and not p.fits(budget_kib) for p, _ in self.pairs)


def head_to_head(ws, webtune, res, text_of, most_pairs, window_s):
    """Each barred pick that fits but is not the grid's best, measured against the best in
    rounds of `window_s`-second windows (the best and every open pick once per round, the
    order reversed on alternate rounds) until the interval of its share clears the score bar
    on either side (after H2H_MIN_PAIRS) or `most_pairs` rounds. Returns pick key -> HeadToHead."""
    rows, budget = barred(res)
    best_c, best = res.best(budget)
    picks = {}
    for t in rows:
        rec = t.recommended(res.knobs)
        if best > 0 and rec and not same(rec, best_c) and (res.score(rec, budget) or 0) > 0:
            picks.setdefault(fmt_config(rec), HeadToHead(rec, best_c, window_s))
    for r in range(most_pairs):
        open_picks = [h for h in picks.values() if not h.settled]
        if not open_picks:
            break
        order = [best_c] + [h.pick for h in open_picks]
        if r % 2:
            order.reverse()
        seen = {}
        for c in order:
            w = measure_window(ws, webtune, text_of(c, window_s), r, c)
            seen[fmt_config(c)] = w
            progress(f"  {res.name} head to head {r + 1} (up to {most_pairs}) {fmt_config(c)}: "
                     + (f"FAILED: {w.error}" if w.error else f"{w.rps:.0f} req/s, window {w.window_s:.1f} s")
                     + f"; others' CPU up to {100 * w.interference:.0f}%")
        for h in open_picks:
            h.pairs.append([seen[fmt_config(h.pick)], seen[fmt_config(best_c)]])
            s = h.share()
            h.settled = (s is not None and len(h.ratios()) >= H2H_MIN_PAIRS
                         and (s[1] >= SCORE_BAR or s[2] < SCORE_BAR))
    return picks
