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
    /// The container the server runs in: `memory = "512MiB"`, `cpus = 1.5`, `swap = "0"`
    /// (`init --pid` reads them from the process's cgroup; `from` says where).
    #[serde(default)]
    container: RawContainer,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawContainer {
    memory: Option<String>,
    cpus: Option<toml::Value>,
    swap: Option<String>,
    /// The most a trial may be throttled, as a share of its quota periods ("50%"): beyond it,
    /// it misses the constraint as a pool over the memory does.
    throttled: Option<String>,
    /// Where the limits were read (a note for the reader; webtune does not use it).
    #[allow(dead_code)]
    from: Option<String>,
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
    /// The application: a document root, a Perl/Python/PSGI app directory or file, or (gunicorn,
    /// uwsgi) a Python module path `pkg.module:callable`.
    app: Option<String>,
    /// gunicorn, uwsgi: the directory the server changes to before importing the app.
    chdir: Option<String>,
    /// gunicorn, uwsgi: directories added to Python's import path (one, or a list).
    pythonpath: Option<toml::Value>,
    /// `command` adapter: the command line, with {port}, {host}, {dir} and knob placeholders.
    command: Option<String>,
    /// The server program, when not the adapter's usual one (e.g. /usr/sbin/php-fpm8.2).
    program: Option<String>,
    /// Environment variables for the server.
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// The base configuration: a table of knob = value (canonical names or the server's own
    /// directives), or the path of the server's own configuration file.
    config: Option<toml::Value>,
    /// With `config = PATH`: the server_name of the virtual host to load.
    site: Option<String>,
    /// php-fpm with `config = PATH`: the pool to tune (default: the only one).
    pool: Option<String>,
    /// php-fpm with `config = PATH`: the nginx configuration that fronts the pool.
    front_config: Option<String>,
    /// With `config = PATH`: the backends the copy may pass the load to (its proxy_pass,
    /// ProxyPass... targets), as written there; "*" for any.
    #[serde(default)]
    upstreams: Vec<String>,
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

impl AdapterName {
    /// As `adapter = "..."` names it.
    pub fn name(self) -> &'static str {
        match self {
            AdapterName::Lab => "lab",
            AdapterName::Nginx => "nginx",
            AdapterName::Apache => "apache",
            AdapterName::PhpFpm => "php-fpm",
            AdapterName::Gunicorn => "gunicorn",
            AdapterName::Uwsgi => "uwsgi",
            AdapterName::Starman => "starman",
            AdapterName::Command => "command",
        }
    }

    /// Whether `app` may be a Python module path (`pkg.module:callable`), with `chdir` and
    /// `pythonpath`.
    pub fn takes_python_module(self) -> bool {
        matches!(self, AdapterName::Gunicorn | AdapterName::Uwsgi)
    }
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

/// A path the user wrote in the target file: resolved (absolute, against the file's
/// directory) to start the server, as written for the recommendation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserPath {
    pub path: PathBuf,
    pub written: String,
}

/// `[target] app`: a path (file or directory), or a Python module path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum App {
    Path(UserPath),
    /// `pkg.module:callable`; `pkg.module` alone means callable `application`, the default of
    /// gunicorn, uwsgi and Django's wsgi.py.
    Module {
        module: String,
        callable: String,
    },
}

impl App {
    /// The app's directory or file; None for a module name.
    pub fn path(&self) -> Option<&Path> {
        match self {
            App::Path(p) => Some(&p.path),
            App::Module { .. } => None,
        }
    }
}

/// `[target] config`: base settings, or the server's own configuration file (never written to:
/// webtune's command line overrides what it must own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Config {
    /// knob = value, in file order.
    Settings(Vec<(String, String)>),
    File(UserPath),
}

impl Config {
    /// The base settings (none with a configuration file: the file holds them).
    pub fn settings(&self) -> &[(String, String)] {
        match self {
            Config::Settings(s) => s,
            Config::File(_) => &[],
        }
    }

