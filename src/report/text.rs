//! The text report, in the spirit of ab and httperf: what was asked, what came back, how long
//! it took per phase, and what the client itself cost.

use std::io::{self, Write};

use crate::aggregate::BenchReport;
use crate::aggregate::result::{Judged, LatencyStats, Part};

/// The URL line. A run of many requests names its source, not the first request as if it
/// were all.
fn write_url(r: &BenchReport, out: &mut impl Write) -> io::Result<()> {
    let o = &r.options;
    match (&o.access_log, &o.requests_file) {
        (Some(log), _) => writeln!(
            out,
            "URL:                 {} (the access log's {} distinct requests, GET and HEAD, by frequency)",
            r.target.url, log.distinct
        ),
        (None, Some(file)) => writeln!(
            out,
            "URL:                 {} (first of {file}, {})",
            r.target.url,
            o.order.as_deref().unwrap_or("sequential")
        ),
        (None, None) => writeln!(out, "URL:                 {} {}", r.target.method, r.target.url),
    }
}

/// Writes the bench report as text, for a terminal: what was asked, what came back, how long
/// it took, what the client cost, and the --fail-if verdicts.
pub fn write(r: &BenchReport, out: &mut impl Write) -> io::Result<()> {
    write_target(r, out)?;
    writeln!(out)?;
    write_pacing(r, out)?;
    write_inputs(r, out)?;
    write_counts(r, out)?;
    write_rates(r, out)?;
    write_latency(r, out)?;
    write_parts(r, out)?;
    write_client(r, out)?;
    thresholds(&r.thresholds, out)
}

/// The server, the URL, the first response's length.
fn write_target(r: &BenchReport, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "Server:              {}", r.target.server.as_deref().unwrap_or("(no Server header)"))?;
    write_url(r, out)?;
    match r.target.document_length {
        Some(n) => writeln!(out, "Document length:     {n} bytes (first response)")?,
        None => writeln!(out, "Document length:     (no successful response)")?,
    }
    Ok(())
}

/// How the load was driven: connections, threads, open or closed loop, wake-ups.
fn write_pacing(r: &BenchReport, out: &mut impl Write) -> io::Result<()> {
    let res = &r.result;
    let o = &r.options;
    match o.http2_streams {
        Some(streams) => writeln!(
            out,
            "Concurrency:         {} HTTP/2 connection(s) x {streams} stream(s) on {} thread(s)",
            o.connections, o.threads
        )?,
        None => writeln!(
            out,
            "Concurrency:         {} connection(s) on {} thread(s), keep-alive {}",
            o.connections,
            o.threads,
            if o.keepalive { "on" } else { "off" }
        )?,
    }
    if o.pacing == "open" {
        let rate = match (o.rate, &o.stages) {
            (Some(rate), _) => match o.access_log.as_ref().and_then(|l| l.mean_rate) {
                Some(mean) => format!("{rate:.2} requests/s ({:.3}x the log's mean)", rate / mean),
                None => format!("{rate} requests/s"),
            },
            (None, Some(stages)) => format!("stages {stages} (requests/s)"),
            (None, None) => "?".into(),
        };
        writeln!(
            out,
            "Pacing:              open loop, {rate}, {} arrivals; latency from each scheduled start",
            o.arrival.as_deref().unwrap_or("uniform")
        )?;
        if let Some(n) = res.scheduled {
            writeln!(out, "Scheduled:           {n} requests")?;
        }
        if let Some(n) = res.unsent.filter(|&n| n > 0) {
            writeln!(out, "Never sent:          {n} (due while every connection was busy)")?;
        }
    } else if let Some(stages) = &o.stages {
        writeln!(out, "Pacing:              closed loop, clients ramped by stages {stages}")?;
    }
    match res.coalesced {
        Some(c) if o.coalesce && c.responses > 0 => writeln!(
            out,
            "Wake-ups:            coalesced for {:.1}% of responses, which waited {:.3} ms in the client on \
             average (their latency counts to their arrival; --no-coalesce)",
            c.responses as f64 * 100.0 / res.succeeded.max(1) as f64,
            c.mean_wait_ms
        )?,
        Some(_) if o.coalesce => writeln!(
            out,
            "Wake-ups:            not coalesced (batches would not have paid, or would have kept clients waiting)"
        )?,
        _ => {}
    }
    Ok(())
}

