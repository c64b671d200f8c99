//! Hostile process and file states (issue 16): processes this user may not read, stale and
//! racing run directories, runs killed outright, journals written by several tuners.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{NOBODY, alive, tune_args, webtune_as_nobody, write_lab_target};

/// A shell script run in its own process group, killed (the whole group) on drop.
struct Group {
    child: Child,
}

impl Group {
    fn start(script: &str) -> Group {
        let child = Command::new("sh")
            .args(["-c", script])
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("start sh");
        Group { child }
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The group's processes other than the shell, once `n` of them exist (bounded wait).
    fn children(&self, n: usize) -> Vec<i32> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let kids: Vec<i32> = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", self.pid()))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            if kids.len() >= n {
                return kids;
            }
            assert!(Instant::now() < deadline, "the group's {n} children did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(self.pid()), nix::sys::signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// Apache's shape: a root-owned master whose workers run as another user. Read by that user,
/// the master is refused: the totals would leave it out, so mem fails naming it, unless
/// partial figures are accepted, and then it is listed as unread.
#[test]
fn mem_refuses_a_tree_it_cannot_fully_read() {
    let nobody = NOBODY.join(" ");
    let tree = Group::start(&format!("{nobody} sleep 60 & {nobody} sleep 60 & wait"));
    let workers = tree.children(2);
    let master = tree.pid().to_string();
    let limit = Duration::from_secs(20);

    let run = webtune_as_nobody(&["mem", "--pid", &master, "--json"], limit);
    assert_eq!(run.code, 1, "stdout {} stderr {}", run.stdout, run.stderr);
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains(&format!("pid {master} (sh)")), "{}", run.stderr);
    assert!(run.stderr.contains("permission denied") && run.stderr.contains("--partial"), "{}", run.stderr);
    for w in &workers {
        assert!(!run.stderr.contains(&format!("pid {w} ")), "a readable worker named: {}", run.stderr);
    }

    let run = webtune_as_nobody(&["mem", "--pid", &master, "--json", "--partial"], limit);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    let mut read: Vec<i32> =
        v["processes"].as_array().unwrap().iter().map(|p| p["pid"].as_i64().unwrap() as i32).collect();
    read.sort();
    let mut expect = workers.clone();
    expect.sort();
    assert_eq!(read, expect, "{v:#}");
    assert_eq!(v["unread"], serde_json::json!([{"pid": tree.pid(), "name": "sh", "reason": "denied"}]));
    // Their parent is in the selection, unread: they are still workers, not masters.
    assert!(v["processes"].as_array().unwrap().iter().all(|p| p["role"] == "worker"), "{v:#}");

    let run = webtune_as_nobody(&["mem", "--pid", &master, "--partial"], limit);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("PARTIAL: 1 of the server's processes could not be read"), "{}", run.stdout);

    // pid 1, unprivileged: refused, in one bounded line however many processes it has.
    let run = webtune_as_nobody(&["mem", "--pid", "1"], limit);
    assert_eq!((run.code, run.stderr.lines().count()), (1, 1), "{}", run.stderr);
    assert!(run.stderr.contains("pid 1 (") && run.stderr.len() < 1000, "{}", run.stderr);

    // Everything refused: nothing to show even with --partial.
    let root_only = Group::start("exec sleep 60");
    let run = webtune_as_nobody(&["mem", "--pid", &root_only.pid().to_string(), "--partial"], limit);
    assert_eq!((run.code, run.stderr.lines().count()), (1, 1), "{}", run.stderr);
    assert!(run.stderr.contains(&format!("pid {} (sleep)", root_only.pid())), "{}", run.stderr);

    // --watch checks every sample the same way.
    let run = webtune_as_nobody(&["mem", "--pid", &master, "--watch", "100ms", "--count", "2"], limit);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stderr.contains(&format!("pid {master} (sh)")), "{}", run.stderr);
}

