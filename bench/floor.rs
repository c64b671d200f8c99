//! The floor: the least a kept-alive HTTP client can do per request with epoll, to show what
//! any load generator's CPU per request is made of on this machine. No parsing, no timing, no
//! records: N connections, one fixed GET each, a response counted when its known length has
//! arrived, the next request written at once. Responses are collected as soon as they arrive
//! (no pause), as wrk and webtune do.
//!
//!     cargo build --release --example floor
//!     target/release/examples/floor URL CONNECTIONS SECONDS
//!
//! Prints `requests N`, `requests/s R`; bench/compare.py runs it as the "floor" row. Loopback
//! only, plain HTTP, a server that answers with Content-Length (nginx serving a file).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("floor: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, conns, secs] = args.as_slice() else {
        return Err("usage: floor URL CONNECTIONS SECONDS".into());
    };
    let (addr, path) = parse_url(url)?;
    let conns: usize = conns.parse().map_err(|_| format!("bad connection count {conns:?}"))?;
    let secs: u64 = secs.parse().map_err(|_| format!("bad seconds {secs:?}"))?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes();

    let mut socks = Vec::with_capacity(conns);
    for _ in 0..conns {
        socks.push(TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?);
    }
    let length = response_length(&mut socks[0], &request)?;
    // SAFETY: plain epoll calls on descriptors this function owns; events point into `events`.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        return Err("epoll_create1 failed".into());
    }
    for (i, s) in socks.iter_mut().enumerate() {
        s.set_nonblocking(true).map_err(|e| e.to_string())?;
        let mut ev = libc::epoll_event { events: (libc::EPOLLIN | libc::EPOLLET) as u32, u64: i as u64 };
        unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, s.as_raw_fd(), &mut ev) };
        s.write_all(&request).map_err(|e| e.to_string())?;
    }
    let mut got = vec![0usize; conns];
    let mut buf = vec![0u8; 64 * 1024];
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 1024];
    let mut done: u64 = 0;
    let start = Instant::now();
    let end = start + Duration::from_secs(secs);
    while Instant::now() < end {
        let n = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, 100) };
        for ev in &events[..n.max(0) as usize] {
            let i = ev.u64 as usize;
            // Edge-triggered: read until the socket is empty.
            loop {
                match socks[i].read(&mut buf) {
                    Ok(0) => return Err("the server closed a connection".into()),
                    Ok(k) => {
                        got[i] += k;
                        if got[i] >= length {
                            got[i] -= length;
                            done += 1;
                            socks[i].write_all(&request).map_err(|e| e.to_string())?;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!("requests {done}");
    println!("requests/s {:.2}", done as f64 / elapsed);
    Ok(())
}

/// `http://127.0.0.1:PORT/path` (loopback only) as an address and a path.
fn parse_url(url: &str) -> Result<(SocketAddr, String), String> {
    let rest = url.strip_prefix("http://").ok_or("only http:// URLs")?;
    let (host, path) = rest.split_once('/').map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
    let addr: SocketAddr = host.parse().map_err(|_| format!("not an IP:port: {host:?}"))?;
    if !addr.ip().is_loopback() {
        return Err(format!("{addr} is not a loopback address"));
    }
    Ok((addr, path))
}

/// The length of the whole response (head + Content-Length body), from one exchange.
fn response_length(s: &mut TcpStream, request: &[u8]) -> Result<usize, String> {
    s.write_all(request).map_err(|e| e.to_string())?;
    let mut have = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let k = s.read(&mut chunk).map_err(|e| e.to_string())?;
        if k == 0 {
            return Err("the server closed the connection".into());
        }
        have.extend_from_slice(&chunk[..k]);
        let Some(head) = have.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
        let text = String::from_utf8_lossy(&have[..head]).to_ascii_lowercase();
        let body: usize = text
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .ok_or("the response has no Content-Length")?;
        if have.len() >= head + 4 + body {
            return Ok(head + 4 + body);
        }
    }
}
