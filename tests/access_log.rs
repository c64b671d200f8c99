//! A server's access log as the workload: its mix (nginx's own log of what was sent), its
//! account of what was left out, its rate and its gaps; and `webtune urls --from-log`.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use webtune::bench::access_log::grouped;

use crate::support::nginx::Nginx;
use crate::support::{bench_json, float, num, webtune, write_lab_target};

/// nginx logs each request's time (ms), method and target here, beside its usual log.
const PATHS_LOG: &str = "log_format paths '$msec $request_method $request_uri';";

fn start_nginx() -> Option<Nginx> {
    let ng = Nginx::start("access_log paths.log paths;", PATHS_LOG)?;
    for (name, size) in [("a.html", 100), ("b.html", 2000), ("c.html", 30000)] {
        ng.write_file(name, &vec![b'x'; size]);
    }
    Some(ng)
}

/// (ms since the epoch, method, target) of each request nginx logged, once it has `expect`.
fn sent(ng: &Nginx, expect: usize) -> Vec<(f64, String, String)> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(ng.path("paths.log")).unwrap_or_default();
        let lines: Vec<(f64, String, String)> = text
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (f[0].parse::<f64>().unwrap() * 1000.0, f[1].to_string(), f[2].to_string())
            })
            .collect();
        if lines.len() >= expect || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A combined-format line at `t` seconds after 2026-11-20 10:00:00 UTC.
fn combined(t: u64, method: &str, target: &str, status: u16) -> String {
    format!(
        "203.0.113.9 - - [20/Nov/2026:{:02}:{:02}:{:02} +0000] \"{method} {target} HTTP/1.1\" {status} 512 \"-\" \"Mozilla/5.0 (X11)\"",
        10 + t / 3600,
        t / 60 % 60,
        t % 60
    )
}

fn gzip(path: &Path, text: &str) {
    let mut enc = flate2::write::GzEncoder::new(std::fs::File::create(path).unwrap(), flate2::Compression::default());
    enc.write_all(text.as_bytes()).unwrap();
    enc.finish().unwrap();
}