/// A process that exited (a zombie, not yet reaped; or one gone entirely) holds no memory:
/// it is listed as exited, and the figures of the others stand.
#[test]
fn mem_counts_an_exited_process_as_gone_not_as_an_error() {
    let mut zombie = Command::new("true").spawn().unwrap();
    let z = zombie.id() as i32;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(format!("/proc/{z}/stat")).unwrap_or_default().contains(") Z ") {
        assert!(Instant::now() < deadline, "true did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }
    let gone = i32::MAX; // above any pid_max
    let me = std::process::id() as i32;
    let sample = webtune::procmem::sample(&[me, z, gone]);
    let _ = zombie.wait();
    assert_eq!(sample.procs.iter().map(|p| p.pid).collect::<Vec<_>>(), vec![me]);
    let unread: Vec<(i32, webtune::procmem::Unreadable)> = sample.unread.iter().map(|u| (u.pid, u.reason)).collect();
    use webtune::procmem::Unreadable::Exited;
    assert_eq!(unread, vec![(z, Exited), (gone, Exited)]);
    assert_eq!(sample.complete().unwrap().len(), 1);
}

/// The process's start time (/proc/PID/stat field 22), as the run directory records it.
fn start_ticks(pid: i32) -> u64 {
    webtune::procmem::procs::info(pid).expect("process exists").start_ticks
}

/// `webtune launch FILE --for 0s` with its run directories under `runtime`.
fn launch_once(file: &std::path::Path, runtime: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(["launch", file.to_str().unwrap(), "--for", "0s"])
        .env("XDG_RUNTIME_DIR", runtime)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn run_dirs(runtime: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(runtime.join("webtune"))
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().to_string()).collect())
        .unwrap_or_default()
}

/// A stale run directory (its owner dead) whose groups file names process groups that are not
/// the run's any more (the id reused by an unrelated process, recorded with another start
/// time, or in the old format without one): the next launch removes the directory and leaves
/// those processes alive. A group whose leader is gone but whose members carry the run's
/// marker is still the run's, and is stopped.
#[test]
fn stale_cleanup_kills_only_groups_it_started() {
    let runtime = tempfile::tempdir().unwrap();
    let file = crate::launch::lab_file(runtime.path());
    let base = runtime.path().join("webtune");
    std::fs::create_dir_all(&base).unwrap();

    let unrelated = Group::start("exec sleep 60");
    let old_format = Group::start("exec sleep 60");
    let stale = base.join("run-999999-stale");
    std::fs::create_dir(&stale).unwrap();
    // No process has pid 999999 with this start time: the owner is dead.
    std::fs::write(stale.join("owner"), "999999 1").unwrap();
    // The run's own group: its leader gone, a member left behind carrying the marker.
    let mut orphan_leader = Command::new("sh")
        .args(["-c", "sleep 60 >/dev/null & echo started"])
        .env("WEBTUNE_RUN_DIR", &stale)
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let ours = orphan_leader.id() as i32;
    let mut said = String::new();
    std::io::Read::read_to_string(orphan_leader.stdout.as_mut().unwrap(), &mut said).unwrap();
    orphan_leader.wait().unwrap();
    let member = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .find(|&p| webtune::procmem::procs::info(p).is_some_and(|i| i.pgrp == ours && i.pid != ours))
        .expect("the orphaned member");
    std::fs::write(
        stale.join("groups"),
        format!(
            "{} {}\n{}\n{ours} {}\n",
            unrelated.pid(),
            start_ticks(unrelated.pid()) + 1,
            old_format.pid(),
            start_ticks(member) - 1
        ),
    )
    .unwrap();

    let run = launch_once(&file, runtime.path());
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert!(alive(unrelated.pid()), "an unrelated group named with another start time was killed");
    assert!(alive(old_format.pid()), "a group named without a start time was killed");
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(member) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(member), "the run's own orphaned group was left running");
    assert_eq!(run_dirs(runtime.path()), Vec::<String>::new());
}

/// A base another user could have written in is refused: its run directories' groups files
/// could name anything.
#[test]
fn a_run_base_others_can_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let runtime = tempfile::tempdir().unwrap();
    let file = crate::launch::lab_file(runtime.path());
    let base = runtime.path().join("webtune");
    std::fs::create_dir(&base).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o777)).unwrap();
    let run = launch_once(&file, runtime.path());
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!((run.status.code(), err.lines().count()), (Some(1), 1), "{err}");
    assert!(err.contains("not a directory of this user's alone") && err.contains("mode 777"), "{err}");
    // Made by another user (as /tmp/webtune-0 could be, planted before root's first run).
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
    let nobody = nix::unistd::User::from_name("nobody").unwrap().expect("a user nobody");
    std::os::unix::fs::chown(&base, Some(nobody.uid.as_raw()), None).unwrap();
    let run = launch_once(&file, runtime.path());
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("owner uid {}", nobody.uid)), "{err}");
}

/// Run directories made and reaped at once by many launches: none is reaped while its owner
/// lives, none is left.
#[test]
fn concurrent_run_directories_are_never_reaped_alive() {
    let base = tempfile::tempdir().unwrap();
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..150 {
                    let dir = webtune::server::rundir::RunDir::create_in(base.path()).expect("create");
                    dir.record_group(i32::MAX).expect("its own directory is still there");
                    assert!(dir.join("owner").exists());
                    dir.remove();
                }
            });
        }
    });
    assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 0);
}

/// Concurrent `launch`es of the lab: all come up, all are stopped, no directory is left.
#[test]
fn concurrent_launches_all_succeed_and_are_cleaned() {
    let runtime = tempfile::tempdir().unwrap();
    let file = crate::launch::lab_file(runtime.path());
    let outputs: Vec<std::process::Output> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4).map(|_| s.spawn(|| launch_once(&file, runtime.path()))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for out in &outputs {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("master pid "));
    }
    assert_eq!(run_dirs(runtime.path()), Vec::<String>::new());
}

