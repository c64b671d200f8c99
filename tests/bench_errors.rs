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

/// Runs webtune and returns its exit status and stderr; stdout must be empty.
fn refused(args: &[&str]) -> (i32, String) {
    let run = webtune(args);
    assert!(run.stdout.is_empty(), "{args:?}: stdout {:?}", run.stdout);
    (run.code, run.stderr)
}

#[test]
fn issue_28_clap_tips_are_kept_and_point_at_the_commands_help() {
    assert_eq!(
        refused(&["bench", "--conections", "2", "http://127.0.0.1:9/"]),
        (
            2,
            "webtune: unexpected argument '--conections' found; tip: a similar argument exists: '--connections' (see webtune bench --help)\n".into()
        )
    );
    assert_eq!(
        refused(&["bnech", "http://127.0.0.1:9/"]),
        (
            2,
            "webtune: unrecognized subcommand 'bnech'; tip: some similar subcommands exist: 'launch', 'bench' (see webtune --help)\n".into()
        )
    );
    assert_eq!(
        refused(&["runs", "--sinse", "1h"]),
        (2, "webtune: unexpected argument '--sinse' found; tip: a similar argument exists: '--since' (see webtune runs --help)\n".into())
    );
    // A negative rate is a bad rate, not an unknown argument -5.
    assert_eq!(
        refused(&["bench", "--rate", "-5", "http://127.0.0.1:9/"]),
        (2, "webtune: --rate must be a positive number of requests per second up to 10000000, not -5\n".into())
    );
}

#[test]
fn issue_28_a_url_without_a_scheme_gets_the_http_url_it_means() {
    assert_eq!(
        refused(&["bench", "-c", "1", "-n", "1", "127.0.0.1:8080/"]),
        (
            2,
            "webtune: bad URL \"127.0.0.1:8080/\": relative URL without a base; did you mean http://127.0.0.1:8080/?\n"
                .into()
        )
    );
    assert_eq!(
        refused(&["bench", "-c", "1", "-n", "1", "localhost:8080"]),
        (
            2,
            "webtune: bad URL \"localhost:8080\": scheme \"localhost\" is not http or https; did you mean http://localhost:8080/?\n".into()
        )
    );
}

#[test]
fn issue_28_a_size_without_a_unit_is_refused_with_the_unit_it_needs() {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), "[target]\nadapter = \"lab\"\n[knobs]\nworkers = [1, 2]\n").unwrap();
    let target = file.path().to_str().unwrap();
    for (args, says) in [
        (vec!["mem", "--pid", "1", "--memory", "4"], "--memory: size \"4\" has no unit: give one, e.g. 4GiB or 4MiB"),
        (
            vec!["tune", target, "--memory", "512"],
            "--memory: size \"512\" has no unit: give one, e.g. 512GiB or 512MiB",
        ),
        (vec!["lab", "--preload", "64"], "--preload: size \"64\" has no unit: give one, e.g. 64GiB or 64MiB"),
        (
            vec!["tune", target, "--headroom", "2000%"],
            "--headroom: bad share \"2000%\": expected a percentage from 0% to 100%, e.g. 20%",
        ),
    ] {
        assert_eq!(refused(&args), (2, format!("webtune: {says}\n")), "{args:?}");
    }
}

