//! Hostile process and file states (issue 16): processes this user may not read, stale and
//! racing run directories, runs killed outright, journals written by several tuners.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{NOBODY, webtune_as_nobody};

/// A shell script run in its own process group, killed (the whole group) on drop.
struct Group {
    child: Child,
}

impl Group {
    fn start(script: &str) -> Group {
        use std::os::unix::process::CommandExt;
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
