//! The run's figures split three ways, each optional: by stage of `--stages`, by URL (or
//! scenario step), and fast clients against throttled ones. A sink like the others.

use std::sync::Arc;
use std::time::Duration;

use super::Summary;
use super::result::{Breakdown, Part};
use crate::engine::{Record, Sink};

/// More distinct URLs than this get no per-URL split (a long http_load list would cost
/// memory for a table nobody reads).
pub const MAX_REQUEST_PARTS: usize = 200;

/// What to split by; shared by every thread's sink.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// Each stage's label and length.
    pub stages: Vec<(String, Duration)>,
    /// Each distinct request's label; `part_of[template]` indexes it.
    pub requests: Vec<String>,
    pub part_of: Arc<[u16]>,
    /// Split fast clients from throttled ones.
    pub clients: bool,
}

impl Layout {
    /// True when nothing is to be split: no stages, no per-URL parts, no client split.
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty() && self.requests.is_empty() && !self.clients
    }
}

/// One engine thread's split figures: a total-latency summary per stage, per request, per client kind.
pub struct BreakdownSink {
    part_of: Arc<[u16]>,
    stages: Vec<Summary>,
    requests: Vec<Summary>,
    /// [fast, slow], or empty.
    clients: Vec<Summary>,
}

impl BreakdownSink {
    /// Empty parts for what `layout` asks; `max` (the request timeout) caps their histograms.
    pub fn new(layout: &Layout, max: Duration) -> BreakdownSink {
        let parts = |n: usize| (0..n).map(|_| Summary::part(max, 2)).collect::<Vec<_>>();
        BreakdownSink {
            part_of: layout.part_of.clone(),
            stages: parts(layout.stages.len()),
            requests: parts(layout.requests.len()),
            clients: parts(if layout.clients { 2 } else { 0 }),
        }
    }

    /// Adds another thread's parts into these, part by part (both built from the same layout).
    pub fn merge(&mut self, other: &BreakdownSink) {
        for (mine, theirs) in [
            (&mut self.stages, &other.stages),
            (&mut self.requests, &other.requests),
            (&mut self.clients, &other.clients),
        ] {
            for (a, b) in mine.iter_mut().zip(theirs) {
                a.merge(b);
            }
        }
    }

    /// The parts, labelled; `elapsed` is the run's length (a stage's part covers the stage,
    /// or what of it ran).
    pub fn to_breakdown(&self, layout: &Layout, elapsed: Duration) -> Breakdown {
        let mut stage_start = Duration::ZERO;
        let stages = self
            .stages
            .iter()
            .zip(&layout.stages)
            .map(|(s, (label, length))| {
                let ran = elapsed.saturating_sub(stage_start).min(*length);
                stage_start += *length;
                s.to_part(label.clone(), ran.as_secs_f64())
            })
            .collect();
        let secs = elapsed.as_secs_f64();
        let requests = self.requests.iter().zip(&layout.requests).map(|(s, l)| s.to_part(l.clone(), secs)).collect();
        let clients: Vec<Part> =
            self.clients.iter().zip(["fast", "throttled"]).map(|(s, l)| s.to_part(l.to_string(), secs)).collect();
        Breakdown { stages, requests, clients, hosts: Vec::new() }
    }
}

impl Sink for BreakdownSink {
    #[inline]
    fn record(&mut self, r: &Record) {
        if let Some(s) = self.stages.get_mut(r.stage as usize) {
            s.record(r);
        }
        if let Some(&p) = self.part_of.get(r.template as usize)
            && let Some(s) = self.requests.get_mut(p as usize)
        {
            s.record(r);
        }
        if let Some(s) = self.clients.get_mut(r.slow as usize) {
            s.record(r);
        }
    }
}
