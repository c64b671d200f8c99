//! Apache httpd, prefork MPM (or worker or event: `mpm = "worker"`, `workers` then counting
//! threads in processes of ThreadsPerChild), with mod_perl 2: ModPerl::Registry scripts, preloaded Perl
//! modules and handlers, Apache::ASP pages. The app directory follows a convention:
//! `startup.pl` (PerlRequire'd in the parent, before the fork), `perl/` (Registry scripts at
//! /perl/), `htdocs/` (the document root; *.asp by Apache::ASP), `handlers.conf` (included:
//! Locations with PerlResponseHandler). An app directory written by `webtune fileset` is the
//! document root itself, and `file_cache = "none" | "mmap" | "open"` maps every file of its set
//! with mod_file_cache (MMapFile or CacheFile). Any other knob is a directive:
//! "PerlSetVar Debug", AllowOverride (on the document root), BufferedLogs, EnableMMAP,
//! EnableSendfile, ListenBacklog... A directive the user sets replaces the adapter's default
//! for it (`"PerlSetVar StateDir"`, `Global`, `LogLevel`...). `app_config` (htaccess | server)
//! moves the app's own directives (the Apache::ASP handler and every PerlSetVar) into the
//! document root's .htaccess or its `<Directory>` block.
//!
//! With `config = "PATH/apache2.conf"` none of that layout applies: the user's own tree runs
//! from a copy (apache_tree.rs reads and rewrites it), the knobs land on its directives, and
//! the answer is a diff of its files.

use std::path::{Component, Path};

use super::adapter::{Adapter, Ctx, Prepared, bracket, write};
use super::apache_tree::{ApacheTree, MODULES, STATUS};
use crate::fileset;
use crate::input::is_on;
use crate::server::file::TargetFile;
use crate::server::process::Spawn;
use crate::server::settings::{Count, Knob, Typed};
use crate::server::tree::CopyPlace;

/// The Apache httpd adapter (prefork MPM, mod_perl).
pub struct Apache;

/// webtune's knob that moves the app's directives (the seed's ".htaccess yes/no").
const APP_CONFIG: &str = "app_config";
const STATE_DIR: &str = "PerlSetVar StateDir";
/// More entries than this in an app's htdocs are refused (each becomes a link in the run
/// directory when app_config is set).
const MAX_DOCROOT_ENTRIES: usize = 10_000;

/// Where the app's directives go: the document root's `.htaccess`, re-read by Apache on
/// every request, or the server's `<Directory>` block, read once at start.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AppConfig {
    Htaccess,
    Server,
}

impl AppConfig {
    fn parse(v: &str) -> Result<AppConfig, String> {
        match v {
            "htaccess" => Ok(AppConfig::Htaccess),
            "server" => Ok(AppConfig::Server),
            _ => Err(format!("{APP_CONFIG} = {v:?}: expected \"htaccess\" or \"server\"")),
        }
    }
}

