//! PHP-FPM: one pool (pm static, dynamic or ondemand) on a unix socket in the run directory,
//! behind an nginx front that the adapter starts too. The app directory is the document root
//! (*.php go to the pool).

use std::path::Path;

use super::adapter::{Adapter, Ctx, Prepared, write};
use super::fpm::{fpm_program, own_front};
use super::phpfpm_tree;
use crate::server::file::TargetFile;
use crate::server::process::Spawn;
use crate::server::settings::{Count, Typed};

/// The PHP-FPM adapter (one pool, behind an nginx front).
pub struct PhpFpm;

const NATIVE: [(&str, &str); 5] = [
    ("workers", "pm.max_children"),
    ("max_requests", "pm.max_requests"),
    ("start_workers", "pm.start_servers"),
    ("min_spare", "pm.min_spare_servers"),
    ("max_spare", "pm.max_spare_servers"),
];

/// The pool's directives for `values`.
fn pool_lines(values: &Typed) -> anyhow::Result<String> {
    if values.preload().is_some() {
        anyhow::bail!("php-fpm has no preload to switch (opcache.preload is a php.ini setting)");
    }
    let pm = values.native("pm").unwrap_or("static");
    let w = values.workers().map_or("5", Count::text);
    let mut out = format!("pm = {pm}\npm.max_children = {w}\n");
    if pm == "dynamic" {
        out += &format!(
            "pm.start_servers = {}\npm.min_spare_servers = {}\npm.max_spare_servers = {}\n",
            values.start_workers().map_or("1", Count::text),
            values.min_spare().map_or("1", Count::text),
            values.max_spare().map_or(w, Count::text)
        );
    }
    if let Some(b) = values.backlog() {
        out += &format!("listen.backlog = {b}\n");
    }
    if let Some(n) = values.max_requests() {
        out += &format!("pm.max_requests = {n}\n");
    }
    // keep-alive belongs to the nginx front.
    for (k, v) in values.natives().filter(|(k, _)| *k != "pm") {
        out += &format!("{k} = {v}\n");
    }
    Ok(out)
}

impl Adapter for PhpFpm {
    fn name(&self) -> &'static str {
        "php-fpm"
    }

    fn takes_front(&self) -> bool {
        false
    }

    fn reserved(&self) -> &'static [&'static str] {
        &[
            "include",
            "listen",
            "user",
            "group",
            "chroot",
            "chdir",
            "prefix",
            "pid",
            "error_log",
            "slowlog",
            "access.log",
        ]
    }

    fn default_value(&self, knob: &str) -> Option<&'static str> {
        // pm.max_requests 0; pm.max_children and the spares have no default (php-fpm refuses a pool without them).
        (knob == "max_requests").then_some("0")
    }

    fn native(&self, knob: &str) -> Option<&'static str> {
        NATIVE.iter().find(|(k, _)| *k == knob).map(|(_, n)| *n)
    }

    /// The user's php-fpm.conf: read with its includes; what cannot be rewritten is refused.
    fn check_config_file(&self, path: &Path) -> Result<(), String> {
        phpfpm_tree::check(path).map(|_| ())
    }

    fn check_target(&self, file: &TargetFile) -> Result<(), (&'static str, String)> {
        phpfpm_tree::check_target(file)
    }

    fn diffs(&self, file: &TargetFile, values: &Typed) -> anyhow::Result<Vec<(String, String)>> {
        match file.config.file() {
            Some(main) => phpfpm_tree::diffs(file, &main.path, values),
            None => Ok(Vec::new()),
        }
    }

    fn current(&self, file: &TargetFile) -> anyhow::Result<Vec<(String, String)>> {
        let Some(main) = file.config.file() else { return Ok(Vec::new()) };
        let t = phpfpm_tree::FpmTree::read(&main.path).map_err(anyhow::Error::msg)?;
        let pool = t.pool(file.pool.as_deref()).map_err(anyhow::Error::msg)?;
        Ok(t.current(&pool))
    }

    fn expected_workers_in(&self, file: &TargetFile, values: &Typed) -> Option<usize> {
        let Some(main) = file.config.file() else { return self.expected_workers(values) };
        let t = phpfpm_tree::FpmTree::read(&main.path).ok()?;
        t.start_workers(&t.pool(file.pool.as_deref()).ok()?, values)
    }

    fn prepare(&self, ctx: &Ctx, values: &Typed) -> anyhow::Result<Prepared> {
        if let Some(main) = ctx.file.config.file() {
            return phpfpm_tree::prepare(ctx, values, &main.path);
        }
        let d = ctx.run_dir_text();
        if ctx.app().is_none() {
            std::fs::create_dir_all(format!("{d}/html"))?;
            write(ctx.dir, "html/index.php", "<?php echo \"webtune php-fpm target\\n\";\n")?;
        }
        let user = if nix::unistd::geteuid().is_root() { "user = www-data\ngroup = www-data\n" } else { "" };
        let sock = format!("{d}/fpm.sock");
        let fpm = format!(
            "[global]\npid = {d}/php-fpm.pid\nerror_log = {d}/php-fpm.err\nlog_level = notice\ndaemonize = no\n\n\
             [webtune]\n{user}listen = {sock}\nlisten.mode = 0666\npm.status_path = /fpm-status\n\
             catch_workers_output = yes\n{}",
            pool_lines(values)?
        );
        write(ctx.dir, "php-fpm.conf", &fpm)?;
        let (front, nginx) = own_front(ctx, values, &sock)?;
        let program = ctx.file.program.clone().unwrap_or_else(fpm_program);
        Ok(Prepared {
            config_text: format!("{fpm}\n# nginx front\n{nginx}"),
            spawns: vec![
                Spawn::new(
                    "php-fpm",
                    &program,
                    vec!["--nodaemonize".into(), "--fpm-config".into(), format!("{d}/php-fpm.conf")],
                ),
                front,
            ],
            master: 0,
            error_logs: vec![ctx.dir.join("php-fpm.err"), ctx.dir.join("php-fpm.log"), ctx.dir.join("error.log")],
            status_path: Some("/fpm-status?json".into()),
            front: Some(1),
        })
    }

    fn recommend(&self, file: &TargetFile, values: &Typed) -> String {
        if let Some(lines) = file.config.file().and_then(|main| phpfpm_tree::recommend(file, &main.path, values)) {
            return lines;
        }
        pool_lines(values).unwrap_or_default().trim_end().to_string()
    }

    fn counters(&self, body: &str) -> Option<serde_json::Value> {
        let v: serde_json::Value = serde_json::from_str(body).ok()?;
        let n = |k: &str| v.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
        Some(serde_json::json!({
            "busy": n("active processes"),
            "idle": n("idle processes"),
            "alive": n("total processes"),
            "total_requests": n("accepted conn"),
            "listen_queue": n("listen queue"),
            "max_children_reached": n("max children reached"),
        }))
    }

    fn saturation(&self) -> &'static [&'static str] {
        &["reached pm.max_children", "reached max_children"]
    }

    fn expected_workers(&self, values: &Typed) -> Option<usize> {
        match values.native("pm").unwrap_or("static") {
            "dynamic" => values.start_workers().map_or(Some(1), Count::number),
            "ondemand" => Some(0),
            _ => values.workers().map_or(Some(5), Count::number),
        }
    }
}
