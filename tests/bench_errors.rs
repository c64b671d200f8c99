//! Bad input: one line on stderr, exit status 2, nothing on stdout, no hang.

use crate::support::webtune;

fn assert_usage_error(args: &[&str], says: &str) {
    let run = webtune(args);
    assert_eq!(run.code, 2, "{args:?}: stderr {:?}", run.stderr);
    assert!(run.stdout.is_empty(), "{args:?}: stdout {:?}", run.stdout);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: one line expected, got {:?}", run.stderr);
    assert!(lines[0].starts_with("webtune: "), "{:?}", lines[0]);
    assert!(lines[0].contains(says), "{args:?}: {:?} does not mention {says:?}", lines[0]);
}

#[test]
fn bad_urls() {
    assert_usage_error(&["bench", "-c", "1", "-n", "1", "not a url"], "bad URL");
    assert_usage_error(&["bench", "-c", "1", "-n", "1", "ftp://127.0.0.1/"], "not http or https");
    assert_usage_error(&["bench", "-c", "1", "-n", "1", "http://"], "bad URL");
}

#[test]
fn issue_17_cpus_bench_places_only_its_client_and_only_on_cpus_it_may_use() {
    let url = "http://127.0.0.1:9/";
    assert_usage_error(&["bench", "-n", "1", "-c", "1", "--cpus", "server=0", url], "bench does not start the server");
    assert_usage_error(&["bench", "-n", "1", "-c", "1", "--cpus", "client=1000", url], "this machine has no CPU 1000");
    assert_usage_error(&["bench", "-n", "1", "-c", "1", "--cpus", "client=1-0", url], "runs backwards");
    assert_usage_error(&["bench", "-n", "1", "-c", "1", "--cpus", "0", url], "expected server=CPUS,client=CPUS");
}

#[test]
fn unresolvable_host() {
    assert_usage_error(&["bench", "-c", "1", "-n", "1", "http://no-such-host.invalid/"], "cannot resolve host");
}

#[test]
fn bad_counts() {
    assert_usage_error(&["bench", "-c", "0", "-n", "1", "http://127.0.0.1:9/"], "-c must be at least 1");
    assert_usage_error(&["bench", "-c", "10", "-n", "5", "http://127.0.0.1:9/"], "smaller than -c");
    assert_usage_error(&["bench", "-t", "0", "-c", "1", "-n", "1", "http://127.0.0.1:9/"], "-t must be at least 1");
    assert_usage_error(&["bench", "-d", "soon", "http://127.0.0.1:9/"], "bad duration");
    assert_usage_error(&["bench", "-c", "1", "-n", "1", "--timeout", "0", "http://127.0.0.1:9/"], "--timeout");
}

#[test]
fn unreadable_body_file() {
    assert_usage_error(
        &["bench", "-c", "1", "-n", "1", "-p", "/nonexistent/body", "http://127.0.0.1:9/"],
        "cannot read body file",
    );
    assert_usage_error(
        &["bench", "-c", "1", "-n", "1", "--body", "@/nonexistent/body", "http://127.0.0.1:9/"],
        "cannot read body file",
    );
}

#[test]
fn bad_headers_and_methods() {
    assert_usage_error(&["bench", "-c", "1", "-n", "1", "-H", "NoColon", "http://127.0.0.1:9/"], "bad header");
    assert_usage_error(&["bench", "-c", "1", "-n", "1", "-m", "GE T", "http://127.0.0.1:9/"], "bad method");
}

#[test]
fn unknown_flags_and_missing_arguments() {
    assert_usage_error(&["bench", "--frobnicate", "http://127.0.0.1:9/"], "--frobnicate");
    assert_usage_error(&["bench"], "URL");
    assert_usage_error(&["bench", "-n", "-1", "http://127.0.0.1:9/"], "-1");
}

#[test]
fn hdr_log_path_that_cannot_be_created() {
    assert_usage_error(
        &["bench", "-c", "1", "-n", "1", "--hdr-log", "/nonexistent/dir/x.hlog", "http://127.0.0.1:9/"],
        "cannot create",
    );
}
