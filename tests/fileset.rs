//! Seed 004's static workload: `webtune fileset` writes SPECweb96's file set and a weighted URL
//! list; real nginx and Apache serve it, and their access logs show the mix SPECweb96 defines.

use std::path::Path;

use webtune::fileset::{self, CLASS_MIX};
use webtune::server::{self, Running, TargetFile};

use crate::support::{bench_json, find_program, missing, webtune};

/// Writes a file set for `ops` in a fresh directory that a server dropping privileges can read.
fn file_set(ops: u32) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = webtune(&["fileset", &dir.path().display().to_string(), "--ops", &ops.to_string()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    dir
}

/// A target file for `adapter` serving the file set at `app`.
fn target(adapter: &str, app: &Path) -> TargetFile {
    let text = format!(
        "[target]\nadapter = \"{adapter}\"\napp = \"{}\"\nready = \"/file_set/dir0/class0_0\"\n",
        app.display()
    );
    TargetFile::parse(&text, &app.join("target.toml")).unwrap_or_else(|e| panic!("{}", e.0))
}

/// A file set for 1 op/s and a target file serving it through `adapter`, when `program` is
/// installed (under CI it must be).
fn serving(adapter: &str, program: &str) -> Option<(tempfile::TempDir, TargetFile)> {
    if find_program(program).is_none() {
        missing(program);
        return None;
    }
    let set = file_set(1);
    let file = target(adapter, set.path());
    Some((set, file))
}

/// Drives `n` requests of the set's URL list at `r` (`c` connections, keep-alive, a fixed
/// seed); returns the bench report and the requests per class the server logged.
fn load_the_set(r: &Running, set: &Path, n: usize, c: usize) -> (serde_json::Value, [u64; 4]) {
    let before = log_lines(r);
    let urls = set.join("urls.txt").display().to_string();
    let (n_text, c_text) = (n.to_string(), c.to_string());
    let (v, run) = bench_json(&["--urls", &urls, &r.base_url(), "-n", &n_text, "-c", &c_text, "-k", "--seed", "96"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let counts = class_counts(r, before, n);
    assert_eq!(counts.iter().sum::<u64>(), n as u64, "{counts:?}");
    (v, counts)
}

/// Requests per class, from the `expect` access-log lines written after the first `skip`
/// (servers log just after they send: wait up to 5 s for them), each line's body size checked
/// against the file's defined size.
fn class_counts(r: &Running, skip: usize, expect: usize) -> [u64; 4] {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while log_lines(r) < skip + expect && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let log = std::fs::read_to_string(r.dir().join("access.log")).unwrap();
    let mut counts = [0u64; 4];
    for line in log.lines().skip(skip) {
        // ... "GET /file_set/dir3/class1_4 HTTP/1.1" 200 5120 ...
        let request = line.split('"').nth(1).unwrap_or_default();
        let path = request.split(' ').nth(1).unwrap_or_default();
        let after: Vec<&str> = line.split('"').nth(2).unwrap_or_default().split_whitespace().collect();
        let class = fileset::class_of(path).unwrap_or_else(|| panic!("not a file of the set: {line}"));
        let file: usize = path.rsplit('_').next().unwrap().parse().unwrap();
        assert_eq!(after[0], "200", "{line}");
        assert_eq!(after[1], fileset::size(class, file).to_string(), "body size of {path}: {line}");
        counts[class] += 1;
    }
    counts
}

fn log_lines(r: &Running) -> usize {
    std::fs::read_to_string(r.dir().join("access.log")).unwrap_or_default().lines().count()
}

#[test]
fn fileset_writes_specweb96_classes_and_a_weighted_url_list() {
    let set = file_set(5);
    let root = set.path();
    // (int)(10 * sqrt(5 / 5)) = 10 directories of 4 classes x 9 files.
    for d in 0..10 {
        for class in 0..4 {
            for file in 0..9 {
                let len = std::fs::metadata(root.join(format!("file_set/dir{d}/class{class}_{file}"))).unwrap().len();
                assert_eq!(len, fileset::size(class, file));
                // Class 0: 0.1-0.9 KB, class 1: 1-9 KB, class 2: 10-90 KB, class 3: 100-900 KB.
                let tenth = 102.4 * 10f64.powi(class as i32);
                assert!((len as f64 - tenth * (file + 1) as f64).abs() <= 0.5, "class {class} file {file}: {len}");
            }
        }
    }
    assert!(!root.join("file_set/dir10").exists());
    let text = std::fs::read_to_string(root.join("urls.txt")).unwrap();
    let mut share = [0.0; 4];
    let mut by_file = [0.0; 9];
    let mut lines = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (path, weight) = line.split_once(" weight=").unwrap();
        let weight: f64 = weight.parse().unwrap();
        share[fileset::class_of(path).unwrap()] += weight;
        if path.contains("/class1_") {
            by_file[path.rsplit('_').next().unwrap().parse::<usize>().unwrap()] += weight / 0.5;
        }
        lines += 1;
    }
    assert_eq!(lines, 360);
    for (got, want) in share.iter().zip(CLASS_MIX) {
        assert!((got - want).abs() < 1e-9, "class shares {share:?}");
    }
    // Within a class, Poisson(4) over the nine files: P(4) = e^-4 4^4/4! / P(0..=8).
    assert!((by_file[4] - 0.195_367 / 0.978_637).abs() < 1e-5, "{by_file:?}");

    // A set written before is replaced; a smaller one leaves no directory of the larger.
    let again = webtune(&["fileset", &root.display().to_string(), "--ops", "1"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.contains("4 directories, 144 files"), "{}", again.stdout);
    assert!(root.join("file_set/dir3").exists() && !root.join("file_set/dir4").exists());

    // What is not a file set is never overwritten: exit 2, one line, nothing touched.
    let foreign = tempfile::tempdir().unwrap();
    std::fs::write(foreign.path().join("notes.txt"), "mine").unwrap();
    let refused = webtune(&["fileset", &foreign.path().display().to_string()]);
    assert_eq!(refused.code, 2);
    assert!(refused.stderr.contains("not a file set webtune wrote"), "{}", refused.stderr);
    assert_eq!(std::fs::read_to_string(foreign.path().join("notes.txt")).unwrap(), "mine");
    std::fs::write(root.join("file_set/dir0/keep.me"), "mine").unwrap();
    let refused = webtune(&["fileset", &root.display().to_string()]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("keep.me"), "{}", refused.stderr);
    assert!(root.join("file_set/dir0/keep.me").exists());
    for ops in ["0", "50001"] {
        let run = webtune(&["fileset", &foreign.path().join("new").display().to_string(), "--ops", ops]);
        assert_eq!(run.code, 2);
        assert!(run.stderr.contains("expected 1 to 50000"), "{}", run.stderr);
    }
}

#[test]
fn weighted_url_lists_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("/a weight=1\n/b\n", "some lines have a weight= and some not"),
        ("/a weight=0\n", "bad weight \"0\""),
        ("/a weight=x\n", "bad weight \"x\""),
        ("GET /a /b weight=1\n", "expected \"URL\" or \"METHOD URL\""),
    ];
    for (text, want) in cases {
        let f = dir.path().join("urls.txt");
        std::fs::write(&f, text).unwrap();
        let run = webtune(&["bench", "--urls", &f.display().to_string(), "http://127.0.0.1:1/", "-n", "1", "-c", "1"]);
        assert_eq!(run.code, 2, "{text:?}: {}", run.stderr);
        assert!(run.stderr.contains(want), "{text:?}: {}", run.stderr);
        assert!(run.stderr.contains("urls.txt:"), "the line is named: {}", run.stderr);
    }
    let f = dir.path().join("urls.txt");
    std::fs::write(&f, "/a weight=1\n/b weight=3\n").unwrap();
    let run = webtune(&["bench", "--urls", &f.display().to_string(), "http://127.0.0.1:1/", "--order", "sequential"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("would ignore the weights"), "{}", run.stderr);
}

#[test]
fn nginx_serves_the_specweb96_class_mix() {
    let Some((set, file)) = serving("nginx", "nginx") else { return };
    let knobs = [
        ("sendfile", "on"),
        ("tcp_nopush", "on"),
        ("open_file_cache", "max=1000 inactive=20s"),
        ("output_buffers", "2 32k"),
    ];
    let knobs: Vec<(String, String)> = knobs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let r = server::launch(&file, &knobs).unwrap_or_else(|e| panic!("{e:#}"));
    for line in ["sendfile on;", "tcp_nopush on;", "open_file_cache max=1000 inactive=20s;", "output_buffers 2 32k;"] {
        assert!(r.config_text().contains(line), "{line} not in\n{}", r.config_text());
    }
    // 20,000 requests: a class's count is binomial(N, p), its share's standard deviation
    // sqrt(p(1-p)/N) at most 0.354 points (p = 0.5), 0.337 (0.35), 0.245 (0.14), 0.070 (0.01).
    // 2 points is 5.6 standard deviations or more: a false failure has odds below 1e-7 (and
    // the seed is fixed, so the draw repeats). A small class gets the tighter of 2 points and
    // 6 of its own standard deviations: class 3 (1%) must read 0.58-1.42%, not anything to 3%.
    let (v, counts) = load_the_set(&r, set.path(), 20_000, 4);
    assert_eq!(v["options"]["order"], "weighted");
    for (class, (&n, want)) in counts.iter().zip(CLASS_MIX).enumerate() {
        let got = n as f64 / 20_000.0;
        let tolerance = (6.0 * (want * (1.0 - want) / 20_000.0).sqrt()).min(0.02);
        assert!(
            (got - want).abs() < tolerance,
            "class {class}: {:.2}% of requests, SPECweb96 says {}%",
            got * 100.0,
            want * 100.0
        );
    }
}

#[test]
fn apache_file_cache_maps_every_file_of_the_set() {
    let Some((set, file)) = serving("apache", "apache2") else { return };
    let files = fileset::files(set.path()).unwrap();
    assert_eq!(files.len(), 4 * 36);
    for (mode, directive) in [("mmap", "MMapFile"), ("open", "CacheFile")] {
        let values = [("file_cache".to_string(), mode.to_string()), ("workers".to_string(), "2".to_string())];
        let r = server::launch(&file, &values).unwrap_or_else(|e| panic!("{e:#}"));
        let conf = r.config_text();
        assert!(conf.contains("LoadModule file_cache_module"), "{conf}");
        assert_eq!(conf.lines().filter(|l| l.starts_with(directive)).count(), files.len(), "{conf}");
        for f in &files {
            assert!(
                conf.contains(&format!("{directive} \"{}\"\n", f.display())),
                "{} not cached:\n{conf}",
                f.display()
            );
        }
        // The cached files are served whole, every class at its size.
        let (_, counts) = load_the_set(&r, set.path(), 2000, 2);
        assert!(counts.iter().all(|&n| n > 0), "every class requested: {counts:?}");
    }
    // Values outside the set are refused when the target file is read, with its line.
    let text = format!(
        "[target]\nadapter = \"apache\"\napp = \"{}\"\n[knobs]\nfile_cache = [\"none\", \"all\"]\n",
        set.path().display()
    );
    let e = TargetFile::parse(&text, &set.path().join("t.toml")).expect_err("refused").0;
    assert!(e.contains("t.toml:5") && e.contains("expected \"none\", \"mmap\" or \"open\""), "{e}");
    // A cache of a set needs a set.
    let plain = tempfile::tempdir().unwrap();
    let e = format!(
        "{:#}",
        server::launch(&target("apache", plain.path()), &[("file_cache".into(), "mmap".into())]).err().unwrap()
    );
    assert!(e.contains("not a file set"), "{e}");
}

#[test]
fn apache_worker_mpm_serves_the_set_from_threads() {
    let Some((set, file)) = serving("apache", "apache2") else { return };
    let values: Vec<(String, String)> = [("mpm", "worker"), ("ThreadsPerChild", "4"), ("workers", "8")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let r = server::launch(&file, &values).unwrap_or_else(|e| panic!("{e:#}"));
    let conf = r.config_text();
    for line in ["LoadModule mpm_worker_module", "ThreadsPerChild 4\n", "ServerLimit 2\n", "MaxRequestWorkers 8\n"] {
        assert!(conf.contains(line), "{line:?} not in\n{conf}");
    }
    assert!(!conf.contains("mpm_prefork") && !conf.contains("MinSpareServers"), "{conf}");
    // 8 workers are 2 processes of 4 threads: mod_status counts the threads.
    assert_eq!(r.worker_pids().len(), 2, "{:?}", r.worker_pids());
    let counters = r.counters().expect("mod_status");
    assert_eq!(counters["alive"], 8.0, "{counters}");
    let (_, counts) = load_the_set(&r, set.path(), 1000, 4);
    assert!(counts.iter().all(|&n| n > 0), "every class requested: {counts:?}");
    let text = "[target]\nadapter = \"apache\"\n[knobs]\nmpm = [\"prefork\", \"threads\"]\n";
    let e = TargetFile::parse(text, &set.path().join("t.toml")).expect_err("refused").0;
    assert!(e.contains("t.toml:4") && e.contains("expected \"prefork\", \"worker\" or \"event\""), "{e}");
}
