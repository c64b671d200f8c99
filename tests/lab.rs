//! `webtune lab` against known truths: service times, queueing, copy-on-write sharing,
//! recycling cost, spare-worker management, and nothing left behind.

use std::time::{Duration, Instant};

use crate::support::alive;
use crate::support::lab::{Lab, http_get, shared_private_kib};
use crate::support::{bench_json, float, num};

#[test]
fn one_worker_with_10ms_io_serves_100_per_second() {
    let lab = Lab::start(&["--workers", "1", "--io-wait", "10ms"]);
    let (v, _) = bench_json(&["-c", "1", "-d", "2s", &lab.url("/")]);
    let rps = float(&v, "/result/requests_per_s");
    assert!((90.0..=110.0).contains(&rps), "{rps} req/s, expected 100 +-10%");
    let mean = float(&v, "/result/latency_ms/total/mean");
    assert!((10.0..=11.5).contains(&mean), "mean latency {mean} ms, expected ~10");
}

#[test]
fn issue_17_bench_confines_its_client_and_finds_the_servers_cpus() {
    let lab = Lab::start(&["--workers", "1"]);
    let status = std::fs::read_to_string(format!("/proc/{}/status", lab.pid())).unwrap();
    let lab_cpus = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_string();
    let client = lab_cpus.split([',', '-']).next().unwrap().to_string();
    let (v, _) = bench_json(&["-c", "4", "-d", "1s", "--cpus", &format!("client={client}"), &lab.url("/")]);
    // One CPU: one engine thread by default.
    assert_eq!(num(&v, "/options/threads"), 1);
    assert_eq!(v["placement"], serde_json::json!({ "server": lab_cpus, "client": client, "shared": true }));
    let share = float(&v, "/client_cpu/percent_of_machine");
    assert!(share > 0.0 && share <= 100.0, "{share}");
    let warned = v["warnings"].to_string().contains("the client should not run on the server's CPUs");
    assert_eq!(warned, share > 10.0, "{}", v["warnings"]);
}

#[test]
fn ten_clients_on_one_worker_queue() {
    // Without keep-alive each request waits its turn in the listen queue: 10 x 10 ms.
    let lab = Lab::start(&["--workers", "1", "--io-wait", "10ms", "--keepalive", "off"]);
    let (v, _) = bench_json(&["-c", "10", "-d", "3s", &lab.url("/")]);
    let mean = float(&v, "/result/latency_ms/total/mean");
    assert!((85.0..=115.0).contains(&mean), "mean latency {mean} ms, expected ~100");
    let rps = float(&v, "/result/requests_per_s");
    assert!((85.0..=110.0).contains(&rps), "{rps} req/s: one worker still serves ~100/s");
    let status = lab.status();
    assert!(status["all_busy_samples"].as_u64().unwrap() > 0, "{status:#}");
    assert!(lab.stderr().contains("server reached --workers 1"), "{}", lab.stderr());
}

#[test]
fn preloaded_heap_is_shared_then_dirtied_page_by_page() {
    let lab = Lab::start(&["--workers", "2", "--preload-mb", "64", "--keepalive", "off"]);
    // Warm every worker.
    bench_json(&["-c", "2", "-n", "20", &lab.url("/")]);
    let workers = lab.worker_pids();
    assert_eq!(workers.len(), 2);
    for pid in &workers {
        let (shared, _) = shared_private_kib(*pid);
        assert!(shared >= 60 * 1024, "worker {pid} shares only {shared} KiB of a 64 MiB preload");
    }
    // One worker, 40 requests dirtying 256 KiB each: private grows by ~10 MiB.
    let lab = Lab::start(&["--workers", "1", "--preload-mb", "64"]);
    bench_json(&["-c", "1", "-n", "5", &lab.url("/")]);
    let pid = lab.worker_pids()[0];
    let (shared_before, private_before) = shared_private_kib(pid);
    bench_json(&["-c", "1", "-n", "40", &lab.url("/?dirty=256")]);
    let (shared_after, private_after) = shared_private_kib(pid);
    let grown = private_after as f64 - private_before as f64;
    let expected = 40.0 * 256.0;
    assert!((grown - expected).abs() <= expected * 0.1, "private grew {grown} KiB, expected {expected}");
    let lost = shared_before as f64 - shared_after as f64;
    assert!((lost - expected).abs() <= expected * 0.1, "shared fell {lost} KiB, expected {expected}");
}

#[test]
fn recycling_every_request_collapses_throughput() {
    let rps = |max_requests: &str| {
        let lab = Lab::start(&["--workers", "2", "--preload-mb", "64", "--max-requests", max_requests]);
        let (v, _) = bench_json(&["-c", "2", "-d", "2s", &lab.url("/")]);
        (float(&v, "/result/requests_per_s"), lab.status())
    };
    let (never, _) = rps("0");
    let (every, status) = rps("1");
    assert!(never >= 5.0 * every, "max-requests 0: {never}/s, 1: {every}/s; expected at least 5x");
    assert!(status["recycled"].as_u64().unwrap() > 10, "{status:#}");
}

#[test]
fn max_requests_replaces_workers() {
    let lab = Lab::start(&["--workers", "1", "--max-requests", "10"]);
    let (v, _) = bench_json(&["-c", "1", "-n", "35", &lab.url("/")]);
    assert_eq!(num(&v, "/result/succeeded"), 35, "{v:#}");
    std::thread::sleep(Duration::from_millis(300));
    let status = lab.status();
    assert_eq!(status["recycled"], 3, "{status:#}");
    assert_eq!(status["forked"], 4, "{status:#}");
    assert_eq!(status["alive"], 1);
}

