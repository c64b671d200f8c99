//! Apache httpd, prefork MPM (or worker or event: `mpm = "worker"`, `workers` then counting
//! threads in processes of ThreadsPerChild), with mod_perl 2: ModPerl::Registry scripts, preloaded Perl
//! modules and handlers, Apache::ASP pages. The app directory follows a convention:
//! `startup.pl` (PerlRequire'd in the parent, before the fork), `perl/` (Registry scripts at
//! /perl/), `htdocs/` (the document root; *.asp by Apache::ASP), `handlers.conf` (included:
//! Locations with PerlResponseHandler). An app directory written by `webtune fileset` is the
//! document root itself, and `file_cache = "none" | "mmap" | "open"` maps every file of its set
//! with mod_file_cache (MMapFile or CacheFile). Any other knob is a directive:
//! "PerlSetVar Debug", AllowOverride (on the document root), BufferedLogs, EnableMMAP,
//! EnableSendfile, ListenBacklog...

use super::{Adapter, Ctx, Prepared, get, natives, on, seconds, write};
use crate::fileset;
use crate::server::process::Spawn;

/// The Apache httpd adapter (prefork MPM, mod_perl).
pub struct Apache;

const MODULES: &str = "/usr/lib/apache2/modules";

impl Adapter for Apache {
    fn name(&self) -> &'static str {
        "apache"
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
        if name == "file_cache" && !FILE_CACHE.contains(&value) {
            return Err(format!("file_cache = {value:?}: expected \"none\", \"mmap\" or \"open\""));
        }
        if name == "mpm" && !MPMS.contains(&value) {
            return Err(format!("mpm = {value:?}: expected \"prefork\", \"worker\" or \"event\""));
        }
        if name == "ThreadsPerChild" && !value.parse::<u32>().is_ok_and(|n| n >= 1) {
            return Err(format!("ThreadsPerChild = {value:?}: expected a whole number of threads, at least 1"));
        }
        Ok(())
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

