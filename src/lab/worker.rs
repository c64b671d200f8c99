//! A lab worker: a forked process that accepts one connection at a time on the shared
//! listening socket and serves its requests, as an Apache prefork child does.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::config::LabConfig;
use super::heap::{Heap, PageWalk};
use super::scoreboard::{Scoreboard, State};
use super::signals::{on_retire, retire_requested, stop_requested};
use super::status;
use super::work::Worksite;

const MAX_HEAD: usize = 64 * 1024;

/// Runs in the child after fork; never returns.
pub fn run(cfg: &LabConfig, listener: &TcpListener, board: &Scoreboard, slot: usize, heap: &Heap, parent: i32) -> ! {
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
    // Die with the parent, even if it is killed outright.
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    if nix::unistd::getppid().as_raw() != parent {
        std::process::exit(0);
    }
    // SAFETY: the handler only stores to an atomic. No SA_RESTART: accept() returns EINTR.
    unsafe {
        let retire = SigAction::new(SigHandler::Handler(on_retire), SaFlags::empty(), SigSet::empty());
        let _ = sigaction(Signal::SIGUSR1, &retire);
        let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
        let _ = sigaction(Signal::SIGTERM, &default);
        let _ = sigaction(Signal::SIGINT, &default);
    }
    // A SIGTERM that came between fork and the lines above ran the parent's handler, which
    // this process inherited: honour it, or the parent waits 5 s to kill it.
    if stop_requested() {
        std::process::exit(0);
    }
    let me = board.slot(slot);
    let pid = std::process::id();
    let mut w = Server {
        cfg,
        board,
        slot,
        site: Worksite { heap, walk: PageWalk::new(heap.pages(), pid as u64 * 2654435761), leaked: Vec::new() },
        served: 0,
        body: vec![b'x'; 64 * 1024],
        pid,
    };
    loop {
        if retire_requested() {
            break;
        }
        me.set_state(State::Idle);
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        me.set_state(State::Busy);
        if w.serve_connection(stream) {
            board.totals().recycled.fetch_add(1, Ordering::Relaxed);
            break;
        }
    }
    me.set_state(State::Empty);
    std::process::exit(0);
}

/// A worker's state across connections.
struct Server<'a> {
    cfg: &'a LabConfig,
    board: &'a Scoreboard,
    slot: usize,
    site: Worksite<'a>,
    /// Requests served by this worker (for --max-requests).
    served: u64,
    /// Filler for response bodies, allocated once.
    body: Vec<u8>,
    pid: u32,
}

impl Server<'_> {
    /// Serves requests on one connection. Returns true when this worker reached max-requests.
    fn serve_connection(&mut self, mut stream: TcpStream) -> bool {
        let (cfg, board, pid) = (self.cfg, self.board, self.pid);
        let me = board.slot(self.slot);
        let _ = stream.set_nodelay(true);
        let mut buf = Vec::with_capacity(4096);
        let mut on_connection: u64 = 0;
        loop {
            // Between requests the connection holds this worker, as Apache's keep-alive does.
            // The first request may take Apache's default Timeout to arrive; later ones the
            // keep-alive timeout (set once: each setsockopt is a system call).
            match on_connection {
                0 => {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
                }
                1 => {
                    me.set_state(State::KeepAlive);
                    let _ = stream.set_read_timeout(Some(cfg.keepalive_timeout));
                }
                _ => me.set_state(State::KeepAlive),
            }
            let Some(req) = read_request(&mut stream, &mut buf, me) else { return false };
            me.set_state(State::Busy);
            on_connection += 1;
            let wants_close = req.close || !cfg.keepalive;
            let last_on_connection = cfg.max_keepalive_requests > 0 && on_connection >= cfg.max_keepalive_requests;
            self.served += 1;
            let recycle = cfg.max_requests > 0 && self.served >= cfg.max_requests;
            let keep = !(wants_close || last_on_connection || recycle);

            let (status_line, content_type, payload, body_len) = if req.path == "/server-status" {
                let text = status::render(board, cfg, req.query.split('&').any(|p| p == "json"));
                ("200 OK", "text/plain", Some(text.into_bytes()), 0)
            } else {
                match cfg.work.with_query(&req.query) {
                    Ok(work) => match self.site.perform(&work) {
                        Ok(()) => ("200 OK", "text/plain", None, work.body_bytes as usize),
                        Err(e) => ("503 Service Unavailable", "text/plain", Some(format!("{e}\n").into_bytes()), 0),
                    },
                    Err(e) => ("400 Bad Request", "text/plain", Some(format!("{e}\n").into_bytes()), 0),
                }
            };
            let len = payload.as_ref().map_or(body_len, Vec::len);
            let head = format!(
                "HTTP/1.1 {status_line}\r\nServer: webtune-lab\r\nContent-Type: {content_type}\r\nContent-Length: {len}\r\n\
             X-Worker-Pid: {pid}\r\nConnection: {}\r\n\r\n",
                if keep { "keep-alive" } else { "close" }
            );
            // Counted before the response leaves, so a client that has its answer sees the count.
            me.requests.fetch_add(1, Ordering::Relaxed);
            board.totals().requests.fetch_add(1, Ordering::Relaxed);
            let sent = write_response(&mut stream, head.as_bytes(), payload.as_deref(), &self.body, body_len, req.head);
            if sent.is_err() || !keep {
                return recycle;
            }
        }
    }
}

