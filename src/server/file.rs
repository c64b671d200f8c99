//! The target file: which server, how to start it, which knobs to try, how to load it, and
//! the budgets. TOML; every mistake is reported with the file, the line and what is allowed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::settings::Settings;
use crate::bench::BenchSpec;
use crate::input::{self, InputError};
use crate::procmem::capacity::Budget;
use crate::sys::cpus::{CpuSet, Placement, PlacementSpec};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    target: RawTarget,
    #[serde(default)]
    knobs: toml::Table,
    #[serde(default)]
    load: BenchSpec,
    #[serde(default)]
    budget: RawBudget,
    /// Where the server and the client run (`server = "2-7"`, `client = "0-1"`, or
    /// `shared = true`); default: apart on 4 or more cores, shared below.
    #[serde(default)]
    placement: PlacementSpec,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTarget {
    adapter: AdapterName,
    /// host:port; port 0 picks a free one.
    #[serde(default = "default_listen")]
    listen: String,
    /// The path requested to tell that the server is up.
    #[serde(default = "default_ready")]
    ready: String,
    /// How long the server may take to be ready.
    #[serde(default = "default_ready_timeout", deserialize_with = "input::de::duration")]
    ready_timeout: Option<std::time::Duration>,
    /// The application: a document root, a Perl/Python/PSGI app directory or file.
    app: Option<PathBuf>,
    /// `command` adapter: the command line, with {port}, {host}, {dir} and knob placeholders.
    command: Option<String>,
    /// The server program, when not the adapter's usual one (e.g. /usr/sbin/php-fpm8.2).
    program: Option<String>,
    /// Environment variables for the server.
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// The base configuration: knob = value, canonical names or the server's own directives.
    #[serde(default)]
    config: toml::Table,
}

/// The server kinds webtune can launch and tune, as named in `adapter = "..."`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdapterName {
    Lab,
    Nginx,
    Apache,
    PhpFpm,
    Gunicorn,
    Uwsgi,
    Starman,
    Command,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBudget {
    /// "4GiB", "512MiB" or "auto".
    memory: Option<String>,
    /// "15m".
    #[serde(default, deserialize_with = "input::de::duration")]
    time: Option<std::time::Duration>,
}

fn default_listen() -> String {
    "127.0.0.1:0".into()
}
fn default_ready() -> String {
    "/".into()
}
fn default_ready_timeout() -> Option<std::time::Duration> {
    Some(std::time::Duration::from_secs(30))
}

/// A loaded, checked target file.
#[derive(Debug, Clone)]
pub struct TargetFile {
    pub path: PathBuf,
    pub adapter: AdapterName,
    pub host: String,
    /// 0: pick a free one at each launch.
    pub port: u16,
    pub ready: String,
    pub ready_timeout: std::time::Duration,
    /// Absolute (relative paths resolve against the file's directory).
    pub app: Option<PathBuf>,
    pub command: Option<String>,
    pub program: Option<String>,
    pub env: Vec<(String, String)>,
    pub config: Vec<(String, String)>,
    pub knobs: Vec<(String, Vec<String>)>,
    /// The load of every trial: `webtune bench`'s options, with `path` (default "/") to
    /// request on the launched server.
    pub load: BenchSpec,
    pub memory: Option<Budget>,
    pub time: Option<std::time::Duration>,
    /// Where the server (its whole process tree) and the client run: the file's [placement]
    /// checked against the CPUs this process may use, or the default for them.
    pub placement: Placement,
}

impl TargetFile {
    /// Reads and checks the target file at `path`.
    pub fn load(path: &Path) -> Result<TargetFile, InputError> {
        let text = input::read_text(path, "target file")?;
        Self::parse(&text, path)
    }

