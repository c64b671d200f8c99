//! What bench requests: URL lists, sessions with cookies, scenarios, throttled clients; and
//! `webtune merge` of runs from several machines.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;

use crate::support::nginx::Nginx;
use crate::support::rogue::{Rogue, read_request, response};
use crate::support::{bench_json, float, num, webtune};

#[test]
fn a_url_file_with_blank_lines_and_comments_is_taken_in_turn() {
    let Some(ng) = Nginx::start("", "") else { return };
    ng.write_file("a.html", &[b'a'; 100]);
    ng.write_file("b.html", &[b'b'; 200]);
    let file = ng.path("urls.txt");
    let list = format!(
        "# the pages\n\n{}\n   \n  GET {}  \n# a HEAD, relative to the command line's URL\nHEAD /a.html\n",
        ng.url("/a.html"),
        ng.url("/b.html")
    );
    std::fs::write(&file, list).unwrap();
    let f = file.to_str().unwrap();
    let base = ng.url("/");
    let (v, run) = bench_json(&["--urls", f, "-t", "1", "-c", "3", "-n", "300", &base]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(num(&v, "/result/succeeded"), 300);
    assert_eq!(num(&v, "/result/bytes/body"), 100 * 100 + 100 * 200, "HEAD has no body");
    let parts = v["breakdown"]["requests"].as_array().unwrap();
    let labels: Vec<&str> = parts.iter().map(|p| p["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        [
            format!("GET {}", ng.url("/a.html")),
            format!("GET {}", ng.url("/b.html")),
            format!("HEAD {}", ng.url("/a.html"))
        ]
    );
    for p in parts {
        assert_eq!(p["succeeded"], 100, "{p:#}");
    }
    let log = ng.access_log(300);
    assert_eq!(log.iter().filter(|l| l.method == "HEAD").count(), 100);
    assert_eq!(log.iter().filter(|l| l.body_bytes == 200).count(), 100);
    assert_eq!(v["options"]["order"], "sequential");
    // Pages of 100 and 200 bytes and a HEAD: lengths vary by design, not counted.
    assert_eq!(num(&v, "/result/length_differed"), 0);
    let text = webtune(&["bench", "--urls", f, "-c", "2", "-n", "30", &base]);
    assert!(text.stdout.contains("Length differed:     not compared"), "{}", text.stdout);

    // Random order: every URL is used, the counts add up.
    let (v, run) = bench_json(&["--urls", f, "--order", "random", "--seed", "7", "-n", "300", &base]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let parts = v["breakdown"]["requests"].as_array().unwrap();
    let counts: Vec<u64> = parts.iter().map(|p| p["succeeded"].as_u64().unwrap()).collect();
    assert_eq!(counts.iter().sum::<u64>(), 300);
    assert!(counts.iter().all(|&c| c > 50), "{counts:?}");

    // Another server in the list: one line naming the place.
    std::fs::write(&file, format!("{}\nhttp://127.0.0.2:1/x\n", ng.url("/a.html"))).unwrap();
    let run = webtune(&["bench", "--urls", f, "-n", "10"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("urls.txt:2"), "{}", run.stderr);
    std::fs::write(&file, "# nothing\n\n").unwrap();
    let run = webtune(&["bench", "--urls", f, "-n", "10"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("no URL"), "{}", run.stderr);
}

/// A session-based app: a request without a valid session cookie opens a new session.
fn session_server() -> (Rogue, Arc<AtomicU64>) {
    let sessions = Arc::new(AtomicU64::new(0));
    let count = sessions.clone();
    let server = Rogue::start(move |mut stream, _| {
        while let Some(req) = read_request(&mut stream) {
            let head = String::from_utf8_lossy(&req).to_ascii_lowercase();
            let known = head.lines().any(|l| l.starts_with("cookie:") && l.contains("sid="));
            let out = if known {
                response("200 OK", b"welcome back")
            } else {
                let id = count.fetch_add(1, Ordering::SeqCst);
                let mut r =
                    format!("HTTP/1.1 200 OK\r\nSet-Cookie: sid={id}; Path=/; Max-Age=600; HttpOnly\r\n").into_bytes();
                r.extend_from_slice(b"Set-Cookie: theme=dark; Path=/other\r\nContent-Length: 5\r\n\r\nhello");
                r
            };
            if stream.write_all(&out).is_err() {
                return;
            }
        }
    });
    (server, sessions)
}

#[test]
fn cookies_give_each_client_one_session() {
    let (server, sessions) = session_server();
    let (v, run) = bench_json(&["--cookies", "-c", "5", "-n", "200", &server.url("/app")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(num(&v, "/result/succeeded"), 200);
    assert_eq!(sessions.load(Ordering::SeqCst), 5, "one session per client");
    assert_eq!(v["options"]["cookies"], true);

    // Without a jar every request is a stranger (the seeds' benchmark mistake).
    let (server, sessions) = session_server();
    let (_, run) = bench_json(&["-c", "5", "-n", "200", &server.url("/app")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(sessions.load(Ordering::SeqCst), 200);

    // The jar survives new connections (no keep-alive).
    let (server, sessions) = session_server();
    let (_, run) = bench_json(&["--cookies", "--no-keepalive", "-c", "3", "-n", "60", &server.url("/")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(sessions.load(Ordering::SeqCst), 3);
}

#[test]
fn a_scenario_walks_its_steps_with_think_times() {
    let Some(ng) =
        Nginx::start("location = /login { return 200 \"in\"; }\n location = /home { return 200 \"home page\"; }", "")
    else {
        return;
    };
    ng.write_file("form.html", &[b'f'; 300]);
    let scenario = ng.path("visit.toml");
    std::fs::write(
        &scenario,
        format!(
            "base = \"{}\"\nheaders = {{ X-Client = \"webtune-test\" }}\n\n\
             [[step]]\nname = \"form\"\nurl = \"/form.html\"\n\n\
             [[step]]\nname = \"login\"\nmethod = \"POST\"\nurl = \"/login\"\nbody = \"user=a&pw=b\"\n\
             content_type = \"application/x-www-form-urlencoded\"\n\n\
             [[step]]\nname = \"home\"\nurl = \"/home\"\nthink = \"100ms\"\n",
            ng.url("/")
        ),
    )
    .unwrap();
    let (v, run) = bench_json(&["--scenario", scenario.to_str().unwrap(), "-c", "2", "-d", "2"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let parts = v["breakdown"]["requests"].as_array().unwrap();
    let labels: Vec<&str> = parts.iter().map(|p| p["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["form", "login", "home"]);
    let counts: Vec<u64> = parts.iter().map(|p| p["succeeded"].as_u64().unwrap()).collect();
    // Each of 2 users thinks 100 ms per round: at most 2 s / 100 ms + 1 rounds each.
    assert!(counts[2] <= 2 * 21 && counts[2] >= 2 * 15, "{counts:?}");
    assert!(counts[0] - counts[2] <= 2, "steps run in turn: {counts:?}");
    let log = ng.access_log(counts.iter().sum::<u64>() as usize);
    let posts: Vec<_> = log.iter().filter(|l| l.method == "POST").collect();
    assert_eq!(posts.len() as u64, counts[1]);
    assert!(posts.iter().all(|l| l.content_length == "11"));
    assert_eq!(v["options"]["order"], "scenario");

    // Mistakes in the file: the file and line.
    std::fs::write(&scenario, "[[step]]\nurl = \"/x\"\nthnk = \"1s\"\n").unwrap();
    let run = webtune(&["bench", "--scenario", scenario.to_str().unwrap(), &ng.url("/")]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("visit.toml") && run.stderr.contains("line 3"), "{}", run.stderr);
}

#[test]
fn a_throttled_client_takes_as_long_as_its_bandwidth_says() {
    let Some(ng) = Nginx::start("", "") else { return };
    ng.write_file("10k.bin", &[b'z'; 10 * 1024]);
    // 10 KiB at 33.6 kbps (4200 bytes/s) is 2.44 s, headers and request a little more.
    let (v, run) = bench_json(&["--throttle", "33.6kbps", "-c", "1", "-n", "1", &ng.url("/10k.bin")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let ms = float(&v, "/result/latency_ms/total/max");
    assert!((2160.0..=2640.0).contains(&ms), "throttled fetch took {ms} ms, expected 2400 +-10%");
    assert_eq!(float(&v, "/options/throttle_bytes_per_s"), 4200.0);

    // Half the clients slow: the split shows them apart.
    let (v, run) = bench_json(&[
        "--throttle",
        "336kbps",
        "--slow-share",
        "50%",
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "1",
        &ng.url("/10k.bin"),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let clients = v["breakdown"]["clients"].as_array().unwrap();
    assert_eq!(clients[0]["label"], "fast");
    assert_eq!(clients[1]["label"], "throttled");
    let slow = clients[1]["succeeded"].as_u64().unwrap();
    let fast = clients[0]["succeeded"].as_u64().unwrap();
    assert!((3..=6).contains(&slow), "0.24 s per page at 336 kbps: {slow} in 1 s");
    assert!(fast > 100 * slow, "fast {fast} slow {slow}");
}

fn decode(b64: &str) -> Histogram<u64> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
    Deserializer::new().deserialize(&mut bytes.as_slice()).unwrap()
}

#[test]
fn merge_equals_one_histogram_of_all_requests() {
    let Some(ng) = Nginx::start("", "") else { return };
    ng.write_file("p.html", &[b'p'; 2048]);
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    let mut union: Option<Histogram<u64>> = None;
    for (i, args) in [["-c", "2", "-n", "300"], ["-c", "8", "-n", "500"]].iter().enumerate() {
        let mut a = args.to_vec();
        let url = ng.url("/p.html");
        a.push(&url);
        let (v, run) = bench_json(&a);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let h = decode(v["result"]["histograms"]["total"].as_str().unwrap());
        assert_eq!(h.len(), num(&v, "/result/succeeded"));
        match &mut union {
            Some(u) => u.add(&h).unwrap(),
            None => union = Some(h),
        }
        let f = dir.path().join(format!("run{i}.json"));
        std::fs::write(&f, &run.stdout).unwrap();
        files.push(f.to_str().unwrap().to_string());
    }
    let union = union.unwrap();
    let run = webtune(&["merge", "--json", &files[0], &files[1]]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let m: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    crate::support::assert_valid(&m);
    assert_eq!(num(&m, "/merged_runs"), 2);
    assert_eq!(num(&m, "/result/succeeded"), 800);
    assert_eq!(num(&m, "/result/bytes/body"), 800 * 2048);
    assert_eq!(num(&m, "/options/connections"), 10);
    let ms = |us: u64| us as f64 / 1000.0;
    for (field, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)] {
        let got = float(&m, &format!("/result/latency_ms/total/{field}"));
        assert_eq!(got, ms(union.value_at_quantile(q)), "{field}");
    }
    assert_eq!(float(&m, "/result/latency_ms/total/max"), ms(union.max()));
    let merged = decode(m["result"]["histograms"]["total"].as_str().unwrap());
    assert_eq!(merged.len(), union.len());

    // Text output, and bad input.
    let run = webtune(&["merge", &files[0], &files[1]]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("Merged:              2 runs"), "{}", run.stdout);
    let run = webtune(&["merge", &files[0]]);
    assert_eq!(run.code, 2);
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"schema\": 1}").unwrap();
    let run = webtune(&["merge", &files[0], junk.to_str().unwrap()]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("junk.json") && run.stderr.trim().lines().count() == 1, "{}", run.stderr);
}
