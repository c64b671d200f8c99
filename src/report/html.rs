//! `webtune report ID --html`: one self-contained page (inline CSS and SVG, no script, no
//! network) for a stored bench run or tune experiment.

use std::fmt::Write;

use hdrhistogram::Histogram;

use super::svg::{self, Series, XAxis, escape};
use crate::aggregate::BenchReport;
use crate::store::Stored;
use crate::tune::{Outcome, Point};

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:0 auto;max-width:980px;padding:12px;color:#222}\
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:8px 0;font-size:.9em;display:block;overflow-x:auto}\
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}\
tr.changed td{background:#fde2e2}pre{background:#f6f6f6;padding:8px;overflow-x:auto}\
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:12px}\
.chart{max-width:100%;height:auto}p.ev{margin:.3em 0}";

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
    out.push_str("</table><h2>Latency distribution</h2><div class=\"charts\">");
    let series: Vec<Series> = [
        ("total", &res.histograms.as_ref().and_then(|h| h.total.clone())),
        ("first byte", &res.histograms.as_ref().and_then(|h| h.first_byte.clone())),
    ]
    .iter()
    .filter_map(|(n, h)| Some(Series { name: n.to_string(), points: percentile_points(h.as_deref()?)? }))
    .collect();
    if !series.is_empty() {
        out.push_str(&svg::lines("Latency by percentile", "percentile", "ms", XAxis::Percentile, &series));
    }
    out.push_str("</div>");
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

fn tune(out: &mut String, strategy: &str, points: &[Point], outcome: Option<&Outcome>) {
    let _ = write!(out, "<p>Strategy <b>{}</b>; {} points measured.</p>", escape(strategy), points.len());
    if let Some(p) = points.iter().find_map(|p| p.placement.as_ref()) {
        let share = points.iter().map(|p| p.client_share).fold(None, crate::tune::point::max_share);
        let share = share.map_or(String::new(), |s| format!("; the client took at most {:.1}% of the CPU", s * 100.0));
        let _ = write!(out, "<p>Placement: {}{share}.</p>", escape(&p.describe()));
    }
    match outcome {
        Some(o) => {
            let _ = write!(out, "<h2>Recommended configuration</h2><pre>{}</pre>", escape(&o.config));
            for (k, v, why) in &o.evidence {
                let _ = write!(out, "<p class=\"ev\"><b>{} = {}</b>: {}</p>", escape(k), escape(v), escape(why));
            }
            if let Some(s) = &o.stopped {
                let _ = write!(out, "<p>Stopped early ({}): the best found so far.</p>", escape(s));
            }
        }
        None => out.push_str("<p>The experiment did not finish (interrupted or still running): its points so far.</p>"),
    }
    // Throughput and p99 against each swept knob: the points that differ from the first in it.
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
        let at = |f: &dyn Fn(&Point) -> f64| -> Vec<(f64, f64)> {
            values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| {
                    swept.iter().find(|p| p.settings.get(knob) == Some(v.as_str())).map(|p| (i as f64, f(p)))
                })
                .collect()
        };
        let cats = XAxis::Categories(values.clone());
        out.push_str(&svg::lines(
            &format!("Requests/s by {knob}"),
            knob,
            "req/s",
            cats,
            &[Series { name: "requests/s".into(), points: at(&|p| p.rps()) }],
        ));
        let cats = XAxis::Categories(values.clone());
        out.push_str(&svg::lines(
            &format!("p99 by {knob}"),
            knob,
            "ms",
            cats,
            &[Series { name: "p99".into(), points: at(&|p| p.p99()) }],
        ));
    }
    out.push_str("</div><h2>Latency distribution</h2><div class=\"charts\">");
    let first = points.iter().find(|p| p.ok());
    let last = outcome
        .and_then(|o| o.steps.iter().rev().find(|s| s.adopted).map(|s| &s.after))
        .or(points.iter().rev().find(|p| p.ok()));
    let series: Vec<Series> = [("first: ", first), ("recommended: ", last)]
        .iter()
        .filter_map(|(n, p)| {
            let p = (*p)?;
            let h = p.samples.iter().find_map(|s| s.histogram.clone())?;
            Some(Series { name: format!("{n}{}", p.step), points: percentile_points(&h)? })
        })
        .collect();
    if !series.is_empty() {
        out.push_str(&svg::lines("Latency by percentile", "percentile", "ms", XAxis::Percentile, &series));
    }
    out.push_str("</div><h2>Memory per worker</h2><div class=\"charts\">");
    let with_mem: Vec<&Point> = points.iter().filter(|p| p.memory().is_some()).collect();
    if !with_mem.is_empty() {
        let cats: Vec<String> = with_mem.iter().map(|p| p.step.clone()).collect();
        let mem = |f: &dyn Fn(&crate::tune::point::MemUse) -> f64| -> Vec<(f64, f64)> {
            with_mem.iter().enumerate().map(|(i, p)| (i as f64, f(p.memory().unwrap()) / 1024.0)).collect()
        };
        out.push_str(&svg::bars(
            "Memory per worker (MiB)",
            "MiB",
            &cats,
            &[
                Series { name: "USS (largest)".into(), points: mem(&|m| m.worker_uss_max_kib as f64) },
                Series { name: "shared (mean)".into(), points: mem(&|m| m.worker_shared_mean_kib as f64) },
                Series {
                    name: "PSS (server / workers)".into(),
                    points: mem(&|m| m.pss_total_kib as f64 / m.workers.max(1) as f64),
                },
            ],
        ));
    }
    out.push_str("</div>");
    if let Some(o) = outcome {
        for (i, s) in o.steps.iter().enumerate() {
            let verdict = crate::tune::table::step_verdict(s);
            match s.challenger_point().filter(|_| !s.adopted) {
                Some(ch) => {
                    let _ = write!(
                        out,
                        "<h2>Step {}: {} stays {}; best challenger {} ({verdict})</h2>",
                        i + 1,
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
                        i + 1,
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
    out.push_str("<h2>Every point</h2><table><tr><th>step</th><th>status</th><th>req/s</th><th>p99 ms</th><th>worker USS KiB</th></tr>");
    for p in points {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&p.step),
            escape(p.cause().unwrap_or("ok")),
            if p.ok() { format!("{:.1}", p.rps()) } else { "-".into() },
            if p.ok() { format!("{:.2}", p.p99()) } else { "-".into() },
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
