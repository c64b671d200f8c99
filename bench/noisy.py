#!/usr/bin/env python3
"""The tuner's decisions on a noisy machine against a quiet one: the same tunes, quiet and beside
a CPU hog (a busy loop pinned to CPU 1 with taskset), interleaved, each under a time budget.

    python3 bench/noisy.py                  # 2 rounds of each case quiet and noisy, 90 s budgets
    python3 bench/noisy.py --quick          # 1 round, 45 s budgets, 2 truth rounds
    python3 bench/noisy.py --webtune PATH   # another build (default: cargo build --release)
    python3 bench/noisy.py --logs DIR       # keep each run's JSON and stderr there

Cases, each a target file written into a temporary directory, from the user's current value:
- lab: `adapter = "lab"`, [target.config] workers = 4 and cpu = "5ms" a request (CPU-bound; on
  2 cores 1 worker serves about half of what 4 do: the known truth), knobs workers = [1, 2, 4, 8]
  and backlog = [511, 1024] (no effect: any move of it is wrong).
- nginx: a private nginx.conf (worker_processes 2; a 1 KiB file; access log off; loopback only),
  `config = "nginx.conf"`, knobs workers = [1, 2, 4].
The truth of the workers values is also measured, quiet and beside the hog: single windows
(`webtune tune` with no knob, --repeats 1, --set workers=N), interleaved, --truth-rounds rounds.
A value is worse when its median reads more than 5% under the current value's in the same
condition (for the lab also workers = 1, known); within 5%, a move to it (unless adopted for its
tail) is counted as a move with no gain in the truth, without a bar.

From each run's JSON and exit status: decisions reached (steps adopted, worse, worse tail or no
effect), wrong adoptions (a move of a no-effect knob, or to a value the truth says is worse),
whether the recommendation moved from the baseline, the wall time against the budget, the exit
status (0, or 4: stopped by the budget before any verdict; 130 is an interruption). Bars: no
wrong adoption in any run; every run ends within budget + 15 s; every exit status 0 or 4.
Everything started (webtune, its servers, the hog) is stopped at the end, on error and on
Ctrl-C; load goes to 127.0.0.1 only; files go to the temporary directory (--db, --journal).
"""

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import benchlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETTLED = {"adopted", "worse", "worse tail", "no effect"}
TRUTH_WINDOW = "3s"  # the truth's windows: 3 times the tunes' 1 s
OVERRUN_S = 15.0  # budget + one window (a launch, a warm-up, a window measured again)
TOL = 0.05        # the truth: worse when its median reads over 5% under the current value's


class Case:
    def __init__(self, name, dir, base, values, text, truth_text, known_worse, no_effect):
        self.name, self.dir, self.base, self.values = name, dir, base, values
        os.makedirs(dir, mode=0o755, exist_ok=True)
        self.target, self.truth_target = os.path.join(dir, "target.toml"), os.path.join(dir, "truth.toml")
        for path, t in ((self.target, text), (self.truth_target, truth_text)):
            with open(path, "w") as f:
                f.write(t)
        self.text, self.truth_text = text, truth_text
        self.known_worse, self.no_effect = known_worse, no_effect
        self.truth = {"quiet": {}, "noisy": {}}  # condition -> workers value -> [rps]
        self.others = {"quiet": [], "noisy": []}  # others' CPU share in the truth's windows

    def ratio(self, mode, value):
        t = self.truth[mode]
        if not t.get(value) or not t.get(self.base):
            return None
        return statistics.median(t[value]) / statistics.median(t[self.base])

    def wrong(self, mode, knob, to):
        if knob in self.no_effect:
            return "no-effect knob moved"
        if knob == "workers" and to in self.known_worse:
            return "known worse"
        r = self.ratio(mode, to) if knob == "workers" else None
        return f"truth {r:.2f}x" if r is not None and r < 1 - TOL else None


def lab_case(tmp):
    head = ('[target]\nadapter = "lab"\nlisten = "127.0.0.1:0"\n'
            '[target.config]\nworkers = 4\ncpu = "5ms"\n')
    load = '[load]\nconnections = 16\nduration = "{}"\n'
    knobs = '[knobs]\nworkers = [1, 2, 4, 8]\nbacklog = [511, 1024]\n'
    return Case("lab", os.path.join(tmp, "lab"), "4", ["1", "2", "4", "8"], head + knobs + load.format("1s"),
                head + load.format(TRUTH_WINDOW),
                known_worse={"1"}, no_effect={"backlog"})


