//! gunicorn, sync workers. The app is a Python file (module:app, "app" by default), a
//! directory with app.py, or a module path (`mysite.wsgi:application`) imported from `chdir`
//! and `pythonpath`. A `config = "gunicorn.conf.py"` is the base configuration: webtune's
//! flags come after it, and gunicorn lets the command line win.

use std::path::Path;

use super::adapter::{Adapter, Ctx, PoolFlags, Prepared, pool_flags, write};
use crate::server::file::App;
use crate::server::file::TargetFile;
use crate::server::process::Spawn;
use crate::server::settings::Typed;

/// The gunicorn adapter (sync workers).
pub struct Gunicorn;

/// Its spelling of the canonical knobs.
const FLAGS: PoolFlags = PoolFlags {
    server: "gunicorn",
    keepalive_timeout: "--keep-alive",
    keepalive_off: &["--keep-alive", "0"],
    preload: "--preload",
};

/// gunicorn's `module:callable` for a path app: a file's stem, or app.py in a directory.
fn path_entry(app: &Path) -> String {
    match app.is_dir() {
        true => "app:app".into(),
        false => format!("{}:app", app.file_stem().unwrap_or_default().to_string_lossy()),
    }
}

/// What gunicorn imports: `module:callable`, or none when the configuration file names it
/// (its wsgi_app setting).
fn entry(file: &TargetFile) -> Option<String> {
    match file.app.as_ref()? {
        App::Module { module, callable } => Some(format!("{module}:{callable}")),
        App::Path(p) => Some(path_entry(&p.path)),
    }
}

/// A Python string literal (JSON's escapes are Python's).
fn py_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// webtune's own configuration file: the user's (every setting and hook), then what webtune
/// owns. gunicorn has no flag that turns `daemon` off, and a daemon leaves the process group
/// webtune stops; logs and the pid file go to the run directory or the server's output.
fn wrapper(user: Option<&Path>, run_dir: &str, pythonpath: &[String]) -> String {
    let mut out = String::from("# Written by webtune for this run; the user's file is only read.\n");
    // Here, not --pythonpath: gunicorn splits that at commas, and a directory may hold one.
    // The config runs in the master before the app is imported, in the master or a worker.
    if !pythonpath.is_empty() {
        let dirs: Vec<String> = pythonpath.iter().map(|d| py_str(d)).collect();
        out += &format!("import sys as _webtune_sys\n_webtune_sys.path[0:0] = [{}]\n", dirs.join(", "));
    }
    if let Some(u) = user {
        out += &format!(
            "import runpy as _webtune_runpy\n\
             globals().update((k, v) for k, v in _webtune_runpy.run_path({}).items() if not k.startswith(\"__\"))\n",
            py_str(&u.display().to_string())
        );
    }
    // The user's logging setups (files, syslog, a statsd host) would write or send outside
    // the run: its log is the run's.
    out += &format!(
        "daemon = False\npidfile = None\nerrorlog = \"-\"\n\
         logconfig = None\nlogconfig_dict = {{}}\nlogconfig_json = None\nsyslog = False\nstatsd_host = None\n\
         if globals().get(\"accesslog\"):\n    accesslog = {}\n",
        py_str(&format!("{run_dir}/access.log"))
    );
    out
}

