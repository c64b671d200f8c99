//! `webtune launch`: the server comes up, and whatever ends webtune (Ctrl-C, SIGTERM, an
//! error, even SIGKILL followed by the next run), nothing it started is left running.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::support::{alive, write_lab_target};

/// A lab target file in `dir`, whose lab is this build's webtune.
pub(crate) fn lab_file(dir: &std::path::Path) -> std::path::PathBuf {
    let f = dir.join("lab.toml");
    write_lab_target(&f, "[target.config]\nworkers = 3\n");
    f
}

/// Starts `webtune launch FILE EXTRA...` with its own run-directory base; returns it once it
/// printed the master and worker pids.
fn launch(file: &std::path::Path, runtime: &std::path::Path, extra: &[&str]) -> (Child, Vec<i32>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_webtune"))
        .arg("launch")
        .arg(file)
        .args(extra)
        .env("XDG_RUNTIME_DIR", runtime)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut pids = Vec::new();
    let mut line = String::new();
    while out.read_line(&mut line).unwrap() > 0 {
        if let Some(rest) = line.strip_prefix("master pid ") {
            // "master pid 123, worker pids [124, 125]"
            pids = rest.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
            break;
        }
        line.clear();
    }
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    assert_eq!(pids.len(), 4, "master and 3 workers: {line}");
    (child, pids)
}

fn wait_gone(pids: &[i32], limit: Duration) {
    let deadline = Instant::now() + limit;
    while pids.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn sigint_and_sigterm_stop_everything() {
    let dir = tempfile::tempdir().unwrap();
    let file = lab_file(dir.path());
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        let (mut child, pids) = launch(&file, dir.path(), &[]);
        assert!(pids.iter().all(|&p| alive(p)));
        kill(Pid::from_raw(child.id() as i32), signal).unwrap();
        let status = child.wait().unwrap();
        assert!(status.success(), "{signal}: {status}");
        wait_gone(&pids, Duration::from_secs(2));
        let runs: Vec<_> = std::fs::read_dir(dir.path().join("webtune")).unwrap().collect();
        assert!(runs.is_empty(), "{signal}: run directory left");
    }
}

#[test]
fn issue_17_cpus_confine_the_master_and_every_worker() {
    let dir = tempfile::tempdir().unwrap();
    let file = lab_file(dir.path());
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let allowed = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_string();
    // The last CPU this test may use; "0-1" -> "1".
    let server = allowed.rsplit([',', '-']).next().unwrap().to_string();
    let (mut child, pids) = launch(&file, dir.path(), &["--cpus", &format!("server={server}")]);
    for pid in &pids {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim();
        assert_eq!(list, server, "process {pid} of {pids:?}");
    }
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    assert!(child.wait().unwrap().success());
    wait_gone(&pids, Duration::from_secs(2));

    // CPUs the machine does not have: one line, exit 2, nothing started.
    let run = Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(["launch", file.to_str().unwrap(), "--for", "0s", "--cpus", "server=1000,client=0"])
        .env("XDG_RUNTIME_DIR", dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("webtune: --cpus server: this machine has no CPU 1000"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn after_sigkill_the_next_run_stops_what_was_left() {
    let dir = tempfile::tempdir().unwrap();
    let file = lab_file(dir.path());
    let (mut child, pids) = launch(&file, dir.path(), &[]);
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // webtune is gone; its lab (in its own process group) is not.
    assert!(alive(pids[0]), "the lab parent outlives a SIGKILLed webtune");
    let run = Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(["launch", file.to_str().unwrap(), "--for", "0s"])
        .env("XDG_RUNTIME_DIR", dir.path())
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    wait_gone(&pids, Duration::from_secs(2));
    let runs: Vec<_> = std::fs::read_dir(dir.path().join("webtune")).unwrap().collect();
    assert!(runs.is_empty(), "stale run directory not removed");
}

#[test]
fn a_server_that_fails_to_start_leaves_nothing_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.toml");
    // The lab refuses knobs that are each valid but not together; its own words come back.
    write_lab_target(&f, "[target.config]\nworkers = 2\nstart_workers = 3\n");
    let run = Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(["launch", f.to_str().unwrap(), "--for", "0s"])
        .env("XDG_RUNTIME_DIR", dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("exited") && err.contains("--start-workers 3 is more than --workers 2"), "{err}");
    let runs: Vec<_> = std::fs::read_dir(dir.path().join("webtune")).unwrap().collect();
    assert!(runs.is_empty());

    // Mistakes in the file: the file, the line, what is allowed.
    std::fs::write(&f, "[target]\nadapter = \"lab\"\n\n[knobs]\nworkers = []\n").unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_webtune")).args(["launch", f.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.toml:5") && err.contains("no value"), "{err}");
}