    /// The server's own configuration file, when `config` names one.
    pub fn file(&self) -> Option<&UserPath> {
        match self {
            Config::File(f) => Some(f),
            Config::Settings(_) => None,
        }
    }
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
    pub app: Option<App>,
    /// gunicorn, uwsgi: where the server imports the app from (`chdir`; for a module path
    /// without one, the target file's directory).
    pub chdir: Option<UserPath>,
    pub pythonpath: Vec<UserPath>,
    pub command: Option<String>,
    pub program: Option<String>,
    pub env: Vec<(String, String)>,
    pub config: Config,
    /// With the server's own configuration: the virtual host to load (its server_name).
    pub site: Option<String>,
    /// php-fpm with its own configuration: the pool to tune.
    pub pool: Option<String>,
    /// php-fpm with its own configuration: the front server's own configuration.
    pub front_config: Option<UserPath>,
    /// The backends a proxy's copy may send the load to (`upstreams = [...]`).
    pub upstreams: Vec<String>,
    pub knobs: Vec<(String, Vec<String>)>,
    /// The load of every trial: `webtune bench`'s options, with `path` (default "/") to
    /// request on the launched server.
    pub load: BenchSpec,
    pub memory: Option<Budget>,
    pub time: Option<std::time::Duration>,
    /// Where the server (its whole process tree) and the client run: the file's [placement]
    /// checked against the CPUs this process may use, or the default for them.
    pub placement: Placement,
    /// The container's size, as the knobs `server::container` names (the base of every trial:
    /// each runs in a cgroup of this size).
    pub container: Vec<(String, String)>,
    /// `[container] throttled`: the share of its CPU quota periods a trial may be throttled in.
    pub max_throttled: Option<f64>,
}

