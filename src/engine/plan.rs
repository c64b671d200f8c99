//! What a run asks of the engine: the plan (requests, connections, pacing, stop), the state
//! its threads share while it runs, and the gate that starts them together.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use super::coalesce;
use super::h2::frame;
use super::schedule::{Schedule, Spacing};
use super::transport::TlsSettings;

/// One kind of request the run sends: a URL of a `--urls` list, a scenario step, or the one
/// URL of a plain run.
#[derive(Clone)]
pub struct Template {
    /// The full request, rendered once.
    pub bytes: Arc<[u8]>,
    /// The same request's HTTP/2 header fields and body (rendered by the HTTP/2 worker).
    pub h2: Arc<frame::Fields>,
    /// Where the head's final blank line starts: a Cookie header goes in there.
    pub head_end: usize,
    /// HEAD responses carry no body whatever their headers say.
    pub head_request: bool,
    /// For cookie matching (domain, path, secure).
    pub url: url::Url,
    /// Scenario steps: the virtual user's pause after this step's response.
    pub think: Duration,
}

/// Which template each request uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Order {
    /// Round robin through the list (each thread starts at its own place).
    Sequential,
    /// Uniformly at random.
    Random,
    /// At random, each template with its own weight (a weighted URL list).
    Weighted(Weights),
    /// Each virtual user walks the steps in order, pausing after each for its think time.
    Scenario,
}

/// The templates' weights as running totals, for drawing one at random in proportion.
///
/// A binary search over the running totals (about 13 comparisons for the 8,000 URLs of a
/// large file set) costs nothing beside a request, and is short enough not to need a crate.
#[derive(Debug, Clone)]
pub struct Weights(Arc<[f64]>);

impl Weights {
    /// The weights of the templates, in order; each finite and positive (checked by the caller).
    pub fn new(weights: &[f64]) -> Weights {
        // Scaled so the largest is 1: the running total then stays at most the line count,
        // where two weights of 1e308 would have summed to infinity and drawn only the last.
        let largest = weights.iter().copied().fold(0.0, f64::max);
        let mut total = 0.0;
        Weights(
            weights
                .iter()
                .map(|w| {
                    total += w / largest;
                    total
                })
                .collect(),
        )
    }

    /// The template drawn for `u`, uniform in [0, 1).
    pub fn pick(&self, u: f64) -> usize {
        let total = self.0.last().copied().unwrap_or(0.0);
        self.0.partition_point(|&c| c <= u * total).min(self.0.len().saturating_sub(1))
    }
}

impl PartialEq for Weights {
    fn eq(&self, other: &Weights) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Weights {}

/// Where requests go and what they are.
#[derive(Clone)]
pub struct Endpoint {
    pub addr: SocketAddr,
    pub tls: Option<TlsSettings>,
    pub templates: Arc<[Template]>,
    pub order: Order,
}

/// When a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After this many request attempts (successes and failures), as ab's -n.
    Requests(u64),
    /// After this long; requests still in flight then are abandoned, as wrk does.
    Duration(Duration),
}

/// What sets the pace.
#[derive(Debug, Clone, PartialEq)]
pub enum Pacing {
    /// Each client sends its next request when the last one is answered (ab, wrk). The
    /// number of active clients follows the schedule (constant: all of them). A client whose
    /// connect is refused pauses a little before its next try (worker.rs says how long).
    Closed { clients: Option<Schedule> },
    /// Requests start at scheduled times whether or not earlier ones were answered (wrk2);
    /// latency counts from the scheduled time, so a stalled server shows in it.
    Open { rate: Schedule, arrival: Spacing },
}

/// Bandwidth caps on some clients (http_load's --throttle).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throttle {
    pub bytes_per_s: f64,
    /// The share of clients throttled (0..=1].
    pub share: f64,
}

/// What the engine runs: the endpoint, connections and threads, when to stop, and how requests are paced.
#[derive(Clone)]
pub struct Plan {
    pub endpoint: Endpoint,
    pub connections: usize,
    pub threads: usize,
    pub stop: Stop,
    pub keepalive: bool,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub pacing: Pacing,
    /// Each client keeps its own cookie jar.
    pub cookies: bool,
    pub throttle: Option<Throttle>,
    /// Seeds random URL order and Poisson arrivals (runs are repeatable).
    pub seed: u64,
    /// Closed loop: wake-ups may be coalesced when many responses arrive per wake, within a
    /// bound on their wait in the client (see coalesce.rs); false: never (--no-coalesce).
    pub coalesce: bool,
    /// The CPUs every engine thread is confined to (the client's side of a placement); None:
    /// wherever the process may run.
    pub affinity: Option<nix::sched::CpuSet>,
    /// Speak HTTP/2 (TLS with ALPN h2, or h2c with prior knowledge), so many streams a connection.
    pub http2: Option<Http2>,
}

