//! HTTP/2 in the load engine (`--h2`): one epoll loop per thread, as for HTTP/1.1, over its
//! share of the connections; each connection carries up to `--streams` requests at once
//! (h2load's -m), each stream slot a closed-loop client that sends its next request when its
//! last one ends. The same records, error classes and sinks as HTTP/1.1; TLS with ALPN "h2"
//! or cleartext with prior knowledge (h2c).
//!
//! Hot path: a request is its template's prepared frames copied with the stream id written
//! in (frame.rs); every request and control frame a read produced goes out in one write at
//! the end of that read; response bodies are counted, never stored.
//!
//! Wake-ups are coalesced as over HTTP/1.1 (coalesce.rs) when the thread has enough streams
//! on h2c; a read's responses all count to its newest bytes' receive timestamp.
//!
//! Runs the closed loop only: the open loop, ramps, scenarios, cookies and throttling are
//! refused for --h2 when the plan is checked (bench/spec.rs).

pub mod frame;
pub mod hpack;
pub mod session;

use std::collections::VecDeque;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll};

use self::session::{Event, Session};
use super::coalesce::{self, Coalescer};
pub use super::plan::Http2;
use super::plan::{Gate, Order, Plan, Shared, Stop};
use super::readiness;
use super::record::{ConnEvent, ErrorClass, Record};
use super::response::MAX_INTERIM_HEADS;
use super::sink::Sink;
use super::transport::{RxStampBuf, TlsSettings, Transport};
use super::worker::{Done, Place};

const SCRATCH_BYTES: usize = 64 * 1024;
/// Reads one connection may take in one turn of the loop (see worker.rs).
const READS_PER_TURN: usize = 16;
/// The first pause before reconnecting after a refused connect; it doubles while they last.
const REFUSED_PAUSE: Duration = Duration::from_millis(1);
/// Client stream ids are odd and below 2^31: a connection near the end opens a new one.
const LAST_STREAM_ID: u32 = 0x7fff_fff0;
/// Bytes a connection may have waiting to be written and still start new streams: a peer
/// that does not read gets no more requests queued for it.
const OUT_HIGH: usize = 256 * 1024;
/// Bytes waiting to be written past which the peer floods: only its own frames (PING and
/// SETTINGS acks, resets in answer to its errors) can take a connection there, each costing
/// it no more than it costs webtune, and it reads none. Before, a PING flood that never read
/// queued 475 MB of acks in a second.
const OUT_MAX: usize = OUT_HIGH + 1024 * 1024;
/// Bytes already written that `flush` compacts away when the rest must wait (a peer reading
/// slowly must not grow the buffer by what it did read).
const OUT_COMPACT: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SlotPhase {
    /// No request: the run is over for this client.
    Idle,
    /// A request is started (its clock runs) and waits for a connection, a free stream or
    /// send window.
    Waiting,
    /// Sent on `stream`, not yet answered.
    InFlight,
}

/// One client of a connection: at most one stream at a time.
struct Slot {
    phase: SlotPhase,
    stream: u32,
    start: Instant,
    deadline: Instant,
    connect_us: Option<u64>,
    first_byte_us: u64,
    status: u16,
    header_bytes: u64,
    body_bytes: u64,
    template: u16,
    interim: u32,
    /// Body bytes received since this stream's last WINDOW_UPDATE.
    unacked: u64,
    /// Already retried once after the server let it go unprocessed (GOAWAY, idle close).
    retried: bool,
    /// The stream's send window less the connection's initial one: its WINDOW_UPDATEs less
    /// its body (RFC 9113 §6.9: past 2^31-1 is the server's error).
    window: i64,
    /// Its first request is reserved (counted before the run): -n is never below -c.
    reserved: bool,
}

