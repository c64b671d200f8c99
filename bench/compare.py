#!/usr/bin/env python3
"""webtune against its peers (wrk, ab, oha), side by side in one run.

What it measures
    For each HTTP load generator, against the same private nginx serving a 1 KiB file:
    - requests/s, as the tool itself reports it;
    - client CPU per request: the user + system CPU time of the client process, from the
      kernel's accounting (the rusage that os.wait4 returns when the client is reaped; it
      includes all of the client's threads), in microseconds, divided by the number of
      requests the tool says it completed;
    - optionally, memory flatness: webtune's peak RSS (ru_maxrss) after a short and a long run.

How
    - nginx (/usr/sbin/nginx) runs in the foreground from a private temp directory (own prefix,
      config, pid file and error log; never /etc/nginx), one worker, access log off, keep-alive
      requests unlimited in practice, listening on a free port of 127.0.0.1, pinned to CPU 1.
    - Each client runs pinned to CPU 0 (taskset execs into the tool, so the pid reaped is the
      tool's), -c 50, for --seconds, in turn, for --rounds rounds (tools interleaved within a
      round so drift hits all of them alike). Two modes:
        keep-alive:    webtune -t 1, webtune -t 1 --no-coalesce (webtune-nc, no bar), wrk -t1,
                       ab -k, oha, and floor (bench/floor.rs, no bar: the least an epoll client
                       does per request -- one send, reads until empty, a share of a wait --
                       with no parsing or timing; built by `cargo build --release --example
                       floor`, which this script runs)
        no keep-alive: webtune --no-keepalive, ab, oha --disable-keepalive (wrk cannot)
        http/2 (h2c):  webtune --h2 -t 1 and h2load -t 1 (Debian nghttp2-client), each at
                       --streams/-m 1 and 10, against the same nginx's h2c listener (prior
                       knowledge: `listen ... http2` before nginx 1.25.1, `http2 on` after)
      A peer that is not installed is reported as skipped.
    - A table per mode: medians over the rounds (with min-max), the kernel's share of the
      client CPU (sys %), how often the client blocked per request (sleeps/req, its voluntary
      context switches), failed requests summed over the rounds, ratios to wrk (keep-alive)
      or ab (no keep-alive), and PASS/FAIL for the bars:
        keep-alive:    webtune CPU/request <= 0.8 x wrk's, requests/s >= 0.95 x wrk's
        no keep-alive: webtune requests/s >= ab's
        http/2:        webtune CPU/request <= h2load's, requests/s >= 0.95 x h2load's, at
                       each stream count
        memory:        peak RSS of a 60 s run within 5 MiB of a 10 s run's
    - After the keep-alive table, what one sleep costs here (bench/wake.rs, also built by
      this script): the CPU a thread on the client's core is charged per wake-up from the
      server's core, woken every 0, 5, 10 and 20 us. A client's CPU per request is its work
      plus sleeps/req times that; on a virtual machine a sleep can cost more than a request.

Usage
    python3 bench/compare.py                # 3 rounds x 5 s per tool and mode, then memory
    python3 bench/compare.py --quick        # 1 round x 2 s, memory check 3 s vs 6 s
    python3 bench/compare.py --memory       # the memory check only
    python3 bench/compare.py --no-memory    # the comparison only
    python3 bench/compare.py --h2-only      # the HTTP/2 tables only

Exit status: 0 when every bar passed, 1 when one failed, 2 on a setup error, 130 when
interrupted. Everything it starts is stopped at the end, on error and on Ctrl-C/SIGTERM.
"""

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Callable, Optional

from benchlib import SetupError, check, progress, require_webtune, run_main, stop_group

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NGINX = "/usr/sbin/nginx"
CLIENT_CPU = "0"
SERVER_CPU = "1"
BODY_BYTES = 1024
MEMORY_BAR_KIB = 5 * 1024


# ---------------------------------------------------------------------------------------------
# Processes


@dataclass
class Run:
    """One client run: its output, exit code and the kernel's accounting of it."""
    stdout: str
    stderr: str
    exit_code: int
    user_s: float         # ru_utime
    sys_s: float          # ru_stime
    max_rss_kib: int      # ru_maxrss
    sleeps: int           # ru_nvcsw: the times it blocked (waited for the server)
    wall_s: float


