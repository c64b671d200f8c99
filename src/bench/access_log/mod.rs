//! A server's access logs as a workload: the GET and HEAD requests it answered with 2xx or
//! 3xx, weighted by how often each was asked, with the log's own arrival times for its rate
//! and its gaps. What is not replayed (other methods, other statuses, lines that do not read)
//! is counted, so the report can say exactly what was left out. Logs may be gzip-compressed;
//! several (rotated) logs are read as one.

pub mod format;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::aggregate::log_summary::{BusiestMinute, LogSummary, grouped};
pub use format::LogFormat;

use crate::input::InputError;

/// The most lines the logs may hold together: their arrival times are kept (8 bytes each).
pub const MAX_LINES: u64 = 10_000_000;
/// The most bytes the logs may hold together, after decompression.
pub const MAX_BYTES: u64 = 4 << 30;
/// A longer line is not a log line: counted as malformed, not read whole.
const MAX_LINE: usize = 16 * 1024;
/// Distinct requests counted before later new ones are left out as rare (memory stays bounded
/// when every request has its own query string).
const MAX_DISTINCT: usize = 1_000_000;
/// Distinct methods named in the report; more are counted as "other".
const MAX_METHODS: usize = 32;

/// One request of the workload and how many times the log has it.
#[derive(Debug, Clone, PartialEq)]
pub struct Logged {
    pub method: String,
    /// Path and query, as logged (origin form).
    pub target: String,
    pub count: u64,
}

/// Logs read and tallied.
#[derive(Debug, PartialEq)]
pub struct AccessLog {
    /// The workload, most frequent first.
    pub requests: Vec<Logged>,
    pub summary: LogSummary,
    /// Arrival times of the replayable requests, seconds since the first, sorted.
    times: Vec<f64>,
}

impl AccessLog {
    /// Reads the logs at `paths` (plain or gzip) in `format` (None: combined).
    pub fn read(paths: &[PathBuf], format: Option<&str>, max_requests: usize) -> Result<AccessLog, InputError> {
        let format = LogFormat::parse(format.unwrap_or("combined"))?;
        let mut tally = Tally::default();
        let mut budget = Budget { lines: MAX_LINES, bytes: MAX_BYTES };
        for path in paths {
            read_file(path, &format, &mut tally, &mut budget)?;
        }
        tally.finish(paths, &format, max_requests)
    }

    /// The one line the report gives: what is replayed and what left out.
    pub fn account(&self) -> String {
        self.summary.account()
    }

    /// The gaps between arrivals in units of the mean gap (their mean is 1), in the log's
    /// order; whole-second times are spread uniformly at random within their second (`seed`),
    /// which is what a Poisson stream holding that many arrivals in that second would do.
    pub fn unit_gaps(&self, seed: u64) -> Result<Arc<[f32]>, InputError> {
        let rate = self.summary.mean_rate.filter(|_| self.times.len() >= 2).ok_or_else(|| {
            InputError("--arrival log: the log has fewer than 2 timed requests, or they span no time".into())
        })?;
        let mut at = self.times.clone();
        if self.summary.whole_seconds {
            let mut rng = fastrand::Rng::with_seed(seed);
            at.iter_mut().for_each(|t| *t += rng.f64());
            at.sort_by(f64::total_cmp);
        }
        Ok(at.windows(2).map(|w| ((w[1] - w[0]) * rate) as f32).collect())
    }
}

struct Budget {
    lines: u64,
    bytes: u64,
}

#[derive(Default)]
struct Tally {
    lines: u64,
    malformed: u64,
    counts: HashMap<(String, String), u64>,
    rare: u64,
    methods: BTreeMap<String, u64>,
    status: u64,
    /// Absolute arrival times of the replayable requests.
    times: Vec<f64>,
    /// Some line had a time finer than a second.
    fine_times: bool,
    /// The format has a time field but a replayable line had none.
    untimed: u64,
}

/// Opens a log: a regular file only (a FIFO would block the open, a device never end).
fn open(path: &Path) -> Result<Box<dyn Read>, InputError> {
    use std::os::unix::fs::OpenOptionsExt;
    let cannot = |e: std::io::Error| InputError(format!("cannot read access log {}: {e}", path.display()));
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(cannot)?;
    if !file.metadata().map_err(cannot)?.is_file() {
        return Err(InputError(format!("cannot read access log {}: not a regular file", path.display())));
    }
    let mut reader = BufReader::new(file);
    let gzip = reader.fill_buf().map_err(cannot)?.starts_with(&[0x1f, 0x8b]);
    Ok(if gzip { Box::new(flate2::bufread::MultiGzDecoder::new(reader)) } else { Box::new(reader) })
}

