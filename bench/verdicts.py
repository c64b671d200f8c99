#!/usr/bin/env python3
"""The tuner's decisions against the truth: how often `webtune tune` adopts a knob that does
nothing, how often it adopts a real +5% change, and how close its recommendation comes to the
best of an exhaustive grid, for what share of the grid's measuring time.

What it measures
    1. Null decisions (--null N, default 100): N runs of `webtune tune --json` with one knob
       whose values do nothing: about 70% on the lab (`backlog = [511, 1024]`; workers=2,
       cpu=1ms, io_wait=10ms, 16 connections, 1 s windows), the rest on nginx
       (`server_tokens = ["on", "off"]`: one header shorter, serving a 1 KiB file; workers=1,
       access log off, same load). The value order alternates from one decision to the next,
       so either value is the incumbent half of the time. Reported: adopted / no effect /
       worse / undecided, the false-adoption rate with its 95% Wilson upper bound, how often the 99%
       interval held 0, mean rounds and mean seconds per decision (wall time of the whole
       `webtune tune`, and the sum of its points' seconds).
       Target: false adoptions <= 1% of the decisions (the tuner adopts on the lower end of a
       99% interval, so its nominal rate is at most 0.5% before sequential looks).
    2. Power (--power N, default 20): N runs with a real +5% change: the lab as an I/O-bound
       pool (workers=4, cpu=0ms) with `io_wait = ["10ms", "9.5ms"]` (the first is the
       incumbent; ideally 10/9.5 = +5.3%). Reported: the adoption rate (target >= 90%) and the
       measured effect's median and range.
    3. Grids (--grid): the exhaustive truth against the tuner.
       (a) the lab with workers [1,2,3,4,6,8] x max_requests [0,20,100,500]; each request
           dirties 1 MiB of a 16 MiB preload (a worker's unique memory reaches ~16 MiB within
           16 requests of its fork, and a recycled worker pays that again) and leaks 64 KiB
           (recycling bounds that part); cpu 0.2ms, io_wait 2ms, 16 connections, 1 s windows;
           under each budget of --lab-memory (default 60MiB,132MiB). The first carries the
           bars: the workers' unique memory binds so that the best configuration within it is
           not the largest pool (the script says when it is); the second is looser (memory
           binds on pools that never recycle, not on those that do), shown without a bar. Every configuration is measured once per round, order reversed on
           alternate rounds, --grid-rounds rounds (3); a measurement is `webtune tune` with
           no knob and --repeats 1, i.e. exactly one of the tuner's windows (a fresh launch,
           the same warm-up, the same lengthening of windows for recycling workers, the same
           memory sampling), but without --memory: measured in full even when its workers do
           not fit (the tuner stops such a window at its first sample over the budget). A round's score is its requests/s, or 0 when its workers do not
           fit the budget (the tuner's own admission, recomputed for each budget from the
           window's memory figures: (budget - parent shared - parent USS) / the largest worker
           USS < the workers seen); a configuration's score is the median over the rounds
           when it fits in every round, else 0 (a pool seen over the budget once can be there
           again: the seeds' rule takes the largest process; the tuner admits the same way).
           The first version of this script took the median with 0 for the rounds that did
           not fit, which admits a pool over the budget in one round of three; that
           "lenient" best is printed beside, without a bar.
           Then `webtune tune` one-at-a-time over both knobs with the same --memory, once per
           budget, run between the grid's rounds (after the middle one) so that drift hits
           both alike.
       (b) a worker sweep of a real server: nginx worker_processes [1,2,3,4] (gunicorn
           --workers when nginx is missing), the same grid of single windows at the
           connections the workers strategy uses, against `webtune tune --strategy workers`.
       (c) gunicorn (sync workers) on a WSGI app written into the temp dir that spends ~2 ms of
           CPU (a busy loop on the thread's CPU clock) then sleeps 8 ms per request; workers
           [1,2,3,4,6,8,10,12,16,20,24], 64 connections: throughput rises with the pool to a
           knee (the CPUs) and then stays. Tuners: --strategy workers and one-at-a-time.
       (d) PHP-FPM (pm static, workers = pm.max_children) behind its nginx front, on a PHP page
           written into the temp dir whose cost is heavy-tailed: 97% of the requests spend 1-2
           ms of CPU (getrusage), 3% spend 50 ms, then every one waits 4 ms; workers
           [1,2,3,4,6,8,12,16], 32 connections. The tail makes a 1 s window's throughput
           scatter (about 10% standard deviation expected from the tail alone at ~600 req/s,
           i.e. about +-20% between windows). Tuners: one-at-a-time and --strategy workers.
       (e) a three-knob space on Apache prefork with mod_perl: the preloaded handler of
           examples/apps/perl (read only) at /hello?io=2 (a 2 ms wait), workers [2,4,8,16] x
           max_requests [0,50,1000] (MaxConnectionsPerChild) x keepalive [on,off], 24
           configurations, 16 connections. Tuner: one-at-a-time.
       (f) a curve that falls past the knee (issue 51): PHP-FPM (pm static) behind nginx on a
           CPU-bound page, 2 ms of CPU then 0.3 ms under a lock that the waiting workers poll
           while burning CPU (flock LOCK_NB in a loop, 50 us of CPU between tries: a spin lock,
           a retry loop); workers [1,2,3,4,6,8,12,16,24,32], 64 connections. On 2 CPUs the
           pool rises to 4-8 workers; past that the pollers take the CPU the lock's holder
           needs, and 16-32 workers serve 15-30% less. Tuners: --strategy workers and
           one-at-a-time.
       Every grid is measured the same way (single windows, interleaved rounds, order reversed
       on alternate rounds, the tuners after the middle round). Then, while the grid's own
       noise (below) cannot judge a barred row's pick against the score bar (it clears 95% in
       more than 10% and fewer than 90% of the resamples), the grid measures another round, up
       to --sure-rounds in all (30): the scores are over all its rounds, the time bar compares
       with its first --grid-rounds (the grid a user would run), and both are printed. Grid (d)'s
       1 s windows scatter +-20%: with three a configuration 16 workers cleared 95% of the best
       in 12 of 19 grids and 12 workers in 13, so a pick's PASS there was the grid's luck.
       Then head to head: each barred pick that fits but is not the grid's best is measured
       against that best again, in rounds of one 5 s window each (--head-to-head-window; the
       order alternating), until the 95% interval of its share (the geometric mean of the
       rounds' ratios, Student's t) clears the score bar on either side after 5 rounds, or
       --head-to-head rounds (20). The grid's best is the largest of noisy scores, so it reads
       high (the winner's curse): in (d)'s 30-round grid of stop 43, 16 workers read 94.3% of
       12 by the medians, and the rounds' own ratios 97.3% (92.9-101.8%). Where it ran, the
       score bar judges the head-to-head's share; the grid's share is printed beside.
       --strategies runs the named tuners on every grid asked for, one row each (default: the
       tuners named above); a strategy this webtune refuses by name (exit 2, "invalid value
       ... for '--strategy'") is reported as "not available in this binary" and the run goes on.
       Reported for each grid and each tuner: the recommended configuration's true score (its
       grid score) as % of the grid's best and, where it ran, the head-to-head's share (target
       >= 95%, on the head-to-head's share where it ran), and the tuner's measuring time (the
       sum of its points' seconds) as % of the grid's (target <= 25%); wall times beside them.
       Both bars apply to every tuner row of every grid (the first budget's for grid (a)).
       Beside each tuner row, random search at the same measuring time, computed from the
       grid's own windows without measuring more: configurations drawn at random (seeded,
       without replacement until all were drawn), each taking one of its grid windows (the
       round drawn at random), while the windows' seconds stay within the tuner's (one window
       at least); its pick is the best admitted window seen, scored by its configuration's
       grid score; --random-draws such searches (200): the median and the 10th percentile of
       the pick's share of the best. Beside it, the grid's own noise: each configuration's
       windows resampled with replacement (--random-draws times, seeded), the pick's share of
       the best recomputed: its 5th-95th percentile, and how often it clears the 95% bar (on a
       page whose windows scatter +-15%, three windows a configuration cannot tell 92% from
       100%). A summary table per grid lists the rows.

How
    Every webtune runs in its own session, with WEBTUNE_DB, XDG_RUNTIME_DIR (the servers' run
    directories), the journals and the target files in one private temp directory, removed
    at the end; each is bounded in time (stopped with SIGTERM, then SIGKILL), and after each
    one whatever a dead webtune left running (recorded in its run directory) is stopped.
    Progress goes to stderr; tables and PASS/FAIL lines to stdout. --save FILE writes every
    decision and grid measurement as JSON.

Usage
    python3 bench/verdicts.py                   # all three parts, grids (a) to (f)
    python3 bench/verdicts.py --quick           # 6 null, 3 power, small grids of 1 round
    python3 bench/verdicts.py --null 100        # only the null decisions (N of them)
    python3 bench/verdicts.py --power 20        # only the power tries
    python3 bench/verdicts.py --grid            # only the grids, all six
    python3 bench/verdicts.py --grids c,d       # only the grids named (a to f)
    python3 bench/verdicts.py --grids e --strategies one-at-a-time,workers,joint
                                                # several tuners on a grid, a row each
    python3 bench/verdicts.py --null --power    # the parts named, default counts
    python3 bench/verdicts.py --grids c,d --truth-rounds 30
                                                # fixed grids of 30 rounds, and the --sure-rounds
                                                # rule replayed on them (how often it agrees)
    (--grid-rounds N, 3; --sure-rounds N, 30; --truth-rounds N; --head-to-head N, 20;
     --head-to-head-window S, 5; --random-draws N, 200; --seed N; --lab-memory 60MiB,132MiB;
     --save FILE)

    Time of a full grid, 3 rounds, with its tuners (estimates from 1-round smoke runs on a
    busy machine, configurations x rounds x seconds per window, not measurements): a window is
    ~3-4 s with launch and warm-up; recycling pools lengthen theirs. (a) 24 x 3 x ~3.5 s +
    two tuners: ~8-10 min; (b) 4 x 3 x 3 s + one: ~1.5 min; (c) 11 x 3 x ~2.5 s + two: ~4-6
    min; (d) 8 x 3 x ~3.5 s + two: ~3-4 min; (e) per round 8 x 3.5 s (max_requests 0) + 4 x
    ~22 s (50, keepalive off) + 4 x ~4 s (50, on) + 8 x ~18 s (1000): ~4.5 min, x 3, + the
    tuner (~5-10 min): ~20-25 min; (f) 10 x 3 x ~4-7 s + two: ~5 min. All six: ~45-50 min;
    with the null and power parts about 75 min.

Exit status: 0 when every target was met, 1 when one was missed, 2 on a setup error, 130
when interrupted. Everything it starts is stopped at the end, on error and on Ctrl-C/SIGTERM.
"""

