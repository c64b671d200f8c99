"""What a grid's own windows say of its picks, resampled without measuring more: how sure
the grid is of a pick's share of its best, which picks it cannot yet judge (--sure-rounds),
and how often that stopping rule agrees with a fixed grid's every round (--truth-rounds)."""

import random
import statistics
from dataclasses import replace

from .grid import SCORE_BAR, barred, fmt_config, strict_score

RANDOM_DRAWS = 200
# A pick the grid's resampled noise puts over the score bar in more than the first share of
# the draws and fewer than the second is not yet judged: the grid measures another round.
UNSURE = (0.1, 0.9)
REPLAY_SHUFFLES = 100  # --truth-rounds: shuffles of the rounds the stopping rule is replayed on


def replay_sure_rule(res, most, shuffles, seed):
    """How often the stopping rule of --sure-rounds would have judged each barred pick as all
    of a fixed grid's rounds do (--truth-rounds): the rounds shuffled (seeded), the first
    `base_rounds` of them taken, then one more while `unsure_picks` says so, up to `most`;
    the pick's PASS or FAIL there against its PASS or FAIL over every round. The rule stops
    as soon as the resamples leave 10-90%, so a streak of lucky rounds can end it on the
    wrong side: this counts how often."""
    bars, budget = barred(res)
    picks = {t.label: t.recommended(res.knobs) for t in bars}
    picks = {k: v for k, v in picks.items() if v}

    def passes(r):
        _, best = r.best(budget)
        return {k: best > 0 and (r.score(c, budget) or 0) >= SCORE_BAR * best for k, c in picks.items()}

    truth = passes(res)
    rng = random.Random(f"{seed}/{res.name}/replay")
    order = list(range(res.rounds))
    agree = {k: 0 for k in picks}
    stops = []
    for _ in range(shuffles):
        rng.shuffle(order)
        k = res.base_rounds
        while True:
            taken = set(order[:k])
            sub = replace(res, windows=[w for w in res.windows if w.round in taken])
            if k >= min(most, res.rounds) or not unsure_picks(sub):
                break
            k += 1
        stops.append(k)
        for label, ok in passes(sub).items():
            agree[label] += ok == truth[label]
    return {"shuffles": shuffles, "most": min(most, res.rounds), "stops": stops,
            "truth": truth, "agree": agree}


def print_replay(res):
    r = res.replay
    stops = sorted(r["stops"])
    print(f"\n-- the --sure-rounds rule replayed on {r['shuffles']} shuffles of these {res.rounds} rounds "
          f"(the first {res.base_rounds}, then more while unsure, up to {r['most']}): it stopped after "
          f"{stops[0]}-{stops[-1]} rounds (median {statistics.median(stops):g}; at the cap in "
          f"{sum(k >= r['most'] for k in stops)})")
    for label, ok in r["truth"].items():
        print(f"shown: {res.name}, {label}: over all {res.rounds} rounds the pick "
              f"{'PASSES' if ok else 'FAILS'} the score bar; the rule judged it so in "
              f"{r['agree'][label]} of {r['shuffles']}")


def unsure_picks(res, draws=RANDOM_DRAWS, seed=1):
    """The barred rows (the first budget's) whose pick the grid cannot yet judge: resampled
    (grid_noise), it clears the score bar in more than 10% and fewer than 90% of the draws.
    Three windows a configuration at +-20% (grid (d)) put 16 workers over 95% of the best in
    12 of 19 grids, 12 workers in 13: a bar judged there is the grid's luck."""
    bars, budget = barred(res)
    unsure = []
    for t in bars:
        noise = grid_noise(res, t.recommended(res.knobs), budget, draws, f"{seed}/{res.name}/{t.label}/sure")
        if noise and UNSURE[0] < noise["passing"] < UNSURE[1]:
            unsure.append(t.label)
    return unsure


def grid_noise(res, pick, budget_kib, draws, seed):
    """How sure the grid itself is of the pick's share of its best: each configuration's
    windows resampled with replacement (as many as it has), the share recomputed, `draws`
    times, seeded. On a page whose windows scatter +-15% (grid (d)), three windows a
    configuration put the share's own 90% range across the 95% bar: a pick's PASS or FAIL
    there is partly the grid's luck, and this says how much."""
    windows = {fmt_config(c): ws for c in res.configs() if (ws := res.of(c))}
    if pick is None or not windows:
        return None
    rng = random.Random(seed)
    pick_key = fmt_config(pick)
    shares = []
    for _ in range(draws):
        scores = {key: strict_score([rng.choice(ws) for _ in ws], budget_kib) for key, ws in windows.items()}
        best = max(scores.values())
        shares.append(scores.get(pick_key, 0.0) / best if best > 0 else 0.0)
    shares.sort()
    return {"p5_pct": 100 * shares[int(0.05 * (draws - 1))], "p95_pct": 100 * shares[int(0.95 * (draws - 1))],
            "passing": sum(s >= SCORE_BAR for s in shares) / draws}
