//! Targets against the real servers from Debian's packages: each adapter starts its server
//! with the asked worker count, serves a bench through it, shows knob changes in the
//! configuration and the process table, reports saturation and rejected configurations in
//! the server's own words, and leaves nothing behind.

use std::path::{Path, PathBuf};
use std::time::Duration;

use webtune::server::{self, Running, TargetFile};

use crate::support::{alive, bench_json, have, missing, write_lab_target};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

/// A target file written next to the examples (so `app` paths resolve the same way).
fn target(text: &str) -> TargetFile {
    TargetFile::parse(text, &examples().join("test.toml")).unwrap_or_else(|e| panic!("{}", e.0))
}

/// Every pid the server runs as, master first.
fn all_pids(r: &Running) -> Vec<i32> {
    let mut p = vec![r.master_pid()];
    p.extend(r.worker_pids());
    p
}

/// Stops `r` and checks that none of its processes is left.
fn stop_clean(mut r: Running) {
    let pids = all_pids(&r);
    let dir = r.dir().to_path_buf();
    r.stop();
    for pid in pids {
        assert!(!alive(pid), "pid {pid} outlived the stop");
    }
    assert!(!dir.exists(), "run directory {} left behind", dir.display());
}

/// The adapter's common contract: 2 workers then 3, a bench through it, a clean stop.
fn contract(file: &TargetFile, path: &str, native: &dyn Fn(u32) -> String) {
    let r = server::launch(file, &[("workers".into(), "2".into())]).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(r.worker_pids().len(), 2, "workers: {:?}\n{}", r.worker_pids(), r.config_text());
    assert!(r.config_text().contains(&native(2)), "{} not in\n{}", native(2), r.config_text());
    let url = format!("{}{path}", r.base_url());
    let (v, run) = bench_json(&["-c", "4", "-n", "200", &url]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(v["result"]["succeeded"], 200, "{:#}", v["result"]);
    assert_eq!(v["result"]["status"]["200"], 200, "{:#}", v["result"]["status"]);
    stop_clean(r);
    let r = server::launch(file, &[("workers".into(), "3".into())]).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(r.worker_pids().len(), 3, "{}", r.config_text());
    assert!(r.config_text().contains(&native(3)));
    stop_clean(r);
}

#[test]
fn lab_adapter() {
    let file = target(&format!(
        "[target]\nadapter = \"lab\"\nprogram = \"{}\"\n[target.config]\ncpu = \"1ms\"\n",
        env!("CARGO_BIN_EXE_webtune")
    ));
    contract(&file, "/", &|n| format!("--workers {n}"));
    // Saturation: one worker, eight clients.
    let r = server::launch(&file, &[("workers".into(), "1".into())]).unwrap();
    let (_, run) = bench_json(&["-c", "8", "-d", "1", &format!("{}/?io=20ms", r.base_url())]);
    assert_eq!(run.code, 0);
    std::thread::sleep(Duration::from_millis(1200));
    assert!(r.saturation().iter().any(|l| l.contains("reached --workers")), "{:?}", r.saturation());
    let c = r.counters().expect("lab counters");
    assert_eq!(c["workers_max"], 1);
    stop_clean(r);
}

#[test]
fn nginx_adapter() {
    if !have(&["nginx"]) {
        return;
    }
    let file = target("[target]\nadapter = \"nginx\"\napp = \"apps/static\"\nready = \"/index.html\"\n");
    contract(&file, "/1k.html", &|n| format!("worker_processes {n};"));
    // Native directives pass through; stub_status gives counters.
    let r = server::launch(&file, &[("open_file_cache".into(), "max=100".into()), ("keepalive".into(), "off".into())])
        .unwrap();
    assert!(r.config_text().contains("open_file_cache max=100;") && r.config_text().contains("keepalive_timeout 0;"));
    assert!(r.counters().expect("stub_status")["requests"].as_u64().unwrap() >= 1);
    stop_clean(r);
    // A directive nginx does not know: its own words.
    let e = server::launch(&file, &[("bogus_directive".into(), "1".into())]).err().expect("rejected");
    assert!(format!("{e:#}").contains("unknown directive \"bogus_directive\""), "{e:#}");
}

#[test]
fn apache_mod_perl_adapter() {
    if !have(&["apache2"]) || !Path::new("/usr/lib/apache2/modules/mod_perl.so").exists() {
        missing("apache2 with mod_perl (libapache2-mod-perl2)");
        return;
    }
    let file = target(
        "[target]\nadapter = \"apache\"\napp = \"apps/perl\"\nready = \"/hello\"\n[target.config]\n\"PerlSetVar Debug\" = \"0\"\n",
    );
    contract(&file, "/hello", &|n| format!("MaxRequestWorkers {n}"));
    let r = server::launch(&file, &[("workers".into(), "1".into()), ("keepalive".into(), "on".into())]).unwrap();
    let base = r.base_url();
    for (path, expect) in
        [("/perl/hello.pl", "hello from registry"), ("/hello", "8192 rows"), ("/hello.asp", "row 3 from Apache::ASP")]
    {
        let (v, run) = bench_json(&["-c", "1", "-n", "5", &format!("{base}{path}")]);
        assert_eq!(v["result"]["status"]["200"], 5, "{path}: {}", run.stderr);
        let body = webtune::server::http::get("127.0.0.1", r.port, path, Duration::from_secs(5)).unwrap().1;
        assert!(body.contains(expect), "{path}: {body}");
    }
    assert!(r.config_text().contains("PerlSetVar Debug 0"));
    // One worker held by kept-alive clients: Apache says it reached MaxRequestWorkers.
    let (_, _) = bench_json(&["-c", "6", "-d", "2", "--timeout", "3s", &format!("{base}/hello")]);
    let c = r.counters().expect("mod_status counters");
    assert_eq!(c["alive"], 1.0, "{c}");
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while r.saturation().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(r.saturation().iter().any(|l| l.contains("MaxRequestWorkers")), "{:?}", r.saturation());
    stop_clean(r);
    let e = server::launch(&file, &[("BogusDirective".into(), "x".into())]).err().expect("rejected");
    assert!(format!("{e:#}").contains("Invalid command 'BogusDirective'"), "{e:#}");
}

#[test]
fn php_fpm_adapter_behind_nginx() {
    if !have(&["nginx"])
        || std::fs::read_dir("/usr/sbin")
            .map_or(true, |d| !d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("php-fpm")))
    {
        missing("php-fpm (Debian package php-fpm)");
        return;
    }
    let file = target("[target]\nadapter = \"php-fpm\"\napp = \"apps/php\"\nready = \"/index.php\"\n");
    contract(&file, "/index.php", &|n| format!("pm.max_children = {n}"));
    // Dynamic, one child at most, a slow page for 8 clients: the pool says it is full.
    let r = server::launch(
        &file,
        &[
            ("pm".into(), "dynamic".into()),
            ("workers".into(), "1".into()),
            ("start_workers".into(), "1".into()),
            ("max_spare".into(), "1".into()),
        ],
    )
    .unwrap();
    // php-fpm looks at its pool once a second.
    let (v, _) = bench_json(&["-c", "8", "-d", "2.5", &format!("{}/index.php", r.base_url())]);
    assert!(v["result"]["succeeded"].as_u64().unwrap() > 100);
    let c = r.counters().expect("php-fpm status");
    assert_eq!(c["alive"], 1, "{c}");
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while r.saturation().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(r.saturation().iter().any(|l| l.contains("max_children")), "{:?}", r.saturation());
    stop_clean(r);
}

