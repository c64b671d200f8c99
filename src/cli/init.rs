//! `webtune init`: the first command on a real server. It writes a target file to standard
//! output from what is already there: a configuration file (`--config PATH`), or a running
//! master (`--pid PID`: its command line and files, and each worker's memory, read-only; no
//! request is sent). The target's base is the user's own configuration (`config = PATH`), its
//! knobs ranges around what that configuration sets now.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::args::InitArgs;
use crate::input::InputError;
use crate::procmem::{self, Role, Selector};
use crate::server::TargetFile;
use crate::server::file::AdapterName;

/// What init found to start from.
#[derive(Default)]
struct Found {
    adapter: &'static str,
    config: Option<PathBuf>,
    /// The server program, when it is not the adapter's usual one.
    program: Option<String>,
    /// gunicorn and uwsgi: the app's module path and directory, from the command line.
    app: Option<String>,
    chdir: Option<String>,
    /// Settings its command line gives (gunicorn's --workers), canonical names.
    given: Vec<(String, String)>,
    /// php-fpm: the pool to tune (when there are several) and the nginx that fronts it.
    pool: Option<String>,
    front_config: Option<PathBuf>,
    /// Comment lines about the running server (memory, capacity).
    notes: Vec<String>,
    /// The container limits it runs in (its cgroup's), and where they were read.
    container: Option<(crate::sys::cgroup::Limits, String)>,
}

/// `webtune init`: a target file written from a running server (`--pid`) or its
/// configuration file (`--config`).
pub fn run(a: &InitArgs) -> anyhow::Result<ExitCode> {
    let (found, how) = match (&a.config, a.pid) {
        (Some(path), _) => (from_config(path, a.adapter.as_deref())?, format!("--config {}", path.display())),
        (None, Some(pid)) => (from_pid(pid)?, format!("--pid {pid}")),
        (None, None) => return Err(InputError("give --config PATH or --pid PID".into()).into()),
    };
    let text = target_text(&found, &how)?;
    super::print::write_stdout(|out| out.write_all(text.as_bytes()))?;
    Ok(ExitCode::SUCCESS)
}

/// The adapter a configuration file is for, from its name (`--adapter` says it otherwise).
fn guess_adapter(path: &Path) -> Option<&'static str> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    let full = path.to_string_lossy().to_ascii_lowercase();
    Some(match name.as_str() {
        "apache2.conf" | "httpd.conf" => "apache",
        "nginx.conf" => "nginx",
        "php-fpm.conf" => "php-fpm",
        n if n.ends_with(".ini") => "uwsgi",
        n if n.ends_with(".py") => "gunicorn",
        _ if full.contains("/fpm/") => "php-fpm",
        _ if full.contains("apache") || full.contains("httpd") => "apache",
        _ if full.contains("nginx") => "nginx",
        _ => return None,
    })
}

fn from_config(path: &Path, adapter: Option<&str>) -> Result<Found, InputError> {
    let config = std::fs::canonicalize(path).map_err(|e| InputError(format!("--config {}: {e}", path.display())))?;
    let adapter = match adapter {
        Some(a) => adapter_name(a)?,
        None => guess_adapter(&config).ok_or_else(|| {
            InputError(format!(
                "--config {}: which server's file is it? say it with --adapter apache|nginx|php-fpm|gunicorn|uwsgi",
                path.display()
            ))
        })?,
    };
    Ok(Found { adapter, config: Some(config), ..Found::default() })
}

fn adapter_name(name: &str) -> Result<&'static str, InputError> {
    const TAKE_CONFIG: [&str; 5] = ["apache", "nginx", "php-fpm", "gunicorn", "uwsgi"];
    TAKE_CONFIG.iter().find(|a| **a == name).copied().ok_or_else(|| {
        InputError(format!("--adapter {name:?}: init reads the configuration of {}", TAKE_CONFIG.join(", ")))
    })
}

