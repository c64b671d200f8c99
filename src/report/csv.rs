//! CSV: a bench run as one wide row of figures, a tune run as one row per measured point, a
//! comparison as one row per metric, the run list as one row per run. Fields are quoted as
//! RFC 4180 says.

use std::io::{self, Write};

use crate::aggregate::BenchReport;
use crate::aggregate::result::LatencyStats;
use crate::engine::ErrorClass;
use crate::report::compare::Comparison;
use crate::store::RunRow;
use crate::tune::Point;

/// A field, quoted when it holds a comma, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

fn line(out: &mut impl Write, fields: &[String]) -> io::Result<()> {
    writeln!(out, "{}", fields.join(","))
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// The latency columns of each phase, in order: `total_p50_ms`, ... `connect_max_ms`.
const PHASES: [&str; 3] = ["total", "first_byte", "connect"];
/// A statistic's column name and how to read it.
type Stat = (&'static str, fn(&LatencyStats) -> f64);
const STATS: [Stat; 8] = [
    ("min", |l| l.min),
    ("mean", |l| l.mean),
    ("p50", |l| l.p50),
    ("p75", |l| l.p75),
    ("p90", |l| l.p90),
    ("p99", |l| l.p99),
    ("p999", |l| l.p999),
    ("max", |l| l.max),
];

/// A bench run as a header and one row: what ran, the counts and rates, the latency of each
/// phase, a column per error class (every class, so runs line up) and one per status code
/// the run saw. `id` is the stored run's (empty when not stored).
pub fn bench(id: Option<i64>, report: &BenchReport, out: &mut impl Write) -> io::Result<()> {
    let r = &report.result;
    let o = &report.options;
    let mut columns: Vec<(String, String)> = vec![
        ("id".into(), opt(id)),
        ("started_at".into(), field(&report.started_at)),
        ("url".into(), field(&report.target.url)),
        ("method".into(), field(&report.target.method)),
        ("connections".into(), o.connections.to_string()),
        ("threads".into(), o.threads.to_string()),
        ("duration_s".into(), format!("{:.3}", r.duration_s)),
        ("requests".into(), r.requests.to_string()),
        ("succeeded".into(), r.succeeded.to_string()),
        ("failed".into(), r.failed.to_string()),
        ("requests_per_s".into(), format!("{:.3}", r.requests_per_s)),
        ("bytes".into(), r.bytes.total.to_string()),
        ("bytes_headers".into(), r.bytes.headers.to_string()),
        ("bytes_body".into(), r.bytes.body.to_string()),
        ("bytes_per_s".into(), format!("{:.3}", r.bytes.per_s)),
    ];
    let lat = &r.latency_ms;
    for (phase, stats) in PHASES.iter().zip([&lat.total, &lat.first_byte, &lat.connect]) {
        for (name, get) in STATS {
            let value = stats.as_ref().map_or(String::new(), |s| format!("{:.3}", get(s)));
            columns.push((format!("{phase}_{name}_ms"), value));
        }
    }
    // Every class, in the engine's order, then any other class a report names.
    let mut classes: Vec<String> = ErrorClass::ALL.iter().map(|c| c.name().to_string()).collect();
    classes.extend(r.errors.keys().filter(|k| !classes.contains(k)).cloned().collect::<Vec<_>>());
    for class in classes {
        let n = r.errors.get(&class).copied().unwrap_or(0);
        columns.push((format!("errors_{class}"), n.to_string()));
    }
    for (code, n) in &r.status {
        columns.push((format!("status_{code}"), n.to_string()));
    }
    let (names, values): (Vec<String>, Vec<String>) = columns.into_iter().unzip();
    line(out, &names)?;
    line(out, &values)
}

/// A tune run's points, one row each.
pub fn points(points: &[Point], out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "step,status,cause,requests_per_s,p99_ms,worker_uss_max_kib,pss_total_kib,settings,server_cpus,client_cpus,shared,client_share"
    )?;
    for p in points {
        let m = p.memory();
        let place = p.placement.as_ref();
        line(
            out,
            &[
                field(&p.step),
                (if p.ok() { "ok" } else { "failed" }).into(),
                field(p.cause().unwrap_or("")),
                if p.ok() { format!("{:.3}", p.rps()) } else { String::new() },
                if p.ok() { format!("{:.3}", p.p99()) } else { String::new() },
                opt(m.map(|m| m.worker_uss_max_kib)),
                opt(m.map(|m| m.pss_total_kib)),
                field(&p.settings.label()),
                field(&opt(place.and_then(|pl| pl.server.as_ref()))),
                field(&opt(place.map(|pl| &pl.client))),
                opt(place.map(|pl| pl.shared)),
                p.client_share.map_or(String::new(), |s| format!("{s:.4}")),
            ],
        )?;
    }
    Ok(())
}

/// Two runs compared, one row per metric.
pub fn comparison(c: &Comparison, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "before_id,after_id,metric,before,after,change_pct,beyond_spread,interval_low_pct,interval_high_pct"
    )?;
    for r in &c.rows {
        line(
            out,
            &[
                c.before.to_string(),
                c.after.to_string(),
                field(&r.metric),
                r.before.to_string(),
                r.after.to_string(),
                opt(r.change_pct),
                opt(r.beyond_spread),
                opt(r.interval_pct.map(|i| i.0)),
                opt(r.interval_pct.map(|i| i.1)),
            ],
        )?;
    }
    Ok(())
}

/// The stored runs, one row each.
pub fn runs(rows: &[RunRow], out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "id,kind,started_at,status,target,summary")?;
    for r in rows {
        line(
            out,
            &[
                r.id.to_string(),
                field(&r.kind),
                field(&r.started_at),
                field(&r.status),
                field(&r.target),
                field(&r.summary),
            ],
        )?;
    }
    Ok(())
}
