//! `webtune bench` against a server that misbehaves: every failure lands in its error class,
//! and what is not a failure (a server ending keep-alive, varying lengths) is not counted as one;
//! whatever the server does, the run ends on time and on Ctrl-C.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::support::lab::Lab;
use crate::support::rogue::{Rogue, read_request, reset, response, serve_each};
use crate::support::{
    Spawned, assert_valid, bench_json, errors, float, num, spawn_webtune, webtune, webtune_with_limit,
};

#[test]
fn reset_connections_are_resets() {
    let server = Rogue::start(|mut s, _| {
        if read_request(&mut s).is_some() {
            reset(s);
        }
    });
    let (v, run) = bench_json(&["-c", "2", "-n", "10", &server.url("/")]);
    assert_eq!(errors(&v, "reset"), 10, "{v:#}");
    assert_eq!(num(&v, "/result/succeeded"), 0);
    assert_eq!(run.code, 1, "a run with no success exits 1");
    assert!(run.stderr.contains("no request succeeded"), "{}", run.stderr);
}

#[test]
fn stalled_responses_time_out() {
    let server = Rogue::start(|mut s, _| {
        if read_request(&mut s).is_some() {
            std::thread::sleep(Duration::from_secs(3));
        }
    });
    let started = Instant::now();
    let (v, _) = bench_json(&["-c", "2", "-n", "4", "--timeout", "300ms", &server.url("/")]);
    assert_eq!(errors(&v, "timeout"), 4, "{v:#}");
    assert_eq!(num(&v, "/result/failed"), 4);
    // Two rounds of 300 ms timeouts; far less than the server's 3 s stall.
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(600) && took < Duration::from_millis(2500), "took {took:?}");
}

#[test]
fn garbage_status_line_is_malformed() {
    let server = Rogue::start(|mut s, _| serve_each(&mut s, None, |_| b"HELLO WORLD\r\n\r\n".to_vec()));
    let (v, _) = bench_json(&["-c", "2", "-n", "6", &server.url("/")]);
    assert_eq!(errors(&v, "malformed"), 6, "{v:#}");
}

#[test]
fn oversized_headers_are_malformed() {
    let server = Rogue::start(|mut s, _| {
        serve_each(&mut s, None, |_| {
            format!("HTTP/1.1 200 OK\r\nX-Big: {}\r\nContent-Length: 0\r\n\r\n", "a".repeat(70_000)).into_bytes()
        })
    });
    let (v, _) = bench_json(&["-c", "1", "-n", "3", &server.url("/")]);
    assert_eq!(errors(&v, "malformed"), 3, "{v:#}");
}

#[test]
fn server_closing_kept_alive_connection_is_retried_not_failed() {
    // Three responses per connection, then a silent close (no Connection: close header).
    let server = Rogue::start(|mut s, _| serve_each(&mut s, Some(3), |_| response("200 OK", b"hello")));
    let (v, run) = bench_json(&["-c", "1", "-n", "10", &server.url("/")]);
    assert_eq!(run.code, 0);
    assert_eq!(num(&v, "/result/succeeded"), 10, "{v:#}");
    assert_eq!(num(&v, "/result/failed"), 0);
    assert_eq!(num(&v, "/result/connections/opened"), 4);
    assert_eq!(num(&v, "/result/connections/server_closed_idle"), 3);
    assert_eq!(server.accepted.load(std::sync::atomic::Ordering::SeqCst), 4);
}

