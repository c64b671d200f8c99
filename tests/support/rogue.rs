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