#[test]
fn knobs_cannot_rewrite_the_configuration_and_servers_cannot_leave_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("hostile.toml");
    let launch = |text: &str| {
        std::fs::write(&f, text).unwrap();
        Command::new(env!("CARGO_BIN_EXE_webtune"))
            .args(["launch", f.to_str().unwrap(), "--for", "0s"])
            .env("XDG_RUNTIME_DIR", dir.path())
            .output()
            .unwrap()
    };
    // A value that ends the directive and adds a listener; a directive that opens a port; a
    // name that is a whole line: refused from the file, with its line, before anything starts.
    for (knobs, says) in [
        ("[knobs]\nworkers = [\"1; listen 0.0.0.0:18080\"]\n", "cannot end the directive"),
        ("[target.config]\nlisten = \"0.0.0.0:18080\"\n", "writes this directive itself"),
        ("[target.config]\n\"gzip on;\\ninclude /etc/passwd\" = \"x\"\n", "is not a name"),
    ] {
        let run = launch(&format!("[target]\nadapter = \"nginx\"\n{knobs}"));
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{err}");
        assert!(err.contains("hostile.toml:") && err.contains(says), "{err}");
    }
    let run = launch("[target]\nadapter = \"apache\"\n[knobs]\nPerlRequire = [\"/tmp/evil.pl\"]\n");
    assert_eq!(run.status.code(), Some(2), "{}", String::from_utf8_lossy(&run.stderr));

    // A megabyte of value, or of name, in a file or on the command line: one short line.
    let huge = "x".repeat(1 << 20);
    let hostile = [
        format!("[target]\nadapter = \"nginx\"\n[knobs]\nworkers = [\"{huge}\"]\n"),
        format!("[target]\nadapter = \"nginx\"\n[target.config]\n\"{huge}\" = \"1\"\n"),
    ];
    for text in &hostile {
        let run = launch(text);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{}", &err[..err.len().min(300)]);
        assert_eq!(err.trim_end().lines().count(), 1, "{}", &err[..err.len().min(300)]);
        assert!(err.len() < 1200 && err.contains("characters)"), "{} bytes: {}", err.len(), &err[..err.len().min(300)]);
    }
    std::fs::write(&f, "[target]\nadapter = \"nginx\"\n").unwrap();
    // One argument may hold at most 128 KiB.
    let set = format!("{}=1", &huge[..100_000]);
    let run = Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(["launch", f.to_str().unwrap(), "--for", "0s", "--set", &set])
        .env("XDG_RUNTIME_DIR", dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{}", &err[..err.len().min(300)]);
    assert!(err.len() < 1200 && err.trim_end().lines().count() == 1, "{} bytes", err.len());

    // Whatever the configuration says, what the server really listens on is checked: a
    // command that binds every address is stopped, and the launch fails saying so.
    let run = launch(
        "[target]\nadapter = \"command\"\ncommand = \"python3 -m http.server --bind 0.0.0.0 {port}\"\nready_timeout = \"20s\"\n",
    );
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(err.contains("0.0.0.0:") && err.contains("loopback addresses only"), "{err}");
    let runs: Vec<_> = std::fs::read_dir(dir.path().join("webtune")).map(|d| d.collect()).unwrap_or_default();
    assert!(runs.is_empty(), "the refused server's run directory is gone");
}

/// `webtune launch FILE | head -1`: the reader goes away after the first line; launch keeps
/// the server until --for ends, then stops it and exits 0 (it used to panic, exit 101, on
/// its next line).
#[test]
fn a_closed_stdout_neither_panics_nor_leaves_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let file = lab_file(dir.path());
    let mut child = Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(["launch", file.to_str().unwrap(), "--for", "1s"])
        .env("XDG_RUNTIME_DIR", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(first.contains("ready at http://"), "{first}");
    drop(out);
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{}: {stderr}", done.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let runs: Vec<_> = std::fs::read_dir(dir.path().join("webtune")).unwrap().collect();
    assert!(runs.is_empty(), "run directory left");
}
