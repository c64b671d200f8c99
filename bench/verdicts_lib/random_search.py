"""Random search at a tuner's measuring time, computed from a grid's own windows."""

import random
import statistics


def random_search(res, budget_kib, seconds, draws, seed):
    """Random search at the tuner's measuring time, from the grid's own windows (no more
    measuring): configurations drawn at random without replacement (all of them once before
    any twice), each taking one of its grid windows (the round drawn at random), while the
    windows' seconds stay within `seconds` (one window at least); the pick is the best
    admitted window seen, scored by its configuration's grid score. `draws` such searches,
    seeded: the median and the 10th percentile of the pick's share of the grid's best."""
    configs = [c for c in res.configs() if res.of(c)]
    _, best = res.best(budget_kib)
    if not configs or best <= 0:
        return None
    rng = random.Random(seed)
    shares, counts, spent_s = [], [], []
    for _ in range(draws):
        spent, n, seen, bag = 0.0, 0, None, []
        while n < 10000:
            if not bag:
                bag = list(configs)
                rng.shuffle(bag)
            w = rng.choice(res.of(bag.pop()))
            if n and spent + w.seconds > seconds:
                break
            spent, n = spent + w.seconds, n + 1
            if w.score(budget_kib) > 0 and (seen is None or w.rps > seen.rps):
                seen = w
        shares.append((res.score(seen.config, budget_kib) or 0.0) / best if seen else 0.0)
        counts.append(n)
        spent_s.append(spent)
    shares.sort()
    return {"draws": draws, "median_pct": 100 * statistics.median(shares),
            "p10_pct": 100 * shares[int(0.1 * (len(shares) - 1))],
            "mean_windows": statistics.fmean(counts), "mean_s": statistics.fmean(spent_s)}