impl Adapter for Apache {
    fn name(&self) -> &'static str {
        "apache"
    }

    /// MaxConnectionsPerChild limits "the number of connections" a child handles, not requests.
    fn recycles_per_connection(&self) -> bool {
        true
    }

    fn reserved(&self) -> &'static [&'static str] {
        &[
            "Include",
            "IncludeOptional",
            "Listen",
            "LoadModule",
            "LoadFile",
            "PerlRequire",
            "PerlModule",
            "PerlPostConfigRequire",
            "PerlConfigRequire",
            "PerlLoadModule",
            "PerlSwitches",
            "ServerRoot",
            "PidFile",
            "ErrorLog",
            "CustomLog",
            "TransferLog",
            "User",
            "Group",
            "CoreDumpDirectory",
            "ScriptAlias",
            "Alias",
            "DocumentRoot",
        ]
    }

    fn syntax(&self) -> &'static [char] {
        &['<', '>']
    }

    fn check_value(&self, name: &str, value: &str) -> Result<(), String> {
        if name == APP_CONFIG {
            AppConfig::parse(value)?;
        }
        if name.eq_ignore_ascii_case(STATE_DIR)
            && !value.starts_with('/')
            && (value.is_empty()
                || Path::new(value).components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)))
        {
            return Err(format!(
                "{name} = {value:?}: an absolute path, or a relative one inside the run directory (no .., not empty)"
            ));
        }
        if name == "file_cache" && !FILE_CACHE.contains(&value) {
            return Err(format!("file_cache = {value:?}: expected \"none\", \"mmap\" or \"open\""));
        }
        if name == "http2" && !["on", "off", "true", "false"].contains(&value) {
            return Err(format!("http2 = {value:?}: expected on or off"));
        }
        if name == "mpm" && !MPMS.contains(&value) {
            return Err(format!("mpm = {value:?}: expected \"prefork\", \"worker\" or \"event\""));
        }
        if name == "ThreadsPerChild" && !value.parse::<u32>().is_ok_and(|n| n >= 1) {
            return Err(format!("ThreadsPerChild = {value:?}: expected a whole number of threads, at least 1"));
        }
        Ok(())
    }

    fn default_value(&self, knob: &str) -> Option<&'static str> {
        // The prefork MPM's and core's defaults (httpd 2.4 documentation).
        Some(match knob {
            "workers" => "256",
            "max_requests" => "0",
            "start_workers" => "5",
            "min_spare" => "5",
            "max_spare" => "10",
            "keepalive" => "on",
            "keepalive_timeout" => "5",
            "backlog" => "511",
            _ => return None,
        })
    }

    fn native(&self, knob: &str) -> Option<&'static str> {
        Some(match knob {
            "workers" => "MaxRequestWorkers",
            "max_requests" => "MaxConnectionsPerChild",
            "start_workers" => "StartServers",
            "min_spare" => "MinSpareServers",
            "max_spare" => "MaxSpareServers",
            "keepalive" => "KeepAlive",
            "keepalive_timeout" => "KeepAliveTimeout",
            "backlog" => "ListenBacklog",
            _ => return None,
        })
    }

    fn check_config_file(&self, path: &Path) -> Result<(), String> {
        ApacheTree::read(path).map(|_| ())
    }

    /// A proxying tree's backends must be named (`upstreams`) before any start.
    fn check_target(&self, file: &TargetFile) -> Result<(), (&'static str, String)> {
        let Some(config) = file.config.file() else { return Ok(()) };
        let tree = ApacheTree::read(&config.path).map_err(|e| ("config", e))?;
        crate::server::backends::check(&tree.backends(), &file.upstreams).map_err(|e| ("upstreams", e))
    }

    fn check_site(&self, config: &Path, site: &str) -> Result<(), String> {
        ApacheTree::read(config)?.site(site).map(|_| ())
    }

    fn diffs(&self, file: &TargetFile, values: &Typed) -> anyhow::Result<Vec<(String, String)>> {
        let Some(config) = file.config.file() else { return Ok(Vec::new()) };
        let tree = ApacheTree::read(&config.path).map_err(anyhow::Error::msg)?;
        let (ops, _) = tree.knob_ops(&tree_settings(&tree, values)?);
        Ok(tree.tree.diffs(&tree.edited(&ops)))
    }

    fn current(&self, file: &TargetFile) -> anyhow::Result<Vec<(String, String)>> {
        let Some(config) = file.config.file() else { return Ok(Vec::new()) };
        let tree = ApacheTree::read(&config.path).map_err(anyhow::Error::msg)?;
        let mut out = Vec::new();
        for knob in crate::server::settings::CANONICAL {
            let Some(native) = self.native(knob) else { continue };
            if let Some(v) = tree.current(native) {
                let v = if knob == "keepalive" { v.to_ascii_lowercase() } else { v };
                out.push((knob.to_string(), v));
            }
        }
        Ok(out)
    }

    fn prepare(&self, ctx: &Ctx, values: &Typed) -> anyhow::Result<Prepared> {
        if let Some(config) = ctx.file.config.file() {
            return prepare_tree(ctx, &config.path, values);
        }
        if values.preload().is_some() {
            anyhow::bail!(
                "apache: preload is what startup.pl in the app directory does (PerlRequire, before the fork)"
            );
        }
        let app_config = values.native(APP_CONFIG).map(AppConfig::parse).transpose().map_err(anyhow::Error::msg)?;
        if app_config.is_some() && values.natives().any(|(k, _)| k.eq_ignore_ascii_case("AllowOverride")) {
            anyhow::bail!(
                "apache: app_config sets AllowOverride of the document root itself: drop the AllowOverride knob"
            );
        }
        let d = ctx.run_dir_text();
        let app = ctx.app().map(|a| a.display().to_string());
        let has = |rel: &str| ctx.app().is_some_and(|a| a.join(rel).exists());
        let file_set = ctx.app().and_then(fileset::files);
        let docroot = docroot(ctx, app_config, file_set.is_some())?;
        let m = MODULES;
        let mpm = values.native("mpm").unwrap_or("prefork");
        let user = if nix::unistd::geteuid().is_root() { "User www-data\nGroup www-data\n" } else { "" };
        let mut conf = format!(
            "ServerRoot {d}\n{}DefaultRuntimeDir {d}\nPidFile {d}/apache2.pid\n\
             Listen {}:{}\n{user}ErrorLog {d}/error.log\n{}\
             LogFormat \"%h %l %u %t \\\"%r\\\" %>s %b\" common\nCustomLog {d}/access.log common\n\
             LoadModule mpm_{mpm}_module {m}/mod_mpm_{mpm}.so\n\
             <IfModule !authz_core_module>\nLoadModule authz_core_module {m}/mod_authz_core.so\n</IfModule>\n\
             <IfModule !alias_module>\nLoadModule alias_module {m}/mod_alias.so\n</IfModule>\n\
             <IfModule !dir_module>\nLoadModule dir_module {m}/mod_dir.so\n</IfModule>\n\
             <IfModule !mime_module>\nLoadModule mime_module {m}/mod_mime.so\n</IfModule>\n\
             <IfModule !log_config_module>\nLoadModule log_config_module {m}/mod_log_config.so\n</IfModule>\n\
             <IfModule !status_module>\nLoadModule status_module {m}/mod_status.so\n</IfModule>\n\
             LoadModule perl_module {m}/mod_perl.so\n{}{}",
            default(values, "ServerName", "localhost"),
            bracket(ctx.host),
            ctx.port,
            default(values, "LogLevel", "warn"),
            default(values, "TypesConfig", "/etc/mime.types"),
            default(values, "DirectoryIndex", "index.html index.asp"),
        );
        conf += &mpm_lines(values)?;
        conf += &http2_lines(values, &format!("{m}/mod_http2.so"));

        // The app's own directives: the Apache::ASP handler with its defaults, and every
        // PerlSetVar knob. app_config puts them in the document root's .htaccess or its
        // <Directory> block; without it they stay in the server's main configuration.
        let asp = has("htdocs") && asp_installed();
        let app_lines = app_lines(ctx, values, app.as_deref(), asp)?;
        let allow_override = match app_config {
            Some(AppConfig::Htaccess) => "All",
            Some(AppConfig::Server) => "None",
            None => values.native("AllowOverride").unwrap_or("None"),
        };
        let in_directory = match app_config {
            Some(AppConfig::Server) => indent(&app_lines),
            _ => String::new(),
        };
        conf += &format!(
            "DocumentRoot {docroot}\n<Directory />\n  AllowOverride None\n  Require all denied\n</Directory>\n\
             <Directory {docroot}>\n  AllowOverride {allow_override}\n  Require all granted\n{in_directory}</Directory>\n\
             <Location /server-status>\n  SetHandler server-status\n  Require all granted\n</Location>\n"
        );
        for (k, v) in directives(values).filter(|(k, _)| !is_app_directive(k)) {
            conf += &format!("{k} {v}\n");
        }
        conf += &file_cache_lines(values.native("file_cache"), file_set.as_deref())?;
        if asp {
            conf += "PerlModule Apache::ASP\n";
        }
        match app_config {
            None => conf += &app_lines,
            Some(AppConfig::Htaccess) => {
                write(ctx.dir, "htdocs/.htaccess", &app_lines)?;
            }
            Some(AppConfig::Server) => {}
        }
        if let Some(app) = &app {
            conf += &perl_lines(app, &has);
        }
        write(ctx.dir, "httpd.conf", &conf)?;
        let mut spawn = Spawn::new(
            "apache2",
            ctx.file.program.as_deref().unwrap_or("apache2"),
            vec!["-f".into(), format!("{d}/httpd.conf"), "-DFOREGROUND".into()],
        );
        spawn.env = vec![("APACHE_RUN_DIR".into(), d.clone()), ("APACHE_LOG_DIR".into(), d.clone())];
        Ok(Prepared {
            config_text: conf,
            spawns: vec![spawn],
            master: 0,
            error_logs: vec![ctx.dir.join("error.log"), ctx.dir.join("apache2.log")],
            status_path: Some("/server-status?auto".into()),
            front: None,
        })
    }

    fn recommend(&self, file: &TargetFile, values: &Typed) -> String {
        if let Some(config) = file.config.file() {
            return recommend_tree(&config.path, values);
        }
        let mut out = match values.native("mpm") {
            Some(mpm) => format!("LoadModule mpm_{mpm}_module modules/mod_mpm_{mpm}.so   # the only MPM loaded\n"),
            None => String::new(),
        };
        out += &mpm_lines(values).unwrap_or_default();
        out += &http2_lines(values, "modules/mod_http2.so");
        if let Some(a) = values.native("AllowOverride") {
            out += &format!("AllowOverride {a}   # in the <Directory> of the document root\n");
        }
        for (k, v) in directives(values).filter(|(k, _)| !is_app_directive(k)) {
            out += &format!("{k} {v}\n");
        }
        match values.native("file_cache") {
            Some("mmap") => out += "MMapFile <every file of the set>   # mod_file_cache: one line per file\n",
            Some("open") => out += "CacheFile <every file of the set>  # mod_file_cache: one line per file\n",
            _ => {}
        }
        let app: String =
            directives(values).filter(|(k, _)| is_app_directive(k)).map(|(k, v)| format!("{k} {v}\n")).collect();
        match values.native(APP_CONFIG).and_then(|v| AppConfig::parse(v).ok()) {
            Some(AppConfig::Server) => {
                out += &format!("<Directory /path/to/htdocs>\n  AllowOverride None\n{}</Directory>\n", indent(&app))
            }
            Some(AppConfig::Htaccess) => {
                out += &format!("# in htdocs/.htaccess, with AllowOverride All on the document root:\n{app}")
            }
            None => out += &app,
        }
        out.trim_end().to_string()
    }

    fn counters(&self, body: &str) -> Option<serde_json::Value> {
        let mut map = serde_json::Map::new();
        for line in body.lines() {
            let Some((k, v)) = line.split_once(':') else { continue };
            let key = match k.trim() {
                "BusyWorkers" => "busy",
                "IdleWorkers" => "idle",
                "Total Accesses" => "total_requests",
                "ReqPerSec" => "requests_per_s",
                _ => continue,
            };
            if let Ok(n) = v.trim().parse::<f64>() {
                map.insert(key.into(), serde_json::json!(n));
            }
        }
        if let (Some(b), Some(i)) = (map.get("busy").and_then(|v| v.as_f64()), map.get("idle").and_then(|v| v.as_f64()))
        {
            map.insert("alive".into(), serde_json::json!(b + i));
        }
        (!map.is_empty()).then_some(serde_json::Value::Object(map))
    }

    fn saturation(&self) -> &'static [&'static str] {
        &["reached MaxRequestWorkers", "reached MaxClients"]
    }

    fn expected_workers_in(&self, file: &TargetFile, values: &Typed) -> Option<usize> {
        let Some(config) = file.config.file() else { return self.expected_workers(values) };
        // prefork starts StartServers and keeps MinSpareServers idle, within MaxRequestWorkers
        // (a threaded MPM's processes are not counted here).
        let tree = ApacheTree::read(&config.path).ok()?;
        if tree.mpm().as_deref() != Some("prefork") {
            return None;
        }
        // The knob's number where it is set (its default when that is no number), else the tree's.
        let setting = |knob: Option<&Count>, directive: &str, default: usize| {
            match knob {
                Some(n) => n.number(),
                None => tree.current(directive).and_then(|v| v.parse().ok()),
            }
            .unwrap_or(default)
        };
        let most = setting(values.workers(), "MaxRequestWorkers", 256);
        let start = setting(values.start_workers(), "StartServers", 5);
        Some(start.max(setting(values.min_spare(), "MinSpareServers", 5)).min(most))
    }

    fn expected_workers(&self, values: &Typed) -> Option<usize> {
        match threaded(values) {
            // Child processes, each of ThreadsPerChild threads.
            Some(threads) => match values.start_workers() {
                Some(s) => s.number(),
                None => Some(values.workers()?.number()?.div_ceil(threads)),
            },
            None => values.start_workers().or(values.workers())?.number(),
        }
    }
}

