//! `bench --remote`: load from other "machines", each a real sshd on a loopback port running
//! the test's own webtune, against nginx, whose access log is the truth.

use std::time::{Duration, Instant};

use crate::support::nginx::Nginx;
use crate::support::sshd::{HostKind, SshLab, agents};
use crate::support::{assert_valid, num, tune_args, write_lab_target};

fn lab_of(kinds: &[HostKind]) -> Option<(SshLab, Vec<String>)> {
    let mut lab = SshLab::new()?;
    let hosts = kinds.iter().map(|k| lab.host(*k)).collect();
    Some((lab, hosts))
}

#[test]
fn a_bench_through_two_hosts_and_this_machine_is_merged_exactly() {
    let Some(ng) = Nginx::start("", "") else { return };
    let Some((lab, hosts)) = lab_of(&[HostKind::Real, HostKind::Real]) else { return };
    let url = ng.url("/");
    let run = lab.run(
        &["bench", &url, "-n", "3001", "-c", "6", "--json", "--quiet", "--remote", &hosts[0], "--remote", &hosts[1]],
        Duration::from_secs(90),
    );
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_valid(&v);
    // Every request nginx saw is in the merged report, and no other.
    let logged = ng.access_log(3001).len() as u64;
    assert_eq!(num(&v, "/result/requests"), 3001);
    assert_eq!(logged, 3001, "nginx's access log");
    assert_eq!(num(&v, "/result/succeeded"), 3001);
    assert_eq!(num(&v, "/options/connections"), 6);
    let lines = v["breakdown"]["hosts"].as_array().unwrap();
    let labels: Vec<&str> = lines.iter().map(|l| l["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["local", hosts[0].as_str(), hosts[1].as_str()]);
    let shares: Vec<u64> = lines.iter().map(|l| l["requests"].as_u64().unwrap()).collect();
    assert_eq!(shares, [1001, 1000, 1000], "-n split exactly");
    // The text report shows each host's line.
    let text = lab.run(
        &[
            "bench",
            &url,
            "-n",
            "40",
            "-c",
            "2",
            "--quiet",
            "--remote-only",
            "--remote",
            &hosts[0],
            "--remote",
            &hosts[1],
        ],
        Duration::from_secs(60),
    );
    assert_eq!(text.code, 0, "stderr: {}", text.stderr);
    assert!(text.stdout.contains("By host"), "{}", text.stdout);
    assert!(text.stdout.lines().any(|l| l.starts_with(&hosts[1]) && l.contains(" 20 ")), "{}", text.stdout);
    assert!(!text.stdout.contains("local"), "--remote-only sends nothing from here: {}", text.stdout);
}

/// Waits until `n` agents whose command line mentions `marker` run.
fn wait_agents(marker: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while agents(marker).len() < n {
        assert!(Instant::now() < deadline, "the remote benches did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn assert_no_agent_left(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !agents(marker).is_empty() {
        assert!(Instant::now() < deadline, "webtune left running on a host: {:?}", agents(marker));
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn ctrl_c_stops_every_host_and_keeps_the_figures_so_far() {
    let Some(ng) = Nginx::start("", "") else { return };
    let Some((lab, hosts)) = lab_of(&[HostKind::Real, HostKind::Real]) else { return };
    let url = ng.url("/");
    let child = lab
        .webtune(&[
            "bench", &url, "-d", "60s", "-c", "3", "--rate", "200", "--json", "--quiet", "--remote", &hosts[0],
            "--remote", &hosts[1],
        ])
        .spawn()
        .unwrap();
    wait_agents(&url, 2);
    // Under way on every machine: nginx has served a good part of a second's requests.
    let deadline = Instant::now() + Duration::from_secs(30);
    while ng.access_log(0).len() < 300 {
        assert!(Instant::now() < deadline, "the load did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let run = crate::support::finish(child, Duration::from_secs(30), &["bench --remote (interrupted)"]);
    assert_eq!(run.code, 0, "stderr: {}\nstdout: {}", run.stderr, run.stdout);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["interrupted"], true);
    let lines = v["breakdown"]["hosts"].as_array().unwrap();
    assert_eq!(lines.len(), 3);
    assert!(lines.iter().all(|l| l["requests"].as_u64().unwrap() > 0), "every host's figures so far: {lines:#?}");
    assert_no_agent_left(&url);
    // nginx saw every request counted, and perhaps some of those in flight at the stop.
    let (counted, in_flight) = (num(&v, "/result/requests"), num(&v, "/result/in_flight_at_end"));
    let logged = ng.access_log(counted as usize).len() as u64;
    assert!((counted..=counted + in_flight).contains(&logged), "{logged} logged, {counted} + {in_flight} in flight");
}

#[test]
fn a_killed_client_leaves_no_webtune_on_the_hosts() {
    let Some(ng) = Nginx::start("", "") else { return };
    let Some((lab, hosts)) = lab_of(&[HostKind::Real]) else { return };
    let url = ng.url("/");
    let mut child = lab
        .webtune(&[
            "bench",
            &url,
            "-d",
            "60s",
            "-c",
            "1",
            "--rate",
            "50",
            "--quiet",
            "--remote-only",
            "--remote",
            &hosts[0],
        ])
        .spawn()
        .unwrap();
    wait_agents(&url, 1);
    // SIGKILL: nothing runs in webtune to stop the hosts; their SSH sessions end with it.
    child.kill().unwrap();
    child.wait().unwrap();
    assert_no_agent_left(&url);
}

#[test]
fn a_lost_host_stops_the_others_and_fails_the_run_naming_it() {
    let Some(ng) = Nginx::start("", "") else { return };
    let Some((mut lab, hosts)) = lab_of(&[HostKind::Real, HostKind::Real]) else { return };
    let url = ng.url("/");
    let child = lab
        .webtune(&[
            "bench", &url, "-d", "60s", "-c", "3", "--rate", "60", "--quiet", "--remote", &hosts[0], "--remote",
            &hosts[1],
        ])
        .spawn()
        .unwrap();
    wait_agents(&url, 2);
    lab.hosts[1].kill_all();
    let run = crate::support::finish(child, Duration::from_secs(40), &["bench --remote (a host lost)"]);
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.starts_with(&format!("webtune: {}: ", hosts[1])), "{}", run.stderr);
    assert_no_agent_left(&url);
}

#[test]
fn a_host_with_another_version_a_refused_key_or_a_clock_off_is_a_one_line_error() {
    let Some(ng) = Nginx::start("", "") else { return };
    let Some((lab, hosts)) =
        lab_of(&[HostKind::Real, HostKind::WrongVersion, HostKind::RefusesKey, HostKind::SkewedClock])
    else {
        return;
    };
    let url = ng.url("/");
    // Same version, another commit: refused as another build.
    let ours = crate::support::webtune(&["--version"]).stdout;
    let version = ours.trim().strip_prefix("webtune ").unwrap();
    let run =
        lab.run(&["bench", &url, "-n", "10", "--remote", &hosts[0], "--remote", &hosts[1]], Duration::from_secs(60));
    assert_eq!(run.code, 2, "stderr: {}", run.stderr);
    assert_eq!(
        run.stderr,
        format!(
            "webtune: {} has webtune {} (000000000000), this machine webtune {version}: install the same build (version and commit) on both\n",
            hosts[1],
            env!("CARGO_PKG_VERSION")
        )
    );
    let run = lab.run(&["bench", &url, "-n", "10", "--remote", &hosts[2]], Duration::from_secs(60));
    assert_eq!(run.code, 2, "stderr: {}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.starts_with(&format!("webtune: {}: ssh failed: ", hosts[2]))
            && run.stderr.contains("Permission denied"),
        "{}",
        run.stderr
    );
    let run = lab.run(&["bench", &url, "-n", "10", "--remote", &hosts[3]], Duration::from_secs(60));
    assert_eq!(run.code, 2, "stderr: {}", run.stderr);
    assert!(
        run.stderr.starts_with(&format!("webtune: {}: its clock is 5.", hosts[3]))
            && run.stderr.ends_with("s away from this machine's (at most 1 s): synchronise the clocks (NTP)\n"),
        "{}",
        run.stderr
    );
    assert!(ng.access_log(0).is_empty(), "nothing was sent before the hosts were checked");
}

#[test]
fn a_tune_with_remote_hosts_completes_and_its_points_say_where_the_load_came_from() {
    let Some((lab, hosts)) = lab_of(&[HostKind::Real, HostKind::Real]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lab.toml");
    write_lab_target(
        &file,
        &format!(
            "[target.config]\ncpu = \"1ms\"\n[knobs]\nworkers = [1, 2]\n\
             [load]\nconnections = 4\nduration = \"700ms\"\nremote = [\"{}\", \"{}\"]\nremote_only = true\n",
            hosts[0], hosts[1]
        ),
    );
    let journal = dir.path().join("journal.jsonl");
    let run = lab.run(&tune_args(file.to_str().unwrap(), &journal, &["--max-rounds", "2"]), Duration::from_secs(300));
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let points = v["points"].as_array().unwrap();
    assert!(points.len() >= 2, "{v:#}");
    for p in points {
        assert_eq!(p["status"]["status"], "ok", "{p:#}");
        assert_eq!(p["load_from"], serde_json::json!([hosts[0], hosts[1]]), "{p:#}");
        assert!(p["samples"][0]["succeeded"].as_u64().unwrap() > 0, "{p:#}");
    }
}

/// A tune of a lab over workers [1, 2, 3] whose load comes from `host` (and here), with
/// `args`; returns once its baseline is in the journal and the next trial's load is under way
/// on the host. The load carries a header unique to the test (`marker`), to find its agents.
fn tune_under_way(
    lab: &crate::support::sshd::SshLab,
    host: &str,
    name: &str,
    args: &[&str],
) -> (std::process::Child, tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lab.toml");
    let marker = format!("{name}-{}", std::process::id());
    write_lab_target(
        &file,
        &format!(
            "[knobs]\nworkers = [1, 2, 3]\n\
             [load]\nconnections = 2\nduration = \"2s\"\nheader = [\"X-Test: {marker}\"]\nremote = [\"{host}\"]\n",
        ),
    );
    let journal = dir.path().join("journal.jsonl");
    let child = lab
        .webtune(
            &[&["tune", file.to_str().unwrap(), "--repeats", "1", "--journal", journal.to_str().unwrap()], args]
                .concat(),
        )
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let points = std::fs::read_to_string(&journal).unwrap_or_default().lines().count();
        if points >= 2 && !agents(&marker).is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "no point measured through the host");
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, dir, marker)
}

#[test]
fn ctrl_c_in_a_tune_with_remote_hosts_keeps_the_points_and_leaves_no_webtune() {
    let Some((lab, hosts)) = lab_of(&[HostKind::Real]) else { return };
    let (child, dir, marker) = tune_under_way(&lab, &hosts[0], "tune-interrupted", &["--quiet"]);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let run = crate::support::finish(child, Duration::from_secs(60), &["tune (interrupted)"]);
    assert_eq!(run.code, 130, "stderr: {}", run.stderr);
    assert_no_agent_left(&marker);
    let text = std::fs::read_to_string(dir.path().join("journal.jsonl")).unwrap();
    let baseline: serde_json::Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    assert_eq!(baseline["load_from"], serde_json::json!(["local", hosts[0]]), "{baseline:#}");
}

/// A host lost in the middle of a tune: the tune stops at once (every later trial would fail
/// alike, and the configuration under test did nothing wrong), keeps what it measured, says
/// why in one line, and exits 1; no trial is charged to a configuration.
#[test]
fn a_host_lost_during_a_tune_stops_it_keeping_the_points() {
    let Some((mut lab, hosts)) = lab_of(&[HostKind::Real]) else { return };
    let (child, dir, marker) = tune_under_way(&lab, &hosts[0], "tune-host-lost", &["--json"]);
    let measured_before = std::fs::read_to_string(dir.path().join("journal.jsonl")).unwrap().lines().count() - 1;
    lab.hosts[0].kill_all();
    let run = crate::support::finish(child, Duration::from_secs(90), &["tune (a host lost)"]);
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    let last = run.stderr.lines().last().unwrap_or("");
    assert!(last.starts_with("webtune: the tune stopped: the load could not be sent: "), "{}", run.stderr);
    assert!(last.contains(&hosts[0]), "{last}");
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(v["stopped"].as_str().unwrap().starts_with("the load could not be sent"), "{v:#}");
    let points = v["points"].as_array().unwrap();
    // The trial under way when the host went is not a point: nothing failed but the load.
    assert!(points.iter().all(|p| p["status"]["status"] == "ok"), "{v:#}");
    assert!(points.len() >= measured_before, "{v:#}");
    assert_no_agent_left(&marker);
}

/// An `ssh` that is a hostile host (`WEBTUNE_SSH` points at it): it answers the check as
/// this version, then, as the agent, does what HOSTILE_MODE says.
const HOSTILE_SSH: &str = r#"#!/bin/sh
for last; do :; done
case "$last" in
*--version*)
    echo "webtune VERSION"
    if [ "$HOSTILE_MODE" = nan ]; then echo NaN; else date +%s.%N; fi ;;
*)
    case "$HOSTILE_MODE" in
    silent) echo "webtune-agent ready"; exec sleep 600 ;;
    flood) echo "webtune-agent ready"; exec yes ;;
    dirty) printf 'bad\000\033[2J%0300d\n' 0 >&2; exit 3 ;;
    *) exit 0 ;;
    esac ;;