fn read_file(path: &Path, format: &LogFormat, tally: &mut Tally, budget: &mut Budget) -> Result<(), InputError> {
    let mut reader = BufReader::with_capacity(256 * 1024, open(path)?);
    let fail = |e: std::io::Error| InputError(format!("cannot read access log {}: {e}", path.display()));
    let mut line = Vec::with_capacity(512);
    loop {
        line.clear();
        let (n, whole) = read_line(&mut reader, &mut line).map_err(fail)?;
        if n == 0 {
            return Ok(());
        }
        budget.bytes = budget.bytes.checked_sub(n as u64).ok_or_else(|| {
            InputError(format!("access logs: more than {} GiB; replay a slice of them", MAX_BYTES >> 30))
        })?;
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() {
            continue;
        }
        budget.lines = budget.lines.checked_sub(1).ok_or_else(|| {
            InputError(format!(
                "access logs: more than {} lines; replay a slice of them (tail -n 1000000)",
                grouped(MAX_LINES)
            ))
        })?;
        tally.lines += 1;
        match whole.then(|| format.read(text)).flatten() {
            Some(entry) => tally.add(entry, format.has_time()),
            None => tally.malformed += 1,
        }
    }
}

/// One line into `line` (at most MAX_LINE bytes kept); the bytes consumed and whether the
/// line was kept whole.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<(usize, bool)> {
    let mut consumed = 0;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok((consumed, line.len() <= MAX_LINE));
        }
        let (take, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let room = (MAX_LINE + 1).saturating_sub(line.len());
        line.extend_from_slice(&buf[..take.min(room)]);
        reader.consume(take);
        consumed += take;
        if done {
            return Ok((consumed, line.len() <= MAX_LINE));
        }
    }
}

impl Tally {
    fn add(&mut self, entry: format::Entry, timed_format: bool) {
        let (Some(method), Some(target)) = (entry.method, entry.target.as_deref().and_then(origin_form)) else {
            self.malformed += 1;
            return;
        };
        if timed_format && entry.time.is_none() {
            self.malformed += 1;
            return;
        }
        if method != "GET" && method != "HEAD" {
            let known = self.methods.len() < MAX_METHODS || self.methods.contains_key(method);
            let name = if known && is_token(method) { method } else { "other" };
            *self.methods.entry(name.to_string()).or_default() += 1;
            return;
        }
        if let Some(s) = entry.status
            && !(200..400).contains(&s)
        {
            self.status += 1;
            return;
        }
        if let Some(t) = entry.time {
            self.times.push(t);
            self.fine_times |= !entry.whole_second;
        } else {
            self.untimed += 1;
        }
        let key = (method.to_string(), target.to_string());
        if let Some(n) = self.counts.get_mut(&key) {
            *n += 1;
        } else if self.counts.len() < MAX_DISTINCT {
            self.counts.insert(key, 1);
        } else {
            self.rare += 1;
        }
    }

    fn finish(self, paths: &[PathBuf], format: &LogFormat, max_requests: usize) -> Result<AccessLog, InputError> {
        let files: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        let mut requests: Vec<Logged> =
            self.counts.into_iter().map(|((method, target), count)| Logged { method, target, count }).collect();
        // Most frequent first; ties in a stable order, so a run is repeatable.
        requests
            .sort_by(|a, b| b.count.cmp(&a.count).then_with(|| (&a.target, &a.method).cmp(&(&b.target, &b.method))));
        let rare = self.rare + requests.iter().skip(max_requests).map(|r| r.count).sum::<u64>();
        requests.truncate(max_requests);
        if requests.is_empty() {
            let mut summary_only = String::new();
            if self.lines > 0 {
                summary_only = format!(
                    " ({} lines: {} malformed, {} other methods, {} non-2xx/3xx)",
                    self.lines,
                    self.malformed,
                    self.methods.values().sum::<u64>(),
                    self.status
                );
            }
            return Err(InputError(format!(
                "access log {}: no GET or HEAD request answered 2xx or 3xx to replay{summary_only}; is --log-format right? (it was {:?})",
                files.join(", "),
                format.name
            )));
        }
        let mut times = self.times;
        times.sort_by(f64::total_cmp);
        let whole_seconds = !self.fine_times;
        let first = times.first().copied().unwrap_or(0.0);
        let span = times.last().map(|last| last - first);
        let mean_rate = match (span, times.len()) {
            (Some(s), n) if whole_seconds && n > 0 => Some(n as f64 / (s + 1.0)),
            (Some(s), n) if n >= 2 && s > 0.0 => Some((n - 1) as f64 / s),
            _ => None,
        };
        // A log shorter than a minute has no busiest minute to tell.
        let busiest_minute = busiest_minute(&times).filter(|_| span.is_some_and(|s| s >= 60.0));
        times.iter_mut().for_each(|t| *t -= first);
        let summary = LogSummary {
            files,
            format: format.name.clone(),
            lines: self.lines,
            malformed: self.malformed,
            replayed: requests.iter().map(|r| r.count).sum(),
            left_out_methods: self.methods,
            left_out_status: self.status,
            left_out_rare: rare,
            distinct: requests.len() as u64,
            span_s: span.filter(|_| self.untimed == 0),
            mean_rate: mean_rate.filter(|_| self.untimed == 0),
            busiest_minute,
            whole_seconds,
        };
        Ok(AccessLog { requests, summary, times })
    }
}