    /// Checks a target file's text; `path` names it in errors and anchors its relative paths.
    pub fn parse(text: &str, path: &Path) -> Result<TargetFile, InputError> {
        // "t.toml:4: connections:" when the error is on a `key = value` line.
        let at = |span: Option<std::ops::Range<usize>>| match span {
            Some(s) => {
                let start = s.start.min(text.len());
                let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
                let line = text[line_start..].lines().next().unwrap_or("");
                let key = line.split_once('=').map(|(k, _)| k.trim()).filter(|k| !k.is_empty() && !k.contains('['));
                let n = text[..start].matches('\n').count() + 1;
                match key {
                    Some(k) => format!("{}:{n}: {k}", path.display()),
                    None => format!("{}:{n}", path.display()),
                }
            }
            None => path.display().to_string(),
        };
        let raw: Raw = toml::from_str(text)
            .map_err(|e| InputError(format!("{}: {}", at(e.span()), e.message().trim().replace('\n', " "))))?;
        let line_of = |needle: &str| {
            text.find(needle)
                .map(|i| format!("{}:{}", path.display(), text[..i].matches('\n').count() + 1))
                .unwrap_or_else(|| path.display().to_string())
        };
        let t = raw.target;
        let (host, port) = t
            .listen
            .rsplit_once(':')
            .and_then(|(h, p)| {
                Some((h.trim_start_matches('[').trim_end_matches(']').to_string(), p.parse::<u16>().ok()?))
            })
            .ok_or_else(|| {
                InputError(format!(
                    "{}: listen {:?}: expected host:port (port 0 picks a free one)",
                    line_of("listen"),
                    t.listen
                ))
            })?;
        let mut load = raw.load;
        if !is_loopback(&host) {
            check_reachable(&host, &load)
                .map_err(|why| InputError(format!("{}: listen {:?}: {why}", line_of("listen"), t.listen)))?;
        }
        if let Err(e) = crate::bench::remote::Remote::of(&load) {
            return Err(e.at(&line_of("remote")));
        }
        let ready_timeout = t.ready_timeout.unwrap_or_default();
        if !t.ready.starts_with('/') {
            return Err(InputError(format!("{}: ready {:?}: a path starting with /", line_of("ready"), t.ready)));
        }
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        // The load's files, like the app, are relative to the target file.
        for f in [&mut load.urls, &mut load.scenario].into_iter().flatten().chain(&mut load.access_log) {
            if f.is_relative() {
                *f = dir.join(&*f);
            }
        }
        // Read once here, for every trial; a log that does not read stops the tune before it starts.
        load.load_access_log().map_err(|e| e.at(&line_of("access_log")))?;
        // Absolute: servers run from their run directory.
        let app = match t.app.map(|a| if a.is_absolute() { a } else { dir.join(a) }) {
            Some(a) => Some(
                std::fs::canonicalize(&a)
                    .map_err(|e| InputError(format!("{}: app {}: {e}", line_of("app"), a.display())))?,
            ),
            None => None,
        };
        if t.adapter == AdapterName::Command && t.command.is_none() {
            return Err(InputError(format!(
                "{}: the command adapter needs command = \"...{{port}}...\"",
                line_of("adapter")
            )));
        }
        let config =
            table_values(&t.config).map_err(|(k, e)| InputError(format!("{}: config {k}: {e}", line_of(&k))))?;
        let mut knobs = Vec::new();
        for (k, v) in &raw.knobs {
            let values = match v {
                toml::Value::Array(a) => a.iter().map(value_text).collect::<Result<Vec<_>, _>>(),
                other => value_text(other).map(|v| vec![v]),
            }
            .map_err(|e| InputError(format!("{}: knobs {k}: {e}", line_of(k))))?;
            if values.is_empty() {
                return Err(InputError(format!("{}: knobs {k}: no value to try", line_of(k))));
            }
            knobs.push((k.clone(), values));
        }
        // A knob rewrites its own value in the server's configuration, nothing more.
        let adapter = super::adapters::adapter(t.adapter);
        let all_values = config
            .iter()
            .cloned()
            .chain(knobs.iter().flat_map(|(k, vs)| vs.iter().map(move |v| (k.clone(), v.clone()))));
        for (k, v) in all_values {
            super::adapters::check_knob(adapter, &k, &v).map_err(|e| InputError(format!("{}: {e}", line_of(&k))))?;
        }
        if let Some(p) = &load.path
            && (!p.starts_with('/') || p.starts_with("//"))
        {
            return Err(InputError(format!(
                "{}: load path {p:?}: a path on the launched server, starting with a single /",
                line_of("path")
            )));
        }
        let memory = match &raw.budget.memory {
            Some(m) => Some(
                Budget::parse("budget memory", m).map_err(|e| InputError(format!("{}: {}", line_of("memory"), e.0)))?,
            ),
            None => None,
        };
        let placement = raw
            .placement
            .resolve("placement", &CpuSet::allowed())
            .map_err(|e| InputError(format!("{}: {}", line_of("[placement]"), e.0)))?;
        let file = TargetFile {
            path: path.to_path_buf(),
            adapter: t.adapter,
            host,
            port,
            ready: t.ready,
            ready_timeout,
            app,
            command: t.command,
            program: t.program,
            env: t.env.into_iter().collect(),
            config,
            knobs,
            load,
            memory,
            time: raw.budget.time,
            placement,
        };
        // Judge the load as `webtune bench` would, now rather than at the first trial.
        if let Err(e) = file.load.against("http://127.0.0.1:1").plan() {
            return Err(InputError(format!("{}: [load]: {e}", line_of("[load]"))));
        }
        Ok(file)
    }