#[test]
fn issue_28_a_misspelt_lab_knob_is_refused_with_its_line_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let knobs = "workers, start_workers, min_spare, max_spare, max_requests, keepalive, keepalive_timeout, \
                 max_keepalive_requests, backlog, preload, cpu, io_wait, dirty, leak, body";
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[target]\nadapter = \"lab\"\n\n[target.config]\ncpu = \"1ms\"\nworkerz = 2\n").unwrap();
    let swept = dir.path().join("knobs.toml");
    std::fs::write(&swept, "[target]\nadapter = \"lab\"\n[knobs]\nthreads = [1, 2]\nio_wait = [\"1ms\", \"soon\"]\n")
        .unwrap();
    let good = dir.path().join("good.toml");
    std::fs::write(&good, "[target]\nadapter = \"lab\"\n[knobs]\nworkers = [1, 2]\n").unwrap();
    let (config, swept, good) = (config.to_str().unwrap(), swept.to_str().unwrap(), good.to_str().unwrap());
    for (args, says) in [
        (vec!["tune", config], format!("{config}:6: workerz: the lab has no such knob: did you mean `workers`?")),
        (vec!["launch", config], format!("{config}:6: workerz: the lab has no such knob: did you mean `workers`?")),
        (vec!["tune", swept], format!("{swept}:4: threads: the lab has no such knob (its knobs: {knobs})")),
        (
            vec!["tune", good, "--set", "workers=abc"],
            "--set workers = \"abc\": expected a whole number, e.g. workers = 4".into(),
        ),
        (vec!["launch", good, "--set", "keepalive=maybe"], "--set keepalive = \"maybe\": expected on or off".into()),
        (
            vec!["launch", good, "--set", "cpu=soon"],
            "--set cpu = \"soon\": bad duration \"soon\" (expected number at 0)".into(),
        ),
    ] {
        assert_eq!(refused(&args), (2, format!("webtune: {says}\n")), "{args:?}");
    }
}