#[test]
fn gunicorn_adapter() {
    if !have(&["gunicorn"]) {
        return;
    }
    let file = target("[target]\nadapter = \"gunicorn\"\napp = \"apps/wsgi/app.py\"\n");
    contract(&file, "/", &|n| format!("--workers {n}"));
    let r = server::launch(&file, &[("preload".into(), "on".into()), ("max_requests".into(), "50".into())]).unwrap();
    assert!(r.config_text().contains("--preload") && r.config_text().contains("--max-requests 50"));
    stop_clean(r);
}

#[test]
fn uwsgi_adapter() {
    if !have(&["uwsgi"]) || !Path::new("/usr/lib/uwsgi/plugins/python3_plugin.so").exists() {
        missing("uwsgi with its python3 plugin (uwsgi-plugin-python3)");
        return;
    }
    let file = target("[target]\nadapter = \"uwsgi\"\napp = \"apps/wsgi/app.py\"\n");
    contract(&file, "/", &|n| format!("--processes {n}"));
    let r = server::launch(&file, &[("workers".into(), "2".into())]).unwrap();
    let (_, run) = bench_json(&["-c", "2", "-n", "50", &r.base_url()]);
    assert_eq!(run.code, 0);
    let c = r.counters().expect("uwsgi stats");
    assert_eq!(c["alive"], 2, "{c}");
    assert!(c["total_requests"].as_u64().unwrap() >= 50, "{c}");
    stop_clean(r);
}