    /// The base configuration with `overrides` applied (knob = value, in file order).
    pub fn settings(&self, overrides: &[(String, String)]) -> Settings {
        Settings(self.config.clone()).with_all(overrides)
    }
}

/// Why a server may not listen on `host`, a non-loopback address: only when `[load] remote`
/// hosts must reach it, and only on an address of this machine.
fn check_reachable(host: &str, load: &BenchSpec) -> Result<(), String> {
    let loopback_only = "webtune starts servers on loopback addresses only (127.0.0.0/8, ::1), \
                         or, with [load] remote hosts that must reach it, on an address of this machine";
    if load.remote.is_empty() {
        return Err(loopback_only.into());
    }
    let ip: std::net::IpAddr = host.parse().map_err(|_| format!("{loopback_only}: give it as an IP address"))?;
    let ours = crate::sys::local_addresses();
    if ip.is_unspecified() || !ours.contains(&ip) {
        let ours: Vec<String> = ours.iter().map(ToString::to_string).collect();
        return Err(format!("{loopback_only}; {ip} is not one (this machine has {})", ours.join(", ")));
    }
    Ok(())
}

fn is_loopback(host: &str) -> bool {
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// A TOML scalar as the text a server configuration takes: booleans become on/off.
fn value_text(v: &toml::Value) -> Result<String, String> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(if *b { "on" } else { "off" }.into()),
        other => Err(format!("expected a string, number or boolean, not {}", other.type_str())),
    }
}