def run_pinned(argv, cpu=CLIENT_CPU):
    """Runs argv under `taskset -c cpu` to completion and returns a Run. Output goes to temp
    files (no pipe can fill up and stall the client); the child is reaped with os.wait4 for its
    rusage. On an exception (Ctrl-C) the child is stopped and reaped before it propagates."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(["taskset", "-c", cpu] + argv, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, start_new_session=True)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
        finally:
            stop_group(proc, grace=2.0)
        wall = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        return Run(out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                   proc.returncode, usage.ru_utime, usage.ru_stime, usage.ru_maxrss, usage.ru_nvcsw,
                   wall)


# ---------------------------------------------------------------------------------------------
# nginx


def free_port():
    """A TCP port of 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nginx_version(binary):
    """nginx's version as a tuple, from `nginx -v` (which prints on stderr)."""
    try:
        out = subprocess.run([binary, "-v"], capture_output=True, text=True, timeout=10).stderr
    except (OSError, subprocess.TimeoutExpired):
        return (0,)
    m = re.search(r"nginx/(\d+)\.(\d+)\.(\d+)", out)
    return tuple(int(x) for x in m.groups()) if m else (0,)


def h2c_server(prefix, port, version):
    """A server block speaking h2c with prior knowledge on `port`: `http2 on` since nginx
    1.25.1, the listen parameter before."""
    if version >= (1, 25, 1):
        listen = f"listen 127.0.0.1:{port} backlog=4096;\n        http2 on;"
    else:
        listen = f"listen 127.0.0.1:{port} http2 backlog=4096;"
    return f"""    server {{
        {listen}
        root {prefix}/html;
    }}
"""


def nginx_config(prefix, port, h2_port, version):
    """The whole nginx.conf: foreground, one worker, everything under `prefix`; HTTP/1.1 on
    `port`, h2c on `h2_port`."""
    tmp = os.path.join(prefix, "tmp")
    return f"""daemon off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    default_type text/html;
    keepalive_requests 1000000000;
    keepalive_timeout 75s;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root {prefix}/html;
    }}
{h2c_server(prefix, h2_port, version)}}}
"""


class Nginx:
    """A private nginx in a temp directory, pinned to SERVER_CPU. Use as a context manager;
    leaving the block stops it (SIGTERM, then SIGKILL) and removes the directory."""

    def __init__(self, binary=NGINX):
        self.binary = binary
        self.prefix = None
        self.port = None
        self.h2_port = None
        self.proc = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/1k.html"

    @property
    def h2_url(self):
        return f"http://127.0.0.1:{self.h2_port}/1k.html"

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *_exc):
        self.stop()

    def start(self, attempts=3):
        if not os.access(self.binary, os.X_OK):
            raise SetupError(f"nginx not found at {self.binary}")
        self.prefix = tempfile.mkdtemp(prefix="webtune-compare-")
        self.write_files()
        for _ in range(attempts):  # the free port may be taken between free_port() and bind
            self.port, self.h2_port = free_port(), free_port()
            with open(os.path.join(self.prefix, "nginx.conf"), "w") as f:
                f.write(nginx_config(self.prefix, self.port, self.h2_port,
                                     nginx_version(self.binary)))
            self.proc = subprocess.Popen(
                ["taskset", "-c", SERVER_CPU, self.binary, "-p", self.prefix + "/",
                 "-c", os.path.join(self.prefix, "nginx.conf"),
                 "-e", os.path.join(self.prefix, "error.log")],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True)
            if self.wait_ready():
                return
            stop_group(self.proc)
        raise SetupError("nginx did not start:\n" + self.error_log())

    def write_files(self):
        """The document root with the 1 KiB file, readable by an unprivileged worker."""
        html = os.path.join(self.prefix, "html")
        os.makedirs(html)
        os.makedirs(os.path.join(self.prefix, "tmp"))
        with open(os.path.join(html, "1k.html"), "w") as f:
            f.write("x" * BODY_BYTES)
        for path, mode in ((self.prefix, 0o755), (html, 0o755),
                           (os.path.join(html, "1k.html"), 0o644)):
            os.chmod(path, mode)

    def wait_ready(self, timeout=10.0):
        """True once the file is served whole; False if nginx exits or the time runs out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(self.url, timeout=1) as resp:
                    if resp.status == 200 and len(resp.read()) == BODY_BYTES:
                        return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def error_log(self):
        try:
            with open(os.path.join(self.prefix, "error.log")) as f:
                return f.read()[-2000:]
        except OSError:
            return "(no error log)"

    def stop(self):
        if self.proc is not None:
            stop_group(self.proc)
        if self.prefix is not None:
            shutil.rmtree(self.prefix, ignore_errors=True)
            self.prefix = None


# ---------------------------------------------------------------------------------------------
# Tools: how to run each one and how to read its output


@dataclass
class Figures:
    """What a client's output says: completed requests, requests/s, failures."""
    completed: int
    rps: float
    failed: int = 0


