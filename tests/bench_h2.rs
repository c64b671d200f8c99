//! `webtune bench --h2`: HTTP/2 against a real nginx (h2c with prior knowledge, and TLS with
//! ALPN), its access log counting HTTP/2.0 requests exactly; and against a hostile server
//! that resets streams, sends GOAWAY, floods CONTINUATIONs or never answers.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::support::nginx::{Nginx, free_port, self_signed_cert};
use crate::support::rogue::{Rogue, h2};
use crate::support::{bench_json, coalesced_figures_add_up, errors, float, num};

const KIB: usize = 1024;

fn page() -> Vec<u8> {
    (0..KIB).map(|i| b'a' + (i % 26) as u8).collect()
}

/// nginx 1.22 speaks h2c with prior knowledge on a listener marked http2.
fn h2c_nginx(server_extra: &str) -> Option<Nginx> {
    let ng = Nginx::start_listening("http2", server_extra, "")?;
    ng.write_file("1k.html", &page());
    Some(ng)
}

#[test]
fn h2c_with_streams_counts_exactly() {
    let Some(ng) = h2c_nginx("") else { return };
    let (v, run) = bench_json(&["--h2", "--streams", "10", "-c", "4", "-t", "2", "-n", "2000", &ng.url("/1k.html")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(num(&v, "/result/succeeded"), 2000, "{v:#}");
    assert_eq!(num(&v, "/result/failed"), 0);
    assert_eq!(num(&v, "/result/status/200"), 2000);
    assert_eq!(num(&v, "/result/bytes/body"), 2000 * KIB as u64);
    assert_eq!(num(&v, "/result/connections/opened"), 4);
    assert_eq!(num(&v, "/result/latency_ms/total/count"), 2000);
    assert_eq!(num(&v, "/result/latency_ms/connect/count"), 4, "one connect per connection");
    assert_eq!(num(&v, "/target/document_length"), KIB as u64);
    assert!(v.pointer("/target/server").unwrap().as_str().unwrap().starts_with("nginx"), "{v:#}");
    let log = ng.access_log(2000);
    assert_eq!(log.len(), 2000);
    assert!(log.iter().all(|l| l.protocol == "HTTP/2.0" && l.status == 200 && l.body_bytes == KIB as u64));
    assert_eq!(log.iter().map(|l| l.connection).collect::<HashSet<_>>().len(), 4);
    // Ten streams at once: some connection carried several requests before the first ended.
    let p50 = float(&v, "/result/latency_ms/total/p50");
    assert!(p50 > 0.0, "{v:#}");
}

/// nginx ends each connection with a graceful GOAWAY after 50 requests; streams it left
/// unprocessed go again on a new connection: no request is lost or failed.
#[test]
fn graceful_goaway_at_the_servers_limit_is_not_an_error() {
    let Some(ng) = h2c_nginx("keepalive_requests 50;") else { return };
    let (v, run) = bench_json(&["--h2", "--streams", "5", "-c", "2", "-n", "500", &ng.url("/1k.html")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(num(&v, "/result/succeeded"), 500, "{v:#}");
    assert_eq!(num(&v, "/result/failed"), 0);
    let opened = num(&v, "/result/connections/opened");
    assert!((10..=12).contains(&opened), "{opened} connections for 500 requests at 50 each");
    let log = ng.access_log(500);
    assert_eq!(log.len(), 500, "nginx served exactly the requests counted");
}

/// A body and extra headers go out in HTTP/2 frames; HEAD has no body.
#[test]
fn post_body_headers_and_head_over_h2() {
    let Some(ng) = h2c_nginx("location = /echo { return 200 \"$http_x_test\"; }") else { return };
    let body = ng.path("body.txt");
    std::fs::write(&body, vec![b'x'; 3000]).unwrap();
    let (v, _) = bench_json(&[
        "--h2",
        "-c",
        "2",
        "-n",
        "10",
        "-p",
        body.to_str().unwrap(),
        "-T",
        "text/plain",
        &ng.url("/1k.html"),
    ]);
    // A POST to a static file: nginx reads the body and answers 405.
    assert_eq!(num(&v, "/result/status/405"), 10, "{v:#}");
    let log = ng.access_log(10);
    assert!(log.iter().all(|l| l.method == "POST" && l.content_length == "3000"), "the body's length is announced");

    let (v, _) = bench_json(&["--h2", "-c", "1", "-n", "3", "-H", "X-Test: hello-there", &ng.url("/echo")]);
    assert_eq!(num(&v, "/target/document_length"), "hello-there".len() as u64, "{v:#}");

    let (v, _) = bench_json(&["--h2", "--streams", "3", "-c", "1", "-n", "9", "-m", "HEAD", &ng.url("/1k.html")]);
    assert_eq!(num(&v, "/result/succeeded"), 9, "{v:#}");
    assert_eq!(num(&v, "/result/bytes/body"), 0);
    assert!(ng.access_log(22).iter().filter(|l| l.method == "HEAD").all(|l| l.protocol == "HTTP/2.0"));
}

/// Several URLs on connections that keep going: each connection's first request puts the
/// fields all requests share in nginx's HPACK table and the rest name them by index (a
/// wrong index is a COMPRESSION_ERROR, a failed run); nginx sees every header whole.
#[test]
fn requests_share_their_common_headers_through_the_servers_table() {
    let Some(ng) = h2c_nginx("location /echo/ { return 200 \"$http_x_test|$http_user_agent|$host|$uri\"; }") else {
        return;
    };
    let file = ng.path("urls.txt");
    std::fs::write(&file, format!("{}\n{}\n", ng.url("/echo/a"), ng.url("/echo/bbb"))).unwrap();
    let (v, run) = bench_json(&[
        "--h2",
        "--streams",
        "5",
        "-c",
        "2",
        "-t",
        "1",
        "-n",
        "400",
        "-H",
        "X-Test: shared-value",
        "--urls",
        file.to_str().unwrap(),
        &ng.url("/"),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(num(&v, "/result/succeeded"), 400, "{v:#}");
    assert_eq!(num(&v, "/result/failed"), 0);
    assert_eq!(num(&v, "/result/connections/opened"), 2);
    let agent = concat!("webtune/", env!("CARGO_PKG_VERSION"));
    let body = |uri: &str| format!("shared-value|{agent}|127.0.0.1|{uri}").len() as u64;
    assert_eq!(num(&v, "/result/bytes/body"), 200 * body("/echo/a") + 200 * body("/echo/bbb"), "{v:#}");
    let log = ng.access_log(400);
    assert!(log.iter().all(|l| l.protocol == "HTTP/2.0" && l.status == 200));
}

/// Many streams on one thread: wake-ups are coalesced as over HTTP/1.1 (each stream a
/// client), counts stay exact and every latency phase stays in order (they come from the
/// kernel's receive timestamps). Too few streams or --no-coalesce: no pauses.
#[test]
fn coalesced_h2_wake_ups_count_exactly_and_are_reported() {
    let Some(ng) = h2c_nginx("keepalive_requests 100000;") else { return };
    let url = ng.url("/1k.html");
    let (v, run) = bench_json(&["--h2", "--streams", "10", "-c", "8", "-t", "1", "-n", "20000", &url]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(v.pointer("/options/coalesce"), Some(&serde_json::Value::Bool(true)), "{v:#}");
    assert_eq!(num(&v, "/result/succeeded"), 20000);
    assert_eq!(num(&v, "/result/bytes/body"), 20000 * KIB as u64);
    assert_eq!(num(&v, "/result/connections/opened"), 8);
    assert_eq!(ng.access_log(20000).len(), 20000);
    coalesced_figures_add_up(&v, 20000);
    for (args, why) in [
        (vec!["--streams", "2", "-c", "8"], "16 streams"),
        (vec!["--streams", "10", "-c", "8", "--no-coalesce"], "--no-coalesce"),
    ] {
        let mut full = vec!["--h2", "-t", "1", "-n", "500"];
        full.extend(args);
        full.push(&url);
        crate::support::assert_not_coalesced(&full, why);
    }
}

#[test]
fn tls_alpn_h2_and_a_server_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let Some((cert, key)) = self_signed_cert(dir.path()) else { return };
    let (h2_port, h1_port) = (free_port(), free_port());
    let tls = format!(
        "listen 127.0.0.1:{h2_port} ssl http2; listen 127.0.0.1:{h1_port} ssl; ssl_certificate {}; \
         ssl_certificate_key {};",
        cert.display(),
        key.display()
    );
    let Some(ng) = Nginx::start(&tls, "") else { return };
    ng.write_file("1k.html", &page());
    let url = format!("https://localhost:{h2_port}/1k.html");
    let (v, run) = bench_json(&["--h2", "--streams", "8", "-c", "2", "-n", "400", "--insecure", &url]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(num(&v, "/result/succeeded"), 400, "{v:#}");
    assert_eq!(num(&v, "/result/bytes/body"), 400 * KIB as u64);
    assert_eq!(num(&v, "/result/connections/opened"), 2);
    let log = ng.access_log(400);
    assert_eq!(log.len(), 400);
    assert!(log.iter().all(|l| l.protocol == "HTTP/2.0"));

    // A TLS server that offers only HTTP/1.1 through ALPN: every request fails as tls.
    let url = format!("https://localhost:{h1_port}/1k.html");
    let (v, run) = bench_json(&["--h2", "-c", "1", "-n", "3", "--insecure", &url]);
    assert_eq!(errors(&v, "tls"), 3, "{v:#}");
    assert_eq!(run.code, 1);
}

/// Answers each request with 200 and a body of `len` bytes.
fn answer(s: &mut std::net::TcpStream, stream: u32, len: usize) -> bool {
    let mut out = h2::frame(h2::HEADERS, h2::END_HEADERS, stream, &[h2::STATUS_200]);
    out.extend(h2::frame(h2::DATA, h2::END_STREAM, stream, &vec![b'x'; len]));
    h2::send(s, &out)
}

/// Every third request reset by RST_STREAM; the others answered: each in its class.
#[test]
fn stream_resets_are_their_own_class() {
    let rogue = Rogue::start(|mut s, _| {
        if !h2::read_preface(&mut s) || !h2::send(&mut s, &h2::settings()) {
            return;
        }
        let mut n = 0;
        while let Some(stream) = h2::next_request(&mut s) {
            n += 1;
            let ok = if n % 3 == 0 {
                h2::send(&mut s, &h2::frame(h2::RST_STREAM, 0, stream, &2u32.to_be_bytes()))
            } else {
                answer(&mut s, stream, 10)
            };
            if !ok {
                return;
            }
        }
    });
    let (v, run) = bench_json(&["--h2", "-c", "1", "-n", "30", &rogue.url("/")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(errors(&v, "stream_reset"), 10, "{v:#}");
    assert_eq!(num(&v, "/result/succeeded"), 20);
    assert_eq!(num(&v, "/result/bytes/body"), 200);
    assert_eq!(num(&v, "/result/connections/opened"), 1, "a reset stream leaves the connection up");
}

/// A server that allows 2 streams at once: the client never has more open, however many
/// --streams asks for (the server waits 20 ms after the second to see any excess).
#[test]
fn the_servers_stream_limit_is_respected() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let most = Arc::new(AtomicU64::new(0));
    let seen = most.clone();
    let rogue = Rogue::start(move |mut s, _| {
        let limit = h2::frame(h2::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 2]);
        if !h2::send(&mut s, &limit) || !h2::read_preface(&mut s) {
            return;
        }
        let mut open = Vec::new();
        while let Some((kind, _, stream, _)) = h2::read_frame(&mut s) {
            if kind != h2::HEADERS {
                continue;
            }
            open.push(stream);
            if open.len() < 2 {
                continue;
            }
            // Whatever else the client sends in the next 20 ms counts too.
            s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
            while let Some((kind, _, stream, _)) = h2::read_frame(&mut s) {
                if kind == h2::HEADERS {
                    open.push(stream);
                }
            }
            seen.fetch_max(open.len() as u64, Ordering::SeqCst);
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            for stream in open.drain(..) {
                if !answer(&mut s, stream, 5) {
                    return;
                }
            }
        }
    });
    let (v, run) = bench_json(&["--h2", "--streams", "8", "-c", "1", "-n", "20", &rogue.url("/")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(num(&v, "/result/succeeded"), 20, "{v:#}");
    assert_eq!(most.load(Ordering::SeqCst), 2, "streams open at once");
}

/// A GOAWAY with an error code before any stream is processed: every request fails as
/// goaway, each on its own connection.
#[test]
fn goaway_with_an_error_is_its_own_class() {
    let rogue = Rogue::start(|mut s, _| {
        if !h2::read_preface(&mut s) || h2::next_request(&mut s).is_none() {
            return;
        }
        let mut goaway = 0u32.to_be_bytes().to_vec();
        goaway.extend(0xbu32.to_be_bytes()); // ENHANCE_YOUR_CALM
        let mut out = h2::settings();
        out.extend(h2::frame(h2::GOAWAY, 0, 0, &goaway));
        h2::send(&mut s, &out);
        // Keep the connection open: the client must move on by itself.
        while h2::read_frame(&mut s).is_some() {}
    });
    let (v, run) = bench_json(&["--h2", "-c", "2", "-n", "12", &rogue.url("/")]);
    assert_eq!(run.code, 1, "nothing succeeded: {}", run.stderr);
    assert_eq!(errors(&v, "goaway"), 12, "{v:#}");
    assert_eq!(num(&v, "/result/connections/opened"), 12);

    // The same after the request was taken (its stream at the GOAWAY's last): no answer can
    // come on that connection, so it fails at once, not at its timeout.
    let rogue = Rogue::start(|mut s, _| {
        if !h2::read_preface(&mut s) {
            return;
        }
        let Some(stream) = h2::next_request(&mut s) else { return };
        let mut goaway = stream.to_be_bytes().to_vec();
        goaway.extend(0x9u32.to_be_bytes()); // COMPRESSION_ERROR
        let mut out = h2::settings();
        out.extend(h2::frame(h2::GOAWAY, 0, 0, &goaway));
        h2::send(&mut s, &out);
        while h2::read_frame(&mut s).is_some() {}
    });
    let started = Instant::now();
    let (v, run) = bench_json(&["--h2", "-c", "2", "-n", "6", "--timeout", "20s", &rogue.url("/")]);
    assert_eq!(run.code, 1, "nothing succeeded: {}", run.stderr);
    assert_eq!(errors(&v, "goaway"), 6, "{v:#}");
    assert!(started.elapsed() < Duration::from_secs(10), "waited for the timeout: {:?}", started.elapsed());
}

/// A header block continued without end is malformed, not memory without bound.
#[test]
fn continuation_flood_is_malformed() {
    let rogue = Rogue::start(|mut s, _| {
        if !h2::read_preface(&mut s) {
            return;
        }
        let Some(stream) = h2::next_request(&mut s) else { return };
        let mut out = h2::settings();
        out.extend(h2::frame(h2::HEADERS, 0, stream, &[h2::STATUS_200]));
        for _ in 0..200 {
            out.extend(h2::frame(h2::CONTINUATION, 0, stream, &[0x40; 1000]));
        }
        h2::send(&mut s, &out);
        while h2::read_frame(&mut s).is_some() {}
    });
    let (v, _) = bench_json(&["--h2", "-c", "1", "-n", "3", &rogue.url("/")]);
    assert_eq!(errors(&v, "malformed"), 3, "{v:#}");
}

/// A server that reads but never answers: -d ends the run on time, the streams time out
/// within it, and those still waiting at the end are reported in flight.
#[test]
fn duration_is_kept_whatever_the_server_does() {
    let rogue = Rogue::start(|mut s, _| {
        if h2::read_preface(&mut s) {
            h2::send(&mut s, &h2::settings());
        }
        while h2::read_frame(&mut s).is_some() {}
    });
    let started = Instant::now();
    let (v, _) = bench_json(&["--h2", "--streams", "4", "-c", "2", "-d", "2s", "--timeout", "700ms", &rogue.url("/")]);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "the run took {took:?}");
    let duration = float(&v, "/result/duration_s");
    assert!((duration - 2.0).abs() < 0.2, "{duration}");
    // 8 streams time out twice each in 2 s (at 0.7 and 1.4 s); the third round is in flight.
    assert_eq!(errors(&v, "timeout"), 16, "{v:#}");
    assert_eq!(num(&v, "/result/in_flight_at_end"), 8);
}

#[test]
fn bad_h2_flags_are_usage_errors() {
    for (args, says) in [
        (vec!["--streams", "4"], "--h2"),
        (vec!["--h2", "--streams", "0"], "--streams must be between 1 and 1000"),
        (vec!["--h2", "--rate", "100"], "--h2 does not work with --rate"),
        (vec!["--h2", "--no-keepalive"], "--h2 does not work with --no-keepalive"),
    ] {
        let mut full = vec!["bench", "--quiet", "-n", "10"];
        full.extend(args);
        full.push("http://127.0.0.1:9/");
        let run = crate::support::webtune(&full);
        assert_eq!(run.code, 2, "{full:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{full:?}: {}", run.stderr);
    }
}
