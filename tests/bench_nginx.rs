//! `webtune bench` against a real nginx: exact request, byte and connection counts, checked
//! against nginx's own access log.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::support::nginx::{Nginx, self_signed_cert, self_signed_leaf_cert};
use crate::support::{bench_json, coalesced_figures_add_up, errors, float, num, webtune};

const KIB: usize = 1024;

fn page() -> Vec<u8> {
    (0..KIB).map(|i| b'a' + (i % 26) as u8).collect()
}

fn distinct_connections(ng: &Nginx, expect: usize) -> usize {
    ng.access_log(expect).iter().map(|l| l.connection).collect::<HashSet<_>>().len()
}

#[test]
fn keepalive_reuses_connections_and_counts_exactly() {
    let Some(ng) = Nginx::start("", "") else { return };
    ng.write_file("1k.html", &page());
    let (v, run) = bench_json(&["-c", "4", "-t", "2", "-n", "200", &ng.url("/1k.html")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(num(&v, "/result/succeeded"), 200, "{v:#}");
    assert_eq!(num(&v, "/result/failed"), 0);
    assert_eq!(num(&v, "/result/status/200"), 200);
    assert_eq!(num(&v, "/result/bytes/body"), 200 * KIB as u64);
    assert_eq!(num(&v, "/result/bytes/headers") % 200, 0, "every response has the same head");
    assert_eq!(num(&v, "/target/document_length"), KIB as u64);
    assert!(v.pointer("/target/server").unwrap().as_str().unwrap().starts_with("nginx"));
    assert_eq!(num(&v, "/result/connections/opened"), 4);
    assert_eq!(num(&v, "/result/latency_ms/total/count"), 200);
    assert_eq!(num(&v, "/result/latency_ms/connect/count"), 4);
    let log = ng.access_log(200);
    assert_eq!(log.len(), 200);
    assert!(log.iter().all(|l| l.status == 200 && l.body_bytes == KIB as u64 && l.method == "GET"));
    assert_eq!(distinct_connections(&ng, 200), 4);
}

/// With many clients per thread the engine coalesces its wake-ups; counts stay exact and
/// every phase stays in order (the latencies come from the kernel's receive timestamps).
/// Few clients, a new connection per request, the open loop or --no-coalesce: it does not.
#[test]
fn coalesced_wake_ups_count_exactly_and_are_reported() {
    let Some(ng) = Nginx::start("", "") else { return };
    ng.write_file("1k.html", &page());
    let url = ng.url("/1k.html");
    let (v, run) = bench_json(&["-c", "64", "-t", "1", "-n", "20000", &url]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(v.pointer("/options/coalesce"), Some(&serde_json::Value::Bool(true)));
    assert_eq!(num(&v, "/result/succeeded"), 20000);
    assert_eq!(num(&v, "/result/bytes/body"), 20000 * KIB as u64);
    assert_eq!(num(&v, "/result/connections/opened"), 64);
    assert_eq!(ng.access_log(20000).len(), 20000);
    coalesced_figures_add_up(&v, 20000);
    let text = webtune(&["bench", "--quiet", "-c", "64", "-t", "1", "-n", "5000", &url]);
    let line = text.stdout.lines().find(|l| l.starts_with("Wake-ups:")).unwrap_or_default();
    assert!(line.contains("% of responses, which waited") || line.contains("not coalesced"), "{}", text.stdout);
    for (args, why) in [
        (vec!["-c", "8", "-t", "1"], "8 clients"),
        (vec!["-c", "64", "-t", "1", "--no-coalesce"], "--no-coalesce"),
        (vec!["-c", "64", "-t", "1", "--no-keepalive"], "--no-keepalive"),
        (vec!["-c", "64", "-t", "1", "--rate", "2000"], "open loop"),
    ] {
        let mut full = args.clone();
        full.extend(["-n", "500", &url]);
        crate::support::assert_not_coalesced(&full, why);
    }
}

#[test]
fn no_keepalive_opens_a_connection_per_request() {
    let Some(ng) = Nginx::start("", "") else { return };
    ng.write_file("1k.html", &page());
    let (v, _) = bench_json(&["-c", "4", "-n", "100", "--no-keepalive", &ng.url("/1k.html")]);
    assert_eq!(num(&v, "/result/succeeded"), 100, "{v:#}");
    assert_eq!(num(&v, "/result/connections/opened"), 100);
    assert_eq!(num(&v, "/result/latency_ms/connect/count"), 100);
    assert_eq!(v.pointer("/options/keepalive").unwrap(), false);
    assert_eq!(distinct_connections(&ng, 100), 100);
}

#[test]
fn server_keepalive_limit_is_not_an_error() {
    // nginx says "Connection: close" on the 10th response of each connection.
    let Some(ng) = Nginx::start("keepalive_requests 10;", "") else { return };
    ng.write_file("1k.html", &page());
    let (v, _) = bench_json(&["-c", "2", "-n", "100", &ng.url("/1k.html")]);
    assert_eq!(num(&v, "/result/succeeded"), 100, "{v:#}");
    assert_eq!(num(&v, "/result/failed"), 0);
    // Ten per connection; the two connections need not end the run in step, so 10 or 11.
    let opened = num(&v, "/result/connections/opened");
    assert!((10..=11).contains(&opened), "{opened} connections");
    assert_eq!(distinct_connections(&ng, 100) as u64, opened);
}

#[test]
fn head_has_no_body() {
    let Some(ng) = Nginx::start("", "") else { return };
    ng.write_file("1k.html", &page());
    let (v, _) = bench_json(&["-c", "2", "-n", "20", "-m", "HEAD", &ng.url("/1k.html")]);
    assert_eq!(num(&v, "/result/succeeded"), 20, "{v:#}");
    assert_eq!(num(&v, "/result/bytes/body"), 0);
    assert_eq!(num(&v, "/result/connections/opened"), 2, "HEAD responses keep the connection");
    assert!(ng.access_log(20).iter().all(|l| l.method == "HEAD"));
}

#[test]
fn post_body_from_file_and_headers_reach_the_server() {
    let Some(ng) = Nginx::start("location = /echo { return 200 \"$http_x_test\"; }", "") else { return };
    let body = ng.path("body.txt");
    std::fs::write(&body, vec![b'x'; 3000]).unwrap();
    // A POST to a static file: nginx reads the body and answers 405.
    ng.write_file("1k.html", &page());
    let (v, _) =
        bench_json(&["-c", "2", "-n", "10", "-p", body.to_str().unwrap(), "-T", "text/plain", &ng.url("/1k.html")]);
    assert_eq!(num(&v, "/result/status/405"), 10, "{v:#}");
    let log = ng.access_log(10);
    assert!(log.iter().all(|l| l.method == "POST" && l.content_length == "3000"), "the body's length is announced");

    let (v, _) = bench_json(&["-c", "1", "-n", "3", "-H", "X-Test: hello-there", &ng.url("/echo")]);
    assert_eq!(num(&v, "/target/document_length"), "hello-there".len() as u64, "{v:#}");
}

#[test]
fn chunked_gzip_responses() {
    // nginx compresses on the fly and streams the result chunked (no Content-Length).
    let Some(ng) = Nginx::start("", "gzip on; gzip_min_length 1; gzip_types text/plain;") else { return };
    ng.write_file("big.html", &page().repeat(20));
    let (v, _) = bench_json(&["-c", "2", "-n", "20", "-H", "Accept-Encoding: gzip", &ng.url("/big.html")]);
    assert_eq!(num(&v, "/result/succeeded"), 20, "{v:#}");
    let body = num(&v, "/result/bytes/body");
    assert!(body < 20 * 20 * KIB as u64 / 4, "compressed body expected, got {body} bytes");
    assert_eq!(num(&v, "/result/length_differed"), 0);
    assert_eq!(num(&v, "/result/connections/opened"), 2, "chunked responses keep the connection");
}

#[test]
fn https_with_and_without_verification() {
    let dir = tempfile::tempdir().unwrap();
    let Some((cert, key)) = self_signed_cert(dir.path()) else { return };
    let tls = format!(
        "listen 127.0.0.1:{{TLS}} ssl; ssl_certificate {}; ssl_certificate_key {};",
        cert.display(),
        key.display()
    );
    let tls_port = crate::support::nginx::free_port();
    let Some(ng) = Nginx::start(&tls.replace("{TLS}", &tls_port.to_string()), "") else { return };
    ng.write_file("1k.html", &page());
    let url = format!("https://localhost:{tls_port}/1k.html");
    let (v, run) = bench_json(&["-c", "2", "-n", "20", "--insecure", &url]);
    assert_eq!(run.code, 0, "{v:#}");
    assert_eq!(num(&v, "/result/succeeded"), 20);
    assert_eq!(num(&v, "/result/bytes/body"), 20 * KIB as u64);
    assert_eq!(num(&v, "/result/connections/opened"), 2);

    // A self-signed certificate does not verify against the public roots.
    let (v, run) = bench_json(&["-c", "1", "-n", "2", &url]);
    assert_eq!(errors(&v, "tls"), 2, "{v:#}");
    assert_eq!(run.code, 1);
}

#[test]
fn duration_bound_run_and_hdr_log() {
    let Some(ng) = Nginx::start("", "") else { return };
    ng.write_file("1k.html", &page());
    let log = ng.path("latency.hlog");
    let (v, _) = bench_json(&["-c", "4", "-d", "2s", "--hdr-log", log.to_str().unwrap(), &ng.url("/1k.html")]);
    let took = float(&v, "/result/duration_s");
    assert!((took - 2.0).abs() < 0.1, "duration {took}");
    let succeeded = num(&v, "/result/succeeded");
    assert!(succeeded > 100, "{v:#}");
    let samples = num(&v, "/reply_rate/samples");
    assert!((1..=2).contains(&samples), "one reply-rate sample per whole second: {samples}");

    // The log decodes, and its intervals add up to every successful request.
    let text = std::fs::read(&log).unwrap();
    assert!(String::from_utf8_lossy(&text).contains("#[StartTime: "));
    let mut deserializer = hdrhistogram::serialization::Deserializer::new();
    let mut total = 0;
    let mut intervals = 0;
    for item in hdrhistogram::serialization::interval_log::IntervalLogIterator::new(&text) {
        if let hdrhistogram::serialization::interval_log::LogEntry::Interval(h) = item.unwrap() {
            let decoded = base64_decode(h.encoded_histogram());
            let hist: hdrhistogram::Histogram<u64> = deserializer.deserialize(&mut decoded.as_slice()).unwrap();
            total += hist.len();
            intervals += 1;
        }
    }
    assert_eq!(total, succeeded, "the log's intervals hold every request");
    assert!((2..=4).contains(&intervals), "{intervals} intervals for a 2 s run");
}

#[test]
fn ctrl_c_ends_the_run_with_its_results() {
    let Some(ng) = Nginx::start("", "") else { return };
    ng.write_file("1k.html", &page());
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_webtune"))
        .env("WEBTUNE_DB", crate::support::test_db())
        .args(["bench", "--json", "--quiet", "-c", "2", "-d", "30s", &ng.url("/1k.html")])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let sent = Instant::now();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(sent.elapsed() < Duration::from_secs(3), "stopped {:?} after SIGINT", sent.elapsed());
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    crate::support::assert_valid(&v);
    assert_eq!(v.pointer("/interrupted").unwrap(), true);
    assert!(num(&v, "/result/succeeded") > 0);
    let took = float(&v, "/result/duration_s");
    assert!((1.0..3.0).contains(&took), "duration covers the time until Ctrl-C: {took}");
}

#[test]
fn file_descriptor_limit_is_raised_or_reported() {
    let Some(ng) = Nginx::start("", "") else { return };
    ng.write_file("1k.html", &page());
    let url = ng.url("/1k.html");
    // A soft limit below what -c 500 needs is raised up to the hard limit.
    let run = webtune_with_nofile(&["bench", "--json", "--quiet", "-c", "500", "-n", "1500", &url], 256, 4096);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(num(&v, "/result/succeeded"), 1500, "{v:#}");
    assert_eq!(num(&v, "/result/connections/opened"), 500);
    // A hard limit below it is a clear error.
    let run = webtune_with_nofile(&["bench", "--quiet", "-c", "500", "-n", "500", &url], 256, 256);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("hard limit is 256"), "{}", run.stderr);
}

fn webtune_with_nofile(args: &[&str], soft: u64, hard: u64) -> crate::support::Run {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_webtune"));
    cmd.env("WEBTUNE_DB", crate::support::test_db());
    cmd.args(args);
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, soft, hard)
                .map_err(std::io::Error::from)
        });
    }
    let out = cmd.output().unwrap();
    crate::support::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