def first_number(pattern, text, cast=float):
    m = re.search(pattern, text, re.MULTILINE)
    return cast(m.group(1)) if m else None


def parse_webtune(text):
    result = json.loads(text)["result"]
    return Figures(result["succeeded"], result["requests_per_s"], result["failed"])


def parse_h2load(text):
    """h2load's summary: "finished in 5.00s, 12345.67 req/s, ..." and "requests: N total, N
    started, N done, N succeeded, N failed, N errored, N timeout"."""
    rps = first_number(r"^finished in [\d.]+s, ([\d.]+) req/s", text)
    m = re.search(r"^requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, "
                  r"(\d+) errored, (\d+) timeout", text, re.MULTILINE)
    if rps is None or not m:
        return None
    succeeded, failed, errored, timeout = (int(x) for x in m.groups())
    return Figures(succeeded, rps, failed + errored + timeout)


def make_h2_tools(webtune, seconds, conns, streams):
    """webtune --h2 and h2load at `streams` streams per connection, one thread each."""
    c, s, m = str(conns), str(seconds), str(streams)

    def webtune_argv(url, _keepalive):
        return [webtune, "bench", "--h2", "--streams", m, "-t", "1", "-c", c, "-d", f"{s}s", "--quiet",
                "--json", url]

    def h2load_argv(url, _keepalive):
        # -D: a timed run; -m: streams per connection; no warm-up, as the others.
        return [h2load, "-t", "1", "-c", c, "-m", m, "-D", s, url]

    h2load = shutil.which("h2load")
    return [
        Tool("webtune", webtune, webtune_argv, parse_webtune),
        Tool("h2load", h2load, h2load_argv, parse_h2load,
             "not on PATH (apt-get install nghttp2-client)"),
    ]


def parse_floor(text):
    completed = first_number(r"^requests (\d+)$", text, int)
    return Figures(completed, first_number(r"^requests/s ([\d.]+)$", text), 0)


def parse_wrk(text):
    completed = first_number(r"^\s*(\d+) requests in ", text, int)
    rps = first_number(r"^Requests/sec:\s+([\d.]+)", text)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)",
                       text)
    non_2xx = first_number(r"Non-2xx or 3xx responses:\s+(\d+)", text, int) or 0
    failed = non_2xx + (sum(int(g) for g in errors.groups()) if errors else 0)
    return Figures(completed, rps, failed)


def parse_ab(text):
    completed = first_number(r"^Complete requests:\s+(\d+)", text, int)
    rps = first_number(r"^Requests per second:\s+([\d.]+)", text)
    failed = first_number(r"^Failed requests:\s+(\d+)", text, int) or 0
    failed += first_number(r"^Non-2xx responses:\s+(\d+)", text, int) or 0
    return Figures(completed, rps, failed)


def parse_oha_json(text):
    report = json.loads(text)
    codes = report.get("statusCodeDistribution") or {}
    errors = report.get("errorDistribution") or {}
    # Requests still in flight when -z ran out are "aborted due to deadline": not failures
    # (webtune's in_flight_at_end, which wrk and ab do not count either).
    errors = {why: n for why, n in errors.items() if "deadline" not in why}
    completed = sum(codes.values())
    non_2xx = sum(n for code, n in codes.items() if not str(code).startswith(("2", "3")))
    return Figures(completed, report["summary"]["requestsPerSec"],
                   non_2xx + sum(errors.values()))


