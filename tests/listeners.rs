//! Every socket a run's processes open to the network is watched through the run, TCP and UDP,
//! IPv4 and IPv6: a server that takes traffic beyond loopback, at launch or later (an app that
//! opens a port on its first request, a daemon), is stopped with the address named.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{find_program, missing, quick_tune, webtune_with_limit};

/// A gunicorn target whose app opens `socket` (Python: a bound socket object) at import or on
/// its 300th request.
fn target(dir: &std::path::Path, at_import: bool, socket: &str) -> std::path::PathBuf {
    let open = format!("import socket\nheld = []\ndef open_it():\n    s = {socket}\n    held.append(s)\n");
    // Late: at a worker's 300th request, past the readiness probe and the warm-up.
    let app = if at_import {
        format!(
            "{open}open_it()\ndef app(environ, start_response):\n    start_response('200 OK', [])\n    return [b'ok']\n"
        )
    } else {
        format!(
            "{open}served = [0]\ndef app(environ, start_response):\n    served[0] += 1\n    if served[0] == 300:\n        open_it()\n    start_response('200 OK', [])\n    return [b'ok']\n"
        )
    };
    std::fs::write(dir.join("opener.py"), app).unwrap();
    let f = dir.join("target.toml");
    std::fs::write(
        &f,
        "[target]\nadapter = \"gunicorn\"\napp = \"opener:app\"\n[knobs]\nworkers = [1, 2]\n[load]\nconnections = 2\nduration = \"1s\"\n",
    )
    .unwrap();
    f
}

const UDP_ANY: &str = "socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('0.0.0.0', 0))";
const TCP6_ANY: &str = "socket.socket(socket.AF_INET6, socket.SOCK_STREAM); s.bind(('::', 0)); s.listen(1)";

#[test]
fn a_port_opened_beyond_loopback_at_import_is_refused_at_launch() {
    if find_program("gunicorn").is_none() {
        return missing("gunicorn");
    }
    for (socket, shown) in [(UDP_ANY, "0.0.0.0:"), (TCP6_ANY, "[::]:")] {
        let dir = tempfile::tempdir().unwrap();
        let f = target(dir.path(), true, socket);
        let run = webtune_with_limit(&["launch", f.to_str().unwrap(), "--for", "5s"], Duration::from_secs(60));
        assert_ne!(run.code, 0, "{socket}: {}", run.stdout);
        let proto = if socket.contains("DGRAM") { "(UDP)" } else { "(TCP)" };
        assert!(
            run.stderr.contains("gunicorn listens on ") && run.stderr.contains(shown) && run.stderr.contains(proto),
            "{socket}: {}",
            run.stderr
        );
        assert!(run.stderr.contains("loopback addresses only"), "{}", run.stderr);
    }
}

#[test]
fn a_port_opened_beyond_loopback_during_the_run_fails_the_trial_and_stops_the_launch() {
    if find_program("gunicorn").is_none() {
        return missing("gunicorn");
    }
    let dir = tempfile::tempdir().unwrap();
    let f = target(dir.path(), false, UDP_ANY);
    // A tune: every trial's window ends with the server stopped and the address named.
    let run = quick_tune(&f, &[]);
    let v: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {} {}", run.stdout, run.stderr));
    let points = v["points"].as_array().unwrap();
    assert!(!points.is_empty(), "{v:#}");
    for p in points {
        let cause = p["status"].to_string();
        assert!(cause.contains("listens on 0.0.0.0:") && cause.contains("(UDP)"), "{p:#}");
    }
    let left = std::process::Command::new("pgrep").args(["-f", &dir.path().display().to_string()]).output().unwrap();
    assert!(left.stdout.is_empty(), "left running: {}", String::from_utf8_lossy(&left.stdout));

    // `launch` looks every second: stopped soon after the 300th request opens the port.
    let (child, port) = crate::support::launched(&f, "30s");
    let url = format!("http://127.0.0.1:{port}/");
    let bench = webtune_with_limit(&["bench", "-n", "400", "-c", "1", &url], Duration::from_secs(60));
    assert_eq!(bench.code, 0, "{}", bench.stderr);
    let asked = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(asked.elapsed() < Duration::from_secs(10), "launch ran on for {:?}", asked.elapsed());
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("listens on 0.0.0.0:") && stderr.contains("(UDP)"), "{stderr}");
}
