"""A grid reported: its tables under each budget, each tuner's steps, the bars (PASS/FAIL),
the grid's noise and random search beside them, and a summary of the rows."""

import statistics
from dataclasses import replace

from benchlib import check

from .grid import SCORE_BAR, fmt_config, same, size_kib
from .noise import RANDOM_DRAWS, UNSURE, grid_noise
from .random_search import random_search

TIME_BAR = 0.25


def mark_of(strategy):
    """The letter that marks a strategy's pick in the grid tables."""
    return strategy[:1].upper() or "T"


def print_grid_table(res, budget_kib, picks):
    """The grid's scores under one budget; * marks the best, a strategy's letter its pick
    (picks: strategy -> recommended configuration)."""
    keys = list(res.knobs)
    best_c, _ = res.best(budget_kib)

    def cell(c):
        s = res.score(c, budget_kib)
        wins = res.of(c)
        fit = sum(w.fits(budget_kib) and not w.error for w in wins)
        raw = statistics.median(w.rps for w in wins) if wins else 0.0
        mark = ("*" if c == best_c else "") + "".join(mark_of(k) for k, p in picks.items() if same(p, c))
        text = f"{s:.0f}" if fit == len(wins) else f"{s:.0f} ({raw:.0f}, fit {fit}/{len(wins)})"
        return text + mark

    print("marks: * the grid's best; " + ", ".join(f"{mark_of(k)} the pick of {k}" for k in picks))
    if len(keys) == 2:
        rows, cols = keys
        corner = f"{rows} \\ {cols}"
        head = f"{corner:<22}" + "".join(f"{str(v):>26}" for v in res.knobs[cols])
        print(head)
        print("-" * len(head))
        for rv in res.knobs[rows]:
            print(f"{str(rv):<22}" + "".join(f"{cell({rows: rv, cols: cv}):>26}" for cv in res.knobs[cols]))
    else:
        width = max(len(fmt_config(c)) for c in res.configs())
        print(f"{'configuration':<{width}} {'req/s (median)':>24} {'min-max':>14}")
        for c in res.configs():
            rps = [w.rps for w in res.of(c)]
            print(f"{fmt_config(c):<{width}} {cell(c):>24} "
                  f"{f'{min(rps):.0f}-{max(rps):.0f}' if rps else '-':>14}")


