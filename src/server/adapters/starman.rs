//! Starman, the pre-forking PSGI server: --workers, --max-requests, --preload-app. The app is a
//! .psgi file, whatever its name (or a directory with app.psgi).

use super::adapter::{Adapter, Ctx, Prepared, native_flags};
use crate::server::file::App;
use crate::server::file::TargetFile;
use crate::server::process::Spawn;
use crate::server::settings::{Knob, Typed};

/// The Starman (PSGI) adapter.
pub struct Starman;

fn flags(values: &Typed) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for knob in values.knobs() {
        match knob {
            Knob::Workers(n) => out.extend(["--workers".into(), n.to_string()]),
            Knob::MaxRequests(n) => out.extend(["--max-requests".into(), n.to_string()]),
            Knob::Backlog(n) => out.extend(["--backlog".into(), n.to_string()]),
            Knob::KeepaliveTimeout(t) => out.extend(["--keepalive-timeout".into(), t.seconds()?.to_string()]),
            Knob::Keepalive(false) => out.push("--disable-keepalive".into()),
            Knob::Keepalive(true) => {}
            Knob::Preload(true) => out.push("--preload-app".into()),
            Knob::Preload(false) => {}
            Knob::StartWorkers(_) | Knob::MinSpare(_) | Knob::MaxSpare(_) => {
                anyhow::bail!("starman has a fixed pool: {} does not apply", knob.name())
            }
            Knob::Native(..) => {}
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

    fn prepare(&self, ctx: &Ctx, values: &Typed) -> anyhow::Result<Prepared> {
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

    fn recommend(&self, file: &TargetFile, values: &Typed) -> String {
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