/// A process's command line, its arguments apart. A server that rewrote its title, as nginx
/// and php-fpm do ("nginx: master process /usr/sbin/nginx -c /etc/nginx/nginx.conf"), has one
/// argument holding it all: its words are the arguments.
fn cmdline(pid: i32) -> Result<Vec<String>, InputError> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map_err(|e| InputError(format!("--pid {pid}: cannot read its command line: {e}")))?;
    let args: Vec<String> =
        raw.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    Ok(match args.as_slice() {
        [title] if title.contains(' ') => title.split_whitespace().map(String::from).collect(),
        _ => args,
    })
}

fn exe(pid: i32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/exe")).ok()
}

/// The servers init knows, by the name their program runs as.
const SERVERS: [(&str, &str); 6] = [
    ("apache2", "apache"),
    ("httpd", "apache"),
    ("php-fpm", "php-fpm"),
    ("nginx", "nginx"),
    ("gunicorn", "gunicorn"),
    ("uwsgi", "uwsgi"),
];

/// Which server a process runs, and its program's path: by the executable, or by its
/// command line's first word when the executable cannot be read (another user's process, as
/// a root Apache is to a user). An interpreter (python3, perl) runs the server named by the
/// script it was given (`python3 /usr/bin/gunicorn`, `python3 -m gunicorn`); a name only
/// counts whole (`gunicorn3`, `php-fpm8.2` and `apache2` do; `gunicorn_backup.py` does not).
fn server_of(pid: i32, args: &[String]) -> Option<(&'static str, String)> {
    let first = args.first().map(|a| a.trim_end_matches(':').to_string()).unwrap_or_default();
    let program = exe(pid).map(|p| p.display().to_string()).unwrap_or(first);
    let name = |path: &str| Path::new(path).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let known = |word: &str| {
        SERVERS.iter().find(|(n, _)| {
            word.strip_prefix(n)
                .is_some_and(|rest| rest.is_empty() || rest.chars().all(|c| c.is_ascii_digit() || c == '.'))
        })
    };
    let own = name(&program);
    if let Some((_, adapter)) = known(&own) {
        return Some((adapter, program));
    }
    // webtune's own lab (`webtune lab ...`), its binary perhaps rebuilt since it started.
    if own.starts_with("webtune") && args.get(1).is_some_and(|a| a == "lab") {
        let program = program.strip_suffix(" (deleted)").map_or(program.clone(), str::to_string);
        return Some(("lab", program));
    }
    if !(own.starts_with("python") || own.starts_with("perl")) {
        return None;
    }
    // The interpreter's script: the first argument after its own options (`-m MODULE` names it).
    let mut rest = args.iter().skip(1);
    let script = loop {
        match rest.next()?.as_str() {
            "-m" => break rest.next()?.clone(),
            // Code on the command line (`python3 -c ...`, a supervisor) is no server's script.
            "-c" | "-e" | "-E" => return None,
            a if a.starts_with('-') => continue,
            a => break name(a),
        }
    };
    known(&script).map(|(_, adapter)| (*adapter, program))
}

/// The master of `pid`'s server: its oldest ancestor running the same server (not merely the
/// same interpreter: a gunicorn under a python3 supervisor stops at gunicorn).
fn master_of(pid: i32) -> i32 {
    let server = |p: i32| cmdline(p).ok().and_then(|args| server_of(p, &args)).map(|(adapter, _)| adapter);
    let Some(me) = server(pid) else { return pid };
    let mut at = pid;
    while let Some(parent) = procmem::procs::info(at).map(|i| i.ppid).filter(|p| *p > 1) {
        if server(parent) != Some(me) {
            break;
        }
        at = parent;
    }
    at
}

/// The directory a process runs in (empty when it cannot be read: another user's).
fn cwd_of(pid: i32) -> PathBuf {
    std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default()
}

/// The value after `flag` in `args` (`-f FILE`, `--ini=FILE`).
fn flag(args: &[String], names: &[&str]) -> Option<String> {
    for (i, a) in args.iter().enumerate() {
        for n in names {
            if a == n {
                return args.get(i + 1).cloned();
            }
            if let Some(v) = a.strip_prefix(&format!("{n}=")) {
                return Some(v.to_string());
            }
        }
    }
    None
}

