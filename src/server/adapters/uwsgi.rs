//! uWSGI with its Python 3 plugin on an HTTP socket: processes, max-requests, reload-on-rss,
//! cheaper; counters from its stats socket. The app is a WSGI file (or a directory with app.py).

use super::{Adapter, Ctx, Prepared, native_flags, on};
use crate::server::process::Spawn;

/// The uWSGI (Python 3) adapter.
pub struct Uwsgi;

fn flags(values: &[(String, String)]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for (k, v) in values {
        match k.as_str() {
            "workers" => out.extend(["--processes".into(), v.clone()]),
            "max_requests" => out.extend(["--max-requests".into(), v.clone()]),
            "backlog" => out.extend(["--listen".into(), v.clone()]),
            "min_spare" => out.extend(["--cheaper".into(), v.clone()]),
            "start_workers" => out.extend(["--cheaper-initial".into(), v.clone()]),
            "preload" if !on(v) => out.push("--lazy-apps".into()),
            "preload" => {}
            "keepalive" if on(v) => out.push("--http-keepalive".into()),
            "keepalive" => {}
            "keepalive_timeout" | "max_spare" => anyhow::bail!("uwsgi: {k} does not apply (try cheaper, cheaper-step)"),
            _ => {}
        }
    }
    out.extend(native_flags(values));
    Ok(out)
}

impl Adapter for Uwsgi {
    fn name(&self) -> &'static str {
        "uwsgi"
    }

    fn native(&self, knob: &str) -> Option<&'static str> {
        Some(match knob {
            "workers" => "--processes",
            "max_requests" => "--max-requests",
            "backlog" => "--listen",
            "min_spare" => "--cheaper",
            "start_workers" => "--cheaper-initial",
            "preload" => "--lazy-apps (off)",
            "keepalive" => "--http-keepalive",
            _ => return None,
        })
    }

    fn prepare(&self, ctx: &Ctx, values: &[(String, String)]) -> anyhow::Result<Prepared> {
        let app = ctx.app().ok_or_else(|| anyhow::anyhow!("uwsgi needs app = a WSGI file or directory"))?;
        let file = if app.is_dir() { app.join("app.py") } else { app.to_path_buf() };
        let d = ctx.d();
        let mut args = vec![
            "--plugin".into(),
            "python3".into(),
            "--master".into(),
            "--http-socket".into(),
            format!("{}:{}", ctx.host, ctx.port),
            "--wsgi-file".into(),
            file.display().to_string(),
            "--callable".into(),
            "app".into(),
            "--stats".into(),
            format!("{d}/stats.sock"),
            "--die-on-term".into(),
        ];
        args.extend(flags(values)?);
        let spawn = Spawn::new("uwsgi", ctx.file.program.as_deref().unwrap_or("uwsgi"), args);
        Ok(Prepared {
            config_text: spawn.display(),
            spawns: vec![spawn],
            master: 0,
            error_logs: vec![ctx.dir.join("uwsgi.log")],
            status_path: None,
            front: None,
        })
    }

    fn recommend(&self, values: &[(String, String)]) -> String {
        format!("uwsgi {}", flags(values).unwrap_or_default().join(" "))
    }

    fn counters(&self, body: &str) -> Option<serde_json::Value> {
        let v: serde_json::Value = serde_json::from_str(body).ok()?;
        let workers = v.get("workers")?.as_array()?;
        let busy = workers.iter().filter(|w| w.get("status").and_then(|s| s.as_str()) == Some("busy")).count();
        let requests: u64 = workers.iter().filter_map(|w| w.get("requests").and_then(|r| r.as_u64())).sum();
        Some(serde_json::json!({
            "busy": busy, "alive": workers.len(), "idle": workers.len() - busy,
            "total_requests": requests, "listen_queue": v.get("listen_queue").cloned().unwrap_or_default(),
        }))
    }

    fn read_counters(&self, at: &super::Where) -> Option<serde_json::Value> {
        self.counters(&read_stats(at.dir)?)
    }

    fn saturation(&self) -> &'static [&'static str] {
        &["listen queue of socket", "is full !!!"]
    }
}

/// The most the stats socket may send: a few kilobytes a worker, for hundreds of workers.
const MAX_STATS: usize = 8 << 20;

/// Reads uWSGI's stats socket (a JSON document, then close).
fn read_stats(dir: &std::path::Path) -> Option<String> {
    let s = std::os::unix::net::UnixStream::connect(dir.join("stats.sock")).ok()?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    let stop = crate::sys::interrupt_if_installed();
    let out = crate::sys::bounded::Bounded::new(&s, deadline, MAX_STATS, stop, "uwsgi's stats").read_to_end().ok()?;
    String::from_utf8(out).ok()
}