/// The document root: the app's htdocs/ (linked into the run directory when app_config
/// writes into it), a file set's directory, else a fresh htdocs/ in the run directory.
fn docroot(ctx: &Ctx, app_config: Option<AppConfig>, file_set: bool) -> anyhow::Result<String> {
    let d = ctx.run_dir_text();
    let has = |rel: &str| ctx.app().is_some_and(|a| a.join(rel).exists());
    let app = ctx.app().map(|a| a.display().to_string());
    Ok(match (ctx.app().filter(|_| has("htdocs")), app_config) {
        (Some(a), None) => a.join("htdocs").display().to_string(),
        (Some(a), Some(_)) => linked_docroot(ctx, &a.join("htdocs"))?,
        // A file set is the document root itself (linked too when app_config writes into it).
        (None, None) if file_set => app.clone().unwrap_or_default(),
        (None, Some(_)) if file_set => linked_docroot(ctx, ctx.app().unwrap_or(Path::new("/")))?,
        (None, _) => {
            std::fs::create_dir_all(format!("{d}/htdocs"))?;
            write(ctx.dir, "htdocs/index.html", "webtune apache target\n")?;
            format!("{d}/htdocs")
        }
    })
}

/// The app's own directives: the Apache::ASP handler (`asp`) with its defaults, and every
/// PerlSetVar knob.
fn app_lines(ctx: &Ctx, values: &Typed, app: Option<&str>, asp: bool) -> anyhow::Result<String> {
    let mut app_lines = String::new();
    if asp {
        app_lines += "<Files ~ \"\\.asp$\">\n  SetHandler perl-script\n  PerlResponseHandler Apache::ASP\n</Files>\n";
        app_lines += &default(values, "PerlSetVar Global", app.unwrap_or_default());
        if !user_sets(values, STATE_DIR) {
            app_lines += &format!("PerlSetVar StateDir {}\n", state_dir(ctx, "asp-state")?);
        }
    }
    for (k, v) in directives(values).filter(|(k, _)| is_app_directive(k)) {
        let v = if k.eq_ignore_ascii_case(STATE_DIR) { state_dir(ctx, v)? } else { v.to_string() };
        app_lines += &format!("{k} {v}\n");
    }
    Ok(app_lines)
}

