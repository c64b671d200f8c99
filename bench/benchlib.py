"""What bench/ scripts share: stopping what they started, whatever ends them, and their
PASS/FAIL and progress lines."""

import os
import signal
import sys
import time


class Interrupted(Exception):
    """Raised from the SIGINT/SIGTERM/SIGHUP handler so that every finally block runs."""


class SetupError(Exception):
    """Something the benchmark needs is missing or did not start."""


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
