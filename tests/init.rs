//! `webtune init`: a target file from a server that is already there, by its running master
//! (read-only) or its configuration file; the file it writes launches that server.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::lab::http_get as get;
use crate::support::nginx::free_port;
use crate::support::{find_program, missing, stop_child, wait_listening, webtune};

/// Launches `target` and returns the body of `/`.
fn launch_and_get(target: &std::path::Path) -> String {
    let (mut child, port) = crate::support::launched(target, "20s");
    let body = get(port, "/");
    stop_child(&mut child, Duration::from_secs(10));
    body
}

#[test]
fn init_pid_on_a_running_gunicorn_writes_a_target_that_launches_it_again() {
    let Some(gunicorn) = find_program("gunicorn") else { return missing("gunicorn") };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("hello.py"),
        "def application(environ, start_response):\n    start_response('200 OK', [('Content-Type', 'text/plain')])\n    return [b'hello from the running app\\n']\n",
    )
    .unwrap();
    let port = free_port();
    let mut server = Command::new(&gunicorn)
        .args(["--workers", "3", "--bind", &format!("127.0.0.1:{port}"), "--chdir"])
        .arg(dir.path())
        .arg("hello:application")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_listening(&mut server, port, Duration::from_secs(20)), "gunicorn did not start");
    let served = get(port, "/");
    // Give the workers their time to boot, then ask about one of them: init finds the master.
    std::thread::sleep(Duration::from_millis(500));
    let worker = first_child(server.id());
    let r = webtune(&["init", "--pid", &worker]);
    stop_child(&mut server, Duration::from_secs(10));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let t = &r.stdout;
    assert!(t.contains("adapter = \"gunicorn\"") && t.contains("app = \"hello:application\""), "{t}");
    assert!(t.contains(&format!("# master {}:", server.id())), "{t}");
    assert_eq!(t.matches("# worker ").count(), 3, "{t}");
    assert!(t.contains("workers fit by PSS") && t.contains("Your configuration sets: workers = 3"), "{t}");
    assert!(t.contains("workers = [1, 3, 6]"), "{t}");
    let target = dir.path().join("target.toml");
    std::fs::write(&target, t).unwrap();
    assert_eq!(launch_and_get(&target), served);
}

