//! uWSGI with its Python 3 plugin on an HTTP socket: processes, max-requests, reload-on-rss,
//! cheaper; counters from its stats socket. The app is a WSGI file (or a directory with
//! app.py), or a module path (`mysite.wsgi:application`) imported from `chdir` and
//! `pythonpath`. A `config = "app.ini"` is read first (`--ini`), webtune's options after it.

use std::path::Path;

use super::adapter::{Adapter, Ctx, Prepared, native_flags};
use crate::server::file::App;
use crate::server::file::TargetFile;
use crate::server::process::Spawn;
use crate::server::settings::{Knob, Typed};

/// The uWSGI (Python 3) adapter.
pub struct Uwsgi;

fn flags(values: &Typed) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for knob in values.knobs() {
        match knob {
            Knob::Workers(n) => out.extend(["--processes".into(), n.to_string()]),
            Knob::MaxRequests(n) => out.extend(["--max-requests".into(), n.to_string()]),
            Knob::Backlog(n) => out.extend(["--listen".into(), n.to_string()]),
            Knob::MinSpare(n) => out.extend(["--cheaper".into(), n.to_string()]),
            Knob::StartWorkers(n) => out.extend(["--cheaper-initial".into(), n.to_string()]),
            Knob::Preload(false) => out.push("--lazy-apps".into()),
            Knob::Preload(true) => {}
            Knob::Keepalive(true) => out.push("--http-keepalive".into()),
            Knob::Keepalive(false) => {}
            Knob::KeepaliveTimeout(_) | Knob::MaxSpare(_) => {
                anyhow::bail!("uwsgi: {} does not apply (try cheaper, cheaper-step)", knob.name())
            }
            Knob::Native(..) => {}
        }
    }
    out.extend(native_flags(values));
    Ok(out)
}

