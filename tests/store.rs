//! The history: bench runs and tune experiments land in a real SQLite file, are listed,
//! shown, compared, exported, and rendered as an HTML report that a real browser (headless
//! Chromium) displays with its charts. A corrupt or locked database is one clear error and
//! the result is still printed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::nginx::Nginx;
use crate::support::{find_program, json, missing, write_lab_target, wt};

#[test]
fn bench_runs_are_stored_listed_shown_compared_and_exported() {
    let Some(ng) = Nginx::start("", "") else { return };
    ng.write_file("p.html", &[b'p'; 512]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let url = ng.url("/p.html");
    let (code, _, err) = wt(&db, &["bench", "--quiet", "-c", "2", "-n", "200", &url]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = wt(&db, &["bench", "--quiet", "-c", "4", "-n", "300", &url]);
    assert_eq!(code, 0, "{err}");

    let (_, out, _) = wt(&db, &["runs", "--json", "--kind", "bench"]);
    let rows = json(&out)["runs"].take();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["id"], 2, "newest first");
    assert_eq!(rows[0]["target"], url.as_str());
    let (_, out, _) = wt(&db, &["runs", "--target", "no-such-host"]);
    assert_eq!(out.lines().count(), 1, "header only: {out}");

    let (code, out, _) = wt(&db, &["show", "1", "--json"]);
    assert_eq!(code, 0);
    let v = json(&out);
    assert_eq!(v["kind"], "bench");
    assert_eq!(v["report"]["result"]["succeeded"], 200);
    assert!(v["report"]["result"]["histograms"]["total"].is_string());
    let (_, out, _) = wt(&db, &["show", "2"]);
    assert!(out.contains("Complete requests:   300"), "{out}");

    let (code, out, _) = wt(&db, &["compare", "1", "2", "--json"]);
    assert_eq!(code, 0);
    let compared = json(&out);
    assert_eq!((compared["before"].as_i64(), compared["after"].as_i64()), (Some(1), Some(2)));
    assert_eq!(compared["thresholds"], serde_json::json!([]));
    let rps = &compared["rows"][0];
    assert_eq!(rps["metric"], "requests/s");
    let (b, a) = (rps["before"].as_f64().unwrap(), rps["after"].as_f64().unwrap());
    assert!((rps["change_pct"].as_f64().unwrap() - (a - b) / b * 100.0).abs() < 1e-9);
    let (_, out, _) = wt(&db, &["compare", "1", "2"]);
    assert!(out.contains("requests/s") && out.contains('%'), "{out}");

    let (code, out, _) = wt(&db, &["export", "1", "--csv"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2);
    let cols: Vec<&str> = lines[0].split(',').collect();
    let vals: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(vals[cols.iter().position(|c| *c == "succeeded").unwrap()], "200");
    let (_, out, _) = wt(&db, &["export", "2", "--json"]);
    assert_eq!(json(&out)["report"]["result"]["succeeded"], 300);

    let (code, _, err) = wt(&db, &["show", "99"]);
    assert_eq!(code, 2);
    assert!(err.contains("no run 99") && err.contains("h.db"), "{err}");
}

/// Runs `n` webtune processes at once on one database; panics with the stderr of any that
/// failed.
fn all_at_once(db: &Path, n: usize, args: &[&str]) {
    let children: Vec<_> = (0..n)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_webtune"))
                .args(args)
                .env("WEBTUNE_DB", db)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn concurrent_writers_both_land() {
    let Some(ng) = Nginx::start("", "") else { return };
    ng.write_file("p.html", b"x");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    all_at_once(&db, 4, &["bench", "--quiet", "-c", "2", "-n", "100", &ng.url("/p.html")]);
    let (_, out, _) = wt(&db, &["runs", "--json"]);
    assert_eq!(json(&out)["runs"].as_array().unwrap().len(), 4);
}

/// Many processes creating one new database at once: each one migrates it or waits for the
/// one that does (this raced once: "table runs already exists", then "database is locked").
#[test]
fn processes_creating_one_database_at_once_all_succeed() {
    for _ in 0..15 {
        let dir = tempfile::tempdir().unwrap();
        all_at_once(&dir.path().join("h.db"), 8, &["runs", "--json"]);
    }
}

#[test]
fn a_corrupt_or_locked_database_is_one_clear_error_and_the_result_is_still_printed() {
    let Some(ng) = Nginx::start("", "") else { return };
    ng.write_file("p.html", b"x");
    let url = ng.url("/p.html");
    let dir = tempfile::tempdir().unwrap();
    let corrupt = dir.path().join("corrupt.db");
    std::fs::write(&corrupt, vec![0x5a; 8192]).unwrap();
    let (code, out, err) = wt(&corrupt, &["bench", "--json", "--quiet", "-n", "20", &url]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(json(&out)["result"]["succeeded"], 20, "the result is printed");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("corrupt.db") && err.contains("not a database") && err.contains("not saved"), "{err}");

    let locked = dir.path().join("locked.db");
    let (code, _, _) = wt(&locked, &["bench", "--quiet", "-n", "10", &url]);
    assert_eq!(code, 0);
    let holder = rusqlite::Connection::open(&locked).unwrap();
    holder.execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;").unwrap();
    let (code, out, err) = wt(&locked, &["bench", "--quiet", "-n", "20", &url]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("Complete requests:   20"), "{out}");
    assert!(err.contains("locked.db") && err.contains("locked"), "{err}");
    drop(holder);
    // Nothing half-written: the one run saved before is all there is.
    let (_, out, _) = wt(&locked, &["runs", "--json"]);
    assert_eq!(json(&out)["runs"].as_array().unwrap().len(), 1);
}

#[test]
fn a_database_that_is_no_file_or_from_a_newer_webtune_is_refused_before_anything_is_written() {
    // A device: refused before any load, nothing created beside it.
    let (code, _, err) = wt(Path::new("/dev/null"), &["bench", "--quiet", "-n", "1", "http://127.0.0.1:9/"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("/dev/null: not a regular file"), "{err}");
    assert!(!Path::new("/dev/null-journal").exists() && !Path::new("/dev/null-wal").exists());
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = wt(dir.path(), &["runs"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a regular file"), "{err}");

    // A schema from the future: neither read nor written, and left as it was.
    let future = dir.path().join("future.db");
    let (code, _, err) = wt(&future, &["runs"]);
    assert_eq!(code, 0, "{err}");
    let conn = rusqlite::Connection::open(&future).unwrap();
    conn.pragma_update(None, "user_version", 999).unwrap();
    conn.pragma_update(None, "journal_mode", "DELETE").unwrap();
    drop(conn);
    let before = std::fs::read(&future).unwrap();
    for args in [&["runs"][..], &["show", "1"], &["bench", "--quiet", "-n", "1", "http://127.0.0.1:9/"]] {
        let (code, _, err) = wt(&future, args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("its schema is version 999, newer than this webtune's"), "{err}");
    }
    assert_eq!(std::fs::read(&future).unwrap(), before, "the database was written");
}

fn chromium() -> Option<PathBuf> {
    find_program("chromium").or_else(|| find_program("chromium-browser"))
}

#[test]
fn a_tune_experiment_is_stored_and_its_html_report_renders_in_chromium() {
    let Some(browser) = chromium() else {
        missing("chromium");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let file = dir.path().join("lab.toml");
    write_lab_target(
        &file,
        "[target.config]\nworkers = 1\ncpu = \"1ms\"\nio_wait = \"2ms\"\n\
         [knobs]\nworkers = [1, 4]\nkeepalive = [\"on\", \"off\"]\n[load]\nconnections = 8\nduration = \"500ms\"\n",
    );
    let journal = dir.path().join("j.jsonl");
    let outcome_file = dir.path().join("outcome.json");
    let (code, text, err) = wt(
        &db,
        &[
            "tune",
            file.to_str().unwrap(),
            "--quiet",
            "--verbose",
            "--repeats",
            "2",
            "--journal",
            journal.to_str().unwrap(),
            "-o",
            outcome_file.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    // Each step's table: never a value against itself; the tail; percentages in points.
    for title in text.lines().filter(|l| l.starts_with("Step ")) {
        match title.split_once(" -> ") {
            Some((before, after)) => {
                let (b, a) = (before.rsplit(' ').next().unwrap(), after.split(' ').next().unwrap());
                assert_ne!(b, a, "{title}");
            }
            None => assert!(title.contains(" stays ") && title.contains("; best challenger "), "{title}"),
        }
    }
    assert!(text.contains("  p99.9 latency (ms)"), "{text}");
    assert!(text.lines().filter(|l| l.starts_with("  Others' CPU")).all(|l| l.ends_with(" pt")), "{text}");
    let (_, out, _) = wt(&db, &["runs", "--kind", "tune", "--json"]);
    let rows = json(&out)["runs"].take();
    assert_eq!(rows[0]["status"], "done");
    assert_eq!(
        json(&std::fs::read_to_string(&outcome_file).unwrap())["run_id"],
        rows[0]["id"],
        "the tune's JSON names the run it stored"
    );
    let id = rows[0]["id"].to_string();
    // One CSV row per measured point (each round of a comparison is a point of its own).
    let (_, stored, _) = wt(&db, &["export", &id, "--json"]);
    let points = json(&stored)["points"].as_array().unwrap().len();
    assert!(points >= 8, "two knobs of two values, at least two rounds each: {points}");
    let (_, out, _) = wt(&db, &["export", &id, "--csv"]);
    assert_eq!(out.lines().count(), 1 + points, "header and one row per point: {out}");

    // The report is written as editors write: through a symlink to its file, never over a
    // device or a directory.
    let html = dir.path().join("report.html");
    let link = dir.path().join("link.html");
    std::fs::write(&html, "old").unwrap();
    std::os::unix::fs::symlink(&html, &link).unwrap();
    let (code, _, err) = wt(&db, &["report", &id, "--html", link.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link is kept");
    for not_a_file in ["/dev/null", dir.path().to_str().unwrap()] {
        let (code, _, err) = wt(&db, &["report", &id, "--html", not_a_file]);
        assert_eq!(code, 2, "{not_a_file}: {err}");
        assert!(err.contains("not a regular file"), "{err}");
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device(), "/dev/null is intact");
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(!text.contains("http://") || !text.contains("src=\"http"), "no network resources");
    assert!(!text.contains("<script"), "no script");

    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let url = format!("file://{}", html.display());
    // Narrow too: the page reflows (each chart shrinks with its text) rather than break.
    screenshot(&browser, &url, &shots.join("tune-report-narrow.png"), (400, 3000));
    let dom = readable_at_1280(&browser, &html, "tune-report");
    // Two knobs x (req/s, p99), the latency plot, the windows over time, memory by
    // configuration (4 of them).
    assert_eq!(webtune::report::svg::drawn(&dom).len(), 7, "charts");
    for title in ["Requests/s by workers", "p99 by keepalive", "Latency by percentile", "Memory per worker (MiB)"] {
        assert!(dom.contains(title), "{title} missing");
    }
    // Every step says its verdict (adopted, worse, no effect, undecided), none only "kept".
    assert!(!dom.contains("(kept)</h2>"), "a step labelled kept instead of its verdict");
    assert!(dom.contains("Recommended configuration") && dom.contains("webtune lab"));
}

/// A run's start time as the store writes it, `ago` before now.
fn started(ago: std::time::Duration) -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now() - ago).to_string()
}

#[test]
fn issue_28_scripts_get_the_run_id_and_name_runs_as_last_and_last_n() {
    let Some(ng) = Nginx::start("", "") else { return };
    ng.write_file("p.html", b"p");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let url = ng.url("/p.html");
    let stored = |id: i64| {
        let compare = if id > 1 { "; webtune compare bench~1 bench" } else { "" };
        format!("bench: stored as run {id} in {} (webtune show {id}{compare})\n", db.display())
    };

    let (code, out, err) = wt(&db, &["bench", "--json", "-c", "1", "-n", "20", &url]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["run_id"], 1, "the id is in the JSON");
    assert_eq!(err, stored(1), "and on stderr");
    crate::support::assert_valid(&json(&out));
    let (code, out, err) = wt(&db, &["bench", "-c", "1", "-n", "30", &url]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Complete requests:   30"), "{out}");
    assert_eq!(err, stored(2));
    let (_, _, err) = wt(&db, &["bench", "--quiet", "-c", "1", "-n", "30", &url]);
    assert_eq!(err, "", "--quiet: no line");

    let (code, out, err) = wt(&db, &["compare", "last~2", "last~1", "--json"]);
    assert_eq!(code, 0, "{err}");
    let compared = json(&out);
    assert_eq!((compared["before"].as_i64(), compared["after"].as_i64()), (Some(1), Some(2)));
    let (_, out, _) = wt(&db, &["show", "last", "--json"]);
    assert_eq!(json(&out)["row"]["id"], 3);
    let (_, out, _) = wt(&db, &["export", "last~2", "--json"]);
    assert_eq!(json(&out)["report"]["result"]["succeeded"], 20);
    let html = dir.path().join("r.html");
    let (code, _, err) = wt(&db, &["report", "last~0", "--html", html.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");

    for (bad, says) in [
        ("last~3", format!("webtune: no run last~3: {} holds 3 runs\n", db.display())),
        (
            "lsat",
            "webtune: invalid value 'lsat' for '<RUN>': \"lsat\" is not a run: give its id (12), last, or last~N (last~1 is the one before last); or a kind's: bench, bench~1, tune, tune~1 (see webtune show --help)\n".into(),
        ),
        (
            "last~x",
            "webtune: invalid value 'last~x' for '<RUN>': \"last~x\" is not a run: give its id (12), last, or last~N (last~1 is the one before last); or a kind's: bench, bench~1, tune, tune~1 (see webtune show --help)\n".into(),
        ),
    ] {
        let (code, out, err) = wt(&db, &["show", bad]);
        assert_eq!((code, out.as_str(), err.as_str()), (2, "", says.as_str()), "{bad}");
    }
}

#[test]
fn issue_28_runs_since_and_until_compare_times_with_offsets_and_refuse_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let (code, _, _) = wt(&db, &["runs"]);
    assert_eq!(code, 0, "the database is created");
    let conn = rusqlite::Connection::open(&db).unwrap();
    for at in
        ["2026-11-25T10:30:00Z", "2026-11-25T11:30:00Z", "2026-11-25T12:30:00.250Z", &started(Duration::from_secs(60))]
    {
        conn.execute(
            "INSERT INTO runs (kind, started_at, target, summary, status) VALUES ('tune', ?1, 't.toml', 's', 'done')",
            [at],
        )
        .unwrap();
    }
    let ids = |args: &[&str]| -> Vec<i64> {
        let mut full = vec!["runs", "--json"];
        full.extend_from_slice(args);
        let (code, out, err) = wt(&db, &full);
        assert_eq!(code, 0, "{args:?}: {err}");
        json(&out)["runs"].as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect()
    };
    // 12:00+01:00 is 11:00Z: the runs at 11:30Z and after, though "11:30" < "12:00" as text.
    assert_eq!(ids(&["--since", "2026-11-25T12:00:00+01:00"]), [4, 3, 2]);
    assert_eq!(ids(&["--since", "2026-11-25T11:00:00-01:00"]), [4, 3]);
    assert_eq!(ids(&["--since", "2026-11-25T11:00:00Z", "--until", "2026-11-25T12:30:00Z"]), [2]);
    assert_eq!(ids(&["--since", "2026-11-25", "--until", "2026-11-26"]), [3, 2, 1]);
    assert_eq!(ids(&["--since", "1h"]), [4]);
    assert_eq!(ids(&["--until", "10m"]), [3, 2, 1]);
    let garbage = |t: &str| {
        format!(
            "webtune: --since: bad time {t:?}: expected RFC 3339 (2026-11-25T12:00:00Z, 2026-11-25T12:00:00+01:00), a date (2026-11-25) or a time ago (1h, 2d)\n"
        )
    };
    for bad in ["garbage", "5", "2026-13-01", "2026-11-25T12:00:00+25:00"] {
        let (code, out, err) = wt(&db, &["runs", "--since", bad]);
        assert_eq!((code, out.as_str(), err), (2, "", garbage(bad)), "{bad}");
    }
}

#[test]
fn issue_28_a_run_that_served_nothing_is_listed_failed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    // Nothing listens on port 9 (discard) here: every request fails.
    let (code, _, err) = wt(&db, &["bench", "--quiet", "-c", "1", "-n", "3", "http://127.0.0.1:9/"]);
    assert_eq!(code, 1, "{err}");
    // A run stored before the status existed reads failed too.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let report: String = conn.query_row("SELECT report FROM bench WHERE run_id = 1", [], |r| r.get(0)).unwrap();
    conn.execute(
        "INSERT INTO runs (kind, started_at, target, summary, status) VALUES ('bench', 'x', 'u', 's', 'done')",
        [],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO bench (run_id, requests_per_s, succeeded, failed, report) VALUES (2, 0, 0, 3, ?1)",
        [report],
    )
    .unwrap();
    let (_, out, _) = wt(&db, &["runs", "--json"]);
    let statuses: Vec<String> =
        json(&out)["runs"].as_array().unwrap().iter().map(|r| r["status"].as_str().unwrap().into()).collect();
    assert_eq!(statuses, ["failed", "failed"]);
    let (_, out, _) = wt(&db, &["runs"]);
    assert!(out.lines().nth(1).unwrap().contains(" failed "), "{out}");
}

#[test]
fn issue_28_merge_refuses_the_same_report_twice() {
    let Some(ng) = Nginx::start("", "") else { return };
    ng.write_file("p.html", b"p");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let (code, out, err) = wt(&db, &["bench", "--json", "--quiet", "-c", "1", "-n", "20", &ng.url("/p.html")]);
    assert_eq!(code, 0, "{err}");
    let (a, copy) = (dir.path().join("a.json"), dir.path().join("copy.json"));
    std::fs::write(&a, &out).unwrap();
    // The same run, written again by another tool: other bytes, the same run.
    std::fs::write(&copy, json(&out).to_string()).unwrap();
    let (a, copy) = (a.to_str().unwrap(), copy.to_str().unwrap());
    let (code, out, err) = wt(&db, &["merge", a, a]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    let started = json(&std::fs::read_to_string(a).unwrap())["started_at"].as_str().unwrap().to_string();
    assert_eq!(err, format!("webtune: {a} is the same run as {a} (started {started}): each run merges once\n"));
    let (code, _, err) = wt(&db, &["merge", a, copy]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err, format!("webtune: {copy} is the same run as {a} (started {started}): each run merges once\n"));
}

/// Screenshots `url` at `size` into `shot`; checks the browser logged no error and the PNG
/// has the window's size.
fn screenshot(browser: &Path, url: &str, shot: &Path, size: (u32, u32)) {
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("--window-size={},{}", size.0, size.1))
        .arg(url)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    let console_errors: Vec<&str> =
        log.lines().filter(|l| l.contains("CONSOLE") && (l.contains("rror") || l.contains("Uncaught"))).collect();
    assert!(console_errors.is_empty(), "{console_errors:?}");
    let png = std::fs::read(shot).unwrap_or_else(|e| panic!("no screenshot {}: {e}: {log}", shot.display()));
    assert!(png.len() > 10_000 && png.starts_with(b"\x89PNG"), "not a screenshot: {log}");
    // IHDR: width and height, big-endian, after the signature and the chunk's length and type.
    let dim = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    assert_eq!((dim(16), dim(20)), size, "{}", shot.display());
    eprintln!("screenshot: {}", shot.display());
}

/// Renders `html` in Chromium at 1280 px (a screenshot, and the DOM as the browser built it)
/// and checks every chart in that DOM reads: no wider than the window, no text under 11 px,
/// no two labels overprinting. Returns the DOM.
fn readable_at_1280(browser: &Path, html: &Path, name: &str) -> String {
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let url = format!("file://{}", html.display());
    screenshot(browser, &url, &shots.join(format!("{name}-1280.png")), (1280, 4000));
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,4000", "--dump-dom", &url])
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let charts = webtune::report::svg::drawn(&dom);
    assert!(!charts.is_empty(), "no chart in the DOM: {dom}");
    let problems = webtune::report::svg::layout_problems(&dom, 1280.0);
    assert!(problems.is_empty(), "{name}: {problems:#?}");
    let measured = measured_layout(browser, html);
    assert_eq!(measured.len(), charts.len(), "{name}: the charts the browser drew");
    for (i, (width, labels)) in measured.iter().enumerate() {
        let title = &charts[i].title;
        assert!(*width <= 1280.0, "{name}: {title:?} is {width} px wide");
        for (a, l) in labels.iter().enumerate() {
            assert!(l.font >= 11.0, "{name}: {title:?}: {:?} drawn at {} px", l.text, l.font);
            // 1 px of slack: glyph boxes include the font's line gap.
            for m in &labels[a + 1..] {
                let apart = l.x1 <= m.x0 + 1.0 || m.x1 <= l.x0 + 1.0 || l.y1 <= m.y0 + 1.0 || m.y1 <= l.y0 + 1.0;
                assert!(apart, "{name}: {title:?}: {:?} overlaps {:?} as drawn: {l:?} {m:?}", l.text, m.text);
            }
        }
    }
    dom
}

/// A text label as the browser laid it out: its box in CSS px and its font size as drawn.
#[derive(Debug)]
struct Measured {
    text: String,
    font: f64,
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

/// The real layout of each chart in `html` at 1280 px: a copy of the page with a script that
/// writes every chart's width and every label's box (getBoundingClientRect: rotation, scaling
/// and the font's real metrics included) into the DOM, which Chromium then dumps.
fn measured_layout(browser: &Path, html: &Path) -> Vec<(f64, Vec<Measured>)> {
    const MEASURE: &str = "<script>const out=[];document.querySelectorAll('svg').forEach((s,i)=>{\
        const r=s.getBoundingClientRect();const scale=r.width/s.viewBox.baseVal.width;out.push('svg\\t'+r.width);\
        s.querySelectorAll('text').forEach(t=>{const b=t.getBoundingClientRect();\
        const f=parseFloat(getComputedStyle(t).fontSize)*scale;\
        out.push(['text',b.left,b.top,b.right,b.bottom,f,t.textContent].join('\\t'))})});\
        const p=document.createElement('pre');p.id='measured';p.textContent=out.join('\\n');\
        document.body.appendChild(p);</script>";
    let page = std::fs::read_to_string(html).unwrap().replace("</body>", &format!("{MEASURE}</body>"));
    let copy = html.with_extension("measure.html");
    std::fs::write(&copy, page).unwrap();
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,4000", "--virtual-time-budget=3000"])
        .arg("--dump-dom")
        .arg(format!("file://{}", copy.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let text = dom.split("<pre id=\"measured\">").nth(1).and_then(|t| t.split("</pre>").next());
    let text = text.unwrap_or_else(|| panic!("the measuring script did not run: {dom}"));
    let mut charts: Vec<(f64, Vec<Measured>)> = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let num = |i: usize| f[i].parse::<f64>().unwrap_or_else(|e| panic!("{e}: {line}"));
        match f[0] {
            "svg" => charts.push((num(1), Vec::new())),
            "text" => charts.last_mut().unwrap().1.push(Measured {
                x0: num(1),
                y0: num(2),
                x1: num(3),
                y1: num(4),
                font: num(5),
                text: f[6..].join("\t"),
            }),
            _ => panic!("{line}"),
        }
    }
    charts
}

#[test]
fn a_bench_report_reads_at_1280_px_in_chromium_with_throughput_over_time() {
    let Some(browser) = chromium() else {
        missing("chromium");
        return;
    };
    let lab = crate::support::lab::Lab::start(&["--workers", "2", "--io-wait", "1ms"]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let url = lab.url("/");
    let (code, out, err) = wt(&db, &["bench", "-c", "4", "-d", "3s", &url]);
    assert_eq!(code, 0, "{err}");
    // The terminal report has its histogram, within 80 columns.
    let at = out.find("Latency histogram").unwrap_or_else(|| panic!("no histogram: {out}"));
    let lines: Vec<&str> = out[at..].lines().take_while(|l| !l.is_empty()).collect();
    assert!(lines.len() > 1 && lines.len() <= 12, "{out}");
    assert!(lines.iter().all(|l| l.chars().count() <= 80), "{out}");
    let html = dir.path().join("bench.html");
    let id = "last";
    let (code, _, err) = wt(&db, &["report", id, "--html", html.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let dom = readable_at_1280(&browser, &html, "bench-report");
    let titles: Vec<String> = webtune::report::svg::drawn(&dom).into_iter().map(|c| c.title).collect();
    assert_eq!(titles, ["Latency by percentile", "Replies and failures per second"], "{titles:?}");
}

/// Issue 49: a tune's last lines are its answer (the recommendation, the change with its
/// interval); a line a step, nothing said twice; the tables behind --verbose and `show`.
#[test]
fn a_tune_ends_with_its_answer_and_says_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let file = dir.path().join("lab.toml");
    write_lab_target(
        &file,
        "[target.config]\nworkers = 1\ncpu = \"1ms\"\nio_wait = \"4ms\"\n\
         [knobs]\nworkers = [1, 4]\n[load]\nconnections = 8\nduration = \"400ms\"\n",
    );
    let journal = dir.path().join("j.jsonl");
    let args = ["tune", file.to_str().unwrap(), "--quiet", "--repeats", "2", "--journal", journal.to_str().unwrap()];
    let (code, text, err) = wt(&db, &args);
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = wt(&db, &["runs", "--kind", "tune", "--json"]);
    let id = json(&out)["runs"][0]["id"].to_string();
    let lines: Vec<&str> = text.lines().collect();
    // One step: 1 -> 4 serves more (I/O-bound), adopted with its interval.
    let steps = format!("Steps (each one's table: tune --verbose, webtune show {id}, webtune report {id} --html):");
    let at = lines.iter().position(|l| *l == steps).unwrap_or_else(|| panic!("{text}"));
    assert!(lines[at + 1].starts_with("  1. workers 1 -> 4: adopted, +"), "{text}");
    let rounds = lines[at + 1].rsplit(" (99% interval) over ").next().unwrap();
    let n: usize = rounds.strip_suffix(" interleaved rounds").and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!((2..=10).contains(&n), "{text}");
    let n = lines.len();
    assert_eq!(lines[n - 3], "Recommended configuration:", "{text}");
    assert!(lines[n - 2].starts_with("    webtune lab --workers 4 "), "{text}");
    let effect = lines[at + 1].split(": adopted, ").nth(1).unwrap().split(" (99% interval)").next().unwrap();
    assert_eq!(lines[n - 1], format!("Answer: change workers 1 -> 4 ({effect}, 99% interval)."), "{text}");
    // Nothing printed twice, no table in the summary.
    for l in lines.iter().filter(|l| !l.trim().is_empty()) {
        assert_eq!(lines.iter().filter(|m| *m == l).count(), 1, "{l:?} twice in\n{text}");
    }
    assert!(!text.contains("Step 1") && !text.contains("Start to finish") && !text.contains("Evidence"), "{text}");
    // The tables are in `show` (and --verbose): the step's evidence once, named in Evidence.
    let (code, shown, err) = wt(&db, &["show", &id]);
    assert_eq!(code, 0, "{err}");
    assert!(shown.contains("\nStep 1: workers 1 -> 4 (adopted)\n"), "{shown}");
    assert!(shown.contains("\nEvidence:\n  workers = 4: step 1\n"), "{shown}");
    assert!(!shown.contains("Start to finish"), "one step adopted from the baseline is its own table: {shown}");
    assert!(shown.ends_with(&format!("{}\n", lines[n - 1])), "{shown}");
}

/// Issue 49: two 1-second benches are not "beyond the spread": compare says the change with
/// its interval, what the noise is, and when the runs are too short to know it.
#[test]
fn compare_gives_the_change_with_its_interval_or_says_why_not() {
    let lab = crate::support::lab::Lab::start(&["--workers", "2"]);
    let url = lab.url("/");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    for d in ["1s", "1s", "3500ms", "3500ms"] {
        let (code, _, err) = wt(&db, &["bench", "--quiet", "-c", "2", "-d", d, &url]);
        assert_eq!(code, 0, "{err}");
    }
    let (code, out, err) = wt(&db, &["compare", "1", "2"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[2].starts_with("  requests/s ") && lines[2].ends_with("%                        not known"), "{out}");
    assert_eq!(
        lines.last().copied(),
        Some(
            "requests/s: no interval: runs 1 and 2 measured 1 and 1 one-second rates; two or more each are needed to \
             know the noise (bench -d 5s or longer; tune --repeats 2 or more)."
        ),
        "{out}"
    );
    assert!(!out.contains("yes"), "{out}");
    let (code, out, err) = wt(&db, &["compare", "3", "4"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    let verdict = lines[2].rsplit("  ").next().unwrap();
    assert!(["beyond the noise", "within the noise"].contains(&verdict), "{out}");
    assert!(lines[2].contains("%  ["), "the interval beside the change: {out}");
    let n = lines.len();
    assert!(lines[n - 2].starts_with("Run 4 has ") && lines[n - 2].contains(" times the requests/s of run 3"), "{out}");
    assert_eq!(
        lines[n - 1],
        "The interval is where the change lies with 99% confidence, from the spread of each run's one-second rates \
         (3 and 3); \"beyond the noise\": it excludes 0%; \"within the noise\": it holds 0%, and the runs cannot tell \
         this change from their own variation.",
        "{out}"
    );
    let (_, json_out, _) = wt(&db, &["compare", "3", "4", "--json"]);
    let v = json(&json_out);
    assert_eq!(v["rows"][0]["samples"], serde_json::json!([3, 3]), "{json_out}");
    assert_eq!(v["rows"][0]["interval_pct"].as_array().map(|a| a.len()), Some(2), "{json_out}");
}

/// Issue 49: the bench HTML report shows what the terminal does (status codes, failures by
/// class, the latency table by phase, the histogram), and `report RUN` without --html writes
/// webtune-ID.html where it runs.
#[test]
fn the_bench_html_report_shows_what_the_terminal_does() {
    let lab = crate::support::lab::Lab::start(&["--workers", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let (code, text, err) = wt(&db, &["bench", "-c", "2", "-n", "300", &lab.url("/")]);
    assert_eq!(code, 0, "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(["report", "last"])
        .env("WEBTUNE_DB", &db)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "webtune-1.html\n");
    let html = std::fs::read_to_string(dir.path().join("webtune-1.html")).unwrap();
    let field = |name: &str| {
        let line = text.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name}: {text}"));
        line[name.len()..].trim().to_string()
    };
    assert!(html.contains(&format!("<tr><td>status codes</td><td>{}</td></tr>", field("Status codes:"))), "{html}");
    assert_eq!(field("Status codes:"), "200: 300");
    assert!(html.contains("<tr><td>failures by class</td><td>none</td></tr>"), "{html}");
    // The latency table: the terminal's Total row, cell by cell.
    let total: Vec<&str> = text.lines().find(|l| l.starts_with("  Total")).unwrap()[13..].split_whitespace().collect();
    let cells: String = total.iter().map(|v| format!("<td>{v}</td>")).collect();
    assert!(html.contains(&format!("<tr><td>total</td>{cells}</tr>")), "{cells} in {html}");
    // The histogram: the terminal's buckets and counts.
    let at = text.find("Latency histogram").unwrap();
    for line in text[at..].lines().skip(1).take_while(|l| !l.is_empty()) {
        let (range, rest) = line.split_once('[').unwrap();
        let mut ends = range.split(" - ").map(str::trim);
        let (from, to) = (ends.next().unwrap(), ends.next().unwrap());
        let count = rest.split(']').next().unwrap().trim();
        assert!(html.contains(&format!("<tr><td>{from}</td><td>{to}</td><td>{count}</td>")), "{line} in {html}");
    }
}

/// Issue 49: a tune's journal lands beside the history, named by its run, never in the
/// directory the user runs from; --resume finds it there; a journal given again without
/// --resume is replaced with a word, not in silence.
#[test]
fn journals_live_beside_the_history_named_by_run() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let db = dir.path().join("data").join("h.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let file = dir.path().join("lab.toml");
    write_lab_target(&file, "[knobs]\nworkers = [1, 2]\n[load]\nconnections = 4\nduration = \"300ms\"\n");
    let tune = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_webtune"))
            .args(["tune", file.to_str().unwrap(), "--repeats", "1", "--max-rounds", "2"])
            .args(extra)
            .env("WEBTUNE_DB", &db)
            .current_dir(cwd.path())
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, err) = tune(&[]);
    assert_eq!(code, Some(0), "{err}");
    let journal = db.parent().unwrap().join("journals").join("tune-1.jsonl");
    assert!(err.contains(&format!("; journal {}\n", journal.display())), "{err}");
    let points = std::fs::read_to_string(&journal).unwrap().lines().count() - 1;
    assert!(points >= 2, "{points}");
    assert_eq!(std::fs::read_dir(cwd.path()).unwrap().count(), 0, "nothing in the current directory");
    // --resume finds it: every point reused, none measured again.
    let (code, err) = tune(&["--resume"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains(&format!("; journal {}\n", journal.display())), "{err}");
    assert_eq!(err.matches(": reused from the interrupted run").count(), points, "{err}");
    // Given again without --resume: replaced, and said.
    let (code, err) = tune(&["--journal", journal.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "tune: the journal {} held {points} point(s) of an earlier tune: this one starts afresh over them (--resume continues a journal)\n",
            journal.display()
        )),
        "{err}"
    );
    // --resume with nothing to resume: one line, exit 2.
    let other = dir.path().join("other.toml");
    std::fs::write(&other, std::fs::read_to_string(&file).unwrap().replace("[1, 2]", "[2, 1]")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(["tune", other.to_str().unwrap(), "--resume"])
        .env("WEBTUNE_DB", &db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "webtune: --resume: no journal of this tune ({}, one-at-a-time, this file's content and placement) in {}: give its --journal PATH\n",
            other.display(),
            journal.parent().unwrap().display()
        )
    );
}

/// Issue 49: after a tune between two benches, the comparison suggested is one that works:
/// `compare bench~1 bench` (the last two benches, whatever ran between); `last~1 last` over
/// two kinds says which to use.
#[test]
fn the_comparison_suggested_after_a_run_works_when_a_tune_ran_between() {
    let lab = crate::support::lab::Lab::start(&["--workers", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let url = lab.url("/");
    let bench = || wt(&db, &["bench", "-c", "1", "-n", "50", &url]);
    let (code, _, err) = bench();
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, format!("bench: stored as run 1 in {} (webtune show 1)\n", db.display()));
    let file = dir.path().join("lab.toml");
    write_lab_target(&file, "[knobs]\nworkers = [1, 2]\n[load]\nconnections = 2\nduration = \"300ms\"\n");
    let (code, _, err) = wt(&db, &["tune", file.to_str().unwrap(), "--repeats", "1", "--max-rounds", "2"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.ends_with(&format!("tune: stored as run 2 in {} (webtune show 2)\n", db.display())), "{err}");
    let (code, _, err) = bench();
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        err,
        format!("bench: stored as run 3 in {} (webtune show 3; webtune compare bench~1 bench)\n", db.display())
    );
    let (code, out, err) = wt(&db, &["compare", "bench~1", "bench"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("Run 1 -> run 3\n"), "{out}");
    let (code, out, err) = wt(&db, &["compare", "last~1", "last"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert_eq!(
        err,
        "webtune: compare two bench runs or two tune runs: run 2 is a tune run, run 3 a bench run (webtune compare \
         bench~1 bench: the last two bench runs)\n"
    );
    let (code, _, err) = wt(&db, &["show", "tune~1"]);
    assert_eq!((code, err), (2, format!("webtune: no run tune~1: {} holds 1 tune run\n", db.display())));
}

/// Issue 49: `runs` gives every start time in one format, and tells apart target files of
/// one name in different directories (relative to where it runs when below it, else whole).
#[test]
fn runs_lists_one_time_format_and_target_files_apart() {
    let lab = crate::support::lab::Lab::start(&["--workers", "1"]);
    let cwd = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let db = cwd.path().join("h.db");
    let here = cwd.path().join("site");
    std::fs::create_dir(&here).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_webtune"))
            .args(args)
            .env("WEBTUNE_DB", &db)
            .current_dir(cwd.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(&["bench", "--quiet", "-c", "1", "-n", "20", &lab.url("/")]);
    for dir in [here.as_path(), elsewhere.path()] {
        let file = dir.join("target.toml");
        write_lab_target(&file, "[knobs]\nworkers = [1, 2]\n[load]\nconnections = 2\nduration = \"300ms\"\n");
        run(&["tune", file.to_str().unwrap(), "--quiet", "--repeats", "1", "--max-rounds", "2"]);
    }
    let listing = run(&["runs"]);
    let rows: Vec<Vec<&str>> = listing.lines().skip(1).map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows.len(), 3, "{listing}");
    for row in &rows {
        let t = row[2];
        assert!(t.len() == 20 && t.ends_with('Z') && t.as_bytes()[10] == b'T' && !t.contains('.'), "{listing}");
    }
    assert_eq!(rows[0][4], elsewhere.path().join("target.toml").display().to_string(), "{listing}");
    assert_eq!(rows[1][4], "site/target.toml", "{listing}");
}
