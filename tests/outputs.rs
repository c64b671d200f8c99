//! Outputs where users expect them (issue 28): the text stays on the terminal while -o and
//! --export-* write JSON, CSV and markdown files; a path that is a symlink or a device is
//! refused before the run; export --csv of a bench run carries every figure; each command's
//! --json follows its schema; merge reads bench reports of schema v1 and v2.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::support::lab::Lab;
use crate::support::{assert_schema, json, write_lab_target, wt};

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}: {text}", path.display()))
}

/// A CSV of a header and one row, as column -> value (no field of these rows is quoted).
fn one_row(csv: &str) -> BTreeMap<String, String> {
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "a header and one row: {csv}");
    let (cols, vals): (Vec<&str>, Vec<&str>) = (lines[0].split(',').collect(), lines[1].split(',').collect());
    assert_eq!(cols.len(), vals.len(), "{csv}");
    cols.into_iter().map(String::from).zip(vals.into_iter().map(String::from)).collect()
}

#[test]
fn bench_writes_json_csv_and_markdown_files_while_the_text_stays_on_stdout() {
    let lab = Lab::start(&["--workers", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let p = |name: &str| dir.path().join(name).display().to_string();
    let (code, out, err) = wt(
        &db,
        &[
            "bench",
            "--quiet",
            "-c",
            "2",
            "-n",
            "200",
            &lab.url("/"),
            "-o",
            &p("a.json"),
            "-o",
            &p("b.csv"),
            "-o",
            &p("c.md"),
            "--export-json",
            &p("d.json"),
            "--export-csv",
            &p("e.csv"),
            "--export-markdown",
            &p("f.md"),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("Server:") && out.contains("Complete requests:   200"), "the text on stdout: {out}");
    for name in ["a.json", "d.json"] {
        let v = read_json(&dir.path().join(name));
        assert_schema("bench-report.v2.json", &v);
        assert_eq!(v["schema"], "webtune.bench.v2");
        assert_eq!(v["result"]["succeeded"], 200);
    }
    for name in ["b.csv", "e.csv"] {
        let row = one_row(&std::fs::read_to_string(dir.path().join(name)).unwrap());
        assert_eq!(row["id"], "1", "the stored run's id: {row:?}");
        assert_eq!(row["succeeded"], "200");
    }
    for name in ["c.md", "f.md"] {
        let md = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert!(md.starts_with("## webtune bench: GET "), "{md}");
        assert!(md.contains("| Latency (ms) | min | mean | p50 | p75 | p90 | p99 | p99.9 | max |\n"), "{md}");
        assert!(md.contains("| Succeeded | 200 |"), "{md}");
    }
}

#[test]
fn an_unknown_extension_a_symlink_or_a_device_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    // A link is followed only to an ordinary file of this user (the rule of every output).
    let link = dir.path().join("out.json");
    std::os::unix::fs::symlink("/dev/full", &link).unwrap();
    // Nothing listens on port 1: a run that started would fail with exit 1, not 2.
    let url = "http://127.0.0.1:1/";
    for (args, says) in [
        (vec!["-o", "out.xml"], "-o out.xml: the format is chosen by the file's extension: .txt, .json, .csv, .md"),
        (vec!["-o", link.to_str().unwrap()], "out.json: not a regular file"),
        (vec!["--export-csv", "/dev/null"], "/dev/null: not a regular file"),
    ] {
        let mut full = vec!["bench", "--quiet", "-n", "5", url];
        full.extend(&args);
        let (code, out, err) = wt(&db, &full);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.starts_with("webtune: ") && err.contains(says) && err.lines().count() == 1, "{args:?}: {err}");
        assert!(out.is_empty(), "{out}");
    }
    // tune refuses the same paths before it reads its target file.
    let (code, _, err) = wt(&db, &["tune", "no-such-target.toml", "-o", link.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("out.json: not a regular file"), "{err}");
}

#[test]
fn export_csv_of_a_bench_run_is_one_wide_row_of_every_figure() {
    let lab = Lab::start(&["--workers", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let (code, _, err) = wt(&db, &["bench", "--quiet", "-c", "3", "-n", "150", &lab.url("/")]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = wt(&db, &["export", "1", "--csv"]);
    assert_eq!(code, 0, "{err}");
    let row = one_row(&out);
    for (col, want) in [("id", "1"), ("connections", "3"), ("requests", "150"), ("succeeded", "150"), ("failed", "0")] {
        assert_eq!(row[col], want, "{col}: {row:?}");
    }
    assert_eq!(row["status_200"], "150", "{row:?}");
    assert!(row["url"].ends_with('/') && row["method"] == "GET", "{row:?}");
    for phase in ["total", "first_byte", "connect"] {
        let values: Vec<f64> = ["min", "p50", "p75", "p90", "p99", "p999", "max"]
            .iter()
            .map(|s| row[&format!("{phase}_{s}_ms")].parse().unwrap_or_else(|_| panic!("{phase}_{s}_ms: {row:?}")))
            .collect();
        assert!(values.windows(2).all(|w| w[0] <= w[1]), "{phase} percentiles in order: {values:?}");
    }
    for class in ["refused", "reset", "timeout", "malformed", "closed_early", "tls", "other"] {
        assert_eq!(row[&format!("errors_{class}")], "0", "{class}: {row:?}");
    }
    for col in ["started_at", "threads", "duration_s", "requests_per_s", "bytes", "bytes_per_s", "total_mean_ms"] {
        assert!(!row[col].is_empty(), "{col}: {row:?}");
    }
    let rps: f64 = row["requests_per_s"].parse().unwrap();
    assert!(rps > 0.0);
    assert!(row["bytes"].parse::<u64>().unwrap() > 150 * 100, "{row:?}");
}

#[test]
fn compare_show_export_and_runs_write_files_and_their_json_follows_the_schemas() {
    let lab = Lab::start(&["--workers", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    for n in ["100", "200"] {
        let (code, _, err) = wt(&db, &["bench", "--quiet", "-c", "2", "-n", n, &lab.url("/")]);
        assert_eq!(code, 0, "{err}");
    }
    let p = |name: &str| dir.path().join(name).display().to_string();
    let (code, out, err) = wt(&db, &["compare", "1", "2", "-o", &p("c.json"), "-o", &p("c.md"), "-o", &p("c.csv")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("Run 1 -> run 2\n"), "the text on stdout: {out}");
    let c = read_json(&dir.path().join("c.json"));
    assert_schema("compare.v1.json", &c);
    assert_eq!(c["schema"], "webtune.compare.v1");
    let md = std::fs::read_to_string(dir.path().join("c.md")).unwrap();
    assert!(md.starts_with("## webtune compare: run 1 -> run 2") && md.contains("| requests/s |"), "{md}");
    let csv = std::fs::read_to_string(dir.path().join("c.csv")).unwrap();
    assert!(
        csv.starts_with(
            "before_id,after_id,metric,before,after,change_pct,beyond_spread,interval_low_pct,interval_high_pct\n1,2,requests/s,"
        ),
        "{csv}"
    );
    let (code, out, _) = wt(&db, &["compare", "1", "2", "--json", "--fail-if", "rps < -99.9%"]);
    assert_eq!(code, 0);
    assert_schema("compare.v1.json", &json(&out));

    let (code, out, _) = wt(&db, &["runs", "--json"]);
    assert_eq!(code, 0);
    let runs = json(&out);
    assert_schema("runs.v1.json", &runs);
    assert_eq!(runs["runs"].as_array().unwrap().len(), 2);

    let (code, out, err) = wt(&db, &["show", "2", "-o", &p("s.md")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Complete requests:   200"), "{out}");
    assert!(std::fs::read_to_string(dir.path().join("s.md")).unwrap().contains("| Succeeded | 200 |"));
    let (code, out, err) = wt(&db, &["export", "2", "--markdown", "-o", &p("x.csv")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("## webtune bench"), "{out}");
    assert_eq!(one_row(&std::fs::read_to_string(dir.path().join("x.csv")).unwrap())["succeeded"], "200");
    let (code, _, err) = wt(&db, &["export", "2"]);
    assert_eq!((code, err.as_str()), (2, "webtune: export: give --json, --csv, --markdown or -o FILE\n"));
}

#[test]
fn tune_writes_json_and_markdown_files_while_its_tables_stay_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let target = dir.path().join("lab.toml");
    write_lab_target(
        &target,
        "[target.config]\nworkers = 2\n[knobs]\nworkers = [1, 2]\n\
         [load]\nconnections = 4\nduration = \"300ms\"\n",
    );
    let p = |name: &str| dir.path().join(name).display().to_string();
    let args = ["tune", target.to_str().unwrap(), "--quiet", "--repeats", "1", "--max-rounds", "2", "--journal"];
    let mut full = args.to_vec();
    let journal = p("j.jsonl");
    let (json_file, md_file) = (p("t.json"), p("t.md"));
    full.extend([journal.as_str(), "-o", json_file.as_str(), "--export-markdown", md_file.as_str()]);
    let (code, out, err) = wt(&db, &full);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Recommended configuration:\n"), "the tables on stdout: {out}");
    let v = read_json(Path::new(&json_file));
    assert_schema("tune.v1.json", &v);
    assert_eq!(v["schema"], "webtune.tune.v1");
    // What it cost: the launches the points made (a window on a kept server makes none), every
    // sample a window, against a grid of 2 x 1.
    let points = v["points"].as_array().unwrap();
    let cost = &v["cost"];
    let launches: u64 = points.iter().map(|p| p["launches"].as_u64().unwrap()).sum();
    assert_eq!(cost["launches"].as_u64(), Some(launches), "{cost}");
    let windows: usize = points.iter().map(|p| p["samples"].as_array().unwrap().len()).sum();
    assert_eq!(cost["windows"].as_u64(), Some(windows as u64), "{cost}");
    let kept: usize =
        points.iter().filter(|p| p["launches"] == 0).map(|p| p["samples"].as_array().unwrap().len()).sum();
    assert_eq!(cost["kept_windows"].as_u64(), Some(kept as u64), "{cost}");
    assert_eq!((cost["grid_configurations"].as_u64(), cost["grid_repeats"].as_u64()), (Some(2), Some(1)), "{cost}");
    assert!((cost["grid_share"].as_f64().unwrap() - windows as f64 / 2.0).abs() < 1e-9, "{cost}");
    assert!(cost["measuring_s"].as_f64().unwrap() >= 0.3 * windows as f64 * 0.9, "{cost}");
    assert!(out.contains(&format!("\nCost: {windows} windows in {launches} launches")), "{out}");
    let md = std::fs::read_to_string(&md_file).unwrap();
    assert!(md.starts_with("## webtune tune: one-at-a-time") && md.contains("### Points measured"), "{md}");
    // Resumed from the whole journal: nothing measured again, the same JSON on stdout.
    full.truncate(args.len() + 1);
    full.extend(["--resume", "--json"]);
    let (code, out, err) = wt(&db, &full);
    assert_eq!(code, 0, "{err}");
    assert_schema("tune.v1.json", &json(&out));
    // The stored tune run, exported: markdown on stdout, a CSV row per point in a file.
    let (code, out, err) = wt(&db, &["export", "1", "--markdown", "--export-csv", &p("points.csv")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("## webtune tune: one-at-a-time"), "{out}");
    let points = std::fs::read_to_string(dir.path().join("points.csv")).unwrap();
    assert_eq!(points.lines().count(), 1 + v["points"].as_array().unwrap().len(), "{points}");
}

#[test]
fn merge_reads_bench_reports_of_schema_v1_and_v2_and_writes_v2() {
    let lab = Lab::start(&["--workers", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let (code, out, err) = wt(&db, &["bench", "--quiet", "--json", "-c", "2", "-n", "100", &lab.url("/")]);
    assert_eq!(code, 0, "{err}");
    let mut v = json(&out);
    let v2 = dir.path().join("v2.json");
    std::fs::write(&v2, &out).unwrap();
    // A v1 report: the same layout less what v2 named, under the old id.
    v["schema"] = "webtune.bench.v1".into();
    // Another run (the same one twice is refused), as a v1 report has it: without what v2 added.
    v["started_at"] = "2026-01-01T00:00:00.000Z".into();
    let top = v.as_object_mut().unwrap();
    top.remove("run_id");
    let v1 = dir.path().join("v1.json");
    std::fs::write(&v1, v.to_string()).unwrap();
    assert_schema("bench-report.v1.json", &v);
    let (code, out, err) = wt(&db, &["merge", "--json", v1.to_str().unwrap(), v2.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let merged = json(&out);
    assert_schema("bench-report.v2.json", &merged);
    assert_eq!((merged["merged_runs"].as_u64(), merged["result"]["succeeded"].as_u64()), (Some(2), Some(200)));
    v["schema"] = "webtune.bench.v9".into();
    std::fs::write(&v1, v.to_string()).unwrap();
    let (code, _, err) = wt(&db, &["merge", v1.to_str().unwrap(), v2.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("has schema \"webtune.bench.v9\", not webtune.bench.v1 or webtune.bench.v2"), "{err}");
}

/// `--diff DIR` is checked before the first launch, as `-o` is: a path that is not a
/// directory, or a diff that is a symlink, ends the tune at once with one line, exit 2.
#[test]
fn tune_checks_its_diff_directory_before_the_first_launch() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let target = dir.path().join("lab.toml");
    write_lab_target(&target, "[knobs]\nworkers = [1, 2]\n[load]\nduration = \"300ms\"\n");
    let a_file = dir.path().join("file");
    std::fs::write(&a_file, "mine").unwrap();
    let linked = dir.path().join("linked");
    std::fs::create_dir(&linked).unwrap();
    std::os::unix::fs::symlink(&a_file, linked.join("nginx.diff")).unwrap();
    let journal = dir.path().join("j.jsonl");
    for (out, said) in [
        ("/dev/null", "--diff: /dev/null is not a directory"),
        (a_file.to_str().unwrap(), "is not a directory"),
        (linked.to_str().unwrap(), "nginx.diff is a symlink; webtune writes no diff through one"),
    ] {
        let started = std::time::Instant::now();
        let t = target.to_str().unwrap();
        let (code, _, err) = wt(&db, &["tune", t, "--diff", out, "--journal", journal.to_str().unwrap()]);
        assert_eq!(code, 2, "{out}: {err}");
        assert!(err.contains(said) && err.lines().count() == 1, "{out}: {err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{out}: a launch ran first");
    }
    assert_eq!(std::fs::read_to_string(&a_file).unwrap(), "mine");
}