#[test]
fn starman_adapter() {
    if !have(&["starman"]) {
        return;
    }
    let file = target("[target]\nadapter = \"starman\"\napp = \"apps/psgi/app.psgi\"\n");
    contract(&file, "/", &|n| format!("--workers {n}"));
}

#[test]
fn command_adapter_and_launch_errors() {
    let file = target(
        "[target]\nadapter = \"command\"\ncommand = \"python3 -m http.server {port} --bind {host} --directory {app}\"\n\
         app = \"apps/static\"\nready = \"/index.html\"\n",
    );
    let r = server::launch(&file, &[]).unwrap_or_else(|e| panic!("{e:#}"));
    let (v, _) = bench_json(&["-c", "2", "-n", "20", &format!("{}/1k.html", r.base_url())]);
    assert_eq!(v["result"]["bytes"]["body"], 20 * 1024);
    stop_clean(r);

    // An app whose path holds a space stays one argument: placeholders are filled in after
    // the command is split into words.
    let spaced = tempfile::tempdir().unwrap();
    let app = spaced.path().join("my app");
    std::fs::create_dir(&app).unwrap();
    std::fs::write(app.join("index.html"), "spaced").unwrap();
    let file = TargetFile::parse(
        &format!(
            "[target]\nadapter = \"command\"\ncommand = \"python3 -m http.server {{port}} --bind {{host}} --directory {{app}}\"\n\
             app = \"{}\"\nready = \"/index.html\"\n",
            app.display()
        ),
        &examples().join("test.toml"),
    )
    .unwrap_or_else(|e| panic!("{}", e.0));
    let r = server::launch(&file, &[]).unwrap_or_else(|e| panic!("{e:#}"));
    let body = webtune::server::http::get("127.0.0.1", r.port, "/index.html", Duration::from_secs(5)).unwrap().1;
    assert_eq!(body, "spaced");
    stop_clean(r);

    // A program that is not installed.
    let missing_program = target("[target]\nadapter = \"command\"\ncommand = \"no-such-server-xyz --port {port}\"\n");
    let e = format!("{:#}", server::launch(&missing_program, &[]).err().unwrap());
    assert!(e.contains("no-such-server-xyz not found"), "{e}");
    // A placeholder with no value.
    let e = format!(
        "{:#}",
        server::launch(&target("[target]\nadapter = \"command\"\ncommand = \"x {workers}\"\n"), &[]).err().unwrap()
    );
    assert!(e.contains("{workers}"), "{e}");
    // A port in use.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port();
    let file = target(&format!(
        "[target]\nadapter = \"lab\"\nlisten = \"127.0.0.1:{port}\"\nprogram = \"{}\"\n",
        env!("CARGO_BIN_EXE_webtune")
    ));
    let e = format!("{:#}", server::launch(&file, &[]).err().unwrap());
    assert!(e.contains(&format!("port {port}")) && e.contains("in use"), "{e}");
    // A server that dies at once: its own words.
    let file = target(
        "[target]\nadapter = \"command\"\ncommand = \"sh -c 'echo cannot bind {port}: it broke >&2; exit 3'\"\n",
    );
    let e = format!("{:#}", server::launch(&file, &[]).err().unwrap());
    assert!(e.contains("it broke") && e.contains("exit status: 3"), "{e}");
}

