//! `webtune report ID --html`: one self-contained page (inline CSS and SVG, no script, no
//! network) for a stored bench run or tune experiment.

use std::fmt::Write;

use hdrhistogram::Histogram;

use super::svg::{self, Chart, Series, XAxis, YAxis, escape};
use crate::aggregate::BenchReport;
use crate::store::Stored;
use crate::tune::{Outcome, Point};

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:0 auto;max-width:1220px;padding:12px;color:#222}\
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:8px 0;font-size:.9em;display:block;overflow-x:auto}\
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}\
tr.changed td{background:#fde2e2}pre{background:#f6f6f6;padding:8px;overflow-x:auto}\
.charts{display:flex;flex-direction:column;gap:16px}\
.chart{display:block;max-width:100%;height:auto}p.ev{margin:.3em 0}";

/// The whole HTML page for a stored run.
pub fn render(run: &Stored) -> String {
    let mut body = String::new();
    let title = match run {
        Stored::Bench { row, report } => {
            bench(&mut body, report);
            format!("webtune bench run {}: {}", row.id, row.target)
        }
        Stored::Tune { row, strategy, points, outcome } => {
            tune(&mut body, strategy, points, outcome.as_deref());
            format!("webtune tune {} ({strategy}): {}", row.id, row.target)
        }
    };
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{t}</title><style>{STYLE}</style></head><body><h1>{t}</h1>{body}</body></html>\n",
        t = escape(&title)
    )
}

/// Latency against percentile, HdrHistogram style, from a base64 V2 histogram (µs -> ms).
fn percentile_points(b64: &str) -> Option<Vec<(f64, f64)>> {
    let h: Histogram<u64> = crate::aggregate::codec::decode(b64).ok()?;
    let mut pts = Vec::new();
    let mut p = 0.0;
    while p < 99.9999 {
        pts.push((p, h.value_at_quantile(p / 100.0) as f64 / 1000.0));
        // Halve the distance to 100% each time, in ten steps per halving.
        p += (100.0 - p) * (1.0 - 0.5f64.powf(0.1));
        if h.len() as f64 * (1.0 - p / 100.0) < 1.0 {
            break;
        }
    }
    pts.push((p.min(99.9999), h.max() as f64 / 1000.0));
    Some(pts)
}

/// Latency by percentile on a log axis: a tail of seconds does not flatten the body of
/// milliseconds.
fn latency_chart(series: &[Series]) -> String {
    svg::chart(&Chart {
        title: "Latency by percentile",
        x_label: "percentile",
        y_label: "ms (log)",
        x: XAxis::Percentile,
        y: YAxis::Log,
        series,
    })
}

/// A point's configuration from its name: the rounds' "#2" and the like dropped.
fn configuration_label(step: &str) -> String {
    match step.rsplit_once(" #") {
        Some((name, n)) if n.chars().all(|c| c.is_ascii_digit()) => name.to_string(),
        _ => step.to_string(),
    }
}