import argparse
import json
import math
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Optional

from benchlib import SetupError, check, progress, run_main, signal_group, stop_group, t_quantile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BODY_BYTES = 1024

NULL_LAB_SHARE = 0.7
FALSE_ADOPTION_BAR = 0.01
POWER_BAR = 0.90
SCORE_BAR = 0.95
TIME_BAR = 0.25

DECISION_TIMEOUT = 420.0      # one `webtune tune` with one knob: 10 rounds x 2 windows at most
GRID_WINDOW_TIMEOUT = 300.0   # one window; recycling pools lengthen theirs up to 60 s
TUNER_TIMEOUT = 2400.0        # one tuner run over a grid

LAB_GRID_WORKERS = [1, 2, 3, 4, 6, 8]
LAB_GRID_MAX_REQUESTS = [0, 20, 100, 500]
LAB_GRID_QUICK = ([1, 4, 8], [0, 100])
REAL_GRID_WORKERS = [1, 2, 3, 4]
LAB_MEMORY = "60MiB,132MiB"
GUNICORN_GRID_WORKERS = [1, 2, 3, 4, 6, 8, 10, 12, 16, 20, 24]
GUNICORN_GRID_QUICK = [1, 4, 12]
GUNICORN_CONNECTIONS = 64
PHP_GRID_WORKERS = [1, 2, 3, 4, 6, 8, 12, 16]
PHP_GRID_QUICK = [1, 4, 8]
PHP_CONNECTIONS = 32
KNEE_GRID_WORKERS = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
KNEE_GRID_QUICK = [1, 2, 8, 32]
KNEE_CONNECTIONS = 64
APACHE_GRID = {"workers": [2, 4, 8, 16], "max_requests": [0, 50, 1000], "keepalive": ["on", "off"]}
APACHE_GRID_QUICK = {"workers": [2, 8], "max_requests": [0, 1000], "keepalive": ["on", "off"]}
APACHE_CONNECTIONS = 16
GRIDS = "abcdef"
# The tuners each grid runs unless --strategies names them.
DEFAULT_STRATEGIES = {"a": ["one-at-a-time"], "b": ["workers"], "c": ["workers", "one-at-a-time"],
                      "d": ["one-at-a-time", "workers"], "e": ["one-at-a-time"],
                      "f": ["workers", "one-at-a-time"]}
