#!/usr/bin/env python3
"""Rightsizing against the exhaustive grid: the smallest container `tune --strategy rightsize`
answers, and what it cost, beside every CPUs x workers x memory size measured.

Why
    The rightsizing walks the CPU ladder from what the cgroup's CPU time a request says the
    traffic needs, then the workers, then the memory from the kernel's charge: a few trials
    instead of the grid. This checks both halves of that claim on a real server: the size it
    answers is the grid's smallest that serves (or within one CPU step of it), and its trials
    are a fraction of the grid's.

What
    A gunicorn app that burns about 5 ms of Python a request (the known truth: CPU a request
    x the rate is the CPUs needed), or the lab (--server lab: 4 ms of CPU and 2 ms of waiting
    a request). The grid: every CPU size of --cpus x every worker count of --workers x every
    memory limit of --memory, each launched in a container of that size (`webtune launch
    --set container_*`) and loaded with an open loop at --rate for --window seconds, --rounds
    times (interleaved: round 1 of every size, then round 2...). A size serves when its median
    window delivers 98% of the rate with p99 at or under --slo. The grid's answer is the
    cheapest size that serves (fewest CPUs, then fewest workers, then least memory). Then
    `tune --strategy rightsize` (same rate, objective and windows), and side by side: its
    answer, the grid's, and the windows and seconds each took.

Usage
    python3 bench/rightsize.py --webtune target/release/webtune
    python3 bench/rightsize.py --webtune BIN --server lab --rate 100
    PASS when the answer is the grid's smallest or one CPU step above it, and it used at most
    half the grid's windows. Loopback only; everything started is stopped at the end, on error
    and on Ctrl-C; the temp directory is removed.
"""

import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import SetupError, check, launch, progress, run_main, scratch, server_parser, stop_group  # noqa: E402

BUSY_APP = """def app(environ, start_response):
    n = 0
    for i in range(60000):
        n += i * i
    start_response('200 OK', [])
    return [str(n).encode()]
"""


def target(tmp, server):
    """The target file of `server` in `tmp`."""
    f = os.path.join(tmp, "target.toml")
    if server == "gunicorn":
        with open(os.path.join(tmp, "busy.py"), "w") as out:
            out.write(BUSY_APP)
        text = (f'[target]\nadapter = "gunicorn"\napp = "busy:app"\nchdir = "{tmp}"\n'
                '[target.config]\nworkers = 2\n')
    else:
        text = ('[target]\nadapter = "lab"\nlisten = "127.0.0.1:0"\n[target.config]\n'
                'workers = 4\ncpu = "4ms"\nio_wait = "2ms"\n')
    with open(f, "w") as out:
        out.write(text)
    return f