fn from_pid(pid: i32) -> Result<Found, InputError> {
    if procmem::procs::info(pid).is_none() {
        return Err(InputError(format!("--pid {pid}: no such process")));
    }
    let master = master_of(pid);
    let args = cmdline(master)?;
    let joined = args.join(" ");
    let Some((adapter, program)) = server_of(master, &args) else {
        let program =
            exe(master).map(|p| p.display().to_string()).unwrap_or_else(|| args.first().cloned().unwrap_or_default());
        return Err(InputError(format!(
            "--pid {pid}: it runs {program} ({}): webtune init knows apache2/httpd, nginx, php-fpm, gunicorn, uwsgi and webtune lab",
            crate::input::echo(&joined)
        )));
    };
    let base = Path::new(&program).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut found = Found::default();
    if adapter == "apache" {
        found.adapter = "apache";
        let root = flag(&args, &["-d"]).map(PathBuf::from);
        let file = flag(&args, &["-f"]).map(PathBuf::from);
        let debian = Path::new("/etc/apache2/apache2.conf");
        found.config = Some(match (root, file) {
            (Some(r), Some(f)) if f.is_relative() => r.join(f),
            (_, Some(f)) => f,
            (Some(r), None) => r.join(if base.starts_with("apache2") { "apache2.conf" } else { "conf/httpd.conf" }),
            (None, None) if debian.exists() => debian.to_path_buf(),
            (None, None) => PathBuf::from("/etc/httpd/conf/httpd.conf"),
        });
        found.program = Some(program.clone());
    } else if adapter == "php-fpm" {
        found.adapter = "php-fpm";
        // "php-fpm: master process (/etc/php/8.2/fpm/php-fpm.conf)"
        let inside = joined.split_once('(').and_then(|(_, r)| r.rsplit_once(')')).map(|(p, _)| p.trim().to_string());
        found.config = inside.or_else(|| flag(&args, &["-y", "--fpm-config"])).map(PathBuf::from);
        found.program = Some(program.clone());
    } else if adapter == "lab" {
        found.adapter = "lab";
        found.program = Some(program.clone());
        found.given = lab_flags(&args);
    } else if adapter == "nginx" {
        found.adapter = "nginx";
        found.config = Some(nginx_config(&args));
    } else if adapter == "gunicorn" {
        found.adapter = "gunicorn";
        found.config = match flag(&args, &["-c", "--config"]) {
            // gunicorn's "python:pkg.module" form names a module, not a file to read.
            Some(c) if c.starts_with("python:") => {
                found.notes.push(format!(
                    "its configuration is the Python module {c}: webtune reads a file; set config = \"FILE.py\" by hand"
                ));
                None
            }
            Some(c) => Some(PathBuf::from(c)),
            // Without -c, gunicorn reads gunicorn.conf.py where it runs.
            None => Some(PathBuf::from("gunicorn.conf.py")).filter(|c| cwd_of(master).join(c).is_file()),
        };
        found.chdir = flag(&args, &["--chdir"]);
        // The app is the last argument that is not an option or an option's value.
        found.app = args.last().filter(|a| !a.starts_with('-') && (a.contains(':') || a.contains('.'))).cloned();
        found.given = given(&args, &[("workers", &["-w", "--workers"]), ("max_requests", &["--max-requests"])]);
    } else {
        found.adapter = "uwsgi";
        found.config = flag(&args, &["--ini"]).map(PathBuf::from);
        found.chdir = flag(&args, &["--chdir"]);
        found.app = flag(&args, &["--module", "-w"]);
        found.given =
            given(&args, &[("workers", &["-p", "--processes", "--workers"]), ("max_requests", &["--max-requests"])]);
    }
    if let Some(c) = &found.config {
        let c = if c.is_relative() { cwd_of(master).join(c) } else { c.clone() };
        found.config =
            Some(std::fs::canonicalize(&c).map_err(|e| {
                InputError(format!("--pid {pid}: its configuration {} cannot be read: {e}", c.display()))
            })?);
    }
    if let (Some(config), "php-fpm") = (found.config.clone(), found.adapter) {
        fronted(&mut found, &config);
    }
    found.notes.extend(memory_notes(master, &joined));
    found.container =
        crate::sys::cgroup::Limits::of_pid(master).filter(|(l, _)| l.memory.is_some() || l.cpus.is_some());
    Ok(found)
}

