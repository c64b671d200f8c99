//! Starman, the pre-forking PSGI server: --workers, --max-requests, --preload-app. The app is a
//! .psgi file, whatever its name (or a directory with app.psgi).

use super::adapter::{Adapter, Ctx, PoolFlags, Prepared, pool_flags};
use crate::server::file::App;
use crate::server::file::TargetFile;
use crate::server::process::Spawn;
use crate::server::settings::Typed;

/// The Starman (PSGI) adapter.
pub struct Starman;

/// Its spelling of the canonical knobs.
const FLAGS: PoolFlags = PoolFlags {
    server: "starman",
    keepalive_timeout: "--keepalive-timeout",
    keepalive_off: &["--disable-keepalive"],
    preload: "--preload-app",
};

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
        args.extend(pool_flags(&FLAGS, values)?);
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
        words.extend(pool_flags(&FLAGS, values).unwrap_or_default());
        words.push(app);
        words.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canonical_knobs_are_flags_in_their_order_and_the_spares_are_refused() {
        let values = Typed::of(&[
            ("preload", "on"),
            ("workers", "4"),
            ("keepalive", "off"),
            ("keepalive_timeout", "2s"),
            ("max_requests", "100"),
            ("user", "www"),
        ]);
        let flags = pool_flags(&FLAGS, &values).unwrap().join(" ");
        assert_eq!(
            flags,
            "--preload-app --workers 4 --disable-keepalive --keepalive-timeout 2 --max-requests 100 --user www"
        );
        let gunicorn = PoolFlags {
            server: "gunicorn",
            keepalive_timeout: "--keep-alive",
            keepalive_off: &["--keep-alive", "0"],
            preload: "--preload",
        };
        assert_eq!(
            pool_flags(&gunicorn, &values).unwrap().join(" "),
            "--preload --workers 4 --keep-alive 0 --keep-alive 2 --max-requests 100 --user www"
        );
        let e = pool_flags(&FLAGS, &Typed::of(&[("min_spare", "1")])).unwrap_err();
        assert_eq!(e.to_string(), "starman has a fixed pool: min_spare does not apply");
    }
}
