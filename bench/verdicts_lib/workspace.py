"""The private temp directory every webtune of bench/verdicts.py runs in, and one bounded
`webtune tune` there."""

import json
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from typing import Optional

from benchlib import run_bounded, signal_group

BODY_BYTES = 1024


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
    stdout, stderr, code, wall = run_bounded(argv, timeout, cwd=ws.dir, env=ws.env,
                                             after=ws.reap_leftovers)
    stderr = stderr.strip()
    if code is None:
        return TuneRun(None, f"timed out after {timeout:.0f} s", wall, None, stderr)
    try:
        outcome = json.loads(stdout)
    except ValueError:
        return TuneRun(None, f"exit {code}, no JSON: {stderr[-300:]}", wall, code, stderr)
    if code != 0:
        return TuneRun(outcome, f"exit {code}: {stderr[-300:]}", wall, code, stderr)
    return TuneRun(outcome, None, wall, code, stderr)