#[test]
fn a_panic_stops_the_server_through_its_drop_guard() {
    let file = target(&format!("[target]\nadapter = \"lab\"\nprogram = \"{}\"\n", env!("CARGO_BIN_EXE_webtune")));
    let pids = std::sync::Mutex::new(Vec::new());
    let result = std::panic::catch_unwind(|| {
        let r = server::launch(&file, &[("workers".into(), "2".into())]).unwrap();
        *pids.lock().unwrap() = all_pids(&r);
        panic!("a bug while the server runs");
    });
    assert!(result.is_err());
    let pids = pids.into_inner().unwrap();
    assert_eq!(pids.len(), 3);
    for pid in pids {
        assert!(!alive(pid), "pid {pid} outlived the panic");
    }
}

/// `front = "nginx"` before each pre-forking adapter: the server moves to a port of its own,
/// nginx takes the target's port and proxies every request to it, the server's keep-alive is
/// off behind the front, and the stop takes both down.
#[test]
fn a_front_proxy_stands_before_apache_gunicorn_uwsgi_and_starman() {
    if !have(&["nginx", "apache2", "gunicorn", "uwsgi", "starman"]) {
        return;
    }
    let targets = [
        ("[target]\nadapter = \"apache\"\napp = \"apps/perl\"\nready = \"/hello\"\n", "/hello", "KeepAlive Off"),
        ("[target]\nadapter = \"gunicorn\"\napp = \"apps/wsgi/app.py\"\n", "/", "--keep-alive 0"),
        ("[target]\nadapter = \"uwsgi\"\napp = \"apps/wsgi/app.py\"\n", "/", "--processes 2"),
        ("[target]\nadapter = \"starman\"\napp = \"apps/psgi/app.psgi\"\n", "/", "--disable-keepalive"),
    ];
    for (text, path, back_end_line) in targets {
        let file = target(text);
        let front =
            [("workers".into(), "2".into()), ("front".into(), "nginx".into()), ("keepalive".into(), "on".into())];
        let r = server::launch(&file, &front).unwrap_or_else(|e| panic!("{text}: {e:#}"));
        let config = r.config_text().to_string();
        assert!(config.contains(&format!("listen 127.0.0.1:{};", r.port)), "{config}");
        assert!(config.contains("proxy_buffering on;") && config.contains(back_end_line), "{config}");
        assert_eq!(r.worker_pids().len(), 2, "{config}");
        let front_pid = r.front_pid().expect("a front process");
        assert_ne!(front_pid, r.master_pid());
        // Every request goes through the front (its own worker and the server's both answer).
        let (v, run) = bench_json(&["-c", "4", "-n", "200", &format!("{}{path}", r.base_url())]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(v["result"]["status"]["200"], 200, "{text}: {:#}", v["result"]["status"]);
        let front_tree = webtune::procmem::select(&webtune::procmem::Selector::Pid(front_pid)).unwrap();
        assert!(front_tree.len() >= 2, "the front's master and its worker: {front_tree:?}");
        stop_clean(r);
        for pid in front_tree {
            assert!(!alive(pid), "front pid {pid} outlived the stop");
        }
    }
    // Not before nginx itself, nor php-fpm (its adapter has a front of its own).
    let nginx = target("[target]\nadapter = \"nginx\"\napp = \"apps/static\"\n");
    let e = server::launch(&nginx, &[("front".into(), "nginx".into())]).err().expect("refused");
    assert!(format!("{e:#}").contains("takes no front proxy"), "{e:#}");
    let e = server::launch(&nginx, &[("front".into(), "varnish".into())]).err().expect("refused");
    assert!(format!("{e:#}").contains("expected \"none\" or \"nginx\""), "{e:#}");
}

/// `http2 = "on"` loads mod_http2 (h2c, HTTP/1.1 kept): `bench --h2` is served over HTTP/2,
/// every request logged as HTTP/2.0 by Apache itself, and the readiness probe's HTTP/1.1 still
/// answered. Without the knob, HTTP/2 with prior knowledge is not spoken.
#[test]
fn apache_serves_http2_with_its_knob() {
    if !have(&["apache2"]) || !Path::new("/usr/lib/apache2/modules/mod_http2.so").exists() {
        missing("apache2 with mod_http2");
        return;
    }
    let file = target("[target]\nadapter = \"apache\"\napp = \"apps/perl\"\nready = \"/hello\"\n");
    let on = [("workers".into(), "2".into()), ("http2".into(), "on".into())];
    let r = server::launch(&file, &on).unwrap_or_else(|e| panic!("{e:#}"));
    assert!(r.config_text().contains("Protocols h2c http/1.1"), "{}", r.config_text());
    let (v, run) = bench_json(&["--h2", "-c", "2", "-n", "300", &format!("{}/hello", r.base_url())]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(v["result"]["status"]["200"], 300, "{:#}", v["result"]);
    let log = || std::fs::read_to_string(r.dir().join("access.log")).unwrap_or_default();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while log().lines().filter(|l| l.contains("\"GET /hello HTTP/2.0\" 200")).count() < 300
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(log().lines().filter(|l| l.contains("\"GET /hello HTTP/2.0\" 200")).count(), 300);
    stop_clean(r);
    let r = server::launch(&file, &[("workers".into(), "1".into()), ("http2".into(), "off".into())]).unwrap();
    assert!(!r.config_text().contains("Protocols"), "{}", r.config_text());
    let (v, _) = bench_json(&["--h2", "-c", "1", "-n", "5", "--timeout", "2s", &format!("{}/hello", r.base_url())]);
    assert_eq!(v["result"]["succeeded"], 0, "{:#}", v["result"]);
    stop_clean(r);
    let e = server::launch(&file, &[("http2".into(), "maybe".into())]).err().expect("refused");
    assert!(format!("{e:#}").contains("expected on or off"), "{e:#}");
}

/// Issue 50, class 1: every file read from a target, a tree or `init --config` is opened
/// without blocking and refused unless it is a regular file: a FIFO as the target file, an
/// nginx `include` of one (by name or by a pattern) and an Apache `Include` of one end in one
/// line, exit 2, at once, instead of a process held in `fifo_open` until killed.
#[test]
fn a_fifo_anywhere_in_the_input_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = |p: &Path| {
        let made = std::process::Command::new("mkfifo").arg(p).status().unwrap();
        assert!(made.success(), "mkfifo {}", p.display());
    };
    let check = |args: &[&str], said: &str| {
        let started = std::time::Instant::now();
        let run = crate::support::webtune_with_limit(args, Duration::from_secs(20));
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(said) && run.stderr.trim().lines().count() == 1, "{args:?}: {}", run.stderr);
        assert!(started.elapsed() < Duration::from_secs(5), "{args:?} took {:?}", started.elapsed());
    };
    let target = dir.path().join("fifo.toml");
    fifo(&target);
    check(&["tune", target.to_str().unwrap()], "not a regular file (a FIFO, a device, a socket)");
    check(&["launch", target.to_str().unwrap()], "not a regular file");

    // nginx: a file of its own including a FIFO by name, then by a pattern.
    if have(&["nginx"]) {
        let conf = dir.path().join("nginx.conf");
        fifo(&dir.path().join("evil.conf"));
        let t = dir.path().join("nginx.toml");
        std::fs::write(&t, format!("[target]\nadapter = \"nginx\"\nconfig = \"{}\"\n", conf.display())).unwrap();
        for include in ["evil.conf", "ev*.conf"] {
            std::fs::write(
                &conf,
                format!("events {{}}\nhttp {{\n  include {include};\n  server {{ listen 80; }}\n}}\n"),
            )
            .unwrap();
            check(&["launch", t.to_str().unwrap()], "evil.conf: not a regular file");
            check(&["init", "--config", conf.to_str().unwrap()], "evil.conf: not a regular file");
        }
    } else {
        missing("nginx");
    }
    // Apache: Include of a FIFO.
    if have(&["apache2"]) {
        let root = dir.path().join("apache2");
        std::fs::create_dir(&root).unwrap();
        fifo(&root.join("fifo.conf"));
        std::fs::write(root.join("apache2.conf"), "Listen 80\nInclude fifo.conf\n").unwrap();
        let t = dir.path().join("apache.toml");
        let main = root.join("apache2.conf");
        std::fs::write(&t, format!("[target]\nadapter = \"apache\"\nconfig = \"{}\"\n", main.display())).unwrap();
        check(&["launch", t.to_str().unwrap()], "fifo.conf: not a regular file");
    } else {
        missing("apache2");
    }
}

