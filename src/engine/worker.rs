//! One engine thread: an epoll loop over its connections, each a small state machine
//! (connect -> send -> receive -> next request on the same or a new connection).

use std::io::{self, ErrorKind};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

use super::record::{ConnEvent, ErrorClass, Record};
use super::response::{ParseError, Progress, ResponseReader};
use super::transport::{TlsSettings, Transport};
use super::{Plan, Shared, Sink, Stop};

/// How often deadlines are checked; also the longest a stop request waits.
const TICK: Duration = Duration::from_millis(10);
const SCRATCH_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No request in flight (before the first, or after the run's last).
    Idle,
    /// Waiting for a start slot (immediate retry after a failure).
    Queued,
    Connecting,
    Sending,
    Receiving,
}

struct Conn {
    sock: Option<Transport>,
    /// Bumped whenever the socket changes, so a stale event cannot reach a new socket.
    generation: u32,
    phase: Phase,
    start: Instant,
    connect_start: Instant,
    connect_us: Option<u64>,
    first_byte_us: u64,
    deadline: Instant,
    written: usize,
    /// Requests completed on the current socket.
    served: u32,
    /// This request already retried once after the server closed an idle connection.
    retried: bool,
    /// Its first request is reserved (counted before the run), so every connection sends at
    /// least one whatever the threads' start order: -n is never smaller than -c.
    reserved: bool,
    reader: ResponseReader,
}

impl Conn {
    /// The record of the request in flight, ending at `now`.
    fn record(&self, now: Instant, error: Option<ErrorClass>) -> Record {
        Record {
            start: self.start,
            connect_us: self.connect_us,
            first_byte_us: self.first_byte_us,
            total_us: micros(now - self.start).max(1),
            status: self.reader.status,
            header_bytes: self.reader.header_bytes,
            body_bytes: self.reader.body_bytes,
            error,
            length_differs: false,
        }
    }
}

pub struct Done<S> {
    pub sink: S,
    pub server: Option<String>,
    /// Requests still in flight when the run ended (abandoned, not recorded).
    pub in_flight: u64,
}

pub struct Worker<S> {
    poll: Poll,
    conns: Vec<Conn>,
    queue: Vec<usize>,
    /// Connections not yet Idle; the thread ends when none is left.
    active: usize,
    addr: SocketAddr,
    tls: Option<TlsSettings>,
    request: Arc<[u8]>,
    keepalive: bool,
    timeout: Duration,
    connect_timeout: Duration,
    stop: Stop,
    deadline: Option<Instant>,
    shared: Arc<Shared>,
    sink: S,
    /// Capture the Server header from the first response (thread 0 only).
    want_server: bool,
    server: Option<String>,
    scratch: Box<[u8]>,
}

impl<S: Sink> Worker<S> {
    pub fn new(
        plan: &Plan,
        connections: usize,
        deadline: Option<Instant>,
        shared: Arc<Shared>,
        sink: S,
        want_server: bool,
    ) -> anyhow::Result<Self> {
        let now = Instant::now();
        let conns = (0..connections)
            .map(|_| Conn {
                sock: None,
                generation: 0,
                phase: Phase::Idle,
                start: now,
                connect_start: now,
                connect_us: None,
                first_byte_us: 0,
                deadline: now,
                written: 0,
                served: 0,
                retried: false,
                reserved: true,
                reader: ResponseReader::new(plan.target.head_request),
            })
            .collect();
        Ok(Worker {
            poll: Poll::new()?,
            conns,
            queue: (0..connections).collect(),
            active: connections,
            addr: plan.target.addr,
            tls: plan.target.tls.clone(),
            request: plan.target.request.clone(),
            keepalive: plan.keepalive,
            timeout: plan.timeout,
            connect_timeout: plan.connect_timeout.min(plan.timeout),
            stop: plan.stop,
            deadline,
            shared,
            sink,
            want_server,
            server: None,
            scratch: vec![0u8; SCRATCH_BYTES].into_boxed_slice(),
        })
    }

    pub fn run(mut self, start: &super::Gate) -> anyhow::Result<Done<S>> {
        if !start.wait() {
            return Ok(Done { sink: self.sink, server: None, in_flight: 0 });
        }
        let mut events = Events::with_capacity(1024);
        let mut next_tick = Instant::now() + TICK;
        loop {
            while let Some(i) = self.queue.pop() {
                self.start_request(i, Instant::now());
            }
            if self.shared.interrupted() {
                break;
            }
            let now = Instant::now();
            if self.deadline.is_some_and(|d| now >= d) {
                break;
            }
            if self.active == 0 {
                break;
            }
            let wait = if self.queue.is_empty() { next_tick.saturating_duration_since(now) } else { Duration::ZERO };
            if let Err(e) = self.poll.poll(&mut events, Some(wait))
                && e.kind() != ErrorKind::Interrupted
            {
                return Err(e.into());
            }
            for ev in events.iter() {
                let token = ev.token().0;
                let (idx, generation) = (token & 0xffff_ffff, (token >> 32) as u32);
                if self.conns[idx].generation != generation {
                    continue;
                }
                let closing = ev.is_read_closed() || ev.is_error();
                self.on_ready(idx, ev.is_readable() || closing, ev.is_writable() || closing, closing);
            }
            let now = Instant::now();
            if now >= next_tick {
                next_tick = now + TICK;
                self.expire(now);
            }
        }
        let in_flight = self
            .conns
            .iter()
            .filter(|c| matches!(c.phase, Phase::Connecting | Phase::Sending | Phase::Receiving))
            .count() as u64;
        Ok(Done { sink: self.sink, server: self.server, in_flight })
    }

