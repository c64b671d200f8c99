//! Live counters for the progress line: each engine thread bumps its own cache line, the
//! main thread reads all of them once a second. No locks, no shared writes in the hot path.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::engine::{Record, Sink};

/// One engine thread's request counts, alone on its cache line so threads do not contend.
#[derive(Default)]
#[repr(align(64))]
pub struct Counters {
    pub ok: AtomicU64,
    pub failed: AtomicU64,
    /// Of the failed: connects refused (nothing listens).
    pub refused: AtomicU64,
}

/// The engine-side half: a sink that counts.
pub struct ProgressTap(Arc<Counters>);

impl Sink for ProgressTap {
    #[inline]
    fn record(&mut self, r: &Record) {
        // One writer per counter: a plain load and store is enough, no locked add.
        let c = if r.is_ok() { &self.0.ok } else { &self.0.failed };
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        if r.error == Some(crate::engine::ErrorClass::Refused) {
            let c = &self.0.refused;
            c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
    }
}

/// The reader's half: totals over every thread's counters.
#[derive(Clone, Default)]
pub struct ProgressBoard {
    threads: Vec<Arc<Counters>>,
}

impl ProgressBoard {
    /// A fresh counting sink for one engine thread, whose counts this board then reads.
    pub fn tap(&mut self) -> ProgressTap {
        let c = Arc::new(Counters::default());
        self.threads.push(c.clone());
        ProgressTap(c)
    }

    /// (successful, failed) so far.
    pub fn totals(&self) -> (u64, u64) {
        self.threads.iter().fold((0, 0), |(ok, failed), c| {
            (ok + c.ok.load(Ordering::Relaxed), failed + c.failed.load(Ordering::Relaxed))
        })
    }

    /// Connects refused so far.
    pub fn refused(&self) -> u64 {
        self.threads.iter().map(|c| c.refused.load(Ordering::Relaxed)).sum()
    }
}
