//! The result of a bench run as plain data: the stable contract that exporters read and the
//! JSON schema (schema/bench-report.v1.json) describes. Change it only with a schema bump.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub const SCHEMA_ID: &str = "webtune.bench.v1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchReport {
    /// Always SCHEMA_ID for this layout.
    pub schema: String,
    pub webtune_version: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub target: TargetInfo,
    pub options: Options,
    /// Ctrl-C ended the run early; the figures cover what finished.
    pub interrupted: bool,
    pub result: BenchResult,
    /// Successful requests per second, sampled each second of the run (httperf's reply rate).
    pub reply_rate: Option<RateStats>,
    pub client_cpu: ClientCpu,
    pub warnings: Vec<String>,
    /// The same figures split by stage, by URL (or scenario step) and by client class (fast,
    /// throttled); each list is empty when the run had no such split.
    #[serde(default)]
    pub breakdown: Breakdown,
    /// When this report merges several runs (`webtune merge`), how many.
    #[serde(default)]
    pub merged_runs: Option<usize>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Breakdown {
    pub stages: Vec<Part>,
    pub requests: Vec<Part>,
    pub clients: Vec<Part>,
}

/// One slice of a run's requests.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Part {
    pub label: String,
    /// Seconds this slice covers (a stage's length; the run's for other splits).
    pub duration_s: f64,
    pub requests: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub requests_per_s: f64,
    pub status: BTreeMap<String, u64>,
    /// Non-zero error classes only.
    pub errors: BTreeMap<String, u64>,
    pub late: Option<Late>,
    pub latency_ms: Option<LatencyStats>,
    /// Total latency in microseconds, HdrHistogram V2 compressed, base64.
    pub histogram: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetInfo {
    pub url: String,
    pub method: String,
    /// The Server header of the first response.
    pub server: Option<String>,
    /// Body length of the first successful response (ab's "Document Length").
    pub document_length: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    pub connections: usize,
    pub threads: usize,
    pub keepalive: bool,
    /// The -n limit, when the run was bounded by a request count.
    pub requests: Option<u64>,
    /// The -d limit in seconds, when the run was bounded by time.
    pub duration_s: Option<f64>,
    pub timeout_s: f64,
    /// "closed" (a client sends when answered) or "open" (requests start on schedule).
    #[serde(default = "closed")]
    pub pacing: String,
    /// Open loop: the constant rate asked for (requests/s).
    #[serde(default)]
    pub rate: Option<f64>,
    /// Open loop: "uniform" or "poisson".
    #[serde(default)]
    pub arrival: Option<String>,
    /// --stages as given.
    #[serde(default)]
    pub stages: Option<String>,
    /// --urls or --scenario: the file.
    #[serde(default)]
    pub requests_file: Option<String>,
    /// "single", "sequential", "random" or "scenario".
    #[serde(default)]
    pub order: Option<String>,
    #[serde(default)]
    pub cookies: bool,
    /// Bandwidth cap of throttled clients, bytes/s.
    #[serde(default)]
    pub throttle_bytes_per_s: Option<f64>,
    /// Share of clients throttled (0-1).
    #[serde(default)]
    pub slow_share: Option<f64>,
    /// Seed of random URL order and Poisson arrivals (--seed repeats a run's choices).
    #[serde(default)]
    pub seed: u64,
    /// The run could coalesce wake-ups (closed loop, plain keep-alive TCP, enough clients per
    /// thread); whether it did and what it cost is `result.coalesced`.
    #[serde(default)]
    pub coalesce: bool,
}