fn bench(out: &mut String, r: &BenchReport) {
    let res = &r.result;
    let _ = write!(out, "<h2>Result</h2><table><tr><th>metric</th><th>value</th></tr>");
    let mut row = |k: &str, v: String| {
        let _ = write!(out, "<tr><td>{}</td><td>{}</td></tr>", escape(k), escape(&v));
    };
    row("URL", format!("{} {}", r.target.method, r.target.url));
    row("started", r.started_at.clone());
    row("connections / threads", format!("{} / {}", r.options.connections, r.options.threads));
    row("pacing", r.options.pacing.clone());
    row("requests succeeded / failed", format!("{} / {}", res.succeeded, res.failed));
    row("requests/s", format!("{:.2}", res.requests_per_s));
    if let Some(l) = &res.latency_ms.total {
        row(
            "latency mean / p50 / p99 / max (ms)",
            format!("{:.3} / {:.3} / {:.3} / {:.3}", l.mean, l.p50, l.p99, l.max),
        );
    }
    row("client CPU per request (µs)", r.client_cpu.us_per_request.map_or("-".into(), |u| format!("{u:.2}")));
    let codes: Vec<String> = res.status.iter().map(|(code, n)| format!("{code}: {n}")).collect();
    row("status codes", if codes.is_empty() { "none".into() } else { codes.join(", ") });
    let failures: Vec<String> =
        res.errors.iter().filter(|(_, n)| **n > 0).map(|(class, n)| format!("{class} {n}")).collect();
    row("failures by class", if failures.is_empty() { "none".into() } else { failures.join(", ") });
    row("length differed (not failures)", res.length_differed.to_string());
    for w in &r.warnings {
        row("warning", w.clone());
    }
    out.push_str("</table>");
    percentile_table(out, r);
    histogram_table(out, r);
    out.push_str("<h2>Latency distribution</h2><div class=\"charts\">");
    // Total drawn first and thicker, first byte dashed over it: both show where they coincide.
    let series: Vec<Series> = [
        ("total", &res.histograms.as_ref().and_then(|h| h.total.clone())),
        ("first byte", &res.histograms.as_ref().and_then(|h| h.first_byte.clone())),
    ]
    .iter()
    .filter_map(|(n, h)| Some(Series::new(*n, percentile_points(h.as_deref()?)?)))
    .collect();
    if !series.is_empty() {
        out.push_str(&latency_chart(&series));
    }
    out.push_str("</div>");
    if let Some(rate) = r.reply_rate.as_ref().filter(|r| !r.per_second.is_empty()) {
        out.push_str("<h2>Throughput and errors over time</h2><div class=\"charts\">");
        let per_second = |v: &[f64]| v.iter().enumerate().map(|(i, r)| ((i + 1) as f64, *r)).collect::<Vec<_>>();
        let mut series = vec![Series::new("succeeded/s", per_second(&rate.per_second))];
        if !rate.failed_per_second.is_empty() {
            series.push(Series::new("failed/s", per_second(&rate.failed_per_second)));
        }
        out.push_str(&svg::chart(&Chart {
            title: "Replies and failures per second",
            x_label: "seconds into the run",
            y_label: "requests/s",
            x: XAxis::Linear,
            y: YAxis::Linear,
            series: &series,
        }));
        out.push_str("</div>");
    }
    for (title, parts) in
        [("By stage", &r.breakdown.stages), ("By request", &r.breakdown.requests), ("By client", &r.breakdown.clients)]
    {
        if parts.is_empty() {
            continue;
        }
        let _ = write!(
            out,
            "<h2>{title}</h2><table><tr><th>part</th><th>ok</th><th>failed</th><th>req/s</th><th>p50 ms</th><th>p99 ms</th></tr>"
        );
        for p in parts {
            let (p50, p99) = p.latency_ms.as_ref().map_or((f64::NAN, f64::NAN), |l| (l.p50, l.p99));
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{p50:.3}</td><td>{p99:.3}</td></tr>",
                escape(&p.label),
                p.succeeded,
                p.failed,
                p.requests_per_s
            );
        }
        out.push_str("</table>");
    }
}