/// TLS failures say why, on the error line and in the report; a certificate that does not
/// verify hints at --insecure, and nothing else does.
#[test]
fn tls_failures_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let Some((cert, key)) = self_signed_cert(dir.path()) else { return };
    let Some((leaf, leaf_key)) = self_signed_leaf_cert(dir.path(), "leaf-") else { return };
    let free = crate::support::nginx::free_port;
    let (tls_port, old_tls_port, leaf_port) = (free(), free(), free());
    // More TLS ports: one that offers only TLS 1.0, which webtune (rustls) never speaks; one
    // whose certificate is not a CA's.
    let server = format!(
        "listen 127.0.0.1:{tls_port} ssl; ssl_certificate {c}; ssl_certificate_key {k};",
        c = cert.display(),
        k = key.display()
    );
    let old = format!(
        "server {{ listen 127.0.0.1:{old_tls_port} ssl; ssl_certificate {c}; ssl_certificate_key {k}; ssl_protocols TLSv1; }}\n\
         server {{ listen 127.0.0.1:{leaf_port} ssl; ssl_certificate {lc}; ssl_certificate_key {lk}; }}",
        c = cert.display(),
        k = key.display(),
        lc = leaf.display(),
        lk = leaf_key.display(),
    );
    let Some(ng) = Nginx::start(&server, &old) else { return };
    ng.write_file("1k.html", &page());
    let cases = [
        // Self-signed: the certificate does not verify against the public roots.
        (format!("https://localhost:{tls_port}/1k.html"), "certificate is self-signed", true),
        (format!("https://localhost:{leaf_port}/1k.html"), "certificate is not trusted: its issuer is unknown", true),
        // https:// to the plain HTTP port: nginx answers in plain text.
        (ng.url("/1k.html").replace("http://", "https://"), "did not answer in TLS", false),
        (format!("https://localhost:{old_tls_port}/1k.html"), "the server refused the TLS handshake", false),
    ];
    for (url, says, hint) in cases {
        let (v, run) = bench_json(&["-c", "1", "-n", "3", &url]);
        assert_eq!(errors(&v, "tls"), 3, "{url}: {v:#}");
        let why = v["target"]["tls_failure"].as_str().unwrap_or_else(|| panic!("{url}: no reason: {v:#}"));
        assert!(why.contains(says), "{url}: {why}");
        assert_eq!(why.contains("--insecure"), hint, "{url}: {why}");
        assert_eq!(run.code, 1);
        assert_eq!(run.stderr.trim(), format!("webtune: no request succeeded: {why}"), "{url}");
        eprintln!("{url}: {why}");
    }
    // The text report says it too.
    let run = webtune(&["bench", "--quiet", "-c", "1", "-n", "1", &format!("https://localhost:{tls_port}/1k.html")]);
    assert!(run.stdout.contains("TLS failure:         the server's certificate is self-signed"), "{}", run.stdout);
}
