//! The result of a bench run as plain data: the stable contract that exporters read and the
//! JSON schema (schema/bench-report.v2.json) describes. Change it only with a schema bump.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The `schema` value written into every bench report.
pub const SCHEMA_ID: &str = "webtune.bench.v2";

/// The layouts `webtune merge` reads: v1 is v2 less fields that all have defaults here.
pub const READABLE_SCHEMAS: [&str; 2] = ["webtune.bench.v1", SCHEMA_ID];

/// One bench run (or several merged) as exported to JSON and kept in the store.
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
    /// Reasons to doubt the figures (client CPU-bound, late starts, Ctrl-C...), one sentence each.
    pub warnings: Vec<String>,
    /// The same figures split by stage, by URL (or scenario step) and by client class (fast,
    /// throttled); each list is empty when the run had no such split.
    #[serde(default)]
    pub breakdown: Breakdown,
    /// When this report merges several runs (`webtune merge`), how many.
    #[serde(default)]
    pub merged_runs: Option<usize>,
    /// Where the client ran and where the server was found (None: a merge of several machines,
    /// or a report from before placements were recorded).
    #[serde(default)]
    pub placement: Option<crate::sys::cpus::Placement>,
    /// The `--fail-if` thresholds judged against this run, in the order given; absent from
    /// the JSON without --fail-if, so such reports are unchanged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<Judged>,
}

/// One pass/fail threshold judged against measured figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    /// The threshold as written, e.g. "p99 > 50ms": the run fails when it holds.
    pub expr: String,
    /// The measured value in `unit` (None when the run measured nothing to judge, which fails).
    pub value: Option<f64>,
    /// "ms", "req/s", "requests", "%" (a share of requests) or "% change".
    pub unit: String,
    /// Whether the run passed: the expression does not hold.
    pub pass: bool,
}

/// A run's figures split three ways; a list is empty when the run had no such split.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Breakdown {
    /// One per stage of `--stages`, in order.
    pub stages: Vec<Part>,
    /// One per distinct URL (or scenario step).
    pub requests: Vec<Part>,
    /// Fast clients, then throttled ones.
    pub clients: Vec<Part>,
    /// One per machine that sent load (`--remote`): "local", then each ssh:// host.
    #[serde(default)]
    pub hosts: Vec<Part>,
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
    /// Successful requests per second over `duration_s`.
    pub requests_per_s: f64,
    /// Count per status code ("other" for codes outside 1-599).
    pub status: BTreeMap<String, u64>,
    /// Non-zero error classes only.
    pub errors: BTreeMap<String, u64>,
    /// None when no request of this slice started late.
    pub late: Option<Late>,
    /// Total latency of the successful requests, milliseconds (None when there were none).
    pub latency_ms: Option<LatencyStats>,
    /// Total latency in microseconds, HdrHistogram V2 compressed, base64.
    pub histogram: Option<String>,
}

/// What was loaded: the URL and method, and what the server said of itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetInfo {
    pub url: String,
    pub method: String,
    /// The Server header of the first response.
    pub server: Option<String>,
    /// Body length of the first successful response (ab's "Document Length").
    pub document_length: Option<u64>,
    /// Why the first TLS failure happened, in words (with what to do about it when the cause
    /// is the certificate); None when no request failed in TLS.
    #[serde(default)]
    pub tls_failure: Option<String>,
}

/// How the run was set up, as the load options asked.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    pub connections: usize,
    pub threads: usize,
    pub keepalive: bool,
    /// The -n limit, when the run was bounded by a request count.
    pub requests: Option<u64>,
    /// The -d limit in seconds, when the run was bounded by time.
    pub duration_s: Option<f64>,
    /// Seconds a request may take, from its start to its last byte, before it fails.
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
    /// Each client kept its own cookie jar (--cookies).
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
    /// HTTP/2 (--h2): concurrent streams per connection; None for HTTP/1.1.
    #[serde(default)]
    pub http2_streams: Option<u32>,
    /// --access-log: what the logs held, what was replayed and what left out, and their rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_log: Option<super::log_summary::LogSummary>,
}

fn closed() -> String {
    "closed".into()
}

/// The run's measured figures: counts, rates, bytes, connections and latency.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchResult {
    /// Wall time the load ran, seconds (the basis of every per-second rate).
    pub duration_s: f64,
    /// Attempts that finished, successful or not.
    pub requests: u64,
    /// Requests that got a complete response (any status).
    pub succeeded: u64,
    /// Requests that got no complete response: the sum of `errors`.
    pub failed: u64,
    /// Successful requests per second.
    pub requests_per_s: f64,
    /// Responses whose body length differed from the first one; not failures. Not counted
    /// (0) when the run sends more than one kind of request (--urls, --scenario).
    pub length_differed: u64,
    /// Requests still unanswered when a timed (or interrupted) run ended: in no other figure.
    pub in_flight_at_end: u64,
    /// Count per status code ("other" for codes outside 1-599).
    pub status: BTreeMap<String, u64>,
    /// Count per error class (every class listed, zeros included).
    pub errors: BTreeMap<String, u64>,
    pub bytes: Bytes,
    pub connections: Connections,
    /// Latency per phase, milliseconds.
    pub latency_ms: PhaseLatency,
    /// Open loop: requests scheduled by the end of the run (started or not).
    #[serde(default)]
    pub scheduled: Option<u64>,
    /// Open loop: requests due by the end that were never sent, every connection being busy
    /// (the rate outran what -c connections carried); part of `in_flight_at_end`.
    #[serde(default)]
    pub unsent: Option<u64>,
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

