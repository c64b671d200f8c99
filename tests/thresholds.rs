//! `--fail-if` thresholds for pipelines: judged on the lab, whose latency is known (it sleeps
//! 20 ms per request, so no request can take less), and as regression gates between two stored
//! runs of known rate. Every bound is far from the known value so a busy machine cannot flip it.

use serde_json::Value;

use crate::support::lab::Lab;
use crate::support::{bench_json, float, webtune};

fn lab_20ms() -> Lab {
    Lab::start(&["--workers", "4", "--io-wait", "20ms"])
}

/// Two connections, 40 requests, each threshold after --fail-if.
fn lab_load<'a>(url: &'a str, thresholds: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["-c", "2", "-n", "40", url];
    args.extend(thresholds.iter().flat_map(|t| ["--fail-if", t]));
    args
}

/// The judged thresholds of a JSON report, as (expr, value, unit, pass).
fn judged(v: &Value) -> Vec<(String, Option<f64>, String, bool)> {
    v["thresholds"]
        .as_array()
        .unwrap_or_else(|| panic!("no thresholds in {v:#}"))
        .iter()
        .map(|t| {
            (
                t["expr"].as_str().unwrap().to_string(),
                t["value"].as_f64(),
                t["unit"].as_str().unwrap().to_string(),
                t["pass"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_threshold_that_holds_fails_the_run_with_exit_3() {
    let lab = lab_20ms();
    let url = lab.url("/");
    // Two connections, 20 ms each request at the least: at most 100 requests/s.
    let (v, run) = bench_json(&lab_load(&url, &["p99 > 5ms", "rps > 1000", "errors > 0", "ttfb.min < 20ms"]));
    assert_eq!(run.code, 3, "{}", run.stderr);
    let t = judged(&v);
    assert_eq!(t.len(), 4, "{t:?}");
    let (expr, p99, unit, pass) = &t[0];
    assert_eq!((expr.as_str(), unit.as_str(), *pass), ("p99 > 5ms", "ms", false));
    assert_eq!(p99.unwrap(), float(&v, "/result/latency_ms/total/p99"));
    assert!(p99.unwrap() >= 20.0, "{t:?}");
    let (_, rps, unit, pass) = &t[1];
    assert_eq!((unit.as_str(), *pass, *rps), ("req/s", true, Some(float(&v, "/result/requests_per_s"))));
    assert!(rps.unwrap() <= 101.0, "{t:?}");
    assert_eq!(t[2], ("errors > 0".into(), Some(0.0), "requests".into(), true));
    let (_, ttfb_min, _, pass) = &t[3];
    assert!(*pass && ttfb_min.unwrap() >= 20.0, "{t:?}");
    assert!(run.stderr.is_empty(), "{}", run.stderr);

    // Merged reports (runs from several machines) are judged anew: the merge of two runs
    // alike (the second as another machine's, started a moment later) has the same p99.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.json");
    std::fs::write(&file, v.to_string()).unwrap();
    let mut other = v.clone();
    other["started_at"] = Value::from("2000-01-01T00:00:00.001Z");
    let other_file = dir.path().join("b.json");
    std::fs::write(&other_file, other.to_string()).unwrap();
    let (file, other_file) = (file.to_str().unwrap(), other_file.to_str().unwrap());
    let run = webtune(&["merge", "--json", file, other_file, "--fail-if", "p99 > 5ms", "--fail-if", "errors > 0"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    let merged: Value = serde_json::from_str(&run.stdout).unwrap();
    crate::support::assert_valid(&merged);
    let t = judged(&merged);
    assert_eq!((t[0].1, t[0].3), (Some(float(&v, "/result/latency_ms/total/p99")), false), "{t:?}");
    assert_eq!(t[1], ("errors > 0".into(), Some(0.0), "requests".into(), true));
}

#[test]
fn thresholds_that_do_not_hold_pass_with_exit_0_and_print_after_the_report() {
    let lab = lab_20ms();
    let url = lab.url("/");
    let mut args = vec!["bench", "--quiet"];
    args.extend(lab_load(&url, &["p99 > 5s", "errors > 1%", "rps < 1"]));
    let run = webtune(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let tail: Vec<&str> = run.stdout.lines().rev().take(4).collect();
    assert_eq!(tail[3], "Thresholds (--fail-if: the run fails when one holds):", "{}", run.stdout);
    assert!(tail[2].starts_with("  pass  p99 > 5s     measured ") && tail[2].ends_with(" ms"), "{}", run.stdout);
    assert_eq!(tail[1], "  pass  errors > 1%  measured 0.000% of requests", "{}", run.stdout);
    assert!(tail[0].starts_with("  pass  rps < 1      measured ") && tail[0].ends_with(" req/s"), "{}", run.stdout);
}

#[test]
fn a_bad_threshold_is_one_line_and_exit_2_before_any_load() {
    // Port 9 (discard) is closed on loopback: had a request been made, it would show.
    for (expr, says) in [
        ("p98 > 5ms", "unknown metric \"p98\" (valid: rps, errors, non2xx, or a latency: min, mean"),
        ("p99 > 50", "give the latency with its unit, e.g. 50ms"),
        ("p99 = 5ms", "OP one of < <= > >="),
        ("errors > 200%", "0% to 100%"),
        ("rps < -5%", "a signed change needs two runs: webtune compare A B --fail-if 'rps < -5%'"),
    ] {
        let run = webtune(&["bench", "-n", "1", "http://127.0.0.1:9/", "--fail-if", expr]);
        assert_eq!(run.code, 2, "{expr}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{expr}: {}", run.stderr);
        assert!(run.stderr.starts_with("webtune: --fail-if: "), "{expr}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{expr}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{expr}: no load, no report: {}", run.stdout);
    }
}

/// The id of the newest stored bench run on `url`.
fn newest_run(url: &str) -> i64 {
    let run = webtune(&["runs", "--json", "--kind", "bench", "--target", url]);
    let rows: Value = serde_json::from_str::<Value>(&run.stdout).unwrap()["runs"].take();
    rows[0]["id"].as_i64().unwrap_or_else(|| panic!("no run on {url}: {rows}"))
}

#[test]
fn compare_gates_a_regression_between_two_stored_runs_with_exit_3() {
    let lab = Lab::start(&["--workers", "4"]);
    // The slow run has one connection and requests that sleep 100 ms: at most 10 requests/s,
    // however idle the machine. The fast one sleeps not at all (hundreds per second here; even
    // a machine so busy that it managed 20/s keeps the change below -50%).
    let (_, run) = bench_json(&["-c", "4", "-n", "400", &lab.url("/")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let fast = newest_run(&lab.url("/"));
    let (_, run) = bench_json(&["-c", "1", "-n", "5", &lab.url("/?io=100ms")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let slow = newest_run(&lab.url("/?io=100ms"));
    assert!(slow > fast);
    let (fast, slow) = (fast.to_string(), slow.to_string());

    let run = webtune(&["compare", &fast, &slow, "--json", "--fail-if", "rps < -5%", "--fail-if", "rps > +5%"]);
    assert_eq!(run.code, 3, "{}\n{}", run.stderr, run.stdout);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    let t = judged(&v);
    let (expr, change, unit, pass) = &t[0];
    assert_eq!((expr.as_str(), unit.as_str(), *pass), ("rps < -5%", "% change", false));
    assert!(change.unwrap() < -50.0, "{t:?}");
    assert_eq!(v["rows"][0]["metric"], "requests/s");
    assert!((v["rows"][0]["change_pct"].as_f64().unwrap() - change.unwrap()).abs() < 1e-9);
    assert!(t[1].3, "a fall is no rise: {t:?}");

    // The other way round it rose: it passes, and says so in text.
    let run = webtune(&["compare", &slow, &fast, "--fail-if", "rps < -5%", "--fail-if", "p99 > 10s"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("  pass  rps < -5%  measured +"), "{}", run.stdout);
    assert!(run.stdout.contains("  pass  p99 > 10s  measured "), "{}", run.stdout);

    let run = webtune(&["compare", &slow, &fast, "--fail-if", "rps < 5%"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("signed (+10%, -5%)"), "{}", run.stderr);
}

#[test]
fn non2xx_counts_the_responses_that_are_not_2xx() {
    let Some(ng) = crate::support::nginx::Nginx::start("", "") else { return };
    ng.write_file("here.html", b"here");
    let (here, gone) = (ng.url("/here.html"), ng.url("/gone.html"));
    let (v, run) = bench_json(&["-c", "2", "-n", "20", &gone, "--fail-if", "non2xx > 1%", "--fail-if", "errors > 0"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!(judged(&v)[0], ("non2xx > 1%".into(), Some(100.0), "%".into(), false));
    assert_eq!(judged(&v)[1], ("errors > 0".into(), Some(0.0), "requests".into(), true), "a 404 is an answer");
    let (v, run) = bench_json(&["-c", "2", "-n", "20", &here, "--fail-if", "non2xx > 0"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(judged(&v)[0], ("non2xx > 0".into(), Some(0.0), "requests".into(), true));
}