def nginx_case(tmp):
    d = os.path.join(tmp, "nginx")
    www = os.path.join(d, "www")
    os.makedirs(www, mode=0o755)
    os.chmod(d, 0o755)  # nginx's workers (nobody) read the file
    with open(os.path.join(www, "index.html"), "w") as f:
        f.write("x" * 1024)
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write("worker_processes 2;\nevents { worker_connections 1024; }\nhttp {\n"
                f"    access_log off;\n    server {{\n        listen 80;\n        root {www};\n"
                "    }\n}\n")
    head = '[target]\nadapter = "nginx"\nconfig = "nginx.conf"\n'
    load = '[load]\npath = "/index.html"\nconnections = 16\nduration = "{}"\n'
    return Case("nginx", d, "2", ["1", "2", "4"], head + '[knobs]\nworkers = [1, 2, 4]\n' + load.format("1s"),
                head + load.format(TRUTH_WINDOW), known_worse=set(), no_effect=set())


class Hog:
    """A busy loop pinned to CPU 1, in its own session; stopped on leaving, however."""

    def __enter__(self):
        self.proc = subprocess.Popen(["taskset", "-c", "1", "sh", "-c", "while :; do :; done"],
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            time.sleep(0.5)
        except BaseException:
            benchlib.stop_group(self.proc, grace=2.0)
            raise
        return self

    def __exit__(self, *_):
        benchlib.stop_group(self.proc, grace=2.0)


def busy_share(seconds=1.0):
    """The machine's CPU busy share over `seconds` (/proc/stat; iowait counts as idle)."""
    def read():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]
    t0, i0 = read()
    time.sleep(seconds)
    t1, i1 = read()
    return 1.0 - (i1 - i0) / max(1, t1 - t0)


def wait_quiet(limit_s=60.0, below=0.15):
    """Waits (up to `limit_s`) for the machine to be under `below` busy; returns the last share
    read (the machine may be shared: the figures say how busy it was before each run)."""
    deadline = time.monotonic() + limit_s
    share = busy_share()
    while share >= below and time.monotonic() < deadline:
        share = busy_share(2.0)
    return share


def webtune_tune(ctx, target, args, timeout, tag):
    """Runs `webtune --db DB tune TARGET --json --journal J ARGS` bounded by `timeout`; returns
    (outcome or None, exit status or None when timed out, wall seconds, stderr)."""
    n = ctx["n"] = ctx["n"] + 1
    argv = [ctx["webtune"], "--db", ctx["db"], "tune", target, "--json",
            "--journal", os.path.join(ctx["tmp"], f"j{n}.jsonl")] + args
    stdout, stderr, code, wall = benchlib.run_bounded(argv, timeout, cwd=ctx["tmp"])
    if ctx["logs"]:
        for ext, text in (("json", stdout), ("stderr", stderr)):
            with open(os.path.join(ctx["logs"], f"{n:03}-{tag}.{ext}"), "w") as f:
                f.write(text)
    try:
        outcome = json.loads(stdout)
    except ValueError:
        outcome = None
    return outcome, code, wall, stderr


def measure_truth(ctx, case, rounds):
    for r in range(rounds):
        for mode in ("quiet", "noisy"):
            order = case.values if r % 2 == 0 else case.values[::-1]
            wait_quiet()
            with Hog() if mode == "noisy" else contextlib.nullcontext():
                for v in order:
                    benchlib.progress(f"truth {case.name} round {r + 1} {mode}: workers={v}")
                    o, code, _, err = webtune_tune(ctx, case.truth_target, ["--quiet", "--repeats", "1",
                                                   "--set", f"workers={v}"], 120, f"truth-{case.name}-{mode}-{v}")
                    pts = (o or {}).get("points") or []
                    if code != 0 or not pts or pts[0].get("status", {}).get("status") != "ok":
                        raise benchlib.SetupError(f"{case.name} workers={v}: exit {code}: {err.strip()[-300:]}")
                    case.truth[mode].setdefault(v, []).extend(s["rps"] for s in pts[0]["samples"])
                    case.others[mode].append(pts[0].get("interference", 0.0))