#[test]
fn idle_workers_return_within_spare_limits_after_a_burst() {
    let lab = Lab::start(&[
        "--workers",
        "8",
        "--start-workers",
        "2",
        "--min-spare",
        "1",
        "--max-spare",
        "2",
        "--io-wait",
        "50ms",
    ]);
    // A burst: 8 clients for 4 s grows the pool (1, 2, 4 per second).
    let (v, _) = bench_json(&["-c", "8", "-d", "4s", &lab.url("/")]);
    assert!(num(&v, "/result/succeeded") > 0);
    let grown = lab.status()["forked"].as_u64().unwrap();
    assert!(grown > 2, "the pool did not grow during the burst: forked {grown}");
    // After it: extra idle workers retire, one per second.
    let deadline = Instant::now() + Duration::from_secs(12);
    loop {
        let s = lab.status();
        // The status request itself occupies one worker.
        let idle = s["idle"].as_u64().unwrap();
        if (1..=2).contains(&idle) && s["alive"].as_u64().unwrap() <= 3 {
            break;
        }
        assert!(Instant::now() < deadline, "idle workers did not settle in [1, 2]: {s:#}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn query_parameters_override_the_work() {
    let lab = Lab::start(&["--workers", "1", "--body", "10B"]);
    let (v, _) = bench_json(&["-c", "1", "-n", "5", &lab.url("/?io=50ms&body=1234")]);
    assert!(float(&v, "/result/latency_ms/total/min") >= 50.0, "{v:#}");
    assert_eq!(num(&v, "/target/document_length"), 1234);
    let (v, _) = bench_json(&["-c", "1", "-n", "3", &lab.url("/?cpu=soon")]);
    assert_eq!(num(&v, "/result/status/400"), 3, "{v:#}");
}

#[test]
fn server_status_text_and_json() {
    let lab = Lab::start(&["--workers", "3"]);
    bench_json(&["-c", "3", "-n", "30", &lab.url("/")]);
    std::thread::sleep(Duration::from_millis(200));
    let s = lab.status();
    assert_eq!(s["workers_max"], 3);
    assert_eq!(s["alive"], 3);
    // A status request is counted once it has been answered, so the first shows the 30.
    assert_eq!(s["total_requests"], 30, "{s:#}");
    let per_worker: u64 = s["workers"].as_array().unwrap().iter().map(|w| w["requests"].as_u64().unwrap()).sum();
    assert_eq!(per_worker, 30);
    let text = http_get(lab.port, "/server-status");
    assert!(text.contains("workers: 3 alive of 3 max"), "{text}");
    assert!(text.contains("requests: 31 total"), "{text}");
}

#[test]
fn stops_with_all_workers_on_sigterm() {
    let mut lab = Lab::start(&["--workers", "3"]);
    let workers = lab.worker_pids();
    assert_eq!(workers.len(), 3);
    let took = lab.stop();
    assert!(took < Duration::from_secs(3), "took {took:?}");
    for pid in workers {
        assert!(!alive(pid), "worker {pid} outlived the lab");
    }
}

#[test]
fn workers_die_with_a_killed_parent() {
    let mut lab = Lab::start(&["--workers", "3"]);
    let workers = lab.worker_pids();
    lab.child.kill().unwrap();
    lab.child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(3);
    while workers.iter().any(|p| alive(*p)) {
        assert!(Instant::now() < deadline, "workers outlived a SIGKILLed parent");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn bad_lab_flags_are_usage_errors() {
    for (args, says) in [
        (vec!["lab", "--workers", "0"], "--workers must be at least 1"),
        (vec!["lab", "--workers", "2", "--start-workers", "3"], "more than --workers"),
        (vec!["lab", "--min-spare", "5", "--max-spare", "2"], "more than --max-spare"),
        (vec!["lab", "--cpu", "lots"], "--cpu"),
        (vec!["lab", "--listen", "nowhere"], "--listen"),
    ] {
        let run = crate::support::webtune(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(says) && run.stderr.lines().count() == 1, "{args:?}: {}", run.stderr);
    }
}

#[test]
fn pipelined_requests_are_answered_in_order_and_a_leak_too_large_is_refused() {
    use std::io::{Read, Write};
    let lab = Lab::start(&["--workers", "1"]);
    let mut s = std::net::TcpStream::connect(("127.0.0.1", lab.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // Three requests in one write, the second with a body: three answers, in order.
    let pipelined = "GET /?body=1 HTTP/1.1\r\nHost: lab\r\n\r\n\
                     POST /?body=2 HTTP/1.1\r\nHost: lab\r\nContent-Length: 5\r\n\r\nhello\
                     GET /?body=3 HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n";
    s.write_all(pipelined.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).expect("the connection ends after the third answer");
    let lengths: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix("Content-Length: ")).map(str::trim).collect();
    assert_eq!(lengths, ["1", "2", "3"], "{out}");

    // Far more than any request may leak: 400, and the worker stays (its pid answers again).
    let pid_of = |path: &str| {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", lab.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(s, "GET {path} HTTP/1.0\r\nHost: lab\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let pid = out.lines().find_map(|l| l.strip_prefix("X-Worker-Pid: ")).map(|p| p.trim().to_string());
        (out.lines().next().unwrap_or_default().to_string(), pid)
    };
    let (before_status, before) = pid_of("/");
    assert!(before_status.contains("200"), "{before_status}");
    for path in ["/?leak=99999999999", "/?dirty=99999999999", "/?io=1000000"] {
        let (status, _) = pid_of(path);
        assert!(status.contains("400"), "{path}: {status}");
    }
    let (after_status, after) = pid_of("/");
    assert!(after_status.contains("200"), "{after_status}");
    assert_eq!(before, after, "the worker was not replaced");
}