impl Plan {
    /// Whether requests start on a schedule (open loop), not when the previous one ends.
    pub fn is_open_loop(&self) -> bool {
        matches!(self.pacing, Pacing::Open { .. })
    }

    /// Whether a thread serving `conns` of the connections may coalesce its wake-ups (when
    /// and for how long, coalesce.rs decides): closed loop on plain keep-alive TCP, enough
    /// clients to fill batches. A new connection per request costs several times what a
    /// wake-up does, and the stamps would add a call per connection.
    pub fn coalesces(&self, conns: usize) -> bool {
        // Over HTTP/2 every stream of a connection is a client (its responses share reads).
        let clients = conns * self.http2.map_or(1, |h| h.streams as usize);
        self.coalesce
            && self.keepalive
            && !self.is_open_loop()
            && self.endpoint.tls.is_none()
            && clients >= coalesce::MIN_CLIENTS
    }

    /// Whether any thread coalesces (the busiest has the most connections).
    pub fn coalesces_any(&self) -> bool {
        self.coalesces(self.connections.div_ceil(self.threads.max(1)))
    }

    /// The schedule whose stages split the results, when the run has stages.
    pub fn stages(&self) -> Option<&Schedule> {
        match &self.pacing {
            Pacing::Open { rate, .. } => Some(rate),
            Pacing::Closed { clients } => clients.as_ref(),
        }
        .filter(|s| s.is_staged())
    }
}

/// State the threads share: written rarely, read cheaply.
pub struct Shared {
    /// Set by Ctrl-C (or the caller) to end the run early.
    pub interrupt: Arc<AtomicBool>,
    /// Requests started so far, for `Stop::Requests` (in the closed loop each connection's
    /// first one is counted when the run starts).
    pub(super) issued: AtomicU64,
    /// Body length of the first successful response; u64::MAX until there is one.
    first_body_len: AtomicU64,
    /// Whether a body length that differs from the first is counted: only when every request
    /// is the same one (a URL list's pages differ by design).
    compare_lengths: bool,
    /// Set by the caller's watcher to end a run that cannot succeed (nothing listens), apart
    /// from `interrupt`, which is the user's.
    given_up: AtomicBool,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            interrupt: Arc::new(AtomicBool::new(false)),
            issued: AtomicU64::new(0),
            first_body_len: AtomicU64::new(u64::MAX),
            compare_lengths: true,
            given_up: AtomicBool::new(false),
        }
    }
}

impl Shared {
    /// A run that ends early when `interrupt` is set (by a signal handler, or the caller).
    pub fn with_interrupt(interrupt: Arc<AtomicBool>) -> Shared {
        Shared { interrupt, ..Shared::default() }
    }

    /// As `with_interrupt`, for a run of `kinds` kinds of request (templates): body lengths
    /// are compared only when there is one.
    pub fn for_run(interrupt: Arc<AtomicBool>, kinds: usize) -> Shared {
        Shared { compare_lengths: kinds == 1, ..Shared::with_interrupt(interrupt) }
    }

    /// Whether the run is to end now: interrupted by the user, or given up.
    pub fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed) || self.given_up.load(Ordering::Relaxed)
    }

    /// Ends the run at once, without touching the user's interrupt flag.
    pub fn give_up(&self) {
        self.given_up.store(true, Ordering::Relaxed);
    }

    /// The body length of the first successful response, once there was one.
    pub fn document_length(&self) -> Option<u64> {
        Some(self.first_body_len.load(Ordering::Relaxed)).filter(|&n| n != u64::MAX)
    }

    /// Whether `len` differs from the first successful response's body length (ab's
    /// "Length" failures, which are not failures when pages vary).
    #[inline]
    pub(super) fn length_differs(&self, len: u64) -> bool {
        let first = self.first_body_len.load(Ordering::Relaxed);
        if first != u64::MAX {
            return self.compare_lengths && first != len;
        }
        match self.first_body_len.compare_exchange(u64::MAX, len, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => false,
            Err(first) => self.compare_lengths && first != len,
        }
    }
}

/// Holds the engine threads until all are started, so none finishes a short run before
/// another begins; or sends them home when one could not start.
#[derive(Default)]
pub(crate) struct Gate {
    state: std::sync::Mutex<Option<bool>>,
    opened: std::sync::Condvar,
}

impl Gate {
    pub(super) fn open(&self, go: bool) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = Some(go);
        self.opened.notify_all();
    }

    /// Waits for the gate; false means the run is off.
    pub(crate) fn wait(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match *state {
                Some(go) => return go,
                None => state = self.opened.wait(state).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }
}

/// HTTP/2 settings of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Http2 {
    /// Concurrent streams per connection (at most what the server allows).
    pub streams: u32,
}
