//! Per-interval latency histograms for the HdrHistogram log. Each thread fills the histogram of
//! the current interval and hands it over when the next interval begins, so memory stays flat
//! however long the run.

use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::engine::{Record, Sink};

/// One finished interval from one thread: (interval index since the run start, histogram).
pub type IntervalMsg = (u64, Histogram<u64>);

/// One engine thread's sink for the log: successful requests' latency, one histogram per interval.
pub struct IntervalTap {
    origin: Instant,
    interval: Duration,
    index: u64,
    hist: Histogram<u64>,
    out: Sender<IntervalMsg>,
}

impl IntervalTap {
    /// Intervals count from `origin`; each finished one is sent to `out`. `max_us` caps latency.
    pub fn new(origin: Instant, interval: Duration, max_us: u64, out: Sender<IntervalMsg>) -> IntervalTap {
        IntervalTap { origin, interval, index: 0, hist: new_histogram(max_us), out }
    }

    /// Hands over the last, partial interval.
    pub fn finish(mut self) {
        self.hand_over(self.index);
    }

    fn hand_over(&mut self, next: u64) {
        if !self.hist.is_empty() {
            let fresh = Histogram::new_from(&self.hist);
            let full = std::mem::replace(&mut self.hist, fresh);
            // The writer may have gone (it failed to write); the summary still has the data.
            let _ = self.out.send((self.index, full));
        }
        self.index = next;
    }
}

/// An interval's histogram: 1 µs up to `max_us` (at least 1 ms), 3 significant digits.
pub fn new_histogram(max_us: u64) -> Histogram<u64> {
    Histogram::new_with_bounds(1, max_us.max(1_000), 3).expect("valid histogram bounds")
}

impl Sink for IntervalTap {
    #[inline]
    fn record(&mut self, r: &Record) {
        if !r.is_ok() {
            return;
        }
        let end = r.start + Duration::from_micros(r.total_us);
        let index = (end.saturating_duration_since(self.origin).as_nanos() / self.interval.as_nanos()) as u64;
        if index > self.index {
            self.hand_over(index);
        }
        self.hist.saturating_record(r.total_us);
    }
}