def judge(case, mode, outcome, code, wall, budget, before, stderr):
    row = {"case": case.name, "mode": mode, "code": code, "wall": wall, "before": before,
           "over": wall - budget, "decisions": 0, "steps": 0, "moves": [], "wrong": [],
           "unfounded": [], "verdicts": [], "others": None, "windows": None, "stopped": None,
           "last": ([x for x in stderr.splitlines() if x.startswith("webtune:")] or ["-"])[-1]}
    if not outcome:
        return row
    steps = outcome.get("steps") or []
    row["steps"] = len(steps)
    row["decisions"] = sum(1 for s in steps if s.get("verdict") in SETTLED)
    unjudged = set(outcome.get("unjudged") or [])
    row["verdicts"] = [f"{s['knob']} {s.get('verdict')}" + (" (not judged)" if s["knob"] in unjudged
                       and s.get("verdict") == "undecided" else "") for s in steps]
    base = {b["knob"]: b["value"] for b in outcome.get("baseline_values") or []}
    rec = dict(outcome.get("recommended") or [])
    adopted = {(s["knob"], s.get("after_value")) for s in steps if s.get("adopted")}
    said = {k: (v, e) for k, v, e in outcome.get("evidence") or []}
    for knob, was in base.items():
        to = rec.get(knob, was)
        if to == was:
            continue
        tail = said.get(knob, ("", ""))[0] == to and "adopted for its tail" in said[knob][1]
        row["moves"].append(f"{knob} {was}->{to}" + (" (for its tail)" if tail else "")
                            + ("" if (knob, to) in adopted else " (no adopted step)"))
        why = case.wrong(mode, knob, to)
        if why:
            row["wrong"].append(f"{knob} {was}->{to}: {why}")
        elif knob == "workers" and not tail and (case.ratio(mode, to) or 1.0) < 1 + TOL:
            row["unfounded"].append(f"{knob} {was}->{to}: truth {case.ratio(mode, to) or 0:.2f}x")
    row["others"] = (outcome.get("noise") or {}).get("others_cpu")
    row["windows"] = (outcome.get("cost") or {}).get("windows")
    row["stopped"] = outcome.get("stopped")
    return row


def ratio(q, n):
    return f"{n / q:.2f}" if q else "-"