/// The app directory's mod_perl parts, where it has them: startup.pl, perl/ scripts run by
/// ModPerl::Registry, and handlers.conf.
fn perl_lines(app: &str, has: &dyn Fn(&str) -> bool) -> String {
    let mut out = String::new();
    if has("startup.pl") {
        out += &format!("PerlSwitches -I{app}/lib\nPerlRequire {app}/startup.pl\n");
    }
    if has("perl") {
        out += &format!(
            "PerlModule ModPerl::Registry\nAlias /perl/ {app}/perl/\n<Location /perl/>\n  SetHandler perl-script\n  \
             PerlResponseHandler ModPerl::Registry\n  PerlOptions +ParseHeaders\n  Options +ExecCGI\n  Require all granted\n</Location>\n"
        );
    }
    if has("handlers.conf") {
        out += &format!("Include {app}/handlers.conf\n");
    }
    out
}

/// Knobs of webtune's own layout that a user's tree sets itself.
const LAYOUT_KNOBS: [&str; 5] = ["preload", "mpm", "file_cache", "http2", APP_CONFIG];

/// The knobs as directives of the user's tree, `(directive, value)`: canonical names become
/// Apache's (`workers` also raises ServerLimit when the tree's, or Apache's default, is
/// below it), any other knob is a directive already.
fn tree_settings(tree: &ApacheTree, values: &Typed) -> anyhow::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (knob, v) in values.entries() {
        let k = knob.name();
        if LAYOUT_KNOBS.contains(&k) {
            anyhow::bail!("apache: {k} is for webtune's own layout; with config = PATH your tree sets it");
        }
        match knob {
            Knob::Workers(n) => {
                let w = n.whole(k)?;
                let threaded = tree.mpm().is_some_and(|m| m != "prefork");
                let per_child = if threaded {
                    tree.current("ThreadsPerChild").and_then(|t| t.parse().ok()).unwrap_or(DEFAULT_THREADS_PER_CHILD)
                } else {
                    1
                };
                // Apache's ServerLimit when unset: 256 processes under prefork, 16 threaded.
                let limit = tree.current("ServerLimit").and_then(|s| s.parse::<usize>().ok()).unwrap_or(if threaded {
                    16
                } else {
                    256
                });
                let processes = w.div_ceil(per_child.max(1));
                if processes > limit {
                    out.push(("ServerLimit".to_string(), processes.to_string()));
                }
                out.push(("MaxRequestWorkers".to_string(), v.to_string()));
            }
            Knob::Keepalive(on) => out.push(("KeepAlive".into(), if *on { "On" } else { "Off" }.into())),
            Knob::KeepaliveTimeout(t) => out.push(("KeepAliveTimeout".into(), t.seconds()?.to_string())),
            _ => out.push((Apache.native(k).unwrap_or(k).to_string(), v.to_string())),
        }
    }
    Ok(out)
}

