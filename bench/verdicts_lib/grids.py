"""The six grids of bench/verdicts.py, (a) to (f): their servers, apps, knobs and loads."""

import os
import shutil

from benchlib import progress

from .grid import GridResult, size_kib
from .rounds import rounds_of, run_grid
from .targets import LOAD_1S, ROOT, target_file, with_window
from .tuners import tuners_for

LAB_GRID_WORKERS = [1, 2, 3, 4, 6, 8]
LAB_GRID_MAX_REQUESTS = [0, 20, 100, 500]
LAB_GRID_QUICK = ([1, 4, 8], [0, 100])
REAL_GRID_WORKERS = [1, 2, 3, 4]
LAB_MEMORY = "60MiB,132MiB"
GUNICORN_GRID_WORKERS = [1, 2, 3, 4, 6, 8, 10, 12, 16, 20, 24]
GUNICORN_GRID_QUICK = [1, 4, 12]
GUNICORN_CONNECTIONS = 64
PHP_GRID_WORKERS = [1, 2, 3, 4, 6, 8, 12, 16]
PHP_GRID_QUICK = [1, 4, 8]
PHP_CONNECTIONS = 32
KNEE_GRID_WORKERS = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
KNEE_GRID_QUICK = [1, 2, 8, 32]
KNEE_CONNECTIONS = 64
APACHE_GRID = {"workers": [2, 4, 8, 16], "max_requests": [0, 50, 1000], "keepalive": ["on", "off"]}
APACHE_GRID_QUICK = {"workers": [2, 8], "max_requests": [0, 1000], "keepalive": ["on", "off"]}
APACHE_CONNECTIONS = 16
GRIDS = "abcdef"
LAB_GRID_CONFIG = {"cpu": "0.2ms", "io_wait": "2ms", "preload_mb": 16, "dirty_kb": 1024,
                   "leak_kb": 64}


def grid_lab(ws, webtune, a):
    workers, max_requests = LAB_GRID_QUICK if a.quick else (LAB_GRID_WORKERS, LAB_GRID_MAX_REQUESTS)
    res = GridResult("lab workers x max_requests", {"workers": workers, "max_requests": max_requests})
    budgets = [b.strip() for b in a.lab_memory.split(",") if b.strip()]
    for b in budgets:
        size_kib(b)  # a bad size is a setup error before anything runs
    res.tuners = tuners_for(a, "a", res.knobs, budgets)
    res.connections = LOAD_1S["connections"]

    def text_of(c, window_s=None):
        return target_file("lab", dict(LAB_GRID_CONFIG, **c), {}, with_window(LOAD_1S, window_s))

    tuner_text = target_file("lab", LAB_GRID_CONFIG, res.knobs, LOAD_1S)
    run_grid(ws, webtune, res, text_of, rounds_of(a), tuner_text)
    return res


def grid_real(ws, webtune, a, real):
    res = GridResult(f"{real.name} workers", {"workers": REAL_GRID_WORKERS})
    res.tuners = tuners_for(a, "b", res.knobs)
    # The workers strategy loads every count with max(connections, 2 x the largest) clients.
    conns = max(LOAD_1S["connections"], 2 * max(REAL_GRID_WORKERS))
    res.connections = conns

    def text(config, knobs, window_s=None):
        load = with_window(dict(LOAD_1S, connections=conns, path=real.path), window_s)
        return target_file(real.adapter, dict(real.config, **config), knobs, load, app=real.app,
                           ready=real.ready)

    run_grid(ws, webtune, res, lambda c, w=None: text(c, {}, w), rounds_of(a), text({}, res.knobs))
    return res


def have_command(name):
    return shutil.which(name) or os.access(f"/usr/sbin/{name}", os.X_OK)


SLEEPY_WSGI = '''"""verdicts.py grid (c): about 2 ms of CPU, then 8 ms waiting, per request."""
import time


def app(environ, start_response):
    end = time.thread_time() + 0.002
    while time.thread_time() < end:
        pass
    time.sleep(0.008)
    body = b"ok\\n"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
'''