/// Where the requests came from (a URL list, an access log), throttling, merging.
fn write_inputs(r: &BenchReport, out: &mut impl Write) -> io::Result<()> {
    let o = &r.options;
    if let Some(file) = &o.requests_file {
        writeln!(out, "Requests from:       {file} ({} order)", o.order.as_deref().unwrap_or("sequential"))?;
    }
    if let Some(log) = &o.access_log {
        writeln!(out, "Access log:          {} ({})", log.files.join(", "), log.format)?;
        writeln!(out, "Replay:              {}; {} distinct requests, drawn by count", log.account(), log.distinct)?;
        if let Some(rates) = log.rates() {
            writeln!(out, "Log rate:            {rates}")?;
        }
    }
    if let Some(bps) = o.throttle_bytes_per_s {
        let share = o.slow_share.unwrap_or(1.0) * 100.0;
        writeln!(
            out,
            "Throttled:           {share:.0}% of clients at {:.1} kbps ({bps:.0} bytes/s)",
            bps * 8.0 / 1000.0
        )?;
    }
    if let Some(n) = r.merged_runs {
        writeln!(out, "Merged:              {n} runs (rates summed, duration the longest)")?;
    }
    Ok(())
}

/// How long it took and what came back: complete, failed and why, length, lateness.
fn write_counts(r: &BenchReport, out: &mut impl Write) -> io::Result<()> {
    let res = &r.result;
    writeln!(out, "Time taken:          {:.3} s{}", res.duration_s, if r.interrupted { " (interrupted)" } else { "" })?;
    writeln!(out, "Complete requests:   {}", res.succeeded)?;
    writeln!(out, "Failed requests:     {}", res.failed)?;
    let failures: Vec<String> =
        res.errors.iter().filter(|(_, n)| **n > 0).map(|(class, n)| format!("{class} {n}")).collect();
    if !failures.is_empty() {
        writeln!(out, "   ({})", failures.join(", "))?;
    }
    if let Some(why) = &r.target.tls_failure {
        writeln!(out, "TLS failure:         {why}")?;
    }
    if r.options.requests_file.is_some() || r.options.access_log.as_ref().is_some_and(|l| l.distinct > 1) {
        writeln!(out, "Length differed:     not compared (a URL list's, log's or scenario's bodies vary by request)")?;
    } else {
        writeln!(
            out,
            "Length differed:     {} (not failures: the body length varied from the first response)",
            res.length_differed
        )?;
    }
    if let Some(late) = &res.late {
        writeln!(
            out,
            "Started late:        {} (waited for a free connection: mean {:.3} ms, max {:.3} ms)",
            late.requests, late.mean_ms, late.max_ms
        )?;
    }
    if res.in_flight_at_end > 0 {
        writeln!(
            out,
            "In flight at end:    {} (unanswered when the run ended; in no other figure)",
            res.in_flight_at_end
        )?;
    }
    Ok(())
}

/// Status codes, bytes, and the rates.
fn write_rates(r: &BenchReport, out: &mut impl Write) -> io::Result<()> {
    let res = &r.result;
    let codes: Vec<String> = res.status.iter().map(|(code, n)| format!("{code}: {n}")).collect();
    writeln!(out, "Status codes:        {}", if codes.is_empty() { "none".into() } else { codes.join(", ") })?;
    writeln!(
        out,
        "Transferred:         {} bytes ({} headers, {} body)",
        res.bytes.total, res.bytes.headers, res.bytes.body
    )?;
    writeln!(out, "Requests per second: {:.2} [#/s]", res.requests_per_s)?;
    if res.succeeded > 0 {
        writeln!(out, "Time per request:    {:.3} ms (mean across all connections)", 1000.0 / res.requests_per_s)?;
    }
    writeln!(out, "Transfer rate:       {:.2} KiB/s received", res.bytes.per_s / 1024.0)?;
    if let Some(rate) = &r.reply_rate {
        writeln!(
            out,
            "Reply rate [#/s]:    min {:.1} mean {:.1} max {:.1} stdev {:.1} ({} samples, 1 s each)",
            rate.min, rate.mean, rate.max, rate.stdev, rate.samples
        )?;
    }
    writeln!(
        out,
        "Connections:         {} opened, {} closed by the server between requests (retried)",
        res.connections.opened, res.connections.server_closed_idle
    )?;
    Ok(())
}

/// The latency table by phase, and the histogram.
fn write_latency(r: &BenchReport, out: &mut impl Write) -> io::Result<()> {
    let res = &r.result;
    writeln!(out)?;
    writeln!(out, "Latency (ms), from the request's start:")?;
    writeln!(
        out,
        "              {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "min", "mean", "stdev", "p50", "p75", "p90", "p99", "p99.9", "max"
    )?;
    let lat = &res.latency_ms;
    for (name, stats) in [("Connect", &lat.connect), ("First byte", &lat.first_byte), ("Total", &lat.total)] {
        match stats {
            Some(s) => writeln!(out, "  {name:<11} {}", row(s))?,
            None => writeln!(out, "  {name:<11} {:>9}", "-")?,
        }
    }
    if let Some(h) = res.histograms.as_ref().and_then(|h| h.total.as_deref()) {
        let lines = histogram_lines(h);
        if !lines.is_empty() {
            writeln!(out)?;
            writeln!(out, "Latency histogram (ms, total; log-spaced buckets):")?;
            for line in lines {
                writeln!(out, "{line}")?;
            }
        }
    }
    Ok(())
}