/// nginx's configuration file from its command line (`-c`, relative to `-p`), or Debian's.
fn nginx_config(args: &[String]) -> PathBuf {
    let prefix = flag(args, &["-p"]).map(PathBuf::from);
    let conf = flag(args, &["-c"]).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/etc/nginx/nginx.conf"));
    match prefix {
        Some(p) if conf.is_relative() => p.join(conf),
        _ => conf,
    }
}

/// php-fpm: the pool to tune and the nginx that fronts it in the user's setup: a running
/// nginx master whose configuration passes requests to the pool's socket or port.
fn fronted(found: &mut Found, config: &Path) {
    let Ok(pools) = crate::server::adapters::fpm_pools(config) else { return };
    let table = procmem::procs::snapshot();
    let masters: Vec<PathBuf> = table
        .values()
        .filter(|p| p.name == "nginx" && table.get(&p.ppid).is_none_or(|parent| parent.name != "nginx"))
        .filter_map(|p| {
            let args = cmdline(p.pid).ok()?;
            Some(cwd_of(p.pid).join(nginx_config(&args)))
        })
        .collect();
    let front = pools.iter().find_map(|(pool, addresses)| {
        masters.iter().find(|m| crate::server::adapters::nginx_passes_to(m, addresses)).map(|m| (pool, m))
    });
    match (front, pools.as_slice()) {
        (Some((pool, nginx)), _) => {
            found.pool = (pools.len() > 1).then(|| pool.clone());
            found.front_config = std::fs::canonicalize(nginx).ok();
            found.notes.push(format!("the nginx at {} passes requests to pool {pool}", nginx.display()));
        }
        (None, [_]) => found
            .notes
            .push("no running nginx passes requests to the pool: add front_config = \"PATH\" for yours".into()),
        (None, several) => {
            let names: Vec<&str> = several.iter().map(|(n, _)| n.as_str()).collect();
            found.pool = names.first().map(|n| n.to_string());
            found
                .notes
                .push(format!("pools {}: the first is tuned; name another with pool = \"NAME\"", names.join(", ")));
        }
    }
}

/// The canonical settings a command line gives, by their flags.
/// The lab's flags from its command line (`--workers 4 --dirty 64KiB`) as its knobs, under
/// their one name (`--dirty-kb 64` is dirty = 64KiB); not where it listens.
fn lab_flags(args: &[String]) -> Vec<(String, String)> {
    let lab = crate::server::adapters::adapter(AdapterName::Lab);
    let mut given = Vec::new();
    let mut rest = args.iter().skip(2);
    while let Some(arg) = rest.next() {
        let Some(flag) = arg.strip_prefix("--") else { continue };
        let (name, value) = match flag.split_once('=') {
            Some((n, v)) => (n.to_string(), v.to_string()),
            None => match rest.next() {
                Some(v) => (flag.to_string(), v.clone()),
                None => break,
            },
        };
        if name != "listen" {
            given.push(crate::server::adapters::respell(lab, &name.replace('-', "_"), &value));
        }
    }
    given
}

fn given(args: &[String], flags: &[(&str, &[&str])]) -> Vec<(String, String)> {
    flags.iter().filter_map(|(knob, names)| Some((knob.to_string(), flag(args, names)?))).collect()
}

