//! The one trait every server's adapter implements, and the helpers adapters share: what a
//! launch is given (`Ctx`) and prepares (`Prepared`), the canonical knob names, and small
//! pieces of configuration text. The registry that picks an adapter is `adapters/mod.rs`.

use std::path::{Path, PathBuf};

use crate::server::file::{App, TargetFile};
use crate::server::process::Spawn;
use crate::server::rundir::RunDir;
use crate::server::settings::{Knob, Typed};

/// What an adapter gets to prepare a launch.
pub struct Ctx<'a> {
    pub dir: &'a RunDir,
    pub host: &'a str,
    pub port: u16,
    pub file: &'a TargetFile,
}

impl Ctx<'_> {
    /// The target file's application path (absolute), when it names one (not a module path).
    pub fn app(&self) -> Option<&Path> {
        self.file.app.as_ref().and_then(App::path)
    }

    /// The run directory as text, to write into configurations and command lines.
    pub fn run_dir_text(&self) -> String {
        self.dir.path.display().to_string()
    }
}

/// A prepared launch.
pub struct Prepared {
    /// Started in order, each in its own process group (a front server last).
    pub spawns: Vec<Spawn>,
    /// Which of `spawns` is the tuned server (its memory and workers are measured).
    pub master: usize,
    /// The configuration as written, for the evidence.
    pub config_text: String,
    pub error_logs: Vec<PathBuf>,
    /// Path of the server's own status page on its port, when it has one.
    pub status_path: Option<String>,
    /// Which of `spawns` is a front proxy before the tuned server (its memory and CPU count
    /// with the server's), if any.
    pub front: Option<usize>,
}

/// Where a running server is, for its counters.
pub struct Where<'a> {
    pub host: &'a str,
    pub port: u16,
    pub dir: &'a Path,
    pub status_path: Option<&'a str>,
}

/// What webtune needs to know of one kind of server to launch, observe and tune it.
pub trait Adapter: Sync {
    fn name(&self) -> &'static str;
    /// The native name of a canonical knob, when the server has it.
    fn native(&self, knob: &str) -> Option<&'static str>;
    /// The server's own default for a canonical knob (what runs where the configuration is
    /// silent), as the knob's value; None when it has none or it depends on other settings.
    fn default_value(&self, _knob: &str) -> Option<&'static str> {
        None
    }
    /// Whether its `max_requests` counts connections rather than requests (Apache's
    /// MaxConnectionsPerChild, Starman's --max-requests): a worker then serves as many requests
    /// as its kept-alive connections carry, many times the knob's value.
    fn recycles_per_connection(&self) -> bool {
        false
    }
    fn prepare(&self, ctx: &Ctx, values: &Typed) -> anyhow::Result<Prepared>;
    /// The configuration lines for `values`, in the server's syntax, to paste (a command line
    /// names `file`'s own entry point and configuration file, as the user wrote them).
    fn recommend(&self, file: &TargetFile, values: &Typed) -> String;
    /// Reads the status page body into counters (busy and idle workers...).
    fn counters(&self, _body: &str) -> Option<serde_json::Value> {
        None
    }
    /// The server's counters now: its status page on the load port, by default.
    fn read_counters(&self, at: &Where) -> Option<serde_json::Value> {
        let (code, body) =
            crate::server::http::get(at.host, at.port, at.status_path?, std::time::Duration::from_secs(2))?;
        if code != 200 {
            return None;
        }
        self.counters(&body)
    }
    /// Error-log lines that mean the server ran out of workers.
    fn saturation(&self) -> &'static [&'static str] {
        &[]
    }
    /// Directives (or settings) webtune writes itself, which a knob may not set: they open
    /// ports, load code or files, or write outside the run directory.
    fn reserved(&self) -> &'static [&'static str] {
        &[]
    }
    /// Characters a value cannot hold in the server's syntax (they would end the directive or
    /// open a block).
    fn syntax(&self) -> &'static [char] {
        &[]
    }
    /// An old spelling of a knob, as its one name now and the value in that name's terms
    /// (the lab's `dirty_kb = 64` is `dirty = "64KiB"`); None for a name that is current.
    fn respell(&self, _name: &str, _value: &str) -> Option<(&'static str, String)> {
        None
    }
    /// The adapter's own rules for one knob's value (a knob of webtune's own, a path that must
    /// stay inside the run directory), beyond the rules every adapter shares.
    fn check_value(&self, _name: &str, _value: &str) -> Result<(), String> {
        Ok(())
    }
    /// Whether a `front = "nginx"` proxy may stand before this server (not before nginx itself,
    /// nor where the adapter starts a front of its own).
    fn takes_front(&self) -> bool {
        true
    }
    /// Checks the server's own configuration file (`config = "PATH"`) before any start: why
    /// it cannot be used, with its file:line when a line is the reason.
    fn check_config_file(&self, _path: &Path) -> Result<(), String> {
        Err(format!(
            "the {} adapter takes no configuration file yet: give the base settings as [target.config] knob = value",
            self.name()
        ))
    }
    /// With the user's own configuration tree: whether `site = "NAME"` names one of its
    /// virtual hosts (checked when the target file is read).
    fn check_site(&self, _config: &Path, site: &str) -> Result<(), String> {
        Err(format!("site {site:?}: the {} adapter has no virtual hosts to pick from", self.name()))
    }
    /// With the user's own configuration tree: the unified diff of their files for `values`,
    /// one per tree it reads (`UserTree::diff`), none when nothing changes.
    fn diffs(&self, _file: &TargetFile, _values: &Typed) -> anyhow::Result<Vec<(String, String)>> {
        Ok(Vec::new())
    }
    /// With the user's own configuration tree: what it sets now, as knob = value, for the
    /// canonical knobs it sets (workers, max_requests...) under their canonical names, for
    /// `webtune init` to offer ranges around. Nothing without a tree.
    fn current(&self, _file: &TargetFile) -> anyhow::Result<Vec<(String, String)>> {
        Ok(Vec::new())
    }
    /// With the user's own configuration: the tree judged with the target file's keys that
    /// pick its parts (`site`, `pool`, `front_config`), before any start; the key to blame
    /// and why (with the tree's file:line when a line is the reason).
    fn check_target(&self, _file: &TargetFile) -> Result<(), (&'static str, String)> {
        Ok(())
    }
    /// How many workers the server starts with these values (launch waits for them).
    fn expected_workers(&self, values: &Typed) -> Option<usize> {
        values.workers()?.number()
    }
    /// `expected_workers` for `file`'s target: with the user's own tree, what it sets counts
    /// where the knobs are silent (Apache's StartServers and spares, php-fpm's pm).
    fn expected_workers_in(&self, _file: &TargetFile, values: &Typed) -> Option<usize> {
        self.expected_workers(values)
    }
}