/// The user's own tree (`config = "PATH/apache2.conf"`), copied into the run directory: the
/// knobs' edits on their directives, the run's rewrites beside them, webtune's own needs in
/// a file of its own read after the tree.
fn prepare_tree(ctx: &Ctx, main: &Path, values: &Typed) -> anyhow::Result<Prepared> {
    let tree = ApacheTree::read(main).map_err(anyhow::Error::msg)?;
    let settings = tree_settings(&tree, values)?;
    let (knob_ops, _) = tree.knob_ops(&settings);
    let d = ctx.run_dir_text();
    let copy = ctx.dir.join("conf");
    std::fs::create_dir_all(ctx.dir.join("logs"))?;
    // A CacheRoot moved here: written by the children, who may run as another user.
    let cache = ctx.dir.join("cache");
    std::fs::create_dir_all(&cache)?;
    std::fs::set_permissions(&cache, std::os::unix::fs::PermissionsExt::from_mode(0o1777))?;
    let host_header = ctx.file.load.headers.iter().find_map(|h| {
        let (name, value) = h.split_once(':')?;
        name.trim().eq_ignore_ascii_case("host").then(|| value.trim())
    });
    let placing = CopyPlace {
        run_dir: &ctx.dir.path,
        copy_dir: &copy,
        host: ctx.host,
        load_port: ctx.port,
        site: ctx.file.site.as_deref(),
        host_header,
        moved: &[],
        as_root: nix::unistd::geteuid().is_root(),
    };
    let mut others = Vec::new();
    let placed = tree.place(&placing, &mut || {
        // Held until every port is chosen, so that no two listeners get the same one (nor
        // the load port, chosen and let go before).
        loop {
            let l = std::net::TcpListener::bind((ctx.host, 0))?;
            let port = l.local_addr()?.port();
            others.push(l);
            if port != ctx.port {
                return Ok(port);
            }
        }
    })?;
    drop(others);
    let main_copy = tree.write_copy(&copy, &knob_ops.merged(&placed.ops))?;
    let own = write(ctx.dir, "webtune.conf", &placed.own)?;
    let mut spawn = Spawn::new(
        "apache2",
        ctx.file.program.as_deref().unwrap_or("apache2"),
        vec![
            "-d".into(),
            copy.display().to_string(),
            "-f".into(),
            main_copy.display().to_string(),
            "-c".into(),
            format!("Include {}", own.display()),
            "-DFOREGROUND".into(),
        ],
    );
    // Debian's envvars as apache2ctl sources them, with the run's own directories.
    let run_dirs = [
        ("APACHE_CONFDIR", copy.display().to_string()),
        ("APACHE_RUN_DIR", d.clone()),
        ("APACHE_LOCK_DIR", d.clone()),
        ("APACHE_PID_FILE", format!("{d}/apache2.pid")),
        ("APACHE_LOG_DIR", format!("{d}/logs")),
    ];
    spawn.env = tree.env.clone();
    spawn.env.retain(|(k, _)| !run_dirs.iter().any(|(r, _)| r == k));
    spawn.env.extend(run_dirs.into_iter().map(|(k, v)| (k.to_string(), v)));
    let mut error_logs = placed.error_logs.clone();
    error_logs.push(ctx.dir.join("apache2.log"));
    let edits = tree.tree.diff(&tree.edited(&knob_ops)).unwrap_or_default();
    let config_text = format!(
        "# the copy of {} in {}, rewritten only to run here:
{}
# the knobs' edits of your files:
{edits}
# {}:
{}",
        tree.tree.base.display(),
        copy.display(),
        placed.said.iter().map(|l| format!("#   {l}")).collect::<Vec<_>>().join("\n"),
        own.display(),
        placed.own
    );
    Ok(Prepared {
        config_text,
        spawns: vec![spawn],
        master: 0,
        error_logs,
        status_path: Some(format!("{STATUS}?auto")),
        front: None,
    })
}