/// What coalescing wake-ups cost: responses that sat in the client before being read.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Coalesced {
    /// Responses read after a coalescing pause.
    pub responses: u64,
    /// Their mean wait from arrival (the kernel's receive timestamp) to being read: how much
    /// later than it could have, on average, their client sent its next request.
    pub mean_wait_ms: f64,
}

impl Coalesced {
    /// From how many responses waited and their summed wait in ms (mean 0 when none did).
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

/// Requests that started after their scheduled time, waiting for a free connection.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Late {
    pub requests: u64,
    /// How long they waited for a connection.
    pub mean_ms: f64,
    /// The longest of those waits.
    pub max_ms: f64,
}

/// HdrHistogram V2 compressed, base64, values in microseconds (`null` when empty).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Histograms {
    pub connect: Option<String>,
    pub first_byte: Option<String>,
    pub total: Option<String>,
}

/// Response bytes received, failed requests' partial responses included.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Bytes {
    /// Status lines, headers (interim 1xx ones too) and chunked framing.
    pub headers: u64,
    pub body: u64,
    pub total: u64,
    /// `total` over the run's duration, bytes per second.
    pub per_s: f64,
}

/// Connections the client opened, and kept-alive ones the server closed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Connections {
    pub opened: u64,
    /// Kept-alive connections the server closed between requests (retried, not failures).
    pub server_closed_idle: u64,
}

/// Latency per phase, all measured from the request's start (its connect, when it opened one).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseLatency {
    /// Connection set-up, over every connection opened, failed requests' too (None: none opened).
    pub connect: Option<LatencyStats>,
    /// To the first response byte, successful requests only (None: none succeeded).
    pub first_byte: Option<LatencyStats>,
    /// To the last response byte, successful requests only (None: none succeeded).
    pub total: Option<LatencyStats>,
}

/// A latency distribution in milliseconds: extremes, mean, deviation and percentiles.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LatencyStats {
    /// Values measured: requests (connections, for `connect`).
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

/// The CPU webtune itself used during the load, to tell a client-bound run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientCpu {
    /// User-mode CPU seconds of the whole webtune process during the load.
    pub user_s: f64,
    /// Kernel-mode CPU seconds of the whole webtune process during the load.
    pub sys_s: f64,
    /// CPU time over wall time, as a share of the cores the engine could use.
    pub percent_of_available: f64,
    /// Engine threads or cores this process may run on, whichever is fewer.
    pub cores_available: usize,
    /// CPU per successful request, in microseconds.
    pub us_per_request: Option<f64>,
    /// CPU time over wall time, as a share of the machine: every core the client and the server
    /// may use (`placement`). None in a merge of several machines.
    #[serde(default)]
    pub percent_of_machine: Option<f64>,
}

/// Spread of a per-second rate over the run (requests/s).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RateStats {
    /// How many one-second samples.
    pub samples: usize,
    pub min: f64,
    pub mean: f64,
    pub max: f64,
    pub stdev: f64,
    /// The change across the run that a straight line fitted to the per-second rates shows,
    /// % of the mean (positive: rising); None under three samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trend_pct: Option<f64>,
    /// The fitted slope over its standard error: beyond about 3 the trend is not noise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trend_t: Option<f64>,
    /// Each second's successful replies, in order: the report's throughput over time (empty
    /// in a merge, and in reports stored before it was kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_second: Vec<f64>,
    /// Each second's failed requests, beside `per_second`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_per_second: Vec<f64>,
}

/// The least-squares slope of `y` against 0, 1, 2... and its t statistic.
fn slope(y: &[f64]) -> Option<(f64, f64)> {
    let n = y.len();
    if n < 3 {
        return None;
    }
    let xm = (n - 1) as f64 / 2.0;
    let ym = y.iter().sum::<f64>() / n as f64;
    let sxx: f64 = (0..n).map(|i| (i as f64 - xm).powi(2)).sum();
    let b = (0..n).map(|i| (i as f64 - xm) * (y[i] - ym)).sum::<f64>() / sxx;
    let resid: f64 = (0..n).map(|i| (y[i] - ym - b * (i as f64 - xm)).powi(2)).sum();
    let se = (resid / (n - 2) as f64 / sxx).sqrt();
    let t = if se > 0.0 {
        (b / se).clamp(-1e6, 1e6)
    } else if b == 0.0 {
        0.0
    } else {
        1e6_f64.copysign(b)
    };
    Some((b, t))
}

impl RateStats {
    /// Min, mean, max and population deviation of the samples; None when there are none.
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
            trend_pct: slope(samples).filter(|_| mean > 0.0).map(|(b, _)| b * (n - 1.0) / mean * 100.0),
            trend_t: slope(samples).map(|(_, t)| t),
            per_second: samples.to_vec(),
            failed_per_second: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Coalesced;

    #[test]
    fn a_rising_rate_shows_a_trend_and_a_steady_one_none() {
        let r = super::RateStats::from_samples(&[100.0, 110.0, 120.0, 130.0, 140.0]).unwrap();
        assert!((r.trend_pct.unwrap() - 33.33).abs() < 0.01, "{r:?}");
        assert!(r.trend_t.unwrap() > 3.0);
        let r = super::RateStats::from_samples(&[100.0, 103.0, 98.0, 101.0, 99.0, 102.0]).unwrap();
        assert!(r.trend_t.unwrap().abs() < 3.0, "{r:?}");
        assert_eq!(super::RateStats::from_samples(&[100.0, 101.0]).unwrap().trend_pct, None);
    }

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