def report_grid(res, label, rounds, draws=RANDOM_DRAWS, seed=1):
    """The grid tables, each tuner's steps, the two ratios with their PASS/FAIL and the random
    search at the same measuring time, per budget (the first budget, or none, carries the bars
    for every tuner; the others are shown beside it); then a summary of the rows."""
    budgets = list(dict.fromkeys(t.memory for t in res.tuners))
    named = [m for m in budgets if m]
    print(f"\n== 3{label}. {res.name}: grid of {len(res.configs())} configurations x {res.rounds or rounds} "
          f"round(s) against the tuners ({', '.join(dict.fromkeys(t.strategy for t in res.tuners))})"
          + (f"; memory budgets {', '.join(named)}" if named else ""))
    grid_s = sum(w.seconds for w in res.base_windows())
    base_wall_s = res.base_wall_s or res.grid_wall_s
    print(f"grid: {len(res.windows)} windows, {sum(w.seconds for w in res.windows):.0f} s measuring "
          f"({res.grid_wall_s:.0f} s wall); score = median over the rounds of req/s, 0 unless the "
          f"workers fit in every round and every round measured")
    # The scores of the first rounds alone, shown beside those of all when there were more.
    base = replace(res, windows=res.base_windows()) if res.rounds > res.base_rounds else None
    if base:
        print(f"its first {res.base_rounds} rounds ({len(base.windows)} windows, {grid_s:.0f} s measuring, "
              f"{base_wall_s:.0f} s wall) are the grid the time bars compare with; {res.rounds - res.base_rounds} "
              f"more round(s) measured while its own noise could not judge a pick against the score bar "
              f"(cleared in {100 * UNSURE[0]:.0f}-{100 * UNSURE[1]:.0f}% of its resamples); the scores are over all "
              f"{res.rounds}")
    keys = list(res.knobs)
    if named and len(keys) == 2:
        cols = keys[1]
        uss = {}
        for w in res.windows:
            if not w.error and w.worker_uss_kib:
                uss.setdefault(w.config[cols], []).append(w.worker_uss_kib)
        print(f"worker USS, MiB (median, min-max of the grid's windows) by {cols}: " + ", ".join(
            f"{v}: {statistics.median(u) / 1024:.1f} ({min(u) / 1024:.1f}-{max(u) / 1024:.1f})"
            for v, u in uss.items()))
    for w in res.windows:
        if w.error:
            print(f"  grid window FAILED: {fmt_config(w.config)} round {w.round + 1}: {w.error}")
    most = max((int(v) for v in res.knobs.get("workers", [])), default=0)
    if any(t.strategy == "workers" for t in res.tuners) and res.connections < 2 * most:
        print(f"note: the workers strategy loads max(connections, 2 x the largest pool) = {2 * most} "
              f"clients, the grid {res.connections}: its windows are not the grid's")
    passed = True
    rows = []
    for bi, memory in enumerate(budgets):
        budget = size_kib(memory) if memory else None
        tuners = [t for t in res.tuners if t.memory == memory]
        print(f"\n-- {res.name}" + (f" at {memory}" if memory else "")
              + (" (the bars)" if bi == 0 else " (shown, no bar)"))
        print_grid_table(res, budget, {t.strategy: t.recommended(res.knobs) for t in tuners
                                       if not t.unavailable})
        best_c, best = res.best(budget)
        if budget is not None and "workers" in keys:
            largest = max(res.knobs["workers"])
            note = ("the best within the budget is not the largest pool"
                    if int(best_c["workers"]) < largest else "the best within the budget IS the largest pool")
            print(f"setup: best {fmt_config(best_c)} at {best:.0f} req/s; {note}")
        for t in tuners:
            print(f"tuner `{' '.join(t.args)}`:")
            if t.unavailable:
                print(f"  not available in this binary ({t.unavailable})")
                rows.append((t, None, None, best, None, None, "not available in this binary", None))
                continue
            if t.error:
                print(f"  error: {t.error}")
            o = t.outcome or {}
            points = o.get("points") or []
            for s in o.get("steps") or []:
                eff = s.get("effect")
                eff = f" {eff['pct']:+.1f}% [{eff['low_pct']:+.1f}%, {eff['high_pct']:+.1f}%]" if eff else ""
                print(f"  step {s['knob']}: {s['before_value']} -> {s['after_value']}, "
                      f"{s.get('verdict') or ('adopted' if s['adopted'] else 'kept')}{eff}, "
                      f"{s.get('rounds', 0)} rounds")
            for knob, value, why in o.get("evidence") or []:
                print(f"  evidence {knob}={value}: {why}")
            rec = t.recommended(res.knobs)
            tuner_s = t.measuring_s()
            true = res.score(rec, budget) if rec else None
            print(f"  {len(points)} points, {tuner_s:.0f} s measuring ({t.wall_s:.0f} s wall)")
            ratio = tuner_s / grid_s if grid_s else float("inf")
            wall_ratio = t.wall_s / base_wall_s if base_wall_s else float("inf")
            t.random = random_search(res, budget, tuner_s, draws, f"{seed}/{res.name}/{t.label}") \
                if tuner_s > 0 else None
            score_text = (f"{res.name}, {t.label}: the pick {fmt_config(rec) if rec else '(none)'} "
                          f"scores {true or 0:.0f} req/s = {100 * (true or 0) / best if best else 0:.1f}% "
                          f"of the grid's best ({fmt_config(best_c)}, {best:.0f})")
            h = res.h2h.get(fmt_config(rec)) if (rec and bi == 0) else None
            share = h.share() if h else None
            if share:
                est, low, high = share
                how = ("its interval clears the bar" if low >= SCORE_BAR or high < SCORE_BAR
                       else "its interval still straddles the bar")
                over = h.over_budget(budget) if budget is not None else 0
                spent = sum(w.seconds for pair in h.pairs for w in pair)
                print(f"shown: head to head after the grid, the pick against the grid's best in "
                      f"{len(h.ratios())} pairs of {h.window_s:g} s windows ({spent:.0f} s measuring, "
                      f"the best's windows shared by every pick): {100 * est:.1f}% "
                      f"(95% interval {100 * low:.1f}-{100 * high:.1f}%; {how})"
                      + (f"; the pick over the budget in {over} of its windows" if over else ""))
                score_text += f"; head to head {100 * est:.1f}% ({100 * low:.1f}-{100 * high:.1f}%)"
            elif h:
                print(f"shown: head to head after the grid: {len(h.ratios())} of its {len(h.pairs)} rounds "
                      f"measured both windows, under the two an interval needs; the grid's share is judged")
            time_text = (f"{res.name}, {t.label}: the tuner measured for {100 * ratio:.1f}% of the "
                         f"grid's time ({tuner_s:.0f} s vs {grid_s:.0f} s; wall {100 * wall_ratio:.1f}%)")
            if bi == 0:
                # The grid chose its best; where the pick was measured against it again, that
                # share (unbiased by the choice) is judged, the pick still fitting the grid.
                judged = share[0] if share else (true or 0) / best if best > 0 else 0.0
                ok_score = check(true is not None and best > 0 and judged >= SCORE_BAR,
                                 f"{score_text} >= {100 * SCORE_BAR:.0f}%")
                ok_time = check(bool(points) and ratio <= TIME_BAR, f"{time_text} <= {100 * TIME_BAR:.0f}%")
                passed &= ok_score and ok_time
                bars = f"{'PASS' if ok_score else 'FAIL'} / {'PASS' if ok_time else 'FAIL'}"
            else:
                print(f"shown: {score_text}")
                print(f"shown: {time_text}")
                bars = "(no bar)"
            if base and rec:
                base_c, base_best = base.best(budget)
                base_true = base.score(rec, budget) or 0
                all_s = sum(w.seconds for w in res.windows)
                print(f"shown: on the first {res.base_rounds} rounds alone the pick scores "
                      f"{100 * base_true / base_best if base_best else 0:.1f}% of their best "
                      f"({fmt_config(base_c)}, {base_best:.0f}); the tuner measured for "
                      f"{100 * tuner_s / all_s if all_s else 0:.1f}% of all {res.rounds} rounds' time")
            noise = grid_noise(res, rec, budget, draws, f"{seed}/{res.name}/{t.label}/noise")
            if noise:
                print(f"shown: the grid's own noise: its windows resampled {draws} times, the pick scores "
                      f"{noise['p5_pct']:.1f}-{noise['p95_pct']:.1f}% of the best (5th-95th percentile), "
                      f">= {100 * SCORE_BAR:.0f}% in {100 * noise['passing']:.0f}% of them")
            if t.random:
                r = t.random
                print(f"shown: random search at the same measuring time ({r['draws']} draws from the "
                      f"grid's windows, {r['mean_windows']:.1f} windows, {r['mean_s']:.0f} s on average): "
                      f"its pick scores {r['median_pct']:.1f}% of the best (median), "
                      f"{r['p10_pct']:.1f}% (10th percentile)")
            rows.append((t, rec, true, best, tuner_s, ratio, bars, share))
            if budget is not None:
                lenient_c, lenient_best = res.best(budget, lenient=True)
                if not same(lenient_c, best_c):
                    lenient_true = res.score(rec, budget, lenient=True) if rec else None
                    print(f"shown (lenient rule, no bar): the best would be {fmt_config(lenient_c)} at "
                          f"{lenient_best:.0f} req/s, fitting in only some rounds; the tuner's pick "
                          f"scores {100 * (lenient_true or 0) / lenient_best if lenient_best else 0:.1f}% of it")
    print_summary(res, label, rows)
    return passed