    fn prepare(&self, ctx: &Ctx, values: &[(String, String)]) -> anyhow::Result<Prepared> {
        if get(values, "preload").is_some() {
            anyhow::bail!(
                "apache: preload is what startup.pl in the app directory does (PerlRequire, before the fork)"
            );
        }
        let d = ctx.d();
        let app = ctx.app().map(|a| a.display().to_string());
        let has = |rel: &str| ctx.app().is_some_and(|a| a.join(rel).exists());
        let file_set = ctx.app().and_then(fileset::files);
        let docroot = if has("htdocs") {
            format!("{}/htdocs", app.as_deref().unwrap_or_default())
        } else if file_set.is_some() {
            app.clone().unwrap_or_default()
        } else {
            std::fs::create_dir_all(format!("{d}/htdocs"))?;
            write(ctx.dir, "htdocs/index.html", "webtune apache target\n")?;
            format!("{d}/htdocs")
        };
        let m = MODULES;
        let mpm = get(values, "mpm").unwrap_or("prefork");
        let user = if nix::unistd::geteuid().is_root() { "User www-data\nGroup www-data\n" } else { "" };
        let mut conf = format!(
            "ServerRoot {d}\nServerName localhost\nDefaultRuntimeDir {d}\nPidFile {d}/apache2.pid\n\
             Listen {}:{}\n{user}ErrorLog {d}/error.log\nLogLevel warn\n\
             LogFormat \"%h %l %u %t \\\"%r\\\" %>s %b\" common\nCustomLog {d}/access.log common\n\
             LoadModule mpm_{mpm}_module {m}/mod_mpm_{mpm}.so\n\
             <IfModule !authz_core_module>\nLoadModule authz_core_module {m}/mod_authz_core.so\n</IfModule>\n\
             <IfModule !alias_module>\nLoadModule alias_module {m}/mod_alias.so\n</IfModule>\n\
             <IfModule !dir_module>\nLoadModule dir_module {m}/mod_dir.so\n</IfModule>\n\
             <IfModule !mime_module>\nLoadModule mime_module {m}/mod_mime.so\n</IfModule>\n\
             <IfModule !log_config_module>\nLoadModule log_config_module {m}/mod_log_config.so\n</IfModule>\n\
             <IfModule !status_module>\nLoadModule status_module {m}/mod_status.so\n</IfModule>\n\
             LoadModule perl_module {m}/mod_perl.so\n\
             TypesConfig /etc/mime.types\nDirectoryIndex index.html index.asp\n",
            bracket(ctx.host),
            ctx.port
        );
        conf += &mpm_lines(values)?;
        conf += &format!(
            "DocumentRoot {docroot}\n<Directory />\n  AllowOverride None\n  Require all denied\n</Directory>\n\
             <Directory {docroot}>\n  AllowOverride {}\n  Require all granted\n</Directory>\n\
             <Location /server-status>\n  SetHandler server-status\n  Require all granted\n</Location>\n",
            get(values, "AllowOverride").unwrap_or("None")
        );
        for (k, v) in natives(values).filter(|(k, _)| !OWN_KNOBS.contains(k)) {
            conf += &format!("{k} {v}\n");
        }
        conf += &file_cache_lines(get(values, "file_cache"), file_set.as_deref())?;
        if let Some(app) = &app {
            if has("startup.pl") {
                conf += &format!("PerlSwitches -I{app}/lib\nPerlRequire {app}/startup.pl\n");
            }
            if has("perl") {
                conf += &format!(
                    "PerlModule ModPerl::Registry\nAlias /perl/ {app}/perl/\n<Location /perl/>\n  SetHandler perl-script\n  \
                     PerlResponseHandler ModPerl::Registry\n  PerlOptions +ParseHeaders\n  Options +ExecCGI\n  Require all granted\n</Location>\n"
                );
            }
            if has("htdocs") && asp_installed() {
                std::fs::create_dir_all(format!("{d}/asp-state"))?;
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(format!("{d}/asp-state"), std::fs::Permissions::from_mode(0o777));
                conf += &format!(
                    "PerlModule Apache::ASP\n<Files ~ \"\\.asp$\">\n  SetHandler perl-script\n  PerlResponseHandler Apache::ASP\n  \
                     PerlSetVar Global {app}\n  PerlSetVar StateDir {d}/asp-state\n</Files>\n"
                );
            }
            if has("handlers.conf") {
                conf += &format!("Include {app}/handlers.conf\n");
            }
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
        })
    }

    fn recommend(&self, values: &[(String, String)]) -> String {
        let mut out = match get(values, "mpm") {
            Some(mpm) => format!("LoadModule mpm_{mpm}_module modules/mod_mpm_{mpm}.so   # the only MPM loaded\n"),
            None => String::new(),
        };
        out += &mpm_lines(values).unwrap_or_default();
        if let Some(a) = get(values, "AllowOverride") {
            out += &format!("AllowOverride {a}   # in the <Directory> of the document root\n");
        }
        for (k, v) in natives(values).filter(|(k, _)| !OWN_KNOBS.contains(k)) {
            out += &format!("{k} {v}\n");
        }
        match get(values, "file_cache") {
            Some("mmap") => out += "MMapFile <every file of the set>   # mod_file_cache: one line per file\n",
            Some("open") => out += "CacheFile <every file of the set>  # mod_file_cache: one line per file\n",
            _ => {}
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

    fn expected_workers(&self, values: &[(String, String)]) -> Option<usize> {
        match threaded(values) {
            // Child processes, each of ThreadsPerChild threads.
            Some(threads) => match get(values, "start_workers") {
                Some(s) => s.parse().ok(),
                None => Some(get(values, "workers")?.parse::<usize>().ok()?.div_ceil(threads)),
            },
            None => get(values, "start_workers").or(get(values, "workers"))?.parse().ok(),
        }
    }
}

/// The values of the `file_cache` knob.
const FILE_CACHE: [&str; 3] = ["none", "mmap", "open"];

/// Knobs this adapter writes itself rather than as `Name value` directives.
const OWN_KNOBS: [&str; 4] = ["AllowOverride", "file_cache", "mpm", "ThreadsPerChild"];

/// The MPMs the `mpm` knob selects.
const MPMS: [&str; 3] = ["prefork", "worker", "event"];

/// Apache's ThreadsPerChild when the knob does not set it.
const DEFAULT_THREADS_PER_CHILD: usize = 25;

/// With a threaded MPM (worker, event): its threads per child process.
fn threaded(values: &[(String, String)]) -> Option<usize> {
    match get(values, "mpm") {
        Some("worker" | "event") => {
            Some(get(values, "ThreadsPerChild").and_then(|t| t.parse().ok()).unwrap_or(DEFAULT_THREADS_PER_CHILD))
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
fn mpm_lines(values: &[(String, String)]) -> anyhow::Result<String> {
    let mut out = String::new();
    let workers = get(values, "workers");
    if let Some(threads) = threaded(values) {
        // worker/event: `workers` counts threads; whole processes of ThreadsPerChild serve them,
        // all started, spare threads from one process's worth up to all.
        let w: usize = match workers {
            Some(w) => w.parse().map_err(|_| anyhow::anyhow!("workers = {w:?}: expected a whole number"))?,
            None => threads,
        };
        let processes = w.div_ceil(threads).max(1);
        out +=
            &format!("ThreadsPerChild {threads}\nServerLimit {processes}\nMaxRequestWorkers {}\n", processes * threads);
        out += &format!("StartServers {}\n", get(values, "start_workers").unwrap_or(&processes.to_string()));
        out += &format!("MinSpareThreads {}\n", get(values, "min_spare").unwrap_or(&threads.to_string()));
        out += &format!("MaxSpareThreads {}\n", get(values, "max_spare").unwrap_or(&(processes * threads).to_string()));
    } else {
        if let Some(w) = workers {
            out += &format!("ServerLimit {w}\nMaxRequestWorkers {w}\n");
        }
        let w = workers.unwrap_or("5");
        out += &format!("StartServers {}\n", get(values, "start_workers").unwrap_or(w));
        out += &format!("MinSpareServers {}\n", get(values, "min_spare").unwrap_or("1"));
        out += &format!("MaxSpareServers {}\n", get(values, "max_spare").unwrap_or(w));
    }
    if let Some(n) = get(values, "max_requests") {
        out += &format!("MaxConnectionsPerChild {n}\n");
    }
    if let Some(k) = get(values, "keepalive") {
        out += &format!("KeepAlive {}\n", if on(k) { "On" } else { "Off" });
    }
    if let Some(t) = get(values, "keepalive_timeout") {
        out += &format!("KeepAliveTimeout {}\n", seconds(t)?);
    }
    if let Some(b) = get(values, "backlog") {
        out += &format!("ListenBacklog {b}\n");
    }
    Ok(out)
}

fn bracket(host: &str) -> String {
    if host.contains(':') { format!("[{host}]") } else { host.to_string() }
}

fn asp_installed() -> bool {
    std::path::Path::new("/usr/share/perl5/Apache/ASP.pm").exists()
}
