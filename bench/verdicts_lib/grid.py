"""Part 3 of bench/verdicts.py, its data: a grid's windows (one of the tuner's windows of
one configuration each), the tuner runs over its knobs, and the scores read from them."""

import statistics
from dataclasses import dataclass, field
from typing import Optional

from benchlib import SetupError

from .workspace import run_tune

SCORE_BAR = 0.95
GRID_WINDOW_TIMEOUT = 300.0   # one window; recycling pools lengthen theirs up to 60 s


@dataclass
class Window:
    """One grid measurement: one of the tuner's windows of one configuration."""
    config: dict
    round: int
    rps: float = 0.0
    workers_seen: int = 0
    worker_uss_kib: int = 0
    parent_kib: int = 0               # the parent's shared + unique memory
    window_s: float = 0.0
    seconds: float = 0.0
    wall_s: float = 0.0
    interference: float = 0.0
    remeasured: int = 0
    error: Optional[str] = None

    def fit(self, budget_kib):
        """Workers that fit `budget_kib`, by the tuner's arithmetic (procmem/capacity.rs:
        (budget - parent shared - parent USS) / the largest worker USS); None without a
        budget or without memory figures."""
        if budget_kib is None or not self.worker_uss_kib:
            return None
        return max(0, budget_kib - self.parent_kib) // max(1, self.worker_uss_kib)

    def fits(self, budget_kib):
        """The tuner's admission (objective.rs `fits`): the pool fits the budget, its size
        being the configured one (the seeds' MaxClients rule) or more if more were seen."""
        fit = self.fit(budget_kib)
        pool = max(self.workers_seen, int(self.config.get("workers", 0) or 0))
        return fit is None or fit >= pool

    def score(self, budget_kib):
        return self.rps if (self.error is None and self.fits(budget_kib)) else 0.0


def size_kib(text):
    """"60MiB" -> 61440; KiB, MiB and GiB (and K, M, G) as webtune reads them."""
    t = text.strip()
    for suffix, mult in (("GiB", 1 << 20), ("MiB", 1 << 10), ("KiB", 1), ("G", 1 << 20),
                         ("M", 1 << 10), ("K", 1)):
        if t.endswith(suffix):
            return int(float(t[:-len(suffix)]) * mult)
    raise SetupError(f"--lab-memory: cannot read {text!r} (e.g. 60MiB)")


def measure_window(ws, webtune, text, rnd, config):
    """One configuration, one whole window: `webtune tune` with no knob and --repeats 1, and
    no --memory (under a budget the tuner ends a window at its first sample over it; the grid
    is the truth, measured in full, its fits computed here from the memory figures)."""
    args = ["--repeats", "1"]
    run = run_tune(ws, webtune, text, args, GRID_WINDOW_TIMEOUT)
    w = Window(dict(config), rnd, wall_s=run.wall_s)
    points = (run.outcome or {}).get("points") or []
    p = points[0] if points else None
    status = (p or {}).get("status") or {}  # {"status": "ok"} or {"status": "failed", "cause": ..}
    if run.error or p is None or status.get("status") != "ok" or not p.get("samples"):
        w.error = run.error or status.get("cause") or "no point measured"
        w.seconds = sum(x.get("seconds", 0.0) for x in points)
        return w
    s = p["samples"][0]
    w.rps = s["rps"]
    w.window_s = s.get("window_s") or 0.0
    w.seconds = p["seconds"]
    w.interference = p.get("interference", 0.0)
    w.remeasured = p.get("remeasured", 0)
    m = s.get("memory")
    if m:
        w.workers_seen, w.worker_uss_kib = m["workers"], m["worker_uss_max_kib"]
        w.parent_kib = m["parent_shared_kib"] + m["parent_uss_kib"]
    return w


@dataclass
class TunerRun:
    """One tuner run over a grid's knobs, under one memory budget (or none), with one
    strategy; `unavailable` when this webtune refused the strategy's name (a strategy another
    build has), and `random` the random search at the same measuring time (random_search)."""
    memory: Optional[str]
    args: list
    strategy: str = "one-at-a-time"
    outcome: Optional[dict] = None
    error: Optional[str] = None
    wall_s: float = 0.0
    unavailable: Optional[str] = None
    random: Optional[dict] = None

    @property
    def label(self):
        return self.strategy + (f" at {self.memory}" if self.memory else "")

    @property
    def budget_kib(self):
        return size_kib(self.memory) if self.memory else None

    def recommended(self, knobs):
        """The recommendation restricted to the grid's knobs."""
        rec = dict((k, v) for k, v in (self.outcome or {}).get("recommended") or [])
        return {k: rec[k] for k in knobs} if all(k in rec for k in knobs) else None

    def measuring_s(self):
        return sum(p.get("seconds", 0.0) for p in (self.outcome or {}).get("points") or [])


def strict_score(windows, budget_kib):
    """The median of the windows' requests/s, 0 unless every one measured and fit the budget."""
    if not windows or any(w.score(budget_kib) == 0.0 for w in windows):
        return 0.0
    return statistics.median(w.rps for w in windows)


@dataclass
class GridResult:
    name: str
    knobs: dict                       # knob -> values, the grid's axes
    label: str = ""
    connections: int = 0              # the grid's load
    windows: list = field(default_factory=list)
    tuners: list = field(default_factory=list)
    grid_wall_s: float = 0.0
    base_rounds: int = 0              # --grid-rounds: the grid the time bar compares with
    base_wall_s: float = 0.0
    rounds: int = 0                   # all measured: more while a pick was unsure (--sure-rounds)
    replay: dict = None               # --truth-rounds: the stopping rule replayed (replay_sure_rule)
    h2h: dict = field(default_factory=dict)  # pick key -> HeadToHead (--head-to-head)

    def base_windows(self):
        return [w for w in self.windows if w.round < self.base_rounds]

    def configs(self):
        out = [{}]
        for k in self.knobs:
            out = [dict(c, **{k: v}) for c in out for v in self.knobs[k]]
        return out

    def of(self, config):
        return [w for w in self.windows if all(str(w.config[k]) == str(v) for k, v in config.items())]

    def score(self, config, budget_kib, lenient=False):
        """The median of the rounds' requests/s when the configuration fits the budget in every
        round: a pool seen over the budget once can be there again (the seeds' MaxClients rule
        takes the largest process; the tuner's admission is the same). `lenient`: the median
        with 0 for a round that did not fit (the rule of the first version of this script,
        which admits a pool over the budget in one round of three)."""
        ws = self.of(config)
        if not ws:
            return None
        if lenient:
            return statistics.median(w.score(budget_kib) for w in ws)
        return strict_score(ws, budget_kib)

    def best(self, budget_kib, lenient=False):
        c = max(self.configs(), key=lambda c: self.score(c, budget_kib, lenient) or 0.0)
        return c, self.score(c, budget_kib, lenient) or 0.0


def barred(res):
    """The tuner rows that carry the bars: the first budget's (or none's), available ones."""
    if not res.tuners:
        return [], None
    first = res.tuners[0].memory
    rows = [t for t in res.tuners if t.memory == first and not t.unavailable]
    return rows, res.tuners[0].budget_kib


def fmt_config(c):
    return " ".join(f"{k}={v}" for k, v in c.items())


def same(a, b):
    return a is not None and all(str(a[k]) == str(b[k]) for k in b)
