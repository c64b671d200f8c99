"""Part 1 of bench/verdicts.py reported: the null decisions against the false-adoption bar."""

import statistics

from benchlib import check, wilson

from .decisions import mean

FALSE_ADOPTION_BAR = 0.01


def report_null(decisions):
    nulls = [d for d in decisions if d.kind.endswith("-null")]
    print(f"\n== 1. null decisions: {len(nulls)} (a knob whose values do nothing)")
    if not nulls:
        return check(False, "null decisions: none was run")
    head = (f"{'kind':<11} {'n':>4} {'adopted':>8} {'no effect':>10} {'worse':>6} {'undecided':>10} "
            f"{'cheaper':>8} {'failed':>7} {'0 in CI':>8} {'rounds':>7} {'wall s':>7} {'meas. s':>8} "
            f"{'re-meas.':>8}")
    print(head)
    print("-" * len(head))
    groups = [(k, [d for d in nulls if d.kind == k]) for k in ("lab-null", "nginx-null")]
    groups = [(k, ds) for k, ds in groups if ds] + [("all", nulls)]
    for kind, ds in groups:
        ok = [d for d in ds if not d.error]
        covered = [d for d in ok if d.low_pct is not None and d.low_pct <= 0 <= d.high_pct]
        with_ci = [d for d in ok if d.low_pct is not None]
        print(f"{kind:<11} {len(ds):>4} {sum(d.adopted for d in ok):>8} "
              f"{sum(d.verdict == 'no effect' for d in ok):>10} {sum(d.verdict == 'worse' for d in ok):>6} "
              f"{sum(d.verdict == 'undecided' for d in ok):>10} "
              f"{sum(d.verdict == 'cheaper' for d in ok):>8} {len(ds) - len(ok):>7} "
              f"{f'{len(covered)}/{len(with_ci)}':>8} {mean(d.rounds for d in ok):>7.2f} "
              f"{mean(d.wall_s for d in ds):>7.1f} {mean(d.measured_s for d in ds):>8.1f} "
              f"{mean(d.remeasured for d in ds):>8.1f}")
    for kind, ds in groups[:-1]:
        for first in sorted({d.values[0] for d in ds}):
            sub = [d for d in ds if d.values[0] == first and not d.error]
            print(f"  {kind}, incumbent {first}: {sum(d.adopted for d in sub)} adopted, "
                  f"{sum(d.verdict == 'no effect' for d in sub)} no effect, "
                  f"{sum(d.verdict == 'worse' for d in sub)} worse, "
                  f"{sum(d.verdict == 'undecided' for d in sub)} undecided; median effect "
                  f"{statistics.median([d.pct for d in sub if d.pct is not None] or [float('nan')]):+.2f}%")
    for d in nulls:
        if d.adopted or d.error:
            print(f"  {'ADOPTED' if d.adopted else 'FAILED'} ({d.kind} {d.values}): "
                  f"{d.error or d.evidence}")
    ok = [d for d in nulls if not d.error]
    k = sum(d.adopted for d in ok)
    rate = k / len(ok) if ok else 1.0
    low, high = wilson(k, len(ok))
    print(f"false adoptions: {k}/{len(ok)} = {100 * rate:.1f}% (95% Wilson interval "
          f"{100 * low:.1f}%-{100 * high:.1f}%; upper bound {100 * high:.1f}%)")
    passed = check(bool(ok) and rate <= FALSE_ADOPTION_BAR,
                   f"null: false-adoption rate {100 * rate:.1f}% <= {100 * FALSE_ADOPTION_BAR:.0f}% "
                   f"({k} of {len(ok)} decisions; 95% upper bound {100 * high:.1f}%)")
    if len(ok) < len(nulls):
        passed &= check(False, f"null: {len(nulls) - len(ok)} decision(s) failed to run")
    return passed