impl TargetFile {
    /// Reads a target file's text into its values, with every check that needs no server's
    /// adapter (`TargetFile::parse` adds those); `path` names it in errors and anchors its
    /// relative paths.
    pub(super) fn read(text: &str, path: &Path) -> Result<TargetFile, InputError> {
        let raw: Raw = toml::from_str(text).map_err(|e| {
            let message = crate::input::did_you_mean(&e.message().trim().replace('\n', " "));
            InputError(format!("{}: {message}", toml_error_at(text, path, e.span())))
        })?;
        let line_of = |needle: &str| line_of(text, path, needle);
        let t = raw.target;
        let (host, port) = host_port(&t.listen).ok_or_else(|| {
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
        let key_at = |key: &str| key_line(text, path, key);
        let EntryPoint { app, chdir, pythonpath } = entry_point(&t, &dir, &key_at)?;
        if t.adapter == AdapterName::Command && t.command.is_none() {
            return Err(InputError(format!(
                "{}: the command adapter needs command = \"...{{port}}...\"",
                line_of("adapter")
            )));
        }
        let config = config(&t, &dir, &line_of, &key_at)?;
        let front_config = tree_keys(&t, config.file().is_some(), &dir, &key_at)?;
        let knobs = knobs(&raw.knobs, &line_of)?;
        if let Some(p) = &load.path
            && (!p.starts_with('/') || p.starts_with("//"))
        {
            return Err(InputError(format!(
                "{}: load path {p:?}: a path on the launched server, starting with a single /",
                line_of("path")
            )));
        }
        let container = container_values(&raw.container, &line_of)?;
        let max_throttled = match &raw.container.throttled {
            Some(t) => Some(
                input::share("container throttled", t)
                    .map_err(|e| InputError(format!("{}: {}", line_of("throttled"), e.0)))?,
            ),
            None => None,
        };
        let memory = match &raw.budget.memory {
            Some(m) => Some(
                Budget::parse("budget memory", m).map_err(|e| InputError(format!("{}: {}", line_of("memory"), e.0)))?,
            ),
            // In a container, the budget is its memory: what the OOM killer enforces.
            None => crate::server::container::limits(&container).memory.map(|b| Budget::KiB(b / 1024)),
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
            chdir,
            pythonpath,
            command: t.command,
            program: t.program,
            env: t.env.into_iter().collect(),
            config,
            site: t.site,
            pool: t.pool,
            front_config,
            upstreams: t.upstreams,
            knobs,
            load,
            memory,
            time: raw.budget.time,
            placement,
            container,
            max_throttled,
        };
        // Judge the load as `webtune bench` would, now rather than at the first trial.
        if let Err(e) = file.load.against("http://127.0.0.1:1").plan() {
            return Err(InputError(format!("{}: [load]: {e}", line_of("[load]"))));
        }
        Ok(file)
    }

    /// The base configuration with `overrides` applied (knob = value, in file order).
    pub fn settings(&self, overrides: &[(String, String)]) -> Settings {
        Settings(self.config.settings().to_vec()).with_all(&self.container).with_all(overrides)
    }
}

/// The `[container]` table as container knobs, each checked.
fn container_values(raw: &RawContainer, line_of: &dyn Fn(&str) -> String) -> Result<Vec<(String, String)>, InputError> {
    use crate::server::container::{CPUS, MEMORY, SWAP, check};
    let cpus = match &raw.cpus {
        Some(toml::Value::Integer(i)) => Some(i.to_string()),
        Some(toml::Value::Float(f)) => Some(f.to_string()),
        Some(toml::Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Err(InputError(format!("{}: container cpus: a number of CPUs, e.g. 0.5 or 2", line_of("cpus"))));
        }
        None => None,
    };
    let mut values = Vec::new();
    for (knob, key, value) in
        [(MEMORY, "memory", raw.memory.clone()), (CPUS, "cpus", cpus), (SWAP, "swap", raw.swap.clone())]
    {
        if let Some(v) = value {
            check(knob, &v).map_err(|e| InputError(format!("{}: container {key}: {e}", line_of(key))))?;
            values.push((knob.to_string(), v));
        }
    }
    Ok(values)
}

/// `app`, `chdir` and `pythonpath`, resolved against the target file's directory `dir`
/// (absolute: servers run from their run directory); `key_at` names a key's line.
fn entry_point(t: &RawTarget, dir: &Path, key_at: &dyn Fn(&str) -> String) -> Result<EntryPoint, InputError> {
    let python = t.adapter.takes_python_module();
    let app = match &t.app {
        Some(a) => Some(app(a, dir, python).map_err(|e| InputError(format!("{}: app {a:?}: {e}", key_at("app"))))?),
        None => None,
    };
    for (key, given) in [("chdir", t.chdir.is_some()), ("pythonpath", t.pythonpath.is_some())] {
        if given && !python {
            return Err(InputError(format!("{}: {key} is for gunicorn and uwsgi", key_at(key))));
        }
    }
    let chdir = match &t.chdir {
        Some(c) => Some(user_dir(c, dir).map_err(|e| InputError(format!("{}: chdir {c:?}: {e}", key_at("chdir"))))?),
        // A module is imported from the target file's directory, unless chdir (or the
        // server's own configuration file) says otherwise.
        None if matches!(app, Some(App::Module { .. })) && !matches!(t.config, Some(toml::Value::String(_))) => {
            Some(UserPath {
                path: std::fs::canonicalize(if dir.as_os_str().is_empty() { Path::new(".") } else { dir })
                    .map_err(|e| InputError(format!("{}: app: {e}", key_at("app"))))?,
                written: String::new(),
            })
        }
        None => None,
    };
    let pythonpath = match &t.pythonpath {
        None => Vec::new(),
        Some(v) => {
            let at = key_at("pythonpath");
            let dirs = match v {
                toml::Value::String(s) => vec![s.clone()],
                toml::Value::Array(a) => {
                    a.iter()
                        .map(|d| d.as_str().map(str::to_string))
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| InputError(format!("{at}: pythonpath: a directory or a list of directories")))?
                }
                _ => return Err(InputError(format!("{at}: pythonpath: a directory or a list of directories"))),
            };
            dirs.iter()
                .map(|d| user_dir(d, dir).map_err(|e| InputError(format!("{at}: pythonpath {d:?}: {e}"))))
                .collect::<Result<Vec<_>, _>>()?
        }
    };
    Ok(EntryPoint { app, chdir, pythonpath })
}

/// What a Python server imports, and from where.
struct EntryPoint {
    app: Option<App>,
    chdir: Option<UserPath>,
    pythonpath: Vec<UserPath>,
}

/// Where a TOML error is: "t.toml:4: connections" when it is on a `key = value` line,
/// "t.toml:4" on another, the path alone without a place.
fn toml_error_at(text: &str, path: &Path, span: Option<std::ops::Range<usize>>) -> String {
    match span {
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
    }
}

/// `listen = "host:port"` (a v6 host in brackets) as host and port.
fn host_port(listen: &str) -> Option<(String, u16)> {
    listen
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.trim_start_matches('[').trim_end_matches(']').to_string(), p.parse::<u16>().ok()?)))
}