#[test]
fn chunked_body_split_at_every_byte() {
    let body: Vec<u8> = (0..700u32).map(|i| b'a' + (i % 26) as u8).collect();
    let mut wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for part in body.chunks(97) {
        wire.extend_from_slice(format!("{:x};ext=1\r\n", part.len()).as_bytes());
        wire.extend_from_slice(part);
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(b"0\r\nX-Trailer: yes\r\n\r\n");
    let server = Rogue::start(move |mut s, _| {
        while read_request(&mut s).is_some() {
            // One write per byte with Nagle off: the client sees the response in tiny pieces.
            for b in &wire {
                if s.write_all(std::slice::from_ref(b)).is_err() {
                    return;
                }
            }
        }
    });
    let (v, _) = bench_json(&["-c", "2", "-n", "6", &server.url("/")]);
    assert_eq!(num(&v, "/result/succeeded"), 6, "{v:#}");
    assert_eq!(num(&v, "/result/bytes/body"), 6 * 700);
    assert_eq!(num(&v, "/result/connections/opened"), 2, "chunked responses keep the connection alive");
    assert_eq!(num(&v, "/result/length_differed"), 0);
}

#[test]
fn truncated_body_is_closed_early() {
    let server = Rogue::start(|mut s, _| {
        if read_request(&mut s).is_some() {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b");
        }
    });
    let (v, _) = bench_json(&["-c", "2", "-n", "4", &server.url("/")]);
    assert_eq!(errors(&v, "closed_early"), 4, "{v:#}");
}

#[test]
fn varying_length_is_counted_apart_from_failures() {
    let server = Rogue::start(|mut s, _| {
        serve_each(&mut s, None, |i| response("200 OK", &b"0123456789ab"[..10 + (i % 3) as usize]))
    });
    let (v, run) = bench_json(&["-c", "1", "-n", "9", &server.url("/")]);
    assert_eq!(run.code, 0);
    assert_eq!(num(&v, "/result/failed"), 0, "{v:#}");
    // Lengths 10, 11, 12, 10, 11, 12, ...: six differ from the first.
    assert_eq!(num(&v, "/result/length_differed"), 6);
    assert_eq!(num(&v, "/target/document_length"), 10);
}

#[test]
fn interim_responses_and_status_breakdown() {
    let server = Rogue::start(|mut s, _| {
        serve_each(&mut s, None, |i| {
            let status = ["200 OK", "404 Not Found", "500 Internal Server Error"][(i % 3) as usize];
            let mut out = b"HTTP/1.1 100 Continue\r\n\r\n".to_vec();
            out.extend(response(status, b"x"));
            out
        })
    });
    let (v, run) = bench_json(&["-c", "1", "-n", "9", &server.url("/")]);
    assert_eq!(run.code, 0);
    assert_eq!(num(&v, "/result/status/200"), 3, "{v:#}");
    assert_eq!(num(&v, "/result/status/404"), 3);
    assert_eq!(num(&v, "/result/status/500"), 3);
    assert_eq!(v.pointer("/result/status").unwrap().as_object().unwrap().len(), 3);
}

#[test]
fn close_delimited_bodies_need_a_connection_each() {
    let server = Rogue::start(|mut s, _| {
        if read_request(&mut s).is_some() {
            let _ = s.write_all(b"HTTP/1.0 200 OK\r\n\r\nuntil the end");
        }
    });
    let (v, _) = bench_json(&["-c", "2", "-n", "8", &server.url("/")]);
    assert_eq!(num(&v, "/result/succeeded"), 8, "{v:#}");
    assert_eq!(num(&v, "/result/bytes/body"), 8 * 13);
    assert_eq!(num(&v, "/result/connections/opened"), 8);
}

#[test]
fn nothing_listening_is_refused() {
    let port = crate::support::nginx::free_port();
    let (v, run) = bench_json(&["-c", "2", "-n", "20", &format!("http://127.0.0.1:{port}/")]);
    assert_eq!(errors(&v, "refused"), 20, "{v:#}");
    assert_eq!(run.code, 1);
    // Refused at once: no "the client was the bottleneck" warning from a run of no length.
    assert_eq!(v["warnings"], serde_json::json!([]), "{v:#}");

    // A run of 10 s, closed or open loop, ends within a second, saying why (wrk and oha say
    // "connection refused" at once).
    for extra in [&["-d", "10s"][..], &["--rate", "100", "-d", "10s"]] {
        let url = format!("http://127.0.0.1:{port}/");
        let mut args = vec!["bench", "-c", "2"];
        args.extend_from_slice(extra);
        args.push(&url);
        let started = std::time::Instant::now();
        let run = crate::support::webtune(&args);
        let took = started.elapsed();
        assert_eq!(run.code, 1, "{extra:?}: {}", run.stderr);
        assert!(took < Duration::from_secs(3), "{extra:?}: ran {took:?}");
        let cause = format!("webtune: no request succeeded: connection refused: nothing listens at 127.0.0.1:{port}:");
        assert!(run.stderr.contains(&cause), "{extra:?}: {}", run.stderr);
        assert!(run.stdout.contains("(refused "), "{}", run.stdout);
    }
}

#[test]
fn latency_reflects_server_delay() {
    // A fixed 20 ms service time, one client: every total latency is at least 20 ms.
    let server = Rogue::start(|mut s, _| {
        serve_each(&mut s, None, |_| {
            std::thread::sleep(Duration::from_millis(20));
            response("200 OK", b"ok")
        })
    });
    let (v, _) = bench_json(&["-c", "1", "-n", "20", &server.url("/")]);
    let min = float(&v, "/result/latency_ms/total/min");
    let p50 = float(&v, "/result/latency_ms/total/p50");
    assert!(min >= 20.0 && p50 < 40.0, "min {min} p50 {p50}");
    let rps = float(&v, "/result/requests_per_s");
    assert!(rps > 25.0 && rps <= 50.0, "one client at 20 ms a request: {rps}/s");
}

#[test]
fn text_report_has_the_ab_fields() {
    let server = Rogue::start(|mut s, _| serve_each(&mut s, None, |_| response("200 OK", b"hello")));
    let run = webtune(&["bench", "--quiet", "-c", "2", "-n", "10", &server.url("/")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for field in [
        "Document length:     5 bytes",
        "Complete requests:   10",
        "Failed requests:     0",
        "Status codes:        200: 10",
        "Requests per second:",
        "Connect ",
        "First byte ",
        "Total ",
        "Client CPU:",
    ] {
        assert!(run.stdout.contains(field), "missing {field:?} in:\n{}", run.stdout);
    }
    assert!(run.stderr.is_empty(), "no progress line when not a terminal: {:?}", run.stderr);
}

#[test]
fn ipv6_loopback() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        // Some containers have no IPv6 at all; that is the machine, not a missing package.
        eprintln!("SKIPPED: no IPv6 loopback on this machine");
        return;
    }
    let server = Rogue::start_on("[::1]:0", |mut s, _| serve_each(&mut s, None, |_| response("200 OK", b"six")));
    let (v, _) = bench_json(&["-c", "2", "-n", "10", &server.url("/")]);
    assert_eq!(num(&v, "/result/succeeded"), 10, "{v:#}");
    assert_eq!(num(&v, "/result/bytes/body"), 30);
}

/// Segments the socket has received (tcp_info's tcpi_segs_in, Linux 4.2 and later).
fn segments_in(stream: &std::net::TcpStream) -> u32 {
    use std::os::fd::AsRawFd;
    let mut info = [0u8; 256];
    let mut len = info.len() as libc::socklen_t;
    // SAFETY: a valid descriptor and a buffer of `len` bytes; the kernel writes at most that.
    let rc = unsafe {
        libc::getsockopt(stream.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, info.as_mut_ptr().cast(), &mut len)
    };
    assert!(rc == 0 && len >= 144, "TCP_INFO: rc {rc}, {len} bytes");
    u32::from_ne_bytes(info[140..144].try_into().unwrap())
}

#[test]
fn the_handshakes_last_ack_rides_on_the_request() {
    // The server's side of each connection, once the request is in: SYN + the request
    // carrying the handshake's ACK is 2 segments; a separate ACK would make it 3.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let server = Rogue::start(move |mut s, _| {
        if read_request(&mut s).is_some() {
            seen2.lock().unwrap().push(segments_in(&s));
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
    let (v, _) = bench_json(&["-c", "2", "-n", "20", "--no-keepalive", &server.url("/")]);
    assert_eq!(num(&v, "/result/succeeded"), 20, "{v:#}");
    assert_eq!(num(&v, "/result/connections/opened"), 20, "{v:#}");
    assert_eq!(*seen.lock().unwrap(), vec![2; 20]);
}

/// `webtune bench --json -q ARGS`, which must end within `limit` (else the test fails): its
/// report, checked against the schema, and how long it ran.
fn bench_within(args: &[&str], limit: Duration) -> (serde_json::Value, Duration) {
    let mut full = vec!["bench", "--json", "--quiet"];
    full.extend_from_slice(args);
    let started = Instant::now();
    let run = webtune_with_limit(&full, limit);
    let took = started.elapsed();
    let v: serde_json::Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}\nstderr: {}", run.stdout, run.stderr));
    assert_valid(&v);
    (v, took)
}

/// A loopback URL whose port nothing listens on (it was bound, then released).
fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/")
}