/// The latency table by phase, as the terminal prints it.
fn percentile_table(out: &mut String, r: &BenchReport) {
    out.push_str("<h2>Latency (ms), from the request's start</h2><table><tr><th>phase</th>");
    for h in ["min", "mean", "stdev", "p50", "p75", "p90", "p99", "p99.9", "max"] {
        let _ = write!(out, "<th>{h}</th>");
    }
    out.push_str("</tr>");
    let lat = &r.result.latency_ms;
    for (name, stats) in [("connect", &lat.connect), ("first byte", &lat.first_byte), ("total", &lat.total)] {
        let _ = write!(out, "<tr><td>{name}</td>");
        match stats {
            Some(l) => {
                for v in [l.min, l.mean, l.stdev, l.p50, l.p75, l.p90, l.p99, l.p999, l.max] {
                    let _ = write!(out, "<td>{v:.3}</td>");
                }
            }
            None => out.push_str("<td>-</td>"),
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

/// The latency histogram's buckets, as the terminal draws them, with a bar each.
fn histogram_table(out: &mut String, r: &BenchReport) {
    let Some(h) = r.result.histograms.as_ref().and_then(|h| h.total.as_deref()) else { return };
    let buckets = super::text::histogram_buckets(h);
    if buckets.is_empty() {
        return;
    }
    let most = buckets.iter().map(|b| b.2).max().unwrap_or(1).max(1);
    out.push_str(
        "<h2>Latency histogram (ms, total; log-spaced buckets)</h2><table><tr><th>from</th><th>to</th><th>requests</th><th></th></tr>",
    );
    for (from, to, count) in buckets {
        let width = (count as f64 / most as f64 * 300.0).round() as u64;
        let _ = write!(
            out,
            "<tr><td>{from:.3}</td><td>{to:.3}</td><td>{count}</td><td style=\"text-align:left\">\
             <span style=\"display:inline-block;height:.8em;width:{width}px;background:#4a7ab5\"></span></td></tr>"
        );
    }
    out.push_str("</table>");
}

/// A tune's page: what ran, the answer, the charts, every step's table, every point.
fn tune(out: &mut String, strategy: &str, points: &[Point], outcome: Option<&Outcome>) {
    tune_intro(out, strategy, points);
    tune_answer(out, outcome);
    knob_charts(out, points, outcome);
    latency_first_and_recommended(out, points, outcome);
    windows_over_time(out, points);
    memory_per_worker(out, points);
    step_tables(out, outcome);
    every_point(out, points);
}

/// The strategy, how many points, where the server and the client ran.
fn tune_intro(out: &mut String, strategy: &str, points: &[Point]) {
    let _ = write!(out, "<p>Strategy <b>{}</b>; {} points measured.</p>", escape(strategy), points.len());
    if let Some(p) = points.iter().find_map(|p| p.placement.as_ref()) {
        let share = points.iter().map(|p| p.client_share).fold(None, crate::tune::point::max_share);
        let share = share.map_or(String::new(), |s| format!("; the client took at most {:.1}% of the CPU", s * 100.0));
        let _ = write!(out, "<p>Placement: {}{share}.</p>", escape(&p.describe()));
    }
}

/// The recommended configuration with each value's evidence, or why there is none.
fn tune_answer(out: &mut String, outcome: Option<&Outcome>) {
    match outcome {
        Some(o) => {
            let _ = write!(out, "<h2>Recommended configuration</h2><pre>{}</pre>", escape(&o.config));
            for e in &o.evidence {
                let (k, v, why) = (escape(&e.knob), escape(&e.value), escape(&e.why));
                let _ = write!(out, "<p class=\"ev\"><b>{k} = {v}</b>: {why}</p>");
            }
            if let Some(s) = &o.stopped {
                let _ = write!(out, "<p>Stopped early ({}): the best found so far.</p>", escape(s));
            }
        }
        None => out.push_str("<p>The experiment did not finish (interrupted or still running): its points so far.</p>"),
    }
}

/// Throughput and p99 against each swept knob: the points that differ from the first in it.
fn knob_charts(out: &mut String, points: &[Point], outcome: Option<&Outcome>) {
    out.push_str("<h2>Throughput and p99 against each knob</h2><div class=\"charts\">");
    let knobs: Vec<String> = points.iter().filter_map(|p| p.step.split_once('=').map(|(k, _)| k.to_string())).fold(
        Vec::new(),
        |mut v, k| {
            if !v.contains(&k) {
                v.push(k);
            }
            v
        },
    );
    for knob in &knobs {
        // The step's own comparison when the outcome has it (the current value and each
        // candidate), else every point that set the knob.
        let step = outcome.and_then(|o| o.steps.iter().find(|s| s.knob == *knob));
        let swept: Vec<&Point> = match step {
            Some(s) => std::iter::once(&s.before).chain(&s.candidates).filter(|p| p.ok()).collect(),
            None => points.iter().filter(|p| p.ok() && p.step.starts_with(&format!("{knob}="))).collect(),
        };
        let mut values: Vec<String> = Vec::new();
        for p in &swept {
            let v = p.settings.get(knob).unwrap_or("").to_string();
            if !values.contains(&v) {
                values.push(v);
            }
        }
        // Numeric values in numeric order.
        if values.iter().all(|v| v.parse::<f64>().is_ok()) {
            values.sort_by(|a, b| a.parse::<f64>().unwrap().total_cmp(&b.parse::<f64>().unwrap()));
        }
        // Each value's median with the range of its windows (repeats and rounds).
        let at = |f: &dyn Fn(&crate::tune::point::Sample) -> f64| -> Vec<svg::Spread> {
            values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| {
                    let p = swept.iter().find(|p| p.settings.get(knob) == Some(v.as_str()))?;
                    let all: Vec<f64> = p.samples.iter().map(f).collect();
                    let lo = all.iter().cloned().fold(f64::INFINITY, f64::min);
                    let hi = all.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    Some((i as f64, p.median(f), (all.len() > 1).then_some((lo, hi))))
                })
                .collect()
        };
        // Numbers are ordered and joined; words (on, off) are categories, never joined.
        let axis = || {
            if values.iter().all(|v| v.parse::<f64>().is_ok()) {
                XAxis::Ordered(values.clone())
            } else {
                XAxis::Categories(values.clone())
            }
        };
        out.push_str(&svg::chart(&Chart {
            title: &format!("Requests/s by {knob} (median, bars: range of the windows)"),
            x_label: knob,
            y_label: "req/s",
            x: axis(),
            y: YAxis::Linear,
            series: &[Series::with_spread("requests/s", at(&|s| s.rps))],
        }));
        out.push_str(&svg::chart(&Chart {
            title: &format!("p99 by {knob} (median, bars: range of the windows)"),
            x_label: knob,
            y_label: "ms (log)",
            x: axis(),
            y: YAxis::Log,
            series: &[Series::with_spread("p99", at(&|s| s.p99_ms))],
        }));
    }
    out.push_str("</div>");
}

/// The latency by percentile of the first point and of the recommended one.
fn latency_first_and_recommended(out: &mut String, points: &[Point], outcome: Option<&Outcome>) {
    out.push_str("<h2>Latency distribution</h2><div class=\"charts\">");
    let first = points.iter().find(|p| p.ok());
    let last = outcome
        .and_then(|o| o.steps.iter().rev().find(|s| s.adopted).map(|s| &s.after))
        .or(points.iter().rev().find(|p| p.ok()));
    let series: Vec<Series> = [("first: ", first), ("recommended: ", last)]
        .iter()
        .filter_map(|(n, p)| {
            let p = (*p)?;
            let h = p.samples.iter().find_map(|s| s.histogram.clone())?;
            Some(Series::new(format!("{n}{}", p.step), percentile_points(&h)?))
        })
        .collect();
    if !series.is_empty() {
        out.push_str(&latency_chart(&series));
    }
    out.push_str("</div>");
}

/// Every window in the order measured: drift of the machine, and failures, over the run.
fn windows_over_time(out: &mut String, points: &[Point]) {
    let windows: Vec<&crate::tune::point::Sample> = points.iter().flat_map(|p| &p.samples).collect();
    if windows.len() > 1 {
        out.push_str("<h2>Throughput and errors over time</h2><div class=\"charts\">");
        let over = |f: &dyn Fn(&crate::tune::point::Sample) -> f64| -> Vec<(f64, f64)> {
            windows.iter().enumerate().map(|(i, s)| ((i + 1) as f64, f(s))).collect()
        };
        let failed = |s: &crate::tune::point::Sample| s.failed as f64 / s.window_s.unwrap_or(1.0).max(1e-3);
        out.push_str(&svg::chart(&Chart {
            title: "Requests/s and failures/s of each window, in the order measured",
            x_label: "window",
            y_label: "requests/s",
            x: XAxis::Linear,
            y: YAxis::Linear,
            series: &[Series::new("succeeded/s", over(&|s| s.rps)), Series::new("failed/s", over(&failed))],
        }));
        out.push_str("</div>");
    }
}

/// Memory per worker, one group per configuration.
fn memory_per_worker(out: &mut String, points: &[Point]) {
    out.push_str("<h2>Memory per worker</h2><div class=\"charts\">");
    // One group per configuration (its windows together, the costliest reading with the
    // range of all), never one per window: 37 windows are a handful of configurations.
    let mut configs: Vec<(String, Vec<&crate::tune::point::MemUse>)> = Vec::new();
    let mut settings_seen: Vec<&crate::tune::Settings> = Vec::new();
    for p in points.iter().filter(|p| p.memory().is_some()) {
        let mems: Vec<&crate::tune::point::MemUse> = p.samples.iter().filter_map(|s| s.memory.as_ref()).collect();
        match settings_seen.iter().position(|s| **s == p.settings) {
            Some(i) => configs[i].1.extend(mems),
            None => {
                settings_seen.push(&p.settings);
                configs.push((configuration_label(&p.step), mems));
            }
        }
    }
    if !configs.is_empty() {
        let cats: Vec<String> = configs.iter().map(|(l, _)| l.clone()).collect();
        let mem = |f: &dyn Fn(&crate::tune::point::MemUse) -> f64| -> Vec<svg::Spread> {
            configs
                .iter()
                .enumerate()
                .map(|(i, (_, ms))| {
                    let v: Vec<f64> = ms.iter().map(|m| f(m) / 1024.0).collect();
                    let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
                    let hi = v.iter().cloned().fold(0.0, f64::max);
                    (i as f64, hi, (v.len() > 1 && hi > lo).then_some((lo, hi)))
                })
                .collect()
        };
        let series = [
            Series::with_spread("USS (largest)", mem(&|m| m.worker_uss_max_kib as f64)),
            Series::with_spread("shared (mean)", mem(&|m| m.worker_shared_mean_kib as f64)),
            Series::with_spread("PSS (server / workers)", mem(&|m| m.pss_total_kib as f64 / m.workers.max(1) as f64)),
        ];
        for chart in svg::bars_paged("Memory per worker (MiB), by configuration", "MiB", &cats, &series) {
            out.push_str(&chart);
        }
    }
    out.push_str("</div>");
}

/// Each step's before/after table (a step judged again on the same measurements, once).
fn step_tables(out: &mut String, outcome: Option<&Outcome>) {
    if let Some(o) = outcome {
        for (n, s) in crate::tune::table::distinct_steps(o) {
            let verdict = crate::tune::table::step_verdict(s);
            match s.challenger_point().filter(|_| !s.adopted) {
                Some(ch) => {
                    let _ = write!(
                        out,
                        "<h2>Step {}: {} stays {}; best challenger {} ({verdict})</h2>",
                        n,
                        escape(&s.knob),
                        escape(&s.before_value),
                        escape(&crate::tune::table::changes(&s.before.settings, &ch.settings)),
                    );
                    before_after(out, ["kept", "challenger"], &s.before, ch);
                }
                None => {
                    let _ = write!(
                        out,
                        "<h2>Step {}: {} {} &rarr; {} ({verdict})</h2>",
                        n,
                        escape(&s.knob),
                        escape(&s.before_value),
                        escape(&s.after_value),
                    );
                    before_after(out, ["before", "after"], &s.before, &s.after);
                }
            }
            if let Some(e) = &s.effect {
                let _ = write!(
                    out,
                    "<p class=\"ev\">Effect {} over {} interleaved rounds (99% interval): <b>{verdict}</b></p>",
                    escape(&crate::tune::strategies::verdict::effect_text(e)),
                    s.rounds
                );
            }
            let _ = write!(out, "<p class=\"ev\">{}</p>", escape(&s.evidence));
        }
    }
}

/// Every point measured, in order.
fn every_point(out: &mut String, points: &[Point]) {
    out.push_str("<h2>Every point</h2><table><tr><th>step</th><th>status</th><th>req/s</th><th>p99 ms</th><th>p99.9 ms</th><th>worker USS KiB</th></tr>");
    for p in points {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&p.step),
            escape(p.cause().unwrap_or("ok")),
            if p.ok() { format!("{:.1}", p.rps()) } else { "-".into() },
            if p.ok() { format!("{:.2}", p.p99()) } else { "-".into() },
            p.p999().filter(|_| p.ok()).map_or("-".into(), |t| format!("{t:.2}")),
            p.memory().map_or("-".into(), |m| m.worker_uss_max_kib.to_string())
        );
    }
    out.push_str("</table>");
}

