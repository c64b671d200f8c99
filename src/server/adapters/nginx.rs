//! nginx serving static files: worker_processes, keepalive_timeout, keepalive_requests,
//! open_file_cache, sendfile, access_log buffering; any other http-level directive passes
//! through as written.

use std::path::Path;

use super::adapter::{Adapter, Ctx, Prepared, write};
use super::nginx_tree;
use crate::server::file::TargetFile;
use crate::server::process::Spawn;
use crate::server::settings::Typed;

/// The nginx adapter, for static files.
pub struct Nginx;

/// The http block's directives for `values` (canonical knobs translated).
fn http_directives(values: &Typed) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    match (values.keepalive().unwrap_or(true), values.keepalive_timeout()) {
        (false, _) => out.push("keepalive_timeout 0;".to_string()),
        (true, Some(t)) => out.push(format!("keepalive_timeout {}s;", t.seconds()?)),
        (true, None) => {}
    }
    if let Some(n) = values.max_requests() {
        anyhow::bail!("nginx workers are not recycled (max_requests {n}): drop the knob for nginx");
    }
    for (k, v) in values.natives().filter(|(k, _)| *k != "access_log") {
        out.push(format!("{k} {v};"));
    }
    Ok(out)
}

impl Adapter for Nginx {
    fn name(&self) -> &'static str {
        "nginx"
    }

    fn takes_front(&self) -> bool {
        false
    }

    fn reserved(&self) -> &'static [&'static str] {
        &[
            "include",
            "listen",
            "server",
            "location",
            "http",
            "events",
            "stream",
            "mail",
            "upstream",
            "load_module",
            "daemon",
            "master_process",
            "pid",
            "user",
            "error_log",
            "server_name",
        ]
    }

    fn syntax(&self) -> &'static [char] {
        &[';', '{', '}']
    }

    fn default_value(&self, knob: &str) -> Option<&'static str> {
        // nginx: worker_processes 1, keepalive_timeout 75s (ngx_core_module, ngx_http_core_module).
        Some(match knob {
            "workers" => "1",
            "keepalive_timeout" => "75s",
            _ => return None,
        })
    }

    fn native(&self, knob: &str) -> Option<&'static str> {
        Some(match knob {
            "workers" => "worker_processes",
            "keepalive" | "keepalive_timeout" => "keepalive_timeout",
            "backlog" => "listen ... backlog=",
            _ => return None,
        })
    }

    /// The user's nginx.conf: read with its includes (judged whole by `check_target`, with
    /// the site to load).
    fn check_config_file(&self, path: &Path) -> Result<(), String> {
        nginx_tree::NginxTree::read(path).map(|_| ())
    }

    fn check_target(&self, file: &TargetFile) -> Result<(), (&'static str, String)> {
        let Some(main) = file.config.file() else { return Ok(()) };
        let key = if file.site.is_some() { "site" } else { "config" };
        let t = nginx_tree::check(&main.path, file).map_err(|e| (key, e))?;
        let loaded = t.loaded_server(t.site_for(file).as_deref()).map_err(|e| (key, e))?;
        crate::server::backends::check(&t.backends(&[], loaded), &file.upstreams).map_err(|e| ("upstreams", e))
    }

    fn diffs(&self, file: &TargetFile, values: &Typed) -> anyhow::Result<Vec<(String, String)>> {
        match file.config.file() {
            Some(main) => nginx_tree::diffs(file, &main.path, values),
            None => Ok(Vec::new()),
        }
    }

    fn current(&self, file: &TargetFile) -> anyhow::Result<Vec<(String, String)>> {
        match file.config.file() {
            Some(main) => Ok(nginx_tree::NginxTree::read(&main.path).map_err(anyhow::Error::msg)?.current()),
            None => Ok(Vec::new()),
        }
    }

    fn prepare(&self, ctx: &Ctx, values: &Typed) -> anyhow::Result<Prepared> {
        if let Some(main) = ctx.file.config.file() {
            return nginx_tree::prepare(ctx, values, &main.path);
        }
        let d = ctx.run_dir_text();
        let root = ctx.app().map_or_else(|| format!("{d}/html"), |a| a.display().to_string());
        if ctx.app().is_none() {
            std::fs::create_dir_all(format!("{d}/html"))?;
            write(ctx.dir, "html/index.html", "<html><body>webtune nginx target</body></html>\n")?;
        }
        let conf = server_conf(ctx, values, &format!("root {root};\n    location = /nginx_status {{ stub_status; }}"))?;
        write(ctx.dir, "nginx.conf", &conf)?;
        let spawn = Spawn::new(
            "nginx",
            ctx.file.program.as_deref().unwrap_or("nginx"),
            vec!["-c".into(), format!("{d}/nginx.conf"), "-p".into(), d.clone(), "-e".into(), format!("{d}/error.log")],
        );
        Ok(Prepared {
            config_text: conf,
            spawns: vec![spawn],
            master: 0,
            error_logs: vec![ctx.dir.join("error.log"), ctx.dir.join("nginx.log")],
            status_path: Some("/nginx_status".into()),
            front: None,
        })
    }

    fn recommend(&self, _file: &TargetFile, values: &Typed) -> String {
        let mut lines = Vec::new();
        if let Some(w) = values.workers() {
            lines.push(format!("worker_processes {w};"));
        }
        lines.extend(http_directives(values).unwrap_or_default());
        if let Some(a) = values.native("access_log") {
            lines.push(if a == "off" {
                "access_log off;".into()
            } else {
                format!("access_log /var/log/nginx/access.log combined {a};")
            });
        }
        if let Some(b) = values.backlog() {
            lines.push(format!("listen ... backlog={b};"));
        }
        lines.join("\n")
    }

    fn counters(&self, body: &str) -> Option<serde_json::Value> {
        // "Active connections: 3 \nserver accepts handled requests\n 5 5 9 \nReading: 0 Writing: 1 Waiting: 2"
        let nums: Vec<u64> = body.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        let [active, accepts, handled, requests, reading, writing, waiting] = nums[..] else { return None };
        Some(serde_json::json!({
            "active": active, "accepts": accepts, "handled": handled, "requests": requests,
            "reading": reading, "writing": writing, "waiting": waiting,
        }))
    }

    fn saturation(&self) -> &'static [&'static str] {
        &["worker_connections are not enough", "Too many open files"]
    }
}

