//! The open loop (--rate, --arrival, --stages): the rate holds, a stalled server shows in the
//! percentiles (no coordinated omission), stages split the results.

use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::support::nginx::Nginx;
use crate::support::{bench_json, float, num, webtune};

fn small_page(ng: &Nginx) -> String {
    ng.write_file("p.html", &[b'x'; 512]);
    ng.url("/p.html")
}

#[test]
fn open_loop_holds_the_rate_uniform_and_poisson() {
    let Some(ng) = Nginx::start("", "") else { return };
    let url = small_page(&ng);
    // Uniform: 1000/s for 3 s is 3000 scheduled starts; all answered on time.
    let (v, run) = bench_json(&["--rate", "1000", "-d", "3", &url]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(v["options"]["pacing"], "open");
    assert_eq!(v["options"]["arrival"], "uniform");
    let scheduled = num(&v, "/result/scheduled");
    assert!((2999..=3000).contains(&scheduled), "scheduled {scheduled}");
    let rate = float(&v, "/result/requests_per_s");
    assert!((rate - 1000.0).abs() <= 10.0, "achieved {rate}/s, asked 1000/s (within 1%)");
    assert_eq!(num(&v, "/result/failed"), 0);
    assert!(v["result"]["late"].is_null(), "nothing waited for a connection: {:#}", v["result"]);
    // Far fewer connections than requests: they are reused when free.
    assert!(num(&v, "/result/connections/opened") < 100);

    let (v, run) = bench_json(&["--rate", "1000", "--arrival", "poisson", "--seed", "42", "-d", "3", &url]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(v["options"]["arrival"], "poisson");
    assert_eq!(num(&v, "/options/seed"), 42);
    // 3000 expected; a Poisson count's sd is sqrt(3000) = 55: 4 sd is 7%.
    let rate = float(&v, "/result/requests_per_s");
    assert!((rate - 1000.0).abs() <= 75.0, "poisson achieved {rate}/s");
}

/// Runs a 5 s bench while nginx is stopped from 2 s to 3 s.
fn stalled_run(args: &[&str], ng: &Nginx) -> serde_json::Value {
    let pid = Pid::from_raw(ng.pid());
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(2));
        kill(pid, Signal::SIGSTOP).unwrap();
        std::thread::sleep(Duration::from_secs(1));
        kill(pid, Signal::SIGCONT).unwrap();
    });
    let (v, run) = bench_json(args);
    stopper.join().unwrap();
    assert_eq!(run.code, 0, "{}", run.stderr);
    v
}

#[test]
fn a_stalled_server_shows_in_open_loop_percentiles_not_in_closed_loop_ones() {
    let Some(ng) = Nginx::start("", "") else { return };
    let url = small_page(&ng);
    let v = stalled_run(&["--rate", "1000", "-d", "5", &url], &ng);
    // A fifth of the requests were due during the stall and waited up to 1 s each: the top
    // 20% spread over 0-1000 ms, so p90 is near 500 ms.
    let p90 = float(&v, "/result/latency_ms/total/p90");
    assert!(p90 >= 300.0, "open loop p90 {p90} ms: {:#}", v["result"]["latency_ms"]);
    let max = float(&v, "/result/latency_ms/total/max");
    assert!(max >= 900.0, "the first request due in the stall waited ~1 s: max {max}");
    let rate = float(&v, "/result/requests_per_s");
    assert!(rate >= 950.0, "the backlog was served after the stall: {rate}/s");

    // The closed loop sends nothing while its 10 clients wait: only 10 requests saw the stall.
    let v = stalled_run(&["-c", "10", "-d", "5", &url], &ng);
    let p90 = float(&v, "/result/latency_ms/total/p90");
    assert!(p90 < 50.0, "closed loop p90 {p90} ms hides the stall");
}

