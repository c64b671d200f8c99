//! Servers in containers, on this machine's real kernel cgroups: every process of a launch runs
//! in a cgroup of the target's size (read back from /proc/PID/cgroup and the limit files while
//! it runs), the kernel's OOM kills and throttling reach the tune's figures, `init --pid` reads
//! a running server's limits, and no cgroup is left behind after Ctrl-C or SIGKILL.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{NOBODY, have, launched, quick_tune, webtune_via, webtune_with_limit};

/// A lab target in a container of `container` (TOML lines of the [container] table).
fn lab_target(dir: &Path, config: &str, container: &str, load: &str) -> PathBuf {
    let f = dir.join("target.toml");
    let text = format!(
        "[target]\nadapter = \"lab\"\nlisten = \"127.0.0.1:0\"\n[target.config]\n{config}\n[container]\n{container}\n\
         [knobs]\nworkers = [2, 4]\n[load]\n{load}\n"
    );
    std::fs::write(&f, text).unwrap();
    f
}

/// The processes descended from `pid`, itself excluded.
fn descendants(pid: u32) -> Vec<u32> {
    let parent_of = |p: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
    };
    let all: Vec<u32> =
        std::fs::read_dir("/proc").unwrap().flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect();
    let mut found = vec![pid];
    loop {
        let more: Vec<u32> = all
            .iter()
            .copied()
            .filter(|p| !found.contains(p) && parent_of(*p).is_some_and(|pp| found.contains(&pp)))
            .collect();
        if more.is_empty() {
            break;
        }
        found.extend(more);
    }
    found.retain(|&p| p != pid);
    found
}

/// The directories of the cgroups `pid` is in whose name starts with "webtune-": (memory, cpu)
/// on v1, the one directory twice on v2.
fn webtune_cgroups(pid: u32) -> Option<(PathBuf, PathBuf)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let dir_of = |controller: &str| -> Option<PathBuf> {
        let line = text.lines().find(|l| {
            let mut f = l.splitn(3, ':');
            let (h, cs) = (f.next().unwrap_or(""), f.next().unwrap_or(""));
            if controller.is_empty() { h == "0" } else { cs.split(',').any(|c| c == controller) }
        })?;
        let path = line.splitn(3, ':').nth(2)?;
        let base =
            if controller.is_empty() { "/sys/fs/cgroup".to_string() } else { format!("/sys/fs/cgroup/{controller}") };
        Some(PathBuf::from(format!("{base}{path}")))
            .filter(|d| d.file_name().is_some_and(|n| n.to_string_lossy().starts_with("webtune-")))
    };
    match (dir_of("memory"), dir_of("cpu")) {
        (Some(m), Some(c)) => Some((m, c)),
        _ => dir_of("").map(|d| (d.clone(), d)),
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).trim().to_string()
}

/// (memory limit bytes, CPUs) of a cgroup's directories, v1 or v2.
fn limits_of(memory: &Path, cpu: &Path) -> (u64, f64) {
    if memory.join("memory.max").exists() {
        let max = read(&memory.join("cpu.max"));
        let (q, p) = max.split_once(' ').unwrap();
        (read(&memory.join("memory.max")).parse().unwrap(), q.parse::<f64>().unwrap() / p.parse::<f64>().unwrap())
    } else {
        let quota: f64 = read(&cpu.join("cpu.cfs_quota_us")).parse().unwrap();
        let period: f64 = read(&cpu.join("cpu.cfs_period_us")).parse().unwrap();
        (read(&memory.join("memory.limit_in_bytes")).parse().unwrap(), quota / period)
    }
}

fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until `launch`'s server processes exist, and their cgroup directories.
fn served_tree(launch: u32) -> (Vec<u32>, (PathBuf, PathBuf)) {
    let mut tree = Vec::new();
    wait_until(Duration::from_secs(20), "the server's workers", || {
        tree = descendants(launch);
        tree.len() >= 3
    });
    let dirs = webtune_cgroups(tree[0]).unwrap_or_else(|| panic!("pid {} is in no webtune cgroup", tree[0]));
    (tree, dirs)
}

#[test]
fn a_launch_runs_its_whole_tree_in_a_cgroup_of_the_stated_size_and_removes_it_after_ctrl_c() {
    let dir = tempfile::tempdir().unwrap();
    let f = lab_target(dir.path(), "workers = 2\ncpu = \"1ms\"", "memory = \"200MiB\"\ncpus = 0.5", "connections = 2");
    let (mut child, _port) = launched(&f, "60s");
    let (tree, (memory, cpu)) = served_tree(child.id());
    for &pid in &tree {
        assert_eq!(webtune_cgroups(pid), Some((memory.clone(), cpu.clone())), "pid {pid} of {tree:?}");
    }
    assert_eq!(limits_of(&memory, &cpu), (200 << 20, 0.5));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(!memory.exists() && !cpu.exists(), "left {} {}", memory.display(), cpu.display());
    assert!(tree.iter().all(|&p| !crate::support::alive(p as i32)), "left running: {tree:?}");
}