/// A whole nginx.conf in the run directory, with `server_body` in its one server block.
/// Shared with the php-fpm adapter's front.
pub fn server_conf(ctx: &Ctx, values: &Typed, server_body: &str) -> anyhow::Result<String> {
    let d = ctx.run_dir_text();
    let workers = values.workers().map_or("1", |w| w.text());
    let user = if nix::unistd::geteuid().is_root() { "user root;\n" } else { "" };
    let backlog = values.backlog().map_or(String::new(), |b| format!(" backlog={b}"));
    let listen = format!("{}:{}", super::adapter::bracket(ctx.host), ctx.port);
    let http = http_directives(values)?.join("\n  ");
    // access_log "off" or its options ("buffer=32k flush=5s"); the file is the run directory's.
    let access = match values.native("access_log") {
        Some("off") => "access_log off;".to_string(),
        Some(opts) => format!("access_log {d}/access.log combined {opts};"),
        None => format!("access_log {d}/access.log;"),
    };
    Ok(format!(
        "daemon off;\nmaster_process on;\nworker_processes {workers};\n{user}pid {d}/nginx.pid;\n\
         error_log {d}/error.log notice;\nevents {{ worker_connections 4096; }}\n\
         http {{\n  default_type application/octet-stream;\n  {access}\n\
         client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
         uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n  {http}\n\
         server {{\n    listen {listen}{backlog};\n    {server_body}\n  }}\n}}\n"
    ))
}