RANDOM_DRAWS = 200
# A pick the grid's resampled noise puts over the score bar in more than the first share of
# the draws and fewer than the second is not yet judged: the grid measures another round.
UNSURE = (0.1, 0.9)
SURE_ROUNDS = 30
# After the grid, a barred pick that is not its best is measured against it again, in up to
# H2H_PAIRS rounds of one H2H_WINDOW_S-second window each (--head-to-head, --head-to-head-window):
# (d)'s 1 s windows scatter 7-11% (sd); 5 s windows hold 5x the requests, a launch's cost once.
H2H_PAIRS = 20
H2H_WINDOW_S = 5.0
REPLAY_SHUFFLES = 100  # --truth-rounds: shuffles of the rounds the stopping rule is replayed on


# ---------------------------------------------------------------------------------------------
# Processes


def owner_line(pid):
    """"pid starttime", as webtune writes a run directory's owner file; None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    rest = stat[stat.rfind(")") + 2:].split()
    return f"{pid} {rest[19]}" if len(rest) > 19 else None


class Workspace:
    """The private temp directory: target files, journals, the history database and the
    servers' run directories. `env` is the environment every webtune gets."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="webtune-verdicts-")
        self.run_base = os.path.join(self.dir, "run")
        os.makedirs(self.run_base, mode=0o700)
        self.env = dict(os.environ, WEBTUNE_DB=os.path.join(self.dir, "webtune.db"),
                        XDG_RUNTIME_DIR=self.run_base)
        self.serial = 0
        self.docroot = os.path.join(self.dir, "html")
        os.makedirs(self.docroot)
        with open(os.path.join(self.docroot, "1k.html"), "w") as f:
            f.write("x" * BODY_BYTES)
        with open(os.path.join(self.docroot, "index.html"), "w") as f:
            f.write("<html><body>verdicts</body></html>\n")
        for path, mode in ((self.dir, 0o755), (self.docroot, 0o755)):
            os.chmod(path, mode)

    def path(self, stem, ext):
        self.serial += 1
        return os.path.join(self.dir, f"{stem}-{self.serial:04d}.{ext}")

    def reap_leftovers(self):
        """Stops the process groups recorded in run directories whose webtune is gone (as
        after a SIGKILL), as webtune's own next launch would, and removes the directories."""
        base = os.path.join(self.run_base, "webtune")
        try:
            entries = os.listdir(base)
        except OSError:
            return
        for name in entries:
            d = os.path.join(base, name)
            if not name.startswith("run-") or not os.path.isdir(d):
                continue
            try:
                with open(os.path.join(d, "owner")) as f:
                    owner = f.read().strip()
            except OSError:
                owner = ""
            pid = owner.split()[0] if owner else ""
            if pid.isdigit() and owner_line(int(pid)) == owner:
                continue  # its webtune is alive and will stop it
            try:
                with open(os.path.join(d, "groups")) as f:
                    groups = [int(line) for line in f if line.strip().isdigit()]
            except OSError:
                groups = []
            for pgid in groups:
                signal_group(pgid, signal.SIGTERM)
            if groups:
                time.sleep(2.0)
            for pgid in groups:
                signal_group(pgid, signal.SIGKILL)
            shutil.rmtree(d, ignore_errors=True)

    def remove(self):
        self.reap_leftovers()
        shutil.rmtree(self.dir, ignore_errors=True)


