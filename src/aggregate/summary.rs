//! The run's figures: latency histograms and counters, one per engine thread, merged at the
//! end into a `BenchResult` that the exporters read.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use super::codec;
use super::result::{BenchResult, Bytes, Connections, Histograms, Late, LatencyStats, Part, PhaseLatency};
use crate::engine::{ConnEvent, ErrorClass, Record, Sink};

/// Status codes are counted in a flat array indexed by code; anything else lands in 0.
const STATUS_SLOTS: usize = 600;

/// One engine thread's latency histograms and counters (or one breakdown part's).
pub struct Summary {
    /// Microseconds from request start to last byte, successful requests only.
    pub total: Histogram<u64>,
    /// None in the summaries of a breakdown's parts (they keep only the total).
    pub first_byte: Option<Histogram<u64>>,
    pub connect: Option<Histogram<u64>>,
    pub ok: u64,
    pub errors: [u64; ErrorClass::COUNT],
    pub status: Box<[u64; STATUS_SLOTS]>,
    pub header_bytes: u64,
    pub body_bytes: u64,
    pub length_differs: u64,
    pub opened: u64,
    pub server_closed_idle: u64,
    /// Requests that waited for a free connection past their scheduled start.
    pub late: u64,
    pub late_sum_us: u64,
    pub late_max_us: u64,
}

impl Summary {
    /// Histograms track 1 µs up to `max` (the request timeout) with 3 significant digits;
    /// larger values are clamped to `max`.
    pub fn new(max: Duration) -> Summary {
        let mut s = Summary::part(max, 3);
        s.first_byte = Some(Histogram::new_from(&s.total));
        s.connect = Some(Histogram::new_from(&s.total));
        s
    }

    /// A breakdown part's summary: the total latency only, with `digits` significant digits
    /// (parts may be many: 2 digits keep each at a few KiB).
    pub fn part(max: Duration, digits: u8) -> Summary {
        let high = (max.as_micros() as u64).max(1_000);
        Summary {
            total: Histogram::new_with_bounds(1, high, digits).expect("valid histogram bounds"),
            first_byte: None,
            connect: None,
            ok: 0,
            errors: [0; ErrorClass::COUNT],
            status: Box::new([0; STATUS_SLOTS]),
            header_bytes: 0,
            body_bytes: 0,
            length_differs: 0,
            opened: 0,
            server_closed_idle: 0,
            late: 0,
            late_sum_us: 0,
            late_max_us: 0,
        }
    }

    /// Adds another thread's histograms and counters into these.
    pub fn merge(&mut self, other: &Summary) {
        add(&mut self.total, &other.total);
        for (mine, theirs) in [(&mut self.first_byte, &other.first_byte), (&mut self.connect, &other.connect)] {
            match (mine, theirs) {
                (Some(a), Some(b)) => add(a, b),
                (mine @ None, Some(b)) => *mine = Some(b.clone()),
                _ => {}
            }
        }
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
        self.late += other.late;
        self.late_sum_us += other.late_sum_us;
        self.late_max_us = self.late_max_us.max(other.late_max_us);
    }

    /// Requests that failed, whatever the error class.
    pub fn failed(&self) -> u64 {
        self.errors.iter().sum()
    }