def measure_size(webtune, file, size, rate, window, started):
    """(req/s, p99 ms) of one window at `rate` against `file` launched in a container of `size`."""
    cpus, workers, memory = size
    sets = ["--set", f"container_cpus={cpus}", "--set", f"workers={workers}"]
    if memory:
        sets += ["--set", f"container_memory={memory}"]
    proc, url = launch(webtune, file, ["--for", "10m"] + sets, started)
    try:
        if url is None:
            return 0.0, float("inf")
        out = subprocess.run([webtune, "bench", "--rate", str(rate), "-c", "16", "-d", f"{window}s", "--json",
                              "--quiet", url], capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            return 0.0, float("inf")
        r = json.loads(out.stdout)["result"]
        total = r.get("latency_ms", {}).get("total") or {}
        return r["requests_per_s"], total.get("p99", float("inf"))
    finally:
        stop_group(proc)
        started.remove(proc)


def main():
    ap = server_parser(__doc__, ["gunicorn", "lab"])
    ap.add_argument("--rate", type=float, default=40.0)
    ap.add_argument("--slo", default="300ms")
    ap.add_argument("--cpus", default="0.25,0.5,0.75,1,1.5,2")
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--memory", default="64MiB,128MiB,256MiB")
    ap.add_argument("--window", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    slo_ms = float(a.slo.rstrip("ms")) if a.slo.endswith("ms") else float(a.slo.rstrip("s")) * 1000
    cpus = [float(c) for c in a.cpus.split(",")]
    workers = [int(w) for w in a.workers.split(",")]
    memory = a.memory.split(",")
    if not (1 <= a.rounds <= 10 and 1 <= a.window <= 30 and a.rate > 0):
        print("error: --rounds 1-10, --window 1-30, --rate > 0", file=sys.stderr)
        return 2

    def body():
        with scratch("webtune-rightsize-") as (tmp, started):
            file = target(tmp, a.server)
            sizes = [(c, w, m) for c in cpus for w in workers for m in memory]
            readings = {s: [] for s in sizes}
            t0 = time.monotonic()
            for r in range(a.rounds):
                for i, s in enumerate(sizes):
                    progress(f"grid round {r + 1}/{a.rounds}, size {i + 1}/{len(sizes)} {s} ...")
                    readings[s].append(measure_size(a.webtune, file, s, a.rate, a.window, started))
            grid_s = time.monotonic() - t0

            def serves(s):
                rps = statistics.median(x for x, _ in readings[s])
                p99 = statistics.median(y for _, y in readings[s])
                return rps >= 0.98 * a.rate and p99 <= slo_ms

            for s in sizes:
                rps = statistics.median(x for x, _ in readings[s])
                p99 = statistics.median(y for _, y in readings[s])
                print(f"grid {s[0]} CPUs, {s[1]} workers, {s[2]}: {rps:.1f} req/s, p99 {p99:.1f} ms: "
                      f"{'serves' if serves(s) else 'does not serve'}", flush=True)
            serving = [s for s in sizes if serves(s)]
            mib = lambda m: float(m.rstrip("MiB")) if m.endswith("MiB") else float(m.rstrip("GiB")) * 1024
            best = min(serving, key=lambda s: (s[0], s[1], mib(s[2])), default=None)

            progress("tune --strategy rightsize ...")
            t1 = time.monotonic()
            knobs = f"[knobs]\nworkers = [{a.workers}]\ncontainer_cpus = [{a.cpus}]\n"
            with open(file, "a") as out:
                out.write(knobs + f'[load]\nconnections = 16\nduration = "{a.window}s"\n')
            out = subprocess.run([a.webtune, "tune", file, "--strategy", "rightsize", "--min-rps", str(a.rate),
                                  "--slo-p99", a.slo, "--json", "--quiet", "--repeats", str(a.rounds),
                                  "--journal", os.path.join(tmp, "j.jsonl")],
                                 capture_output=True, text=True, timeout=3600,
                                 env=dict(os.environ, WEBTUNE_DB=os.path.join(tmp, "db")))
            tune_s = time.monotonic() - t1
            if out.returncode not in (0, 3):
                raise SetupError(f"tune failed: {out.stderr.strip()[:300]}")
            v = json.loads(out.stdout)
            rec = dict(v["recommended"])
            answer = (float(rec.get("container_cpus", "nan")), int(rec.get("workers", "0")),
                      rec.get("container_memory", "-"))
            windows = v["cost"]["windows"]
            grid_windows = len(sizes) * a.rounds
            print(f"\n{a.server} at {a.rate:g} req/s within p99 {a.slo}: grid of {len(sizes)} sizes x "
                  f"{a.rounds} rounds = {grid_windows} windows in {grid_s:.0f} s; smallest that serves: "
                  f"{best}")
            print(f"rightsize: {answer}, {windows} windows in {tune_s:.0f} s "
                  f"({windows / grid_windows:.1%} of the grid's windows, {tune_s / grid_s:.1%} of its time)")
            if best is None:
                return check(False, "no size of the grid serves the rate: widen --cpus")
            step = abs(cpus.index(answer[0]) - cpus.index(best[0])) if answer[0] in cpus else 99
            ok = check(answer[0] >= best[0] and step <= 1, f"CPUs {answer[0]:g} within one step above the grid's {best[0]:g}")
            return check(windows <= grid_windows / 2, f"{windows} windows <= half the grid's {grid_windows}") and ok

    return run_main(body)


if __name__ == "__main__":
    sys.exit(main())