/// "/a?b" as it is; "http://host/a?b" (a proxy's absolute form) as "/a?b": the host a log
/// names is never where the request goes. Anything else (`*`, garbage) is not replayable.
fn origin_form(target: &str) -> Option<&str> {
    let target = target.split('#').next()?;
    let path = match target.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https") => {
            &rest[rest.find('/')?..]
        }
        _ => target,
    };
    (path.starts_with('/') && !path.bytes().any(|b| b.is_ascii_control() || b == b' ')).then_some(path)
}

/// The request target to send for one logged `target`, byte for byte as the client sent it:
/// the log's escapes (`\xHH`, `\"`, `\\`, `\t`...; Apache's and nginx's) undone, and only
/// the bytes a request line cannot carry raw (controls, space, non-ASCII, `"<>\^`{|}`)
/// percent-encoded, which a server decodes to the same path. Dot segments, `%2e%2e` and
/// existing escapes stay: replay sends what was logged, not a URL library's tidied form.
pub fn wire_target(logged: &str) -> String {
    let mut bytes = Vec::with_capacity(logged.len());
    let mut rest = logged.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        rest = tail;
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        if let [b'x', high, low, tail @ ..] = rest
            && let (Some(h), Some(l)) = (char::from(*high).to_digit(16), char::from(*low).to_digit(16))
        {
            bytes.push((h * 16 + l) as u8);
            rest = tail;
            continue;
        }
        match rest.first() {
            Some(&c @ (b'"' | b'\\')) => {
                bytes.push(c);
                rest = &rest[1..];
            }
            Some(&c @ (b'n' | b'r' | b't' | b'b' | b'v')) => {
                bytes.push(match c {
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'b' => 0x08,
                    _ => 0x0b,
                });
                rest = &rest[1..];
            }
            // A lone backslash was sent as one.
            _ => bytes.push(b),
        }
    }
    encode_target(&bytes)
}