/// The recommendation with a tree: each directive with the file and line it lands on.
fn recommend_tree(main: &Path, values: &Typed) -> String {
    let tree = match ApacheTree::read(main) {
        Ok(t) => t,
        Err(e) => return format!("# {e}"),
    };
    match tree_settings(&tree, values) {
        Ok(settings) => tree.knob_ops(&settings).1.join("\n"),
        Err(e) => format!("# {e}"),
    }
}

/// The values of the `file_cache` knob.
const FILE_CACHE: [&str; 3] = ["none", "mmap", "open"];

/// Knobs this adapter writes itself rather than as `Name value` directives.
const OWN_KNOBS: [&str; 6] = ["AllowOverride", "file_cache", "mpm", "ThreadsPerChild", "http2", APP_CONFIG];

/// The MPMs the `mpm` knob selects.
const MPMS: [&str; 3] = ["prefork", "worker", "event"];

/// Apache's ThreadsPerChild when the knob does not set it.
const DEFAULT_THREADS_PER_CHILD: usize = 25;

/// With a threaded MPM (worker, event): its threads per child process.
fn threaded(values: &Typed) -> Option<usize> {
    match values.native("mpm") {
        Some("worker" | "event") => {
            Some(values.native("ThreadsPerChild").and_then(|t| t.parse().ok()).unwrap_or(DEFAULT_THREADS_PER_CHILD))
        }
        _ => None,
    }
}

/// mod_file_cache for every file of the set: `mmap` maps each (MMapFile), `open` keeps each
/// open (CacheFile), `none` (the default) leaves them to the default handler.
fn file_cache_lines(mode: Option<&str>, files: Option<&[std::path::PathBuf]>) -> anyhow::Result<String> {
    let directive = match mode {
        None | Some("none") => return Ok(String::new()),
        Some("mmap") => "MMapFile",
        Some("open") => "CacheFile",
        Some(other) => anyhow::bail!(Apache.check_value("file_cache", other).unwrap_err()),
    };
    let Some(files) = files else {
        anyhow::bail!("file_cache: the app directory is not a file set (write one with webtune fileset DIR)");
    };
    let mut out = format!(
        "<IfModule !file_cache_module>\nLoadModule file_cache_module {MODULES}/mod_file_cache.so\n</IfModule>\n"
    );
    for f in files {
        let path = f.display().to_string();
        if path.contains('"') || path.chars().any(char::is_control) {
            anyhow::bail!("file_cache: cannot name {path:?} in httpd.conf");
        }
        out += &format!("{directive} \"{path}\"\n");
    }
    Ok(out)
}

