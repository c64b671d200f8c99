"""A grid measured: interleaved rounds, its tuners after the middle one, more rounds while
a pick is unsure, then head to head."""

import time
from dataclasses import dataclass
from typing import Optional

from benchlib import progress

from .grid import fmt_config, measure_window
from .head_to_head import head_to_head
from .noise import unsure_picks
from .tuners import run_tuner

SURE_ROUNDS = 30


def run_grid(ws, webtune, res, text_of, plan, tuner_text):
    """The grid in interleaved rounds (order reversed on alternate rounds), the tuner runs
    (res.tuners, one per budget) after the middle round of the first `plan.base`; then more
    rounds, up to `plan.most` in all, while the grid's own noise cannot say whether a barred
    pick clears the score bar (`unsure_picks`); then the barred picks that are not the grid's
    best measured against it head to head (`head_to_head`). The fits under each budget are
    computed from each window's memory figures. `text_of(config, window_s=None)`: the target
    file of one configuration, with windows of `window_s` seconds when given."""
    base, most, truth = plan.base, plan.most, plan.truth
    res.base_rounds = base
    configs = res.configs()
    middle = (base + 1) // 2
    grid_s = 0.0
    r = 0
    while True:
        if truth:
            if r >= max(truth, base):
                break
            of = f"{r + 1}/{max(truth, base)}"
        else:
            unsure = unsure_picks(res) if base <= r < most else []
            if r >= base and not unsure:
                break
            of = f"{r + 1}/{base}" if r < base else f"{r + 1} (up to {most}: the grid cannot yet judge {', '.join(unsure)})"
        order = configs if r % 2 == 0 else list(reversed(configs))
        start = time.monotonic()
        for i, c in enumerate(order):
            w = measure_window(ws, webtune, text_of(c), r, c)
            res.windows.append(w)
            what = (f"FAILED: {w.error}" if w.error else
                    f"{w.rps:.0f} req/s, window {w.window_s:.1f} s, worker USS {w.worker_uss_kib} "
                    f"KiB x {w.workers_seen}, fit {w.fit(res.tuners[0].budget_kib) if res.tuners else None}")
            progress(f"  {res.name} round {of} [{i + 1}/{len(configs)}] "
                     f"{fmt_config(c)}: {what}; {w.wall_s:.0f} s, others' CPU up to "
                     f"{100 * w.interference:.0f}% ({w.remeasured} re-measured)")
        grid_s += time.monotonic() - start
        if r + 1 == middle:
            for t in res.tuners:
                run_tuner(ws, webtune, res, t, tuner_text)
        if r + 1 == base:
            res.base_wall_s = grid_s
        r += 1
    res.rounds = r
    res.grid_wall_s = grid_s
    if plan.pairs:
        res.h2h = head_to_head(ws, webtune, res, text_of, plan.pairs, plan.window_s)


@dataclass
class GridPlan:
    """How a grid is measured: its first rounds (the grid the time bar compares with), the cap
    of the rounds measured while a pick is unsure, a fixed count measured instead when asked,
    and the head-to-head's pairs at most per pick and its windows' seconds."""
    base: int
    most: int
    truth: Optional[int]
    pairs: int
    window_s: float


def rounds_of(a):
    return GridPlan(a.grid_rounds, a.sure_rounds, a.truth_rounds, a.head_to_head, a.head_to_head_window)