#[test]
fn after_a_sigkill_the_next_launch_removes_the_cgroup_and_what_runs_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let f = lab_target(dir.path(), "workers = 2", "memory = \"150MiB\"", "connections = 2");
    let (mut child, _port) = launched(&f, "60s");
    let (tree, (memory, cpu)) = served_tree(child.id());
    child.kill().unwrap();
    child.wait().unwrap();
    // Its server outlives it, in its cgroup, until the next launch reaps both.
    assert!(tree.iter().all(|&p| crate::support::alive(p as i32)) && memory.exists(), "{tree:?}");
    let next = webtune_with_limit(&["launch", f.to_str().unwrap(), "--for", "1s"], Duration::from_secs(60));
    assert_eq!(next.code, 0, "{}", next.stderr);
    wait_until(Duration::from_secs(5), "the old server stopped", || {
        tree.iter().all(|&p| !crate::support::alive(p as i32))
    });
    assert!(!memory.exists() && !cpu.exists(), "left {} {}", memory.display(), cpu.display());
}

#[test]
fn a_leaking_lab_in_a_200mib_container_is_reported_as_oom_killed_not_as_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    // 1 MiB never freed per request: 200 MiB within a few hundred requests of one worker.
    let f = lab_target(
        dir.path(),
        "workers = 2\nleak = \"1MiB\"",
        "memory = \"200MiB\"",
        "connections = 4\nduration = \"3s\"\n[budget]\nmemory = \"4GiB\"",
    );
    // The budget is the host's here (by default it is the container's memory, and the window
    // ends at the first sample over it, before the kernel acts): the kernel judges.
    let run = quick_tune(&f, &[]);
    let v: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {} {}", run.stdout, run.stderr));
    crate::support::assert_schema("tune.v1.json", &v);
    let points = v["points"].as_array().unwrap();
    assert!(!points.is_empty(), "{v:#}");
    for p in points {
        // Killed in a window, or in the warm-up before it: the cgroup counts since the launch.
        let killed = p["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["container"]["oom_kills_since_launch"].as_u64().unwrap())
            .max()
            .unwrap();
        assert!(killed >= 1, "{p:#}");
        let notes = p["notes"].to_string();
        assert!(notes.contains("the OOM killer killed") && notes.contains("of 200MiB"), "{notes}");
        assert_eq!(p["samples"][0]["container"]["memory_limit_bytes"], 200u64 << 20);
    }
    // Nothing that was killed fits: the verdict says why.
    assert!(v["evidence"].to_string().contains("the OOM killer killed in its container"), "{:#}", v["evidence"]);
}

#[test]
fn a_half_cpu_quota_throttles_and_caps_the_throughput_at_what_the_quota_buys() {
    let dir = tempfile::tempdir().unwrap();
    // 4 ms of CPU per request in 0.5 CPU: at most 125 requests a second, whatever the workers.
    // Throttled in more than 10% of its periods, a configuration misses the constraint.
    let f = lab_target(
        dir.path(),
        "workers = 2\ncpu = \"4ms\"",
        "cpus = 0.5\nthrottled = \"10%\"",
        "connections = 8\nduration = \"3s\"",
    );
    let run = quick_tune(&f, &[]);
    let v: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {} {}", run.stdout, run.stderr));
    for p in v["points"].as_array().unwrap() {
        for s in p["samples"].as_array().unwrap() {
            let rps = s["rps"].as_f64().unwrap();
            let c = &s["container"];
            assert_eq!(c["cpus"].as_f64(), Some(0.5), "{s:#}");
            assert!((125.0 * 0.3..=125.0 * 1.15).contains(&rps), "{rps} req/s: {s:#}");
            // Most periods on a quiet machine (100% here); fewer when others take the CPUs the
            // quota would have used, but never none.
            assert!(c["throttled_share"].as_f64().unwrap() > 0.1, "{c:#}");
            assert!(c["throttled_s"].as_f64().unwrap() > 0.0, "{c:#}");
            assert_eq!(c["over_throttle_bound"], true, "{c:#}");
        }
        assert!(p["notes"].to_string().contains("CPU quota periods, over the 10% its container allows"), "{p:#}");
    }
    assert!(v["evidence"].to_string().contains("throttled beyond the bound of its container"), "{:#}", v["evidence"]);
}

