"""Part 2 of bench/verdicts.py reported: the power tries against the adoption bar."""

import statistics

from benchlib import check, wilson

from .decisions import POWER_VALUES, mean

POWER_BAR = 0.90


def report_power(decisions):
    tries = [d for d in decisions if d.kind == "power"]
    ideal = (10 / 9.5 - 1) * 100
    print(f"\n== 2. power: {len(tries)} tries of io_wait 10ms -> 9.5ms on an I/O-bound lab pool "
          f"(workers=4, cpu=0ms; ideally {ideal:+.1f}%)")
    if not tries:
        return check(False, "power: no try was run")
    ok = [d for d in tries if not d.error]
    adopted = [d for d in ok if d.adopted and d.after_value == POWER_VALUES[1]]
    pcts = sorted(d.pct for d in ok if d.pct is not None)
    head = (f"{'n':>4} {'adopted':>8} {'no effect':>10} {'worse':>6} {'undecided':>10} {'failed':>7} "
            f"{'effect median':>14} {'effect min-max':>16} {'rounds':>7} {'wall s':>7}")
    print(head)
    print("-" * len(head))
    print(f"{len(tries):>4} {len(adopted):>8} {sum(d.verdict == 'no effect' for d in ok):>10} "
          f"{sum(d.verdict == 'worse' for d in ok):>6} "
          f"{sum(d.verdict == 'undecided' for d in ok):>10} {len(tries) - len(ok):>7} "
          f"{f'{statistics.median(pcts):+.2f}%' if pcts else '-':>14} "
          f"{f'{pcts[0]:+.1f}%..{pcts[-1]:+.1f}%' if pcts else '-':>16} "
          f"{mean(d.rounds for d in ok):>7.2f} {mean(d.wall_s for d in tries):>7.1f}")
    for d in ok:
        if not d.adopted:
            print(f"  not adopted: {d.evidence}")
    for d in tries:
        if d.error:
            print(f"  FAILED: {d.error}")
    rate = len(adopted) / len(tries)
    low, high = wilson(len(adopted), len(tries))
    return check(rate >= POWER_BAR,
                 f"power: adopted {len(adopted)}/{len(tries)} = {100 * rate:.0f}% >= "
                 f"{100 * POWER_BAR:.0f}% (95% Wilson interval {100 * low:.0f}%-{100 * high:.0f}%; "
                 f"median measured effect {statistics.median(pcts) if pcts else float('nan'):+.2f}%)")