fn table_values(t: &toml::Table) -> Result<Vec<(String, String)>, (String, String)> {
    t.iter().map(|(k, v)| value_text(v).map(|v| (k.clone(), v)).map_err(|e| (k.clone(), e))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<TargetFile, String> {
        TargetFile::parse(text, Path::new("t.toml")).map_err(|e| e.0)
    }

    #[test]
    fn load_files_are_relative_to_the_target_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("urls.txt"), "/a weight=1\n/b weight=2\n").unwrap();
        let text = "[target]\nadapter = \"lab\"\n[load]\nurls = \"urls.txt\"\n";
        let f = TargetFile::parse(text, &dir.path().join("t.toml")).map_err(|e| e.0).unwrap();
        assert_eq!(f.load.urls, Some(dir.path().join("urls.txt")));
    }

    #[test]
    fn a_full_file() {
        let f = parse(
            "[target]\nadapter = \"lab\"\nlisten = \"127.0.0.1:0\"\n[target.config]\ncpu = \"5ms\"\nworkers = 4\n\
             [knobs]\nworkers = [1, 2, 4]\nkeepalive = [true, false]\n\
             [load]\npath = \"/x\"\nconnections = 16\nduration = \"2s\"\nno_keepalive = true\n\
             [budget]\nmemory = \"512MiB\"\ntime = \"5m\"\n",
        )
        .unwrap();
        assert_eq!(f.adapter, AdapterName::Lab);
        assert_eq!(f.port, 0);
        assert_eq!(f.config, [("cpu".to_string(), "5ms".to_string()), ("workers".into(), "4".into())]);
        assert_eq!(f.knobs[0], ("workers".to_string(), vec!["1".to_string(), "2".into(), "4".into()]));
        assert_eq!(f.knobs[1].1, ["on", "off"]);
        assert_eq!(f.load.path.as_deref(), Some("/x"));
        assert!(f.load.no_keepalive);
        assert_eq!(f.load.duration, Some(std::time::Duration::from_secs(2)));
        assert_eq!(f.settings(&[("workers".into(), "8".into())])[1].1, "8");
    }

    /// A target's load may speak HTTP/2: the plan it makes does.
    #[test]
    fn load_over_http2() {
        let f = parse("[target]\nadapter = \"lab\"\n[load]\nhttp2 = true\nstreams = 4\nconnections = 2\n").unwrap();
        let plan = f.load.against("http://127.0.0.1:9").plan().unwrap();
        assert_eq!(plan.engine.http2, Some(crate::engine::Http2 { streams: 4 }));
        assert!(!plan.engine.coalesces_any(), "8 streams are too few to batch");
        let f = parse("[target]\nadapter = \"lab\"\n[load]\nhttp2 = true\nstreams = 40\nconnections = 2\n").unwrap();
        let plan = f.load.against("http://127.0.0.1:9").plan().unwrap();
        assert!(plan.engine.coalesces_any(), "each of 40 streams a connection is a client");
    }

    #[test]
    fn mistakes_name_the_line_and_what_is_allowed() {
        let e = parse("[target]\nadapter = \"lab\"\nlisen = \"x\"\n").unwrap_err();
        assert!(e.starts_with("t.toml:3:") && e.contains("unknown field `lisen`") && e.contains("listen"), "{e}");
        let e = parse("[target]\nadapter = \"iis\"\n").unwrap_err();
        assert!(e.starts_with("t.toml:2:") && e.contains("apache") && e.contains("php-fpm"), "{e}");
        let e = parse("[target]\nadapter = \"lab\"\n[load]\nconnections = \"many\"\n").unwrap_err();
        assert!(e.starts_with("t.toml:4: connections:"), "{e}");
        let e = parse("[target]\nadapter = \"lab\"\nlisten = \"10.0.0.1:80\"\n").unwrap_err();
        assert!(e.starts_with("t.toml:3: listen \"10.0.0.1:80\": webtune starts servers on loopback"), "{e}");
        assert!(e.contains("with [load] remote hosts"), "{e}");
        let e = parse("[target]\nadapter = \"lab\"\n[budget]\nmemory = \"lots\"\n").unwrap_err();
        assert!(e.starts_with("t.toml:4:") && e.contains("budget"), "{e}");
        let e = parse("[target]\nadapter = \"command\"\n").unwrap_err();
        assert!(e.contains("command ="), "{e}");
        let e = parse("[target]\nadapter = \"lab\"\n[placement]\nclient = \"1-0\"\n").unwrap_err();
        assert!(e.starts_with("t.toml:4: client:") && e.contains("runs backwards"), "{e}");
        let e = parse("[target]\nadapter = \"lab\"\n[placement]\nserver = 1000\n").unwrap_err();
        assert!(e.starts_with("t.toml:3: placement server:"), "{e}");
    }

    #[test]
    fn a_placement_in_the_file_or_the_default_for_this_machine() {
        let allowed = CpuSet::allowed();
        let f = parse("[target]\nadapter = \"lab\"\n").unwrap();
        assert_eq!(f.placement, Placement::default_for(&allowed));
        let first = allowed.cpus()[0];
        let f = parse(&format!("[target]\nadapter = \"lab\"\n[placement]\nserver = {first}\nclient = \"{first}\"\n"))
            .unwrap();
        assert_eq!(f.placement.server.as_ref(), Some(&f.placement.client));
        assert!(f.placement.shared);
    }

    #[test]
    fn a_server_listens_beyond_loopback_only_for_remote_hosts_and_on_an_address_of_this_machine() {
        let file = |listen: &str| {
            format!("[target]\nadapter = \"lab\"\nlisten = \"{listen}\"\n[load]\nremote = [\"ssh://loadgen1\"]\n")
        };
        // 192.0.2.0/24 is for documentation: no machine has it.
        let e = parse(&file("192.0.2.7:80")).unwrap_err();
        assert!(e.starts_with("t.toml:3: listen \"192.0.2.7:80\": "), "{e}");
        assert!(e.contains("192.0.2.7 is not one (this machine has 127.0.0.1"), "{e}");
        let e = parse(&file("0.0.0.0:80")).unwrap_err();
        assert!(e.contains("0.0.0.0 is not one"), "{e}");
        assert!(parse(&file("127.0.0.1:0")).is_ok(), "loopback stays allowed");
        if let Some(ours) = crate::sys::local_addresses().into_iter().find(|ip| ip.is_ipv4() && !ip.is_loopback()) {
            let f = parse(&file(&format!("{ours}:0"))).expect("an address of this machine");
            assert_eq!(f.host, ours.to_string());
        }
        let e = parse("[target]\nadapter = \"lab\"\n[load]\nremote = [\"loadgen1\"]\n").unwrap_err();
        assert!(e.starts_with("t.toml:4: --remote \"loadgen1\""), "{e}");
    }
}
