//! `webtune init`: a target file from a server that is already there, by its running master
//! (read-only) or its configuration file; the file it writes launches that server.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::lab::http_get as get;
use crate::support::nginx::free_port;
use crate::support::{find_program, missing, stop_child, wait_listening, webtune};

/// Launches `target` and returns its port, the running launch and the body of `/`.
fn launch_and_get(target: &std::path::Path) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(["launch", target.to_str().unwrap(), "--for", "20s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port: u16 = line
        .rsplit(':')
        .next()
        .and_then(|p| p.trim().trim_end_matches('/').parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
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
    let worker = std::fs::read_to_string(format!("/proc/{}/task/{}/children", server.id(), server.id()))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
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
