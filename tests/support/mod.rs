//! What the integration tests share: running the real binary, validating its JSON, and the
//! real servers it talks to (nginx, and an in-test server that misbehaves on purpose).

#![allow(dead_code)]

pub mod apache;
pub mod lab;
pub mod nginx;
pub mod rogue;
pub mod sshd;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A finished run of the webtune binary.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Whether process `pid` runs (exists and is not a zombie): the state field after the last
/// ')' of /proc/PID/stat, so a command name holding ") Z " does not fool it.
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'),
        Err(_) => false,
    }
}

/// A run's stdout (or any text) as JSON; the text is in the panic when it is not.
pub fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// `webtune ARGS` with the history database at `db`: (exit code, stdout, stderr).
pub fn wt(db: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_webtune")).args(args).env("WEBTUNE_DB", db).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// sha256 of every file under `dir` (links followed only to files), by path.
pub fn checksums(dir: &std::path::Path) -> std::collections::BTreeMap<String, String> {
    let out = Command::new("find").arg(dir).args(["-type", "f", "-exec", "sha256sum", "{}", "+"]).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once("  ").map(|(sum, path)| (path.to_string(), sum.to_string())))
        .collect()
}

/// `webtune bench ARGS --json` (500 requests) succeeds without coalescing wake-ups: `why`
/// names what turns it off.
pub fn assert_not_coalesced(args: &[&str], why: &str) {
    let (v, run) = bench_json(args);
    assert_eq!(run.code, 0, "{why}: {}", run.stderr);
    assert_eq!(v.pointer("/options/coalesce"), Some(&Value::Bool(false)), "{why}");
    assert_eq!(v.pointer("/result/coalesced"), Some(&Value::Null), "{why}");
    assert_eq!(num(&v, "/result/succeeded"), 500, "{why}");
}

/// The history database of this test process (never the user's own).
pub fn test_db() -> PathBuf {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path().join("webtune.db")
}

/// A running webtune, its output collected by threads.
pub struct Spawned {
    pub child: std::process::Child,
    pub stdout: std::thread::JoinHandle<String>,
    pub stderr: std::thread::JoinHandle<String>,
}

/// Starts `webtune ARGS` with the test's database and no input.
pub fn spawn_webtune(args: &[&str]) -> Spawned {
    let mut child = Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(args)
        .env("WEBTUNE_DB", test_db())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start webtune");
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    Spawned {
        child,
        stdout: std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default()),
        stderr: std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default()),
    }
}

/// Runs `webtune ARGS`, killing it if it outlives `limit` (a hang is a test failure).
pub fn webtune_with_limit(args: &[&str], limit: Duration) -> Run {
    webtune_via(&[], args, limit)
}

/// Writes a lab target at `file` that this webtune runs (`program`), `rest` after its
/// `[target]` lines: the `[target.config]`, `[knobs]` and `[load]` tables.
pub fn write_lab_target(file: &std::path::Path, rest: &str) {
    let text = format!("[target]\nadapter = \"lab\"\nprogram = \"{}\"\n{rest}", env!("CARGO_BIN_EXE_webtune"));
    std::fs::write(file, text).unwrap();
}

/// `tune TARGET --json --quiet --repeats 1 --journal JOURNAL`, then `extra`: a tune of one
/// window a point, as the tests run one.
pub fn tune_args<'a>(target: &'a str, journal: &'a std::path::Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["tune", target, "--json", "--quiet", "--repeats", "1", "--journal", journal.to_str().unwrap()];
    args.extend_from_slice(extra);
    args
}

/// A short tune of `target` as the tests run one: `--json --quiet --repeats 1 --max-rounds 2`,
/// then `extra`, within 300 s.
pub fn quick_tune(target: &std::path::Path, extra: &[&str]) -> Run {
    let mut args = vec!["tune", target.to_str().unwrap(), "--json", "--quiet", "--repeats", "1", "--max-rounds", "2"];
    args.extend_from_slice(extra);
    // The journal beside the target, not in the directory the tests run in (the repository).
    let journal = target.with_extension("tune.jsonl");
    if !extra.contains(&"--journal") {
        args.extend(["--journal", journal.to_str().unwrap()]);
    }
    webtune_with_limit(&args, Duration::from_secs(300))
}

/// The unprivileged user and group tests drop to, with `setpriv` (util-linux).
pub const NOBODY: [&str; 6] = ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups"];

/// Runs `webtune ARGS` as the user nobody (the tests run as root).
pub fn webtune_as_nobody(args: &[&str], limit: Duration) -> Run {
    webtune_via(&NOBODY, args, limit)
}