fn closed() -> String {
    "closed".into()
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchResult {
    pub duration_s: f64,
    /// Attempts that finished, successful or not.
    pub requests: u64,
    /// Requests that got a complete response (any status).
    pub succeeded: u64,
    pub failed: u64,
    /// Successful requests per second.
    pub requests_per_s: f64,
    /// Responses whose body length differed from the first one; not failures.
    pub length_differed: u64,
    /// Requests still unanswered when a timed (or interrupted) run ended: in no other figure.
    pub in_flight_at_end: u64,
    /// Count per status code ("other" for codes outside 1-599).
    pub status: BTreeMap<String, u64>,
    /// Count per error class (every class listed, zeros included).
    pub errors: BTreeMap<String, u64>,
    pub bytes: Bytes,
    pub connections: Connections,
    pub latency_ms: PhaseLatency,
    /// Open loop: requests scheduled by the end of the run (started or not).
    #[serde(default)]
    pub scheduled: Option<u64>,
    /// Requests that started after their scheduled time because all -c connections were busy.
    #[serde(default)]
    pub late: Option<Late>,
    /// Responses collected after coalescing pauses and how long they waited in the client
    /// (None: the run could not coalesce; see `options.coalesce`).
    #[serde(default)]
    pub coalesced: Option<Coalesced>,
    /// The latency histograms, exact, for `webtune merge` and the store.
    #[serde(default)]
    pub histograms: Option<Histograms>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Coalesced {
    pub responses: u64,
    /// Their mean wait from arrival (the kernel's receive timestamp) to being read: how much
    /// later than it could have, on average, their client sent its next request.
    pub mean_wait_ms: f64,
}

impl Coalesced {
    pub fn new(responses: u64, total_wait_ms: f64) -> Coalesced {
        Coalesced { responses, mean_wait_ms: if responses == 0 { 0.0 } else { total_wait_ms / responses as f64 } }
    }

    /// The union of several runs' (None when none could coalesce).
    pub fn merged<'a>(parts: impl Iterator<Item = Option<&'a Coalesced>>) -> Option<Coalesced> {
        parts.flatten().fold(None, |acc: Option<Coalesced>, c| {
            let (n, total) = acc.map_or((0, 0.0), |a| (a.responses, a.mean_wait_ms * a.responses as f64));
            Some(Coalesced::new(n + c.responses, total + c.mean_wait_ms * c.responses as f64))
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Late {
    pub requests: u64,
    /// How long they waited for a connection.
    pub mean_ms: f64,
    pub max_ms: f64,
}

/// HdrHistogram V2 compressed, base64, values in microseconds (`null` when empty).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Histograms {
    pub connect: Option<String>,
    pub first_byte: Option<String>,
    pub total: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Bytes {
    pub headers: u64,
    pub body: u64,
    pub total: u64,
    pub per_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Connections {
    pub opened: u64,
    /// Kept-alive connections the server closed between requests (retried, not failures).
    pub server_closed_idle: u64,
}

/// Latency per phase, all measured from the request's start (its connect, when it opened one).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseLatency {
    pub connect: Option<LatencyStats>,
    pub first_byte: Option<LatencyStats>,
    pub total: Option<LatencyStats>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LatencyStats {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientCpu {
    pub user_s: f64,
    pub sys_s: f64,
    /// CPU time over wall time, as a share of the cores the engine could use.
    pub percent_of_available: f64,
    pub cores_available: usize,
    /// CPU per successful request, in microseconds.
    pub us_per_request: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RateStats {
    pub samples: usize,
    pub min: f64,
    pub mean: f64,
    pub max: f64,
    pub stdev: f64,
}

impl RateStats {
    pub fn from_samples(samples: &[f64]) -> Option<RateStats> {
        if samples.is_empty() {
            return None;
        }
        let n = samples.len() as f64;
        let mean = samples.iter().sum::<f64>() / n;
        let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        Some(RateStats {
            samples: samples.len(),
            min: samples.iter().cloned().fold(f64::INFINITY, f64::min),
            mean,
            max: samples.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
            stdev: var.sqrt(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Coalesced;

    #[test]
    fn merged_coalescing_weights_the_waits_by_responses() {
        let a = Coalesced::new(100, 20.0);
        let b = Coalesced::new(300, 120.0);
        let m = Coalesced::merged([Some(&a), None, Some(&b)].into_iter()).unwrap();
        assert_eq!(m.responses, 400);
        assert!((m.mean_wait_ms - 0.35).abs() < 1e-12, "{}", m.mean_wait_ms);
        assert!(Coalesced::merged([None, None].into_iter()).is_none());
        assert_eq!(Coalesced::new(0, 0.0).mean_wait_ms, 0.0);
    }
}
