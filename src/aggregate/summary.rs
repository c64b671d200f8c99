//! The run's figures: latency histograms and counters, one per engine thread, merged at the
//! end into a `BenchResult` that the exporters read.

use std::time::Duration;

use hdrhistogram::Histogram;

use super::result::{BenchResult, Bytes, Connections, LatencyStats, PhaseLatency};
use crate::engine::{ConnEvent, ErrorClass, Record, Sink};

/// Status codes are counted in a flat array indexed by code; anything else lands in 0.
const STATUS_SLOTS: usize = 600;

pub struct Summary {
    /// Microseconds from request start to last byte, successful requests only.
    pub total: Histogram<u64>,
    pub first_byte: Histogram<u64>,
    pub connect: Histogram<u64>,
    pub ok: u64,
    pub errors: [u64; ErrorClass::COUNT],
    pub status: Box<[u64; STATUS_SLOTS]>,
    pub header_bytes: u64,
    pub body_bytes: u64,
    pub length_differs: u64,
    pub opened: u64,
    pub server_closed_idle: u64,
}

impl Summary {
    /// Histograms track 1 µs up to `max` (the request timeout) with 3 significant digits;
    /// larger values are clamped to `max`.
    pub fn new(max: Duration) -> Summary {
        let high = (max.as_micros() as u64).max(1_000);
        let h = || Histogram::new_with_bounds(1, high, 3).expect("valid histogram bounds");
        Summary {
            total: h(),
            first_byte: h(),
            connect: h(),
            ok: 0,
            errors: [0; ErrorClass::COUNT],
            status: Box::new([0; STATUS_SLOTS]),
            header_bytes: 0,
            body_bytes: 0,
            length_differs: 0,
            opened: 0,
            server_closed_idle: 0,
        }
    }

    pub fn merge(&mut self, other: &Summary) {
        self.total.add(&other.total).expect("same bounds");
        self.first_byte.add(&other.first_byte).expect("same bounds");
        self.connect.add(&other.connect).expect("same bounds");
        self.ok += other.ok;
        for (a, b) in self.errors.iter_mut().zip(other.errors.iter()) {
            *a += b;
        }
        for (a, b) in self.status.iter_mut().zip(other.status.iter()) {
            *a += b;
        }
        self.header_bytes += other.header_bytes;
        self.body_bytes += other.body_bytes;
        self.length_differs += other.length_differs;
        self.opened += other.opened;
        self.server_closed_idle += other.server_closed_idle;
    }

    pub fn failed(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// Turns the merged figures into the stored, exported result.
    pub fn to_result(&self, elapsed: Duration, in_flight_at_end: u64) -> BenchResult {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let failed = self.failed();
        let status = self
            .status
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(code, n)| (if code == 0 { "other".to_string() } else { code.to_string() }, *n))
            .collect();
        let errors = ErrorClass::ALL.iter().map(|c| (c.name().to_string(), self.errors[*c as usize])).collect();
        BenchResult {
            duration_s: secs,
            requests: self.ok + failed,
            succeeded: self.ok,
            failed,
            requests_per_s: self.ok as f64 / secs,
            length_differed: self.length_differs,
            in_flight_at_end,
            status,
            errors,
            bytes: Bytes {
                headers: self.header_bytes,
                body: self.body_bytes,
                total: self.header_bytes + self.body_bytes,
                per_s: (self.header_bytes + self.body_bytes) as f64 / secs,
            },
            connections: Connections { opened: self.opened, server_closed_idle: self.server_closed_idle },
            latency_ms: PhaseLatency {
                connect: stats(&self.connect),
                first_byte: stats(&self.first_byte),
                total: stats(&self.total),
            },
        }
    }
}

fn stats(h: &Histogram<u64>) -> Option<LatencyStats> {
    if h.is_empty() {
        return None;
    }
    let ms = |us: u64| us as f64 / 1000.0;
    Some(LatencyStats {
        count: h.len(),
        min: ms(h.min()),
        mean: h.mean() / 1000.0,
        stdev: h.stdev() / 1000.0,
        p50: ms(h.value_at_quantile(0.50)),
        p75: ms(h.value_at_quantile(0.75)),
        p90: ms(h.value_at_quantile(0.90)),
        p99: ms(h.value_at_quantile(0.99)),
        p999: ms(h.value_at_quantile(0.999)),
        max: ms(h.max()),
    })
}

impl Sink for Summary {
    #[inline]
    fn record(&mut self, r: &Record) {
        match r.error {
            None => {
                self.ok += 1;
                self.total.saturating_record(r.total_us);
                self.first_byte.saturating_record(r.first_byte_us);
                let code = r.status as usize;
                self.status[if code < STATUS_SLOTS { code } else { 0 }] += 1;
                self.length_differs += r.length_differs as u64;
            }
            Some(class) => self.errors[class as usize] += 1,
        }
        if let Some(c) = r.connect_us {
            self.connect.saturating_record(c);
        }
        self.header_bytes += r.header_bytes;
        self.body_bytes += r.body_bytes;
    }

    #[inline]
    fn event(&mut self, e: ConnEvent) {
        match e {
            ConnEvent::Opened => self.opened += 1,
            ConnEvent::ServerClosedIdle => self.server_closed_idle += 1,
        }
    }
}
