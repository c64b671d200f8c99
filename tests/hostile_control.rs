//! Servers and peers that misbehave on the control paths (readiness probes, status pages,
//! daemons that leave their group): webtune ends within its deadline plus a second, or a
//! second after SIGINT, stays small, and leaves nothing running.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// A server whose every answer misbehaves the way `mode` says: "endless" body, endless
/// "head", or a body trickled a byte every 0.3 s forever.
const HOSTILE_READY: &str = r#"
import socket, sys, threading, time
port, mode = int(sys.argv[1]), sys.argv[2]
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", port)); l.listen(64)
def serve(c):
    try:
        c.recv(4096)
        if mode == "endless":
            c.sendall(b"HTTP/1.0 200 OK\r\n\r\n")
            while True: c.sendall(b"x" * 65536)
        elif mode == "head":
            c.sendall(b"HTTP/1.0 200 OK\r\n")
            while True: c.sendall(b"X-Again: and again\r\n" * 4096)
        else:
            c.sendall(b"HTTP/1.0 200 OK\r\n\r\n")
            while True: c.sendall(b"x"); time.sleep(0.3)
    except OSError:
        pass
    c.close()
while True:
    c, _ = l.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"#;

/// Processes whose environment carries a run directory under `runtime` (the marker every
/// process of a launched server inherits).
pub(crate) fn marked(runtime: &Path) -> Vec<i32> {
    let prefix = format!("WEBTUNE_RUN_DIR={}/webtune/", runtime.display());
    let me = std::process::id() as i32;
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| s.contains(") Z "));
            !zombie
                && std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v.starts_with(prefix.as_bytes())))
        })
        .collect()
}