#[test]
fn issue_28_h2_against_an_http1_server_says_it_did_not_speak_http2() {
    let lab = crate::support::lab::Lab::start(&["--workers", "1"]);
    let run = webtune(&["bench", "--quiet", "--h2", "-c", "1", "-n", "5", &lab.url("/")]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let said = "the server did not speak HTTP/2: it answered the h2c preface (prior knowledge) in HTTP/1.x, so every request failed as malformed; it serves HTTP/1.1 here (drop --h2)";
    assert!(run.stdout.contains("   (malformed 5)\n"), "{}", run.stdout);
    assert!(run.stdout.contains(&format!("WARNING: {said}\n")), "{}", run.stdout);
    assert_eq!(run.stderr, format!("webtune: no request succeeded: {said}\n"));
}

#[test]
fn issue_28_one_vocabulary_and_the_peers_habits() {
    let url = "http://127.0.0.1:9/";
    let rate_hint = "webtune: -q: webtune's request rate is --rate R (in all, as oha's -q; hey's -q is per worker); quiet is --quiet\n";
    assert_eq!(refused(&["bench", "-q", "100", url]), (2, rate_hint.into()));
    assert_eq!(refused(&["tune", "t.toml", "-q"]), (2, rate_hint.into()));
    assert_eq!(
        refused(&["bench", "-k", "--no-keepalive", "-n", "1", url]),
        (
            2,
            "webtune: the argument '--keepalive' cannot be used with '--no-keepalive' (see webtune bench --help)\n"
                .into()
        )
    );
    // ab's -t 30 is 30 seconds; here it is threads, and more threads than cores says so.
    let run = webtune(&["bench", "--quiet", "--cpus", "client=0", "-t", "3", "-c", "3", "-n", "3", url]);
    assert_eq!(run.code, 1, "nothing listens on port 9: {}", run.stderr);
    assert_eq!(
        run.stderr.lines().next(),
        Some("webtune: -t 3: 3 engine threads on 1 core(s) (wrk's -t); ab's time limit is -d 3s")
    );
    // The threads that run, as the report's header says: no more than the connections.
    let run = webtune(&["bench", "--cpus", "client=0", "-t", "30", "-c", "2", "-n", "2", url]);
    assert_eq!(
        run.stderr.lines().next(),
        Some(
            "webtune: -t 30: 2 engine threads (of 30 asked: one per connection) on 1 core(s) (wrk's -t); ab's time limit is -d 30s"
        )
    );
    assert!(run.stdout.contains("2 connection(s) on 2 thread(s)"), "{}", run.stdout);

    // Memory is --memory in mem and tune; the tune's time is --max-time; the old names still work.
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("t.toml");
    std::fs::write(&target, "[target]\nadapter = \"lab\"\n[knobs]\nworkers = [1, 2]\n").unwrap();
    let target = target.to_str().unwrap();
    for flag in ["--max-time", "--budget"] {
        assert_eq!(
            refused(&["tune", target, flag, "soon"]),
            (2, "webtune: --max-time: bad duration \"soon\" (expected number at 0)\n".into())
        );
    }
    for flag in ["--memory", "--budget"] {
        assert_eq!(
            refused(&["mem", "--pid", "1", flag, "4"]),
            (2, "webtune: --memory: size \"4\" has no unit: give one, e.g. 4GiB or 4MiB\n".into())
        );
    }
    assert_eq!(
        refused(&["lab", "--preload", "64MiB", "--preload-mb", "64"]),
        (2, "webtune: the argument '--preload <SIZE>' cannot be used with '--preload-mb <PRELOAD_MB>' (see webtune lab --help)\n".into())
    );

    // --db only where the history is opened.
    for command in ["lab", "completions", "manpage", "fileset", "urls", "mem", "syscalls", "merge", "launch"] {
        let help = webtune(&[command, "--help"]).stdout;
        assert!(!help.contains("--db"), "{command} --help offers --db:\n{help}");
    }
    for command in ["bench", "tune", "runs", "show", "compare", "export", "report"] {
        let help = webtune(&[command, "--help"]).stdout;
        assert!(help.contains("--db <FILE>"), "{command} --help has no --db:\n{help}");
    }
    assert_eq!(
        refused(&["lab", "--db", "h.db"]),
        (2, "webtune: unexpected argument '--db' found (see webtune lab --help)\n".into())
    );
    assert_eq!(
        refused(&["--db", "h.db", "fileset", "x"]),
        (2, "webtune: --db: this command does not use the history\n".into())
    );

    // Every argument says what it is; no help speaks of seeds; -q and the units in flag names
    // (--preload-mb, --dirty-kb, --leak-kb, --body-bytes) are gone from it.
    for command in ["bench", "tune", "runs", "show", "compare", "export", "report", "fileset", "lab", "mem"] {
        let help = webtune(&[command, "--help"]).stdout;
        assert!(
            !help.contains("seed 0")
                && !help.contains("-q,")
                && !["preload-mb", "dirty-kb", "leak-kb", "body-bytes"].iter().any(|f| help.contains(f)),
            "{command}:\n{help}"
        );
    }
    let show = webtune(&["show", "--help"]).stdout;
    assert!(show.contains("<RUN>  The run: its id (as `webtune runs` lists it), last, or last~N"), "{show}");
    assert!(show.contains("Print the stored run whole as JSON"), "{show}");
    assert!(webtune(&["runs", "--help"]).stdout.contains("Print the list as JSON (schema/runs.v1.json)"));
    assert!(!webtune(&["--help"]).stdout.contains("seed 0"));
}

/// Issue 49: a misspelt field in any table of a target file names the field meant.
#[test]
fn a_misspelt_target_file_field_says_did_you_mean() {
    let dir = tempfile::tempdir().unwrap();
    for (text, line, says) in [
        (
            "[target]\nadapter = \"lab\"\n[knobs]\nworkers = [1, 2]\n[load]\nconections = 4\n",
            6,
            "conections: unknown field `conections`: did you mean `connections`?",
        ),
        (
            "[target]\nadapter = \"lab\"\nlisen = \"127.0.0.1:0\"\n",
            3,
            "lisen: unknown field `lisen`: did you mean `listen`?",
        ),
        (
            "[target]\nadapter = \"lab\"\n[budget]\nmemroy = \"1GiB\"\n",
            4,
            "memroy: unknown field `memroy`: did you mean `memory`?",
        ),
        (
            "[target]\nadapter = \"lab\"\n[budgett]\nmemory = \"1GiB\"\n",
            3,
            "unknown field `budgett`: did you mean `budget`?",
        ),
        (
            "[target]\nadapter = \"lab\"\n[target.config]\nworkerz = 2\n",
            4,
            "workerz: the lab has no such knob: did you mean `workers`?",
        ),
    ] {
        let file = dir.path().join("t.toml");
        std::fs::write(&file, text).unwrap();
        let f = file.to_str().unwrap();
        assert_eq!(refused(&["tune", f]), (2, format!("webtune: {f}:{line}: {says}\n")), "{text}");
    }
}