@dataclass
class TuneRun:
    """One `webtune tune`: its outcome (the parsed JSON) or why there is none."""
    outcome: Optional[dict]
    error: Optional[str]
    wall_s: float
    code: Optional[int] = None    # the exit status (None when timed out)
    stderr: str = ""


def run_tune(ws, webtune, target_text, args, timeout):
    """Writes the target file, runs `webtune tune FILE --json --quiet --journal J ARGS` in the
    workspace, bounded by `timeout`, and returns a TuneRun."""
    target = ws.path("target", "toml")
    with open(target, "w") as f:
        f.write(target_text)
    argv = [webtune, "tune", target, "--json", "--quiet", "--journal", ws.path("journal", "jsonl")]
    argv += args
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(argv, cwd=ws.dir, env=ws.env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, start_new_session=True)
        timed_out = False
        try:
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
        finally:
            stop_group(proc, grace=15.0)  # webtune may take 10 s to stop its servers
            ws.reap_leftovers()
        wall = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace").strip()
    if timed_out:
        return TuneRun(None, f"timed out after {timeout:.0f} s", wall, None, stderr)
    code = proc.returncode
    try:
        outcome = json.loads(stdout)
    except ValueError:
        return TuneRun(None, f"exit {code}, no JSON: {stderr[-300:]}", wall, code, stderr)
    if code != 0:
        return TuneRun(outcome, f"exit {code}: {stderr[-300:]}", wall, code, stderr)
    return TuneRun(outcome, None, wall, code, stderr)


# ---------------------------------------------------------------------------------------------
# Target files


def toml_value(v):
    return str(v) if isinstance(v, int) else json.dumps(str(v))


def target_file(adapter, config, knobs, load, app=None, ready=None):
    """A target file: [target], [target.config], [knobs] (values in order), [load]."""
    lines = ["[target]", f'adapter = "{adapter}"']
    if app:
        lines.append(f"app = {json.dumps(app)}")
    if ready:
        lines.append(f"ready = {json.dumps(ready)}")
    lines += ["", "[target.config]"]
    lines += [f"{k} = {toml_value(v)}" for k, v in config.items()]
    if knobs:
        lines += ["", "[knobs]"]
        lines += [f"{k} = [{', '.join(toml_value(v) for v in vals)}]" for k, vals in knobs.items()]
    lines += ["", "[load]"]
    lines += [f"{k} = {toml_value(v)}" for k, v in load.items()]
    return "\n".join(lines) + "\n"


LOAD_1S = {"connections": 16, "duration": "1s"}


def with_window(load, window_s):
    """The [load] table with windows of `window_s` seconds (the head-to-head's), or as it is."""
    return dict(load, duration=f"{window_s:g}s") if window_s else load
LAB_NULL_CONFIG = {"workers": 2, "cpu": "1ms", "io_wait": "10ms"}
POWER_CONFIG = {"workers": 4, "cpu": "0ms"}
POWER_VALUES = ["10ms", "9.5ms"]
LAB_GRID_CONFIG = {"cpu": "0.2ms", "io_wait": "2ms", "preload_mb": 16, "dirty_kb": 1024,
                   "leak_kb": 64}


@dataclass
class Real:
    """The real server of the null decisions (nginx only) and of grid (b)."""
    name: str
    adapter: str
    app: str
    ready: str
    path: str
    config: dict