impl Slot {
    fn record(&self, now: Instant, error: Option<ErrorClass>) -> Record {
        Record {
            start: self.start,
            queued_us: 0,
            template: self.template,
            stage: 0,
            slow: false,
            connect_us: self.connect_us,
            first_byte_us: self.first_byte_us,
            total_us: micros(now.saturating_duration_since(self.start)).max(1),
            status: if error.is_some() { 0 } else { self.status },
            header_bytes: self.header_bytes,
            body_bytes: self.body_bytes,
            error,
            length_differs: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Closed,
    Connecting,
    Open,
}

struct Conn {
    sock: Option<Transport>,
    /// Bumped whenever the socket changes, so a stale event cannot reach a new socket.
    generation: u32,
    state: State,
    session: Session,
    /// Bytes of `session.out` already written.
    written: usize,
    connect_start: Instant,
    /// After a refused connect: no new one before then.
    reconnect_at: Option<Instant>,
    refused_in_a_row: u8,
    /// Responses completed on this socket.
    served: u32,
    /// Streams in flight.
    active: u32,
    next_stream: u32,
    slots: Vec<Slot>,
}

/// Why a TLS server failed an HTTP/2 run: ALPN chose HTTP/1.1 or nothing.
const NO_H2: &str = "the server did not agree to HTTP/2 (h2) by ALPN: it serves HTTP/1.1 only here";

pub(crate) struct Worker<S> {
    poll: Poll,
    conns: Vec<Conn>,
    /// Connections to look at again next turn, with their generation then: a read budget
    /// spent, or a connection to reopen after a failure.
    queue: VecDeque<(usize, u32)>,
    addr: SocketAddr,
    tls: Option<TlsSettings>,
    /// Why the first TLS failure of this thread happened (transport::tls_failure).
    tls_failure: Option<String>,
    /// A server answered with HTTP/1.x bytes where frames were due (h2c to an HTTP/1.1 server).
    answered_http1: bool,
    /// Each template's request in the forms a connection sends it (frame::Prepared).
    requests: Vec<frame::Prepared>,
    order: Order,
    cursor: usize,
    rng: fastrand::Rng,
    streams: u32,
    timeout: Duration,
    connect_timeout: Duration,
    /// How often deadlines are checked (worker.rs's `deadline_tick`).
    tick: Duration,
    stop: Stop,
    deadline: Option<Instant>,
    /// Slots not Idle.
    running: usize,
    shared: Arc<Shared>,
    sink: S,
    want_server: bool,
    server: Option<String>,
    scratch: Box<[u8]>,
    /// h2c closed loop with enough streams: wake-ups coalesced as for HTTP/1.1
    /// (coalesce.rs), responses timed by their receive timestamps.
    coalescer: Option<Coalescer>,
    stamps: RxStampBuf,
    events: Vec<Event>,
}

impl<S: Sink> Worker<S> {
    pub(crate) fn new(
        plan: &Plan,
        http2: Http2,
        place: Place,
        deadline: Option<Instant>,
        shared: Arc<Shared>,
        sink: S,
    ) -> anyhow::Result<Self> {
        let now = Instant::now();
        let slot = |k: usize| Slot {
            phase: SlotPhase::Idle,
            stream: 0,
            start: now,
            deadline: now,
            connect_us: None,
            first_byte_us: 0,
            status: 0,
            header_bytes: 0,
            body_bytes: 0,
            template: 0,
            interim: 0,
            unacked: 0,
            retried: false,
            window: 0,
            reserved: k == 0,
        };
        let conns = (0..place.conns)
            .map(|_| Conn {
                sock: None,
                generation: 0,
                state: State::Closed,
                session: Session::default(),
                written: 0,
                connect_start: now,
                reconnect_at: None,
                refused_in_a_row: 0,
                served: 0,
                active: 0,
                next_stream: 1,
                slots: (0..http2.streams as usize).map(slot).collect(),
            })
            .collect();
        let templates = &plan.endpoint.templates;
        let seed = plan.seed ^ (place.index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Ok(Worker {
            poll: Poll::new()?,
            conns,
            queue: VecDeque::new(),
            addr: plan.endpoint.addr,
            tls: plan.endpoint.tls.clone(),
            tls_failure: None,
            answered_http1: false,
            requests: frame::prepare(&templates.iter().map(|t| &*t.h2).collect::<Vec<_>>()),
            order: plan.endpoint.order.clone(),
            cursor: place.index * templates.len() / plan.threads.max(1),
            rng: fastrand::Rng::with_seed(seed.wrapping_add(1)),
            streams: http2.streams,
            timeout: plan.timeout,
            connect_timeout: plan.connect_timeout.min(plan.timeout),
            tick: super::worker::deadline_tick(plan.timeout.min(plan.connect_timeout)),
            stop: plan.stop,
            deadline,
            running: 0,
            shared,
            sink,
            want_server: place.index == 0,
            server: None,
            scratch: vec![0u8; SCRATCH_BYTES].into_boxed_slice(),
            coalescer: plan.coalesces(place.conns).then(|| Coalescer::new(now)),
            stamps: RxStampBuf::default(),
            events: Vec::with_capacity(64),
        })
    }

    pub(crate) fn run(mut self, start: &Gate) -> anyhow::Result<Done<S>> {
        if !start.wait() {
            return Ok(Done {
                sink: self.sink,
                server: None,
                tls_failure: self.tls_failure,
                answered_http1: self.answered_http1,
                in_flight: 0,
                unsent: 0,
                scheduled: 0,
                batched: None,
            });
        }
        let mut events = Events::with_capacity(1024);
        let mut now = Instant::now();
        for ci in 0..self.conns.len() {
            for si in 0..self.conns[ci].slots.len() {
                self.issue(ci, si, now);
            }
            self.fill(ci, now);
        }
        let mut next_tick = now + self.tick;
        loop {
            for _ in 0..self.queue.len() {
                let Some((ci, generation)) = self.queue.pop_front() else { break };
                if self.conns[ci].generation == generation {
                    self.resume(ci, now);
                }
            }
            let mut wake = next_tick;
            for ci in 0..self.conns.len() {
                match self.conns[ci].reconnect_at {
                    Some(at) if at <= now => {
                        self.conns[ci].reconnect_at = None;
                        self.fill(ci, now);
                    }
                    Some(at) => wake = wake.min(at),
                    None => {}
                }
            }
            if self.shared.interrupted() || self.finished(now) {
                break;
            }
            let wait = if self.queue.is_empty() { wake.saturating_duration_since(now) } else { Duration::ZERO };
            readiness::wait(&mut self.poll, &mut events, self.coalescer.as_mut(), now, self.running, wait)?;
            for ev in events.iter() {
                let (ci, generation) = readiness::conn_of(ev.token());
                if self.conns[ci].generation != generation {
                    continue;
                }
                let closing = ev.is_read_closed() || ev.is_error();
                self.on_ready(ci, ev.is_readable() || closing, ev.is_writable() || closing);
            }
            now = Instant::now();
            if now >= next_tick {
                next_tick = now + self.tick;
                self.expire(now);
            }
        }
        let in_flight = self
            .conns
            .iter()
            .flat_map(|c| &c.slots)
            .filter(|s| matches!(s.phase, SlotPhase::Waiting | SlotPhase::InFlight))
            .count() as u64;
        Ok(Done {
            sink: self.sink,
            server: self.server,
            tls_failure: self.tls_failure,
            answered_http1: self.answered_http1,
            in_flight,
            unsent: 0,
            scheduled: 0,
            batched: self.coalescer.map(Coalescer::finish),
        })
    }

    fn finished(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d) || self.running == 0
    }

    /// Starts slot `si`'s next request (it waits for a stream until `fill`), or retires the
    /// slot when the run has no more.
    fn issue(&mut self, ci: usize, si: usize, now: Instant) {
        let over = match self.stop {
            Stop::Requests(_) if std::mem::take(&mut self.conns[ci].slots[si].reserved) => false,
            Stop::Requests(n) => self.shared.issued.fetch_add(1, Ordering::Relaxed) >= n,
            Stop::Duration(_) => self.deadline.is_some_and(|d| now >= d),
        };
        let was_idle = self.conns[ci].slots[si].phase == SlotPhase::Idle;
        if over || self.shared.interrupted() {
            if !was_idle {
                self.running -= 1;
            }
            self.conns[ci].slots[si].phase = SlotPhase::Idle;
            return;
        }
        if was_idle {
            self.running += 1;
        }
        let template = match &self.order {
            _ if self.requests.len() == 1 => 0,
            Order::Random => self.rng.usize(..self.requests.len()),
            Order::Weighted(w) => w.pick(self.rng.f64()),
            Order::Sequential | Order::Scenario => {
                let t = self.cursor;
                self.cursor = (t + 1) % self.requests.len();
                t
            }
        };
        let s = &mut self.conns[ci].slots[si];
        s.phase = SlotPhase::Waiting;
        s.stream = 0;
        s.start = now;
        s.deadline = now + self.timeout;
        s.connect_us = None;
        s.first_byte_us = 0;
        s.status = 0;
        s.header_bytes = 0;
        s.body_bytes = 0;
        s.template = template as u16;
        s.interim = 0;
        s.unacked = 0;
        s.retried = false;
    }

    /// Puts waiting requests on the wire: opens the connection when it has none, else starts
    /// as many streams as the server allows (none after its GOAWAY: a new connection then,
    /// once the old one's streams are done).
    fn fill(&mut self, ci: usize, now: Instant) {
        let c = &mut self.conns[ci];
        let waiting = c.slots.iter().any(|s| s.phase == SlotPhase::Waiting);
        match c.state {
            State::Closed if waiting && c.reconnect_at.is_none() => return self.connect(ci, now),
            State::Closed | State::Connecting => return,
            State::Open => {}
        }
        if c.session.draining() || c.next_stream > LAST_STREAM_ID {
            if c.active == 0 {
                self.close(ci);
                return self.fill(ci, now);
            }
            return self.flush(ci);
        }
        // Until the server's SETTINGS say how many streams it allows, one (a server allowing
        // fewer than asked would refuse the excess; one that waits for a request before its
        // SETTINGS still gets one).
        let limit = if c.session.settings_seen { c.session.max_streams.min(self.streams) } else { 1 };
        for s in c.slots.iter_mut() {
            if c.active >= limit || c.session.out.len() - c.written > OUT_HIGH {
                break;
            }
            if s.phase != SlotPhase::Waiting {
                continue;
            }
            let request = &self.requests[s.template as usize];
            if request.body as i64 > c.session.send_window.min(c.session.stream_window) {
                continue;
            }
            c.session.request(request, c.next_stream);
            s.window = -(request.body as i64);
            s.stream = c.next_stream;
            s.phase = SlotPhase::InFlight;
            c.next_stream += 2;
            c.active += 1;
        }
        self.flush(ci);
    }

    /// Writes what the session has queued; the rest goes on the next writable edge.
    fn flush(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        let Some(sock) = c.sock.as_mut() else { return };
        while c.written < c.session.out.len() {
            match sock.write(&c.session.out[c.written..]) {
                Ok(n) => c.written += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if c.written >= OUT_COMPACT {
                        c.session.out.drain(..c.written);
                        c.written = 0;
                    }
                    return;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return self.failed(ci, ErrorClass::from_io(&e), Instant::now()),
            }
        }
        match sock.flush() {
            Ok(true) => {
                c.session.out.clear();
                c.written = 0;
            }
            Ok(false) => {}
            Err(e) => self.failed(ci, ErrorClass::from_io(&e), Instant::now()),
        }
    }

    /// Opens connection `ci`; its preface and requests are written once it is up.
    fn connect(&mut self, ci: usize, now: Instant) {
        let c = &mut self.conns[ci];
        c.connect_start = now;
        c.served = 0;
        c.active = 0;
        c.next_stream = 1;
        c.written = 0;
        c.session = Session::default();
        c.session.capture_server = self.want_server && self.server.is_none();
        c.state = State::Connecting;
        let mut sock = match super::transport::connect(self.addr) {
            Ok(s) => s,
            Err(e) => return self.failed(ci, ErrorClass::from_io(&e), now),
        };
        let token = readiness::token(ci, c.generation);
        if let Err(e) = self.poll.registry().register(&mut sock, token, Interest::READABLE | Interest::WRITABLE) {
            return self.failed(ci, ErrorClass::from_io(&e), now);
        }
        match Transport::new(sock, self.tls.as_ref()) {
            Ok(t) => c.sock = Some(t),
            Err(e) => {
                self.tls_failure.get_or_insert_with(|| super::transport::tls_failure(&e));
                return self.failed(ci, ErrorClass::Tls, now);
            }
        }
        if self.coalescer.is_some() && !c.sock.as_ref().is_some_and(Transport::enable_rx_stamps) {
            // Without arrival times a pause would show in every latency.
            self.coalescer = None;
        }
    }

    fn on_ready(&mut self, ci: usize, readable: bool, writable: bool) {
        match self.conns[ci].state {
            State::Connecting if writable => self.finish_connect(ci),
            State::Open => {
                if readable {
                    self.receive(ci);
                }
                if writable && self.conns[ci].state == State::Open {
                    self.flush(ci);
                    // Streams held back while too much waited to be written may start now.
                    let c = &self.conns[ci];
                    if c.state == State::Open
                        && c.session.out.is_empty()
                        && c.slots.iter().any(|s| s.phase == SlotPhase::Waiting)
                    {
                        self.fill(ci, Instant::now());
                    }
                }
            }
            State::Connecting | State::Closed => {}
        }
    }

    /// The writable edge of a connection in progress: up, or failed.
    fn finish_connect(&mut self, ci: usize) {
        let now = Instant::now();
        let Some(sock) = self.conns[ci].sock.as_ref() else { return };
        let s = sock.socket();
        match s.take_error() {
            Ok(Some(e)) | Err(e) => return self.failed(ci, ErrorClass::from_io(&e), now),
            Ok(None) => {}
        }
        match s.peer_addr() {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::NotConnected || e.raw_os_error() == Some(libc::EINPROGRESS) => return,
            Err(e) => return self.failed(ci, ErrorClass::from_io(&e), now),
        }
        // Frames are small and many streams share the socket: Nagle would hold them.
        let _ = s.set_nodelay(true);
        let c = &mut self.conns[ci];
        c.state = State::Open;
        c.refused_in_a_row = 0;
        // One connect time per connection, as for HTTP/1.1: on the first request it carries.
        if let Some(slot) = c.slots.iter_mut().find(|s| s.phase == SlotPhase::Waiting) {
            slot.connect_us = Some(micros(now - c.connect_start));
        }
        self.sink.event(ConnEvent::Opened);
        self.fill(ci, now);
    }

    fn receive(&mut self, ci: usize) {
        let mut events = std::mem::take(&mut self.events);
        let mut now = Instant::now();
        let mut spent = true;
        for _ in 0..READS_PER_TURN {
            let c = &mut self.conns[ci];
            let Some(sock) = c.sock.as_mut() else { break };
            let read = if self.coalescer.as_ref().is_some_and(Coalescer::pausing) {
                sock.read_stamped(&mut self.scratch, &mut self.stamps)
            } else {
                sock.read(&mut self.scratch).map(|n| (n, None))
            };
            let (n, stamp) = match read {
                Ok((0, _)) => {
                    self.events = events;
                    return self.failed(ci, ErrorClass::ClosedEarly, Instant::now());
                }
                Ok(read) => read,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    spent = false;
                    if sock.refused_h2() {
                        self.events = events;
                        self.tls_failure.get_or_insert_with(|| NO_H2.into());
                        return self.failed(ci, ErrorClass::Tls, Instant::now());
                    }
                    break;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.events = events;
                    let class = match e.kind() {
                        ErrorKind::UnexpectedEof => ErrorClass::ClosedEarly,
                        _ => ErrorClass::from_io(&e),
                    };
                    if class == ErrorClass::Tls {
                        self.tls_failure.get_or_insert_with(|| super::transport::tls_failure(&e));
                    }
                    return self.failed(ci, class, Instant::now());
                }
            };
            now = Instant::now();
            // After a pause, the receive timestamp says when the bytes really came.
            let arrived = stamp.map(|s| coalesce::arrival(now, s));
            if sock.refused_h2() {
                self.events = events;
                self.tls_failure.get_or_insert_with(|| NO_H2.into());
                return self.failed(ci, ErrorClass::Tls, now);
            }
            let drained = n < self.scratch.len() && sock.short_read_drains();
            events.clear();
            if c.session.feed(&self.scratch[..n], &mut events).is_err() {
                // No frame starts so ("HTT" would be a 4.7 MB frame): an HTTP/1.x status line.
                self.answered_http1 |= self.scratch[..n].starts_with(b"HTTP/1.");
                let code = c.session.error_code;
                frame::put_goaway(&mut c.session.out, 0, code);
                self.flush(ci);
                self.events = events;
                return self.failed(ci, ErrorClass::Malformed, now);
            }
            for &ev in &events {
                self.on_event(ci, ev, now, arrived);
            }
            if self.conns[ci].state != State::Open {
                self.events = events;
                return;
            }
            let c = &self.conns[ci];
            if c.session.out.len() - c.written > OUT_MAX {
                self.events = events;
                return self.failed(ci, ErrorClass::Flood, now);
            }
            if drained {
                spent = false;
                break;
            }
        }
        self.events = events;
        if spent {
            let generation = self.conns[ci].generation;
            self.queue.push_back((ci, generation));
        }
        self.fill(ci, now);
    }

    /// One event of a read at `now`; `arrived`: when its bytes came, by their receive
    /// timestamp (collected after a pause).
    fn on_event(&mut self, ci: usize, ev: Event, now: Instant, arrived: Option<Instant>) {
        let c = &mut self.conns[ci];
        let slot_of =
            |c: &Conn, stream: u32| c.slots.iter().position(|s| s.phase == SlotPhase::InFlight && s.stream == stream);
        match ev {
            Event::Headers { stream, status, bytes, end } => {
                let Some(si) = slot_of(c, stream) else { return };
                let s = &mut c.slots[si];
                s.header_bytes += bytes;
                if s.first_byte_us == 0 {
                    let at = arrived.map_or(now, |a| a.max(s.start));
                    s.first_byte_us = micros(at.saturating_duration_since(s.start)).max(1);
                }
                if (status == 0 && s.status == 0) || ((100..200).contains(&status) && end) {
                    // Trailers before any final head (a response without a :status), or an
                    // interim head that ends the stream: malformed (RFC 9113 §8.1.1), never
                    // a success.
                    c.session.reset(stream, frame::code::PROTOCOL_ERROR);
                    return self.fail(ci, si, ErrorClass::Malformed, now);
                }
                if (100..200).contains(&status) && !end {
                    s.interim += 1;
                    if s.interim > MAX_INTERIM_HEADS {
                        c.session.cancel(stream);
                        return self.fail(ci, si, ErrorClass::Malformed, now);
                    }
                } else if status != 0 {
                    s.status = status;
                }
                if end {
                    self.complete(ci, si, now, arrived);
                }
            }
            Event::Data { stream, len, end } => {
                let Some(si) = slot_of(c, stream) else { return };
                let s = &mut c.slots[si];
                s.body_bytes += len;
                s.unacked += len;
                if s.unacked >= u64::from(frame::WINDOW / 2) && !end {
                    c.session.consumed(stream, s.unacked as u32);
                    s.unacked = 0;
                }
                if end {
                    self.complete(ci, si, now, arrived);
                }
            }
            Event::Reset { stream, .. } => {
                if let Some(si) = slot_of(c, stream) {
                    self.fail(ci, si, ErrorClass::StreamReset, now);
                }
            }
            // RFC 9113 §6.9: a zero increment is a stream error PROTOCOL_ERROR, a window past
            // 2^31-1 a FLOW_CONTROL_ERROR; the stream ends, the connection goes on. A closed
            // stream's update is ignored (it may have crossed the stream's end).
            Event::WindowUpdate { stream, increment } => {
                let Some(si) = slot_of(c, stream) else { return };
                let s = &mut c.slots[si];
                s.window += i64::from(increment);
                let error = if increment == 0 {
                    frame::code::PROTOCOL_ERROR
                } else if c.session.stream_window + s.window > session::MAX_WINDOW {
                    frame::code::FLOW_CONTROL_ERROR
                } else {
                    return;
                };
                c.session.reset(stream, error);
                self.fail(ci, si, ErrorClass::Malformed, now);
            }
            // An error ends the connection (RFC 9113 §5.4.1): nothing more comes for any
            // stream, even those at or below `last`, whether or not the server closes.
            Event::GoAway { code, .. } if code != frame::code::NO_ERROR => self.failed(ci, ErrorClass::GoAway, now),
            Event::GoAway { last, .. } => {
                let mut retried = false;
                for si in 0..c.slots.len() {
                    let s = &mut self.conns[ci].slots[si];
                    if s.phase != SlotPhase::InFlight || s.stream <= last {
                        continue;
                    }
                    // Never processed: a graceful GOAWAY (a server's request limit, a
                    // reload) lets them go again on a new connection, once.
                    if !s.retried {
                        s.retried = true;
                        s.phase = SlotPhase::Waiting;
                        self.conns[ci].active -= 1;
                        retried = true;
                    } else {
                        self.fail(ci, si, ErrorClass::GoAway, now);
                    }
                }
                if retried {
                    self.sink.event(ConnEvent::ServerClosedIdle);
                }
            }
        }
    }

    /// Slot `si`'s response ended in a read at `now` (`arrived`: see `on_event`); its next
    /// request starts at `now`, when it can really be sent.
    fn complete(&mut self, ci: usize, si: usize, now: Instant, arrived: Option<Instant>) {
        let c = &mut self.conns[ci];
        c.active -= 1;
        c.served += 1;
        let s = &c.slots[si];
        let at = arrived.map_or(now, |a| a.max(s.start));
        // Later than its deadline, between two checks: a timeout, at its real latency.
        let late = at > s.deadline;
        let mut rec = s.record(at, late.then_some(ErrorClass::Timeout));
        if let Some(co) = &mut self.coalescer {
            co.completed(arrived.map(|_| now.saturating_duration_since(at)));
        }
        if !late {
            rec.length_differs = self.shared.length_differs(rec.body_bytes);
        }
        if self.want_server && self.server.is_none() {
            self.server = Some(c.session.server.take().unwrap_or_default());
        }
        self.sink.record(&rec);
        self.issue(ci, si, now);
    }

    /// Slot `si`'s request failed; its next one starts (on the next `fill`).
    fn fail(&mut self, ci: usize, si: usize, class: ErrorClass, now: Instant) {
        let c = &mut self.conns[ci];
        if c.slots[si].phase == SlotPhase::InFlight {
            c.active -= 1;
        }
        let rec = c.slots[si].record(now, Some(class));
        self.sink.record(&rec);
        self.issue(ci, si, now);
    }

    /// Connection `ci` failed or ended. Its streams in flight fail with `class`, or, when the
    /// server closed a connection that served before and no byte of theirs came (its
    /// keep-alive end), go again once on a new one; a failed connect fails the requests that
    /// waited for it. The new connection opens from the loop, after a pause if refused.
    fn failed(&mut self, ci: usize, class: ErrorClass, now: Instant) {
        let connecting = self.conns[ci].state == State::Connecting;
        let served = self.conns[ci].served;
        let mut retried = false;
        for si in 0..self.conns[ci].slots.len() {
            let s = &mut self.conns[ci].slots[si];
            let idle_close = matches!(class, ErrorClass::ClosedEarly | ErrorClass::Reset)
                && served > 0
                && s.first_byte_us == 0
                && !s.retried;
            match s.phase {
                SlotPhase::InFlight if idle_close => {
                    s.retried = true;
                    s.phase = SlotPhase::Waiting;
                    retried = true;
                }
                SlotPhase::InFlight => self.fail(ci, si, class, now),
                SlotPhase::Waiting if connecting => self.fail(ci, si, class, now),
                SlotPhase::Waiting | SlotPhase::Idle => {}
            }
        }
        if retried {
            self.sink.event(ConnEvent::ServerClosedIdle);
        }
        self.close(ci);
        let c = &mut self.conns[ci];
        if matches!(class, ErrorClass::Refused | ErrorClass::AddrUnavailable | ErrorClass::FdUnavailable) {
            // As worker.rs's refused_pause: doubling, up to 1 ms per connection of the thread.
            let most = REFUSED_PAUSE * self.conns.len() as u32;
            let c = &mut self.conns[ci];
            c.reconnect_at = Some(now + (REFUSED_PAUSE * (1 << c.refused_in_a_row.min(16))).min(most));
            c.refused_in_a_row = c.refused_in_a_row.saturating_add(1);
        } else {
            let generation = c.generation;
            self.queue.push_back((ci, generation));
        }
    }

    fn close(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        c.sock = None;
        c.state = State::Closed;
        c.generation = c.generation.wrapping_add(1);
        c.active = 0;
        c.session.out.clear();
        c.written = 0;
    }

    /// A queued connection: more to read, or to reopen.
    fn resume(&mut self, ci: usize, now: Instant) {
        match self.conns[ci].state {
            State::Open => self.receive(ci),
            State::Closed => self.fill(ci, now),
            State::Connecting => {}
        }
    }

    /// Fails every request past its deadline (a stream in flight is cancelled) and every
    /// connect past the connect timeout.
    fn expire(&mut self, now: Instant) {
        for ci in 0..self.conns.len() {
            let c = &self.conns[ci];
            // A TLS handshake is part of the connect, whose timeout bounds both.
            let connecting = c.state == State::Connecting || c.sock.as_ref().is_some_and(Transport::is_handshaking);
            if connecting && now >= c.connect_start + self.connect_timeout {
                self.failed(ci, ErrorClass::ConnectTimeout, now);
                continue;
            }
            let mut any = false;
            for si in 0..self.conns[ci].slots.len() {
                let s = &self.conns[ci].slots[si];
                if s.phase == SlotPhase::Idle || now < s.deadline {
                    continue;
                }
                if s.phase == SlotPhase::InFlight {
                    let stream = s.stream;
                    self.conns[ci].session.cancel(stream);
                }
                self.fail(ci, si, ErrorClass::Timeout, now);
                any = true;
            }
            if any {
                self.fill(ci, now);
            }
        }
    }
}

#[inline]
fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}