/// The prefork directives; unset spares follow the pool (all workers started, none retired).
/// A directive the user sets natively (`StartServers = 3`) replaces the one derived here.
fn mpm_lines(values: &Typed) -> anyhow::Result<String> {
    let mut out = String::new();
    let workers = values.workers();
    if let Some(threads) = threaded(values) {
        // worker/event: `workers` counts threads; whole processes of ThreadsPerChild serve them,
        // all started, spare threads from one process's worth up to all.
        let w: usize = match workers {
            Some(w) => w.whole("workers")?,
            None => threads,
        };
        let processes = w.div_ceil(threads).max(1).to_string();
        let all = (w.div_ceil(threads).max(1) * threads).to_string();
        out += &format!("ThreadsPerChild {threads}\n");
        out += &default(values, "ServerLimit", &processes);
        out += &format!("MaxRequestWorkers {all}\n");
        out += &default(values, "StartServers", values.start_workers().map_or(processes.as_str(), Count::text));
        out +=
            &default(values, "MinSpareThreads", values.min_spare().map_or(threads.to_string().as_str(), Count::text));
        out += &default(values, "MaxSpareThreads", values.max_spare().map_or(all.as_str(), Count::text));
    } else {
        let w = workers.map_or("5", Count::text);
        if workers.is_some() {
            out += &default(values, "ServerLimit", w);
            out += &format!("MaxRequestWorkers {w}\n");
        }
        out += &default(values, "StartServers", values.start_workers().map_or(w, Count::text));
        out += &default(values, "MinSpareServers", values.min_spare().map_or("1", Count::text));
        out += &default(values, "MaxSpareServers", values.max_spare().map_or(w, Count::text));
    }
    if let Some(n) = values.max_requests() {
        out += &format!("MaxConnectionsPerChild {n}\n");
    }
    if let Some(on) = values.keepalive() {
        out += &format!("KeepAlive {}\n", if on { "On" } else { "Off" });
    }
    if let Some(t) = values.keepalive_timeout() {
        out += &format!("KeepAliveTimeout {}\n", t.seconds()?);
    }
    if let Some(b) = values.backlog() {
        out += &format!("ListenBacklog {b}\n");
    }
    Ok(out)
}

/// Whether the user's knobs set directive `name` themselves (Apache ignores the case of
/// directives, mod_perl that of PerlSetVar names).
fn user_sets(values: &Typed, name: &str) -> bool {
    directives(values).any(|(k, _)| k.eq_ignore_ascii_case(name))
}

/// The user's own directives: the knobs that are neither canonical nor written by the adapter
/// itself (OWN_KNOBS).
fn directives(values: &Typed) -> impl Iterator<Item = (&str, &str)> {
    values.natives().filter(|(k, _)| !OWN_KNOBS.contains(k))
}

/// mod_http2 for `http2 = "on"`: HTTP/2 over cleartext, with prior knowledge (what `bench
/// --h2` speaks without TLS) or by upgrade, HTTP/1.1 kept for everything else. Under prefork
/// a connection's streams are served one at a time; the event MPM (`mpm = "event"`) serves
/// them side by side.
fn http2_lines(values: &Typed, module: &str) -> String {
    match values.native("http2") {
        Some(v) if is_on(v) => {
            format!("<IfModule !http2_module>\nLoadModule http2_module {module}\n</IfModule>\nProtocols h2c http/1.1\n")
        }
        _ => String::new(),
    }
}

/// The adapter's default `name value` line, left out when the user sets `name`: wherever the
/// adapter writes a default, the user's own value wins.
fn default(values: &Typed, name: &str, value: &str) -> String {
    if user_sets(values, name) { String::new() } else { format!("{name} {value}\n") }
}

/// The app's own configuration, which app_config moves: PerlSetVar lines.
fn is_app_directive(knob: &str) -> bool {
    knob.split(' ').next().is_some_and(|w| w.eq_ignore_ascii_case("PerlSetVar"))
}

fn indent(lines: &str) -> String {
    lines.lines().map(|l| format!("  {l}\n")).collect()
}

/// Apache::ASP's StateDir: an absolute path is the user's own, used as named; a relative one
/// is made inside the run directory (check_value refused `..`), writable by the workers.
fn state_dir(ctx: &Ctx, value: &str) -> anyhow::Result<String> {
    if value.starts_with('/') {
        return Ok(value.to_string());
    }
    let path = ctx.dir.join(value);
    std::fs::create_dir_all(&path)?;
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777));
    Ok(path.display().to_string())
}

/// A document root in the run directory whose entries link to the app's htdocs: app_config
/// writes its .htaccess there, never into the user's files, and both of its values serve
/// the same tree.
fn linked_docroot(ctx: &Ctx, htdocs: &Path) -> anyhow::Result<String> {
    let root = ctx.dir.join("htdocs");
    std::fs::create_dir_all(&root)?;
    let entries = std::fs::read_dir(htdocs).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", htdocs.display()))?;
    for (i, entry) in entries.enumerate() {
        let entry = entry?;
        if i >= MAX_DOCROOT_ENTRIES {
            anyhow::bail!("app_config: {} has more than {MAX_DOCROOT_ENTRIES} entries", htdocs.display());
        }
        if entry.file_name() == ".htaccess" {
            anyhow::bail!(
                "app_config: {} has its own .htaccess; move its directives into knobs, or drop app_config",
                htdocs.display()
            );
        }
        std::os::unix::fs::symlink(entry.path(), root.join(entry.file_name()))?;
    }
    Ok(root.display().to_string())
}

