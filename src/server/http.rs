//! A small blocking HTTP/1.0 GET for readiness checks and server status pages: one deadline
//! for the whole exchange, a size cap, and the user's interrupt honoured (see sys::bounded).

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use crate::sys::bounded::{Bounded, left};

/// The most a readiness or status answer may hold: status pages are a few kilobytes.
pub const MAX_ANSWER: usize = 1 << 20;

/// GET `path` from host:port; the status code and body, or None when nothing answered in
/// time (the whole exchange within `timeout`).
pub fn get(host: &str, port: u16, path: &str, timeout: Duration) -> Option<(u16, String)> {
    fetch(host, port, path, Instant::now() + timeout, crate::sys::interrupt_if_installed()).ok()
}

/// GET `path`, all of it by `deadline`, at most MAX_ANSWER bytes, given up when `stop` is
/// set; the error says why there is no answer.
pub fn fetch(host: &str, port: u16, path: &str, deadline: Instant, stop: &AtomicBool) -> Result<(u16, String), String> {
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("cannot resolve {host}"))?;
    let mut s = TcpStream::connect_timeout(&addr, left(deadline)).map_err(|e| format!("cannot connect: {e}"))?;
    s.set_write_timeout(Some(left(deadline))).map_err(|e| e.to_string())?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nUser-Agent: webtune\r\n\r\n")
        .map_err(|e| format!("cannot send the request: {e}"))?;
    let buf = Bounded::new(&s, deadline, MAX_ANSWER, stop, "the answer").read_to_end().map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&buf);
    let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).ok_or("no HTTP status line")?;
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_string();
    Ok((status, body))
}