/// A small lab tuning: one knob, short windows.
fn small_tune_file(dir: &std::path::Path, knobs: &str) -> String {
    let f = dir.join("small.toml");
    write_lab_target(
        &f,
        &format!(
            "[target.config]\nworkers = 2\ncpu = \"1ms\"\n\
             [knobs]\n{knobs}\n[load]\nconnections = 2\nduration = \"400ms\"\n",
        ),
    );
    f.display().to_string()
}

/// Starts `webtune ARGS` in the background (its history in the tests' database, its run
/// directories under `runtime`).
fn spawn_webtune(args: &[&str], runtime: &std::path::Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(args)
        .env("WEBTUNE_DB", crate::support::test_db())
        .env("XDG_RUNTIME_DIR", runtime)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (bounded) until `path` holds at least `lines` lines.
fn wait_lines(path: &std::path::Path, lines: usize, limit: Duration) {
    let deadline = Instant::now() + limit;
    while std::fs::read_to_string(path).map_or(0, |t| t.lines().count()) < lines {
        assert!(Instant::now() < deadline, "{} did not reach {lines} lines", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Two tunings on one journal: the second is refused at once, in one line; the first goes on
/// and its journal holds only whole lines, its own.
#[test]
fn a_second_tune_on_a_journal_in_use_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = small_tune_file(dir.path(), "backlog = [511, 1024]");
    let journal = dir.path().join("j.jsonl");
    let args = ["tune", &f, "--quiet", "--json", "--repeats", "1", "--journal", journal.to_str().unwrap()];
    let first = spawn_webtune(&args, dir.path());
    wait_lines(&journal, 1, Duration::from_secs(30));
    for resume in [false, true] {
        let mut second: Vec<&str> = args.to_vec();
        if resume {
            second.push("--resume");
        }
        let run = crate::support::webtune_with_limit(&second, Duration::from_secs(20));
        assert_eq!((run.code, run.stderr.lines().count()), (1, 1), "{}", run.stderr);
        assert!(run.stderr.contains("is being written by another webtune tune"), "{}", run.stderr);
    }
    // The first is stopped once it has journalled a point (a whole tuning takes a while).
    wait_lines(&journal, 2, Duration::from_secs(60));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(first.id() as i32), nix::sys::signal::SIGINT).unwrap();
    let out = first.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("a whole JSON line")).collect();
    assert_eq!(lines.len(), 1 + v["points"].as_array().unwrap().len(), "{text}");
    assert_eq!(lines[0]["journal"], "webtune.tune.v1");
}

/// The status `webtune runs` gives the tune of target file `f`.
fn tune_status(f: &str) -> String {
    let run = crate::support::webtune(&["runs", "--kind", "tune", "--target", f, "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let rows: Value = serde_json::from_str::<Value>(&run.stdout).unwrap()["runs"].take();
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows:#}");
    rows[0]["status"].as_str().unwrap().to_string()
}

/// A tune killed outright (SIGKILL) never finishes its run: `runs` says "killed", not
/// "running" forever; the lab it left is stopped by the next clean-up, its run directory gone.
#[test]
fn a_tune_killed_outright_shows_as_killed() {
    let dir = tempfile::tempdir().unwrap();
    let f = small_tune_file(dir.path(), "backlog = [511, 1024]");
    let journal = dir.path().join("j.jsonl");
    let mut tune =
        spawn_webtune(&["tune", &f, "--quiet", "--repeats", "1", "--journal", journal.to_str().unwrap()], dir.path());
    wait_lines(&journal, 2, Duration::from_secs(60));
    assert_eq!(tune_status(&f), "running");
    tune.kill().unwrap();
    tune.wait().unwrap();
    assert_eq!(tune_status(&f), "killed");
    let run = crate::support::webtune(&["runs", "--kind", "tune", "--target", &f]);
    assert!(run.stdout.contains("killed") && run.stdout.contains("webtune was killed"), "{}", run.stdout);
    // The labs it was measuring and keeping between windows (if the kill fell inside a
    // comparison) outlived it, each in its own group: the next clean-up stops them all and
    // removes their directories.
    let base = dir.path().join("webtune");
    let dirs = run_dirs(dir.path());
    let stopped = webtune::server::rundir::reap_stale(&base);
    assert!(dirs.len() <= webtune::tune::kept::MAX_KEPT && stopped.len() <= dirs.len(), "{dirs:?} {stopped:?}");
    assert_eq!(run_dirs(dir.path()), Vec::<String>::new());
}

/// Ctrl-C in the middle of a tuning: the evidence reports what was measured and claims
/// nothing (no effect, misses the objective, adopted) of values never measured; a knob the run
/// never reached says so.
#[test]
fn an_interrupted_tune_claims_nothing_of_values_never_measured() {
    let dir = tempfile::tempdir().unwrap();
    let f = small_tune_file(dir.path(), "backlog = [511, 1024, 2048]\nworkers = [2, 4]");
    let journal = dir.path().join("j.jsonl");
    let tune = spawn_webtune(
        &["tune", &f, "--quiet", "--json", "--repeats", "1", "--journal", journal.to_str().unwrap()],
        dir.path(),
    );
    // The incumbent's first window is in: the challengers are not all measured yet.
    wait_lines(&journal, 2, Duration::from_secs(60));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(tune.id() as i32), nix::sys::signal::SIGINT).unwrap();
    let out = tune.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["stopped"], "interrupted");
    let measured: Vec<String> =
        v["points"].as_array().unwrap().iter().map(|p| p["step"].as_str().unwrap().to_string()).collect();
    let evidence = |knob: &str| -> String {
        v["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e[0] == knob)
            .map(|e| e[2].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("no evidence for {knob}: {v:#}"))
    };
    let workers = evidence("workers");
    assert!(workers.contains("not judged") && workers.contains("never measured: 4"), "{workers}");
    assert!(!measured.iter().any(|s| s.starts_with("workers=4")), "{measured:?}");
    let backlog = evidence("backlog");
    assert!(backlog.contains("not judged") && backlog.contains("interrupted"), "{backlog}");
    for e in v["evidence"].as_array().unwrap() {
        let text = e[2].as_str().unwrap();
        for claim in ["no effect", "misses the objective", "adopted", "undecided after"] {
            assert!(!text.contains(claim), "{claim:?} claimed in an interrupted run: {text}");
        }
    }
    // A value listed as never measured has no point; one measured is not listed so.
    if let Some(never) = backlog.split("never measured: ").nth(1) {
        for value in never.split(", ") {
            assert!(!measured.iter().any(|s| s.starts_with(&format!("backlog={value}"))), "{value}: {measured:?}");
        }
    }
}

/// A directory the user nobody owns (for runs dropped to nobody).
fn nobody_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let nobody = nix::unistd::User::from_name("nobody").unwrap().expect("a user nobody");
    std::os::unix::fs::chown(dir.path(), Some(nobody.uid.as_raw()), Some(nobody.gid.as_raw())).unwrap();
    dir
}

/// A server that makes itself non-dumpable hides its memory even from its own user: the
/// tuner (run as that user) fails the point naming it, rather than record memory figures that
/// leave it out.
#[test]
fn the_tuner_fails_a_point_whose_memory_it_cannot_read() {
    let dir = nobody_dir();
    let server = dir.path().join("srv.py");
    std::fs::write(
        &server,
        "import ctypes, sys, http.server\n\
         ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0\n\
         http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), http.server.SimpleHTTPRequestHandler).serve_forever()\n",
    )
    .unwrap();
    let target = dir.path().join("t.toml");
    std::fs::write(
        &target,
        format!(
            "[target]\nadapter = \"command\"\ncommand = \"python3 {} {{port}}\"\nready_timeout = \"20s\"\n\
             [knobs]\nworkers = [\"1\"]\n[load]\nconnections = 2\nduration = \"400ms\"\n",
            server.display()
        ),
    )
    .unwrap();
    let journal = dir.path().join("j.jsonl");
    let home = dir.path().to_str().unwrap();
    let env = [format!("HOME={home}"), format!("XDG_RUNTIME_DIR={home}"), format!("WEBTUNE_DB={home}/db")];
    let wrapper: Vec<&str> = NOBODY.iter().copied().chain(["env"]).chain(env.iter().map(String::as_str)).collect();
    let run = crate::support::webtune_via(
        &wrapper,
        &tune_args(target.to_str().unwrap(), &journal, &[]),
        Duration::from_secs(120),
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    let cause = v["points"][0]["status"]["cause"].as_str().unwrap_or_default().to_string();
    assert!(cause.contains("cannot read the memory of pid") && cause.contains("(python3)"), "{v:#}");
    assert_eq!(run_dirs(dir.path()), Vec::<String>::new(), "the server was stopped");
}

/// Under umask 002 (user-private groups) the run base is still made 0755, not refused as
/// group-writable.
#[test]
fn a_run_base_is_writable_by_its_user_alone_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let runtime = tempfile::tempdir().unwrap();
    let file = crate::launch::lab_file(runtime.path());
    let run = Command::new("sh")
        .args(["-c", "umask 002 && exec \"$0\" launch \"$1\" --for 0s"])
        .arg(env!("CARGO_BIN_EXE_webtune"))
        .arg(&file)
        .env("XDG_RUNTIME_DIR", runtime.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let mode = std::fs::metadata(runtime.path().join("webtune")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o755);
}