#[test]
fn refused_closed_loop_ends_on_time() {
    // Regression: a refused connect restarted at once from the loop's queue, which the loop
    // drained without ever checking -d (half a million refusals in 5 s, never ending).
    let url = closed_port_url();
    let runs: [&[&str]; 3] = [&["-d", "1s"], &["-d", "1s", "--no-keepalive"], &["--stages", "500ms:2,500ms:2"]];
    for extra in runs {
        let mut args = vec!["-c", "2"];
        args.extend_from_slice(extra);
        args.push(&url);
        let (v, took) = bench_within(&args, Duration::from_secs(3));
        let refused = errors(&v, "refused");
        assert!(refused > 0, "{extra:?}: {v:#}");
        assert_eq!(num(&v, "/result/failed"), refused, "{extra:?}: {v:#}");
        // Each client pauses at least 1 ms after a refusal: at most ~1000 tries a second
        // each, where the loop that spun made ~80,000.
        assert!(refused <= 2 * 1001, "{extra:?}: {refused} refusals in 1 s from 2 clients");
        assert!(took < Duration::from_secs(3), "{extra:?}: took {took:?}");
    }
}

#[test]
fn server_killed_mid_run_ends_on_time() {
    // Regression: after the server died, every reconnect was refused at once and the run
    // never ended.
    let lab = Lab::start(&["--workers", "1"]);
    let pid = nix::unistd::Pid::from_raw(lab.pid());
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        // Its worker dies with it (PR_SET_PDEATHSIG), and the port closes.
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
    });
    // -d 2s + --timeout 1s + 1 s.
    let (v, took) = bench_within(&["-c", "2", "-d", "2s", "--timeout", "1s", &lab.url("/")], Duration::from_secs(4));
    killer.join().unwrap();
    assert!(num(&v, "/result/succeeded") > 0, "{v:#}");
    let refused = errors(&v, "refused");
    assert!(refused > 0, "{v:#}");
    // At least 1 ms between a client's refusals. Without the pause a run sometimes ended
    // (when a refusal happened to come back after a turn of the loop), after ~50,000 of them.
    assert!(refused <= 2 * 2001, "{refused} refusals in under 2 s from 2 clients");
    assert!(took < Duration::from_secs(4), "took {took:?}");
}