/// The seeds' table: metrics before and after with the % change, then the configuration with
/// changed values highlighted.
fn before_after(out: &mut String, headings: [&str; 2], b: &Point, a: &Point) {
    let _ = write!(out, "<table><tr><th></th><th>{}</th><th>{}</th><th>change</th></tr>", headings[0], headings[1]);
    let mut metric = |name: &str, x: f64, y: f64| {
        let change = if x != 0.0 && x.is_finite() && y.is_finite() {
            format!("{:+.1}%", (y - x) / x * 100.0)
        } else {
            String::new()
        };
        let _ = write!(out, "<tr><td>{name}</td><td>{x:.2}</td><td>{y:.2}</td><td>{change}</td></tr>");
    };
    metric("requests/s", b.rps(), a.rps());
    metric("p99 ms", b.p99(), a.p99());
    metric("p99.9 ms", b.p999().unwrap_or(f64::NAN), a.p999().unwrap_or(f64::NAN));
    if let (Some(x), Some(y)) = (b.container(), a.container()) {
        metric("container charge KiB", x.charge_max_bytes as f64 / 1024.0, y.charge_max_bytes as f64 / 1024.0);
        metric("OOM kills", x.oom_kills as f64, y.oom_kills as f64);
        let throttled = |c: &crate::tune::ContainerUse| c.throttled_share.unwrap_or(0.0) * 100.0;
        metric("throttled periods %", throttled(&x), throttled(&y));
    }
    for (k, v) in &a.settings.0 {
        let before = b.settings.get(k).unwrap_or("-");
        let class = if before != v { " class=\"changed\"" } else { "" };
        let _ = write!(
            out,
            "<tr{class}><td>{}</td><td>{}</td><td>{}</td><td></td></tr>",
            escape(k),
            escape(before),
            escape(v)
        );
    }
    out.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::RunRow;
    use crate::tune::point::{MemUse, Sample, Status};
    use crate::tune::{Settings, Step, Verdict};

    fn histogram(body_ms: u64, tail_ms: u64) -> String {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        h.record_n(body_ms * 1000, 5000).unwrap();
        h.record_n(tail_ms * 1000, 10).unwrap();
        crate::aggregate::codec::encode(&h).unwrap()
    }

    /// One window of `settings` named `step`.
    fn window(step: &str, settings: &[(&str, &str)], rps: f64, uss: u64) -> Point {
        let settings = Settings(settings.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        let mut p = Point::failed(step, &settings, String::new(), 1.0);
        p.status = Status::Ok;
        p.samples = vec![Sample {
            rps,
            p99_ms: 12.0 + rps / 1000.0,
            succeeded: 1000,
            histogram: Some(histogram(2, 900)),
            memory: Some(MemUse { workers: 4, worker_uss_max_kib: uss, pss_total_kib: uss * 5, ..MemUse::default() }),
            ..Sample::default()
        }];
        p
    }

    /// A tune of 37 windows: keepalive on against off (a sure loss, kept), then workers.
    fn stored_tune() -> Stored {
        let mut points = Vec::new();
        let mut keep = (Vec::new(), Vec::new());
        for r in 0..5 {
            let n = if r == 0 { String::new() } else { format!(" #{}", r + 1) };
            let on = window(&format!("baseline{n}"), &[("keepalive", "on"), ("workers", "2")], 1000.0 + r as f64, 9000);
            let off = window(&format!("keepalive=off{n}"), &[("keepalive", "off"), ("workers", "2")], 940.0, 9100);
            keep.0.push(on.clone());
            keep.1.push(off.clone());
            points.extend([on, off]);
        }
        let mut by_workers: Vec<Vec<Point>> = vec![Vec::new(); 9];
        for r in 0..3 {
            for w in 1..=9u64 {
                let n = if r == 0 { String::new() } else { format!(" #{}", r + 1) };
                let ws = w.to_string();
                let name = if w == 2 { format!("workers=2 (kept){n}") } else { format!("workers={w}{n}") };
                let p = window(&name, &[("keepalive", "on"), ("workers", &ws)], 500.0 * w.min(4) as f64, 9000 + w * 10);
                by_workers[w as usize - 1].push(p.clone());
                points.push(p);
            }
        }
        assert_eq!(points.len(), 37);
        let combine = |name: &str, w: &[Point]| Point::combine(name, w).unwrap();
        let (on, off) = (combine("baseline", &keep.0), combine("keepalive=off", &keep.1));
        let effect = crate::stats::Effect { pct: -6.2, low_pct: -10.2, high_pct: -2.0 };
        let steps = vec![
            Step {
                knob: "keepalive".into(),
                before_value: "on".into(),
                after_value: "on".into(),
                adopted: false,
                verdict: Some(Verdict::Worse),
                effect: Some(effect),
                rounds: 5,
                before: on.clone(),
                after: on.clone(),
                candidates: vec![off],
                challenger: Some(0),
                evidence: "keepalive stays on: every value tried is worse".into(),
            },
            Step {
                knob: "workers".into(),
                before_value: "2".into(),
                after_value: "4".into(),
                adopted: true,
                verdict: Some(Verdict::Adopted),
                effect: Some(crate::stats::Effect { pct: 100.0, low_pct: 90.0, high_pct: 110.0 }),
                rounds: 3,
                before: combine("workers=2 (kept)", &by_workers[1]),
                after: combine("workers=4", &by_workers[3]),
                candidates: by_workers
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != 1)
                    .map(|(i, w)| combine(&format!("workers={}", i + 1), w))
                    .collect(),
                challenger: None,
                evidence: "workers 2 -> 4: adopted".into(),
            },
        ];
        let outcome = Outcome {
            strategy: "one-at-a-time".into(),
            objective: "throughput".into(),
            baseline: Some(on),
            steps,
            recommended: Settings::default(),
            evidence: vec![crate::tune::Evidence::new("keepalive", "on", "worse")],
            stopped: None,
            config: "webtune lab --workers 4".into(),
            diffs: Default::default(),
            cost: Default::default(),
            points: points.clone(),
            placement: None,
            baseline_values: Vec::new(),
            unjudged: Vec::new(),
            noise: None,
            threshold_pct: None,
        };
        let row = RunRow {
            id: 7,
            kind: "tune".into(),
            started_at: String::new(),
            target: "lab.toml".into(),
            summary: String::new(),
            status: "done".into(),
        };
        Stored::Tune { row, strategy: "one-at-a-time".into(), points, outcome: Some(Box::new(outcome)) }
    }

    /// The SVG of the chart titled `title`.
    fn chart_of<'h>(html: &'h str, title: &str) -> &'h str {
        let at = html.find(&format!("<title>{title}")).unwrap_or_else(|| panic!("no chart {title:?}"));
        let start = html[..at].rfind("<svg").unwrap();
        &html[start..start + html[start..].find("</svg>").unwrap() + "</svg>".len()]
    }

    #[test]
    fn a_tune_report_of_37_windows_reads_at_1280_px() {
        let html = render(&stored_tune());
        assert_eq!(svg::layout_problems(&html, 1280.0), Vec::<String>::new());
        let charts = svg::drawn(&html);
        // Two knobs x (req/s, p99), the latency plot, the windows over time, and one memory
        // chart: 10 configurations.
        let titles: Vec<&str> = charts.iter().map(|c| c.title.as_str()).collect();
        assert_eq!(charts.len(), 7, "{titles:?}");
        let over_time = chart_of(&html, "Requests/s and failures/s of each window");
        assert_eq!(over_time.matches("<circle").count(), 2 * 37);
        let memory = chart_of(&html, "Memory per worker (MiB), by configuration");
        let labels: Vec<String> = svg::drawn(memory)[0].labels.iter().map(|l| l.text.clone()).collect();
        assert!(!labels.iter().any(|l| l.contains(" #")), "rounds of one configuration are one group: {labels:?}");
        assert_eq!(memory.matches("class=\"bar\"").count(), 3 * 10, "10 configurations, 3 bars each");
        // on/off are categories: points with error bars, no line between them.
        let keepalive = chart_of(&html, "Requests/s by keepalive");
        assert!(!keepalive.contains("<polyline"), "{keepalive}");
        assert_eq!(keepalive.matches("class=\"error-bar\"").count(), 2);
        assert!(chart_of(&html, "Requests/s by workers").contains("<polyline"));
        // The latency axis is log: decades from 1 ms to 1000 ms.
        let latency = chart_of(&html, "Latency by percentile");
        assert!(latency.contains(">1000</text>") && latency.contains(">1</text>"), "{latency}");
        // The kept step shows its challenger and its verdict, not "(kept)".
        assert!(html.contains("Step 1: keepalive stays on; best challenger keepalive=off (worse)"), "{html}");
        assert!(html.contains("<b>worse</b>"));
        assert!(html.contains("<th>kept</th><th>challenger</th>"));
        assert!(!html.contains("(kept)</h2>"));
    }

    #[test]
    fn a_bench_report_shows_total_and_first_byte_apart_and_throughput_over_time() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        h.record_n(2_000, 9_000).unwrap();
        h.record_n(950_000, 20).unwrap();
        let b64 = crate::aggregate::codec::encode(&h).unwrap();
        let latency = serde_json::json!({"count": 1000, "min": 1.0, "mean": 10.0, "stdev": 5.0, "p50": 9.0,
            "p75": 12.0, "p90": 15.0, "p99": 20.0, "p999": 21.0, "max": 22.0});
        let v = serde_json::json!({
            "schema": "webtune.bench.v1", "webtune_version": "0", "started_at": "", "interrupted": false,
            "target": {"url": "http://x/", "method": "GET"},
            "options": {"connections": 1, "threads": 1, "keepalive": true, "timeout_s": 10.0, "pacing": "closed"},
            "result": {"duration_s": 10.0, "requests": 9020, "succeeded": 9000, "failed": 20,
                "requests_per_s": 900.0, "length_differed": 0, "in_flight_at_end": 0,
                "status": {}, "errors": {}, "bytes": {"headers": 0, "body": 0, "total": 0, "per_s": 0.0},
                "connections": {"opened": 1, "server_closed_idle": 0},
                "latency_ms": {"connect": latency, "first_byte": latency, "total": latency},
                "histograms": {"total": b64, "first_byte": b64}},
            "reply_rate": {"samples": 10, "min": 850.0, "mean": 900.0, "max": 950.0, "stdev": 30.0,
                "per_second": [900.0, 910.0, 950.0, 850.0, 900.0, 880.0, 920.0, 900.0, 890.0, 900.0],
                "failed_per_second": [0.0, 0.0, 10.0, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]},
            "client_cpu": {"user_s": 0.0, "sys_s": 0.0, "percent_of_available": 0.0, "cores_available": 1},
            "warnings": []
        });
        let report: BenchReport = serde_json::from_value(v).unwrap();
        let row = RunRow {
            id: 3,
            kind: "bench".into(),
            started_at: String::new(),
            target: "http://x/".into(),
            summary: String::new(),
            status: "done".into(),
        };
        let html = render(&Stored::Bench { row, report: Box::new(report) });
        assert_eq!(svg::layout_problems(&html, 1280.0), Vec::<String>::new());
        assert_eq!(svg::drawn(&html).len(), 2);
        // Identical curves, still both visible: a thick solid one under a thin dashed one.
        let latency = chart_of(&html, "Latency by percentile");
        let lines: Vec<&str> = latency.split("<polyline").skip(1).collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].contains("stroke-dasharray=\"\"") && lines[1].contains("stroke-dasharray=\"8 5\""));
        let over_time = chart_of(&html, "Replies and failures per second");
        assert!(over_time.contains("succeeded/s") && over_time.contains("failed/s"));
        assert_eq!(over_time.matches("<circle").count(), 20);
    }
}