/// A request target as sent: bytes a request line cannot carry raw percent-encoded, every
/// other byte (dot segments, existing escapes) as it is.
pub fn encode_target(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_graphic() && !b"\"<>\\^`{|}".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn is_token(method: &str) -> bool {
    !method.is_empty()
        && method.len() <= 32
        && method.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.!~*'".contains(&b))
}

/// The 60 s window (starting at a request) with the most requests in it.
fn busiest_minute(sorted: &[f64]) -> Option<BusiestMinute> {
    let mut best = (0usize, 0usize);
    let mut end = 0;
    for (start, t) in sorted.iter().enumerate() {
        while end < sorted.len() && sorted[end] < t + 60.0 {
            end += 1;
        }
        if end - start > best.1 {
            best = (start, end - start);
        }
    }
    let (start, requests) = best;
    (requests > 0).then(|| BusiestMinute {
        start: rfc3339(sorted[start]),
        requests: requests as u64,
        rate: requests as f64 / 60.0,
    })
}

/// Seconds since the epoch as "2026-11-20T14:03:00Z" (whole seconds).
fn rfc3339(t: f64) -> String {
    let secs = t.floor() as i64;
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    // H. Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem / 60 % 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_targets_undo_the_logs_escapes_and_keep_everything_else() {
        assert_eq!(wire_target("/a/../b"), "/a/../b");
        assert_eq!(wire_target("/%2e%2e/x?q=%41"), "/%2e%2e/x?q=%41");
        assert_eq!(wire_target(r"/caf\xc3\xa9"), "/caf%C3%A9");
        assert_eq!(wire_target(r"/caf\xC3\xA9"), "/caf%C3%A9");
        assert_eq!(wire_target(r#"/q?x=\"y\""#), "/q?x=%22y%22");
        assert_eq!(wire_target(r"/a\\b"), "/a%5Cb");
        assert_eq!(wire_target(r"/a\tb"), "/a%09b");
        // Not an escape: a lone backslash, a short or non-hex \x.
        assert_eq!(wire_target(r"/a\"), "/a%5C");
        assert_eq!(wire_target(r"/a\xz1"), "/a%5Cxz1");
        assert_eq!(wire_target(r"/a\x4"), "/a%5Cx4");
    }

    fn log(lines: &[&str]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.log");
        std::fs::write(&path, lines.join("\n")).unwrap();
        (dir, path)
    }

    const A: &str = r#"1.2.3.4 - - [20/Nov/2026:10:00:00 +0000] "GET /a HTTP/1.1" 200 5 "-" "curl""#;
    const B: &str = r#"1.2.3.4 - - [20/Nov/2026:10:00:01 +0000] "HEAD /b?x=1 HTTP/1.1" 304 0"#;
    const POST: &str = r#"1.2.3.4 - - [20/Nov/2026:10:00:01 +0000] "POST /a HTTP/1.1" 201 5"#;
    const MISSING: &str = r#"1.2.3.4 - - [20/Nov/2026:10:00:02 +0000] "GET /gone HTTP/1.1" 404 5"#;
    const PROXY: &str = r#"1.2.3.4 - - [20/Nov/2026:10:00:03 +0000] "GET http://elsewhere.example/a HTTP/1.1" 200 5"#;

    #[test]
    fn every_line_is_replayed_or_counted_where_it_went() {
        let (_d, p) = log(&[A, B, POST, MISSING, PROXY, "", "junk", A]);
        let l = AccessLog::read(&[p], None, 100).unwrap();
        assert_eq!(l.requests[0], Logged { method: "GET".into(), target: "/a".into(), count: 3 });
        assert_eq!(l.requests[1], Logged { method: "HEAD".into(), target: "/b?x=1".into(), count: 1 });
        let s = &l.summary;
        assert_eq!((s.lines, s.malformed, s.replayed, s.left_out_status), (7, 1, 4, 1));
        assert_eq!(s.left_out_methods.get("POST"), Some(&1));
        assert_eq!(l.account(), "replaying 4 of 6 requests: 1 POST, 1 non-2xx/3xx left out; 1 malformed line skipped");
        // 4 requests over the seconds 10:00:00 to 10:00:03.
        assert_eq!(s.mean_rate, Some(1.0));
        // Four seconds of log have no busiest minute to tell.
        assert_eq!(s.busiest_minute, None);
        let times: Vec<f64> = [0.0, 30.0, 70.0, 71.0, 72.0, 200.0].iter().map(|t| 1_795_165_200.0 + t).collect();
        let b = busiest_minute(&times).unwrap();
        assert_eq!((b.start.as_str(), b.requests), ("2026-11-20T09:00:30Z", 4));
    }

    #[test]
    fn gzip_and_plain_logs_read_as_one_and_the_most_frequent_are_kept() {
        use std::io::Write;
        let (dir, plain) = log(&[A, A, B]);
        let gz = dir.path().join("access.log.1.gz");
        let mut enc = flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::fast());
        enc.write_all(format!("{A}\n{B}\n{PROXY}\n").as_bytes()).unwrap();
        enc.finish().unwrap();
        let l = AccessLog::read(&[plain, gz], None, 1).unwrap();
        assert_eq!(l.requests, vec![Logged { method: "GET".into(), target: "/a".into(), count: 4 }]);
        assert_eq!(l.summary.left_out_rare, 2);
        assert!(l.account().contains("2 of rare paths beyond the 1 kept"), "{}", l.account());
    }

    #[test]
    fn unit_gaps_keep_the_logs_shape_with_mean_one() {
        let lines: Vec<String> =
            [0.0, 0.1, 0.2, 2.2, 2.3].iter().map(|t| format!("{} GET /x HTTP/1.1 200", 1_763_632_800.0 + t)).collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (_d, p) = log(&refs);
        let l = AccessLog::read(&[p], Some("$msec $request $status"), 10).unwrap();
        assert!((l.summary.mean_rate.unwrap() - 4.0 / 2.3).abs() < 1e-6);
        let g = l.unit_gaps(1).unwrap();
        let mean = g.iter().map(|x| *x as f64).sum::<f64>() / g.len() as f64;
        assert!((mean - 1.0).abs() < 1e-6, "{g:?}");
        assert!((g[2] / g[0] - 20.0).abs() < 1e-3, "{g:?}");
    }

    #[test]
    fn nothing_to_replay_and_bad_files_are_one_line_errors() {
        let (_d, p) = log(&[POST, "junk"]);
        let e = AccessLog::read(&[p], None, 10).unwrap_err();
        assert!(e.0.contains("no GET or HEAD request answered 2xx or 3xx"), "{e}");
        let e = AccessLog::read(&[PathBuf::from("/nonexistent.log")], None, 10).unwrap_err();
        assert!(e.0.starts_with("cannot read access log /nonexistent.log"), "{e}");
        assert!(AccessLog::read(&[PathBuf::from("/dev/null")], None, 10).unwrap_err().0.contains("not a regular file"));
        assert_eq!(grouped(48112), "48,112");
        assert_eq!(grouped(100), "100");
        assert_eq!(origin_form("//x/y"), Some("//x/y"));
        assert_eq!(origin_form("https://h:1/p?q#f"), Some("/p?q"));
        assert_eq!(origin_form("*"), None);
    }
}