    /// Begins the next request on connection `i` at `now`, unless the run is over.
    fn start_request(&mut self, i: usize, now: Instant) {
        let over = match self.stop {
            Stop::Requests(_) if std::mem::take(&mut self.conns[i].reserved) => false,
            Stop::Requests(n) => self.shared.issued.fetch_add(1, Ordering::Relaxed) >= n,
            Stop::Duration(_) => self.deadline.is_some_and(|d| now >= d),
        };
        if over || self.shared.interrupted() {
            self.close(i);
            self.conns[i].phase = Phase::Idle;
            self.active -= 1;
            return;
        }
        let c = &mut self.conns[i];
        c.start = now;
        c.deadline = now + self.timeout;
        c.connect_us = None;
        c.first_byte_us = 0;
        c.retried = false;
        c.reader.reset();
        c.reader.capture_server = self.want_server && self.server.is_none();
        if c.sock.is_some() { self.send(i) } else { self.connect(i, now) }
    }

    /// Opens a connection. Sockets are registered once, edge-triggered, for both directions:
    /// an edge comes only on a change (data, FIN, space after a full buffer), so the interest
    /// never needs changing and close() drops the registration with the descriptor.
    fn connect(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        c.connect_start = now;
        c.deadline = c.deadline.min(now + self.connect_timeout);
        c.served = 0;
        let mut sock = match TcpStream::connect(self.addr) {
            Ok(s) => s,
            Err(e) => return self.fail(i, ErrorClass::from_io(&e)),
        };
        let token = Token(i | ((c.generation as usize) << 32));
        if let Err(e) = self.poll.registry().register(&mut sock, token, Interest::READABLE | Interest::WRITABLE) {
            return self.fail(i, ErrorClass::from_io(&e));
        }
        match Transport::new(sock, self.tls.as_ref()) {
            Ok(t) => c.sock = Some(t),
            Err(_) => return self.fail(i, ErrorClass::Tls),
        }
        c.phase = Phase::Connecting;
        // On loopback the handshake has usually finished inside connect(): write at once
        // rather than wait a loop turn for the writable edge. A plain write tells whether the
        // connection is up; TLS waits for the edge (its first write is the handshake).
        if c.sock.as_ref().is_some_and(Transport::is_plain) {
            self.send(i);
        }
    }

    /// `readable`/`writable`: what the event reported; `closing`: the peer's FIN (or an
    /// error) is queued behind any data, so read to the end.
    fn on_ready(&mut self, i: usize, readable: bool, writable: bool, closing: bool) {
        match self.conns[i].phase {
            Phase::Connecting if writable => self.finish_connect(i),
            Phase::Sending if writable => self.send(i),
            Phase::Receiving if readable => self.receive(i, closing),
            _ => {}
        }
    }

    /// The writable edge of a connection in progress.
    fn finish_connect(&mut self, i: usize) {
        let Some(sock) = self.conns[i].sock.as_ref() else { return };
        if sock.is_plain() {
            // The write itself reports a refused or reset handshake.
            return self.send(i);
        }
        let s = sock.socket();
        match s.take_error() {
            Ok(Some(e)) | Err(e) => return self.fail(i, ErrorClass::from_io(&e)),
            Ok(None) => {}
        }
        match s.peer_addr() {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::NotConnected || e.raw_os_error() == Some(libc::EINPROGRESS) => return,
            Err(e) => return self.fail(i, ErrorClass::from_io(&e)),
        }
        self.connected(i);
        self.send(i);
    }

    fn connected(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.phase = Phase::Sending;
        c.connect_us = Some(micros(c.connect_start.elapsed()));
        c.deadline = c.start + self.timeout;
        if let Some(sock) = &c.sock {
            let _ = sock.socket().set_nodelay(true);
        }
        self.sink.event(ConnEvent::Opened);
    }