/// The breakdowns by stage, request, client and host.
fn write_parts(r: &BenchReport, out: &mut impl Write) -> io::Result<()> {
    for (title, parts) in [
        ("By stage", &r.breakdown.stages),
        ("By request", &r.breakdown.requests),
        ("By client", &r.breakdown.clients),
        ("By host", &r.breakdown.hosts),
    ] {
        if !parts.is_empty() {
            writeln!(out)?;
            parts_table(title, parts, out)?;
        }
    }
    Ok(())
}

/// What the client cost, where it ran, and the warnings.
fn write_client(r: &BenchReport, out: &mut impl Write) -> io::Result<()> {
    writeln!(out)?;
    let cpu = &r.client_cpu;
    write!(
        out,
        "Client CPU:          user {:.2} s, sys {:.2} s, {:.1}% of {} core(s)",
        cpu.user_s, cpu.sys_s, cpu.percent_of_available, cpu.cores_available
    )?;
    match cpu.us_per_request {
        Some(us) => writeln!(out, ", {us:.2} us per request")?,
        None => writeln!(out)?,
    }
    if let Some(p) = &r.placement {
        write!(out, "Placement:           {}", p.describe())?;
        match cpu.percent_of_machine {
            Some(share) => {
                let whose = if p.server.is_some() { "the client and the server" } else { "it" };
                writeln!(out, "; the client took {share:.1}% of the {} core(s) {whose} may use", p.cores())?
            }
            None => writeln!(out)?,
        }
    }
    for w in &r.warnings {
        writeln!(out, "WARNING: {w}")?;
    }
    Ok(())
}

/// The `--fail-if` verdicts, one line each: pass or FAIL, the expression, the measured value.
pub fn thresholds(judged: &[Judged], out: &mut impl Write) -> io::Result<()> {
    if judged.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "Thresholds (--fail-if: the run fails when one holds):")?;
    let width = judged.iter().map(|j| j.expr.len()).max().unwrap_or(0);
    for j in judged {
        let value = match j.value {
            None => "not measured".to_string(),
            Some(v) if j.unit == "% change" => format!("{v:+.2}%"),
            Some(v) if j.unit == "%" => format!("{v:.3}% of requests"),
            Some(v) if j.unit == "requests" => format!("{v} requests"),
            Some(v) => format!("{v:.3} {}", j.unit),
        };
        writeln!(out, "  {}  {:<width$}  measured {value}", if j.pass { "pass" } else { "FAIL" }, j.expr)?;
    }
    Ok(())
}

/// One line per part: counts, rate and total latency percentiles.
fn parts_table(title: &str, parts: &[Part], out: &mut impl Write) -> io::Result<()> {
    let width = parts.iter().map(|p| p.label.len()).max().unwrap_or(0).clamp(8, 60);
    writeln!(
        out,
        "{title:<width$}  {:>9} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9}  (latency ms)",
        "requests", "failed", "req/s", "mean", "p50", "p99", "max"
    )?;
    for p in parts {
        let label: String = p.label.chars().take(width).collect();
        write!(out, "{label:<width$}  {:>9} {:>7} {:>10.2}", p.succeeded, p.failed, p.requests_per_s)?;
        match &p.latency_ms {
            Some(l) => writeln!(out, " {:>9.3} {:>9.3} {:>9.3} {:>9.3}", l.mean, l.p50, l.p99, l.max)?,
            None => writeln!(out, " {:>9}", "-")?,
        }
    }
    Ok(())
}

/// Buckets of the terminal histogram: as many as oha and hey show, so it fits a screen.
const HISTOGRAM_BUCKETS: usize = 10;
/// The longest bar: the whole line stays within 80 columns.
const HISTOGRAM_BAR: usize = 40;

/// The latency histogram's buckets, as oha and hey draw it: `HISTOGRAM_BUCKETS` log-spaced
/// buckets from the fastest to the slowest request (a tail would squash linear ones into the
/// first), each (from ms, to ms, count); empty when the histogram cannot be read or is empty.
pub fn histogram_buckets(b64: &str) -> Vec<(f64, f64, u64)> {
    let Ok(h) = crate::aggregate::codec::decode(b64) else { return Vec::new() };
    if h.is_empty() {
        return Vec::new();
    }
    // µs, as recorded; the lowest bucket starts at 1 µs at least, so the log is defined.
    let (lo, hi) = ((h.min() as f64).max(1.0), (h.max() as f64).max(1.0));
    // One latency (within the histogram's precision) is one bucket.
    let n = if hi > lo * 1.01 { HISTOGRAM_BUCKETS } else { 1 };
    let edge = |i: usize| if n == 1 { if i == 0 { lo } else { hi } } else { lo * (hi / lo).powf(i as f64 / n as f64) };
    let mut counts = vec![0u64; n];
    for v in h.iter_recorded() {
        let x = h.highest_equivalent(v.value_iterated_to()) as f64;
        // The bucket whose upper edge holds it; the last takes the max (and rounding).
        let i = (0..n).find(|&i| x <= edge(i + 1)).unwrap_or(n - 1);
        counts[i] += v.count_at_value();
    }
    (0..n).map(|i| (edge(i) / 1000.0, edge(i + 1) / 1000.0, counts[i])).collect()
}

