#!/usr/bin/env python3
"""webtune against its peers (wrk, ab, oha), side by side in one run.

Starts its own nginx on 127.0.0.1 (one worker, pinned to CPU 1) serving a 1 KiB file, then
runs each client pinned to CPU 0, in turn, for several rounds, and prints per tool: requests
per second and the client's CPU per request (user + sys from the OS's accounting of the client
process, wait4's rusage), with the ratios to wrk (keep-alive) or ab (no keep-alive) and the
bars of issue 2 as PASS/FAIL lines. Then the memory check: a 60 s run must end within 5 MiB
of a 10 s run's peak RSS.

    python3 bench/peers.py                 # 3 rounds, 5 s each, then the memory check
    python3 bench/peers.py --quick         # 1 round, 2 s, memory check 3 s vs 6 s

Everything it starts is stopped at the end, on error and on Ctrl-C.
"""

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """A private nginx: own prefix, config, logs and pid file; one worker on CPU 1."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="webtune-bench-")
        os.chmod(self.dir, 0o755)
        self.port = free_port()
        html = os.path.join(self.dir, "html")
        tmp = os.path.join(self.dir, "tmp")
        os.makedirs(html)
        os.makedirs(tmp)
        with open(os.path.join(html, "1k.html"), "w") as f:
            f.write("w" * 1024)
        os.chmod(html, 0o755)
        os.chmod(os.path.join(html, "1k.html"), 0o644)
        d = self.dir
        user = "user root;" if os.geteuid() == 0 else ""
        conf = f"""
