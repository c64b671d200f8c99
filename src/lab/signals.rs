//! The flags the lab's signal handlers set, and the parent's sampling period: what the parent,
//! its workers and the status page all read, kept apart so none of them imports another.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often the parent looks at the scoreboard (all-busy sampling, reaping).
pub const SAMPLE: Duration = Duration::from_millis(100);

/// Set by SIGTERM or SIGINT in the parent (and inherited by a worker forked meanwhile).
static STOP: AtomicBool = AtomicBool::new(false);

/// Set by SIGUSR1 in a worker: the parent retires it (too many idle); it exits once idle.
static RETIRE: AtomicBool = AtomicBool::new(false);

/// The parent's SIGTERM/SIGINT handler: only stores to an atomic.
pub extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// A worker's SIGUSR1 handler: only stores to an atomic.
pub extern "C" fn on_retire(_: libc::c_int) {
    RETIRE.store(true, Ordering::Relaxed);
}

/// Whether SIGTERM or SIGINT reached this process (in a worker: before it reset its handlers).
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Whether the parent told this worker to retire.
pub fn retire_requested() -> bool {
    RETIRE.load(Ordering::Relaxed)
}