def oha_json_flag(oha):
    """The flag by which the installed oha prints JSON, from its --help; None if it has none."""
    try:
        help_text = subprocess.run([oha, "--help"], capture_output=True, text=True,
                                   timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    if "--output-format" in help_text:
        return ["--output-format", "json"]
    if re.search(r"^\s*-j\b", help_text, re.MULTILINE) or "--json" in help_text:
        return ["-j"]
    return None


@dataclass
class Tool:
    """A load generator: argv(url, keepalive) gives its command line for a mode, or None when
    it has no such mode; parse(stdout) gives its Figures."""
    name: str
    path: Optional[str]
    argv: Callable[[str, bool], Optional[list]]
    parse: Callable[[str], Figures]
    missing_reason: str = ""

    @property
    def available(self):
        return self.path is not None


def make_tools(webtune, seconds, conns):
    """webtune, wrk, ab and oha, each with its path (None when not installed)."""
    c, s = str(conns), str(seconds)

    def webtune_argv(url, keepalive):
        argv = [webtune, "bench", "-t", "1", "-c", c, "-d", f"{s}s", "--quiet", "--json"]
        return argv + ([] if keepalive else ["--no-keepalive"]) + [url]

    def webtune_nc_argv(url, keepalive):
        # The same without wake-up coalescing (wrk's way of collecting responses): shown for
        # comparison, not a bar; without keep-alive webtune does not coalesce anyway.
        return webtune_argv(url, True)[:-1] + ["--no-coalesce", url] if keepalive else None

    def wrk_argv(url, keepalive):
        return [wrk, "-t1", f"-c{c}", f"-d{s}s", url] if keepalive else None

    def ab_argv(url, keepalive):
        # -n after -t: ab's -t resets the request count to 50000; a huge -n lets -t govern.
        return [ab] + (["-k"] if keepalive else []) + ["-c", c, "-t", s, "-n", "100000000", url]

    oha_flag = oha_json_flag(oha) if (oha := shutil.which("oha")) else None

    def oha_argv(url, keepalive):
        argv = [oha, "-z", f"{s}s", "-c", c, "--no-tui"] + oha_flag
        return argv + ([] if keepalive else ["--disable-keepalive"]) + [url]

    def floor_argv(url, keepalive):
        return [floor, url, c, s] if keepalive else None

    wrk, ab = shutil.which("wrk"), shutil.which("ab")
    floor = example("floor")
    return [
        Tool("webtune", webtune, webtune_argv, parse_webtune),
        Tool("webtune-nc", webtune, webtune_nc_argv, parse_webtune),
        Tool("wrk", wrk, wrk_argv, parse_wrk, "not on PATH (apt-get install wrk)"),
        Tool("ab", ab, ab_argv, parse_ab, "not on PATH (apt-get install apache2-utils)"),
        Tool("oha", oha if oha_flag else None, oha_argv, parse_oha_json,
             "not on PATH (cargo install oha)" if not oha else "its --help shows no JSON output"),
        Tool("floor", floor, floor_argv, parse_floor,
             "not built (cargo build --release --example floor)"),
    ]


# ---------------------------------------------------------------------------------------------
# Measuring


@dataclass
class Sample:
    rps: float
    cpu_us_per_req: float
    sys_share: float      # the part of that CPU spent in the kernel
    sleeps_per_req: float # how often it ran out of responses to read and blocked
    completed: int
    failed: int


@dataclass
class ToolResult:
    name: str
    samples: list = field(default_factory=list)
    problems: list = field(default_factory=list)

    def median_rps(self):
        return statistics.median(s.rps for s in self.samples)

    def median_cpu(self):
        return statistics.median(s.cpu_us_per_req for s in self.samples)


def measure_once(tool, url, keepalive):
    """One run of one tool; a Sample, or a string saying what went wrong."""
    run = run_pinned(tool.argv(url, keepalive))
    try:
        figures = tool.parse(run.stdout)
    except (ValueError, KeyError, TypeError) as e:
        figures, why = None, f"{type(e).__name__}: {e}"
    else:
        why = "no figures in its output"
    if figures is None or not figures.completed or not figures.rps:
        detail = (run.stderr.strip() or run.stdout.strip())[-300:]
        return f"exit {run.exit_code}, {why}: {detail}"
    cpu_s = run.user_s + run.sys_s
    return Sample(figures.rps, cpu_s * 1e6 / figures.completed,
                  run.sys_s / cpu_s if cpu_s else 0.0, run.sleeps / figures.completed,
                  figures.completed, figures.failed)


def measure_mode(tools, url, keepalive, rounds, pause=1.0, label=None):
    """Runs every tool that has this mode, interleaved, `rounds` times. Returns
    (results by name, skipped tools with the reason)."""
    active, skipped = [], []
    for tool in tools:
        if not tool.available:
            skipped.append((tool.name, tool.missing_reason))
        elif tool.argv(url, keepalive) is None:
            skipped.append((tool.name, "has no such mode"))
        else:
            active.append(tool)
    results = {tool.name: ToolResult(tool.name) for tool in active}
    for r in range(rounds):
        for tool in active:
            progress(f"  {label or mode_name(keepalive)}: round {r + 1}/{rounds}, {tool.name} ...")
            outcome = measure_once(tool, url, keepalive)
            if isinstance(outcome, Sample):
                results[tool.name].samples.append(outcome)
            else:
                results[tool.name].problems.append(f"round {r + 1}: {outcome}")
            time.sleep(pause)  # let nginx and the sockets settle between runs
    return results, skipped


def mode_name(keepalive):
    return "keep-alive" if keepalive else "no keep-alive"


# ---------------------------------------------------------------------------------------------
# Reporting


def ratio(value, base):
    return f"{value / base:.3f}" if base else "-"


def print_table(results, skipped, keepalive, baseline, rounds, seconds, conns, label=None):
    """The per-mode table: medians, ranges, failures and ratios to the baseline tool."""
    print(f"\n== {label or mode_name(keepalive)}: -c {conns}, {seconds} s per run, {rounds} round(s); "
          f"client on CPU {CLIENT_CPU}, nginx on CPU {SERVER_CPU}")
    base = results.get(baseline)
    base = base if base and base.samples else None
    head = (f"{'tool':<10} {'req/s':>9} {'req/s min-max':>15} {'CPU us/req':>10} "
            f"{'CPU min-max':>13} {'sys %':>5} {'sleeps/req':>10} {'failed':>7} "
            f"{'rps/' + baseline:>9} {'CPU/' + baseline:>9}")
    print(head)
    print("-" * len(head))
    for res in results.values():
        if not res.samples:
            print(f"{res.name:<10} no successful run")
            continue
        rps = [s.rps for s in res.samples]
        cpu = [s.cpu_us_per_req for s in res.samples]
        failed = sum(s.failed for s in res.samples)
        sys_pct = 100 * statistics.median(s.sys_share for s in res.samples)
        sleeps = statistics.median(s.sleeps_per_req for s in res.samples)
        print(f"{res.name:<10} {res.median_rps():>9.0f} {f'{min(rps):.0f}-{max(rps):.0f}':>15} "
              f"{res.median_cpu():>10.2f} {f'{min(cpu):.2f}-{max(cpu):.2f}':>13} {sys_pct:>5.0f} "
              f"{sleeps:>10.3f} {failed:>7} "
              f"{ratio(res.median_rps(), base and base.median_rps()):>9} "
              f"{ratio(res.median_cpu(), base and base.median_cpu()):>9}")
    for name, why in skipped:
        print(f"{name:<10} skipped: {why}")
    for res in results.values():
        for problem in res.problems:
            print(f"note: {res.name} {problem}")


def check_bars(results, keepalive):
    """The bars for webtune in this mode; False if one failed or could not be checked."""
    baseline = "wrk" if keepalive else "ab"
    wt, base = results.get("webtune"), results.get(baseline)
    if not (wt and wt.samples and base and base.samples):
        return check(False, f"cannot compare: no figures for webtune or {baseline}")
    cpu, base_cpu = wt.median_cpu(), base.median_cpu()
    rps, base_rps = wt.median_rps(), base.median_rps()
    if keepalive:
        ok_cpu = check(cpu <= 0.8 * base_cpu,
                       f"keep-alive CPU/request: webtune {cpu:.2f} us <= 0.8 x wrk's "
                       f"{base_cpu:.2f} us (ratio {cpu / base_cpu:.3f})")
        ok_rps = check(rps >= 0.95 * base_rps,
                       f"keep-alive requests/s: webtune {rps:.0f} >= 0.95 x wrk's "
                       f"{base_rps:.0f} (ratio {rps / base_rps:.3f})")
        return ok_cpu and ok_rps
    return check(rps >= base_rps, f"no keep-alive requests/s: webtune {rps:.0f} >= ab's "
                                  f"{base_rps:.0f} (ratio {rps / base_rps:.3f})")


def compare_mode(tools, url, keepalive, rounds, seconds, conns):
    """Measures one mode, prints its table and bars; True if the bars passed."""
    results, skipped = measure_mode(tools, url, keepalive, rounds)
    print_table(results, skipped, keepalive, "wrk" if keepalive else "ab", rounds, seconds, conns)
    return check_bars(results, keepalive)


H2_STREAMS = (1, 10)


def compare_h2(webtune, url, rounds, seconds, conns):
    """webtune --h2 against h2load at each stream count; True if the bars passed."""
    passed = True
    for streams in H2_STREAMS:
        label = f"http/2 h2c, {streams} stream(s) per connection"
        tools = make_h2_tools(webtune, seconds, conns, streams)
        results, skipped = measure_mode(tools, url, True, rounds, label=label)
        print_table(results, skipped, True, "h2load", rounds, seconds, conns, label=label)
        wt, base = results.get("webtune"), results.get("h2load")
        if not (wt and wt.samples and base and base.samples):
            passed &= check(False, f"{label}: cannot compare: no figures for webtune or h2load")
            continue
        cpu, base_cpu = wt.median_cpu(), base.median_cpu()
        rps, base_rps = wt.median_rps(), base.median_rps()
        passed &= check(cpu <= base_cpu, f"http/2 -m {streams} CPU/request: webtune {cpu:.2f} us "
                                         f"<= h2load's {base_cpu:.2f} us (ratio {cpu / base_cpu:.3f})")
        passed &= check(rps >= 0.95 * base_rps,
                        f"http/2 -m {streams} requests/s: webtune {rps:.0f} >= 0.95 x h2load's "
                        f"{base_rps:.0f} (ratio {rps / base_rps:.3f})")
    return passed


def memory_check(webtune, url, short_s, long_s, conns):
    """webtune's peak RSS after a short and a long keep-alive run; True if flat enough."""
    print(f"\n== memory: webtune peak RSS (ru_maxrss) after {short_s} s and {long_s} s "
          f"(keep-alive, -c {conns}, -t 1, CPU {CLIENT_CPU})")
    rss = {}
    for secs in (short_s, long_s):
        progress(f"  memory: {secs} s run ...")
        run = run_pinned([webtune, "bench", "-t", "1", "-c", str(conns), "-d", f"{secs}s",
                          "--quiet", "--json", url])
        try:
            done = f"{json.loads(run.stdout)['result']['succeeded']} requests"
        except (ValueError, KeyError):
            done = f"no report (exit {run.exit_code})"
        rss[secs] = run.max_rss_kib
        print(f"{secs:>5} s: max RSS {run.max_rss_kib} KiB ({done})")
    grown = rss[long_s] - rss[short_s]
    print(f" diff: {grown:+d} KiB")
    return check(abs(grown) <= MEMORY_BAR_KIB,
                 f"memory: the {long_s} s run's max RSS is within {MEMORY_BAR_KIB} KiB of the "
                 f"{short_s} s run's ({grown:+d} KiB)")


# ---------------------------------------------------------------------------------------------
# Main


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="See the module docstring (head bench/compare.py).")
    ap.add_argument("--webtune", default=os.path.join(ROOT, "target", "release", "webtune"),
                    help="webtune binary (default: target/release/webtune of this repository)")
    ap.add_argument("--rounds", type=int, help="rounds per tool and mode (default 3)")
    ap.add_argument("--seconds", type=int, help="seconds per run (default 5)")
    ap.add_argument("-c", "--connections", type=int, default=50)
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: 1 round of 2 s, memory check 3 s vs 6 s")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--memory", action="store_true", help="run only the memory check")
    group.add_argument("--no-memory", action="store_true", help="skip the memory check")
    group.add_argument("--h2-only", action="store_true", help="run only the HTTP/2 tables")
    ap.add_argument("--short-seconds", type=int, help="memory check's short run (default 10)")
    ap.add_argument("--long-seconds", type=int, help="memory check's long run (default 60)")
    a = ap.parse_args(argv)
    quick = {"rounds": 1, "seconds": 2, "short_seconds": 3, "long_seconds": 6}
    full = {"rounds": 3, "seconds": 5, "short_seconds": 10, "long_seconds": 60}
    for key, value in (quick if a.quick else full).items():
        if getattr(a, key) is None:
            setattr(a, key, value)
    return a