/// Runs `webtune ARGS` through `wrapper` (a command that runs its arguments, such as
/// setpriv), killing it if it outlives `limit`.
pub fn webtune_via(wrapper: &[&str], args: &[&str], limit: Duration) -> Run {
    let bin = env!("CARGO_BIN_EXE_webtune");
    let mut command = match wrapper.split_first() {
        Some((program, rest)) => {
            let mut c = Command::new(program);
            c.args(rest).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    command.args(args).env("WEBTUNE_DB", test_db());
    run_with_limit(command, limit)
}

/// `webtune launch TARGET --for FOR` started, its output piped, and the port it said it is
/// ready on (its first line ends with the URL); stop it with `stop_child`.
pub fn launched(target: &std::path::Path, for_: &str) -> (std::process::Child, u16) {
    launched_with(target, for_, &[])
}

/// `launched`, with `extra` arguments after `--for FOR` (`--set KNOB=VALUE`...).
pub fn launched_with(target: &std::path::Path, for_: &str, extra: &[&str]) -> (std::process::Child, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(["launch", target.to_str().unwrap(), "--for", for_])
        .args(extra)
        .env("WEBTUNE_DB", test_db())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut first).unwrap();
    let port = first
        .rsplit(':')
        .next()
        .and_then(|p| p.trim().trim_end_matches('/').parse().ok())
        .unwrap_or_else(|| panic!("no port in {first:?}"));
    (child, port)
}

/// Runs a command to its end with its output captured, killing it if it outlives `limit`.
pub fn run_with_limit(mut cmd: Command, limit: Duration) -> Run {
    let child =
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start the command");
    finish(child, limit, &[&format!("{cmd:?}")])
}

/// Waits for a started webtune, killing it if it outlives `limit` (a hang is a test failure).
pub fn finish(mut child: std::process::Child, limit: Duration, args: &[&str]) -> Run {
    let started = Instant::now();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let err = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("webtune {args:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Run { code: status.code().unwrap_or(-1), stdout: out.join().unwrap(), stderr: err.join().unwrap() }
}

pub fn webtune(args: &[&str]) -> Run {
    webtune_with_limit(args, Duration::from_secs(60))
}

/// Runs `webtune bench ARGS --json -q`, checks the output against the JSON schema, returns it.
pub fn bench_json(args: &[&str]) -> (Value, Run) {
    let mut full = vec!["bench", "--json", "--quiet"];
    full.extend_from_slice(args);
    let run = webtune(&full);
    let v: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}\nstderr: {}", run.stdout, run.stderr));
    assert_valid(&v);
    (v, run)
}

/// Fails the test when `v` does not follow schema/bench-report.v2.json.
pub fn assert_valid(v: &Value) {
    assert_schema("bench-report.v2.json", v);
}

/// Fails the test when `v` does not follow schema/FILE (each schema compiled once).
pub fn assert_schema(file: &str, v: &Value) {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    static VALIDATORS: OnceLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> = OnceLock::new();
    let validator = {
        let mut cache = VALIDATORS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(file.to_string())
            .or_insert_with(|| {
                let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema").join(file);
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let schema: Value = serde_json::from_str(&text).unwrap();
                Arc::new(jsonschema::validator_for(&schema).expect("the schema itself is valid"))
            })
            .clone()
    };
    let errors: Vec<String> = validator.iter_errors(v).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "output does not follow schema/{file}: {errors:#?}\n{v:#}");
}

/// A u64 at a JSON pointer, e.g. "/result/succeeded".
/// A coalescing run of `requests`: how many were batched depends on the machine (batches
/// that keep responses waiting longer than 1/16 of a cycle end the pausing), but what is
/// reported must add up, and every latency phase stays in order (arrival stamps).
pub fn coalesced_figures_add_up(v: &Value, requests: u64) {
    let batched = num(v, "/result/coalesced/responses");
    let wait = float(v, "/result/coalesced/mean_wait_ms");
    assert!(batched <= requests, "{v:#}");
    assert!((batched == 0) == (wait == 0.0), "{batched} batched, mean wait {wait} ms");
    for p in ["p50", "p99", "max"] {
        let first_byte = float(v, &format!("/result/latency_ms/first_byte/{p}"));
        let total = float(v, &format!("/result/latency_ms/total/{p}"));
        assert!(first_byte > 0.0 && first_byte <= total, "{p}: first byte {first_byte} total {total}");
    }
}

pub fn num(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer).and_then(Value::as_u64).unwrap_or_else(|| panic!("no integer at {pointer} in {v:#}"))
}

pub fn float(v: &Value, pointer: &str) -> f64 {
    v.pointer(pointer).and_then(Value::as_f64).unwrap_or_else(|| panic!("no number at {pointer} in {v:#}"))
}

/// The count of one error class.
pub fn errors(v: &Value, class: &str) -> u64 {
    num(v, &format!("/result/errors/{class}"))
}

/// Finds a program on PATH or in the sbin directories where Debian puts servers.
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    path.split(':')
        .map(PathBuf::from)
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Waits until something accepts connections on 127.0.0.1:`port`; false when `child` exits
/// first or `limit` passes (a server that failed to start, or lost the race for the port).
pub fn wait_listening(child: &mut std::process::Child, port: u16, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// SIGTERM, then up to `grace` for the process to exit, then SIGKILL. Returns whether it
/// exited within the grace period.
pub fn stop_child(child: &mut std::process::Child, grace: Duration) -> bool {
    if let Ok(Some(_)) = child.try_wait() {
        return true;
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    false
}

/// A server the test needs is missing: under CI that is a failure, elsewhere a skip.
pub fn missing(what: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
        panic!("{what} is not installed; the README's test command installs it");
    }
    eprintln!("SKIPPED: {what} is not installed (run the README's test command to install it)");
}

/// Whether the programs a test needs are here; under CI they must be.
pub fn have(programs: &[&str]) -> bool {
    for p in programs {
        if find_program(p).is_none() {
            missing(p);
            return false;
        }
    }
    true
}