def real_server(ws, prefer):
    """nginx when installed (or asked for), else gunicorn; None when neither is."""
    if prefer in ("auto", "nginx") and shutil.which("nginx"):
        return Real("nginx", "nginx", ws.docroot, "/1k.html", "/1k.html", {"access_log": "off"})
    app = os.path.join(ROOT, "examples", "apps", "wsgi", "app.py")
    if prefer in ("auto", "gunicorn") and shutil.which("gunicorn") and os.path.exists(app):
        return Real("gunicorn", "gunicorn", app, "/", "/", {})
    return None


def real_target(real, config, knobs):
    load = dict(LOAD_1S, path=real.path)
    return target_file(real.adapter, dict(real.config, **config), knobs, load, app=real.app,
                       ready=real.ready)


# ---------------------------------------------------------------------------------------------
# Parts 1 and 2: decisions


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


def wilson(k, n, z=1.959964):
    """The 95% Wilson score interval of k successes in n."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def mean(xs):
    xs = list(xs)
    return statistics.fmean(xs) if xs else float("nan")


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


# ---------------------------------------------------------------------------------------------
# Part 3: grids


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


def barred(res):
    """The tuner rows that carry the bars: the first budget's (or none's), available ones."""
    if not res.tuners:
        return [], None
    first = res.tuners[0].memory
    rows = [t for t in res.tuners if t.memory == first and not t.unavailable]
    return rows, res.tuners[0].budget_kib


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


def fmt_config(c):
    return " ".join(f"{k}={v}" for k, v in c.items())


def same(a, b):
    return a is not None and all(str(a[k]) == str(b[k]) for k in b)


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


def grid_lab(ws, webtune, a):
    workers, max_requests = LAB_GRID_QUICK if a.quick else (LAB_GRID_WORKERS, LAB_GRID_MAX_REQUESTS)
    res = GridResult("lab workers x max_requests", {"workers": workers, "max_requests": max_requests})
    budgets = [b.strip() for b in a.lab_memory.split(",") if b.strip()]
    for b in budgets:
        size_kib(b)  # a bad size is a setup error before anything runs
    res.tuners = tuners_for(a, "a", res.knobs, budgets)
    res.connections = LOAD_1S["connections"]

    def text_of(c, window_s=None):
        return target_file("lab", dict(LAB_GRID_CONFIG, **c), {}, with_window(LOAD_1S, window_s))

    tuner_text = target_file("lab", LAB_GRID_CONFIG, res.knobs, LOAD_1S)
    run_grid(ws, webtune, res, text_of, rounds_of(a), tuner_text)
    return res


def grid_real(ws, webtune, a, real):
    res = GridResult(f"{real.name} workers", {"workers": REAL_GRID_WORKERS})
    res.tuners = tuners_for(a, "b", res.knobs)
    # The workers strategy loads every count with max(connections, 2 x the largest) clients.
    conns = max(LOAD_1S["connections"], 2 * max(REAL_GRID_WORKERS))
    res.connections = conns

    def text(config, knobs, window_s=None):
        load = with_window(dict(LOAD_1S, connections=conns, path=real.path), window_s)
        return target_file(real.adapter, dict(real.config, **config), knobs, load, app=real.app,
                           ready=real.ready)

    run_grid(ws, webtune, res, lambda c, w=None: text(c, {}, w), rounds_of(a), text({}, res.knobs))
    return res


def have_command(name):
    return shutil.which(name) or os.access(f"/usr/sbin/{name}", os.X_OK)


SLEEPY_WSGI = '''"""verdicts.py grid (c): about 2 ms of CPU, then 8 ms waiting, per request."""
import time


def app(environ, start_response):
    end = time.thread_time() + 0.002
    while time.thread_time() < end:
        pass
    time.sleep(0.008)
    body = b"ok\\n"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
'''


def grid_gunicorn(ws, webtune, a):
    """(c) gunicorn's sync workers on a WSGI app of 2 ms CPU + 8 ms wait, 64 connections:
    throughput rises with the pool to a knee (the two cores), then stays."""
    if not have_command("gunicorn"):
        return None
    app = os.path.join(ws.dir, "sleepy.py")
    with open(app, "w") as f:
        f.write(SLEEPY_WSGI)
    workers = GUNICORN_GRID_QUICK if a.quick else GUNICORN_GRID_WORKERS
    res = GridResult("gunicorn workers (2 ms CPU + 8 ms wait)", {"workers": workers})
    res.tuners = tuners_for(a, "c", res.knobs)
    res.connections = GUNICORN_CONNECTIONS
    load = {"connections": GUNICORN_CONNECTIONS, "duration": "1s", "path": "/"}

    def text(config, knobs, window_s=None):
        return target_file("gunicorn", config, knobs, with_window(load, window_s), app=app, ready="/")

    run_grid(ws, webtune, res, lambda c, w=None: text(c, {}, w), rounds_of(a), text({}, res.knobs))
    return res


# Most requests 1-2 ms of CPU, HEAVY in 10000 of them 50 ms, then a 4 ms wait (a database's
# answer): the heavy tail scatters a 1 s window's throughput (measured: see the docstring).
NOISY_PHP = '''<?php
// verdicts.py grid (d): 1-2 ms of CPU for most requests, 50 ms for a few, then a 4 ms wait.
function cpu_us() {
    $u = getrusage();
    return ($u["ru_utime.tv_sec"] + $u["ru_stime.tv_sec"]) * 1000000
        + $u["ru_utime.tv_usec"] + $u["ru_stime.tv_usec"];
}
$r = mt_rand(0, 9999);
$us = $r < HEAVY ? 50000 : 1000 + $r % 1000;
$end = cpu_us() + $us;
$x = 0;
while (cpu_us() < $end) {
    for ($i = 0; $i < 200; $i++) { $x += $i % 7; }
}
usleep(WAIT_US);
echo "ok $x\\n";
'''
PHP_HEAVY = 300       # per 10000 requests: 3%
PHP_WAIT_US = 4000


def have_php_fpm():
    return have_command("nginx") and any(n.startswith("php-fpm") for n in os.listdir("/usr/sbin"))


def php_app(ws):
    d = os.path.join(ws.dir, "php")
    if not os.path.isdir(d):
        os.makedirs(d)
        os.chmod(d, 0o755)
        with open(os.path.join(d, "index.php"), "w") as f:
            f.write(NOISY_PHP.replace("HEAVY", str(PHP_HEAVY)).replace("WAIT_US", str(PHP_WAIT_US)))
    return d


def php_fpm_grid(ws, webtune, a, letter, name, app, workers, connections):
    """A grid of PHP-FPM (pm static, workers = pm.max_children) behind nginx on `app`'s
    /index.php, `connections` clients: grids (d) and (f)."""
    res = GridResult(name, {"workers": workers})
    res.tuners = tuners_for(a, letter, res.knobs)
    res.connections = connections
    load = {"connections": connections, "duration": "1s", "path": "/index.php"}

    def text(config, knobs, window_s=None):
        return target_file("php-fpm", dict({"pm": "static"}, **config), knobs,
                           with_window(load, window_s), app=app, ready="/index.php")

    run_grid(ws, webtune, res, lambda c, w=None: text(c, {}, w), rounds_of(a), text({}, res.knobs))
    return res


def grid_php(ws, webtune, a):
    """(d) PHP-FPM behind nginx, a PHP page whose cost is heavy-tailed, 32 connections."""
    if not have_php_fpm():
        return None
    workers = PHP_GRID_QUICK if a.quick else PHP_GRID_WORKERS
    return php_fpm_grid(ws, webtune, a, "d", "php-fpm workers (heavy-tailed page)", php_app(ws), workers,
                        PHP_CONNECTIONS)


# CPU-bound, with a short section under a lock the waiting workers poll while burning CPU
# (a spin lock, a retry loop): on 2 CPUs, past the knee more workers take the CPU the holder
# needs, and throughput falls (grid (f)).
CONTENDED_PHP = '''<?php
// verdicts.py grid (f): WORK_US of CPU, then HELD_US under a lock that waiters poll, burning CPU.
function cpu_us() {
    $u = getrusage();
    return ($u["ru_utime.tv_sec"] + $u["ru_stime.tv_sec"]) * 1000000
        + $u["ru_utime.tv_usec"] + $u["ru_stime.tv_usec"];
}
function burn($us) {
    $end = cpu_us() + $us;
    $x = 0;
    while (cpu_us() < $end) {
        for ($i = 0; $i < 200; $i++) { $x += $i % 7; }
    }
    return $x;
}
$x = burn(WORK_US);
$f = fopen(__DIR__ . "/lock", "c");
while (!flock($f, LOCK_EX | LOCK_NB)) { $x += burn(SPIN_US); }
$x += burn(HELD_US);
flock($f, LOCK_UN);
fclose($f);
echo "ok $x\\n";
'''
KNEE_WORK_US = 2000
KNEE_HELD_US = 300
KNEE_SPIN_US = 50


def contended_app(ws):
    d = os.path.join(ws.dir, "php-knee")
    if not os.path.isdir(d):
        os.makedirs(d)
        os.chmod(d, 0o777)
        text = (CONTENDED_PHP.replace("WORK_US", str(KNEE_WORK_US)).replace("HELD_US", str(KNEE_HELD_US))
                .replace("SPIN_US", str(KNEE_SPIN_US)))
        with open(os.path.join(d, "index.php"), "w") as f:
            f.write(text)
    return d


def grid_knee(ws, webtune, a):
    """(f) PHP-FPM behind nginx, a CPU-bound page with a contended lock whose waiters burn
    CPU, 64 connections: throughput rises to the CPUs, then falls past the knee."""
    if not have_php_fpm():
        return None
    workers = KNEE_GRID_QUICK if a.quick else KNEE_GRID_WORKERS
    return php_fpm_grid(ws, webtune, a, "f", "php-fpm workers (CPU-bound, contended past the knee)",
                        contended_app(ws), workers, KNEE_CONNECTIONS)


APACHE_APP = os.path.join(ROOT, "examples", "apps", "perl")
APACHE_PATH = "/hello?io=2"   # the preloaded mod_perl handler, waiting 2 ms


def have_apache():
    return have_command("apache2") and os.path.exists("/usr/lib/apache2/modules/mod_perl.so") \
        and os.path.isdir(APACHE_APP)


def grid_apache(ws, webtune, a):
    """(e) Apache prefork with mod_perl, workers x max_requests x keepalive, 16 connections:
    the example's preloaded handler (examples/apps/perl, read only) waiting 2 ms."""
    if not have_apache():
        return None
    knobs = APACHE_GRID_QUICK if a.quick else APACHE_GRID
    res = GridResult("apache prefork workers x max_requests x keepalive", dict(knobs))
    res.tuners = tuners_for(a, "e", res.knobs)
    res.connections = APACHE_CONNECTIONS
    load = {"connections": APACHE_CONNECTIONS, "duration": "1s", "path": APACHE_PATH}

    def text(config, knobs, window_s=None):
        return target_file("apache", config, knobs, with_window(load, window_s), app=APACHE_APP,
                           ready="/hello")

    run_grid(ws, webtune, res, lambda c, w=None: text(c, {}, w), rounds_of(a), text({}, res.knobs))
    return res


