"""The target files bench/verdicts.py writes for webtune, and the real server of the null
decisions and of grid (b)."""

import json
import os
import shutil
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