#[test]
fn the_cap_on_connections_makes_requests_late_and_says_so() {
    // The lab's ?io= waits per request, as on a database.
    let lab = crate::support::lab::Lab::start(&["--workers", "8"]);
    // 200/s of 50 ms requests need ~10 connections; with 2, most wait for one.
    let (v, run) = bench_json(&["--rate", "200", "-c", "2", "-d", "2", &lab.url("/?io=50ms")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Two connections serve ~40/s: after the first two, every request waited for one, and
    // most of the 400 due were still waiting at the end.
    let late = num(&v, "/result/late/requests");
    assert!(late + 2 >= num(&v, "/result/succeeded"), "{:#}", v["result"]);
    assert!(num(&v, "/result/in_flight_at_end") > 200, "{:#}", v["result"]);
    assert!(float(&v, "/result/late/max_ms") > 100.0);
    assert!(num(&v, "/result/connections/opened") <= 2 + num(&v, "/result/connections/server_closed_idle"));
    assert!(v["warnings"].to_string().contains("started late"), "{}", v["warnings"]);
}

#[test]
fn stages_ramp_the_rate_and_split_the_results() {
    // No keep-alive limit: every connection opened is a client started.
    let Some(ng) = Nginx::start("keepalive_requests 10000000;", "") else { return };
    let url = small_page(&ng);
    // 0 -> 200/s over 1 s (100 requests), then 200/s for 1 s (200 requests).
    let (v, run) = bench_json(&["--open", "--stages", "1s:200,1s:200", &url]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let stages = v["breakdown"]["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 2, "{:#}", v["breakdown"]);
    let n0 = stages[0]["succeeded"].as_u64().unwrap();
    let n1 = stages[1]["succeeded"].as_u64().unwrap();
    assert!((99..=101).contains(&n0), "ramp stage {n0}");
    assert!((199..=201).contains(&n1), "flat stage {n1}");
    assert_eq!(stages[0]["label"], "1 1s to 200/s");
    assert!((float(&v, "/options/duration_s") - 2.0).abs() < 1e-9);

    // Closed loop: the stages are clients; -c defaults to the highest.
    let (v, run) = bench_json(&["--stages", "1s:2,1s:4", &url]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(num(&v, "/options/connections"), 4);
    assert_eq!(v["options"]["pacing"], "closed");
    assert_eq!(v["breakdown"]["stages"].as_array().unwrap().len(), 2);
    assert!(num(&v, "/result/connections/opened") <= 4, "{:#}", v["result"]["connections"]);
}

#[test]
fn bad_pacing_options_are_one_line_errors() {
    for (args, needle) in [
        (vec!["--rate", "0", "http://127.0.0.1:1/"], "--rate"),
        (vec!["--stages", "10s", "http://127.0.0.1:1/"], "--stages"),
        (vec!["--stages", "1s:0", "http://127.0.0.1:1/"], "every stage"),
        (vec!["--open", "http://127.0.0.1:1/"], "open loop needs"),
        (vec!["--stages", "1s:10", "-c", "5", "http://127.0.0.1:1/"], "highest stage"),
        (vec!["--throttle", "fast", "http://127.0.0.1:1/"], "--throttle"),
        (vec!["--throttle", "1kbps", "--slow-share", "150%", "http://127.0.0.1:1/"], "--slow-share"),
        (vec!["--slow-share", "20%", "http://127.0.0.1:1/"], "--throttle"),
    ] {
        let mut full = vec!["bench"];
        full.extend(args.iter());
        let run = webtune(&full);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.trim().lines().count(), 1, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
    }
}

#[test]
fn a_rate_too_low_for_a_second_arrival_still_runs_the_whole_duration() {
    let Some(ng) = Nginx::start("", "") else { return };
    let url = small_page(&ng);
    // 1e-12/s: one arrival at the start, the next in 31,700 years; 1/s over 2 s: two.
    for (rate, requests) in [("1e-12", 1), ("1", 2)] {
        let started = std::time::Instant::now();
        let (v, run) = bench_json(&["--rate", rate, "-d", "2", &url]);
        let took = started.elapsed();
        assert_eq!(run.code, 0, "{rate}: {}", run.stderr);
        assert_eq!(num(&v, "/result/succeeded"), requests, "{rate}");
        // The window is -d long, and the rate is the requests over it, not over one response.
        let window = float(&v, "/result/duration_s");
        assert!((1.95..2.5).contains(&window), "{rate}: a {window} s window for -d 2");
        assert!(took >= Duration::from_millis(1950), "{rate}: ended after {took:?}");
        let achieved = float(&v, "/result/requests_per_s");
        assert!(achieved <= requests as f64 / 1.9, "{rate}: {achieved}/s from {requests} request(s) in 2 s");
    }
}