/// Issue 49: one name for the lab's dirtied heap: `dirty` (a size) in `lab --help`, in target
/// files, in --set and in the recommendation; the old `dirty_kb` (KiB) is still read as it.
#[test]
fn the_labs_dirty_knob_has_one_name_everywhere() {
    let help = crate::support::webtune(&["lab", "--help"]).stdout;
    assert!(help.contains("--dirty <SIZE>") && !help.contains("dirty-kb"), "{help}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lab.toml");
    let write = |config: &str, knobs: &str| {
        write_lab_target(
            &file,
            &format!(
                "[target.config]\npreload = \"8MiB\"\n{config}\n\
                 [knobs]\n{knobs}\n[load]\nconnections = 4\nduration = \"300ms\"\n",
            ),
        );
    };
    let recommended = |extra: &[&str]| {
        let run = crate::support::quick_tune(&file, extra);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        v["config"].as_str().unwrap().to_string()
    };
    // The new name in the file, and the old: both are `--dirty SIZE` in the answer.
    write("dirty = \"64KiB\"", "workers = [1, 2]");
    let new = recommended(&[]);
    assert!(new.contains(" --dirty 64KiB") && !new.contains("dirty-kb"), "{new}");
    write("dirty_kb = 64", "workers = [1, 2]");
    assert_eq!(recommended(&[]), new, "dirty_kb = 64 is dirty = \"64KiB\"");
    // --set in either spelling, and a swept list in the old one.
    assert!(recommended(&["--set", "dirty=128KiB"]).contains(" --dirty 128KiB"));
    assert!(recommended(&["--set", "dirty_kb=128"]).contains(" --dirty 128KiB"));
    write("workers = 2", "dirty_kb = [0, 64]");
    let swept = recommended(&[]);
    assert!(swept.contains(" --dirty 0KiB") || swept.contains(" --dirty 64KiB"), "{swept}");
    // A size in the old spelling's place is refused with what it takes.
    write("dirty_kb = \"64KiB\"", "workers = [1, 2]");
    let run = crate::support::quick_tune(&file, &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        format!(
            "webtune: {}:6: dirty_kb = \"64KiB\": expected a whole number of KiB (or dirty = \"64KiB\")\n",
            file.display()
        )
    );
}
