//! Never worse than what you run, on real servers started by webtune from the user's own
//! configuration: Apache from a copy of Debian's /etc/apache2 (prefork, MaxRequestWorkers 4,
//! a mod_perl handler that sleeps 20 ms), php-fpm from a copy of Debian's /etc/php (the pool
//! www.conf at pm = static, pm.max_children = 4, a page that sleeps 20 ms, webtune's own nginx
//! in front), gunicorn with `[target.config] workers = 4` (an app that sleeps 20 ms). Every
//! copy lives in a temporary directory; nothing is written under /etc.
//!
//! The current 4 is never the first nor the smallest value of the knob's list, so a tuner
//! that started from the list would show. For each server:
//! 1. the baseline is 4, named with its source; stopped by `--max-time 2s` (before the first
//!    launch) and by `--max-time 4s` (after the baseline's window, at most) before any verdict,
//!    the tune exits 4, writes no diff, recommends 4, lists workers as unjudged, its report's
//!    answer is "keep your configuration" followed only by the "Not judged" line the README
//!    describes, and the run is stored as interrupted;
//! 2. `[2, 1, 4]` under 4 clients: fewer workers serve far less, the step is "worse", 4 stays,
//!    no diff;
//! 3. `[6, 2, 4]` under 4 clients: 6 serves as 4 does and two rounds cannot settle it, the
//!    step is "undecided", 4 stays, no diff.
//!
//! The verdicts of 2 and 3 hold on a quiet machine; a tune that another process's CPU load
//! disturbed (webtune's "busy machine") and that reached another verdict is tried again, at
//! most twice, while 4 staying and no diff are asserted on every attempt.
//!
//! The trees' helpers of tests/user_trees.rs and tests/user_trees_fpm.rs are private to their
//! files: the small ones this file needs (the Debian tree copies, checksums) are its own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{self, missing, quick_tune, webtune_with_limit};

/// The pool size every user here runs.
const CURRENT: &str = "4";

/// The virtual host of the mod_perl handler.
const SITE: &str = "perl.test";

/// One user's setup: where it lives, how its target file is written, what the baseline's
/// source must say, and the files that must stay as they are.
struct Case {
    dir: tempfile::TempDir,
    /// The target file's text with `{KNOBS}` where the workers list goes.
    target: String,
    /// `source.configured` of the workers baseline.
    source: String,
    /// The user's configuration tree (None: gunicorn's is the target file itself).
    tree: Option<PathBuf>,
}

impl Case {
    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The target file with `workers = LIST`.
    fn target(&self, list: &str) -> PathBuf {
        let f = self.path().join("target.toml");
        std::fs::write(&f, self.target.replace("{KNOBS}", &format!("[knobs]\nworkers = {list}\n"))).unwrap();
        f
    }

    fn checksums(&self) -> BTreeMap<String, String> {
        self.tree.as_deref().map(support::checksums).unwrap_or_default()
    }
}

fn cp_a(from: &str, to: &Path) {
    assert!(!to.starts_with("/etc"), "{}: not a copy", to.display());
    let ok = Command::new("cp").arg("-a").arg(from).arg(to).status().unwrap();
    assert!(ok.success(), "cp -a {from} {}", to.display());
}