def grid_gunicorn(ws, webtune, a):
    """(c) gunicorn's sync workers on a WSGI app of 2 ms CPU + 8 ms wait, 64 connections:
    throughput rises with the pool to a knee (the two cores), then stays."""
    if not have_command("gunicorn"):
        return None
    app = os.path.join(ws.dir, "sleepy.py")
    with open(app, "w") as f:
        f.write(SLEEPY_WSGI)
    workers = GUNICORN_GRID_QUICK if a.quick else GUNICORN_GRID_WORKERS
    res = GridResult("gunicorn workers (2 ms CPU + 8 ms wait)", {"workers": workers})
    res.tuners = tuners_for(a, "c", res.knobs)
    res.connections = GUNICORN_CONNECTIONS
    load = {"connections": GUNICORN_CONNECTIONS, "duration": "1s", "path": "/"}

    def text(config, knobs, window_s=None):
        return target_file("gunicorn", config, knobs, with_window(load, window_s), app=app, ready="/")

    run_grid(ws, webtune, res, lambda c, w=None: text(c, {}, w), rounds_of(a), text({}, res.knobs))
    return res


# Most requests 1-2 ms of CPU, HEAVY in 10000 of them 50 ms, then a 4 ms wait (a database's
# answer): the heavy tail scatters a 1 s window's throughput (measured: see the docstring).
NOISY_PHP = '''<?php
// verdicts.py grid (d): 1-2 ms of CPU for most requests, 50 ms for a few, then a 4 ms wait.
function cpu_us() {
    $u = getrusage();
    return ($u["ru_utime.tv_sec"] + $u["ru_stime.tv_sec"]) * 1000000
        + $u["ru_utime.tv_usec"] + $u["ru_stime.tv_usec"];
}
$r = mt_rand(0, 9999);
$us = $r < HEAVY ? 50000 : 1000 + $r % 1000;
$end = cpu_us() + $us;
$x = 0;
while (cpu_us() < $end) {
    for ($i = 0; $i < 200; $i++) { $x += $i % 7; }
}
usleep(WAIT_US);
echo "ok $x\\n";
'''
PHP_HEAVY = 300       # per 10000 requests: 3%
PHP_WAIT_US = 4000


def have_php_fpm():
    return have_command("nginx") and any(n.startswith("php-fpm") for n in os.listdir("/usr/sbin"))


def php_app(ws):
    d = os.path.join(ws.dir, "php")
    if not os.path.isdir(d):
        os.makedirs(d)
        os.chmod(d, 0o755)
        with open(os.path.join(d, "index.php"), "w") as f:
            f.write(NOISY_PHP.replace("HEAVY", str(PHP_HEAVY)).replace("WAIT_US", str(PHP_WAIT_US)))
    return d


def php_fpm_grid(ws, webtune, a, letter, name, app, workers, connections):
    """A grid of PHP-FPM (pm static, workers = pm.max_children) behind nginx on `app`'s
    /index.php, `connections` clients: grids (d) and (f)."""
    res = GridResult(name, {"workers": workers})
    res.tuners = tuners_for(a, letter, res.knobs)
    res.connections = connections
    load = {"connections": connections, "duration": "1s", "path": "/index.php"}

    def text(config, knobs, window_s=None):
        return target_file("php-fpm", dict({"pm": "static"}, **config), knobs,
                           with_window(load, window_s), app=app, ready="/index.php")

    run_grid(ws, webtune, res, lambda c, w=None: text(c, {}, w), rounds_of(a), text({}, res.knobs))
    return res


def grid_php(ws, webtune, a):
    """(d) PHP-FPM behind nginx, a PHP page whose cost is heavy-tailed, 32 connections."""
    if not have_php_fpm():
        return None
    workers = PHP_GRID_QUICK if a.quick else PHP_GRID_WORKERS
    return php_fpm_grid(ws, webtune, a, "d", "php-fpm workers (heavy-tailed page)", php_app(ws), workers,
                        PHP_CONNECTIONS)


