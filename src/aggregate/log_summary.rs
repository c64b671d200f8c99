//! What an access log held and what of it a run replays: the account a report gives of a
//! log-driven run (bench/access_log reads the logs and fills it in).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What the logs held and what of it is replayed: the report's account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogSummary {
    pub files: Vec<String>,
    /// The format the lines were read with ("combined" or the format string).
    pub format: String,
    /// Lines read (blank lines not counted).
    pub lines: u64,
    /// Lines that did not read as the format (or had no usable request target or time).
    pub malformed: u64,
    /// Requests replayed: GET or HEAD answered 2xx or 3xx.
    pub replayed: u64,
    /// Requests left out for their method, by method.
    pub left_out_methods: BTreeMap<String, u64>,
    /// GET or HEAD requests left out for their status (not 2xx or 3xx).
    pub left_out_status: u64,
    /// Requests left out because the workload keeps only the most frequent distinct ones.
    pub left_out_rare: u64,
    /// Distinct requests (method and target) in the workload.
    pub distinct: u64,
    /// Seconds from the first replayed request to the last (None without times).
    pub span_s: Option<f64>,
    /// The replayed requests' mean arrival rate, requests/s.
    pub mean_rate: Option<f64>,
    /// The 60 s with the most replayed requests: what to size for.
    pub busiest_minute: Option<BusiestMinute>,
    /// Times are to the whole second: arrivals within a second are spread at random.
    pub whole_seconds: bool,
}

/// The 60 s of the log with the most replayed requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BusiestMinute {
    /// Its start, UTC, RFC 3339.
    pub start: String,
    pub requests: u64,
    /// requests / 60.
    pub rate: f64,
}

impl LogSummary {
    /// "replaying 48,112 of 50,000 requests: 1,204 POST, 684 non-2xx/3xx left out; 3
    /// malformed lines skipped".
    pub fn account(&self) -> String {
        let requests = self.lines - self.malformed;
        let mut out = format!("replaying {} of {} requests", grouped(self.replayed), grouped(requests));
        let mut left: Vec<String> = self.left_out_methods.iter().map(|(m, n)| format!("{} {m}", grouped(*n))).collect();
        if self.left_out_status > 0 {
            left.push(format!("{} non-2xx/3xx", grouped(self.left_out_status)));
        }
        if self.left_out_rare > 0 {
            left.push(format!("{} of rare paths beyond the {} kept", grouped(self.left_out_rare), self.distinct));
        }
        if !left.is_empty() {
            out.push_str(&format!(": {} left out", left.join(", ")));
        }
        if self.malformed > 0 {
            let s = if self.malformed == 1 { "" } else { "s" };
            out.push_str(&format!("; {} malformed line{s} skipped", grouped(self.malformed)));
        }
        out
    }

    /// "mean 13.4/s over 1h 2m; busiest minute 2026-11-20T14:03:00Z 70.2/s (5.2x the mean)".
    pub fn rates(&self) -> Option<String> {
        let (rate, span) = (self.mean_rate?, self.span_s?);
        let mut out = format!(
            "mean {rate:.2}/s over {}",
            humantime::format_duration(std::time::Duration::from_secs(span.round() as u64))
        );
        if let Some(b) = &self.busiest_minute {
            out.push_str(&format!(
                "; busiest minute from {} at {:.2}/s ({:.1}x the mean)",
                b.start,
                b.rate,
                b.rate / rate
            ));
        }
        Some(out)
    }
}

/// 48112 -> "48,112".
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