/// Each line of `path` starting with a key of `set` replaced by that key's line.
fn set_lines(path: &Path, set: &[(&str, &str)]) {
    assert!(path.starts_with(std::env::temp_dir()), "{}: not a copy", path.display());
    let text = std::fs::read_to_string(path).unwrap();
    let mut seen = vec![false; set.len()];
    let lines: Vec<String> = text
        .lines()
        .map(|l| match set.iter().position(|(k, _)| l.starts_with(k)) {
            Some(i) => {
                seen[i] = true;
                set[i].1.to_string()
            }
            None => l.to_string(),
        })
        .collect();
    assert!(seen.iter().all(|s| *s), "{}: not every one of {set:?} found", path.display());
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A copy of Debian's /etc/apache2 (a local version of user_trees.rs's `debian_tree`, which is
/// private there): prefork as the MPM with MaxRequestWorkers 4, a mod_perl site whose handler
/// sleeps 20 ms, enabled the Debian way. None (after `missing`) without Apache or mod_perl.
fn apache() -> Option<Case> {
    let (dir, conf) = support::apache::debian_etc_copy()?;
    let lib = dir.path().join("app/lib/My");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(
        lib.join("Sleepy.pm"),
        "package My::Sleepy;\nuse strict;\nuse Apache2::RequestRec ();\nuse Apache2::RequestIO ();\n\
         use Apache2::Const -compile => qw(OK);\nsub handler {\n  my $r = shift;\n  \
         $r->content_type('text/plain');\n  select(undef, undef, undef, 0.02);\n  $r->print(\"slept\\n\");\n  \
         return Apache2::Const::OK;\n}\n1;\n",
    )
    .unwrap();
    let startup = dir.path().join("app/startup.pl");
    std::fs::write(&startup, format!("use lib '{}';\n1;\n", dir.path().join("app/lib").display())).unwrap();
    std::fs::write(
        conf.join("sites-available/sleepy.conf"),
        format!(
            "<VirtualHost *:80>\n\tServerName {SITE}\n\tPerlRequire {}\n\tPerlModule My::Sleepy\n\
             \t<Location /perl>\n\t\tSetHandler perl-script\n\t\tPerlResponseHandler My::Sleepy\n\t</Location>\n\
             </VirtualHost>\n",
            startup.display()
        ),
    )
    .unwrap();
    let enable = |kind: &str, name: &str| {
        let link = conf.join(format!("{kind}-enabled/{name}"));
        if !link.exists() {
            std::os::unix::fs::symlink(format!("../{kind}-available/{name}"), link).unwrap();
        }
    };
    enable("sites", "sleepy.conf");
    // One MPM, prefork, as a2dismod mpm_event && a2enmod mpm_prefork would.
    for e in std::fs::read_dir(conf.join("mods-enabled")).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("mpm_") {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    enable("mods", "mpm_prefork.load");
    enable("mods", "mpm_prefork.conf");
    enable("mods", "perl.load");
    set_lines(&conf.join("mods-available/mpm_prefork.conf"), &[("MaxRequestWorkers", "MaxRequestWorkers       4")]);
    support::apache::chmod_tree(dir.path());
    let main = conf.join("apache2.conf");
    let target = format!(
        "[target]\nadapter = \"apache\"\nconfig = \"{}\"\nsite = \"{SITE}\"\n{{KNOBS}}\
         [load]\npath = \"/perl\"\nconnections = 4\nduration = \"1s\"\n",
        main.display()
    );
    Some(Case { dir, target, source: main.display().to_string(), tree: Some(conf) })
}

/// Debian's php-fpm binary's version directory under /etc/php (8.2 for php-fpm8.2).
fn php_version() -> Option<String> {
    std::fs::read_dir("/usr/sbin").ok()?.flatten().find_map(|e| {
        let n = e.file_name().to_string_lossy().into_owned();
        n.strip_prefix("php-fpm")
            .filter(|v| !v.is_empty() && Path::new(&format!("/etc/php/{v}/fpm/php-fpm.conf")).exists())
            .map(str::to_string)
    })
}

/// A copy of Debian's /etc/php whose pool www.conf says pm = static, pm.max_children = 4, its
/// php-fpm.conf's include pointed at the copy; a page that sleeps 20 ms, behind webtune's own
/// nginx. None (after `missing`) without php-fpm or nginx.
fn php_fpm() -> Option<Case> {
    let Some(version) = php_version() else {
        missing("php-fpm with Debian's /etc/php tree");
        return None;
    };
    if support::find_program("nginx").is_none() {
        missing("nginx (php-fpm's front)");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let php = dir.path().join("php");
    cp_a("/etc/php", &php);
    let fpm = php.join(&version).join("fpm");
    let main = fpm.join("php-fpm.conf");
    let text = std::fs::read_to_string(&main).unwrap();
    std::fs::write(&main, text.replace("/etc/php", &php.display().to_string())).unwrap();
    set_lines(&fpm.join("pool.d/www.conf"), &[("pm = ", "pm = static"), ("pm.max_children = ", "pm.max_children = 4")]);
    // A document root the pool's user (www-data) can read.
    let www = dir.path().join("www");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(www.join("sleep.php"), "<?php\nusleep(20000);\necho \"slept\\n\";\n").unwrap();
    chmod(&www.join("sleep.php"), 0o644);
    chmod(&www, 0o755);
    chmod(dir.path(), 0o755);
    let target = format!(
        "[target]\nadapter = \"php-fpm\"\nconfig = \"{}\"\napp = \"{}\"\nready = \"/sleep.php\"\n{{KNOBS}}\
         [load]\npath = \"/sleep.php\"\nconnections = 4\nduration = \"1s\"\n",
        main.display(),
        www.display()
    );
    Some(Case { dir, target, source: main.display().to_string(), tree: Some(php) })
}

/// A WSGI app that sleeps 20 ms a request, its 4 workers in `[target.config]`. None (after
/// `missing`) without gunicorn.
fn gunicorn() -> Option<Case> {
    if support::find_program("gunicorn").is_none() {
        missing("gunicorn");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("sleepy.py");
    std::fs::write(
        &app,
        "import time\n\ndef app(environ, start_response):\n    time.sleep(0.02)\n    body = b'slept\\n'\n    \
         start_response('200 OK', [('Content-Type', 'text/plain'), ('Content-Length', str(len(body)))])\n    \
         return [body]\n",
    )
    .unwrap();
    let target = format!(
        "[target]\nadapter = \"gunicorn\"\napp = \"{}\"\n[target.config]\nworkers = {CURRENT}\n{{KNOBS}}\
         [load]\nconnections = 4\nduration = \"1s\"\n",
        app.display()
    );
    Some(Case { dir, target, source: "[target.config]".into(), tree: None })
}

fn json_of(run: &support::Run) -> Value {
    let v: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}\nstderr: {}", run.stdout, run.stderr));
    support::assert_schema("tune.v1.json", &v);
    v
}

/// The recommended value of workers.
fn recommended(v: &Value) -> &str {
    v["recommended"]
        .as_array()
        .and_then(|r| r.iter().find(|kv| kv[0] == "workers"))
        .and_then(|kv| kv[1].as_str())
        .unwrap_or_else(|| panic!("no workers recommended: {v:#}"))
}

/// The only baseline is workers = 4, from the user's configuration, already in the list.
fn baseline_is_current(v: &Value, case: &Case) {
    let want = json!([{"knob": "workers", "value": CURRENT, "source": {"configured": case.source}, "added": false}]);
    assert_eq!(v["baseline_values"], want, "{:#}", v["baseline_values"]);
}

/// The files `--diff DIR` wrote.
fn written(out: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(out).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default()
}

/// 1. The baseline is the current value; a tune its budget stops before any verdict exits 4,
///    writes no diff, keeps 4, says so last, and is stored as interrupted. At 2 s the plan
///    (about 3 s a window) stops before the first launch; at 4 s it measures the baseline,
///    at most, and stops in the step: both must keep the configuration.
fn a_budget_stop_keeps_the_current_value(case: Case) {
    let target = case.target("[2, 1, 4]");
    let before = case.checksums();
    let db = case.path().join("history.db");
    let out = case.path().join("out");
    for budget in ["2s", "4s"] {
        let report = case.path().join(format!("report-{budget}.txt"));
        let args = ["--db", db.to_str().unwrap(), "--diff", out.to_str().unwrap(), "--max-time", budget];
        let started = Instant::now();
        let run = quick_tune(&target, &[&args[..], &["-o", report.to_str().unwrap()]].concat());
        let took = started.elapsed();
        let said = format!("--max-time {budget}: {}\n{}", run.stdout, run.stderr);
        assert_eq!(run.code, 4, "{said}");
        // The budget, one launch and one window, and the stop.
        assert!(took < Duration::from_secs(30), "{took:?} for --max-time {budget}");
        let v = json_of(&run);
        baseline_is_current(&v, &case);
        assert_eq!(recommended(&v), CURRENT, "{said}");
        assert_eq!(v["unjudged"], json!(["workers"]), "{said}");
        assert!(v["stopped"].as_str().is_some_and(|s| s.contains("time budget")), "{said}");
        assert!(v["steps"].as_array().unwrap().iter().all(|s| s["adopted"] == false), "{said}");
        assert!(v["diffs"].is_null(), "{said}");
        assert_eq!(written(&out), Vec::<PathBuf>::new(), "a diff for a tune that judged nothing: {said}");
        assert!(
            run.stderr.contains("nothing was judged (the time budget is spent): keep your configuration"),
            "{said}"
        );

        // The text report: the answer, then only what was not judged (README: a stopped run
        // "adds `Not judged (kept as you run them): ...`" after it).
        let text = std::fs::read_to_string(&report).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let answer =
            lines.iter().rposition(|l| l.starts_with("Answer:")).unwrap_or_else(|| panic!("no answer: {text}"));
        assert_eq!(lines[answer], "Answer: keep your configuration: no value was adopted.", "{text}");
        let after = &lines[answer + 1..];
        assert!(
            after.len() == 1 && after[0].starts_with("Not judged (kept as you run them): workers"),
            "after the answer: {after:#?}\n{text}"
        );

        // Stored as interrupted: the table, and its JSON.
        let id = v["run_id"].as_u64().unwrap_or_else(|| panic!("no run_id: {v:#}"));
        let runs = webtune_with_limit(&["--db", db.to_str().unwrap(), "runs"], Duration::from_secs(30));
        assert_eq!(runs.code, 0, "{}", runs.stderr);
        let row = runs
            .stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&id.to_string()))
            .unwrap_or_else(|| panic!("no run {id}: {}", runs.stdout));
        assert!(row.contains("tune") && row.contains("interrupted"), "{}", runs.stdout);
        let runs = webtune_with_limit(&["runs", "--db", db.to_str().unwrap(), "--json"], Duration::from_secs(30));
        let listed: Value = serde_json::from_str(&runs.stdout).unwrap_or_else(|e| panic!("{e}: {}", runs.stdout));
        let stored = listed["runs"].as_array().unwrap().iter().find(|r| r["id"] == id).unwrap();
        assert_eq!(stored["status"], "interrupted", "{stored:#}");
        let points = v["points"].as_array().map_or(0, Vec::len);
        println!("budget {budget}: {took:?}, {points} points measured");
    }
    assert_eq!(case.checksums(), before, "the user's files changed");
}

/// Others' share of the CPU over which webtune calls the machine busy (src/tune/mod.rs BUSY).
const BUSY: f64 = 0.10;

/// Tunes of one forced verdict at the most, when a busy machine blurred the earlier ones.
const ATTEMPTS: usize = 3;

/// The tune of `list` from 4, judged in full (two rounds, one window each): its first step's
/// verdict is `verdict`, 4 stays, no diff. Whatever the verdict, every attempt must keep 4
/// and write nothing; the verdict itself is forced by the page's arithmetic only on a quiet
/// machine: a tune whose windows others disturbed (its JSON's noise.others_cpu over BUSY,
/// which webtune says as "busy machine") and that reached another verdict is tried again, up
/// to ATTEMPTS; on a quiet machine another verdict fails at once.
fn a_step_keeps_the_current_value(case: Case, list: &str, verdict: &str) {
    let target = case.target(list);
    let before = case.checksums();
    let out = case.path().join("out");
    for attempt in 1..=ATTEMPTS {
        let started = Instant::now();
        let run = quick_tune(&target, &["--diff", out.to_str().unwrap()]);
        let took = started.elapsed();
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        let v = json_of(&run);
        baseline_is_current(&v, &case);
        let steps = v["steps"].as_array().unwrap();
        let step = &steps[0];
        assert_eq!(
            (step["knob"].as_str(), step["before_value"].as_str()),
            (Some("workers"), Some(CURRENT)),
            "{step:#}"
        );
        assert_eq!((step["adopted"].as_bool(), step["after_value"].as_str()), (Some(false), Some(CURRENT)), "{step:#}");
        assert!(steps.iter().all(|s| s["adopted"] == false && s["verdict"] != "adopted"), "{steps:#?}");
        assert_eq!(recommended(&v), CURRENT, "{:#}", v["evidence"]);
        assert!(v["unjudged"].is_null(), "{:#}", v["unjudged"]);
        assert!(v["stopped"].is_null(), "{:#}", v["stopped"]);
        // Nothing moved: no diff at all (so no hunk for workers).
        assert!(v["diffs"].is_null(), "{:#}", v["diffs"]);
        assert_eq!(written(&out), Vec::<PathBuf>::new(), "a diff when nothing moved");
        assert_eq!(case.checksums(), before, "the user's files changed");
        // The load reached the sleeping page: every window's requests took its 20 ms, none failed.
        for p in v["points"].as_array().unwrap() {
            for w in p["samples"].as_array().unwrap() {
                let served = w["succeeded"].as_u64() > Some(0) && w["failed"] == 0;
                assert!(served && w["p50_ms"].as_f64() >= Some(19.0), "{w:#}");
            }
        }
        let others = v["noise"]["others_cpu"].as_f64().unwrap_or(0.0);
        let said = format!("{:#}\nnoise: {:#}\n{}", step["evidence"], v["noise"], run.stderr);
        if step["verdict"] == verdict {
            println!("{verdict} step: {took:?} (attempt {attempt}, others took {:.0}% of the CPU)", others * 100.0);
            return;
        }
        assert!(others > BUSY && attempt < ATTEMPTS, "verdict {} (not {verdict}): {said}", step["verdict"]);
        println!("attempt {attempt}: verdict {} on a busy machine, tried again: {said}", step["verdict"]);
    }
}

/// 4 clients of a 20 ms page: 2 workers serve half of 4's requests, 1 a quarter.
const FEWER: &str = "[2, 1, 4]";
/// 6 workers serve 4 clients as 4 do: two rounds of one window cannot settle it.
const MORE: &str = "[6, 2, 4]";

#[test]
fn apache_budget_stop_keeps_max_request_workers() {
    let Some(case) = apache() else { return };
    a_budget_stop_keeps_the_current_value(case);
}

#[test]
fn apache_worse_step_keeps_max_request_workers() {
    let Some(case) = apache() else { return };
    a_step_keeps_the_current_value(case, FEWER, "worse");
}

#[test]
fn apache_undecided_step_keeps_max_request_workers() {
    let Some(case) = apache() else { return };
    a_step_keeps_the_current_value(case, MORE, "undecided");
}

#[test]
fn php_fpm_budget_stop_keeps_max_children() {
    let Some(case) = php_fpm() else { return };
    a_budget_stop_keeps_the_current_value(case);
}

#[test]
fn php_fpm_worse_step_keeps_max_children() {
    let Some(case) = php_fpm() else { return };
    a_step_keeps_the_current_value(case, FEWER, "worse");
}

#[test]
fn php_fpm_undecided_step_keeps_max_children() {
    let Some(case) = php_fpm() else { return };
    a_step_keeps_the_current_value(case, MORE, "undecided");
}

#[test]
fn gunicorn_budget_stop_keeps_its_workers() {
    let Some(case) = gunicorn() else { return };
    a_budget_stop_keeps_the_current_value(case);
}

#[test]
fn gunicorn_worse_step_keeps_its_workers() {
    let Some(case) = gunicorn() else { return };
    a_step_keeps_the_current_value(case, FEWER, "worse");
}

#[test]
fn gunicorn_undecided_step_keeps_its_workers() {
    let Some(case) = gunicorn() else { return };
    a_step_keeps_the_current_value(case, MORE, "undecided");
}
