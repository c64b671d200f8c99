//! CSV exports of stored runs: a bench run as one row of figures, a tune run as one row per
//! measured point. Fields are quoted as RFC 4180 says.

use std::io::{self, Write};

use crate::aggregate::result::LatencyStats;
use crate::store::Stored;

/// A field, quoted when it holds a comma, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

/// Writes `run` as CSV with a header line.
pub fn write(run: &Stored, out: &mut impl Write) -> io::Result<()> {
    match run {
        Stored::Bench { row, report } => {
            let r = &report.result;
            let l = r.latency_ms.total.as_ref();
            let f = |g: fn(&LatencyStats) -> f64| l.map_or(String::new(), |l| format!("{:.3}", g(l)));
            writeln!(
                out,
                "id,started_at,url,connections,requests,succeeded,failed,requests_per_s,mean_ms,p50_ms,p90_ms,p99_ms,p999_ms,max_ms"
            )?;
            writeln!(
                out,
                "{},{},{},{},{},{},{},{:.3},{},{},{},{},{},{}",
                row.id,
                row.started_at,
                field(&row.target),
                report.options.connections,
                r.requests,
                r.succeeded,
                r.failed,
                r.requests_per_s,
                f(|l| l.mean),
                f(|l| l.p50),
                f(|l| l.p90),
                f(|l| l.p99),
                f(|l| l.p999),
                f(|l| l.max)
            )?;
        }
        Stored::Tune { points, .. } => {
            writeln!(
                out,
                "step,status,cause,requests_per_s,p99_ms,worker_uss_max_kib,pss_total_kib,settings,server_cpus,client_cpus,shared,client_share"
            )?;
            for p in points {
                let m = p.memory();
                let place = p.placement.as_ref();
                writeln!(
                    out,
                    "{},{},{},{},{},{},{},{},{},{},{},{}",
                    field(&p.step),
                    if p.ok() { "ok" } else { "failed" },
                    field(p.cause().unwrap_or("")),
                    if p.ok() { format!("{:.3}", p.rps()) } else { String::new() },
                    if p.ok() { format!("{:.3}", p.p99()) } else { String::new() },
                    m.map_or(String::new(), |m| m.worker_uss_max_kib.to_string()),
                    m.map_or(String::new(), |m| m.pss_total_kib.to_string()),
                    field(&p.settings.label()),
                    field(&place.and_then(|pl| pl.server.as_ref()).map_or(String::new(), |c| c.to_string())),
                    field(&place.map_or(String::new(), |pl| pl.client.to_string())),
                    place.map_or(String::new(), |pl| pl.shared.to_string()),
                    p.client_share.map_or(String::new(), |s| format!("{s:.4}"))
                )?;
            }
        }
    }
    Ok(())
}
