"""Parts 1 and 2 of bench/verdicts.py: the null decisions and the power tries, one `webtune
tune` over one knob each, interleaved in one schedule."""

import os
import statistics
from dataclasses import dataclass
from typing import Optional

from benchlib import progress

from .targets import LOAD_1S, real_target, target_file
from .workspace import run_tune

NULL_LAB_SHARE = 0.7
DECISION_TIMEOUT = 420.0      # one `webtune tune` with one knob: 10 rounds x 2 windows at most
LAB_NULL_CONFIG = {"workers": 2, "cpu": "1ms", "io_wait": "10ms"}
POWER_CONFIG = {"workers": 4, "cpu": "0ms"}
POWER_VALUES = ["10ms", "9.5ms"]


@dataclass
class Decision:
    """One `webtune tune` over one knob, and what it decided."""
    kind: str                 # lab-null | nginx-null | power
    knob: str
    values: list
    verdict: Optional[str] = None
    adopted: bool = False
    after_value: Optional[str] = None
    pct: Optional[float] = None
    low_pct: Optional[float] = None
    high_pct: Optional[float] = None
    rounds: int = 0
    windows: int = 0
    wall_s: float = 0.0
    measured_s: float = 0.0
    remeasured: int = 0
    interference_max: float = 0.0
    evidence: str = ""
    error: Optional[str] = None


def decision_target(ws, kind, values, real):
    if kind == "lab-null":
        return "backlog", target_file("lab", LAB_NULL_CONFIG, {"backlog": values}, LOAD_1S)
    if kind == "nginx-null":
        return "server_tokens", real_target(real, {"workers": 1}, {"server_tokens": values})
    return "io_wait", target_file("lab", POWER_CONFIG, {"io_wait": values}, LOAD_1S)


def decide(ws, webtune, kind, values, real):
    knob, text = decision_target(ws, kind, values, real)
    run = run_tune(ws, webtune, text, [], DECISION_TIMEOUT)
    d = Decision(kind, knob, values, wall_s=run.wall_s)
    o = run.outcome or {}
    points = o.get("points") or []
    d.windows = len(points)
    d.measured_s = sum(p.get("seconds", 0.0) for p in points)
    d.remeasured = sum(p.get("remeasured", 0) for p in points)
    d.interference_max = max((p.get("interference", 0.0) for p in points), default=0.0)
    steps = [s for s in o.get("steps") or [] if s.get("knob") == knob]
    if run.error or not steps:
        d.error = run.error or "no step for the knob in the outcome"
        return d
    s = steps[0]
    d.verdict, d.adopted, d.after_value = s.get("verdict"), s.get("adopted", False), s.get("after_value")
    d.rounds, d.evidence = s.get("rounds", 0), s.get("evidence", "")
    e = s.get("effect") or {}
    d.pct, d.low_pct, d.high_pct = e.get("pct"), e.get("low_pct"), e.get("high_pct")
    return d


def schedule(counts):
    """Interleaves the kinds: item j of a kind with n items sits at (j + 0.5) / n, so every
    kind is spread over the whole run; the value order alternates within each kind."""
    items = []
    for kind, (n, values) in counts.items():
        for j in range(n):
            order = values if j % 2 == 0 else list(reversed(values))
            items.append(((j + 0.5) / n, kind, order))
    items.sort(key=lambda x: (x[0], x[1]))
    return [(kind, order) for _, kind, order in items]


def run_decisions(ws, webtune, n_null, n_power, real):
    """The null decisions and the power tries, interleaved in one schedule."""
    nginx = real is not None and real.name == "nginx"
    n_lab = round(n_null * NULL_LAB_SHARE) if nginx else n_null
    counts = {
        "lab-null": (n_lab, ["511", "1024"]),
        "nginx-null": (n_null - n_lab, ["on", "off"]),
        "power": (n_power, list(POWER_VALUES)),
    }
    # The power tries keep the incumbent first: the change to judge is 10ms -> 9.5ms.
    plan = [(k, o if k != "power" else list(POWER_VALUES))
            for k, o in schedule({k: v for k, v in counts.items() if v[0] > 0})]
    decisions = []
    for i, (kind, values) in enumerate(plan):
        d = decide(ws, webtune, kind, values, real)
        decisions.append(d)
        what = (f"{d.verdict}, {effect_text(d)}, {d.rounds} rounds" if not d.error
                else f"FAILED: {d.error}")
        progress(f"  [{i + 1}/{len(plan)}] {kind} {d.knob} {values[0]} -> {values[1]}: {what}; "
                 f"{d.wall_s:.0f} s (others' CPU up to {100 * d.interference_max:.0f}%, "
                 f"{d.remeasured} windows re-measured); load {os.getloadavg()[0]:.2f}")
    return decisions


def effect_text(d):
    if d.pct is None:
        return "no effect figure"
    return f"{d.pct:+.1f}% [{d.low_pct:+.1f}%, {d.high_pct:+.1f}%]"


def mean(xs):
    xs = list(xs)
    return statistics.fmean(xs) if xs else float("nan")