/// The histogram's buckets as lines of text, each with its count and a bar.
pub fn histogram_lines(b64: &str) -> Vec<String> {
    let buckets = histogram_buckets(b64);
    let most = buckets.iter().map(|b| b.2).max().unwrap_or(1).max(1);
    buckets
        .iter()
        .map(|&(from, to, count)| {
            let bar = (count as f64 / most as f64 * HISTOGRAM_BAR as f64).round() as usize;
            let bar = if count > 0 { bar.max(1) } else { 0 };
            let line = format!("  {from:>9.3} - {to:>9.3}  [{count:>9}] {}", "■".repeat(bar));
            line.trim_end().to_string()
        })
        .collect()
}

fn row(s: &LatencyStats) -> String {
    [s.min, s.mean, s.stdev, s.p50, s.p75, s.p90, s.p99, s.p999, s.max]
        .iter()
        .map(|v| format!("{v:>9.3}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report whose total latency is `h`.
    fn report(h: &hdrhistogram::Histogram<u64>) -> BenchReport {
        let latency = serde_json::json!({"count": 1000, "min": 1.0, "mean": 10.0, "stdev": 5.0, "p50": 9.0,
            "p75": 12.0, "p90": 15.0, "p99": 20.0, "p999": 21.0, "max": 22.0});
        let v = serde_json::json!({
            "schema": "webtune.bench.v1", "webtune_version": "0", "started_at": "", "interrupted": false,
            "target": {"url": "http://x/", "method": "GET"},
            "options": {"connections": 1, "threads": 1, "keepalive": true, "timeout_s": 10.0},
            "result": {"duration_s": 1.0, "requests": 1000, "succeeded": 1000, "failed": 0,
                "requests_per_s": 1000.0, "length_differed": 0, "in_flight_at_end": 0,
                "status": {}, "errors": {}, "bytes": {"headers": 0, "body": 0, "total": 0, "per_s": 0.0},
                "connections": {"opened": 1, "server_closed_idle": 0},
                "latency_ms": {"connect": latency, "first_byte": latency, "total": latency},
                "histograms": {"total": crate::aggregate::codec::encode(h).unwrap()}},
            "client_cpu": {"user_s": 0.0, "sys_s": 0.0, "percent_of_available": 0.0, "cores_available": 1},
            "warnings": []
        });
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_text_report_draws_a_latency_histogram_within_80_columns() {
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        // Most at 2 ms, a tail at 900 ms: log buckets keep both visible.
        h.record_n(2_000, 9_000).unwrap();
        h.record_n(20_000, 900).unwrap();
        h.record_n(900_000, 100).unwrap();
        let mut out = Vec::new();
        write(&report(&h), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let at = text.find("Latency histogram").expect(&text);
        let lines: Vec<&str> = text[at..].lines().take_while(|l| !l.is_empty()).collect();
        assert!(lines.len() <= 12, "{}", lines.join("\n"));
        assert_eq!(lines.len(), 1 + HISTOGRAM_BUCKETS, "{}", lines.join("\n"));
        for l in &lines {
            assert!(l.chars().count() <= 80, "{l:?}");
        }
        let count =
            |l: &str| -> u64 { l.split('[').nth(1).unwrap().split(']').next().unwrap().trim().parse().unwrap() };
        assert_eq!(lines[1..].iter().map(|l| count(l)).sum::<u64>(), 10_000);
        assert_eq!(count(lines[1]), 9_000, "{}", lines.join("\n"));
        assert_eq!(count(lines[HISTOGRAM_BUCKETS]), 100, "the tail's own bucket: {}", lines.join("\n"));
        // The fullest bucket has the longest bar; an empty one none.
        assert_eq!(lines[1].matches('■').count(), HISTOGRAM_BAR);
        assert!(lines[1..].iter().any(|l| count(l) == 0 && !l.contains('■')), "{}", lines.join("\n"));
        assert!(lines[1].trim_start().starts_with("2.000 -"), "{}", lines[1]);
    }

    #[test]
    fn one_latency_is_one_bucket() {
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        h.record_n(5_000, 10).unwrap();
        assert_eq!(histogram_lines(&crate::aggregate::codec::encode(&h).unwrap()).len(), 1);
    }
}
