//! Never worse than what you run: the user's configuration is every knob's baseline (wherever
//! its value sits in the knob's list), a value moves from it only on an adopted verdict, a
//! tune stopped before any verdict says "keep your configuration", writes no diff and exits
//! 4, and the noise of a busy machine is said in the first lines. On the lab (a sleep-bound
//! page: fewer workers than clients serve proportionally less, a known truth) and on nginx
//! from a copy of Debian's tree.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::{self, json, missing, quick_tune, webtune_with_limit, write_lab_target};

/// A lab target whose configuration sets workers = 4 and a 20 ms sleep per request, loaded by
/// 4 clients: 2 workers serve half of 4's requests, 1 a quarter, 6 the same.
fn lab_target(dir: &Path, workers: &str) -> PathBuf {
    let f = dir.join("lab.toml");
    write_lab_target(
        &f,
        &format!(
            "[target.config]\nworkers = 4\nio_wait = \"20ms\"\n\
             [knobs]\nworkers = {workers}\n[load]\nconnections = 4\nduration = \"1s\"\n",
        ),
    );
    f
}

/// The recommended value of `knob` in a tune's JSON.
fn recommended(v: &Value, knob: &str) -> String {
    v["recommended"]
        .as_array()
        .and_then(|r| r.iter().find(|kv| kv[0] == knob))
        .and_then(|kv| kv[1].as_str())
        .unwrap_or_else(|| panic!("no {knob} recommended: {v:#}"))
        .to_string()
}

/// Every knob recommended at another value than its baseline has a step that adopted it by
/// a verdict.
fn moves_only_on_verdicts(v: &Value) {
    for b in v["baseline_values"].as_array().unwrap() {
        let (knob, base) = (b["knob"].as_str().unwrap(), b["value"].as_str().unwrap());
        let now = recommended(v, knob);
        if now != base {
            let adopted = v["steps"].as_array().unwrap().iter().any(|s| {
                s["knob"] == knob
                    && s["adopted"] == true
                    && s["verdict"] == "adopted"
                    && s["after_value"] == now.as_str()
            });
            assert!(adopted, "{knob} moved {base} -> {now} without an adopted verdict: {:#}", v["evidence"]);
        }
    }
}

#[test]
fn the_current_value_is_the_baseline_and_a_worse_step_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    // 4 is neither the list's first nor its smallest.
    let target = lab_target(dir.path(), "[2, 1, 4]");
    let run = quick_tune(&target, &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let v = json(&run.stdout);
    assert_eq!(v["baseline_values"][0]["value"], "4", "{:#}", v["baseline_values"]);
    assert_eq!(v["baseline_values"][0]["source"]["configured"], "[target.config]");
    let step = &v["steps"][0];
    assert_eq!(step["before_value"], "4", "{step:#}");
    assert_eq!(step["verdict"], "worse", "{:#}", v["evidence"]);
    assert_eq!(recommended(&v, "workers"), "4");
    assert!(v["unjudged"].is_null(), "{:#}", v["unjudged"]);
}

#[test]
fn an_undecided_step_keeps_the_current_value() {
    let dir = tempfile::tempdir().unwrap();
    // 6 workers serve 4 clients as 4 do: two rounds cannot settle it (2 is far below).
    let target = lab_target(dir.path(), "[6, 2, 4]");
    let run = quick_tune(&target, &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let v = json(&run.stdout);
    assert_eq!(v["steps"][0]["verdict"], "undecided", "{:#}", v["evidence"]);
    assert_eq!(recommended(&v, "workers"), "4");
    moves_only_on_verdicts(&v);
}

#[test]
fn a_value_the_list_lacks_is_added_and_the_text_ends_with_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let target = lab_target(dir.path(), "[1, 2]");
    let t = target.to_str().unwrap();
    let journal = dir.path().join("j.jsonl");
    let run = webtune_with_limit(
        &["tune", t, "--repeats", "1", "--max-rounds", "2", "--journal", journal.to_str().unwrap()],
        Duration::from_secs(300),
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("tune: baseline workers=4 (set in [target.config], added to the values to try)"),
        "{}",
        run.stderr
    );
    // The last line is the answer: 1 and 2 are worse than 4.
    let last = run.stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert_eq!(last, "Answer: keep your configuration: no value was adopted.", "{}", run.stdout);
}

