//! Fuzzes a whole connection through the load engine: `webtune::engine::run` (the real worker:
//! its epoll loop, response state machine, keep-alive reuse, retry after an idle close, reads
//! capped per turn, timeouts) against a server on 127.0.0.1 that plays a script taken from the
//! input: bytes in writes cut at arbitrary points, pauses between them (split reads), interim
//! 1xx floods, endless heads, FIN or RST at any point, waiting for the next request.
//!
//! Input layout: byte 0 is the plan: bit 0 keep-alive, bit 1 the request is HEAD, bits 2..=4
//! the number of requests - 1 (1..=8). The rest is the script, one operation per byte:
//! op % 8 =
//!   0: write the next `1 + byte` bytes of the input as one write;
//!   1: pause 300 µs (the client likely reads what came so far: a split read);
//!   2: close the connection (FIN);
//!   3: reset it (RST);
//!   4: wait (at most 50 ms) for the next request on this connection; none: close;
//!   5: write `2 * byte` interim "100 Continue" heads;
//!   6: write `300 * byte` header lines (up to 450 KB: past the 64 KiB head limit);
//!   7: write a canned response, chosen by the next byte (Content-Length, chunked,
//!      close-delimited, 204, 304, with and without Connection: close).
//! Every connection first reads a request; a connection the script has no more for is closed.
//!
//! Checked (the engine must hold these whatever the server does):
//!   - `run` returns Ok, within the timeouts it was given (no hang, no panic in any thread);
//!   - every request attempt is recorded exactly once (-n requests, none in flight at the end);
//!   - a success has a final status (not 1xx except 101), a failure one of the classes a
//!     server can cause here (malformed, closed_early, reset, timeout, connect_timeout);
//!   - the bytes counted (headers + bodies) never exceed the bytes the server wrote.
#![no_main]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use webtune::bench::BenchSpec;
use webtune::engine::{self, ErrorClass, Record, Shared, Sink};

/// The engine's per-request timeout: far above what a script takes, it bounds a stall.
const TIMEOUT: Duration = Duration::from_millis(500);

#[derive(Default)]
struct Records(Vec<Record>);

impl Sink for Records {
    fn record(&mut self, r: &Record) {
        self.0.push(*r);
    }
}

const CANNED: [&[u8]; 8] = [
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    b"HTTP/1.0 200 OK\r\n\r\nuntil close",
    b"HTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
    b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\nshort",
];

/// Reads one request head; false when none came (closed, reset, or 50 ms of silence).
fn read_request(s: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    true
}

/// Plays `script` (from `*pc`) on one connection; returns when the connection is done.
fn play(mut s: TcpStream, script: &[u8], pc: &mut usize, written: &AtomicU64) {
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(Duration::from_millis(50)));
    let _ = s.set_write_timeout(Some(Duration::from_millis(200)));
    if !read_request(&mut s) {
        return;
    }
    let write = |s: &mut TcpStream, bytes: &[u8]| match s.write_all(bytes) {
        Ok(()) => {
            written.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            true
        }
        // The engine may have closed it; what went out before the error is not known, so
        // count it all (the check is an upper bound).
        Err(_) => {
            written.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            false
        }
    };
    let arg = |pc: &mut usize| {
        let b = script.get(*pc).copied().unwrap_or(0);
        *pc += 1;
        b
    };
    while *pc < script.len() {
        let op = script[*pc] % 8;
        *pc += 1;
        let ok = match op {
            0 => {
                let len = 1 + arg(pc) as usize;
                let start = (*pc).min(script.len());
                let end = (start + len).min(script.len());
                let ok = write(&mut s, &script[start..end]);
                *pc = end;
                ok
            }
            1 => {
                std::thread::sleep(Duration::from_micros(300));
                true
            }
            2 => return,
            3 => {
                let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
                return;
            }
            4 => read_request(&mut s),
            5 => write(&mut s, &b"HTTP/1.1 100 Continue\r\n\r\n".repeat(2 * arg(pc) as usize)),
            6 => write(&mut s, &b"X-More: and more\r\n".repeat(300 * arg(pc) as usize)),
            _ => write(&mut s, CANNED[arg(pc) as usize % CANNED.len()]),
        };
        if !ok {
            return;
        }
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&plan_byte, script)) = input.split_first() else { return };
    let keepalive = plan_byte & 1 == 1;
    let head = plan_byte & 2 == 2;
    let requests = 1 + u64::from((plan_byte >> 2) & 7);

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let server = {
        let (stop, written, script) = (stop.clone(), written.clone(), script.to_vec());
        std::thread::spawn(move || {
            let mut pc = 0;
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((s, _)) => {
                        s.set_nonblocking(false).unwrap();
                        play(s, &script, &mut pc, &written);
                    }
                    Err(_) => std::thread::sleep(Duration::from_micros(200)),
                }
            }
        })
    };

    let spec = BenchSpec {
        no_keepalive: !keepalive,
        method: head.then(|| "HEAD".to_string()),
        threads: Some(1),
        ..BenchSpec::requests_to(&url, 1, requests)
    };
    let mut plan = spec.plan().expect("a valid plan").engine;
    plan.timeout = TIMEOUT;
    plan.connect_timeout = TIMEOUT;
    let started = Instant::now();
    let outcome = engine::run(&plan, vec![Records::default()], Arc::new(Shared::default())).expect("the run");
    let took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    server.join().unwrap();

    // Each request may wait out its timeout once, and once more when retried after an idle
    // close; a wide margin for a busy machine.
    let bound = TIMEOUT * 2 * requests as u32 + Duration::from_secs(5);
    assert!(took < bound, "the run took {took:?}");
    assert_eq!(outcome.in_flight_at_end, 0);
    let records = &outcome.sinks[0].0;
    assert_eq!(records.len() as u64, requests, "every attempt recorded once: {records:?}");
    let mut counted = 0;
    for r in records {
        counted += r.header_bytes + r.body_bytes;
        match r.error {
            None => assert!(!(100..200).contains(&r.status) || r.status == 101, "finished on {}", r.status),
            Some(class) => assert!(
                matches!(
                    class,
                    ErrorClass::Malformed
                        | ErrorClass::ClosedEarly
                        | ErrorClass::Reset
                        | ErrorClass::Timeout
                        | ErrorClass::ConnectTimeout
                ),
                "{class:?}: {r:?}"
            ),
        }
    }
    let sent = written.load(Ordering::Relaxed);
    assert!(counted <= sent, "counted {counted} bytes, the server wrote {sent}");
});
