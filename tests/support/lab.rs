//! `webtune lab` started by the test on a free loopback port, stopped on drop.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub struct Lab {
    pub port: u16,
    pub child: Child,
    stderr: tempfile::NamedTempFile,
}

impl Lab {
    pub fn start(args: &[&str]) -> Lab {
        let stderr = tempfile::NamedTempFile::new().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_webtune"))
            .args(["lab", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr.reopen().unwrap())
            .spawn()
            .expect("start webtune lab");
        // The first line says where it listens, once the workers are forked.
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line
            .split("127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no address in {line:?}"));
        Lab { port, child, stderr }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// /server-status?json, fetched with a one-request bench-free HTTP GET.
    pub fn status(&self) -> Value {
        let body = http_get(self.port, "/server-status?json");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("status is not JSON ({e}): {body}"))
    }

    pub fn worker_pids(&self) -> Vec<i32> {
        self.status()["workers"].as_array().unwrap().iter().map(|w| w["pid"].as_i64().unwrap() as i32).collect()
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.stderr.path()).unwrap_or_default()
    }

    /// SIGTERM, then wait; returns how long it took to exit.
    pub fn stop(&mut self) -> Duration {
        let t = Instant::now();
        assert!(
            super::stop_child(&mut self.child, Duration::from_secs(10)),
            "webtune lab did not stop within 10 s of SIGTERM"
        );
        t.elapsed()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        super::stop_child(&mut self.child, Duration::from_secs(5));
    }
}

/// A plain HTTP/1.0 GET; returns the body.
pub fn http_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: lab\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()
}

/// KiB from /proc/PID/smaps_rollup: (shared, private).
pub fn shared_private_kib(pid: i32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap();
    let field = |name: &str| -> u64 {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("Shared_Clean:") + field("Shared_Dirty:"), field("Private_Clean:") + field("Private_Dirty:"))
}