    fn status_counts(&self) -> BTreeMap<String, u64> {
        self.status
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(code, n)| (if code == 0 { "other".to_string() } else { code.to_string() }, *n))
            .collect()
    }

    fn late_stats(&self) -> Option<Late> {
        (self.late > 0).then(|| Late {
            requests: self.late,
            mean_ms: self.late_sum_us as f64 / self.late as f64 / 1000.0,
            max_ms: self.late_max_us as f64 / 1000.0,
        })
    }

    /// One part of a breakdown, over `secs` seconds.
    pub fn to_part(&self, label: String, secs: f64) -> Part {
        let failed = self.failed();
        Part {
            label,
            duration_s: secs,
            requests: self.ok + failed,
            succeeded: self.ok,
            failed,
            requests_per_s: self.ok as f64 / secs.max(1e-9),
            status: self.status_counts(),
            errors: ErrorClass::ALL
                .iter()
                .filter(|c| self.errors[**c as usize] > 0)
                .map(|c| (c.name().to_string(), self.errors[*c as usize]))
                .collect(),
            late: self.late_stats(),
            latency_ms: stats(&self.total),
            histogram: codec::encode(&self.total),
        }
    }

    /// Rebuilds a part's summary from its JSON (to merge runs).
    pub fn from_part(p: &Part, max: Duration) -> anyhow::Result<Summary> {
        let mut s = Summary::part(max, 2);
        if let Some(h) = &p.histogram {
            s.total = codec::decode(h)?;
        }
        s.restore_counts(p.succeeded, &p.status, &p.errors, p.late.as_ref());
        Ok(s)
    }

    /// Rebuilds the summary of a whole run from its JSON (to merge runs): exact, since the
    /// histograms travel with the counts.
    pub fn from_result(r: &BenchResult, max: Duration) -> anyhow::Result<Summary> {
        let mut s = Summary::new(max);
        let hist = r.histograms.as_ref().ok_or_else(|| anyhow::anyhow!("it carries no histograms"))?;
        for (slot, data) in [
            (&mut s.total, &hist.total),
            (s.first_byte.as_mut().expect("full summary"), &hist.first_byte),
            (s.connect.as_mut().expect("full summary"), &hist.connect),
        ] {
            if let Some(data) = data {
                *slot = codec::decode(data)?;
            }
        }
        s.restore_counts(r.succeeded, &r.status, &r.errors, r.late.as_ref());
        s.header_bytes = r.bytes.headers;
        s.body_bytes = r.bytes.body;
        s.length_differs = r.length_differed;
        s.opened = r.connections.opened;
        s.server_closed_idle = r.connections.server_closed_idle;
        Ok(s)
    }

    fn restore_counts(
        &mut self,
        ok: u64,
        status: &BTreeMap<String, u64>,
        errors: &BTreeMap<String, u64>,
        late: Option<&Late>,
    ) {
        self.ok = ok;
        for (code, n) in status {
            let slot = code.parse::<usize>().ok().filter(|&c| c < STATUS_SLOTS).unwrap_or(0);
            self.status[slot] += n;
        }
        for class in ErrorClass::ALL {
            self.errors[class as usize] = errors.get(class.name()).copied().unwrap_or(0);
        }
        if let Some(l) = late {
            self.late = l.requests;
            self.late_sum_us = (l.mean_ms * 1000.0 * l.requests as f64).round() as u64;
            self.late_max_us = (l.max_ms * 1000.0).round() as u64;
        }
    }

    /// Turns the merged figures into the stored, exported result.
    pub fn to_result(&self, elapsed: Duration, in_flight_at_end: u64) -> BenchResult {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let failed = self.failed();
        let status = self.status_counts();
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
                connect: self.connect.as_ref().and_then(stats),
                first_byte: self.first_byte.as_ref().and_then(stats),
                total: stats(&self.total),
            },
            scheduled: None,
            unsent: None,
            coalesced: None,
            late: self.late_stats(),
            histograms: Some(Histograms {
                connect: self.connect.as_ref().and_then(codec::encode),
                first_byte: self.first_byte.as_ref().and_then(codec::encode),
                total: codec::encode(&self.total),
            }),
        }
    }
}

/// Adds `b` into `a`; a value beyond `a`'s range is clamped to its highest (as when recorded).
fn add(a: &mut Histogram<u64>, b: &Histogram<u64>) {
    if a.add(b).is_err() {
        for v in b.iter_recorded() {
            let _ = a.record_n(v.value_iterated_to().min(a.high()), v.count_at_value());
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
                if let Some(h) = &mut self.first_byte {
                    h.saturating_record(r.first_byte_us);
                }
                let code = r.status as usize;
                self.status[if code < STATUS_SLOTS { code } else { 0 }] += 1;
                self.length_differs += r.length_differs as u64;
            }
            Some(class) => self.errors[class as usize] += 1,
        }
        if let (Some(c), Some(h)) = (r.connect_us, &mut self.connect) {
            h.saturating_record(c);
        }
        if r.queued_us > 0 {
            self.late += 1;
            self.late_sum_us += r.queued_us;
            self.late_max_us = self.late_max_us.max(r.queued_us);
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