impl Adapter for Uwsgi {
    fn name(&self) -> &'static str {
        "uwsgi"
    }

    fn default_value(&self, knob: &str) -> Option<&'static str> {
        // uWSGI: one process, never recycled, listen queue 100.
        Some(match knob {
            "workers" => "1",
            "max_requests" => "0",
            "backlog" => "100",
            _ => return None,
        })
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

    fn prepare(&self, ctx: &Ctx, values: &Typed) -> anyhow::Result<Prepared> {
        let file = ctx.file;
        let ini = file.config.file().map(|c| c.path.as_path());
        if file.app.is_none() && ini.is_none() {
            anyhow::bail!("uwsgi needs app = a WSGI file, directory or module path (pkg.module:callable)");
        }
        let d = ctx.run_dir_text();
        let mut args = Vec::new();
        // First, so that every option of webtune's after it wins.
        if let Some(i) = ini {
            args.extend(["--ini".into(), i.display().to_string()]);
        }
        args.extend([
            "--plugin".into(),
            "python3".into(),
            "--master".into(),
            "--http-socket".into(),
            format!("{}:{}", ctx.host, ctx.port),
        ]);
        if let Some(c) = &file.chdir {
            args.extend(["--chdir".into(), c.path.display().to_string()]);
        }
        for p in &file.pythonpath {
            args.extend(["--pythonpath".into(), p.path.display().to_string()]);
        }
        args.extend(entry(file, |p| p.path.display().to_string()));
        // --need-app: an app that does not import stops uwsgi with its error, rather than
        // leaving it up to answer every request with 500.
        args.extend(["--stats".into(), format!("{d}/stats.sock"), "--die-on-term".into(), "--need-app".into()]);
        // The ini's pid files are written in the run directory instead.
        if let Some(i) = ini {
            for (_, key, _) in ini_options(i).map_err(|e| anyhow::anyhow!("{}: {e}", i.display()))? {
                if PID_FILES.contains(&key.as_str()) {
                    args.extend([format!("--{key}"), format!("{d}/{key}")]);
                }
            }
        }
        args.extend(flags(values)?);
        let spawn = Spawn::new("uwsgi", file.program.as_deref().unwrap_or("uwsgi"), args);
        Ok(Prepared {
            config_text: spawn.display(),
            spawns: vec![spawn],
            master: 0,
            error_logs: vec![ctx.dir.join("uwsgi.log")],
            status_path: None,
            front: None,
        })
    }

    fn recommend(&self, file: &TargetFile, values: &Typed) -> String {
        let mut words = vec!["uwsgi".to_string()];
        if let Some(c) = file.config.file() {
            words.extend(["--ini".into(), c.written.clone()]);
        }
        if let Some(c) = file.chdir.as_ref().filter(|c| !c.written.is_empty()) {
            words.extend(["--chdir".into(), c.written.clone()]);
        }
        for p in &file.pythonpath {
            words.extend(["--pythonpath".into(), p.written.clone()]);
        }
        words.extend(entry(file, |p| p.written.clone()));
        words.extend(flags(values).unwrap_or_default());
        words.join(" ")
    }

    fn reserved(&self) -> &'static [&'static str] {
        &["ini", "chdir", "pythonpath", "module", "wsgi-file", "callable", "stats", "daemonize", "logto", "pidfile"]
    }

    fn check_config_file(&self, path: &Path) -> Result<(), String> {
        let options = ini_options(path).map_err(|e| format!("{}: {e}", path.display()))?;
        for (line, key, value) in options {
            // exec-* and hook-* run commands at each phase; @(exec://...) reads one's output.
            let runs_a_program = key.starts_with("exec-") || key.starts_with("hook-") || value.contains("exec://");
            let why = match REFUSED.iter().find(|(keys, _)| keys.contains(&key.as_str())) {
                Some((_, why)) => Some(*why),
                None if runs_a_program => {
                    Some("uwsgi would run this command, which webtune cannot keep to loopback and the run directory")
                }
                None => None,
            };
            if let Some(why) = why {
                return Err(format!(
                    "{}:{line}: {key} = {value}: {why}; give webtune a copy of the ini without it \
                     (webtune never writes your files, and owns the server's port, foreground and log)",
                    path.display()
                ));
            }
        }
        Ok(())
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

    fn read_counters(&self, at: &super::adapter::Where) -> Option<serde_json::Value> {
        self.counters(&read_stats(at.dir)?)
    }

    fn saturation(&self) -> &'static [&'static str] {
        &["listen queue of socket", "is full !!!"]
    }
}

/// What uwsgi imports: `--module module:callable`, or `--wsgi-file FILE --callable app` for a
/// path (`shown` writes the path), or nothing when the ini names it.
fn entry(file: &TargetFile, shown: impl Fn(&crate::server::file::UserPath) -> String) -> Vec<String> {
    match &file.app {
        Some(App::Module { module, callable }) => vec!["--module".into(), format!("{module}:{callable}")],
        Some(App::Path(p)) => {
            let wsgi_file = match p.path.is_dir() {
                true => format!("{}/app.py", shown(p).trim_end_matches('/')),
                false => shown(p),
            };
            vec!["--wsgi-file".into(), wsgi_file, "--callable".into(), "app".into()]
        }
        None => Vec::new(),
    }
}

/// ini keys webtune refuses, and why: uwsgi adds each of them to what it does (a socket more,
/// a log elsewhere), and an option after them cannot take that away.
const REFUSED: [(&[&str], &str); 5] = [
    (
        &[
            "socket",
            "uwsgi-socket",
            "http-socket",
            "https-socket",
            "http",
            "https",
            "http2",
            "fastcgi-socket",
            "fastcgi-nph-socket",
            "scgi-socket",
            "scgi-nph-socket",
            "raw-socket",
            "puwsgi-socket",
            "suwsgi-socket",
            "ssl-socket",
            "shared-socket",
            "zerg",
            "zerg-server",
            "fastrouter",
            "emperor",
            "stats-server",
            "udp",
            "snmp",
            "multicast",
        ],
        "uwsgi would listen there as well as on webtune's loopback port",
    ),
    (
        &[
            "attach-daemon",
            "attach-daemon2",
            "smart-attach-daemon",
            "smart-attach-daemon2",
            "attach-control-daemon",
            "legion-attach-daemon",
            "cron",
            "cron2",
            "unique-cron",
            "legion-cron",
        ],
        "uwsgi would start this program beside the server, which webtune cannot keep to loopback and the run directory",
    ),
    (&["daemonize", "daemonize2"], "uwsgi would leave the foreground, beyond webtune's reach"),
    (
        &["logto", "logto2", "logger", "req-logger", "log-socket", "master-fifo"],
        "uwsgi would write its log (or a FIFO) outside the run directory, where webtune cannot read it",
    ),
    (
        &["ini", "include", "inherit", "json", "yaml", "yml", "xml", "sqlite3", "ldap"],
        "webtune cannot check the file it pulls in",
    ),
];

