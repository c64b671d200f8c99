//! `webtune bench` against peers that abuse what the client keeps or trusts: a PING flood
//! that never reads, timeouts shorter than the engine's tick, responses nobody asked for,
//! weights that overflow, a body without a method, a TLS handshake that never ends, HTTP/2
//! windows out of bounds, a cookie per response. One test per class, each within its bound.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::rogue::{Rogue, h2, read_request, response, serve_each};
use crate::support::{Spawned, assert_valid, bench_json, errors, float, num, spawn_webtune};

/// Runs `webtune bench --json -q ARGS`, which must end within `limit`: its report, how long it
/// took and its peak resident memory in KiB (the kernel's own high-water mark, from wait4).
fn bench_peak_rss(args: &[&str], limit: Duration) -> (serde_json::Value, Duration, i64) {
    let mut full = vec!["bench", "--json", "--quiet"];
    full.extend_from_slice(args);
    let Spawned { mut child, stdout, .. } = spawn_webtune(&full);
    let pid = child.id() as libc::pid_t;
    let started = Instant::now();
    // SAFETY: plain structs the kernel fills; `pid` is our own unreaped child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut status = 0;
    loop {
        let reaped = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if reaped == pid {
            break;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
            panic!("webtune bench {args:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = started.elapsed();
    let out = stdout.join().unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {out}"));
    assert_valid(&v);
    (v, took, usage.ru_maxrss)
}

/// Class 1: an h2c server that floods PINGs and never reads. Each ack waited in the client's
/// write buffer: 475 MB after a second. Now the connection fails as `flood` once 1.25 MiB
/// wait, and webtune stays under 100 MB however long the run.
#[test]
fn h2_ping_flood_that_never_reads_is_a_flood_in_bounded_memory() {
    let rogue = Rogue::start(|mut s, _| {
        if !h2::read_preface(&mut s) || !h2::send(&mut s, &h2::settings()) {
            return;
        }
        let pings = h2::frame(h2::PING, 0, 0, b"flooding").repeat(4096);
        // Reads nothing more: the acks pile up in the client, until it gives up.
        while h2::send(&mut s, &pings) {}
    });
    let (v, took, peak_kib) =
        bench_peak_rss(&["--h2", "-c", "2", "-d", "2s", "--timeout", "1s", &rogue.url("/")], Duration::from_secs(8));
    eprintln!("PING flood: peak RSS {peak_kib} KiB, {took:?}, {} flood", v["result"]["errors"]["flood"]);
    assert!(peak_kib < 100 * 1024, "peak RSS {peak_kib} KiB");
    assert!(took < Duration::from_secs(4), "took {took:?}: more than -d + --timeout + 1 s");
    assert!(errors(&v, "flood") > 0, "{v:#}");
    assert_eq!(num(&v, "/result/failed"), errors(&v, "flood"), "{v:#}");
    assert_eq!(num(&v, "/result/succeeded"), 0, "{v:#}");
}

/// Class 2: a timeout shorter than the engine's 10 ms tick. Before, a 5 ms response with
/// `--timeout 3ms` succeeded at exactly 3.000 ms (the check waited for the tick, and the
/// latency was clipped to the timeout); with `--timeout 1ns` every response succeeded.
#[test]
fn a_timeout_below_the_tick_is_enforced_and_latencies_are_real() {
    let server = Rogue::start(|mut s, _| {
        serve_each(&mut s, None, |_| {
            std::thread::sleep(Duration::from_millis(5));
            response("200 OK", b"late")
        })
    });
    for timeout in ["3ms", "1ns"] {
        let started = Instant::now();
        let (v, _) = bench_json(&["-c", "2", "-n", "20", "--timeout", timeout, &server.url("/")]);
        assert_eq!(num(&v, "/result/succeeded"), 0, "--timeout {timeout}: {v:#}");
        assert_eq!(errors(&v, "timeout"), 20, "--timeout {timeout}: {v:#}");
        assert!(started.elapsed() < Duration::from_secs(5), "--timeout {timeout}: {:?}", started.elapsed());
    }
    // Within a timeout the latencies are the measured ones: never below the server's 5 ms.
    let (v, _) = bench_json(&["-c", "2", "-n", "20", "--timeout", "7ms", &server.url("/")]);
    let ok = num(&v, "/result/succeeded");
    assert_eq!(ok + errors(&v, "timeout"), 20, "{v:#}");
    if ok > 0 {
        let (min, max) = (float(&v, "/result/latency_ms/total/min"), float(&v, "/result/latency_ms/total/max"));
        assert!(min >= 4.99 && max <= 7.01, "successes between 5 and 7 ms: min {min} max {max}");
    }
}

/// Class 3, HTTP/1.1: bytes no request asked for. Before, each was taken for the next
/// request's response, silently: higher req/s and impossible latencies.
#[test]
fn responses_nobody_asked_for_are_unsolicited() {
    // Two responses to every request, in one write: which answers which is unknown.
    let twice = Rogue::start(|mut s, _| {
        serve_each(&mut s, None, |_| [response("200 OK", b"one"), response("200 OK", b"two")].concat())
    });
    let (v, _) = bench_json(&["-c", "1", "-n", "10", &twice.url("/")]);
    assert_eq!(errors(&v, "unsolicited"), 10, "{v:#}");
    assert_eq!(num(&v, "/result/succeeded"), 0, "{v:#}");

    // A response on accept, then one per request: the one that comes while the connection
    // waits for its next request is unsolicited (open loop: connections idle between requests).
    let on_accept = Rogue::start(|mut s, _| {
        if s.write_all(&response("200 OK", b"hello")).is_ok() {
            serve_each(&mut s, None, |_| response("200 OK", b"answer"));
        }
    });
    let (v, _) = bench_json(&["-c", "1", "--rate", "20", "-d", "1s", &on_accept.url("/")]);
    let (unsolicited, ok) = (errors(&v, "unsolicited"), num(&v, "/result/succeeded"));
    assert!(unsolicited >= 5, "{v:#}");
    // Each connection's first response may pass; what follows it never does.
    assert!(ok <= unsolicited + 1, "{v:#}");
    assert_eq!(num(&v, "/result/failed"), unsolicited, "{v:#}");
}

/// Class 3, HTTP/2: a stream answered without a `:status`, or with one that is no status.
/// Before, both ended the stream as a success (a header block without a status was taken
/// for trailers).
#[test]
fn h2_responses_without_a_valid_status_are_malformed() {
    // HPACK: content-type (static 31) with an empty value; `:status: abc` as a literal.
    let blocks: [&'static [u8]; 2] = [&[0x80 | 31], &[0x08, 3, b'a', b'b', b'c']];
    for block in blocks {
        let rogue = Rogue::start(move |mut s, _| {
            if !h2::read_preface(&mut s) || !h2::send(&mut s, &h2::settings()) {
                return;
            }
            while let Some(stream) = h2::next_request(&mut s) {
                let end = h2::END_HEADERS | h2::END_STREAM;
                if !h2::send(&mut s, &h2::frame(h2::HEADERS, end, stream, block)) {
                    return;
                }
            }
        });
        let (v, _) = bench_json(&["--h2", "-c", "1", "-n", "5", "--timeout", "2s", &rogue.url("/")]);
        assert_eq!(errors(&v, "malformed"), 5, "block {block:?}: {v:#}");
        assert_eq!(num(&v, "/result/succeeded"), 0, "block {block:?}: {v:#}");
    }
}

/// Class 4: `weight=1e308` twice summed to infinity, and every draw took the last line.
#[test]
fn huge_equal_weights_split_evenly() {
    let counts = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let seen = counts.clone();
    let server = Rogue::start(move |mut s, _| {
        while let Some(head) = read_request(&mut s) {
            let which = usize::from(head.starts_with(b"GET /b "));
            seen[which].fetch_add(1, Ordering::SeqCst);
            if s.write_all(&response("200 OK", b"x")).is_err() {
                return;
            }
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("urls.txt");
    std::fs::write(&list, "/a weight=1e308\n/b weight=1e308\n").unwrap();
    let (v, _) =
        bench_json(&["-c", "1", "-n", "400", "--seed", "3", "--urls", list.to_str().unwrap(), &server.url("/")]);
    assert_eq!(num(&v, "/result/succeeded"), 400, "{v:#}");
    let (a, b) = (counts[0].load(Ordering::SeqCst), counts[1].load(Ordering::SeqCst));
    eprintln!("weights 1e308 and 1e308: {a} and {b} of 400");
    // 200 each expected; the binomial's standard deviation is 10.
    assert!((150..=250).contains(&a) && a + b == 400, "{a} /a, {b} /b");
}

/// Class 5: `--body` without `-m` sent a GET with a body; the reference (docs/bench.md) says POST.
#[test]
fn a_body_without_a_method_is_posted() {
    let methods = Arc::new(Mutex::new(Vec::new()));
    let seen = methods.clone();
    let server = Rogue::start(move |mut s, _| {
        if let Some(head) = read_request(&mut s) {
            let line = String::from_utf8_lossy(&head).lines().next().unwrap_or_default().to_string();
            seen.lock().unwrap().push(line.split(' ').next().unwrap_or_default().to_string());
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("body.txt");
    std::fs::write(&file, "from a file").unwrap();
    let at_file = format!("@{}", file.display());
    let runs: [&[&str]; 5] = [
        &["--body", "text"],
        &["--body", &at_file],
        &["-p", file.to_str().unwrap()],
        &["-m", "PUT", "--body", "text"],
        &[],
    ];
    for extra in runs {
        let mut args = vec!["-c", "1", "-n", "1"];
        args.extend_from_slice(extra);
        let url = server.url("/");
        args.push(&url);
        let (v, _) = bench_json(&args);
        assert_eq!(num(&v, "/result/succeeded"), 1, "{extra:?}: {v:#}");
    }
    assert_eq!(*methods.lock().unwrap(), ["POST", "POST", "POST", "PUT", "GET"]);
}

/// Class 6: a server that accepts TCP and never answers the ClientHello. Before, the TLS
/// handshake ran under the request's --timeout (here 20 s), as a `timeout`.
#[test]
fn the_connect_timeout_covers_the_tls_handshake() {
    let silent = Rogue::start(|mut s, _| while s.read(&mut [0u8; 4096]).is_ok_and(|n| n > 0) {});
    let url = silent.url("/").replace("http://", "https://");
    for h2 in [&[][..], &["--h2"][..]] {
        let mut args = vec!["-c", "1", "-n", "1", "--connect-timeout", "500ms", "--timeout", "20s", "--insecure"];
        args.extend_from_slice(h2);
        args.push(&url);
        let started = Instant::now();
        let (v, _) = bench_json(&args);
        let took = started.elapsed();
        eprintln!("{h2:?}: a silent TLS server failed after {took:?}");
        assert_eq!(errors(&v, "connect_timeout"), 1, "{h2:?}: {v:#}");
        assert!(took < Duration::from_millis(1500), "{h2:?}: took {took:?}, more than the connect timeout + 1 s");
    }
}

/// What an h2c server sends before each answer, for the WINDOW_UPDATE cases.
#[derive(Clone, Copy, Debug)]
enum Window {
    StreamZero,
    StreamOverflow,
    ConnectionZero,
    ConnectionOverflow,
}

/// Class 7: WINDOW_UPDATEs the RFC forbids (RFC 9113 §6.9) were ignored, and the answers
/// that followed them counted as successes. Stream errors reset the stream (the connection
/// goes on); connection errors end it with GOAWAY; each with its code, and each request
/// `malformed`.
#[test]
fn h2_window_updates_out_of_bounds_are_errors_of_their_scope() {
    // (case, error code the client must send, RST_STREAM or GOAWAY, connections for 3 requests)
    let cases = [
        (Window::StreamZero, 0x1, h2::RST_STREAM, 1),
        (Window::StreamOverflow, 0x3, h2::RST_STREAM, 1),
        (Window::ConnectionZero, 0x1, h2::GOAWAY, 3),
        (Window::ConnectionOverflow, 0x3, h2::GOAWAY, 3),
    ];
    for (case, code, kind, connections) in cases {
        let codes = Arc::new(Mutex::new(Vec::new()));
        let seen = codes.clone();
        let rogue = Rogue::start(move |mut s, _| {
            if !h2::read_preface(&mut s) || !h2::send(&mut s, &h2::settings()) {
                return;
            }
            while let Some((k, _, stream, payload)) = h2::read_frame(&mut s) {
                match k {
                    h2::RST_STREAM | h2::GOAWAY => {
                        let at = if k == h2::GOAWAY { 4 } else { 0 };
                        let code = u32::from_be_bytes(payload[at..at + 4].try_into().unwrap());
                        seen.lock().unwrap().push((k, code));
                    }
                    h2::HEADERS => {
                        let (target, increment) = match case {
                            Window::StreamZero => (stream, 0),
                            Window::StreamOverflow => (stream, 0x7fff_ffff),
                            Window::ConnectionZero => (0, 0),
                            Window::ConnectionOverflow => (0, 0x7fff_ffff),
                        };
                        let mut out = h2::frame(h2::WINDOW_UPDATE, 0, target, &u32::to_be_bytes(increment));
                        out.extend(h2::frame(h2::HEADERS, h2::END_HEADERS | h2::END_STREAM, stream, &[h2::STATUS_200]));
                        if !h2::send(&mut s, &out) {
                            return;
                        }
                    }
                    _ => {}
                }
            }
        });
        let (v, _) = bench_json(&["--h2", "-c", "1", "-n", "3", "--timeout", "2s", &rogue.url("/")]);
        assert_eq!(errors(&v, "malformed"), 3, "{case:?}: {v:#}");
        assert_eq!(num(&v, "/result/succeeded"), 0, "{case:?}: {v:#}");
        assert_eq!(num(&v, "/result/connections/opened"), connections, "{case:?}: {v:#}");
        // The server reads on until the client closes: every code has come by then.
        drop(rogue);
        std::thread::sleep(Duration::from_millis(100));
        let codes = codes.lock().unwrap();
        assert!(!codes.is_empty() && codes.iter().all(|&c| c == (kind, code)), "{case:?}: {codes:?}");
    }
}

/// Reads one request head, searching only the new bytes for its end (heads here reach
/// hundreds of KB); None when the client closed.
fn read_big_head(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let from = head.len().saturating_sub(3);
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head[from..].windows(4).any(|w| w == b"\r\n\r\n") {
            return Some(head);
        }
    }
}

/// Class 8: a server that sets a new 4 KB cookie on every response. Before, every cookie was
/// kept and sent: 1.5 MB of Cookie header after 382 responses. The jar keeps 50 a domain.
#[test]
fn a_cookie_per_response_keeps_the_cookie_header_bounded() {
    let largest = Arc::new(AtomicU64::new(0));
    let seen = largest.clone();
    let server = Rogue::start(move |mut s, _| {
        let mut n = 0u64;
        while let Some(head) = read_big_head(&mut s) {
            let text = String::from_utf8_lossy(&head);
            let cookie = text.lines().find_map(|l| l.strip_prefix("Cookie: ")).map_or(0, str::len);
            seen.fetch_max(cookie as u64, Ordering::SeqCst);
            n += 1;
            let set = format!(
                "HTTP/1.1 200 OK\r\nSet-Cookie: c{n}={}; Path=/\r\nContent-Length: 2\r\n\r\nok",
                "v".repeat(4000)
            );
            if s.write_all(set.as_bytes()).is_err() {
                return;
            }
        }
    });
    let (v, _) = bench_json(&["-c", "1", "-n", "200", "--cookies", &server.url("/")]);
    assert_eq!(num(&v, "/result/succeeded"), 200, "{v:#}");
    let largest = largest.load(Ordering::SeqCst);
    eprintln!("largest Cookie header: {largest} bytes");
    // 50 cookies of 4000-byte values (each "cN=" + value, "; " between).
    assert!(largest <= 50 * (4096 + 2), "{largest} bytes of Cookie header");
    assert!(largest >= 50 * 4000, "the jar keeps 50: {largest} bytes");
}