impl Adapter for Gunicorn {
    fn name(&self) -> &'static str {
        "gunicorn"
    }

    fn default_value(&self, knob: &str) -> Option<&'static str> {
        // gunicorn's settings reference: --workers 1, --max-requests 0, --keep-alive 2, --backlog 2048.
        Some(match knob {
            "workers" => "1",
            "max_requests" => "0",
            "keepalive_timeout" => "2",
            "backlog" => "2048",
            _ => return None,
        })
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

    fn prepare(&self, ctx: &Ctx, values: &Typed) -> anyhow::Result<Prepared> {
        let file = ctx.file;
        let config = file.config.file().map(|c| c.path.as_path());
        if file.app.is_none() && config.is_none() {
            anyhow::bail!("gunicorn needs app = a Python file, directory or module path (pkg.module:callable)");
        }
        let app_dir = match &file.app {
            Some(App::Path(p)) if p.path.is_dir() => Some(p.path.clone()),
            Some(App::Path(p)) => p.path.parent().map(Path::to_path_buf),
            _ => None,
        };
        let chdir = file.chdir.as_ref().map(|c| c.path.clone()).or_else(|| app_dir.clone());
        // gunicorn reads gunicorn.conf.py from the directory it changes to when no --config
        // names one: webtune's --config stands in for it, so it is read through webtune's.
        let default_config = chdir.as_ref().map(|d| d.join("gunicorn.conf.py")).filter(|p| p.is_file());
        // A path app given with a chdir of its own is still imported from its directory.
        let mut pythonpath: Vec<String> = file.pythonpath.iter().map(|p| p.path.display().to_string()).collect();
        if let Some(a) = app_dir.filter(|_| file.chdir.is_some()) {
            pythonpath.insert(0, a.display().to_string());
        }
        let d = ctx.run_dir_text();
        let wrapper_text = wrapper(config.or(default_config.as_deref()), &d, &pythonpath);
        let wrapper_path = write(ctx.dir, "gunicorn.conf.py", &wrapper_text)?;
        let mut args = vec![
            "--config".into(),
            wrapper_path.display().to_string(),
            "--bind".into(),
            format!("{}:{}", ctx.host, ctx.port),
        ];
        if let Some(c) = &chdir {
            args.extend(["--chdir".into(), c.display().to_string()]);
        }
        args.extend(pool_flags(&FLAGS, values)?);
        args.extend(entry(file));
        let spawn = Spawn::new("gunicorn", file.program.as_deref().unwrap_or("gunicorn"), args);
        Ok(Prepared {
            config_text: format!("{}\n\n# {}\n{wrapper_text}", spawn.display(), wrapper_path.display()),
            spawns: vec![spawn],
            master: 0,
            error_logs: vec![ctx.dir.join("gunicorn.log")],
            status_path: None,
            front: None,
        })
    }

    fn recommend(&self, file: &TargetFile, values: &Typed) -> String {
        let mut words = vec!["gunicorn".to_string()];
        if let Some(c) = file.config.file() {
            words.extend(["--config".into(), c.written.clone()]);
        }
        // A path app is imported from its directory, as the user wrote it.
        let app_dir = match &file.app {
            Some(App::Path(p)) if p.path.is_dir() => Some(p.written.clone()),
            Some(App::Path(p)) => Some(
                Path::new(&p.written)
                    .parent()
                    .map(|d| d.display().to_string())
                    .filter(|d| !d.is_empty())
                    .unwrap_or(".".into()),
            ),
            _ => None,
        };
        let mut pythonpath: Vec<String> = file.pythonpath.iter().map(|p| p.written.clone()).collect();
        match (&file.chdir, app_dir) {
            (Some(c), app_dir) => {
                if !c.written.is_empty() {
                    words.extend(["--chdir".into(), c.written.clone()]);
                }
                pythonpath.splice(0..0, app_dir);
            }
            (None, Some(d)) => words.extend(["--chdir".into(), d]),
            (None, None) => {}
        }
        // gunicorn splits --pythonpath at commas: a directory with one goes in PYTHONPATH.
        if pythonpath.iter().any(|d| d.contains(',')) {
            words.insert(0, format!("PYTHONPATH='{}'", pythonpath.join(":").replace('\'', r"'\''")));
        } else if !pythonpath.is_empty() {
            words.extend(["--pythonpath".into(), pythonpath.join(",")]);
        }
        words.extend(pool_flags(&FLAGS, values).unwrap_or_default());
        words.extend(entry(file));
        words.join(" ")
    }

    fn reserved(&self) -> &'static [&'static str] {
        &["bind", "config", "chdir", "pythonpath", "daemon", "pid"]
    }

    /// A Python file: nothing to read before gunicorn runs it (webtune's own configuration
    /// overrides what webtune must own).
    fn check_config_file(&self, path: &Path) -> Result<(), String> {
        match path.is_file() {
            true => Ok(()),
            false => Err(format!("{} is not a file (gunicorn's configuration is a Python file)", path.display())),
        }
    }
}