/// ini keys uwsgi writes a file at, given again on the command line to write in the run
/// directory (the last one given wins).
const PID_FILES: [&str; 4] = ["pidfile", "pidfile2", "safe-pidfile", "safe-pidfile2"];

/// The options of an ini file's [uwsgi] section, the section uwsgi reads by default: line
/// number, key, value (uwsgi ignores `http_socket`: keys are taken as written).
fn ini_options(path: &Path) -> std::io::Result<Vec<(usize, String, String)>> {
    let text = crate::input::read_text(path, "uwsgi ini").map_err(|e| std::io::Error::other(e.0))?;
    let mut in_uwsgi = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_uwsgi = section.trim() == "uwsgi";
            continue;
        }
        if in_uwsgi {
            let (key, value) = line.split_once('=').unwrap_or((line, "true"));
            out.push((i + 1, key.trim().to_string(), value.trim().to_string()));
        }
    }
    Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An ini that would make uwsgi listen elsewhere, detach or log elsewhere is refused at its
    /// line; pid files and the stats socket are given again on the command line instead.
    #[test]
    fn an_ini_is_refused_at_the_line_webtune_cannot_override() {
        let dir = tempfile::tempdir().unwrap();
        let ini = dir.path().join("app.ini");
        let ok = "; a comment\n[uwsgi]\nprocesses = 3\npidfile = /run/app.pid\nstats = 127.0.0.1:9191\nmaster\n";
        std::fs::write(&ini, ok).unwrap();
        assert_eq!(Uwsgi.check_config_file(&ini), Ok(()));
        let options = ini_options(&ini).unwrap();
        assert_eq!(options[0], (3, "processes".to_string(), "3".to_string()));
        assert_eq!(options[3], (6, "master".to_string(), "true".to_string()));
        for (line, why) in [
            ("http = :8000", "listen there as well"),
            ("socket = /tmp/app.sock", "listen there as well"),
            ("daemonize = /var/log/app.log", "leave the foreground"),
            ("logto = /var/log/app.log", "outside the run directory"),
            ("ini = other.ini", "cannot check the file it pulls in"),
            ("udp = 0.0.0.0:5005", "listen there as well"),
            ("snmp = 0.0.0.0:2161", "listen there as well"),
            ("attach-daemon = python3 -m http.server --bind 0.0.0.0 8009", "start this program"),
            ("cron = -1 -1 -1 -1 -1 touch /tmp/x", "start this program"),
            ("exec-pre-app = touch /tmp/x", "run this command"),
            ("hook-as-root = exec:touch /tmp/x", "run this command"),
            ("env = TOKEN=@(exec://cat /etc/hostname)", "run this command"),
        ] {
            std::fs::write(&ini, format!("[uwsgi]\nprocesses = 3\n{line}\n[other]\nhttp = :1\n")).unwrap();
            let e = Uwsgi.check_config_file(&ini).unwrap_err();
            assert!(e.starts_with(&format!("{}:3: {line}: uwsgi", ini.display())) || e.contains(why), "{e}");
            assert!(e.contains(why), "{e}");
        }
        // Other sections are not read by uwsgi, nor here.
        std::fs::write(&ini, "[other]\nhttp = :1\n[uwsgi]\nprocesses = 2\n").unwrap();
        assert_eq!(Uwsgi.check_config_file(&ini), Ok(()));
    }
}