/// The keys that pick parts of the user's own tree (`site`, `pool`, `front_config`), judged:
/// each only for its adapters and with `config = "PATH"`; the front's configuration found.
fn tree_keys(
    t: &RawTarget,
    with_file: bool,
    dir: &Path,
    key_at: &dyn Fn(&str) -> String,
) -> Result<Option<UserPath>, InputError> {
    for (key, given, adapters) in [
        ("site", t.site.is_some(), &[AdapterName::Apache, AdapterName::Nginx, AdapterName::PhpFpm][..]),
        ("pool", t.pool.is_some(), &[AdapterName::PhpFpm][..]),
        ("front_config", t.front_config.is_some(), &[AdapterName::PhpFpm][..]),
    ] {
        if given && (!with_file || !adapters.contains(&t.adapter)) {
            let names: Vec<&str> = adapters.iter().map(|a| a.name()).collect();
            return Err(InputError(format!(
                "{}: {key} is for {} with config = \"PATH\" (the server's own configuration)",
                key_at(key),
                names.join(" and ")
            )));
        }
    }
    match &t.front_config {
        Some(w) => Ok(Some(
            user_path(w, dir)
                .map_err(|e| InputError(format!("{}: front_config {w:?}: {e}", key_at("front_config"))))?,
        )),
        None => Ok(None),
    }
}

/// `config`: a table of knob = value, or the path of the server's own configuration file.
fn config(
    t: &RawTarget,
    dir: &Path,
    line_of: &dyn Fn(&str) -> String,
    key_at: &dyn Fn(&str) -> String,
) -> Result<Config, InputError> {
    Ok(match &t.config {
        None => Config::Settings(Vec::new()),
        Some(toml::Value::Table(table)) => Config::Settings(
            table_values(table).map_err(|(k, e)| InputError(format!("{}: config {k}: {e}", line_of(&k))))?,
        ),
        Some(toml::Value::String(written)) => {
            let at = key_at("config");
            let file = user_path(written, dir).map_err(|e| InputError(format!("{at}: config {written:?}: {e}")))?;
            Config::File(file)
        }
        Some(other) => {
            return Err(InputError(format!(
                "{}: config: a table of knob = value, or the path of the server's configuration file, not {}",
                key_at("config"),
                other.type_str()
            )));
        }
    })
}

/// `[knobs]`: each knob with the values to try (one value, or an array of them).
fn knobs(table: &toml::Table, line_of: &dyn Fn(&str) -> String) -> Result<Vec<(String, Vec<String>)>, InputError> {
    let mut knobs = Vec::new();
    for (k, v) in table {
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
    Ok(knobs)
}

/// "t.toml:7" for the line that sets `key` (`key = ...`), or the file alone.
pub(super) fn key_line(text: &str, path: &Path, key: &str) -> String {
    let sets = |line: &str| line.trim_start().strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with('='));
    match text.lines().position(sets) {
        Some(i) => format!("{}:{}", path.display(), i + 1),
        None => path.display().to_string(),
    }
}

/// "t.toml:4": the line of the first place `needle` appears in the target file's text.
pub(super) fn line_of(text: &str, path: &Path, needle: &str) -> String {
    text.find(needle)
        .map(|i| format!("{}:{}", path.display(), text[..i].matches('\n').count() + 1))
        .unwrap_or_else(|| path.display().to_string())
}