/// Comment lines on the running server's memory: each worker's PSS and USS, and how many
/// workers the machine's memory holds, by PSS and by RSS (what "RAM divided by RSS" says).
fn memory_notes(master: i32, command: &str) -> Vec<String> {
    let mut notes = vec![format!("master {master}: {}", crate::input::echo_max(command, 120))];
    let Ok(pids) = procmem::select(&Selector::Pid(master)) else { return notes };
    let procs = procmem::sample(&pids).procs;
    let workers: Vec<_> = procs.iter().filter(|p| p.role == Role::Worker).collect();
    for w in &workers {
        notes.push(format!(
            "worker {}: PSS {} KiB, USS {} KiB, RSS {} KiB (shared {} KiB)",
            w.pid, w.mem.pss, w.uss, w.mem.rss, w.shared
        ));
    }
    let available = procmem::capacity::mem_available_kib();
    if workers.is_empty() || available == 0 {
        notes.push("no worker to measure: how many fit is not known".into());
        return notes;
    }
    let n = workers.len() as u64;
    let pss = workers.iter().map(|w| w.mem.pss).sum::<u64>() / n;
    let rss = workers.iter().map(|w| w.mem.rss).sum::<u64>() / n;
    let uss_max = workers.iter().map(|w| w.uss).max().unwrap_or(0);
    // What the workers hold now is theirs to keep: the pool may grow into what is available.
    let by_pss = (available + pss * n) / pss.max(1);
    let by_rss = (available + rss * n) / rss.max(1);
    notes.push(format!(
        "{n} workers, mean PSS {pss} KiB (largest USS {uss_max} KiB); with {} MiB available, about {by_pss} workers fit by PSS; \
         by RSS (RAM divided by RSS, as apache2buddy estimates) {by_rss}",
        available / 1024
    ));
    notes
}

/// Values to try around the current one (powers of two below and above it).
fn around(current: Option<u64>, fallback: &[u64]) -> Vec<u64> {
    let Some(n) = current.filter(|n| *n > 0) else { return fallback.to_vec() };
    let mut v = vec![(n / 4).max(1), (n / 2).max(1), n, n * 2];
    v.dedup();
    v
}