/// Whether `name` is one of `list`, ignoring case (Apache's directives ignore it).
pub fn is_one_of(name: &str, list: &[&str]) -> bool {
    let first = name.split(' ').next().unwrap_or(name);
    list.iter().any(|d| d.eq_ignore_ascii_case(first))
}

/// Native knobs as long command-line options: `--name value`, or `--name` alone for on/true.
pub fn native_flags(values: &Typed) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in values.natives() {
        out.push(format!("--{}", k.trim_start_matches('-').replace('_', "-")));
        if !matches!(v, "on" | "true") {
            out.push(v.to_string());
        }
    }
    out
}

/// How a pre-forking server with a fixed pool (gunicorn, Starman) spells the canonical knobs
/// on its command line, beside `--workers`, `--max-requests` and `--backlog`, which both share.
pub struct PoolFlags {
    /// The server's name, for errors.
    pub server: &'static str,
    /// The keep-alive timeout's flag, in whole seconds.
    pub keepalive_timeout: &'static str,
    /// What turns keep-alive off.
    pub keepalive_off: &'static [&'static str],
    /// What loads the app before the fork.
    pub preload: &'static str,
}

/// The command line of a fixed pool for `values`: the canonical knobs in their order (the
/// spares refused: the pool does not grow), then the native ones as `--name value`.
pub fn pool_flags(spelling: &PoolFlags, values: &Typed) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for knob in values.knobs() {
        match knob {
            Knob::Workers(n) => out.extend(["--workers".into(), n.to_string()]),
            Knob::MaxRequests(n) => out.extend(["--max-requests".into(), n.to_string()]),
            Knob::Backlog(n) => out.extend(["--backlog".into(), n.to_string()]),
            Knob::KeepaliveTimeout(t) => out.extend([spelling.keepalive_timeout.into(), t.seconds()?.to_string()]),
            Knob::Keepalive(false) => out.extend(spelling.keepalive_off.iter().map(|s| s.to_string())),
            Knob::Preload(true) => out.push(spelling.preload.into()),
            Knob::Keepalive(true) | Knob::Preload(false) | Knob::Native(..) => {}
            Knob::StartWorkers(_) | Knob::MinSpare(_) | Knob::MaxSpare(_) => {
                anyhow::bail!("{} has a fixed pool: {} does not apply", spelling.server, knob.name())
            }
        }
    }
    out.extend(native_flags(values));
    Ok(out)
}

/// A host as it goes before `:port` in a configuration: an IPv6 address in brackets.
pub fn bracket(host: &str) -> String {
    if host.contains(':') { format!("[{host}]") } else { host.to_string() }
}

/// Writes a file of the run directory, readable by servers that drop privileges.
pub fn write(dir: &RunDir, name: &str, text: &str) -> anyhow::Result<PathBuf> {
    let p = dir.join(name);
    std::fs::write(&p, text).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644));
    Ok(p)
}