#[test]
fn a_tune_stopped_before_any_verdict_keeps_the_configuration_and_exits_4() {
    let dir = tempfile::tempdir().unwrap();
    let target = lab_target(dir.path(), "[2, 1, 4]");
    let db = dir.path().join("db.sqlite");
    let journal = dir.path().join("j.jsonl");
    let args = [
        "--db",
        db.to_str().unwrap(),
        "tune",
        target.to_str().unwrap(),
        "--max-time",
        "2s",
        "--journal",
        journal.to_str().unwrap(),
    ];
    let started = std::time::Instant::now();
    let run = webtune_with_limit(&args, Duration::from_secs(120));
    // The budget plus one window (a launch, a warm-up, 1 s of load) and the stop.
    assert!(started.elapsed() < Duration::from_secs(12), "{:?}", started.elapsed());
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("nothing was judged (the time budget is spent): keep your configuration"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("Answer: keep your configuration"), "{}", run.stdout);
    assert!(run.stdout.contains("Not judged (kept as you run them): workers"), "{}", run.stdout);
    let runs = webtune_with_limit(&["--db", db.to_str().unwrap(), "runs"], Duration::from_secs(30));
    let row = runs.stdout.lines().find(|l| l.contains("tune")).unwrap_or_else(|| panic!("{}", runs.stdout));
    assert!(row.contains("interrupted"), "{}", runs.stdout);
}

/// A copy of Debian's /etc/nginx whose nginx.conf says `worker_processes 3;`; None (after
/// `missing`) without nginx.
fn nginx_tree() -> Option<(tempfile::TempDir, PathBuf)> {
    if support::find_program("nginx").is_none() || !Path::new("/etc/nginx/nginx.conf").exists() {
        missing("nginx with Debian's /etc/nginx");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let copied = Command::new("cp").args(["-a", "/etc/nginx"]).arg(dir.path()).status().unwrap();
    assert!(copied.success());
    let conf = dir.path().join("nginx/nginx.conf");
    let text = std::fs::read_to_string(&conf).unwrap();
    let text: Vec<String> = text
        .lines()
        .map(|l| if l.trim_start().starts_with("worker_processes") { "worker_processes 3;".into() } else { l.into() })
        .collect();
    std::fs::write(&conf, text.join("\n") + "\n").unwrap();
    Some((dir, conf))
}

#[test]
fn nginx_from_a_copy_starts_at_its_worker_processes_and_patches_only_what_a_verdict_moved() {
    let Some((dir, conf)) = nginx_tree() else { return };
    let target = dir.path().join("target.toml");
    std::fs::write(
        &target,
        format!(
            "[target]\nadapter = \"nginx\"\nconfig = \"{}\"\n[knobs]\nworkers = [4, 1, 3]\n\
             [load]\nconnections = 8\nduration = \"1s\"\n",
            conf.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();

    // Stopped by its budget before a verdict: 3 stays, no diff, exit 4.
    let run = quick_tune(&target, &["--diff", o, "--max-time", "2s"]);
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    let v = json(&run.stdout);
    let b = &v["baseline_values"][0];
    assert_eq!((b["knob"].as_str(), b["value"].as_str()), (Some("workers"), Some("3")), "{b:#}");
    assert_eq!(b["source"]["configured"].as_str(), Some(conf.to_str().unwrap()), "{b:#}");
    assert_eq!(recommended(&v, "workers"), "3");
    assert!(v["diffs"].is_null(), "{:#}", v["diffs"]);
    assert!(!out.join("nginx.diff").exists());

    // Judged in full (two rounds): whatever it finds, a move has its adopted verdict, and the
    // diff holds exactly that move.
    let run = quick_tune(&target, &["--diff", o]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let v = json(&run.stdout);
    moves_only_on_verdicts(&v);
    let workers = recommended(&v, "workers");
    let diff = std::fs::read_to_string(out.join("nginx.diff")).ok();
    if workers == "3" {
        assert!(diff.is_none(), "{diff:?}");
    } else {
        let diff = diff.unwrap();
        assert!(
            diff.contains("-worker_processes 3;") && diff.contains(&format!("+worker_processes {workers};")),
            "{diff}"
        );
    }
}

/// A busy loop on one core, killed on drop.
struct Hog(Child);

impl Hog {
    fn start() -> Hog {
        Hog(Command::new("sh").args(["-c", "while :; do :; done"]).stdout(Stdio::null()).spawn().unwrap())
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn beside_a_cpu_hog_the_noise_is_said_first_and_nothing_moves_without_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let target = lab_target(dir.path(), "[6, 2, 4]");
    let journal = dir.path().join("j.jsonl");
    let hog = Hog::start();
    let run = webtune_with_limit(
        &[
            "tune",
            target.to_str().unwrap(),
            "--json",
            "--repeats",
            "1",
            "--max-rounds",
            "3",
            "--journal",
            journal.to_str().unwrap(),
        ],
        Duration::from_secs(300),
    );
    drop(hog);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    // Said within the first windows: the CPU others took, then the scatter and what a
    // verdict costs at it.
    let lines: Vec<&str> = run.stderr.lines().collect();
    let first = lines.iter().position(|l| l.contains("busy machine: others took"));
    let noise = lines.iter().position(|l| l.starts_with("tune: noise: one window scatters by"));
    assert!(first.is_some_and(|i| i < 8), "{}", run.stderr);
    assert!(noise.is_some_and(|i| i < 16), "{}", run.stderr);
    let v = json(&run.stdout);
    assert!(v["noise"]["others_cpu"].as_f64().unwrap() > 0.2, "{:#}", v["noise"]);
    moves_only_on_verdicts(&v);
}
