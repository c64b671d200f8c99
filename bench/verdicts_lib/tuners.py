"""The tuner runs of a grid: which strategies under which budgets, and one run of them."""

from benchlib import progress

from .grid import TunerRun, fmt_config
from .workspace import run_tune

TUNER_TIMEOUT = 2400.0        # one tuner run over a grid
# The tuners each grid runs unless --strategies names them.
DEFAULT_STRATEGIES = {"a": ["one-at-a-time"], "b": ["workers"], "c": ["workers", "one-at-a-time"],
                      "d": ["one-at-a-time", "workers"], "e": ["one-at-a-time"],
                      "f": ["workers", "one-at-a-time"]}


def strategy_args(strategy):
    return ["--strategy", strategy]


def refused_strategy(run, strategy):
    """True when webtune refused the strategy's name before doing anything (clap's "invalid
    value 'joint' for '--strategy <STRATEGY>'", exit 2): a build without that strategy."""
    return (run.code == 2 and run.outcome is None and f"'{strategy}'" in run.stderr
            and "--strategy" in run.stderr)


def run_tuner(ws, webtune, res, t, tuner_text):
    progress(f"  {res.name}: the tuner ({' '.join(t.args)}) ...")
    run = run_tune(ws, webtune, tuner_text, t.args, TUNER_TIMEOUT)
    t.outcome, t.error, t.wall_s = run.outcome, run.error, run.wall_s
    if refused_strategy(run, t.strategy):
        t.unavailable = run.stderr.splitlines()[0] if run.stderr else "refused"
        t.error = None
        progress(f"  {res.name}: strategy {t.strategy} is not available in this binary "
                 f"({t.unavailable})")
        return
    progress(f"  {res.name}: the tuner recommends "
             f"{fmt_config(t.recommended(res.knobs) or {})} after {run.wall_s:.0f} s"
             + (f" ({run.error})" if run.error else ""))


# Strategies that search the pool alone: on a grid of several knobs their pick leaves the
# others at the file's defaults, which are not the grid's values (a row of "(none)").
ONE_KNOB_STRATEGIES = {"workers"}


def tuners_for(a, label, knobs, memories=(None,)):
    """The grid's tuner runs: each strategy (--strategies, else the grid's defaults) under
    each budget, the first budget first; a one-knob strategy only on a grid of one knob."""
    strategies = a.strategies or DEFAULT_STRATEGIES[label]
    if len(knobs) > 1:
        skipped = [st for st in strategies if st in ONE_KNOB_STRATEGIES]
        if skipped:
            progress(f"  grid ({label}): {', '.join(skipped)} not run: it searches one knob, the grid has {len(knobs)}")
        strategies = [st for st in strategies if st not in ONE_KNOB_STRATEGIES]
    return [TunerRun(m, (["--memory", m] if m else []) + strategy_args(st), st)
            for m in memories for st in strategies]