fn quoted(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

fn target_text(found: &Found, how: &str) -> Result<String, InputError> {
    let mut t = String::new();
    if found.adapter == "lab" {
        let _ = writeln!(t, "# Written by `webtune init {how}`: webtune's own lab, its command line the base.");
    } else {
        let _ = writeln!(t, "# Written by `webtune init {how}`: the base is your own configuration, read in place and");
        let _ = writeln!(t, "# never written; `webtune tune THIS_FILE --diff DIR` answers with a diff of your files.");
    }
    for n in &found.notes {
        let _ = writeln!(t, "# {n}");
    }
    let _ = writeln!(t, "[target]\nadapter = {}", quoted(found.adapter));
    if let Some(c) = &found.config {
        let _ = writeln!(t, "config = {}", quoted(&c.display().to_string()));
    }
    if let Some(p) = &found.program {
        let _ = writeln!(t, "program = {}", quoted(p));
    }
    if let Some(a) = &found.app {
        let _ = writeln!(t, "app = {}", quoted(a));
    }
    if let Some(d) = &found.chdir {
        let _ = writeln!(t, "chdir = {}", quoted(d));
    }
    if let Some(p) = &found.pool {
        let _ = writeln!(t, "pool = {}", quoted(p));
    }
    if let Some(f) = &found.front_config {
        let _ = writeln!(t, "front_config = {}", quoted(&f.display().to_string()));
    }
    // What the configuration sets now, read through the adapter as the tune will.
    let file = TargetFile::parse(&t, Path::new("init.toml"))?;
    let mut current: Vec<(String, String)> =
        crate::server::adapters::adapter(file.adapter).current(&file).map_err(|e| InputError(format!("{e:#}")))?;
    // The command line wins over the file, as it does for the server.
    for (k, v) in &found.given {
        current.retain(|(n, _)| n != k);
        current.push((k.clone(), v.clone()));
    }
    let get = |k: &str| current.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    if !current.is_empty() {
        let set: Vec<String> = current.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        let whose = if found.adapter == "lab" { "The lab's command line" } else { "Your configuration" };
        let _ = writeln!(t, "# {whose} sets: {}", set.join(", "));
    }
    // Values read from the command line are the base a tune starts from: without a file of
    // the server's own to hold them, the target file's [target.config] does.
    if found.config.is_none() && !found.given.is_empty() {
        let _ = writeln!(t, "\n[target.config]");
        for (k, v) in &found.given {
            let value = if v.parse::<f64>().is_ok() { v.clone() } else { quoted(v) };
            let _ = writeln!(t, "{k} = {value}");
        }
    }
    let workers = around(get("workers").and_then(|v| v.parse().ok()), &[2, 4, 8, 16]);
    let list = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    let _ = writeln!(t, "\n[knobs]\nworkers = [{}]", list(&workers));
    if file.adapter != AdapterName::Nginx {
        let max_requests = match get("max_requests").and_then(|v| v.parse::<u64>().ok()) {
            Some(0) | None => vec![0, 1000, 10000],
            Some(m) => vec![0, (m / 10).max(1), m, m * 10],
        };
        let _ = writeln!(t, "max_requests = [{}]", list(&max_requests));
    }
    let _ = writeln!(
        t,
        "\n[load]\npath = \"/\"          # a page of yours; or access_log = \"/var/log/...\" for your own traffic\n\
         connections = 32\nduration = \"10s\""
    );
    match &found.container {
        Some((limits, from)) => write_container(&mut t, limits, from),
        None => {
            let _ = writeln!(t, "\n[budget]\nmemory = \"auto\"    # what is available now plus what the server holds");
        }
    }
    Ok(t)
}

/// The `[container]` table of limits read from a cgroup: every trial runs in a cgroup of the
/// same size, and the memory budget is its memory limit (what the OOM killer enforces).
fn write_container(t: &mut String, limits: &crate::sys::cgroup::Limits, from: &str) {
    let _ = writeln!(t, "\n# The container it runs in: every trial runs in a cgroup of this size, and the memory");
    let _ = writeln!(t, "# budget is its memory limit (what the OOM killer acts on).");
    let _ = writeln!(t, "[container]\nfrom = {}", quoted(from));
    if let Some(m) = limits.memory {
        let _ = writeln!(t, "memory = {}", quoted(&crate::input::format_bytes(m)));
    }
    if let Some(s) = limits.swap.filter(|_| limits.memory.is_some()) {
        let _ = writeln!(t, "swap = {}", quoted(&crate::input::format_bytes(s)));
    }
    if let Some(c) = limits.cpus {
        let _ = writeln!(t, "cpus = {}", (c * 1000.0).round() / 1000.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adapters_are_guessed_from_the_files_name() {
        for (path, adapter) in [
            ("/etc/apache2/apache2.conf", Some("apache")),
            ("/etc/httpd/conf/httpd.conf", Some("apache")),
            ("/etc/nginx/nginx.conf", Some("nginx")),
            ("/etc/php/8.2/fpm/php-fpm.conf", Some("php-fpm")),
            ("/srv/app/app.ini", Some("uwsgi")),
            ("/srv/app/gunicorn.conf.py", Some("gunicorn")),
            ("/srv/app/site.toml", None),
        ] {
            assert_eq!(guess_adapter(Path::new(path)), adapter, "{path}");
        }
        assert_eq!(around(Some(150), &[1]), [37, 75, 150, 300]);
        assert_eq!(around(Some(1), &[1]), [1, 2]);
        assert_eq!(around(None, &[2, 4]), [2, 4]);
        let args: Vec<String> =
            ["nginx:", "master", "process", "/usr/sbin/nginx", "-c", "/x/n.conf"].map(String::from).into();
        assert_eq!(flag(&args, &["-c"]).as_deref(), Some("/x/n.conf"));
        let args: Vec<String> = ["uwsgi", "--ini=/srv/app.ini"].map(String::from).into();
        assert_eq!(flag(&args, &["--ini"]).as_deref(), Some("/srv/app.ini"));
    }
}