def print_summary(res, label, rows):
    """One row per tuner and, under it, the random search at its measuring time."""
    over = (f" (its first {res.base_rounds} rounds; the scores over all {res.rounds})"
            if res.rounds > res.base_rounds else "")
    print(f"\n-- summary of 3{label}, {res.name} (bars: pick >= {100 * SCORE_BAR:.0f}% of the best, "
          f"time <= {100 * TIME_BAR:.0f}% of the grid's{over})")
    head = (f"{'tuner':<28} {'pick':<40} {'% best':>7} {'h2h %':>7} {'meas. s':>8} {'% grid':>7}  "
            f"score / time bars")
    print(head)
    print("-" * len(head))
    for t, rec, true, best, tuner_s, ratio, bars, share in rows:
        if tuner_s is None:
            print(f"{t.label:<28} {bars}")
            continue
        pct = 100 * (true or 0) / best if best else 0.0
        h2h = f"{100 * share[0]:.1f}%" if share else "-"
        print(f"{t.label:<28} {(fmt_config(rec) if rec else '(none)')[:40]:<40} {pct:>6.1f}% {h2h:>7} "
              f"{tuner_s:>8.0f} {100 * ratio:>6.1f}%  {bars}")
        if t.random:
            r = t.random
            what = f"median of {r['draws']} draws; 10th pct"
            print(f"{'  random, same time':<28} {what:<40} {r['median_pct']:>6.1f}% {'':>7} "
                  f"{r['mean_s']:>8.0f}{'':>9}{r['p10_pct']:.1f}% (10th percentile)")
