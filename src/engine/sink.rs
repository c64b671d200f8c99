//! Where records go. Each engine thread owns one sink (no locks in the hot path); the caller
//! merges them when the run ends. Histograms, the live progress counters and, later, the store
//! are all sinks; a tuple of sinks is a sink.

use super::record::{ConnEvent, Record};

/// What one engine thread hands each request's record to, and each connection event.
pub trait Sink: Send {
    fn record(&mut self, r: &Record);
    fn event(&mut self, _e: ConnEvent) {}
}

impl<A: Sink, B: Sink> Sink for (A, B) {
    #[inline]
    fn record(&mut self, r: &Record) {
        self.0.record(r);
        self.1.record(r);
    }
    #[inline]
    fn event(&mut self, e: ConnEvent) {
        self.0.event(e);
        self.1.event(e);
    }
}

impl<A: Sink, B: Sink, C: Sink> Sink for (A, B, C) {
    #[inline]
    fn record(&mut self, r: &Record) {
        self.0.record(r);
        self.1.record(r);
        self.2.record(r);
    }
    #[inline]
    fn event(&mut self, e: ConnEvent) {
        self.0.event(e);
        self.1.event(e);
        self.2.event(e);
    }
}

/// A sink that ignores everything, for optional slots in a tuple.
impl Sink for () {
    #[inline]
    fn record(&mut self, _r: &Record) {}
}

impl<S: Sink> Sink for Option<S> {
    #[inline]
    fn record(&mut self, r: &Record) {
        if let Some(s) = self {
            s.record(r)
        }
    }
    #[inline]
    fn event(&mut self, e: ConnEvent) {
        if let Some(s) = self {
            s.event(e)
        }
    }
}
