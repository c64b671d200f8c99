//! A test server that misbehaves on purpose: each accepted connection is handed to a handler
//! that writes whatever bytes, pauses or resets the test needs.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

pub struct Rogue {
    pub port: u16,
    local: std::net::SocketAddr,
    /// Connections accepted so far.
    pub accepted: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    accept_thread: Option<JoinHandle<()>>,
}

impl Rogue {
    /// Serves each connection with `handler(stream, connection_index)` on its own thread.
    pub fn start<F>(handler: F) -> Rogue
    where
        F: Fn(TcpStream, u64) + Send + Sync + 'static,
    {
        Self::start_on("127.0.0.1:0", handler)
    }

    /// As `start`, on another loopback address (e.g. "[::1]:0").
    pub fn start_on<F>(addr: &str, handler: F) -> Rogue
    where
        F: Fn(TcpStream, u64) + Send + Sync + 'static,
    {
        let listener = TcpListener::bind(addr).unwrap();
        let local = listener.local_addr().unwrap();
        let port = local.port();
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicU64::new(0));
        let handler = Arc::new(handler);
        let (stop2, accepted2) = (stop.clone(), accepted.clone());
        let accept_thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                // Handlers block on reads; a limit makes sure their threads end.
                stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                stream.set_nodelay(true).unwrap();
                let index = accepted2.fetch_add(1, Ordering::SeqCst);
                let h = handler.clone();
                std::thread::spawn(move || h(stream, index));
            }
        });
        Rogue { port, local, accepted, stop, accept_thread: Some(accept_thread) }
    }

    pub fn url(&self, path: &str) -> String {
        match self.local {
            std::net::SocketAddr::V4(a) => format!("http://{}:{}{path}", a.ip(), a.port()),
            std::net::SocketAddr::V6(a) => format!("http://[{}]:{}{path}", a.ip(), a.port()),
        }
    }
}

impl Drop for Rogue {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.local);
        if let Some(t) = self.accept_thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads one request head (and no body); None when the client closed the connection.
pub fn read_request(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1024];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.truncate(end + 4);
            return Some(buf);
        }
        match stream.read(&mut byte) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&byte[..n]),
        }
    }
}

/// A response with a Content-Length body.
pub fn response(status: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Answers every request on the connection with `respond(request_number_on_connection)`,
/// until the client closes or `limit` requests were answered.
pub fn serve_each(stream: &mut TcpStream, limit: Option<u64>, respond: impl Fn(u64) -> Vec<u8>) {
    let mut served = 0;
    while limit.is_none_or(|l| served < l) {
        if read_request(stream).is_none() {
            return;
        }
        if stream.write_all(&respond(served)).is_err() {
            return;
        }
        served += 1;
    }
}

/// Closes with a TCP reset instead of a FIN.
pub fn reset(stream: TcpStream) {
    let sock = socket2::SockRef::from(&stream);
    let _ = sock.set_linger(Some(Duration::ZERO));
    drop(stream);
}

/// HTTP/2 for a hostile test server: the client preface is read, then frames one at a time.
pub mod h2 {
    use std::io::{Read, Write};
    use std::net::TcpStream;

    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;
    pub const END_STREAM: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    /// HPACK: ":status: 200" from the static table.
    pub const STATUS_200: u8 = 0x88;

    /// Reads the client preface; false when the client went away.
    pub fn read_preface(s: &mut TcpStream) -> bool {
        let mut p = [0u8; 24];
        s.read_exact(&mut p).is_ok() && &p == b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    }

    /// The next frame: (kind, flags, stream, payload); None when the client went away.
    pub fn read_frame(s: &mut TcpStream) -> Option<(u8, u8, u32, Vec<u8>)> {
        let mut h = [0u8; 9];
        s.read_exact(&mut h).ok()?;
        let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
        let mut payload = vec![0u8; len];
        s.read_exact(&mut payload).ok()?;
        Some((h[3], h[4], u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff, payload))
    }

    /// The stream id of the next request (a HEADERS frame); other frames are skipped.
    pub fn next_request(s: &mut TcpStream) -> Option<u32> {
        loop {
            let (kind, _, stream, _) = read_frame(s)?;
            if kind == HEADERS {
                return Some(stream);
            }
        }
    }

    pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let l = (payload.len() as u32).to_be_bytes();
        let mut out = vec![l[1], l[2], l[3], kind, flags];
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    /// An empty SETTINGS: the server's half of the preface.
    pub fn settings() -> Vec<u8> {
        frame(SETTINGS, 0, 0, &[])
    }

    pub fn send(s: &mut TcpStream, bytes: &[u8]) -> bool {
        s.write_all(bytes).is_ok()
    }
}