fn asp_installed() -> bool {
    std::path::Path::new("/usr/share/perl5/Apache/ASP.pm").exists()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::rundir::RunDir;

    /// The configuration the adapter writes for the example bookmarks app and these values.
    fn written(values: &[(&str, &str)]) -> String {
        let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let file = TargetFile::parse(
            "[target]\nadapter = \"apache\"\napp = \"apps/asp-bookmarks\"\n",
            &examples.join("test.toml"),
        )
        .unwrap();
        let values: Vec<(String, String)> = values.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let dir = RunDir::create().unwrap();
        let ctx = Ctx { dir: &dir, host: "127.0.0.1", port: 1, file: &file };
        let prepared = Apache.prepare(&ctx, &Typed::read(&values));
        dir.remove();
        prepared.unwrap().config_text
    }

    fn count(text: &str, directive: &str) -> usize {
        text.lines().filter(|l| l.trim().to_ascii_lowercase().starts_with(&directive.to_ascii_lowercase())).count()
    }

    #[test]
    fn a_directive_the_user_sets_replaces_the_adapters_default() {
        let defaults = written(&[("workers", "3")]);
        for d in ["LogLevel warn", "StartServers 3", "ServerLimit 3", "DirectoryIndex", "PerlSetVar Global"] {
            assert_eq!(count(&defaults, d), 1, "{d} in\n{defaults}");
        }
        let users = written(&[
            ("workers", "3"),
            ("LogLevel", "info"),
            ("StartServers", "2"),
            ("ServerLimit", "8"),
            ("DirectoryIndex", "index.asp"),
            ("perlsetvar global", "/srv/asp"),
            ("PerlSetVar StateDir", "/dev/shm/asp"),
        ]);
        for (directive, line) in [
            ("LogLevel", "LogLevel info"),
            ("StartServers", "StartServers 2"),
            ("ServerLimit", "ServerLimit 8"),
            ("DirectoryIndex", "DirectoryIndex index.asp"),
            ("PerlSetVar Global", "perlsetvar global /srv/asp"),
            ("PerlSetVar StateDir", "PerlSetVar StateDir /dev/shm/asp"),
        ] {
            assert_eq!(count(&users, directive), 1, "{directive} in\n{users}");
            assert!(users.lines().any(|l| l.trim() == line), "{line} not in\n{users}");
        }
        assert!(!users.contains("asp-state"), "{users}");
    }

    /// With a tree: what it sets now (for init), the diff of the knobs, the workers launch
    /// waits for; a value equal to the tree's gives no diff.
    #[test]
    fn a_users_tree_answers_current_diffs_and_expected_workers() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("apache2.conf"),
            "LoadModule mpm_prefork_module /usr/lib/apache2/modules/mod_mpm_prefork.so\nKeepAlive On\n\
             <IfModule mpm_prefork_module>\n  StartServers 3\n  MaxRequestWorkers 150\n</IfModule>\n",
        )
        .unwrap();
        let file = TargetFile::parse(
            "[target]\nadapter = \"apache\"\nconfig = \"apache2.conf\"\n",
            &dir.path().join("t.toml"),
        )
        .unwrap();
        let current = Apache.current(&file).unwrap();
        assert_eq!(
            current,
            [
                ("workers".to_string(), "150".to_string()),
                ("start_workers".into(), "3".into()),
                ("keepalive".into(), "on".into())
            ]
        );
        let values = |w: &str| Typed::of(&[("workers", w), ("keepalive", "on")]);
        assert!(Apache.diffs(&file, &values("150")).unwrap().is_empty());
        let diffs = Apache.diffs(&file, &values("300")).unwrap();
        assert_eq!(diffs.len(), 1);
        let (name, diff) = &diffs[0];
        assert_eq!(name, "apache2");
        assert!(diff.contains("-  MaxRequestWorkers 150\n+  MaxRequestWorkers 300\n+  ServerLimit 300\n"), "{diff}");
        assert!(Apache.recommend(&file, &values("300")).contains("MaxRequestWorkers 300   # apache2.conf:5"));
        assert_eq!(Apache.expected_workers_in(&file, &values("2")), Some(2));
        assert_eq!(Apache.expected_workers_in(&file, &values("64")), Some(5), "MinSpareServers' default");
    }

    #[test]
    fn the_recommendation_says_where_the_apps_directives_go() {
        let values = |place: &str| Typed::of(&[("app_config", place), ("PerlSetVar Debug", "0")]);
        let file = TargetFile::parse("[target]\nadapter = \"apache\"\n", Path::new("t.toml")).unwrap();
        let server = Apache.recommend(&file, &values("server"));
        assert!(
            server.contains("<Directory /path/to/htdocs>\n  AllowOverride None\n  PerlSetVar Debug 0\n</Directory>"),
            "{server}"
        );
        let htaccess = Apache.recommend(&file, &values("htaccess"));
        assert!(
            htaccess
                .contains("# in htdocs/.htaccess, with AllowOverride All on the document root:\nPerlSetVar Debug 0"),
            "{htaccess}"
        );
        assert!(!htaccess.contains("app_config") && !server.contains("app_config"));
    }
}
