//! One engine thread: an epoll loop over its connections, each a small state machine
//! (connect -> send -> receive -> next request on the same or a new connection).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, ErrorKind};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use std::os::fd::{AsFd, AsRawFd};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

use super::coalesce::{self, Coalescer};
use super::plan::{Gate, Order, Pacing, Plan, Shared, Stop, Template};
use super::readiness;
use super::record::{ConnEvent, ErrorClass, Record};
use super::response::{ParseError, Progress, ResponseReader};
use super::schedule::{Arrivals, Schedule};
use super::sink::Sink;
use super::transport::{RxStampBuf, TlsSettings, Transport};

/// How often deadlines are checked; also the longest a stop request waits.
const TICK: Duration = Duration::from_millis(10);
const SCRATCH_BYTES: usize = 64 * 1024;
/// Request bytes that surely fit one TCP segment (an Ethernet MSS is 1460).
const ONE_SEGMENT: usize = 1200;
/// The precise timer's token; connection tokens are index | generation << 32.
const TIMER_TOKEN: usize = u32::MAX as usize;
/// Reads one connection may take in one turn of the loop (1 MiB): a server that sends faster
/// than the client parses (an endless stream of 1xx heads or of tiny chunks) would otherwise
/// keep receive() from returning, and the loop from checking -d, Ctrl-C and timeouts. A body
/// larger than that pays one more turn (an epoll_wait that does not sleep) per MiB.
const READS_PER_TURN: usize = 16;
/// The closed loop's first pause after a connect that failed at once (see `refused_pause`).
const REFUSED_PAUSE: Duration = Duration::from_millis(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No request in flight: free for the next (open loop), parked (a closed-loop ramp), or
    /// done for the run.
    Idle,
    /// Its next request is pending after a failure: it starts from the loop, never
    /// recursively, at the next turn or after a refused connect's pause.
    Queued,
    /// A scenario's think time, until `wake_at`.
    Thinking,
    Connecting,
    Sending,
    Receiving,
}

struct Conn {
    sock: Option<Transport>,
    /// Bumped whenever the socket changes, so a stale event cannot reach a new socket.
    generation: u32,
    phase: Phase,
    /// When the request began (in the open loop, when it was scheduled).
    start: Instant,
    /// When it really began: its timeout counts from here.
    began: Instant,
    connect_start: Instant,
    connect_us: Option<u64>,
    first_byte_us: u64,
    deadline: Instant,
    written: usize,
    /// Requests completed on the current socket.
    served: u32,
    /// This request already retried once after the server closed an idle connection.
    retried: bool,
    /// Connects that failed at once since this client last had a connection (the pause
    /// after the next one doubles).
    refused_in_a_row: u8,
    /// Its first request is reserved (counted before the run), so every connection sends at
    /// least one whatever the threads' start order: -n is never smaller than -c.
    reserved: bool,
    reader: ResponseReader,
    /// The request's template, its scheduled stage and how long it waited for a connection.
    template: u16,
    stage: u16,
    queued_us: u64,
    /// The next scenario step.
    step: usize,
    /// Throttled: each transfer waits until `line_free`, when the last one would have
    /// finished at the capped bandwidth.
    slow: bool,
    line_free: Instant,
    /// A think time or a throttled transfer resumes then.
    wake_at: Option<Instant>,
    /// This client's cookies (--cookies).
    jar: Option<Box<super::jar::Jar>>,
    /// Bytes came while no request was outstanding (kept alive between requests): the
    /// connection is closed, and its next request fails as unsolicited.
    unsolicited: bool,
    /// The request's bytes when they differ from its template's (a Cookie header added).
    out: Option<Vec<u8>>,
}

