//! `webtune mem` and `webtune syscalls` on real servers: the lab, whose costs are set by its
//! flags, and Apache prefork with mod_perl.

use std::time::Duration;

use serde_json::Value;

use crate::support::apache::{Apache, ApacheOptions};
use crate::support::lab::Lab;
use crate::support::{bench_json, webtune};

/// `webtune ARGS`, which must succeed, and its stdout's JSON.
fn json_of(args: &[&str]) -> Value {
    let run = webtune(args);
    assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
    crate::support::json(&run.stdout)
}

fn f(v: &Value, pointer: &str) -> f64 {
    v.pointer(pointer).and_then(Value::as_f64).unwrap_or_else(|| panic!("no number at {pointer} in {v:#}"))
}

fn workers(v: &Value) -> Vec<&Value> {
    v["processes"].as_array().unwrap().iter().filter(|p| p["role"] == "worker").collect()
}

#[test]
fn shared_preload_counted_once_not_per_worker() {
    let lab = Lab::start(&["--workers", "3", "--preload-mb", "64"]);
    bench_json(&["-c", "3", "-n", "30", &lab.url("/")]);
    let pid = lab.pid().to_string();
    let v = json_of(&["mem", "--pid", &pid, "--json", "--budget", "1GiB"]);
    assert_eq!(v["schema"], "webtune.mem.v2");
    crate::support::assert_schema("mem.v2.json", &v);
    let procs = v["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 4, "{v:#}");
    assert_eq!(procs[0]["role"], "parent");
    assert_eq!(procs[0]["pid"].as_i64().unwrap().to_string(), pid);
    assert_eq!(workers(&v).len(), 3);
    let mib = 1024.0;
    // Four processes each map the 64 MiB: RSS counts it four times, PSS once.
    let rss_sum = f(&v, "/totals/rss_sum_kib") / mib;
    let pss_sum = f(&v, "/totals/pss_sum_kib") / mib;
    let formula = f(&v, "/totals/seeds_formula_kib") / mib;
    assert!(rss_sum > 4.0 * 64.0, "rss sum {rss_sum} MiB");
    assert!((64.0..80.0).contains(&pss_sum), "pss sum {pss_sum} MiB");
    // The guide's formula is an estimate of the same truth: near PSS (within 15%; under a
    // loaded suite it was seen 11% over, 79 MiB against 71), nowhere near the RSS sum.
    assert!((formula - pss_sum).abs() < 0.15 * pss_sum, "formula {formula} vs pss {pss_sum}");
    assert!(f(&v, "/rss_sum_overstates_percent") > 200.0);
    for w in workers(&v) {
        assert!(w["shared_kib"].as_u64().unwrap() >= 60 * 1024, "{w:#}");
    }
    // Capacity: the parent's shared memory is paid once, each worker adds its USS.
    let c = &v["capacity"];
    let budget = 1024 * 1024;
    let expect = (budget - c["parent_shared_kib"].as_u64().unwrap() - c["parent_uss_kib"].as_u64().unwrap())
        / c["max_worker_uss_kib"].as_u64().unwrap();
    assert_eq!(c["workers_fit"].as_u64().unwrap(), expect);
    assert_eq!(c["workers_fit_naive"].as_u64().unwrap(), budget / c["max_worker_rss_kib"].as_u64().unwrap());
    assert!(c["workers_fit"].as_u64().unwrap() > 10 * c["workers_fit_naive"].as_u64().unwrap());

    // The same server found by its port.
    let by_port = json_of(&["mem", "--port", &lab.port.to_string(), "--json"]);
    let pids = |v: &Value| {
        let mut p: Vec<i64> = v["processes"].as_array().unwrap().iter().map(|p| p["pid"].as_i64().unwrap()).collect();
        p.sort();
        p
    };
    assert_eq!(pids(&by_port), pids(&v));
}

#[test]
fn leak_slope_matches_the_leak() {
    let lab = Lab::start(&["--workers", "2", "--leak", "64KiB"]);
    bench_json(&["-c", "2", "-n", "20", &lab.url("/")]);
    let v = json_of(&[
        "mem",
        "--pid",
        &lab.pid().to_string(),
        "--url",
        &lab.url("/"),
        "-n",
        "400",
        "--budget",
        "2GiB",
        "--json",
    ]);
    crate::support::assert_schema("mem.v2.json", &v);
    let slope = f(&v, "/growth/uss_kib_per_request");
    assert!((slope - 64.0).abs() <= 6.4, "leak slope {slope} KiB/request, expected 64 +-10%");
    assert_eq!(v["growth"]["requests"], 400);
    let limit = v["growth"]["max_requests_per_worker"].as_u64().unwrap();
    // (2 GiB - parent) / 2 workers, less what a worker holds now, at 64 KiB a request.
    assert!((14_000..17_000).contains(&limit), "max requests per worker {limit}");
}

#[test]
fn dirtying_moves_pages_from_shared_to_private() {
    let lab = Lab::start(&["--workers", "2", "--preload", "64MiB", "--dirty", "32KiB"]);
    bench_json(&["-c", "2", "-n", "10", &lab.url("/")]);
    let v = json_of(&["mem", "--pid", &lab.pid().to_string(), "--url", &lab.url("/"), "-n", "400", "--json"]);
    let gained = f(&v, "/growth/uss_kib_per_request");
    let lost = f(&v, "/growth/shared_lost_kib_per_request");
    assert!((gained - 32.0).abs() <= 3.2, "USS +{gained} KiB/request, expected 32");
    assert!((lost - 32.0).abs() <= 3.2, "shared -{lost} KiB/request, expected 32");
}

#[test]
fn watch_prints_one_sample_per_interval() {
    let lab = Lab::start(&["--workers", "2"]);
    let run = webtune(&["mem", "--pid", &lab.pid().to_string(), "--watch", "200ms", "--count", "3", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let samples: Vec<Value> = run.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(samples.len(), 3);
    assert!(samples.iter().all(|s| s["processes"] == 3));
    let t = f(&samples[2], "/t_s");
    assert!((0.35..1.0).contains(&t), "third sample at {t} s");
}

#[test]
fn mem_selection_errors() {
    for (args, says) in [
        (vec!["mem", "--pid", "2147483646"], "no process 2147483646"),
        (vec!["mem", "--port", "1"], "nothing listens on TCP port 1"),
        (vec!["mem", "--name", "no-such-program-x"], "no process named"),
        (vec!["mem", "--pid", "1", "--memory", "lots"], "--memory"),
        // --budget, its old name, still read.
        (vec!["mem", "--pid", "1", "--budget", "lots"], "--memory"),
        (vec!["mem"], "--pid"),
    ] {
        let run = webtune(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(says) && run.stderr.lines().count() == 1, "{args:?}: {}", run.stderr);
    }
}

#[test]
fn syscalls_per_request_on_the_lab() {
    let lab = Lab::start(&["--workers", "1"]);
    let v = json_of(&["syscalls", "--pid", &lab.pid().to_string(), "--url", &lab.url("/"), "-n", "200", "--json"]);
    assert_eq!(v["schema"], "webtune.syscalls.v1");
    crate::support::assert_schema("syscalls.v1.json", &v);
    assert_eq!(v["requests"], 200);
    let per = |name: &str| {
        v["calls"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .map_or(0.0, |c| c["per_request"].as_f64().unwrap())
    };
    // One read of the request and one write of the response, per request.
    assert!((per("recvfrom") + per("read") - 1.0).abs() < 0.05, "{v:#}");
    assert!((f(&v, "/writes_per_request") - 1.0).abs() < 0.05, "{v:#}");
    assert_eq!(f(&v, "/spawns_per_request"), 0.0);
    assert!(v["flags"].as_array().unwrap().is_empty(), "{v:#}");
    // Nothing is left attached.
    std::thread::sleep(Duration::from_millis(100));
    let status = std::fs::read_to_string(format!("/proc/{}/status", lab.pid())).unwrap();
    assert!(status.contains("TracerPid:\t0"), "{status}");
}

#[test]
fn apache_htaccess_lookups_show_with_allowoverride_all_only() {
    let lookups = |allow: &str| {
        let apache = Apache::start(&ApacheOptions { allow_override: allow, preload_mb: 0, workers: 2 })?;
        let url = apache.url("/a/b/index.html");
        bench_json(&["-c", "2", "-n", "20", &url]);
        let v = json_of(&["syscalls", "--pid", &apache.pid().to_string(), "--url", &url, "-n", "100", "--json"]);
        Some(v)
    };
    let Some(all) = lookups("All") else { return };
    let htaccess: Vec<&Value> = all["missing_files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["path"].as_str().unwrap().ends_with("/.htaccess"))
        .collect();
    // htdocs/.htaccess, htdocs/a/.htaccess and htdocs/a/b/.htaccess, once each per request.
    assert_eq!(htaccess.len(), 3, "{all:#}");
    for m in &htaccess {
        assert!((m["per_request"].as_f64().unwrap() - 1.0).abs() < 0.05, "{m:#}");
    }
    assert!(
        all["flags"].as_array().unwrap().iter().any(|f| f.as_str().unwrap().contains("AllowOverride None")),
        "{all:#}"
    );

    let none = lookups("None").unwrap();
    assert!(
        !none["missing_files"].as_array().unwrap().iter().any(|m| m["path"].as_str().unwrap().ends_with("/.htaccess")),
        "{none:#}"
    );
}

#[test]
fn apache_mod_perl_preload_is_shared() {
    let Some(apache) = Apache::start(&ApacheOptions { allow_override: "None", preload_mb: 48, workers: 3 }) else {
        return;
    };
    bench_json(&["-c", "3", "-n", "60", &apache.url("/perl/hello.pl")]);
    let v = json_of(&["mem", "--port", &apache.port.to_string(), "--json"]);
    let procs = v["processes"].as_array().unwrap();
    assert_eq!(procs[0]["role"], "parent");
    assert_eq!(procs[0]["pid"].as_i64().unwrap(), apache.pid() as i64, "{v:#}");
    assert_eq!(workers(&v).len(), 3, "{v:#}");
    for w in workers(&v) {
        assert!(w["shared_kib"].as_u64().unwrap() >= 48 * 1024, "a worker shares less than the preload: {w:#}");
    }
    assert!(f(&v, "/totals/rss_sum_kib") > 2.5 * f(&v, "/totals/pss_sum_kib"), "{v:#}");
}