def build_examples():
    """Builds bench/floor.rs (the "floor" row) and bench/wake.rs (the sleep costs); what cannot
    be built is skipped."""
    cargo = shutil.which("cargo")
    if not cargo:
        return
    try:
        subprocess.run([cargo, "build", "--release", "--quiet", "--example", "floor",
                        "--example", "wake"], cwd=ROOT, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired):
        pass


def example(name):
    path = os.path.join(ROOT, "target", "release", "examples", name)
    return path if os.access(path, os.X_OK) else None


WAKE_GAPS_US = (0, 5, 10, 20)


def sleep_costs():
    """What a sleep costs the sleeper here (bench/wake.rs), beside the sleeps/req column: a
    client's CPU per request is its work plus sleeps/req times this."""
    wake = example("wake")
    print("\n== sleep cost on this machine: CPU charged to a thread on CPU "
          f"{CLIENT_CPU} per wake-up from CPU {SERVER_CPU} (bench/wake.rs)")
    if not wake:
        print("skipped: not built (cargo build --release --example wake)")
        return
    for gap in WAKE_GAPS_US:
        run = run_pinned([wake, SERVER_CPU, str(gap)])
        cost = first_number(r"^cpu_us_per_wake ([\d.]+)$", run.stdout)
        wakes = first_number(r"^wakes (\d+)$", run.stdout, int)
        slept = first_number(r"^sleeps (\d+)$", run.stdout, int)
        if cost is None or not wakes:
            why = run.stderr.strip()[-200:]
            print(f"gap {gap:>3} us: no figures (exit {run.exit_code}): {why}")
            continue
        print(f"gap {gap:>3} us: {cost:6.2f} us of CPU per wake-up, "
              f"{100 * slept / wakes:3.0f}% of them after a sleep")