#[test]
fn init_config_reads_the_servers_own_file_and_bad_input_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let ini = dir.path().join("app.ini");
    std::fs::write(&ini, "[uwsgi]\nprocesses = 8\nmodule = hello:application\n").unwrap();
    let r = webtune(&["init", "--config", ini.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("adapter = \"uwsgi\"") && r.stdout.contains("config = "), "{}", r.stdout);
    let unknown = dir.path().join("site.toml");
    std::fs::write(&unknown, "x").unwrap();
    for (args, says) in [
        (vec!["init", "--config", unknown.to_str().unwrap()], "say it with --adapter"),
        (vec!["init", "--config", "/nonexistent/apache2.conf"], "--config /nonexistent/apache2.conf"),
        (vec!["init", "--pid", "999999999"], "no such process"),
        (vec!["init", "--pid", &std::process::id().to_string()], "webtune init knows"),
    ] {
        let r = webtune(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says) && r.stderr.trim().lines().count() == 1, "{args:?}: {}", r.stderr);
    }
    let r = webtune(&["init"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}

/// A worker's pid, once the master has forked one.
fn first_child(pid: u32) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        if let Some(c) = children.split_whitespace().next() {
            return c.to_string();
        }
        assert!(std::time::Instant::now() < deadline, "{pid} forked nothing");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// init names the server, not its supervisor (the same python3) nor a script whose name only
/// holds the server's; gunicorn's `-c python:module` is a module, not a file to read.
#[test]
fn init_pid_finds_the_server_under_a_supervisor_and_not_a_lookalike() {
    let Some(gunicorn) = find_program("gunicorn") else { return missing("gunicorn") };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("hello.py"),
        "def application(environ, start_response):\n    start_response('200 OK', [])\n    return [b'hi']\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("gconf.py"), "workers = 2\n").unwrap();
    let port = free_port();
    // A supervisor in Python, as supervisord is: gunicorn is its child, both run python3.
    let mut supervisor = Command::new("/usr/bin/python3")
        .args(["-c", "import subprocess, sys; subprocess.run(sys.argv[1:])"])
        .arg(&gunicorn)
        .args(["-c", "python:gconf", "--bind", &format!("127.0.0.1:{port}"), "hello:application"])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_listening(&mut supervisor, port, Duration::from_secs(20)), "gunicorn did not start");
    let master = first_child(supervisor.id());
    let worker = first_child(master.parse().unwrap());
    let r = webtune(&["init", "--pid", &worker]);
    // A script named like a server is not one.
    std::fs::write(dir.path().join("gunicorn_backup.py"), "import time\ntime.sleep(30)\n").unwrap();
    let mut lookalike =
        Command::new("/usr/bin/python3").arg("gunicorn_backup.py").current_dir(dir.path()).spawn().unwrap();
    let l = webtune(&["init", "--pid", &lookalike.id().to_string()]);
    stop_child(&mut lookalike, Duration::from_secs(5));
    // gunicorn first (its master stops its workers), then the supervisor that waits for it.
    let gunicorn = nix::unistd::Pid::from_raw(master.parse().unwrap());
    let _ = nix::sys::signal::kill(gunicorn, nix::sys::signal::Signal::SIGTERM);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while crate::support::alive(gunicorn.as_raw()) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop_child(&mut supervisor, Duration::from_secs(10));

    assert_eq!(r.code, 0, "{}", r.stderr);
    let t = &r.stdout;
    assert!(t.contains(&format!("# master {master}:")), "the master is gunicorn, not its supervisor: {t}");
    assert!(t.contains("adapter = \"gunicorn\"") && t.contains("app = \"hello:application\""), "{t}");
    assert!(t.contains("the Python module python:gconf") && !t.lines().any(|l| l.starts_with("config = ")), "{t}");
    assert_eq!(l.code, 2, "{}", l.stderr);
    assert!(l.stderr.contains("webtune init knows"), "{}", l.stderr);
}

/// As an unprivileged user against a root Apache (its executable link unreadable), init reads
/// its command line and names it.
#[test]
fn init_pid_as_nobody_names_a_root_apache() {
    let opts = crate::support::apache::ApacheOptions { allow_override: "None", preload_mb: 0, workers: 2 };
    let Some(apache) = crate::support::apache::Apache::start(&opts) else { return };
    let run = crate::support::webtune_as_nobody(&["init", "--pid", &apache.pid().to_string()], Duration::from_secs(30));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("adapter = \"apache\""), "{}", run.stdout);
    let conf = apache.dir.path().join("httpd.conf");
    assert!(run.stdout.contains(&conf.display().to_string()), "{}", run.stdout);
}

/// Issue 49: `init --pid` of webtune's own lab writes a lab target whose base is its command
/// line (the old `--dirty-kb` under its one name), and the target launches.
#[test]
fn init_pid_on_webtunes_own_lab_writes_a_lab_target() {
    let lab = crate::support::lab::Lab::start(&["--workers", "2", "--cpu", "1ms", "--dirty-kb", "64"]);
    let run = webtune(&["init", "--pid", &lab.pid().to_string()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = run.stdout;
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        lines[..12].join("\n"),
        format!(
            "[target]\nadapter = \"lab\"\nprogram = \"{}\"\n\n[target.config]\nworkers = 2\ncpu = \"1ms\"\ndirty = \"64KiB\"\n\n\
             [knobs]\nworkers = [1, 2, 4]\nmax_requests = [0, 1000, 10000]",
            env!("CARGO_BIN_EXE_webtune")
        ),
        "{text}"
    );
    assert!(text.contains("# The lab's command line sets: workers = 2, cpu = 1ms, dirty = 64KiB\n"), "{text}");
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("lab.toml");
    std::fs::write(&target, &text).unwrap();
    let page = launch_and_get(&target);
    assert_eq!(page, "x".repeat(100), "the lab answers");
}