/// A path of the target file, resolved against its directory; it must exist.
fn user_path(written: &str, dir: &Path) -> Result<UserPath, String> {
    let p = Path::new(written);
    let p = if p.is_absolute() { p.to_path_buf() } else { dir.join(p) };
    let path = std::fs::canonicalize(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(UserPath { path, written: written.to_string() })
}

fn user_dir(written: &str, dir: &Path) -> Result<UserPath, String> {
    let p = user_path(written, dir)?;
    if !p.path.is_dir() {
        return Err(format!("{} is not a directory", p.path.display()));
    }
    Ok(p)
}

/// `app`: an existing path (relative to the target file), else a Python module path for the
/// adapters that import one.
fn app(written: &str, dir: &Path, takes_module: bool) -> Result<App, String> {
    let not_found = match user_path(written, dir) {
        Ok(p) => return Ok(App::Path(p)),
        Err(e) => e,
    };
    // "app.py" that is not there is a missing file, not module `py` of package `app`.
    let file_like = [".py", ".psgi"].iter().any(|ext| written.ends_with(ext));
    let Some((module, callable)) = module_path(written).filter(|_| !file_like) else {
        return Err(not_found);
    };
    if !takes_module {
        return Err(format!("{not_found} (a Python module path pkg.module:callable is for gunicorn and uwsgi)"));
    }
    Ok(App::Module { module: module.to_string(), callable: callable.unwrap_or("application").to_string() })
}

/// `pkg.module:callable` or `pkg.module` split, when `s` is one (dotted Python identifiers).
fn module_path(s: &str) -> Option<(&str, Option<&str>)> {
    let identifier = |w: &str| {
        w.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
            && w.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    let (module, callable) = match s.split_once(':') {
        Some((m, c)) => (m, Some(c)),
        None => (s, None),
    };
    (module.split('.').all(identifier) && callable.is_none_or(identifier)).then_some((module, callable))
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
        assert_eq!(f.config.settings(), [("cpu".to_string(), "5ms".to_string()), ("workers".into(), "4".into())]);
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

    /// `app` is a path when one exists relative to the target file, else (gunicorn, uwsgi) a
    /// module path; `chdir` and `pythonpath` are directories relative to the target file.
    #[test]
    fn entry_points_as_users_write_them() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("mysite");
        std::fs::create_dir_all(project.join("lib")).unwrap();
        std::fs::write(dir.path().join("app.py"), "").unwrap();
        std::fs::write(dir.path().join("gunicorn.conf.py"), "workers = 3\n").unwrap();
        let at = |text: &str| TargetFile::parse(text, &dir.path().join("t.toml")).map_err(|e| e.0);
        let module = |m: &str, c: &str| App::Module { module: m.into(), callable: c.into() };

        let f = at("[target]\nadapter = \"gunicorn\"\napp = \"mysite.wsgi:application\"\nchdir = \"mysite\"\n\
                    pythonpath = [\"mysite/lib\", \"mysite\"]\nconfig = \"gunicorn.conf.py\"\n")
        .unwrap();
        assert_eq!(f.app, Some(module("mysite.wsgi", "application")));
        let chdir = f.chdir.clone().unwrap();
        assert_eq!((chdir.path, chdir.written.as_str()), (project.canonicalize().unwrap(), "mysite"));
        assert_eq!(f.pythonpath.iter().map(|p| p.written.as_str()).collect::<Vec<_>>(), ["mysite/lib", "mysite"]);
        assert_eq!(f.config.file().unwrap().path, dir.path().join("gunicorn.conf.py").canonicalize().unwrap());
        assert!(f.settings(&[]).0.is_empty());

        // `pkg.module` alone: callable `application`; no chdir: the target file's directory.
        let f = at("[target]\nadapter = \"uwsgi\"\napp = \"mysite.wsgi\"\npythonpath = \"mysite\"\n").unwrap();
        assert_eq!(f.app, Some(module("mysite.wsgi", "application")));
        assert_eq!(f.chdir.unwrap().path, dir.path().canonicalize().unwrap());
        // An existing path stays a path.
        let f = at("[target]\nadapter = \"gunicorn\"\napp = \"app.py\"\n").unwrap();
        assert!(matches!(&f.app, Some(App::Path(p)) if p.written == "app.py"), "{:?}", f.app);
        assert!(f.chdir.is_none());

        let e = at("[target]\nadapter = \"gunicorn\"\napp = \"missing.py\"\n").unwrap_err();
        assert!(e.contains("t.toml:3: app \"missing.py\":") && e.contains("No such file"), "{e}");
        let e = at("[target]\nadapter = \"starman\"\napp = \"mysite.wsgi:application\"\n").unwrap_err();
        assert!(
            e.contains("t.toml:3: app") && e.contains("module path pkg.module:callable is for gunicorn and uwsgi"),
            "{e}"
        );
        let e = at("[target]\nadapter = \"gunicorn\"\napp = \"mysite.wsgi\"\n\nchdir = \"nowhere\"\n").unwrap_err();
        assert!(e.contains("t.toml:5: chdir \"nowhere\":") && e.contains("No such file"), "{e}");
        let e = at("[target]\nadapter = \"gunicorn\"\napp = \"mysite.wsgi\"\nchdir = \"app.py\"\n").unwrap_err();
        assert!(e.contains("t.toml:4: chdir \"app.py\":") && e.contains("is not a directory"), "{e}");
        let e = at("[target]\nadapter = \"gunicorn\"\napp = \"mysite.wsgi\"\npythonpath = [1]\n").unwrap_err();
        assert!(e.contains("t.toml:4: pythonpath: a directory or a list"), "{e}");
        let e = at("[target]\nadapter = \"starman\"\nchdir = \"mysite\"\n").unwrap_err();
        assert!(e.contains("t.toml:3: chdir is for gunicorn and uwsgi"), "{e}");
    }

    /// `config` is a table of settings or a path, and a path only where the adapter reads one.
    #[test]
    fn config_is_settings_or_the_servers_own_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("nginx.conf"), "").unwrap();
        let at = |text: &str| TargetFile::parse(text, &dir.path().join("t.toml")).map_err(|e| e.0);
        let e = at("[target]\nadapter = \"starman\"\n\nconfig = \"nginx.conf\"\n").unwrap_err();
        assert!(
            e.contains("t.toml:4: config \"nginx.conf\": the starman adapter takes no configuration file yet"),
            "{e}"
        );
        // An empty nginx.conf has no server to load; site and pool are for the adapters that read them.
        let e = at("[target]\nadapter = \"nginx\"\nconfig = \"nginx.conf\"\n").unwrap_err();
        assert!(e.contains("t.toml:3: config: ") && e.contains("no server block in http"), "{e}");
        std::fs::write(dir.path().join("nginx.conf"), "events {}\nhttp { server { listen 80; } }\n").unwrap();
        let e = at("[target]\nadapter = \"nginx\"\nconfig = \"nginx.conf\"\nsite = \"a.example\"\n").unwrap_err();
        assert!(e.contains("t.toml:4: site: no server block of ") && e.contains("server_name \"a.example\""), "{e}");
        let e = at("[target]\nadapter = \"nginx\"\nconfig = \"nginx.conf\"\npool = \"www\"\n").unwrap_err();
        assert!(e.contains("t.toml:4: pool is for php-fpm with config = \"PATH\""), "{e}");
        let e = at("[target]\nadapter = \"lab\"\nsite = \"a.example\"\n").unwrap_err();
        assert!(e.contains("t.toml:3: site is for apache and nginx and php-fpm with config"), "{e}");
        let e = at("[target]\nadapter = \"gunicorn\"\napp = \"x.y\"\nconfig = \"gone.py\"\n").unwrap_err();
        assert!(e.contains("t.toml:4: config \"gone.py\":") && e.contains("No such file"), "{e}");
        let e = at("[target]\nadapter = \"gunicorn\"\nconfig = 3\n").unwrap_err();
        assert!(e.contains("t.toml:3: config: a table of knob = value, or the path"), "{e}");
        let f = at("[target]\nadapter = \"lab\"\nconfig = { workers = 2 }\n").unwrap();
        assert_eq!(f.config, Config::Settings(vec![("workers".into(), "2".into())]));
    }

    #[test]
    fn module_paths() {
        assert_eq!(module_path("mysite.wsgi:application"), Some(("mysite.wsgi", Some("application"))));
        assert_eq!(module_path("wsgi"), Some(("wsgi", None)));
        for not in ["apps/wsgi", "my-site.wsgi", "a..b", "a:b:c", "a:", ":a", "1a.b", ""] {
            assert_eq!(module_path(not), None, "{not}");
        }
    }
}