impl Conn {
    /// The record of the request in flight, ending at `now`.
    fn record(&self, now: Instant, error: Option<ErrorClass>) -> Record {
        Record {
            start: self.start,
            queued_us: self.queued_us,
            template: self.template,
            stage: self.stage,
            slow: self.slow,
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

/// What a thread's loop returns: its sink and what it saw of the server.
pub struct Done<S> {
    pub sink: S,
    pub server: Option<String>,
    /// Why this thread's first TLS failure happened.
    pub tls_failure: Option<String>,
    /// `--h2` without TLS: the server answered the HTTP/2 preface with HTTP/1.x bytes.
    pub answered_http1: bool,
    /// Requests still in flight when the run ended, and (open loop) due but never started:
    /// abandoned, not recorded.
    pub in_flight: u64,
    /// Open loop: of those, the requests due but never started (no connection was free).
    pub unsent: u64,
    /// Open loop: requests scheduled.
    pub scheduled: u64,
    /// Responses collected after coalescing pauses (None: this thread never coalesces).
    pub batched: Option<coalesce::Batched>,
}

/// A thread's place in the run: its index and its slice of the connections.
pub struct Place {
    pub index: usize,
    pub first_conn: usize,
    pub conns: usize,
}

/// The open loop's state. Requests due while every connection is busy are not queued one
/// by one: they are the arrivals not yet taken, started in their order as connections free
/// up (late, and their latency shows it). However far the schedule runs ahead of what the
/// connections can carry (--rate 1e7 against a slow server), memory stays flat, and what
/// was never sent is counted at the end (`Arrivals::due_by`).
struct OpenLoop {
    arrivals: Arrivals,
    /// No more arrivals (schedule, -n or -d reached).
    exhausted: bool,
    /// Requests started.
    started: u64,
    /// Arrivals due by then found every connection busy: a request scheduled no later
    /// waited for a connection.
    busy_at: Option<Instant>,
}

/// How this thread paces its requests: decided once, matched once in each hook of the loop
/// (`start_due`: what starts at a turn; `next` and `refused_pause`: what a client does after
/// a request; `next_due`: when the loop must wake; `finished`; the counts at the end).
enum Pace {
    /// Every client sends its next request when its last one ends (ab, wrk).
    Closed {
        /// Each client is a virtual user walking the steps in turn, pausing after each for
        /// its think time.
        scenario: bool,
    },
    /// A closed loop whose active clients follow a schedule, of which this thread runs
    /// `share`; the others wait, parked.
    Ramp { clients: Schedule, share: f64, scenario: bool },
    /// Requests start at scheduled times whether or not earlier ones were answered (wrk2).
    Open(OpenLoop),
}

/// The clients this thread keeps active `elapsed` into a ramp.
fn ramp_clients(clients: &Schedule, share: f64, elapsed: Duration) -> usize {
    (clients.value_at(elapsed) * share).round() as usize
}

/// One engine thread's HTTP/1.1 loop over its share of the connections.
pub struct Worker<S> {
    poll: Poll,
    conns: Vec<Conn>,
    /// Connections whose next step waits for the next turn of the loop, with the generation
    /// they had then (an entry whose socket was closed since is stale): a failed request's
    /// successor, or a response that outran a turn's reads.
    queue: VecDeque<(usize, u32)>,
    /// Idle connections ready for a request (open loop, closed-loop ramps).
    free: Vec<usize>,
    /// Connections not Idle.
    running: usize,
    addr: SocketAddr,
    tls: Option<TlsSettings>,
    templates: Arc<[Template]>,
    order: Order,
    cursor: usize,
    rng: fastrand::Rng,
    keepalive: bool,
    cookies: bool,
    timeout: Duration,
    connect_timeout: Duration,
    /// How often deadlines are checked: TICK, or the timeout when it is shorter.
    tick: Duration,
    stop: Stop,
    origin: Instant,
    deadline: Option<Instant>,
    pace: Pace,
    stages: Option<Schedule>,
    /// Bytes a throttled connection may move per second, and per transfer (10 ms worth).
    throttle_bps: f64,
    throttle_chunk: usize,
    timers: BinaryHeap<Reverse<(Instant, usize)>>,
    /// A timerfd for wake-ups finer than epoll's milliseconds (open loop, think, throttle).
    timer: Option<TimerFd>,
    armed: Option<Instant>,
    shared: Arc<Shared>,
    sink: S,
    /// Why the first TLS failure of this thread happened (transport::tls_failure).
    tls_failure: Option<String>,
    /// Capture the Server header from the first response (thread 0 only).
    want_server: bool,
    server: Option<String>,
    scratch: Box<[u8]>,
    /// Set TCP_NODELAY on new connections: only when a request may go out in more than one
    /// segment (Nagle would hold its tail). A request that fits one segment is written with
    /// one call after the previous response acknowledged everything, so Nagle never delays
    /// it, and without keep-alive the call saved is one in seven per request.
    nodelay: bool,
    /// Closed loop on plain TCP: wake-ups coalesced, arrivals from receive timestamps.
    coalescer: Option<Coalescer>,
    stamps: RxStampBuf,
}

impl<S: Sink> Worker<S> {
    pub fn new(
        plan: &Plan,
        place: Place,
        origin: Instant,
        deadline: Option<Instant>,
        shared: Arc<Shared>,
        sink: S,
    ) -> anyhow::Result<Self> {
        let now = Instant::now();
        let share = place.conns as f64 / plan.connections as f64;
        let is_slow =
            |j: usize| plan.throttle.is_some_and(|t| ((j + 1) as f64 * t.share).floor() > (j as f64 * t.share).floor());
        let conns = (0..place.conns)
            .map(|k| Conn {
                sock: None,
                generation: 0,
                phase: Phase::Idle,
                start: now,
                began: now,
                connect_start: now,
                connect_us: None,
                first_byte_us: 0,
                deadline: now,
                written: 0,
                served: 0,
                retried: false,
                refused_in_a_row: 0,
                reserved: !plan.is_open_loop(),
                reader: ResponseReader::new(false),
                template: 0,
                stage: 0,
                queued_us: 0,
                step: 0,
                slow: is_slow(place.first_conn + k),
                line_free: now,
                wake_at: None,
                jar: None,
                unsolicited: false,
                out: None,
            })
            .collect();
        let seed = plan.seed ^ (place.index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let scenario = plan.endpoint.order == Order::Scenario;
        let pace = match &plan.pacing {
            Pacing::Open { rate, arrival } => {
                let phase = place.index as f64 / plan.threads as f64;
                let arrivals =
                    Arrivals::new(rate.clone(), share, phase, arrival.clone(), seed, (place.index, plan.threads));
                Pace::Open(OpenLoop { arrivals, exhausted: false, started: 0, busy_at: None })
            }
            Pacing::Closed { clients: Some(clients) } => Pace::Ramp { clients: clients.clone(), share, scenario },
            Pacing::Closed { clients: None } => Pace::Closed { scenario },
        };
        // Arrivals and think times are due at instants finer than epoll's milliseconds.
        let precise = match &pace {
            Pace::Open(_) => true,
            Pace::Closed { scenario } | Pace::Ramp { scenario, .. } => *scenario,
        };
        let throttle_bps = plan.throttle.map_or(0.0, |t| t.bytes_per_s);
        let templates = plan.endpoint.templates.clone();
        let poll = Poll::new()?;
        let timer = if precise || plan.throttle.is_some() {
            let t = TimerFd::new(ClockId::CLOCK_MONOTONIC, TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC)?;
            poll.registry().register(&mut SourceFd(&t.as_fd().as_raw_fd()), Token(TIMER_TOKEN), Interest::READABLE)?;
            Some(t)
        } else {
            None
        };
        Ok(Worker {
            poll,
            conns,
            queue: VecDeque::new(),
            // Popped from the end: connection 0 first.
            free: (0..place.conns).rev().collect(),
            running: 0,
            addr: plan.endpoint.addr,
            tls: plan.endpoint.tls.clone(),
            cursor: place.index * templates.len() / plan.threads.max(1),
            templates,
            order: plan.endpoint.order.clone(),
            rng: fastrand::Rng::with_seed(seed.wrapping_add(1)),
            keepalive: plan.keepalive,
            cookies: plan.cookies,
            timeout: plan.timeout,
            connect_timeout: plan.connect_timeout.min(plan.timeout),
            tick: deadline_tick(plan.timeout.min(plan.connect_timeout)),
            stop: plan.stop,
            origin,
            deadline,
            pace,
            stages: plan.stages().cloned(),
            throttle_bps,
            throttle_chunk: ((throttle_bps / 100.0) as usize).clamp(1, SCRATCH_BYTES),
            timers: BinaryHeap::new(),
            timer,
            armed: None,
            shared,
            sink,
            tls_failure: None,
            want_server: place.index == 0,
            server: None,
            scratch: vec![0u8; SCRATCH_BYTES].into_boxed_slice(),
            nodelay: plan.throttle.is_some()
                || plan.cookies
                || plan.endpoint.tls.is_some()
                || plan.endpoint.templates.iter().any(|t| t.bytes.len() > ONE_SEGMENT),
            coalescer: plan.coalesces(place.conns).then(|| Coalescer::new(now)),
            stamps: RxStampBuf::default(),
        })
    }

    /// Runs the loop once the gate opens, until the stop condition or an interrupt.
    pub fn run(mut self, start: &Gate) -> anyhow::Result<Done<S>> {
        if !start.wait() {
            return Ok(Done {
                sink: self.sink,
                server: None,
                tls_failure: None,
                answered_http1: false,
                in_flight: 0,
                unsent: 0,
                scheduled: 0,
                batched: None,
            });
        }
        let mut events = Events::with_capacity(1024);
        let mut next_tick = Instant::now() + self.tick;
        let mut now = Instant::now();
        loop {
            // Only the entries queued before this turn: one queued again meanwhile waits for
            // the next turn, so a server that fails every request at once cannot keep the
            // loop from the checks below.
            for _ in 0..self.queue.len() {
                let Some((i, generation)) = self.queue.pop_front() else { break };
                if self.conns[i].generation == generation {
                    self.resume(i, now);
                }
            }
            self.start_due(now);
            self.fire_timers(now);
            if self.shared.interrupted() || self.finished(now) {
                break;
            }
            let mut wake = next_tick;
            if let Some(&Reverse((at, _))) = self.timers.peek() {
                wake = wake.min(at);
            }
            if let Some(at) = self.next_due() {
                wake = wake.min(at);
            }
            let mut wait = if self.queue.is_empty() { wake.saturating_duration_since(now) } else { Duration::ZERO };
            if wake < next_tick && !wait.is_zero() {
                wait = self.arm(wake, wait);
            }
            readiness::wait(&mut self.poll, &mut events, self.coalescer.as_mut(), now, self.running, wait)?;
            for ev in events.iter() {
                if ev.token() == Token(TIMER_TOKEN) {
                    self.disarm();
                    continue;
                }
                let (idx, generation) = readiness::conn_of(ev.token());
                if self.conns[idx].generation != generation {
                    continue;
                }
                let closing = ev.is_read_closed() || ev.is_error();
                self.on_ready(idx, ev.is_readable() || closing, ev.is_writable() || closing, closing);
            }
            // Also the next turn's clock: nothing happens between here and there.
            now = Instant::now();
            if now >= next_tick {
                next_tick = now + self.tick;
                self.expire(now);
            }
        }
        let unsent = self.unsent(Instant::now());
        let scheduled = match &self.pace {
            Pace::Open(open) => open.started + unsent,
            Pace::Closed { .. } | Pace::Ramp { .. } => 0,
        };
        let in_flight = unsent
            + self
                .conns
                .iter()
                .filter(|c| matches!(c.phase, Phase::Connecting | Phase::Sending | Phase::Receiving))
                .count() as u64;
        let batched = self.coalescer.map(Coalescer::finish);
        Ok(Done {
            sink: self.sink,
            server: self.server,
            tls_failure: self.tls_failure,
            answered_http1: false,
            in_flight,
            unsent,
            scheduled,
            batched,
        })
    }

    /// Sets the precise timer to fire at `at` (in `wait`); returns the poll's own timeout, a
    /// fallback. epoll's timeout has whole milliseconds: in the open loop that much slack
    /// would show in every latency.
    fn arm(&mut self, at: Instant, wait: Duration) -> Duration {
        let Some(timer) = &self.timer else { return wait };
        if self.armed != Some(at) {
            let spec = TimeSpec::from_duration(wait.max(Duration::from_nanos(1)));
            if timer.set(Expiration::OneShot(spec), TimerSetTimeFlags::empty()).is_err() {
                return wait;
            }
            self.armed = Some(at);
        }
        wait + TICK
    }

    fn disarm(&mut self) {
        if let Some(timer) = &self.timer {
            // Reading clears the expiry (the fd is non-blocking: nothing to read is fine).
            let mut buf = [0u8; 8];
            let _ = nix::unistd::read(timer, &mut buf);
        }
        self.armed = None;
    }

    /// Whether this thread is done: its time is up, or its requests are all issued and answered.
    fn finished(&self, now: Instant) -> bool {
        if self.deadline.is_some_and(|d| now >= d) {
            return true;
        }
        match &self.pace {
            Pace::Closed { .. } => self.running == 0,
            // Only by the deadline: a ramp's stages always have one.
            Pace::Ramp { .. } => false,
            // A schedule with no more arrivals ends a -n run; a -d run lasts its duration
            // (a rate too low for a second arrival still measures the whole window).
            Pace::Open(open) => open.exhausted && self.running == 0 && self.deadline.is_none(),
        }
    }

    /// When the pace next starts something by itself: the open loop's next scheduled start,
    /// while there are more. (Closed-loop clients start on responses, timers and ticks.)
    fn next_due(&self) -> Option<Instant> {
        match &self.pace {
            Pace::Open(open) if !open.exhausted => Some(self.origin + open.arrivals.peek()?),
            Pace::Open(_) | Pace::Closed { .. } | Pace::Ramp { .. } => None,
        }
    }

    /// Starts what is due at this turn: every client at the first turn (closed loop), the
    /// clients the schedule wants now (ramp), or the requests due (open loop).
    fn start_due(&mut self, now: Instant) {
        let clients = match &self.pace {
            Pace::Closed { .. } => self.conns.len(),
            // Clients over the count are parked by next() when their request ends.
            Pace::Ramp { clients, share, .. } => ramp_clients(clients, *share, now - self.origin),
            Pace::Open(_) => return self.issue_due(now),
        };
        // Closed loop: `free` is empty after the first turn (its clients never park).
        while self.running < clients {
            let Some(i) = self.free.pop() else { break };
            self.start_request(i, now);
        }
    }

    /// A queued connection's next step: its next request after a failure, or more of a
    /// response that outran a turn's reads.
    fn resume(&mut self, i: usize, now: Instant) {
        match self.conns[i].phase {
            Phase::Queued => self.next(i, now),
            // Read to the end (`closing`): the peer's FIN may have been reported already.
            Phase::Receiving => self.receive(i, true),
            Phase::Idle | Phase::Thinking | Phase::Connecting | Phase::Sending => {}
        }
    }

    /// Open loop: starts every request that is due on a free connection. What is due while
    /// every connection is busy waits, untaken, for `next` to start it on the first one free.
    fn issue_due(&mut self, now: Instant) {
        while !self.free.is_empty() {
            let Some(at) = self.take_due(now) else { return };
            let i = self.free.pop().expect("a free connection");
            self.begin(i, at, now, false);
        }
        if self.due(now)
            && let Pace::Open(open) = &mut self.pace
        {
            open.busy_at = Some(now);
        }
    }

    /// Whether an arrival is due by `now` (open loop).
    fn due(&self, now: Instant) -> bool {
        match &self.pace {
            Pace::Open(open) => !open.exhausted && open.arrivals.peek().is_some_and(|t| self.origin + t <= now),
            Pace::Closed { .. } | Pace::Ramp { .. } => false,
        }
    }

    /// The open loop's next arrival, when it is due by `now` and the run wants more (-n, -d);
    /// it counts as started.
    fn take_due(&mut self, now: Instant) -> Option<Instant> {
        let Pace::Open(open) = &mut self.pace else { return None };
        if open.exhausted {
            return None;
        }
        let Some(at) = open.arrivals.peek().map(|t| self.origin + t) else {
            open.exhausted = true;
            return None;
        };
        if at > now {
            return None;
        }
        let over = match self.stop {
            Stop::Requests(n) => self.shared.issued.fetch_add(1, Ordering::Relaxed) >= n,
            Stop::Duration(_) => self.deadline.is_some_and(|d| at >= d),
        };
        if over {
            open.exhausted = true;
            return None;
        }
        open.arrivals.advance();
        open.started += 1;
        Some(at)
    }

    /// Open loop, at the end: requests due by `now` (and before -d) that no connection was
    /// free to start. With -n they are claimed from the count, so threads do not count the
    /// same ones twice.
    fn unsent(&self, now: Instant) -> u64 {
        let Pace::Open(open) = &self.pace else { return 0 };
        if open.exhausted {
            return 0;
        }
        let by = self.deadline.map_or(now, |d| d.min(now)).saturating_duration_since(self.origin);
        let due = open.arrivals.due_by(by);
        match self.stop {
            Stop::Duration(_) => due,
            Stop::Requests(n) => {
                let claimed = self.shared.issued.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |issued| {
                    Some(issued + due.min(n.saturating_sub(issued)))
                });
                let before = claimed.unwrap_or_else(|v| v);
                due.min(n.saturating_sub(before))
            }
        }
    }

    /// What connection `i` does once its request has ended.
    fn next(&mut self, i: usize, now: Instant) {
        let scenario = match &mut self.pace {
            Pace::Open(open) => {
                let busy_at = open.busy_at;
                return match self.take_due(now) {
                    // It waited for a connection when it was due by a turn that found none.
                    Some(at) => self.begin(i, at, now, busy_at.is_some_and(|b| at <= b)),
                    None => self.park(i),
                };
            }
            Pace::Ramp { clients, share, .. } if self.running > ramp_clients(clients, *share, now - self.origin) => {
                self.close(i);
                return self.park(i);
            }
            Pace::Closed { scenario } | Pace::Ramp { scenario, .. } => *scenario,
        };
        if scenario {
            let c = &mut self.conns[i];
            let think = self.templates[c.template as usize].think;
            c.step = (c.step + 1) % self.templates.len();
            if !think.is_zero() {
                c.phase = Phase::Thinking;
                return self.wake(i, now + think);
            }
        }
        self.start_request(i, now)
    }

    /// Connection `i` waits, idle, for work (its socket stays open for keep-alive).
    fn park(&mut self, i: usize) {
        if self.conns[i].phase != Phase::Idle {
            self.running -= 1;
        }
        self.conns[i].phase = Phase::Idle;
        self.free.push(i);
    }

    /// Closed loop: begins the next request on connection `i` at `now`, unless the run is over.
    fn start_request(&mut self, i: usize, now: Instant) {
        let over = match self.stop {
            Stop::Requests(_) if std::mem::take(&mut self.conns[i].reserved) => false,
            Stop::Requests(n) => self.shared.issued.fetch_add(1, Ordering::Relaxed) >= n,
            Stop::Duration(_) => self.deadline.is_some_and(|d| now >= d),
        };
        if over || self.shared.interrupted() {
            self.close(i);
            if self.conns[i].phase != Phase::Idle {
                self.running -= 1;
            }
            self.conns[i].phase = Phase::Idle;
            return;
        }
        self.begin(i, now, now, false);
    }

    /// Begins a request on connection `i`, scheduled for `at` (now, or a little earlier in the
    /// open loop; `waited`: it was due while every connection was busy).
    fn begin(&mut self, i: usize, at: Instant, now: Instant, waited: bool) {
        let template = match &self.order {
            _ if self.templates.len() == 1 => 0,
            Order::Sequential => {
                let t = self.cursor;
                self.cursor = (t + 1) % self.templates.len();
                t
            }
            Order::Random => self.rng.usize(..self.templates.len()),
            Order::Weighted(w) => w.pick(self.rng.f64()),
            Order::Scenario => self.conns[i].step,
        };
        let stage = self.stages.as_ref().map_or(0, |s| s.stage_at(at.saturating_duration_since(self.origin)));
        let c = &mut self.conns[i];
        if c.phase == Phase::Idle {
            self.running += 1;
        }
        let tpl = &self.templates[template];
        c.template = template as u16;
        c.stage = stage as u16;
        c.start = at;
        c.began = now;
        c.queued_us = if waited { micros(now.saturating_duration_since(at)).max(1) } else { 0 };
        c.deadline = now + self.timeout;
        c.connect_us = None;
        c.first_byte_us = 0;
        c.retried = false;
        c.reader.reset();
        c.reader.head_request = tpl.head_request;
        c.reader.capture_server = self.want_server && self.server.is_none();
        c.reader.capture_cookies = self.cookies;
        c.out = None;
        if self.cookies
            && let Some(cookie) = c.jar.get_or_insert_default().header(&tpl.url)
        {
            let mut out = Vec::with_capacity(tpl.bytes.len() + cookie.len() + 10);
            out.extend_from_slice(&tpl.bytes[..tpl.head_end]);
            out.extend_from_slice(format!("Cookie: {cookie}\r\n").as_bytes());
            out.extend_from_slice(&tpl.bytes[tpl.head_end..]);
            c.out = Some(out);
        }
        c.phase = Phase::Sending;
        if std::mem::take(&mut c.unsolicited) {
            return self.fail(i, ErrorClass::Unsolicited);
        }
        if c.sock.is_some() { self.send(i) } else { self.connect(i, now) }
    }

    /// Resumes connection `i` at `at` (think time over, or a throttled transfer's turn).
    fn wake(&mut self, i: usize, at: Instant) {
        self.conns[i].wake_at = Some(at);
        self.timers.push(Reverse((at, i)));
    }

    fn fire_timers(&mut self, now: Instant) {
        while let Some(&Reverse((at, i))) = self.timers.peek() {
            if at > now {
                return;
            }
            self.timers.pop();
            if self.conns[i].wake_at != Some(at) {
                continue;
            }
            self.conns[i].wake_at = None;
            match self.conns[i].phase {
                Phase::Thinking => self.start_request(i, now),
                Phase::Connecting | Phase::Sending => self.send(i),
                Phase::Receiving => self.receive(i, false),
                // A refused connect's pause is over.
                Phase::Queued => self.next(i, now),
                Phase::Idle => {}
            }
        }
    }

    /// Opens a connection. Sockets are registered once, edge-triggered, for both directions:
    /// an edge comes only on a change (data, FIN, space after a full buffer), so the interest
    /// never needs changing and close() drops the registration with the descriptor.
    fn connect(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        c.connect_start = now;
        c.deadline = c.deadline.min(now + self.connect_timeout);
        c.served = 0;
        let mut sock = match super::transport::connect(self.addr) {
            Ok(s) => s,
            Err(e) => return self.fail(i, ErrorClass::from_io(&e)),
        };
        let token = readiness::token(i, c.generation);
        if let Err(e) = self.poll.registry().register(&mut sock, token, Interest::READABLE | Interest::WRITABLE) {
            return self.fail(i, ErrorClass::from_io(&e));
        }
        match Transport::new(sock, self.tls.as_ref()) {
            Ok(t) => c.sock = Some(t),
            Err(e) => {
                self.tls_failure.get_or_insert_with(|| super::transport::tls_failure(&e));
                return self.fail(i, ErrorClass::Tls);
            }
        }
        if self.coalescer.is_some() && !c.sock.as_ref().is_some_and(Transport::enable_rx_stamps) {
            // Without arrival times a pause would show in every latency.
            self.coalescer = None;
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
            Phase::Idle | Phase::Queued | Phase::Thinking if readable => self.between_requests(i),
            _ => {}
        }
    }

    /// Something came on a kept-alive connection with no request outstanding. Bytes of a
    /// response (a server answering on accept, or twice) would be taken for the next
    /// request's, and every later one shifted: the connection ends, its next request fails
    /// as unsolicited. The server's close is left for the next request to find (retried).
    fn between_requests(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let Some(sock) = c.sock.as_mut() else { return };
        let unsolicited = match sock {
            // A peek leaves a FIN where the next request finds it.
            Transport::Plain(s) => s.peek(&mut self.scratch[..1]).is_ok_and(|n| n > 0),
            // TLS records that carry no data (session tickets, key updates) are no answer:
            // only decrypted bytes count. A close read here is found again by the next write.
            Transport::Tls(_) => sock.read(&mut self.scratch).is_ok_and(|n| n > 0),
        };
        if unsolicited {
            self.close(i);
            self.conns[i].unsolicited = true;
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
        c.refused_in_a_row = 0;
        c.connect_us = Some(micros(c.connect_start.elapsed()));
        c.deadline = c.began + self.timeout;
        if self.nodelay
            && let Some(sock) = &c.sock
        {
            let _ = sock.socket().set_nodelay(true);
        }
        self.sink.event(ConnEvent::Opened);
    }

    /// Writes (the rest of) the request; moves to Receiving when it is all out. A write that
    /// would block resumes on the next writable edge; a throttled one when its turn comes.
    fn send(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if c.phase != Phase::Connecting {
            c.phase = Phase::Sending;
        }
        loop {
            let c = &mut self.conns[i];
            let bytes: &[u8] = match &c.out {
                Some(out) => out,
                None => &self.templates[c.template as usize].bytes,
            };
            let Some(sock) = c.sock.as_mut() else { return };
            if c.written == bytes.len() {
                match sock.flush() {
                    Ok(true) => break,
                    Ok(false) => return,
                    Err(e) => return self.io_failure(i, &e),
                }
            }
            let mut end = bytes.len();
            if c.slow {
                let now = Instant::now();
                if now < c.line_free {
                    let at = c.line_free;
                    return self.wake(i, at);
                }
                end = end.min(c.written + self.throttle_chunk);
            }
            match sock.write(&bytes[c.written..end]) {
                Ok(n) => {
                    c.written += n;
                    if c.slow {
                        c.line_free =
                            c.line_free.max(Instant::now()) + Duration::from_secs_f64(n as f64 / self.throttle_bps);
                    }
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
        for _ in 0..READS_PER_TURN {
            let c = &mut self.conns[i];
            let mut limit = self.scratch.len();
            if c.slow {
                if Instant::now() < c.line_free {
                    let at = c.line_free;
                    return self.wake(i, at);
                }
                limit = self.throttle_chunk;
            }
            let Some(sock) = c.sock.as_mut() else { return };
            let read = if self.coalescer.as_ref().is_some_and(Coalescer::pausing) {
                sock.read_stamped(&mut self.scratch[..limit], &mut self.stamps)
            } else {
                sock.read(&mut self.scratch[..limit]).map(|n| (n, None))
            };
            let (n, stamp) = match read {
                Ok((0, _)) => return self.on_eof(i),
                Ok(r) => r,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => return self.on_eof(i),
                Err(e) => return self.io_failure(i, &e),
            };
            // Edge-triggered: a short read empties the socket (new data brings a new event),
            // unless the peer's FIN is queued too, which only a read returning 0 consumes.
            let drained = !closing && !c.slow && n < self.scratch.len() && sock.short_read_drains();
            // One clock read serves the first byte, the end and the next request's start; a
            // receive timestamp, when there is one, says when the bytes really arrived.
            let now = Instant::now();
            let stamped = stamp.map(|s| coalesce::arrival(now, s).max(c.start));
            let arrived = stamped.unwrap_or(now);
            if c.slow {
                c.line_free = c.line_free.max(now) + Duration::from_secs_f64(n as f64 / self.throttle_bps);
            }
            if c.first_byte_us == 0 {
                c.first_byte_us = micros(arrived - c.start).max(1);
            }
            match c.reader.feed(&self.scratch[..n]) {
                Ok(Progress::More) => {}
                // No request is pipelined: bytes beyond the response answer none of them.
                Ok(Progress::Done { consumed }) if consumed < n => return self.fail(i, ErrorClass::Unsolicited),
                Ok(Progress::Done { .. }) => return self.complete(i, stamped, now),
                Err(e) => return self.fail(i, parse_error_class(e)),
            }
            if drained {
                return;
            }
        }
        // The rest waits for the next turn (READS_PER_TURN).
        let generation = self.conns[i].generation;
        self.queue.push_back((i, generation));
    }

    fn on_eof(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if c.sock.as_ref().is_some_and(Transport::is_handshaking) {
            self.tls_failure.get_or_insert_with(|| "the server closed the connection during the TLS handshake".into());
            return self.fail(i, ErrorClass::Tls);
        }
        if c.reader.eof().is_ok() {
            self.conns[i].reader.keep_alive = false;
            return self.complete(i, None, Instant::now());
        }
        if !c.reader.started() {
            return self.server_closed(i, ErrorClass::ClosedEarly);
        }
        self.fail(i, ErrorClass::ClosedEarly)
    }

    /// A socket error while sending or receiving.
    fn io_failure(&mut self, i: usize, e: &io::Error) {
        let class = ErrorClass::from_io(e);
        if class == ErrorClass::Tls {
            self.tls_failure.get_or_insert_with(|| super::transport::tls_failure(e));
        }
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
            c.deadline = c.began + self.timeout;
            return self.connect(i, Instant::now());
        }
        self.fail(i, class)
    }

    /// The response is complete at `now`; `stamped`: when it arrived, by its receive
    /// timestamp (it was collected after a pause).
    fn complete(&mut self, i: usize, stamped: Option<Instant>, now: Instant) {
        let c = &mut self.conns[i];
        let arrived = stamped.unwrap_or(now);
        // Deadlines are checked every tick: a response that came after its own, before the
        // check, is still late. Its latency is the real one, never cut to the timeout.
        let late = arrived > c.deadline;
        let mut rec = c.record(arrived, late.then_some(ErrorClass::Timeout));
        if let Some(co) = &mut self.coalescer {
            co.completed(stamped.map(|at| now.saturating_duration_since(at)));
        }
        if !late {
            rec.length_differs = self.shared.length_differs(rec.body_bytes);
        }
        if c.reader.capture_server {
            self.server = c.reader.server.take().or_else(|| Some(String::new()));
        }
        c.served += 1;
        if self.cookies {
            let jar = c.jar.get_or_insert_default();
            let url = &self.templates[c.template as usize].url;
            for set in c.reader.set_cookies.drain(..) {
                jar.set(&set, url);
            }
        }
        let keep = self.keepalive && c.reader.keep_alive;
        self.sink.record(&rec);
        if !keep {
            self.close(i);
        }
        self.next(i, now);
    }

    fn fail(&mut self, i: usize, class: ErrorClass) {
        let now = Instant::now();
        let rec = self.conns[i].record(now, Some(class));
        self.sink.record(&rec);
        self.close(i);
        // Start the next request from the loop, not from here: a server that refuses at once
        // would otherwise recurse without ever polling.
        self.conns[i].phase = Phase::Queued;
        if let Some(pause) = self.refused_pause(i, class) {
            return self.wake(i, now + pause);
        }
        let generation = self.conns[i].generation;
        self.queue.push_back((i, generation));
    }

    /// How long client `i` waits before its next request when its connect failed at once
    /// (refused: nothing listens; or no port or descriptor left): None, not at all.
    ///
    /// The closed loop would retry at once, and fail at once: a client spinning at ~20 µs a
    /// refusal (400,000 in 5 s from two clients here, a core each) that learns nothing. So it
    /// pauses 1 ms, doubling with each such failure in a row, up to 1 ms per client of the
    /// thread: then a thread retries about once a millisecond in all (a few per cent of a
    /// core) however many clients it has, every attempt is still counted in its class, and a
    /// server back from a restart has its clients again within that bound. The open loop
    /// needs no pause: its schedule sets the pace of attempts, failed or not.
    fn refused_pause(&mut self, i: usize, class: ErrorClass) -> Option<Duration> {
        if !matches!(class, ErrorClass::Refused | ErrorClass::AddrUnavailable | ErrorClass::FdUnavailable) {
            return None;
        }
        match self.pace {
            Pace::Open(_) => None,
            Pace::Closed { .. } | Pace::Ramp { .. } => {
                let most = REFUSED_PAUSE * self.conns.len() as u32;
                let c = &mut self.conns[i];
                let pause = (REFUSED_PAUSE * (1 << c.refused_in_a_row.min(16))).min(most);
                c.refused_in_a_row = c.refused_in_a_row.saturating_add(1);
                Some(pause)
            }
        }
    }

    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        // Closing the descriptor removes it from the epoll set.
        c.sock = None;
        c.generation = c.generation.wrapping_add(1);
        c.written = 0;
        c.served = 0;
        c.wake_at = None;
    }

    /// Fails every request past its deadline, and every connection whose TCP and TLS
    /// handshakes are not done within the connect timeout.
    fn expire(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            let active = matches!(c.phase, Phase::Connecting | Phase::Sending | Phase::Receiving);
            // The request is handed to TLS once TCP is up: the handshake runs meanwhile.
            let handshaking = c.sock.as_ref().is_some_and(Transport::is_handshaking);
            let connecting = c.phase == Phase::Connecting || handshaking;
            if !active {
                continue;
            }
            if connecting && now >= c.connect_start + self.connect_timeout {
                self.fail(i, ErrorClass::ConnectTimeout);
            } else if now >= c.deadline {
                self.fail(i, if connecting { ErrorClass::ConnectTimeout } else { ErrorClass::Timeout });
            }
        }
    }
}

/// How often deadlines are checked for a run whose shortest timeout is `shortest`: TICK, or
/// the timeout when it is shorter (but not under 1 ms, epoll's resolution), so a request
/// fails close to its deadline.
pub(super) fn deadline_tick(shortest: Duration) -> Duration {
    TICK.min(shortest).max(Duration::from_millis(1))
}

fn parse_error_class(e: ParseError) -> ErrorClass {
    match e {
        ParseError::Truncated => ErrorClass::ClosedEarly,
        ParseError::BadHead | ParseError::HeadTooLarge | ParseError::BadFraming | ParseError::TooManyInterim => {
            ErrorClass::Malformed
        }
    }
}

#[inline]
fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}