def print_setup(a, tools, url):
    print(f"webtune {a.webtune}; nginx {NGINX} at {url}; "
          f"CPUs available: {sorted(os.sched_getaffinity(0))}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("tools: " + ", ".join(f"{t.name}={t.path or 'missing'}" for t in tools))


def main(argv=None):
    a = parse_args(argv)
    return run_main(lambda: run(a))


def run(a):
    """Every comparison `a` asks for; True when all passed."""
    require_webtune(a.webtune)
    if not shutil.which("taskset"):
        raise SetupError("taskset not found (util-linux)")
    if not (a.memory or a.h2_only):
        build_examples()
    passed = True
    with Nginx() as nginx:
        tools = make_tools(a.webtune, a.seconds, a.connections)
        if a.h2_only:
            tools = make_h2_tools(a.webtune, a.seconds, a.connections, 1)
        print_setup(a, tools, nginx.h2_url if a.h2_only else nginx.url)
        if not (a.memory or a.h2_only):
            for keepalive in (True, False):
                passed &= compare_mode(tools, nginx.url, keepalive, a.rounds, a.seconds,
                                       a.connections)
                if keepalive:
                    sleep_costs()
        if not a.memory:
            passed &= compare_h2(a.webtune, nginx.h2_url, a.rounds, a.seconds, a.connections)
        if not (a.no_memory or a.h2_only):
            passed &= memory_check(a.webtune, nginx.url, a.short_seconds, a.long_seconds,
                                   a.connections)
    return passed


if __name__ == "__main__":
    sys.exit(main())
