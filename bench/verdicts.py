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
import os
import sys
import time
from dataclasses import asdict

from benchlib import check, progress, require_webtune, run_main
from verdicts_lib.decisions import run_decisions
from verdicts_lib.grids import GRIDS, LAB_MEMORY, run_one_grid
from verdicts_lib.head_to_head import H2H_PAIRS, H2H_WINDOW_S
from verdicts_lib.noise import RANDOM_DRAWS, REPLAY_SHUFFLES, print_replay, replay_sure_rule
from verdicts_lib.null import report_null
from verdicts_lib.power import report_power
from verdicts_lib.report import report_grid
from verdicts_lib.rounds import SURE_ROUNDS
from verdicts_lib.targets import ROOT, real_server
from verdicts_lib.workspace import Workspace


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


def run(a):
    """The parts `a` asks for; True when every bar passed."""
    require_webtune(a.webtune)
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