#[test]
fn a_logs_mix_is_replayed_and_what_is_left_out_is_counted_exactly() {
    let Some(ng) = start_nginx() else { return };
    // 2000 lines over 2000 s: 70/20/10 % of the GETs to a, b, c; every 20th a POST, every
    // 33rd a 404 (a POST first when both), and 7 lines that are no log line at all.
    let (mut lines, mut posts, mut missing, mut replayed) = (Vec::new(), 0, 0, 0);
    for i in 0..2000u64 {
        let line = if i % 20 == 0 {
            posts += 1;
            combined(i, "POST", "/a.html", 200)
        } else if i % 33 == 0 {
            missing += 1;
            combined(i, "GET", "/gone.html", 404)
        } else {
            replayed += 1;
            let page = match i % 10 {
                0..=6 => "/a.html",
                7 | 8 => "/b.html?from=log",
                _ => "/c.html",
            };
            combined(i, "GET", page, 200)
        };
        lines.push(line);
    }
    for (at, junk) in [(5, "garbage"), (50, ""), (500, "\u{16}\u{3}\u{1}"), (900, "- - -"), (1500, "[x]")] {
        lines.insert(at, junk.to_string());
    }
    lines.insert(700, "1.2.3.4 - - [not a time] \"GET / HTTP/1.1\" 200 5".into());
    lines.insert(800, "1.2.3.4 - - [20/Nov/2026:10:00:00 +0000] \"GET / HTTP/1.1\"".into());
    let malformed = 6; // the empty line is skipped, not counted
    // The older half rotated and compressed, the newer half as it is.
    let old = ng.path("access.log.2.gz");
    let new = ng.path("access.log.1");
    gzip(&old, &(lines[..1000].join("\n") + "\n"));
    std::fs::write(&new, lines[1000..].join("\n") + "\n").unwrap();

    let base = ng.url("/");
    let (o, n) = (old.to_str().unwrap(), new.to_str().unwrap());
    let requests = 10_000;
    let (v, run) = bench_json(&["--access-log", o, "--access-log", n, "-c", "4", "-n", "10000", "--seed", "3", &base]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(num(&v, "/result/succeeded"), requests);
    let log = &v["options"]["access_log"];
    assert_eq!(log["lines"], 2000 + malformed);
    assert_eq!(log["malformed"], malformed);
    assert_eq!(log["replayed"], replayed);
    assert_eq!(log["left_out_methods"]["POST"], posts);
    assert_eq!(log["left_out_status"], missing);
    assert_eq!(log["distinct"], 3);
    assert_eq!(v["options"]["order"], "weighted");

    // What nginx saw: the three pages in the log's proportions, no POST, nothing else.
    let seen = sent(&ng, requests as usize);
    assert_eq!(seen.len() as u64, requests);
    let share = |target: &str| seen.iter().filter(|(_, _, t)| t == target).count() as f64 * 100.0 / requests as f64;
    let counts = |target: &str| {
        lines.iter().filter(|l| l.contains(&format!("\"GET {target} HTTP/1.1\" 200"))).count() as f64 * 100.0
            / replayed as f64
    };
    for target in ["/a.html", "/b.html?from=log", "/c.html"] {
        let (got, want) = (share(target), counts(target));
        assert!((got - want).abs() <= 2.0, "{target}: {got:.2}% sent, {want:.2}% in the log");
    }
    assert!(seen.iter().all(|(_, m, _)| m == "GET"), "only GETs were logged as replayable");

    // The text says it in one line, exactly.
    let text = webtune(&["bench", "--access-log", o, "--access-log", n, "-c", "2", "-n", "200", &base]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    let account = format!(
        "replaying {} of {} requests: {posts} POST, {missing} non-2xx/3xx left out; {malformed} malformed lines skipped",
        grouped(replayed),
        grouped(replayed + posts + missing)
    );
    assert!(text.stdout.contains(&account), "{account}\n{}", text.stdout);
    // The header names the log's workload, not its first request as if it were all.
    let header =
        format!("URL:                 {base} (the access log's 3 distinct requests, GET and HEAD, by frequency)\n");
    assert!(text.stdout.contains(&header), "{}", text.stdout);

    // The same workload as a URL list, loaded with --urls.
    let list = webtune(&["urls", "--from-log", o, "--from-log", n]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    let entries: Vec<&str> = list.stdout.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(entries.len(), 3, "{}", list.stdout);
    assert!(entries[0].starts_with("/a.html weight="), "{}", list.stdout);
    assert!(list.stdout.contains(&format!("# {account}")), "{}", list.stdout);
    let file = ng.path("urls.txt");
    std::fs::write(&file, &list.stdout).unwrap();
    let (v, run) = bench_json(&["--urls", file.to_str().unwrap(), "-c", "2", "-n", "300", &base]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(v["options"]["order"], "weighted");
}

#[test]
fn rate_log_sends_the_logs_mean_rate_open_loop() {
    let Some(ng) = start_nginx() else { return };
    // 600 requests over the 10 seconds 10:00:00 to 10:00:09: 60 requests/s.
    let lines: Vec<String> = (0..600).map(|i| combined(i / 60, "GET", "/a.html", 200)).collect();
    let log = ng.path("access.log.0");
    std::fs::write(&log, lines.join("\n")).unwrap();
    let l = log.to_str().unwrap();
    let base = ng.url("/");
    for (rate, factor) in [("log", 1.0), ("log*3", 3.0)] {
        let (v, run) = bench_json(&["--access-log", l, "--rate", rate, "-d", "4s", "-c", "50", &base]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let want = 60.0 * factor;
        assert!((float(&v, "/options/rate") - want).abs() < 1e-9, "{}", v["options"]["rate"]);
        assert_eq!(v["options"]["pacing"], "open");
        assert_eq!(v["options"]["access_log"]["mean_rate"], 60.0);
        // What was sent over the run: within 2% of the rate.
        let sent = num(&v, "/result/succeeded") + num(&v, "/result/failed");
        let got = sent as f64 / float(&v, "/result/duration_s");
        assert!((got - want).abs() <= want * 0.02, "{rate}: sent {got:.2}/s, the log's rate x{factor} is {want}");
    }
    // Without a log, or from a log without times: one line, exit 2.
    let r = webtune(&["bench", "--rate", "log", "-d", "1s", &base]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--rate log and --arrival log need --access-log"), "{}", r.stderr);
    let r = webtune(&[
        "bench",
        "--access-log",
        l,
        "--log-format",
        "%h %l %u [%{%d/%b}t] \"%r\" %>s",
        "--rate",
        "log",
        "-d",
        "1s",
        &base,
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("the access log gives no rate"), "{}", r.stderr);
    let r = webtune(&["bench", "--access-log", l, "--rate", "log*x", "-d", "1s", &base]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}

#[test]
fn arrival_log_keeps_the_logs_gaps() {
    let Some(ng) = start_nginx() else { return };
    // Bursts: gaps of 4 ms and 36 ms in turn (mean 20 ms, 50/s), to the millisecond.
    let mut t = 1_795_165_200_000u64;
    let mut lines = Vec::new();
    for i in 0..400 {
        lines.push(format!("{}.{:03} \"GET /a.html HTTP/1.1\" 200", t / 1000, t % 1000));
        t += if i % 2 == 0 { 4 } else { 36 };
    }
    let log = ng.path("timed.log");
    std::fs::write(&log, lines.join("\n")).unwrap();
    let base = ng.url("/");
    let args = |arrival: &'static str| {
        vec!["--access-log", log.to_str().unwrap(), "--log-format", "$msec \"$request\" $status", "--rate", "log"]
            .into_iter()
            .chain(["--arrival", arrival, "-d", "4s", "-c", "20", "--seed", "5"])
            .map(String::from)
            .collect::<Vec<String>>()
    };
    let mut shares = Vec::new();
    for arrival in ["log", "uniform"] {
        let before = sent(&ng, 0).len();
        let mut a = args(arrival);
        a.push(base.clone());
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        let (v, run) = bench_json(&refs);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(v["options"]["arrival"], arrival);
        let total = (num(&v, "/result/succeeded")) as usize;
        let mut times: Vec<f64> = sent(&ng, before + total)[before..].iter().map(|s| s.0).collect();
        times.sort_by(f64::total_cmp);
        let gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
        let short = gaps.iter().filter(|g| **g <= 10.0).count() as f64 / gaps.len() as f64;
        let long = gaps.iter().filter(|g| (28.0..=44.0).contains(*g)).count() as f64 / gaps.len() as f64;
        shares.push((short, long));
    }
    // The log's gaps: half short, half long. Uniform arrivals at the same rate: every gap 20 ms.
    let (short, long) = shares[0];
    assert!((0.40..=0.60).contains(&short) && (0.35..=0.60).contains(&long), "log arrivals: {shares:?}");
    let (short, long) = shares[1];
    assert!(short < 0.1 && long < 0.1, "uniform arrivals: {shares:?}");
}

#[test]
fn bad_logs_and_formats_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.log");
    std::fs::write(&empty, "junk\n").unwrap();
    let e = empty.to_str().unwrap();
    for (args, says) in [
        (vec!["bench", "--access-log", "/nonexistent/access.log", "http://127.0.0.1:9/"], "cannot read access log"),
        (vec!["bench", "--access-log", e, "http://127.0.0.1:9/"], "no GET or HEAD request answered 2xx or 3xx"),
        (vec!["bench", "--access-log", e, "--log-format", "%h %>s", "http://127.0.0.1:9/"], "no request line"),
        (vec!["bench", "--access-log", "/dev/zero", "http://127.0.0.1:9/"], "not a regular file"),
        (vec!["urls", "--from-log", e], "no GET or HEAD request"),
    ] {
        let r = webtune(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
    }
}

#[test]
fn a_tune_loads_the_lab_with_its_log_read_once_from_beside_the_target_file() {
    let dir = tempfile::tempdir().unwrap();
    // 30 requests a second for a minute: three quarters /hello, a quarter waiting 5 ms.
    let lines: Vec<String> =
        (0..1800).map(|i| combined(i / 30, "GET", if i % 4 == 0 { "/hello?io=5ms" } else { "/hello" }, 200)).collect();
    std::fs::write(dir.path().join("lab.log"), lines.join("\n")).unwrap();
    let target = dir.path().join("lab.toml");
    write_lab_target(
        &target,
        "[target.config]\nworkers = 2\n[knobs]\nworkers = [1, 2]\n\
         [load]\naccess_log = \"lab.log\"\nrate = \"log*2\"\nduration = \"1s\"\n",
    );
    let journal = dir.path().join("j.jsonl");
    let r = crate::support::webtune_with_limit(
        &[
            "tune",
            target.to_str().unwrap(),
            "--repeats",
            "1",
            "--max-rounds",
            "2",
            "--json",
            "--journal",
            journal.to_str().unwrap(),
        ],
        Duration::from_secs(120),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("tune: the load is the access log") && r.stderr.contains("replaying 1,800 of 1,800 requests"),
        "{}",
        r.stderr
    );
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let ok = v["points"].as_array().unwrap().iter().filter(|p| p["status"]["status"] == "ok").count();
    assert!(ok >= 2, "{}", v["points"]);
    // An open loop at twice the log's 30/s: no window is served faster than that.
    for p in v["points"].as_array().unwrap().iter().filter(|p| p["status"]["status"] == "ok") {
        let rps = p["samples"][0]["rps"].as_f64().unwrap();
        assert!(rps > 0.0 && rps <= 66.0, "{rps} req/s: {p}");
    }
    // A log that does not read stops the tune before anything starts, at its line.
    std::fs::write(dir.path().join("lab.log"), "junk\n").unwrap();
    let r = webtune(&["tune", target.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("lab.toml:9: ") && r.stderr.contains("no GET or HEAD request"), "{}", r.stderr);
}

#[test]
fn replay_sends_each_target_as_logged_not_as_a_url_library_tidies_it() {
    let Some(ng) = start_nginx() else { return };
    // Dot segments, encoded dots, Apache/nginx's \xHH escapes of raw bytes and \" as logged;
    // what must reach the server: the same bytes, only the raw ones percent-encoded.
    let cases = [
        ("/a/../etc/passwd", "/a/../etc/passwd"),
        ("/s/%2e%2e/x", "/s/%2e%2e/x"),
        (r"/caf\xc3\xa9", "/caf%C3%A9"),
        (r#"/q?x=\"y\""#, "/q?x=%22y%22"),
        ("/b//c/./d", "/b//c/./d"),
    ];
    let lines: Vec<String> = cases.iter().map(|(logged, _)| combined(1, "GET", logged, 200)).collect();
    let log = ng.path("odd.log");
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let l = log.to_str().unwrap();
    let n = cases.len() * 20;
    let (v, run) = bench_json(&["--access-log", l, "-c", "1", "-n", &n.to_string(), "--seed", "1", &ng.url("/")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(v["options"]["access_log"]["distinct"], cases.len());
    let seen: std::collections::BTreeSet<String> = sent(&ng, n).into_iter().map(|(_, _, t)| t).collect();
    let want: std::collections::BTreeSet<String> = cases.iter().map(|(_, wire)| wire.to_string()).collect();
    assert_eq!(seen, want);

    // The same through `urls --from-log` and `bench --urls`: the list holds the wire form,
    // sent as written.
    let list = webtune(&["urls", "--from-log", l]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    for (_, wire) in cases {
        assert!(list.stdout.lines().any(|x| x.starts_with(&format!("{wire} weight="))), "{wire}\n{}", list.stdout);
    }
    // Emptied, not removed: nginx keeps writing to the file it has open.
    std::fs::write(ng.path("paths.log"), "").unwrap();
    let file = ng.path("odd.txt");
    std::fs::write(&file, &list.stdout).unwrap();
    let (_, run) = bench_json(&["--urls", file.to_str().unwrap(), "-c", "1", "-n", &n.to_string(), &ng.url("/")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let seen: std::collections::BTreeSet<String> = sent(&ng, n).into_iter().map(|(_, _, t)| t).collect();
    assert_eq!(seen, want);
}