    /// Writes (the rest of) the request; moves to Receiving when it is all out. A write that
    /// would block resumes on the next writable edge.
    fn send(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if c.phase != Phase::Connecting {
            c.phase = Phase::Sending;
        }
        loop {
            let c = &mut self.conns[i];
            let Some(sock) = c.sock.as_mut() else { return };
            if c.written == self.request.len() {
                match sock.flush() {
                    Ok(true) => break,
                    Ok(false) => return,
                    Err(e) => return self.io_failure(i, &e),
                }
            }
            match sock.write(&self.request[c.written..]) {
                Ok(n) => {
                    c.written += n;
                    if c.phase == Phase::Connecting {
                        self.connected(i);
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if c.phase == Phase::Connecting && e.raw_os_error() == Some(libc::ENOTCONN) => return,
                Err(e) => return self.io_failure(i, &e),
            }
        }
        let c = &mut self.conns[i];
        c.written = 0;
        c.phase = Phase::Receiving;
    }

    fn receive(&mut self, i: usize, closing: bool) {
        loop {
            let c = &mut self.conns[i];
            let Some(sock) = c.sock.as_mut() else { return };
            let n = match sock.read(&mut self.scratch) {
                Ok(0) => return self.on_eof(i),
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => return self.on_eof(i),
                Err(e) => return self.io_failure(i, &e),
            };
            // Edge-triggered: a short read empties the socket (new data brings a new event),
            // unless the peer's FIN is queued too, which only a read returning 0 consumes.
            let drained = !closing && n < self.scratch.len() && sock.short_read_drains();
            // One clock read serves the first byte, the end and the next request's start.
            let now = Instant::now();
            if c.first_byte_us == 0 {
                c.first_byte_us = micros(now - c.start).max(1);
            }
            match c.reader.feed(&self.scratch[..n]) {
                Ok(Progress::More) => {}
                Ok(Progress::Done { consumed }) => return self.complete(i, consumed == n, now),
                Err(e) => return self.fail(i, parse_error_class(e)),
            }
            if drained {
                return;
            }
        }
    }

    fn on_eof(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if c.reader.eof().is_ok() {
            return self.complete(i, false, Instant::now());
        }
        if !c.reader.started() {
            return self.server_closed(i, ErrorClass::ClosedEarly);
        }
        self.fail(i, ErrorClass::ClosedEarly)
    }

    /// A socket error while sending or receiving.
    fn io_failure(&mut self, i: usize, e: &io::Error) {
        let class = ErrorClass::from_io(e);
        if class == ErrorClass::Reset && !self.conns[i].reader.started() {
            return self.server_closed(i, class);
        }
        self.fail(i, class)
    }

    /// The server closed the connection before answering. On a connection that already
    /// served requests this is the server ending keep-alive: retry once on a new connection.
    fn server_closed(&mut self, i: usize, class: ErrorClass) {
        let c = &mut self.conns[i];
        if c.served > 0 && !c.retried {
            self.close(i);
            self.sink.event(ConnEvent::ServerClosedIdle);
            let c = &mut self.conns[i];
            c.retried = true;
            c.first_byte_us = 0;
            c.written = 0;
            c.reader.reset();
            c.deadline = c.start + self.timeout;
            return self.connect(i, Instant::now());
        }
        self.fail(i, class)
    }

    /// The response is complete. `reusable` is false when the server sent bytes beyond it.
    fn complete(&mut self, i: usize, reusable: bool, now: Instant) {
        let c = &mut self.conns[i];
        let mut rec = c.record(now, None);
        rec.length_differs = self.shared.length_differs(rec.body_bytes);
        if c.reader.capture_server {
            self.server = c.reader.server.take().or_else(|| Some(String::new()));
        }
        c.served += 1;
        let keep = self.keepalive && reusable && c.reader.keep_alive;
        self.sink.record(&rec);
        if !keep {
            self.close(i);
        }
        self.start_request(i, now);
    }

    fn fail(&mut self, i: usize, class: ErrorClass) {
        let rec = self.conns[i].record(Instant::now(), Some(class));
        self.sink.record(&rec);
        self.close(i);
        // Start the next request from the loop, not from here: a server that refuses at once
        // would otherwise recurse without ever polling.
        self.conns[i].phase = Phase::Queued;
        self.queue.push(i);
    }

    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        // Closing the descriptor removes it from the epoll set.
        c.sock = None;
        c.generation = c.generation.wrapping_add(1);
        c.written = 0;
        c.served = 0;
    }

    /// Fails every request past its deadline.
    fn expire(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            let active = matches!(c.phase, Phase::Connecting | Phase::Sending | Phase::Receiving);
            if active && now >= c.deadline {
                let class = if c.phase == Phase::Connecting { ErrorClass::ConnectTimeout } else { ErrorClass::Timeout };
                self.fail(i, class);
            }
        }
    }
}

fn parse_error_class(e: ParseError) -> ErrorClass {
    match e {
        ParseError::Truncated => ErrorClass::ClosedEarly,
        ParseError::BadHead | ParseError::HeadTooLarge | ParseError::BadFraming => ErrorClass::Malformed,
    }
}

#[inline]
fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}
