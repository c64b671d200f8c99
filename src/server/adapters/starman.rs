//! Starman, the pre-forking PSGI server: --workers, --max-requests, --preload-app. The app is a
//! .psgi file, whatever its name (or a directory with app.psgi).

use super::adapter::{Adapter, Ctx, Prepared, native_flags, on};
use crate::server::file::App;
use crate::server::file::TargetFile;
use crate::server::process::Spawn;

/// The Starman (PSGI) adapter.
pub struct Starman;

fn flags(values: &[(String, String)]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for (k, v) in values {
        match k.as_str() {
            "workers" => out.extend(["--workers".into(), v.clone()]),
            "max_requests" => out.extend(["--max-requests".into(), v.clone()]),
            "backlog" => out.extend(["--backlog".into(), v.clone()]),
            "keepalive_timeout" => out.extend(["--keepalive-timeout".into(), super::adapter::seconds(v)?.to_string()]),
            "keepalive" if !on(v) => out.push("--disable-keepalive".into()),
            "keepalive" => {}
            "preload" if on(v) => out.push("--preload-app".into()),
            "preload" => {}
            "start_workers" | "min_spare" | "max_spare" => {
                anyhow::bail!("starman has a fixed pool: {k} does not apply")
            }
            _ => {}
        }
    }
    out.extend(native_flags(values));
    Ok(out)
}

impl Adapter for Starman {
    fn name(&self) -> &'static str {
        "starman"
    }

    /// Its own manual: "requests" actually means "connections served by a worker".
    fn recycles_per_connection(&self) -> bool {
        true
    }

    fn default_value(&self, knob: &str) -> Option<&'static str> {
        // Starman: --workers 5, --max-requests 1000, --backlog 1024.
        Some(match knob {
            "workers" => "5",
            "max_requests" => "1000",
            "backlog" => "1024",
            _ => return None,
        })
    }

    fn native(&self, knob: &str) -> Option<&'static str> {
        Some(match knob {
            "workers" => "--workers",
            "max_requests" => "--max-requests",
            "preload" => "--preload-app",
            "backlog" => "--backlog",
            "keepalive" => "--disable-keepalive",
            "keepalive_timeout" => "--keepalive-timeout",
            _ => return None,
        })
    }

    fn prepare(&self, ctx: &Ctx, values: &[(String, String)]) -> anyhow::Result<Prepared> {
        let app = ctx.app().ok_or_else(|| anyhow::anyhow!("starman needs app = a .psgi file or directory"))?;
        let file = if app.is_dir() { app.join("app.psgi") } else { app.to_path_buf() };
        let mut args = vec!["--listen".into(), format!("{}:{}", ctx.host, ctx.port)];
        args.extend(flags(values)?);
        args.push(file.display().to_string());
        let spawn = Spawn::new("starman", ctx.file.program.as_deref().unwrap_or("starman"), args);
        Ok(Prepared {
            config_text: spawn.display(),
            spawns: vec![spawn],
            master: 0,
            error_logs: vec![ctx.dir.join("starman.log")],
            status_path: None,
            front: None,
        })
    }

    fn recommend(&self, file: &TargetFile, values: &[(String, String)]) -> String {
        // The app as the user wrote it: any .psgi file, or a directory with app.psgi.
        let app = match &file.app {
            Some(App::Path(p)) if p.path.is_dir() => format!("{}/app.psgi", p.written.trim_end_matches('/')),
            Some(App::Path(p)) => p.written.clone(),
            _ => "app.psgi".into(),
        };
        let mut words = vec!["starman".to_string()];
        words.extend(flags(values).unwrap_or_default());
        words.push(app);
        words.join(" ")
    }
}
