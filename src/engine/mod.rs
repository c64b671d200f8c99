//! The load engine: one event loop per thread drives HTTP/1.1 (or HTTP/2, h2/) requests over
//! its share of the connections and hands one `Record` per request to that thread's `Sink`. It never prints.
//!
//! Hot-path choices (measured against wrk, see bench/): request bytes are rendered once;
//! sockets are registered once for readability and written to directly, so a kept-alive
//! request costs one write, one read and a share of one epoll_wait; response bodies are
//! counted in a per-thread scratch buffer, never copied or stored. With many clients per
//! thread, wake-ups may be coalesced, within a bound on how long responses wait in the
//! client (coalesce.rs).

mod coalesce;
pub mod h2;
pub mod jar;
mod plan;
mod readiness;
pub mod record;
pub mod request;
pub mod response;
pub mod schedule;
pub mod sink;
pub mod transport;
mod worker;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub use coalesce::Batched;
pub use h2::Http2;
use plan::Gate;
pub use plan::{Endpoint, Order, Pacing, Plan, Shared, Stop, Template, Throttle, Weights};
pub use record::{ConnEvent, ErrorClass, Record};
pub use schedule::{Arrival, Schedule, Spacing, Stage};
pub use sink::Sink;
pub use transport::TlsSettings;

/// A thread's loop: HTTP/1.1 or HTTP/2.
enum AnyWorker<S> {
    Http1(Box<worker::Worker<S>>),
    Http2(Box<h2::Worker<S>>),
}

impl<S: Sink> AnyWorker<S> {
    fn run(self, gate: &Gate) -> anyhow::Result<worker::Done<S>> {
        match self {
            AnyWorker::Http1(w) => w.run(gate),
            AnyWorker::Http2(w) => w.run(gate),
        }
    }
}

/// What a run produced besides the sinks' contents.
pub struct Outcome<S> {
    pub sinks: Vec<S>,
    pub elapsed: Duration,
    pub interrupted: bool,
    /// The Server header of the first response, for the report.
    pub server: Option<String>,
    /// Why the first TLS failure happened (one thread's), in words.
    pub tls_failure: Option<String>,
    /// `--h2` without TLS: some connection was answered in HTTP/1.x instead of frames.
    pub answered_http1: bool,
    /// Requests in flight when the run ended: abandoned, in no figure. A duration-bound run
    /// against a server that starves some connections shows it here (wrk says nothing).
    pub in_flight_at_end: u64,
    /// Open loop: requests that were due by the end (started or not).
    pub scheduled: u64,
    /// Open loop: requests due by the end that were never started, every connection being
    /// busy (part of `in_flight_at_end`).
    pub unsent: u64,
    /// Responses collected after coalescing pauses (None: no thread could coalesce).
    pub batched: Option<Batched>,
}

/// Runs the plan with one sink per thread (`sinks.len()` threads, which must equal
/// `plan.threads`). Returns when the stop condition is met or `shared.interrupt` is set.
pub fn run<S: Sink + 'static>(plan: &Plan, sinks: Vec<S>, shared: Arc<Shared>) -> anyhow::Result<Outcome<S>> {
    assert_eq!(sinks.len(), plan.threads, "one sink per thread");
    let reserved = if plan.is_open_loop() { 0 } else { plan.connections as u64 };
    shared.issued.store(reserved, Ordering::Relaxed);
    let start = Arc::new(Gate::default());
    let started = Instant::now();
    let deadline = match plan.stop {
        Stop::Duration(d) => Some(started + d),
        Stop::Requests(_) => None,
    };
    // Every worker is built before any thread starts: a failure then leaves none waiting at
    // the start barrier.
    let workers = sinks
        .into_iter()
        .enumerate()
        .map(|(i, sink)| {
            let first_conn = i * (plan.connections / plan.threads) + i.min(plan.connections % plan.threads);
            let conns = plan.connections / plan.threads + usize::from(i < plan.connections % plan.threads);
            let place = worker::Place { index: i, first_conn, conns };
            Ok(match plan.http2 {
                None => AnyWorker::Http1(Box::new(worker::Worker::new(
                    plan,
                    place,
                    started,
                    deadline,
                    shared.clone(),
                    sink,
                )?)),
                Some(h2) => {
                    AnyWorker::Http2(Box::new(h2::Worker::new(plan, h2, place, deadline, shared.clone(), sink)?))
                }
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut handles = Vec::with_capacity(plan.threads);
    for (i, worker) in workers.into_iter().enumerate() {
        let gate = start.clone();
        let affinity = plan.affinity;
        let handle = std::thread::Builder::new().name(format!("webtune-engine-{i}")).spawn(move || {
            if let Some(cpus) = affinity {
                nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &cpus)
                    .map_err(|e| anyhow::anyhow!("cannot confine an engine thread to its CPUs: {e}"))?;
            }
            worker.run(&gate)
        });
        match handle {
            Ok(h) => handles.push(h),
            Err(e) => {
                start.open(false);
                return Err(anyhow::anyhow!("cannot start an engine thread: {e}"));
            }
        }
    }
    start.open(true);
    let mut sinks = Vec::with_capacity(plan.threads);
    let mut server = None;
    let mut tls_failure = None;
    let mut answered_http1 = false;
    let mut failure = None;
    let mut in_flight_at_end = 0;
    let mut scheduled = 0;
    let mut unsent = 0;
    let mut batched: Option<Batched> = None;
    for h in handles {
        match h.join() {
            Ok(Ok(done)) => {
                server = server.or(done.server);
                tls_failure = tls_failure.or(done.tls_failure);
                answered_http1 |= done.answered_http1;
                in_flight_at_end += done.in_flight;
                scheduled += done.scheduled;
                unsent += done.unsent;
                if let Some(b) = done.batched {
                    batched.get_or_insert_default().add(b);
                }
                sinks.push(done.sink);
            }
            Ok(Err(e)) => failure = Some(e),
            Err(_) => failure = Some(anyhow::anyhow!("an engine thread panicked")),
        }
    }
    if let Some(e) = failure {
        return Err(e);
    }
    let elapsed = match deadline {
        Some(d) if !shared.interrupted() => d.saturating_duration_since(started).min(started.elapsed()),
        _ => started.elapsed(),
    };
    Ok(Outcome {
        sinks,
        elapsed,
        interrupted: shared.interrupted(),
        server,
        tls_failure,
        answered_http1,
        in_flight_at_end,
        scheduled,
        unsent,
        batched,
    })
}
