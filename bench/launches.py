#!/usr/bin/env python3
"""How much two launches of one configuration differ, against the scatter of the windows
within a launch.

Why
    The tuner measures a comparison's rounds on servers kept running between their windows
    (a launch and its warm-up cost more than a window). If each launch serves a little faster
    or slower for its whole life (where its processes sit, its memory layout), rounds on the
    same two launches pair that difference with the change judged, and the paired interval,
    which sees only the windows' scatter, is too narrow. This measures it: pairs of launches
    of the same configuration (an A/A test), so every difference is the launches'.

What
    --pairs N (10) pairs of fresh launches of one target file (`webtune launch`, both running
    side by side); per pair, --rounds R (8) rounds of one window each (`webtune bench`, 1 s,
    16 connections, to 127.0.0.1 only), the order reversed every other round (A B, B A...).
    Per pair: the mean paired difference (B over A, % of the log ratio), its standard
    deviation over the rounds, and its 99% t interval. Over the pairs: how many intervals
    exclude zero (a tuner on kept launches would call that a sure change; about 1% should),
    the spread of the pairs' means, the spread the windows alone would give them, and the
    launch-to-launch part the difference implies (sqrt of spread^2 - windows'^2, 0 when
    negative).

Usage
    python3 bench/launches.py --webtune target/release/webtune            # nginx, 10 x 8
    python3 bench/launches.py --webtune BIN --server lab --pairs 6 --rounds 6

    nginx: one worker, access log off, a 1 KiB file (never /etc/nginx). lab: the embedded
    pre-forking server, 2 workers, 1 ms of CPU and 10 ms of waiting a request. A pair takes
    about R x 2 x 1.3 s plus its launches: 10 x 8 about 4 min.

Exit status: 0 when it ran, 2 on a setup error, 130 when interrupted. Everything it starts
is stopped at the end, on error and on Ctrl-C/SIGTERM; its temp directory is removed.
"""

import json
import math
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import SetupError, progress, run_main, scratch, server_parser, stop_group, t_quantile  # noqa: E402

LAUNCH_TIMEOUT_S = 60
WINDOW_TIMEOUT_S = 30


def target(tmp, server):
    """The target file of the server asked for, in `tmp`."""
    if server == "nginx":
        if not shutil.which("nginx"):
            raise SetupError("nginx is not installed (apt-get install nginx-light), or use --server lab")
        docroot = os.path.join(tmp, "html")
        os.makedirs(docroot)
        with open(os.path.join(docroot, "1k.html"), "w") as f:
            f.write("x" * 1024)
        for path in (tmp, docroot):
            os.chmod(path, 0o755)
        body = (f'[target]\nadapter = "nginx"\napp = {json.dumps(docroot)}\nready = "/1k.html"\n\n'
                '[target.config]\naccess_log = "off"\nworkers = 1\n')
        path = "/1k.html"
    else:
        body = ('[target]\nadapter = "lab"\n\n[target.config]\nworkers = 2\ncpu = "1ms"\n'
                'io_wait = "10ms"\n')
        path = "/"
    file = os.path.join(tmp, "target.toml")
    with open(file, "w") as f:
        f.write(body + '\n[load]\nconnections = 16\nduration = "1s"\n')
    return file, path


def launch(webtune, file, started):
    """`webtune launch FILE` in its own session; its address once ready."""
    proc, url = benchlib.launch(webtune, file, ["--for", "30m"], started)
    if url is None:
        raise SetupError(f"webtune launch {file} ended before its server was ready")
    return proc, url


def window(webtune, url):
    """Requests per second of one 1 s window."""
    out = subprocess.run([webtune, "bench", "-c", "16", "-d", "1s", "--json", "--quiet", url],
                         capture_output=True, text=True, timeout=WINDOW_TIMEOUT_S)
    if out.returncode != 0:
        raise SetupError(f"webtune bench {url} failed: {out.stderr.strip()[:200]}")
    return json.loads(out.stdout)["result"]["requests_per_s"]


def one_pair(webtune, file, path, rounds, started):
    """The paired differences (B over A, % of the log ratio) of one pair of launches."""
    (a, url_a), (b, url_b) = launch(webtune, file, started), launch(webtune, file, started)
    try:
        window(webtune, url_a + path)  # a window each before the rounds, as the tuner's warm-up
        window(webtune, url_b + path)
        diffs = []
        for r in range(rounds):
            if r % 2 == 0:
                ra = window(webtune, url_a + path)
                rb = window(webtune, url_b + path)
            else:
                rb = window(webtune, url_b + path)
                ra = window(webtune, url_a + path)
            diffs.append(math.log(rb / ra) * 100.0)
        return diffs
    finally:
        for proc in (a, b):
            stop_group(proc)
            started.remove(proc)


def main():
    ap = server_parser(__doc__, ["nginx", "lab"])
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=8)
    a = ap.parse_args()
    if not (2 <= a.pairs <= 100 and 2 <= a.rounds <= 31):
        print("error: --pairs must be 2-100 and --rounds 2-31", file=sys.stderr)
        return 2

    def body():
        with scratch("webtune-launches-") as (tmp, started):
            file, path = target(tmp, a.server)
            t = t_quantile(0.99, a.rounds - 1)
            means, ses, sure = [], [], 0
            for k in range(a.pairs):
                progress(f"pair {k + 1}/{a.pairs} ...")
                d = one_pair(a.webtune, file, path, a.rounds, started)
                m, sd = statistics.mean(d), statistics.stdev(d)
                se = sd / math.sqrt(len(d))
                low, high = m - t * se, m + t * se
                sure += low > 0 or high < 0
                means.append(m)
                ses.append(se)
                print(f"pair {k + 1}: {m:+.2f}% [{low:+.2f}%, {high:+.2f}%], windows' sd {sd:.2f}%: "
                      + " ".join(f"{x:+.1f}" for x in d), flush=True)
            between = statistics.stdev(means)
            windows = math.sqrt(statistics.mean([s * s for s in ses]))
            launches = math.sqrt(max(0.0, between ** 2 - windows ** 2))
            print(f"\n{a.server}, {a.pairs} pairs x {a.rounds} rounds: {sure} of {a.pairs} 99% intervals "
                  f"exclude zero (about 1% should); the pairs' means spread {between:.2f}% (sd), "
                  f"the windows alone would give {windows:.2f}%; launch to launch {launches:.2f}%")
            return True

    return run_main(body)


if __name__ == "__main__":
    sys.exit(main())
