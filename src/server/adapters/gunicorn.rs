//! gunicorn, sync workers: the app is a Python file (module:app, "app" by default) or a
//! directory with app.py.

use super::{Adapter, Ctx, Prepared, native_flags, on, seconds};
use crate::server::process::Spawn;

/// The gunicorn adapter (sync workers).
pub struct Gunicorn;

fn flags(values: &[(String, String)]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for (k, v) in values {
        match k.as_str() {
            "workers" => out.extend(["--workers".into(), v.clone()]),
            "max_requests" => out.extend(["--max-requests".into(), v.clone()]),
            "backlog" => out.extend(["--backlog".into(), v.clone()]),
            "keepalive_timeout" => out.extend(["--keep-alive".into(), seconds(v)?.to_string()]),
            "keepalive" if !on(v) => out.extend(["--keep-alive".into(), "0".into()]),
            "keepalive" => {}
            "preload" if on(v) => out.push("--preload".into()),
            "preload" => {}
            "start_workers" | "min_spare" | "max_spare" => {
                anyhow::bail!("gunicorn has a fixed pool: {k} does not apply")
            }
            _ => {}
        }
    }
    out.extend(native_flags(values));
    Ok(out)
}

impl Adapter for Gunicorn {
    fn name(&self) -> &'static str {
        "gunicorn"
    }

    fn native(&self, knob: &str) -> Option<&'static str> {
        Some(match knob {
            "workers" => "--workers",
            "max_requests" => "--max-requests",
            "keepalive" | "keepalive_timeout" => "--keep-alive",
            "preload" => "--preload",
            "backlog" => "--backlog",
            _ => return None,
        })
    }

    fn prepare(&self, ctx: &Ctx, values: &[(String, String)]) -> anyhow::Result<Prepared> {
        let app = ctx.app().ok_or_else(|| anyhow::anyhow!("gunicorn needs app = a Python file or directory"))?;
        let (dir, module) = if app.is_dir() {
            (app.to_path_buf(), "app:app".to_string())
        } else {
            let stem = app.file_stem().unwrap_or_default().to_string_lossy().into_owned();
            (app.parent().unwrap_or(app).to_path_buf(), format!("{stem}:app"))
        };
        let mut args =
            vec!["--bind".into(), format!("{}:{}", ctx.host, ctx.port), "--chdir".into(), dir.display().to_string()];
        args.extend(flags(values)?);
        args.push(module);
        let spawn = Spawn::new("gunicorn", ctx.file.program.as_deref().unwrap_or("gunicorn"), args);
        Ok(Prepared {
            config_text: spawn.display(),
            spawns: vec![spawn],
            master: 0,
            error_logs: vec![ctx.dir.join("gunicorn.log")],
            status_path: None,
            front: None,
        })
    }

    fn recommend(&self, values: &[(String, String)]) -> String {
        format!("gunicorn {} app:app", flags(values).unwrap_or_default().join(" "))
    }
}
