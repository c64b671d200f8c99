"""What bench/ scripts share: launching a target and running a webtune bounded in time,
stopping what they started, whatever ends them, two statistics, and their PASS/FAIL and
progress lines."""

import argparse
import contextlib
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time


# Student's t, two-sided, for 1 to 30 degrees of freedom (standard tables); 30's beyond.
T_TWO_SIDED = {
    0.95: [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
           2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
           2.060, 2.056, 2.052, 2.048, 2.045, 2.042],
    0.99: [63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106, 3.055,
           3.012, 2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797,
           2.787, 2.779, 2.771, 2.763, 2.756, 2.750],
}


def t_quantile(level, df):
    """Student's t of a two-sided `level` interval (0.95 or 0.99) at `df` >= 1 degrees of freedom."""
    table = T_TWO_SIDED[level]
    return table[min(df, len(table)) - 1]


def wilson(k, n, z=1.959964):
    """The 95% Wilson score interval of k successes in n."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


class Interrupted(Exception):
    """Raised from the SIGINT/SIGTERM/SIGHUP handler so that every finally block runs."""


class SetupError(Exception):
    """Something the benchmark needs is missing or did not start."""


def require_webtune(path):
    """A SetupError unless `path` is an executable (the webtune binary a bench runs)."""
    if not os.access(path, os.X_OK):
        raise SetupError(f"no webtune binary at {path} (cargo build --release)")


def install_signal_handlers():
    """Turns the first SIGINT/SIGTERM/SIGHUP into Interrupted; later ones are ignored so the
    cleanup that follows cannot itself be interrupted."""
    state = {"seen": False}

    def handler(signum, _frame):
        if state["seen"]:
            return
        state["seen"] = True
        raise Interrupted(signal.Signals(signum).name)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


def run_main(body):
    """Runs a bench's `body` (True when every bar passed) under the signal handlers and maps
    how it ended onto the exit code: 0 passed, 1 a bar failed, 2 a setup error, 130
    interrupted. `body`'s own finally blocks stop what it started."""
    install_signal_handlers()
    try:
        return 0 if body() else 1
    except SetupError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Interrupted as e:
        print(f"\ninterrupted ({e}); everything started has been stopped", file=sys.stderr)
        return 130


def stop_group(proc, grace=5.0):
    """Stops a child started in its own session and everything in its process group:
    SIGTERM, then SIGKILL after `grace` seconds (webtune itself may take up to 10 s to stop its
    servers). The leader is reaped only after the group has been SIGKILLed, so its pgid cannot
    have been reused by an unrelated process meanwhile."""
    if proc.returncode is not None:
        return
    pgid = proc.pid  # start_new_session: the child leads its own group
    signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and not exited_unreaped(proc.pid):
        time.sleep(0.02)
    signal_group(pgid, signal.SIGKILL)  # stragglers, or the leader itself after the grace
    _, status = os.waitpid(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)


@contextlib.contextmanager
def scratch(prefix):
    """A temp directory and a list for the processes a bench starts: however the block ends,
    every process still listed is stopped and the directory removed."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    started = []
    try:
        yield tmp, started
    finally:
        for proc in list(started):
            stop_group(proc)
        shutil.rmtree(tmp, ignore_errors=True)


def server_parser(doc, servers):
    """The argument parser of a script that launches one of `servers` (the first by default)
    and measures it with the webtune at --webtune; its description is `doc`'s first paragraph."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--webtune", required=True)
    ap.add_argument("--server", choices=servers, default=servers[0])
    return ap


def launch(webtune, file, args, started):
    """`webtune launch FILE ARGS` in its own session, appended to `started` (the caller stops
    it): (the process, its address once ready, or None when it ended before)."""
    proc = subprocess.Popen([webtune, "launch", file] + args, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    started.append(proc)
    for line in proc.stdout:
        m = re.search(r"ready at (http://127\.0\.0\.1:\d+)", line)
        if m:
            return proc, m.group(1)
    return proc, None


def run_bounded(argv, timeout, cwd=None, env=None, after=None):
    """Runs `argv` in its own session, its output in temp files, for `timeout` seconds at most,
    then stops its group (a webtune may take 10 s to stop its servers) and calls `after`
    (whatever ends it): (stdout, stderr, exit status or None when timed out, wall seconds)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=err, start_new_session=True)
        timed_out = False
        try:
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
        finally:
            stop_group(proc, grace=15.0)
            if after:
                after()
        wall = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    return stdout, stderr, None if timed_out else proc.returncode, wall


def signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def exited_unreaped(pid):
    """True once `pid` has exited; leaves it a zombie (WNOWAIT) so its pid stays taken."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def progress(message):
    print(message, file=sys.stderr, flush=True)


def check(passed, text):
    """Prints a PASS/FAIL line; returns passed."""
    print(f"{'PASS' if passed else 'FAIL'}: {text}")
    return passed
