//! The text report, in the spirit of ab and httperf: what was asked, what came back, how long
//! it took per phase, and what the client itself cost.

use std::io::{self, Write};

use crate::aggregate::BenchReport;
use crate::aggregate::result::{Judged, LatencyStats, Part};

/// Writes the bench report as text, for a terminal.
pub fn write(r: &BenchReport, out: &mut impl Write) -> io::Result<()> {
    let res = &r.result;
    let o = &r.options;
    writeln!(out, "Server:              {}", r.target.server.as_deref().unwrap_or("(no Server header)"))?;
    writeln!(out, "URL:                 {} {}", r.target.method, r.target.url)?;
    match r.target.document_length {
        Some(n) => writeln!(out, "Document length:     {n} bytes (first response)")?,
        None => writeln!(out, "Document length:     (no successful response)")?,
    }
    writeln!(out)?;
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
    thresholds(&r.thresholds, out)
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

fn row(s: &LatencyStats) -> String {
    [s.min, s.mean, s.stdev, s.p50, s.p75, s.p90, s.p99, s.p999, s.max]
        .iter()
        .map(|v| format!("{v:>9.3}"))
        .collect::<Vec<_>>()
        .join(" ")
}