# ---------------------------------------------------------------------------------------------
# Reporting helpers and main


def machine_note(label):
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{label}: load average {load}"


class Count(argparse.Action):
    """--null [N] / --power [N]: selects the part, with N or the default count."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, -1 if values is None else values)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="See the module docstring (head bench/verdicts.py).")
    ap.add_argument("--webtune", default=os.path.join(ROOT, "target", "release", "webtune"),
                    help="webtune binary (default: target/release/webtune of this repository)")
    ap.add_argument("--null", type=int, nargs="?", action=Count, metavar="N",
                    help="run the null decisions (N of them; default 100, --quick 6)")
    ap.add_argument("--power", type=int, nargs="?", action=Count, metavar="N",
                    help="run the power tries (N of them; default 20, --quick 3)")
    ap.add_argument("--grid", action="store_true", help="run the grids, all of them (a to f)")
    ap.add_argument("--grids", metavar="LIST",
                    help="run only the grids named, comma-separated: a (lab), b (nginx workers), "
                         "c (gunicorn workers), d (php-fpm workers, noisy), e (apache 3 knobs), "
                         "f (php-fpm workers, falling past the knee)")
    ap.add_argument("--strategies", metavar="LIST",
                    help="the tuners each grid runs, comma-separated (e.g. one-at-a-time,workers,"
                         "joint); a strategy this webtune does not know is reported as not "
                         "available. Default per grid: a one-at-a-time; b workers; c, d and f "
                         "workers and one-at-a-time; e one-at-a-time")
    ap.add_argument("--random-draws", type=int, default=RANDOM_DRAWS, metavar="N",
                    help=f"random searches drawn from each grid's windows per tuner row (default {RANDOM_DRAWS})")
    ap.add_argument("--seed", type=int, default=1, help="seed of the random searches (default 1)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: 6 null decisions, 3 power tries, small grids of 1 round")
    ap.add_argument("--grid-rounds", type=int, help="rounds of each grid (default 3, --quick 1)")
    ap.add_argument("--sure-rounds", type=int, metavar="N",
                    help="then more rounds, up to N in all, while the grid's own noise cannot judge a "
                         f"pick against the score bar; the time bar compares with the first --grid-rounds "
                         f"(default {SURE_ROUNDS}, --quick 0: none)")
    ap.add_argument("--truth-rounds", type=int, metavar="N",
                    help="measure exactly N rounds instead (the time bar still compares with the first "
                         "--grid-rounds), then replay the --sure-rounds stopping rule on the N rounds "
                         "shuffled and say how often it judges each pick as all N do")
    ap.add_argument("--head-to-head", type=int, metavar="N",
                    help="after each grid, measure every barred pick that is not the grid's best against "
                         "that best, in rounds of one longer window each, until the interval of its share "
                         f"clears the score bar or N rounds (default {H2H_PAIRS}, --quick 2; 0: none); the "
                         "score bar judges that share")
    ap.add_argument("--head-to-head-window", type=float, metavar="S",
                    help=f"seconds of the head-to-head's windows (default {H2H_WINDOW_S:g}, --quick 1)")
    ap.add_argument("--lab-memory", default=LAB_MEMORY,
                    help="memory budgets of the lab grid, comma-separated: a tuner run for each; "
                         f"the first carries the bars (default {LAB_MEMORY})")
    ap.add_argument("--real", choices=("auto", "nginx", "gunicorn"), default="auto",
                    help="the real server (default: nginx when installed, else gunicorn)")
    ap.add_argument("--save", metavar="FILE", help="write every decision and window as JSON")
    a = ap.parse_args(argv)
    if a.grids is not None:
        a.grids = [g.strip() for g in a.grids.split(",") if g.strip()]
        bad = [g for g in a.grids if g not in GRIDS]
        if bad or not a.grids:
            ap.error(f"--grids: {', '.join(bad) or 'none'}: expected letters among {','.join(GRIDS)}")
    if a.strategies is not None:
        a.strategies = list(dict.fromkeys(x.strip() for x in a.strategies.split(",") if x.strip()))
        bad = [x for x in a.strategies if not x.replace("-", "").isalnum()]
        if bad or not a.strategies:
            ap.error(f"--strategies: cannot read {a.strategies!r}")
    selected = a.null is not None or a.power is not None or a.grid or a.grids
    if not selected:
        a.null, a.power, a.grid = -1, -1, True
    if a.grids is None:
        a.grids = list(GRIDS) if a.grid else []
    a.grid = bool(a.grids)
    defaults = (6, 3, 1) if a.quick else (100, 20, 3)
    a.null = defaults[0] if a.null == -1 else (a.null or 0)
    a.power = defaults[1] if a.power == -1 else (a.power or 0)
    if a.grid_rounds is None:
        a.grid_rounds = defaults[2]
    if a.sure_rounds is None:
        a.sure_rounds = 0 if a.quick else SURE_ROUNDS
    if a.head_to_head is None:
        a.head_to_head = 2 if a.quick else H2H_PAIRS
    if a.head_to_head_window is None:
        a.head_to_head_window = 1.0 if a.quick else H2H_WINDOW_S
    if min(a.null, a.power, a.sure_rounds, a.truth_rounds or 0, a.head_to_head) < 0 or a.grid_rounds < 1 \
            or a.random_draws < 1:
        ap.error("counts must be positive")
    if not 0.5 <= a.head_to_head_window <= 60:
        ap.error("--head-to-head-window: between 0.5 and 60 seconds")
    return a


def main(argv=None):
    a = parse_args(argv)
    return run_main(lambda: run(a))


def run_one_grid(ws, a, label, real):
    """One grid measured and its tuners run: the GridResult, or why it could not run."""
    if label == "a":
        progress("grid (a): the lab ...")
        return grid_lab(ws, a.webtune, a)
    if label == "b":
        if real is None:
            return "neither nginx nor gunicorn is installed"
        progress(f"grid (b): {real.name} ...")
        return grid_real(ws, a.webtune, a, real)
    grid, missing = {"c": (grid_gunicorn, "gunicorn is not installed"),
                     "d": (grid_php, "php-fpm or nginx is not installed"),
                     "e": (grid_apache, "apache2 with mod_perl is not installed"),
                     "f": (grid_knee, "php-fpm or nginx is not installed")}[label]
    progress(f"grid ({label}) ...")
    return grid(ws, a.webtune, a) or missing


def run(a):
    """The parts `a` asks for; True when every bar passed."""
    if not os.access(a.webtune, os.X_OK):
        raise SetupError(f"no webtune binary at {a.webtune} (cargo build --release)")
    ws = Workspace()
    try:
        real = real_server(ws, a.real)
        print(f"webtune {a.webtune}; CPUs {os.cpu_count()}; {machine_note('start')}; "
              f"real server: {real.name if real else 'none (nginx and gunicorn missing)'}")
        if real is None or real.name != "nginx":
            print("note: nginx is not installed: the null decisions all run on the lab")
        passed = True
        decisions, grids = [], []
        started = time.monotonic()
        if a.null or a.power:
            progress(f"decisions: {a.null} null, {a.power} power, interleaved ...")
            decisions = run_decisions(ws, a.webtune, a.null, a.power, real)
            if a.null:
                passed &= report_null(decisions)
            if a.power:
                passed &= report_power(decisions)
        for label in a.grids:
            res = run_one_grid(ws, a, label, real)
            if res is None:
                continue
            if isinstance(res, str):
                print(f"\n== 3{label}. skipped: {res}")
                passed = check(False, f"grid ({label}): {res}") and passed
                continue
            res.label = label
            grids.append(res)
            passed &= report_grid(res, label, a.grid_rounds, a.random_draws, a.seed)
            if a.truth_rounds and res.rounds > res.base_rounds:
                res.replay = replay_sure_rule(res, a.sure_rounds or SURE_ROUNDS, REPLAY_SHUFFLES, a.seed)
                print_replay(res)
        print(f"\n{machine_note('end')}; {time.monotonic() - started:.0f} s in all")
        if a.save:
            with open(a.save, "w") as f:
                json.dump({"decisions": [asdict(d) for d in decisions],
                           "grids": [{"name": g.name, "label": g.label, "knobs": g.knobs,
                                      "windows": [asdict(w) for w in g.windows],
                                      "tuners": [asdict(t) for t in g.tuners],
                                      "grid_wall_s": g.grid_wall_s, "base_rounds": g.base_rounds,
                                      "rounds": g.rounds, "base_wall_s": g.base_wall_s,
                                      "replay": g.replay,
                                      "head_to_head": {k: dict(asdict(h), share=h.share())
                                                       for k, h in g.h2h.items()}} for g in grids]},
                          f, indent=1)
        return passed
    finally:
        ws.remove()


if __name__ == "__main__":
    sys.exit(main())
