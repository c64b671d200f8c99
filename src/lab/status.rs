//! `/server-status`: the scoreboard as text or JSON, as Apache's mod_status shows it.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use super::config::LabConfig;
use super::scoreboard::{Scoreboard, State};

/// The status page's body: totals and each live worker, as JSON or as text.
pub fn render(board: &Scoreboard, cfg: &LabConfig, json: bool) -> String {
    let t = board.totals();
    let workers: Vec<serde_json::Value> = board
        .slots()
        .iter()
        .filter(|s| s.state() != State::Empty)
        .map(|s| {
            serde_json::json!({
                "pid": s.pid.load(Ordering::Relaxed),
                "state": s.state().name(),
                "requests": s.requests.load(Ordering::Relaxed),
            })
        })
        .collect();
    let count = |st: State| board.count(st);
    let summary = serde_json::json!({
        "workers_max": cfg.workers,
        "alive": board.alive(),
        "idle": count(State::Idle),
        "busy": count(State::Busy),
        "keepalive": count(State::KeepAlive),
        "starting": count(State::Starting),
        "total_requests": t.requests.load(Ordering::Relaxed),
        "forked": t.forked.load(Ordering::Relaxed),
        "recycled": t.recycled.load(Ordering::Relaxed),
        "all_busy_samples": t.all_busy_samples.load(Ordering::Relaxed),
        "samples": t.samples.load(Ordering::Relaxed),
        "sample_interval_ms": super::signals::SAMPLE.as_millis() as u64,
        "workers": workers,
    });
    if json {
        return format!("{summary:#}\n");
    }
    let mut out = String::new();
    let v = |k: &str| summary[k].as_u64().unwrap_or(0);
    let _ = writeln!(out, "webtune lab status");
    let _ = writeln!(
        out,
        "workers: {} alive of {} max; {} idle, {} busy, {} keep-alive, {} starting",
        v("alive"),
        v("workers_max"),
        v("idle"),
        v("busy"),
        v("keepalive"),
        v("starting")
    );
    let _ = writeln!(
        out,
        "requests: {} total; workers forked {}, recycled after max-requests {}",
        v("total_requests"),
        v("forked"),
        v("recycled")
    );
    let _ = writeln!(
        out,
        "all workers busy in {} of {} samples ({} ms apart)",
        v("all_busy_samples"),
        v("samples"),
        v("sample_interval_ms")
    );
    let _ = writeln!(out, "\n{:>8}  {:<10} {:>10}", "pid", "state", "requests");
    for w in summary["workers"].as_array().into_iter().flatten() {
        let (pid, requests) = (w["pid"].as_i64().unwrap_or(0), w["requests"].as_u64().unwrap_or(0));
        let _ = writeln!(out, "{pid:>8}  {:<10} {requests:>10}", w["state"].as_str().unwrap_or(""));
    }
    out
}