/// Waits (at most `limit`) until nothing marked under `runtime` runs; the ones left.
pub(crate) fn left_after(runtime: &Path, limit: Duration) -> Vec<i32> {
    let deadline = Instant::now() + limit;
    loop {
        let left = marked(runtime);
        if left.is_empty() || Instant::now() > deadline {
            for &pid in &left {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn spawn(args: &[&str], runtime: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(args)
        .env("XDG_RUNTIME_DIR", runtime)
        .env("WEBTUNE_DB", crate::support::test_db())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The peak resident size (VmHWM) of a running process in MiB, 0 once it is gone.
fn peak_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        / 1024
}

/// Watches `child` until it exits: how long it took and its peak size. Killed (and the
/// test failed) when it outlives `limit` or grows past `max_mib`.
fn watch(mut child: Child, limit: Duration, max_mib: u64, what: &str) -> (Duration, u64, String) {
    let started = Instant::now();
    let mut peak = 0;
    loop {
        peak = peak.max(peak_mib(child.id()));
        if let Some(status) = child.try_wait().unwrap() {
            let err = std::io::read_to_string(child.stderr.take().unwrap()).unwrap_or_default();
            let err = format!("{err}(exit {})", status.code().unwrap_or(-1));
            return (started.elapsed(), peak, err);
        }
        if started.elapsed() > limit || peak > max_mib {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {:?} at {peak} MiB", started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn hostile_target(dir: &Path, mode: &str, ready_timeout: &str) -> String {
    std::fs::write(dir.join("hostile.py"), HOSTILE_READY).unwrap();
    let f = dir.join(format!("{mode}.toml"));
    std::fs::write(
        &f,
        format!(
            "[target]\nadapter = \"command\"\ncommand = \"python3 hostile.py {{port}} {mode}\"\n\
             ready_timeout = \"{ready_timeout}\"\n[load]\nconnections = 1\nduration = \"200ms\"\n"
        ),
    )
    .unwrap();
    f.display().to_string()
}

/// A ready page that never ends, a head that never ends, a page trickled forever: launch and
/// tune give up at ready_timeout (3 s) within a second, stay under 100 MiB, and leave no
/// server; SIGINT during the wait ends launch within a second, the server gone too.
#[test]
fn a_ready_page_that_never_ends_is_given_up_at_the_ready_timeout() {
    let dir = tempfile::tempdir().unwrap();
    for mode in ["endless", "head", "trickle"] {
        let f = hostile_target(dir.path(), mode, "3s");
        let journal = dir.path().join(format!("{mode}.jsonl")).display().to_string();
        let tune = vec!["tune", &f, "--quiet", "--repeats", "1", "--journal", &journal];
        for command in [vec!["launch", &f, "--for", "0s"], tune] {
            let what = format!("{} {mode}", command[0]);
            let child = spawn(&command, dir.path());
            let (took, peak, err) = watch(child, Duration::from_secs(4), 100, &what);
            eprintln!("{what}: {took:?}, peak {peak} MiB");
            assert!(took < Duration::from_secs(4), "{what}: {took:?}");
            assert!(err.contains("did not answer") || err.contains("every trial failed"), "{what}: {err}");
            assert_eq!(left_after(dir.path(), Duration::from_millis(500)), Vec::<i32>::new(), "{what}: server left");
        }
    }
    // SIGINT while the probe reads an endless page.
    let f = hostile_target(dir.path(), "endless", "60s");
    let child = spawn(&["launch", &f], dir.path());
    let deadline = Instant::now() + Duration::from_secs(10);
    while marked(dir.path()).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(1500));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let (took, peak, _) = watch(child, Duration::from_secs(1), 100, "launch, SIGINT");
    eprintln!("SIGINT: ended {took:?} after, peak {peak} MiB");
    assert_eq!(left_after(dir.path(), Duration::from_millis(500)), Vec::<i32>::new(), "server left after SIGINT");
}

/// A server that daemonizes by a double fork and setsid: its master exits at once, the daemon
/// serves on the port, outside every process group webtune started.
const DAEMON: &str = r#"
import os, sys, http.server
if os.fork(): os._exit(0)
os.setsid()
if os.fork(): os._exit(0)
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), http.server.SimpleHTTPRequestHandler).serve_forever()
"#;

/// `setsid python3 daemon.py` (setsid forks when it leads a group, then the script forks
/// twice): launch follows the daemon (ready, not "exited before it was ready"), and after
/// launch and after every tune trial nothing it started is left, by the marker or the port.
#[test]
fn a_daemonizing_command_target_is_followed_and_stopped() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("daemon.py"), DAEMON).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let f = dir.path().join("daemon.toml");
    std::fs::write(
        &f,
        format!(
            "[target]\nadapter = \"command\"\ncommand = \"setsid python3 daemon.py {{port}}\"\n\
             listen = \"127.0.0.1:{port}\"\nready_timeout = \"10s\"\n\
             [load]\nconnections = 1\nduration = \"200ms\"\n"
        ),
    )
    .unwrap();
    let f = f.display().to_string();
    let journal = dir.path().join("daemon.jsonl").display().to_string();
    for command in
        [vec!["launch", &f, "--for", "0s"], vec!["tune", &f, "--quiet", "--repeats", "1", "--journal", &journal]]
    {
        let child = spawn(&command, dir.path());
        let (took, _, err) = watch(child, Duration::from_secs(30), 200, command[0]);
        eprintln!("{}: {took:?}", command[0]);
        assert!(err.ends_with("(exit 0)"), "{}: {err}", command[0]);
        let left = left_after(dir.path(), Duration::from_millis(500));
        assert_eq!(left, Vec::<i32>::new(), "{}: marked processes left", command[0]);
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err(), "{}: port {port} still served", command[0]);
    }
}