struct Request {
    path: String,
    query: String,
    close: bool,
    head: bool,
}

/// Reads one request head (and discards its body). None at end of stream, timeout or error.
/// `buf` keeps what arrived after the request: a client may pipeline the next ones behind it.
fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>, me: &super::scoreboard::Slot) -> Option<Request> {
    let mut chunk = [0u8; 4096];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(buf) {
            Ok(httparse::Status::Complete(n)) => {
                let target = req.path.unwrap_or("/");
                let (path, query) = target.split_once('?').unwrap_or((target, ""));
                let mut close = req.version == Some(0);
                let mut length = 0usize;
                for h in req.headers.iter() {
                    if h.name.eq_ignore_ascii_case("connection") {
                        let v = String::from_utf8_lossy(h.value).to_ascii_lowercase();
                        close = v.contains("close") || (req.version == Some(0) && !v.contains("keep-alive"));
                    } else if h.name.eq_ignore_ascii_case("content-length") {
                        length = std::str::from_utf8(h.value).ok()?.trim().parse().ok()?;
                    }
                }
                let request = Request {
                    path: path.to_string(),
                    query: query.to_string(),
                    close,
                    head: req.method == Some("HEAD"),
                };
                // Discard the body: what arrived with the head, then the rest.
                let in_buf = length.min(buf.len() - n);
                buf.drain(..n + in_buf);
                let mut left = length - in_buf;
                while left > 0 {
                    let got = stream.read(&mut chunk[..left.min(4096)]).ok()?;
                    if got == 0 {
                        return None;
                    }
                    left -= got;
                }
                return Some(request);
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => {}
            _ => {
                let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                return None;
            }
        }
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        if buf.is_empty() {
            me.set_state(State::Busy);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn write_response(
    stream: &mut TcpStream,
    head: &[u8],
    payload: Option<&[u8]>,
    filler: &[u8],
    filler_len: usize,
    head_only: bool,
) -> io::Result<()> {
    if head_only {
        return stream.write_all(head);
    }
    if let Some(p) = payload {
        let mut all = Vec::with_capacity(head.len() + p.len());
        all.extend_from_slice(head);
        all.extend_from_slice(p);
        return stream.write_all(&all);
    }
    // One write for small responses: a head and body in separate writes cost a segment more.
    if filler_len <= filler.len() {
        let mut all = Vec::with_capacity(head.len() + filler_len);
        all.extend_from_slice(head);
        all.extend_from_slice(&filler[..filler_len]);
        return stream.write_all(&all);
    }
    stream.write_all(head)?;
    let mut left = filler_len;
    while left > 0 {
        let n = left.min(filler.len());
        stream.write_all(&filler[..n])?;
        left -= n;
    }
    Ok(())
}