#[test]
fn a_container_that_cannot_be_made_is_said_in_one_line_and_the_server_runs_on_the_hosts_limits() {
    let dir = tempfile::tempdir().unwrap();
    let f = lab_target(dir.path(), "workers = 2", "memory = \"200MiB\"", "connections = 2");
    // The unprivileged user may not make cgroups here.
    let _ = std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755));
    let run = webtune_via(&NOBODY, &["launch", f.to_str().unwrap(), "--for", "1s"], Duration::from_secs(60));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("ready at"), "{}", run.stdout);
    let warnings: Vec<&str> = run.stderr.lines().filter(|l| l.contains("cannot make cgroup")).collect();
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(
        warnings[0].starts_with("webtune: warning: ") && warnings[0].contains("runs on the host's limits"),
        "{}",
        warnings[0]
    );
}

/// A cgroup the test makes for a server of its own (v1: memory and cpu; v2: one directory),
/// removed on drop with whatever runs in it.
struct TestCgroup {
    dirs: Vec<PathBuf>,
}

impl TestCgroup {
    fn new(name: &str, memory: u64, cpus: f64) -> TestCgroup {
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        let path_of = |controller: &str| {
            own.lines()
                .find(|l| l.split(':').nth(1).is_some_and(|cs| cs.split(',').any(|c| c == controller)))
                .and_then(|l| l.splitn(3, ':').nth(2))
                .map(str::to_string)
        };
        let v1 = Path::new("/sys/fs/cgroup/memory/cgroup.procs").exists();
        let dirs: Vec<PathBuf> = if v1 {
            ["memory", "cpu"]
                .iter()
                .map(|c| PathBuf::from(format!("/sys/fs/cgroup/{c}{}", path_of(c).unwrap_or_default())).join(name))
                .collect()
        } else {
            vec![PathBuf::from("/sys/fs/cgroup").join(name)]
        };
        let cg = TestCgroup { dirs };
        for d in &cg.dirs {
            std::fs::create_dir(d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        }
        let period = 100_000u64;
        let quota = (cpus * period as f64) as u64;
        if v1 {
            std::fs::write(cg.dirs[0].join("memory.limit_in_bytes"), memory.to_string()).unwrap();
            std::fs::write(cg.dirs[1].join("cpu.cfs_quota_us"), quota.to_string()).unwrap();
        } else {
            let _ = std::fs::write("/sys/fs/cgroup/cgroup.subtree_control", "+memory +cpu");
            std::fs::write(cg.dirs[0].join("memory.max"), memory.to_string()).unwrap();
            std::fs::write(cg.dirs[0].join("cpu.max"), format!("{quota} {period}")).unwrap();
        }
        cg
    }

    /// A shell line that moves the shell into the cgroup.
    fn join_line(&self) -> String {
        self.dirs.iter().map(|d| format!("echo $$ > {}/cgroup.procs && ", d.display())).collect()
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        for _ in 0..100 {
            for d in &self.dirs {
                for pid in std::fs::read_to_string(d.join("cgroup.procs")).unwrap_or_default().lines() {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid.parse().unwrap_or(0)),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                let _ = std::fs::remove_dir(d);
            }
            if self.dirs.iter().all(|d| !d.exists()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn init_reads_the_container_limits_of_a_running_server_into_the_target_file() {
    if !have(&["gunicorn"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("hello.py"),
        "def app(environ, start_response):\n    start_response('200 OK', [])\n    return [b'ok']\n",
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let cg = TestCgroup::new(&format!("webtune-test-init-{}", std::process::id()), 300 << 20, 0.75);
    let line =
        format!("{}exec gunicorn -b 127.0.0.1:{port} -w 2 --chdir {} hello:app", cg.join_line(), dir.path().display());
    let mut server = std::process::Command::new("sh")
        .args(["-c", &line])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(crate::support::wait_listening(&mut server, port, Duration::from_secs(20)), "gunicorn did not start");
    let run = webtune_with_limit(&["init", "--pid", &server.id().to_string()], Duration::from_secs(60));
    crate::support::stop_child(&mut server, Duration::from_secs(5));
    drop(cg);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let t = &run.stdout;
    assert!(t.contains("\n[container]\nfrom = \"cgroup v"), "{t}");
    assert!(t.contains("\nmemory = \"300MiB\"\n") && t.contains("\ncpus = 0.75\n"), "{t}");
    // The budget is the container's: no `memory = "auto"` of the host's.
    assert!(!t.contains("\"auto\""), "{t}");
}

/// `tune --strategy rightsize` of `target` for `rate` within `slo`: the answered CPUs,
/// memory, and the whole JSON.
fn rightsized(target: &Path, rate: &str, slo: &str) -> (f64, String, Value) {
    let run = quick_tune(target, &["--strategy", "rightsize", "--min-rps", rate, "--slo-p99", slo]);
    let v: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {} {}", run.stdout, run.stderr));
    crate::support::assert_schema("tune.v1.json", &v);
    let value = |k: &str| {
        v["recommended"].as_array().unwrap().iter().find(|p| p[0] == k).and_then(|p| p[1].as_str()).map(str::to_string)
    };
    let cpus = value("container_cpus").unwrap_or_else(|| panic!("{:#}", v["evidence"])).parse().unwrap();
    let memory = value("container_memory").unwrap_or_else(|| panic!("{:#}", v["evidence"]));
    // Fewer trials than the grid of sizes.
    assert!(v["cost"]["grid_share"].as_f64().is_some_and(|s| s < 1.0), "{:#}", v["cost"]);
    (cpus, memory, v)
}

/// Requests/s and p99 (ms) of an open loop at `rate` against `target` launched in a container
/// of `cpus` and `memory`.
fn bench_in_container(target: &Path, cpus: f64, memory: &str, rate: &str) -> (f64, f64) {
    let sets = [format!("container_cpus={cpus}"), format!("container_memory={memory}")];
    let (mut child, port) = crate::support::launched_with(target, "60s", &["--set", &sets[0], "--set", &sets[1]]);
    let url = format!("http://127.0.0.1:{port}/");
    let bench =
        webtune_with_limit(&["bench", "--rate", rate, "-c", "16", "-d", "3s", "--json", &url], Duration::from_secs(60));
    crate::support::stop_child(&mut child, Duration::from_secs(5));
    let b: Value = serde_json::from_str(&bench.stdout).unwrap_or_else(|e| panic!("{e}: {url} {}", bench.stderr));
    (b["result"]["requests_per_s"].as_f64().unwrap(), b["result"]["latency_ms"]["total"]["p99"].as_f64().unwrap())
}

#[test]
fn rightsizing_the_lab_finds_the_cpus_its_work_needs_and_a_bench_at_that_size_serves_the_rate() {
    let dir = tempfile::tempdir().unwrap();
    // 4 ms of CPU a request at 100 requests/s: 0.4 CPUs, so 0.5 on the ladder (0.75 is one
    // step over, allowed on a busy machine; 0.25 cannot serve it).
    let f = dir.path().join("target.toml");
    std::fs::write(
        &f,
        "[target]\nadapter = \"lab\"\nlisten = \"127.0.0.1:0\"\n[target.config]\nworkers = 4\ncpu = \"4ms\"\nio_wait = \"2ms\"\n\
         [knobs]\nworkers = [2, 4]\n[load]\nconnections = 16\nduration = \"2s\"\n",
    )
    .unwrap();
    let (cpus, memory, v) = rightsized(&f, "100", "200ms");
    assert!(cpus == 0.5 || cpus == 0.75, "{cpus} CPUs: {:#}", v["evidence"]);
    let evidence = v["evidence"].to_string();
    assert!(evidence.contains("ms of CPU a request x 100 req/s"), "{evidence}");
    let (rps, p99) = bench_in_container(&f, cpus, &memory, "100");
    assert!(rps >= 95.0 && p99 <= 200.0, "{rps} req/s, p99 {p99} ms at {cpus} CPUs, {memory}");
}

#[test]
fn rightsizing_gunicorn_answers_a_container_that_serves_the_rate_and_one_step_smaller_does_not() {
    if !have(&["gunicorn"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // About 5 ms of Python a request: 40 requests/s need about 0.2 CPUs.
    std::fs::write(
        dir.path().join("busy.py"),
        "def app(environ, start_response):\n    n = 0\n    for i in range(60000):\n        n += i * i\n    \
         start_response('200 OK', [])\n    return [str(n).encode()]\n",
    )
    .unwrap();
    let f = dir.path().join("target.toml");
    std::fs::write(
        &f,
        format!(
            "[target]\nadapter = \"gunicorn\"\napp = \"busy:app\"\nchdir = \"{}\"\n[target.config]\nworkers = 2\n\
             [knobs]\nworkers = [1, 2]\n[load]\nconnections = 8\nduration = \"2s\"\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let (cpus, memory, v) = rightsized(&f, "40", "300ms");
    let evidence = v["evidence"].to_string();
    // The answer is the smallest that served: the step below it was measured and refused, or
    // it is the ladder's first.
    assert!(cpus == 0.25 || evidence.contains("CPUs did not)"), "{cpus}: {evidence}");
    let (rps, p99) = bench_in_container(&f, cpus, &memory, "40");
    assert!(rps >= 38.0 && p99 <= 300.0, "{rps} req/s, p99 {p99} ms at {cpus} CPUs, {memory}");
}

#[test]
fn a_pool_that_pss_says_fits_but_the_kernels_charge_does_not_is_refused_with_both_figures() {
    if !have(&["gunicorn"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Each launch writes 120 MiB to a tmpfs file: charged to its cgroup, in no process's PSS.
    let prefix = format!("/dev/shm/webtune-test-{}-", std::process::id());
    std::fs::write(
        dir.path().join("shm.py"),
        format!(
            "import os\npath = '{prefix}' + str(os.getppid())\nif not os.path.exists(path):\n    with open(path, 'wb') as f:\n        \
             for _ in range(120):\n            f.write(b'x' * (1 << 20))\n\
             def app(environ, start_response):\n    start_response('200 OK', [])\n    return [b'ok']\n"
        ),
    )
    .unwrap();
    let f = dir.path().join("target.toml");
    std::fs::write(
        &f,
        format!(
            "[target]\nadapter = \"gunicorn\"\napp = \"shm:app\"\nchdir = \"{}\"\n[target.config]\nworkers = 2\n\
             [container]\nmemory = \"200MiB\"\n[knobs]\nworkers = [2, 3]\n[load]\nconnections = 4\nduration = \"2s\"\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let run = quick_tune(&f, &[]);
    for e in std::fs::read_dir("/dev/shm").unwrap().flatten() {
        if e.path().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_file(e.path());
        }
    }
    let v: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {} {}", run.stdout, run.stderr));
    for p in v["points"].as_array().unwrap() {
        let c = &p["samples"][0]["container"];
        let (charge, pss) = (c["workers_fit"].as_u64().unwrap(), c["pss_workers_fit"].as_u64().unwrap());
        assert!(charge < pss, "{c:#}");
        // The tuner uses the lower: the memory figures' fit is a charge's (a window measured
        // again keeps its first attempt's memory, and that attempt's charge).
        assert!(p["samples"][0]["memory"]["workers_fit"].as_u64().is_some_and(|used| used < pss), "{p:#}");
        let notes = p["notes"].to_string();
        assert!(
            notes.contains(&format!("by PSS {pss} workers fit the memory budget, by the container's charge {charge}")),
            "{notes}"
        );
    }
}

#[test]
fn rightsizing_without_a_rate_sizes_for_the_access_logs_busiest_minute() {
    let dir = tempfile::tempdir().unwrap();
    // 4,800 requests in the busiest minute (80/s), 600 in the one before.
    let mut log = String::new();
    for (minute, n) in [(0, 600), (1, 4800)] {
        for i in 0..n {
            let s = i * 60 / n;
            log.push_str(&format!(
                "127.0.0.1 - - [20/Nov/2026:14:{minute:02}:{s:02} +0000] \"GET /?n={i} HTTP/1.1\" 200 5 \"-\" \"t\"\n"
            ));
        }
    }
    std::fs::write(dir.path().join("access.log"), log).unwrap();
    let f = dir.path().join("target.toml");
    std::fs::write(
        &f,
        "[target]\nadapter = \"lab\"\nlisten = \"127.0.0.1:0\"\n[target.config]\nworkers = 2\ncpu = \"4ms\"\n\
         [load]\naccess_log = \"access.log\"\nconnections = 16\nduration = \"2s\"\n",
    )
    .unwrap();
    let run = quick_tune(&f, &["--strategy", "rightsize", "--slo-p99", "200ms"]);
    let v: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {} {}", run.stdout, run.stderr));
    let evidence = v["evidence"].to_string();
    // 4 ms x 80/s = 0.32 CPUs: 0.5 on the ladder.
    assert!(evidence.contains("serves 80 req/s with p99 <= 200 ms"), "{evidence}");
    assert!(evidence.contains("ms of CPU a request x 80 req/s"), "{evidence}");
    // Without any traffic named, it is refused before any launch.
    std::fs::write(&f, "[target]\nadapter = \"lab\"\n[load]\nconnections = 2\n").unwrap();
    let refused =
        webtune_with_limit(&["tune", f.to_str().unwrap(), "--strategy", "rightsize"], Duration::from_secs(30));
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("rightsize needs the traffic to serve: --min-rps RATE"), "{}", refused.stderr);
}