/// Crafted reports through `webtune merge`: a histogram whose header declares a 4 GiB payload,
/// one whose bounds ask for a huge counts array, a duration of 1e20 s, a negative timeout:
/// each a one-line error, exit 2, without allocating what the report declares (peak < 100 MiB).
#[test]
fn a_crafted_report_is_refused_in_one_line() {
    use base64::Engine;
    let lab = crate::support::lab::Lab::start(&["--workers", "1"]);
    let (v, _) = crate::support::bench_json(&["-c", "1", "-n", "5", &lab.url("/")]);
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.json");
    std::fs::write(&good, v.to_string()).unwrap();
    // The total histogram, re-encoded uncompressed, then with its header lying.
    let b64 = base64::engine::general_purpose::STANDARD;
    let total = v["result"]["histograms"]["total"].as_str().unwrap();
    let mut plain = Vec::new();
    let h: hdrhistogram::Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut b64.decode(total).unwrap().as_slice())
        .unwrap();
    hdrhistogram::serialization::Serializer::serialize(
        &mut hdrhistogram::serialization::V2Serializer::new(),
        &h,
        &mut plain,
    )
    .unwrap();
    let lie = |lies: &[(usize, &[u8])]| {
        let mut p = plain.clone();
        for (at, bytes) in lies {
            p[*at..*at + bytes.len()].copy_from_slice(bytes);
        }
        b64.encode(p)
    };
    let crafted = [
        (
            "/result/histograms/total",
            serde_json::json!(lie(&[(4, &u32::MAX.to_be_bytes())])),
            "4294967295-byte payload",
        ),
        // 5 digits up to u64::MAX: about 6.6 million counts.
        (
            "/result/histograms/total",
            serde_json::json!(lie(&[(12, &5u32.to_be_bytes()), (24, &u64::MAX.to_be_bytes())])),
            "counts, more than",
        ),
        (
            "/result/duration_s",
            serde_json::json!(1e20),
            "/result/duration_s is 1e+20 (expected a number from 0 to 31622400)",
        ),
        ("/options/timeout_s", serde_json::json!(-1.0), "/options/timeout_s is -1"),
    ];
    for (pointer, value, says) in crafted {
        let mut bad = v.clone();
        *bad.pointer_mut(pointer).unwrap() = value;
        // Another run (merge refuses the same run twice before it reads a figure).
        bad["started_at"] = serde_json::json!("2026-01-01T00:00:00.000Z");
        let f = dir.path().join("bad.json");
        std::fs::write(&f, bad.to_string()).unwrap();
        let child = spawn(&["merge", "--json", good.to_str().unwrap(), f.to_str().unwrap()], dir.path());
        let (_, peak, err) = watch(child, Duration::from_secs(10), 100, "merge");
        eprintln!("{pointer}: peak {peak} MiB: {err}");
        assert!(err.ends_with("(exit 2)"), "{pointer}: {err}");
        assert_eq!(err.lines().count(), 2, "one line, then the exit: {err}");
        assert!(err.contains(says), "{pointer}: {err}");
    }
}

/// Every output path by one rule: --hdr-log naming a FIFO (whose open would block before any
/// load) or /dev/full, and manpage --dir where a page is a symlink to another user's file,
/// are refused in one line, exit 2, at once, nothing written.
#[test]
fn output_paths_refuse_fifos_devices_and_other_users_files() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for target in [fifo.to_str().unwrap(), "/dev/full"] {
        let args = ["bench", "http://127.0.0.1:9/", "-n", "1", "-c", "1", "--quiet", "--hdr-log", target];
        let (took, _, err) = watch(spawn(&args, dir.path()), Duration::from_secs(3), 100, target);
        assert!(took < Duration::from_secs(1), "{target}: {took:?}");
        assert!(err.ends_with("(exit 2)") && err.contains("not a regular file"), "{target}: {err}");
    }

    let theirs = dir.path().join("theirs");
    std::fs::write(&theirs, "another user's\n").unwrap();
    assert!(Command::new("chown").args(["nobody"]).arg(&theirs).status().unwrap().success());
    let pages = dir.path().join("man");
    std::fs::create_dir(&pages).unwrap();
    std::os::unix::fs::symlink(&theirs, pages.join("webtune.1")).unwrap();
    let (_, _, err) = watch(
        spawn(&["manpage", "--dir", pages.to_str().unwrap()], dir.path()),
        Duration::from_secs(5),
        100,
        "manpage",
    );
    assert!(err.ends_with("(exit 2)") && err.contains("belongs to another user"), "{err}");
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "another user's\n");
}