def report(cases, rows, budget):
    print("\nTruth (median req/s of single windows, and the ratio to the current value's):")
    for c in cases:
        for mode in ("quiet", "noisy"):
            cells = [f"{v}: {statistics.median(c.truth[mode][v]):.0f} ({c.ratio(mode, v):.2f}x, "
                     f"n={len(c.truth[mode][v])})" for v in c.values if c.truth[mode].get(v)]
            oth = c.others[mode]
            print(f"  {c.name:5} {mode:5} workers " + "; ".join(cells)
                  + f"; others' CPU {100 * statistics.median(oth):.0f}% (max {100 * max(oth):.0f}%)")
    print(f"\nRuns (budget {budget} s):")
    print(f"  {'case':5} {'mode':5} {'exit':>4} {'wall s':>6} {'over':>6} {'busy0':>5} {'others':>6} "
          f"{'win':>3} {'decided':>7}  moves / wrong")
    for r in rows:
        oth = "-" if r["others"] is None else f"{r['others'] * 100:.0f}%"
        print(f"  {r['case']:5} {r['mode']:5} {str(r['code']):>4} {r['wall']:6.1f} {r['over']:+6.1f} "
              f"{r['before'] * 100:4.0f}% {oth:>6} {str(r['windows']):>3} {r['decisions']:>3} of {r['steps']:<2} "
              f"{', '.join(r['moves']) or 'none'} / {'; '.join(r['wrong']) or '0'}")
        print(f"        verdicts: {', '.join(r['verdicts']) or '-'}; {r['last'][:120]}")
    print("\nQuiet against noisy (sums, or medians over the runs), and noisy / quiet:")
    print(f"  {'':34} {'quiet':>9} {'noisy':>9} {'ratio':>6}")
    for c in cases:
        q = [r for r in rows if r["case"] == c.name and r["mode"] == "quiet"]
        n = [r for r in rows if r["case"] == c.name and r["mode"] == "noisy"]
        lines = [
            ("decisions reached", lambda rs: sum(r["decisions"] for r in rs), "{}"),
            ("steps", lambda rs: sum(r["steps"] for r in rs), "{}"),
            ("wrong adoptions", lambda rs: sum(len(r["wrong"]) for r in rs), "{}"),
            ("moves, no gain in the truth", lambda rs: sum(len(r["unfounded"]) for r in rs), "{}"),
            ("runs recommending a move", lambda rs: sum(1 for r in rs if r["moves"]), "{}"),
            ("runs exiting 4 (nothing judged)", lambda rs: sum(1 for r in rs if r["code"] == 4), "{}"),
            ("windows (median)", lambda rs: statistics.median([r["windows"] or 0 for r in rs]), "{:.1f}"),
            ("wall s (median)", lambda rs: statistics.median([r["wall"] for r in rs]), "{:.1f}"),
            ("wall s (max)", lambda rs: max(r["wall"] for r in rs), "{:.1f}"),
            ("others' CPU % (median)", lambda rs: 100 * statistics.median([r["others"] or 0 for r in rs]), "{:.0f}"),
        ]
        print(f"  {c.name} ({len(q)} quiet, {len(n)} noisy runs)")
        for label, f, fmt in lines:
            a, b = f(q), f(n)
            print(f"    {label:32} {fmt.format(a):>9} {fmt.format(b):>9} {ratio(a, b):>6}")
    print()
    ok = True
    ok &= benchlib.check(all(not r["wrong"] for r in rows),
                         f"no wrong adoption in any run ({sum(len(r['wrong']) for r in rows)} over {len(rows)} runs)")
    worst = max(r["over"] for r in rows)
    ok &= benchlib.check(worst <= OVERRUN_S, f"every run ends within budget + {OVERRUN_S:.0f} s "
                                             f"(the latest {worst:+.1f} s past its budget)")
    codes = sorted({str(r["code"]) for r in rows})
    ok &= benchlib.check(all(r["code"] in (0, 4) for r in rows), f"every exit status 0 or 4 ({', '.join(codes)})")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="1 round, 45 s budgets, 2 truth rounds")
    ap.add_argument("--rounds", type=int, help="quiet/noisy pairs of each case (2)")
    ap.add_argument("--budget", type=int, help="--max-time of each tune, seconds (90)")
    ap.add_argument("--truth-rounds", type=int, help="rounds of single windows per value (3)")
    ap.add_argument("--webtune", help="the binary (default: cargo build --release, target/release/webtune)")
    ap.add_argument("--logs", help="a directory to keep each run's JSON and stderr in")
    a = ap.parse_args()
    rounds = a.rounds or (1 if a.quick else 2)
    budget = a.budget or (45 if a.quick else 90)
    truth_rounds = a.truth_rounds or (2 if a.quick else 3)

    def body():
        webtune = a.webtune
        if not webtune:
            benchlib.progress("cargo build --release")
            if subprocess.run(["cargo", "build", "--release"], cwd=ROOT, timeout=1800).returncode:
                raise benchlib.SetupError("cargo build --release failed")
            webtune = os.path.join(ROOT, "target", "release", "webtune")
        for prog in (webtune, shutil.which("taskset"), shutil.which("nginx")):
            if not prog or not os.access(prog, os.X_OK):
                raise benchlib.SetupError(f"missing: {prog or 'taskset or nginx'}")
        if os.cpu_count() < 2:
            raise benchlib.SetupError("the hog takes CPU 1: 2 CPUs at least")
        if a.logs:
            os.makedirs(a.logs, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix="webtune-noisy-")
        try:
            ctx = {"webtune": os.path.abspath(webtune), "tmp": tmp, "db": os.path.join(tmp, "runs.db"),
                   "n": 0, "logs": a.logs}
            os.chmod(tmp, 0o755)
            cases = [lab_case(tmp), nginx_case(tmp)]
            rows = []
            for r in range(rounds):
                for c in cases:
                    for mode in ("quiet", "noisy"):
                        before = wait_quiet()
                        benchlib.progress(f"{c.name} round {r + 1} {mode} (machine busy {before * 100:.0f}% before)")
                        with Hog() if mode == "noisy" else contextlib.nullcontext():
                            o, code, wall, err = webtune_tune(ctx, c.target, ["--max-time", f"{budget}s"],
                                                              budget + 120, f"{c.name}-{mode}-{r + 1}")
                        if code == 130:
                            raise benchlib.Interrupted("webtune was interrupted")
                        rows.append((c, mode, o, code, wall, before, err))
            for c in cases:
                measure_truth(ctx, c, truth_rounds)
            judged = [judge(c, m, o, code, wall, budget, b, e) for c, m, o, code, wall, b, e in rows]
            return report(cases, judged, budget)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    return benchlib.run_main(body)


if __name__ == "__main__":
    sys.exit(main())