# CPU-bound, with a short section under a lock the waiting workers poll while burning CPU
# (a spin lock, a retry loop): on 2 CPUs, past the knee more workers take the CPU the holder
# needs, and throughput falls (grid (f)).
CONTENDED_PHP = '''<?php
// verdicts.py grid (f): WORK_US of CPU, then HELD_US under a lock that waiters poll, burning CPU.
function cpu_us() {
    $u = getrusage();
    return ($u["ru_utime.tv_sec"] + $u["ru_stime.tv_sec"]) * 1000000
        + $u["ru_utime.tv_usec"] + $u["ru_stime.tv_usec"];
}
function burn($us) {
    $end = cpu_us() + $us;
    $x = 0;
    while (cpu_us() < $end) {
        for ($i = 0; $i < 200; $i++) { $x += $i % 7; }
    }
    return $x;
}
$x = burn(WORK_US);
$f = fopen(__DIR__ . "/lock", "c");
while (!flock($f, LOCK_EX | LOCK_NB)) { $x += burn(SPIN_US); }
$x += burn(HELD_US);
flock($f, LOCK_UN);
fclose($f);
echo "ok $x\\n";
'''
KNEE_WORK_US = 2000
KNEE_HELD_US = 300
KNEE_SPIN_US = 50


def contended_app(ws):
    d = os.path.join(ws.dir, "php-knee")
    if not os.path.isdir(d):
        os.makedirs(d)
        os.chmod(d, 0o777)
        text = (CONTENDED_PHP.replace("WORK_US", str(KNEE_WORK_US)).replace("HELD_US", str(KNEE_HELD_US))
                .replace("SPIN_US", str(KNEE_SPIN_US)))
        with open(os.path.join(d, "index.php"), "w") as f:
            f.write(text)
    return d


def grid_knee(ws, webtune, a):
    """(f) PHP-FPM behind nginx, a CPU-bound page with a contended lock whose waiters burn
    CPU, 64 connections: throughput rises to the CPUs, then falls past the knee."""
    if not have_php_fpm():
        return None
    workers = KNEE_GRID_QUICK if a.quick else KNEE_GRID_WORKERS
    return php_fpm_grid(ws, webtune, a, "f", "php-fpm workers (CPU-bound, contended past the knee)",
                        contended_app(ws), workers, KNEE_CONNECTIONS)


APACHE_APP = os.path.join(ROOT, "examples", "apps", "perl")
APACHE_PATH = "/hello?io=2"   # the preloaded mod_perl handler, waiting 2 ms


def have_apache():
    return have_command("apache2") and os.path.exists("/usr/lib/apache2/modules/mod_perl.so") \
        and os.path.isdir(APACHE_APP)


def grid_apache(ws, webtune, a):
    """(e) Apache prefork with mod_perl, workers x max_requests x keepalive, 16 connections:
    the example's preloaded handler (examples/apps/perl, read only) waiting 2 ms."""
    if not have_apache():
        return None
    knobs = APACHE_GRID_QUICK if a.quick else APACHE_GRID
    res = GridResult("apache prefork workers x max_requests x keepalive", dict(knobs))
    res.tuners = tuners_for(a, "e", res.knobs)
    res.connections = APACHE_CONNECTIONS
    load = {"connections": APACHE_CONNECTIONS, "duration": "1s", "path": APACHE_PATH}

    def text(config, knobs, window_s=None):
        return target_file("apache", config, knobs, with_window(load, window_s), app=APACHE_APP,
                           ready="/hello")

    run_grid(ws, webtune, res, lambda c, w=None: text(c, {}, w), rounds_of(a), text({}, res.knobs))
    return res


def run_one_grid(ws, a, label, real):
    """One grid measured and its tuners run: the GridResult, or why it could not run."""
    if label == "a":
        progress("grid (a): the lab ...")
        return grid_lab(ws, a.webtune, a)
    if label == "b":
        if real is None:
            return "neither nginx nor gunicorn is installed"
        progress(f"grid (b): {real.name} ...")
        return grid_real(ws, a.webtune, a, real)
    grid, missing = {"c": (grid_gunicorn, "gunicorn is not installed"),
                     "d": (grid_php, "php-fpm or nginx is not installed"),
                     "e": (grid_apache, "apache2 with mod_perl is not installed"),
                     "f": (grid_knee, "php-fpm or nginx is not installed")}[label]
    progress(f"grid ({label}) ...")
    return grid(ws, a.webtune, a) or missing