esac
"#;

/// Runs `bench --remote-only` against the hostile host in `mode`; how long it took.
fn hostile_bench(
    dir: &std::path::Path,
    mode: &str,
    extra: &[&str],
    limit: Duration,
) -> (crate::support::Run, Duration) {
    let ssh = dir.join("ssh");
    // This very build (version and commit), as `webtune --version` prints it.
    let ours = crate::support::webtune(&["--version"]).stdout;
    let version = ours.trim().strip_prefix("webtune ").unwrap();
    std::fs::write(&ssh, HOSTILE_SSH.replace("VERSION", version)).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_webtune"));
    c.args(["bench", "http://127.0.0.1:9/", "--quiet", "--remote-only", "--remote", "ssh://hostile"])
        .args(extra)
        .env("WEBTUNE_SSH", &ssh)
        .env("HOSTILE_MODE", mode)
        .env("WEBTUNE_DB", crate::support::test_db());
    let started = Instant::now();
    let run = crate::support::run_with_limit(c, limit);
    (run, started.elapsed())
}

/// A host that says ready and then never reports, with -n (no run length): given up at the
/// bound derived from -n (1 request x 1 s timeout, plus a timeout and 30 s of grace), or a
/// second after SIGINT; one that floods more than the report limit is refused at once; a
/// clock printed as NaN is no clock; a host's raw error output (NUL, escapes, 300 digits) is
/// escaped and cut.
#[test]
fn a_hostile_host_cannot_hold_or_flood_the_bench() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let silent = std::thread::spawn(move || {
        hostile_bench(&d, "silent", &["-n", "1", "-c", "1", "--timeout", "1s"], Duration::from_secs(40))
    });

    let (run, took) = hostile_bench(dir.path(), "flood", &["-n", "1", "-c", "1"], Duration::from_secs(20));
    eprintln!("flood: {took:?}: {}", run.stderr);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("more than 67108864 bytes"), "{}", run.stderr);

    let (run, _) = hostile_bench(dir.path(), "nan", &["-n", "1", "-c", "1"], Duration::from_secs(20));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("did not print the time"), "{}", run.stderr);

    let (run, _) = hostile_bench(dir.path(), "dirty", &["-n", "1", "-c", "1"], Duration::from_secs(20));
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(!run.stderr.contains(['\0', '\x1b']), "{:?}", run.stderr);
    assert!(run.stderr.contains("bad\\u{0}\\u{1b}[2J") && run.stderr.contains("(308 characters)"), "{}", run.stderr);
    assert!(run.stderr.len() < 400, "{}", run.stderr);

    // SIGINT while the host is silent on a long run: ended within a second.
    let ssh_dir = dir.path().to_path_buf();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(["bench", "http://127.0.0.1:9/", "--quiet", "-d", "60s", "--remote-only", "--remote", "ssh://hostile"])
        .env("WEBTUNE_SSH", ssh_dir.join("ssh"))
        .env("HOSTILE_MODE", "silent")
        .env("WEBTUNE_DB", crate::support::test_db())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let signalled = Instant::now();
    let run = crate::support::finish(child, Duration::from_secs(5), &["bench --remote, SIGINT"]);
    let took = signalled.elapsed();
    eprintln!("SIGINT: ended {took:?} after: {}", run.stderr);
    assert!(took < Duration::from_secs(1), "{took:?}");
    assert_eq!(run.code, 1, "{}", run.stderr);

    let (run, took) = silent.join().unwrap();
    eprintln!("silent -n: {took:?}: {}", run.stderr);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("no report in time"), "{}", run.stderr);
    assert!(took >= Duration::from_secs(32) && took < Duration::from_secs(33), "{took:?}");
}