/// A server that answers every request with interim heads, without end.
fn endless_interim_server() -> Rogue {
    Rogue::start(|mut s, _| {
        if read_request(&mut s).is_some() {
            let flood = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(1000);
            while s.write_all(&flood).is_ok() {}
        }
    })
}

#[test]
fn endless_interim_responses_end_on_time() {
    // Regression: the reader looped over interim heads as long as they came, and the engine
    // never returned to its loop, deaf to -d and Ctrl-C.
    let server = endless_interim_server();
    let (v, took) = bench_within(&["-c", "2", "-d", "1s", &server.url("/")], Duration::from_secs(3));
    assert!(errors(&v, "malformed") > 0, "{v:#}");
    assert_eq!(num(&v, "/result/failed"), errors(&v, "malformed"), "{v:#}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

#[test]
fn endless_interim_responses_yield_to_ctrl_c() {
    let server = endless_interim_server();
    let Spawned { mut child, stdout: out, .. } =
        spawn_webtune(&["bench", "--json", "--quiet", "-c", "2", "-d", "30s", &server.url("/")]);
    std::thread::sleep(Duration::from_millis(700));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let signalled = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if signalled.elapsed() > Duration::from_secs(1) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("webtune bench was still running 1 s after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let v: serde_json::Value = serde_json::from_str(&out.join().unwrap()).expect("a JSON report after SIGINT");
    assert_valid(&v);
    assert!(errors(&v, "malformed") > 0, "{v:#}");
}

#[test]
fn endless_body_does_not_keep_the_loop_from_timeouts() {
    // A body of one-byte chunks without end, sent faster than the client parses it: before
    // reads were capped per turn, receive() did not return while the server kept ahead, and
    // the request did not time out (this hung most runs, not all: a server descheduled long
    // enough lets the client catch up).
    let server = Rogue::start(|mut s, _| {
        if read_request(&mut s).is_some()
            && s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").is_ok()
        {
            let flood = b"1\r\nx\r\n".repeat(10_000);
            while s.write_all(&flood).is_ok() {}
        }
    });
    let (v, took) =
        bench_within(&["-c", "1", "-d", "1s", "--timeout", "300ms", &server.url("/")], Duration::from_secs(3));
    assert!(errors(&v, "timeout") > 0, "{v:#}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

/// A server that answers every request with `bytes` and then holds the connection open, as an
/// SSH daemon does after its banner.
fn answers_then_holds(bytes: &'static [u8]) -> Rogue {
    Rogue::start(move |mut s, _| {
        if read_request(&mut s).is_some() && s.write_all(bytes).is_ok() {
            // Hold until the client closes (or the rogue's 10 s read limit).
            let _ = std::io::Read::read(&mut s, &mut [0u8; 64]);
        }
    })
}

#[test]
fn non_http_bytes_are_malformed() {
    // Before: each waited for a blank line that never came, counted as timeout (or, when the
    // server closed, closed_early).
    let cases: [(&str, &'static [u8]); 3] = [
        ("ssh banner", b"SSH-2.0-OpenSSH_9.6p1 Debian-3\r\n"),
        ("tls alert", b"\x15\x03\x01\x00\x02\x02\x28"),
        ("binary", b"\x00\x01\x02\xff\xfe\xfd garbage \x7f"),
    ];
    for (name, bytes) in cases {
        let server = answers_then_holds(bytes);
        let (v, took) =
            bench_within(&["-c", "2", "-n", "6", "--timeout", "5s", &server.url("/")], Duration::from_secs(4));
        assert_eq!(errors(&v, "malformed"), 6, "{name}: {v:#}");
        assert_eq!(num(&v, "/result/failed"), 6, "{name}: {v:#}");
        // At once, not after the 5 s timeout.
        assert!(took < Duration::from_secs(3), "{name}: took {took:?}");
    }
    // The same bytes followed by the server's close: malformed too, not closed_early.
    let server = Rogue::start(|mut s, _| {
        if read_request(&mut s).is_some() {
            let _ = s.write_all(b"SSH-2.0-OpenSSH_9.6\r\n");
        }
    });
    let (v, _) = bench_within(&["-c", "1", "-n", "3", &server.url("/")], Duration::from_secs(4));
    assert_eq!(errors(&v, "malformed"), 3, "{v:#}");
}

/// The pacings every hostile server is tried under: closed loop, a new connection per
/// request, open loop.
const PACINGS: [&[&str]; 3] = [&[], &["--no-keepalive"], &["--rate", "40"]];

/// Runs `bench -c 2 -d 1s --timeout 500ms` against `server` under each pacing: each must end
/// within -d + --timeout + 1 s, with no success and every failure of class `class`.
fn ends_on_time_whatever_the_server_does(server: &Rogue, class: &str) {
    let url = server.url("/");
    for pacing in PACINGS {
        let mut args = vec!["-c", "2", "-d", "1s", "--timeout", "500ms"];
        args.extend_from_slice(pacing);
        args.push(&url);
        let bound = Duration::from_millis(2500);
        let (v, took) = bench_within(&args, bound + Duration::from_secs(2));
        assert!(took < bound, "{pacing:?}: took {took:?}, more than -d + --timeout + 1 s");
        assert_eq!(num(&v, "/result/succeeded"), 0, "{pacing:?}: {v:#}");
        assert!(errors(&v, class) > 0, "{pacing:?}: no {class}: {v:#}");
        assert_eq!(num(&v, "/result/failed"), errors(&v, class), "{pacing:?}: {v:#}");
    }
}

#[test]
fn hostile_server_accepts_and_never_answers() {
    let server = Rogue::start(|mut s, _| {
        // Reads whatever comes until the client closes, answers nothing.
        while std::io::Read::read(&mut s, &mut [0u8; 1024]).is_ok_and(|n| n > 0) {}
    });
    ends_on_time_whatever_the_server_does(&server, "timeout");
}

#[test]
fn hostile_server_trickles_a_byte_at_a_time() {
    // A byte per 100 ms without end: the timeout bounds the whole response, not the gaps.
    let server = Rogue::start(|mut s, _| {
        if read_request(&mut s).is_some() {
            let head = b"HTTP/1.1 200 OK\r\nX-Slow: ";
            for b in head.iter().chain(std::iter::repeat(&b'a')) {
                if s.write_all(std::slice::from_ref(b)).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    });
    ends_on_time_whatever_the_server_does(&server, "timeout");
}

/// A server that answers every request with `head`, then `flood` again and again until the
/// client goes.
fn head_then_flood(head: &'static [u8], flood: Vec<u8>) -> Rogue {
    Rogue::start(move |mut s, _| {
        if read_request(&mut s).is_some() && s.write_all(head).is_ok() {
            while s.write_all(&flood).is_ok() {}
        }
    })
}

#[test]
fn hostile_server_sends_endless_header_lines() {
    // The head's size is bounded: malformed once it passes the limit.
    let server = head_then_flood(b"HTTP/1.1 200 OK\r\n", b"X-Again: and again\r\n".repeat(500));
    ends_on_time_whatever_the_server_does(&server, "malformed");
}

#[test]
fn hostile_server_sends_an_endless_chunked_body() {
    let chunk = [&b"400\r\n"[..], &[b'x'; 0x400], b"\r\n"].concat();
    let server = head_then_flood(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", chunk.repeat(64));
    ends_on_time_whatever_the_server_does(&server, "timeout");
}

#[test]
fn hostile_server_resets_mid_response() {
    let server = Rogue::start(|mut s, _| {
        if read_request(&mut s).is_some()
            && s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\npart of it").is_ok()
        {
            std::thread::sleep(Duration::from_millis(20));
            reset(s);
        }
    });
    ends_on_time_whatever_the_server_does(&server, "reset");
}

/// Runs `webtune bench --json -q ARGS`, which must end within `limit` and never have more
/// than 64 MiB resident (read from /proc every 50 ms); returns its report.
fn bench_in_bounded_memory(args: &[&str], limit: Duration) -> serde_json::Value {
    let mut full = vec!["bench", "--json", "--quiet"];
    full.extend_from_slice(args);
    let Spawned { mut child, stdout: out, .. } = spawn_webtune(&full);
    let status = format!("/proc/{}/status", child.id());
    let started = Instant::now();
    let mut peak_kib = 0;
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("webtune bench {args:?} did not finish within {limit:?}");
        }
        let rss = std::fs::read_to_string(&status).ok().and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        });
        peak_kib = peak_kib.max(rss.unwrap_or(0));
        std::thread::sleep(Duration::from_millis(50));
    }
    let v: serde_json::Value = serde_json::from_str(&out.join().unwrap()).expect("a JSON report");
    assert_valid(&v);
    eprintln!("{args:?}: peak RSS {peak_kib} KiB");
    assert!(peak_kib < 64 * 1024, "{args:?}: peak RSS {peak_kib} KiB");
    v
}

#[test]
fn open_loop_that_outruns_its_connections_keeps_memory_flat() {
    // Before: every request due while the connections were busy was queued, 16 bytes each:
    // ten million a second against a server that never answers grew by ~160 MB a second.
    let silent = Rogue::start(|mut s, _| while std::io::Read::read(&mut s, &mut [0u8; 1024]).is_ok_and(|n| n > 0) {});
    let args = ["-c", "2", "-d", "3s", "--timeout", "10s", "--rate", "10000000", &silent.url("/")];
    let v = bench_in_bounded_memory(&args, Duration::from_secs(8));
    // 3 s at 10^7/s were due; the two connections each started one (never answered).
    let unsent = num(&v, "/result/unsent");
    assert!((29_999_990..=30_000_002).contains(&unsent), "{v:#}");
    assert_eq!(num(&v, "/result/scheduled"), unsent + 2, "{v:#}");
    assert_eq!(num(&v, "/result/in_flight_at_end"), unsent + 2, "{v:#}");
    assert!(v["warnings"].to_string().contains("never sent"), "{v:#}");

    // A server at 20 ms a request, 10^6/s asked of 4 connections: each freed connection
    // takes the oldest due request, late, and the rest is counted unsent.
    let slow = Rogue::start(|mut s, _| {
        serve_each(&mut s, None, |_| {
            std::thread::sleep(Duration::from_millis(20));
            response("200 OK", b"ok")
        })
    });
    let args = ["-c", "4", "-d", "2s", "--timeout", "1s", "--rate", "1000000", &slow.url("/")];
    let v = bench_in_bounded_memory(&args, Duration::from_secs(6));
    let succeeded = num(&v, "/result/succeeded");
    // At most 4 × 2 s / 20 ms = 400 answered; this machine is shared, so only a floor.
    assert!((40..=400).contains(&succeeded), "{v:#}");
    assert!(num(&v, "/result/late/requests") + 4 >= succeeded, "all but the first few waited: {v:#}");
    let unsent = num(&v, "/result/unsent");
    let started = num(&v, "/result/scheduled") - unsent;
    assert!(started >= succeeded && started <= succeeded + num(&v, "/result/failed") + 4, "{v:#}");
    assert!((1_999_000..=2_000_002).contains(&(unsent + started)), "{v:#}");
}

#[test]
fn hdr_log_write_errors_are_one_line_and_lose_no_report() {
    let server = Rogue::start(|mut s, _| serve_each(&mut s, None, |_| response("200 OK", b"hello")));
    // A device (that would refuse every write, ENOSPC) is not a file: refused before any
    // load, exit 2, as every output path that is not an ordinary file of this user.
    let run =
        webtune(&["bench", "--json", "--quiet", "-c", "1", "-n", "20", "--hdr-log", "/dev/full", &server.url("/")]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stderr, "webtune: /dev/full: not a regular file; give a file name\n");
    assert_eq!(server.accepted.load(std::sync::atomic::Ordering::SeqCst), 0, "no load was sent");

    // A path that cannot be created (its parent is a file, which stops root too): refused
    // before any load, exit 2.
    let file = tempfile::NamedTempFile::new().unwrap();
    let path = file.path().join("x.hlog");
    let before = server.accepted.load(std::sync::atomic::Ordering::SeqCst);
    let run =
        webtune(&["bench", "--quiet", "-c", "1", "-n", "5", "--hdr-log", path.to_str().unwrap(), &server.url("/")]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("cannot create") && run.stderr.contains("Not a directory"), "{}", run.stderr);
    assert!(run.stdout.is_empty());
    assert_eq!(server.accepted.load(std::sync::atomic::Ordering::SeqCst), before, "no load was sent");
}

#[test]
fn a_server_that_closes_during_the_tls_handshake_is_a_tls_failure() {
    // Reads the client's hello, then closes (FIN): before, closed_early with no reason.
    let server = Rogue::start(|mut s, _| {
        let _ = std::io::Read::read(&mut s, &mut [0u8; 4096]);
    });
    let url = server.url("/").replace("http://", "https://");
    let (v, run) = bench_json(&["-c", "1", "-n", "3", &url]);
    assert_eq!(errors(&v, "tls"), 3, "{v:#}");
    assert_eq!(v["target"]["tls_failure"], "the server closed the connection during the TLS handshake", "{v:#}");
    assert_eq!(
        run.stderr.trim(),
        "webtune: no request succeeded: the server closed the connection during the TLS handshake"
    );
}