daemon off; master_process off; worker_processes 1; {user}
pid {d}/nginx.pid; error_log {d}/error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy; fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;
  server {{ listen 127.0.0.1:{self.port} backlog=4096; root {html}; keepalive_requests 100000000; }}
}}
"""
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(conf)
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.proc = subprocess.Popen(
            ["taskset", "-c", "1", nginx, "-p", d, "-c", os.path.join(d, "nginx.conf")],
            stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise SystemExit("nginx did not start")

    def url(self):
        return f"http://127.0.0.1:{self.port}/1k.html"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def run_client(argv):
    """Runs a client pinned to CPU 0; returns (stdout, cpu seconds, max RSS KiB)."""
    proc = subprocess.Popen(["taskset", "-c", "0"] + argv, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    out = proc.stdout.read().decode(errors="replace")
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0,):
        sys.stderr.write(f"warning: {argv[0]} exited {proc.returncode}: {err.strip()[:300]}\n")
    return out, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def num(pattern, text):
    m = re.search(pattern, text)
    return float(m.group(1)) if m else None


def tools(webtune, seconds, conns, keepalive):
    """(name, argv, parser) for each client available; a parser returns (completed, rps)."""
    url = "{url}"
    out = []
    wt = [webtune, "bench", "-q", "-t", "1", "-c", str(conns), "-d", f"{seconds}s"]
    if not keepalive:
        wt.append("--no-keepalive")
    out.append(("webtune", wt + [url], lambda t: (num(r"Complete requests:\s+(\d+)", t),
                                                   num(r"Requests per second:\s+([\d.]+)", t))))
    if keepalive and shutil.which("wrk"):
        out.append(("wrk", ["wrk", "-t1", f"-c{conns}", f"-d{seconds}s", url],
                    lambda t: (num(r"(\d+) requests in", t), num(r"Requests/sec:\s+([\d.]+)", t))))
    if shutil.which("ab"):
        ab = ["ab", "-q", "-c", str(conns), "-t", str(seconds), "-n", "100000000"]
        if keepalive:
            ab.append("-k")
        out.append(("ab -k" if keepalive else "ab", ab + [url],
                    lambda t: (num(r"Complete requests:\s+(\d+)", t),
                               num(r"Requests per second:\s+([\d.]+)", t))))
    if shutil.which("oha"):
        oha = ["oha", "--no-tui", "-z", f"{seconds}s", "-c", str(conns), "--output-format", "json"]
        if not keepalive:
            oha.append("--disable-keepalive")

        def parse_oha(t):
            import json
            try:
                j = json.loads(t)
            except ValueError:
                return None, None
            s = j.get("summary", {})
            total = sum((j.get("statusCodeDistribution") or {}).values())
            return total, s.get("requestsPerSec")
        out.append(("oha", oha + [url], parse_oha))
    return out


def compare(nginx, webtune, rounds, seconds, conns, keepalive):
    mode = "keep-alive" if keepalive else "no keep-alive"
    clients = tools(webtune, seconds, conns, keepalive)
    results = {name: [] for name, _, _ in clients}
    for r in range(rounds):
        for name, argv, parse in clients:
            argv = [a.replace("{url}", nginx.url()) for a in argv]
            text, cpu, _ = run_client(argv)
            done, rps = parse(text)
            if not done or not rps:
                sys.stderr.write(f"warning: no figures from {name} in round {r + 1}\n")
                continue
            results[name].append((rps, cpu * 1e6 / done))
            time.sleep(0.5)
    print(f"\n== {mode}: -c {conns}, {seconds} s, {rounds} round(s), client on CPU 0, nginx on CPU 1")
    base_name = "wrk" if keepalive else "ab"
    med = {}
    for name, rows in results.items():
        if rows:
            med[name] = (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows),
                         min(r[1] for r in rows), max(r[1] for r in rows))
    base = med.get(base_name)
    print(f"{'tool':<10} {'req/s':>10} {'cpu us/req':>11} {'(min-max)':>15} {'rps ratio':>10} {'cpu ratio':>10}"
          f"   (ratios to {base_name})")
    for name, (rps, cpu, lo, hi) in med.items():
        rr = f"{rps / base[0]:.3f}" if base else "-"
        cr = f"{cpu / base[1]:.3f}" if base else "-"
        print(f"{name:<10} {rps:>10.0f} {cpu:>11.2f} {f'{lo:.2f}-{hi:.2f}':>15} {rr:>10} {cr:>10}")
    wt = med.get("webtune")
    if wt and base:
        if keepalive:
            cpu_ok = wt[1] <= 0.8 * base[1]
            rps_ok = wt[0] >= 0.95 * base[0]
            print(f"{'PASS' if cpu_ok else 'FAIL'}: webtune CPU/request {wt[1]:.2f} us <= 0.8 x wrk's {base[1]:.2f} us"
                  f" (ratio {wt[1] / base[1]:.3f})")
            print(f"{'PASS' if rps_ok else 'FAIL'}: webtune requests/s {wt[0]:.0f} >= 0.95 x wrk's {base[0]:.0f}"
                  f" (ratio {wt[0] / base[0]:.3f})")
        else:
            ok = wt[0] >= base[0]
            print(f"{'PASS' if ok else 'FAIL'}: webtune requests/s {wt[0]:.0f} >= ab's {base[0]:.0f}"
                  f" (ratio {wt[0] / base[0]:.3f})")


def memory(nginx, webtune, short, long, conns):
    print(f"\n== memory: peak RSS of a {short} s and a {long} s run (keep-alive, -c {conns})")
    rss = {}
    for secs in (short, long):
        _, _, maxrss = run_client([webtune, "bench", "-q", "-t", "1", "-c", str(conns), "-d", f"{secs}s",
                                   nginx.url()])
        rss[secs] = maxrss
        print(f"{secs:>4} s: max RSS {maxrss} KiB")
    grown = rss[long] - rss[short]
    print(f"{'PASS' if grown <= 5 * 1024 else 'FAIL'}: the {long} s run peaked {grown} KiB above the {short} s run"
          f" (bar: 5120 KiB)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--webtune", default=os.path.join(ROOT, "target", "release", "webtune"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("-c", "--connections", type=int, default=50)
    ap.add_argument("--quick", action="store_true", help="1 round of 2 s; memory check 3 s vs 6 s")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--only", choices=["keepalive", "close"], help="run one mode only")
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.seconds = 1, 2
    short, long = (3, 6) if a.quick else (10, 60)
    if not os.path.exists(a.webtune):
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    nginx = Nginx()

    def on_signal(signum, _frame):
        nginx.stop()
        sys.exit(128 + signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        if a.only in (None, "keepalive"):
            compare(nginx, a.webtune, a.rounds, a.seconds, a.connections, keepalive=True)
        if a.only in (None, "close"):
            compare(nginx, a.webtune, a.rounds, a.seconds, a.connections, keepalive=False)
        if not a.no_memory:
            memory(nginx, a.webtune, short, long, a.connections)
    finally:
        nginx.stop()


if __name__ == "__main__":
    main()
