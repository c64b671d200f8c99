//! What webtune says of itself: `--version` names the commit it was built from, and the man
//! page printed alone refers to no page that is not there and has the sections users look
//! for (ENVIRONMENT, FILES, EXAMPLES).

use std::process::Command;

use crate::support::webtune;

#[test]
fn version_names_the_git_commit_it_was_built_from() {
    let run = webtune(&["--version"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let line = run.stdout.strip_suffix('\n').unwrap_or_else(|| panic!("one line: {:?}", run.stdout));
    let rest =
        line.strip_prefix(&format!("webtune {} (", env!("CARGO_PKG_VERSION"))).unwrap_or_else(|| panic!("{line}"));
    let commit = rest.strip_suffix(')').unwrap_or_else(|| panic!("{line}"));
    let hash = commit.strip_suffix("-dirty").unwrap_or(commit);
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match head {
        // Built from this repository: its commit (HEAD may have moved on since the build only
        // when a commit was made meanwhile; build.rs reruns then).
        Some(head) => assert_eq!(hash, head, "{line}"),
        None => assert_eq!(commit, "unknown", "{line}"),
    }
    assert!(hash == "unknown" || (hash.len() == 12 && hash.chars().all(|c| c.is_ascii_hexdigit())), "{line}");
}

#[test]
fn the_man_page_printed_alone_names_no_missing_page_and_has_environment_files_and_examples() {
    let run = webtune(&["manpage"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = run.stdout;
    let sections: Vec<&str> = page.lines().filter_map(|l| l.strip_prefix(".SH ")).collect();
    for want in ["SUBCOMMANDS", "\"EXIT STATUS\"", "ENVIRONMENT", "FILES", "EXAMPLES"] {
        assert!(sections.contains(&want), "{want} in {sections:?}");
    }
    // Without --dir no per-command page exists: none is referred to as if it did.
    let subcommands = page.split(".SH SUBCOMMANDS").nth(1).unwrap().split(".SH ").next().unwrap();
    assert!(subcommands.contains("\\fBwebtune bench\\fR"), "{subcommands}");
    assert!(!subcommands.contains("webtune\\-bench(1)\n"), "{subcommands}");
    assert!(subcommands.contains("only where webtune manpage \\-\\-dir DIR wrote them"), "{subcommands}");
    let section = |name: &str| page.split(&format!(".SH {name}\n")).nth(1).unwrap().split(".SH ").next().unwrap();
    for var in ["WEBTUNE_DB", "WEBTUNE_SSH", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"] {
        assert!(section("ENVIRONMENT").contains(&format!("\\fB{var}\\fR")), "{var}: {}", section("ENVIRONMENT"));
    }
    assert!(
        section("FILES").contains("webtune/webtune.db")
            && section("FILES").contains("webtune/journals/tune\\-ID.jsonl")
    );
    assert!(section("EXAMPLES").contains("webtune bench"), "{}", section("EXAMPLES"));

    // With --dir the pages are written, and webtune(1) refers to them.
    let dir = tempfile::tempdir().unwrap();
    let run = webtune(&["manpage", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let main = std::fs::read_to_string(dir.path().join("webtune.1")).unwrap();
    assert!(main.contains("webtune\\-bench(1)") && dir.path().join("webtune-bench.1").is_file());
    assert!(main.contains(".SH ENVIRONMENT") && main.contains(".SH EXAMPLES"));
}

/// Issue 49: the README is a front door: within 400 lines, its sections in a reader's order,
/// the test command CI runs, and every page it links to there (the reference in docs/).
#[test]
fn the_readme_is_a_front_door_whose_links_resolve() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.lines().count() <= 400, "{} lines", readme.lines().count());
    let sections: Vec<&str> = readme.lines().filter(|l| l.starts_with("## ")).collect();
    assert_eq!(
        sections,
        [
            "## What it does",
            "## Set-up",
            "## A first bench",
            "## Tune your own server",
            "## Reading the results",
            "## In a container",
            "## Where the rest is"
        ]
    );
    assert!(readme.contains("    scripts/test "), "the test command .ci/run runs");
    let first_bench = readme.split("## A first bench").nth(1).unwrap().split("\n## ").next().unwrap();
    assert!(first_bench.contains("webtune lab "), "a first bench starts a server: {first_bench}");
    for page in ["README.md", "docs/README.md"] {
        let text = std::fs::read_to_string(root.join(page)).unwrap();
        let dir = root.join(page).parent().unwrap().to_path_buf();
        for link in text.split("](").skip(1).filter_map(|rest| rest.split(')').next()) {
            let path = link.split('#').next().unwrap();
            if path.is_empty() || path.starts_with("http") {
                continue;
            }
            assert!(dir.join(path).exists(), "{page} links to {link}, which is not there");
        }
    }
    for doc in ["bench", "tune", "target-file", "strategies", "statistics", "history", "lab", "mem", "container"] {
        assert!(readme.contains(&format!("(docs/{doc}.md)")), "README does not link docs/{doc}.md");
    }
}

/// Issue 49: the quick start installs what the lab needs (a linker, and curl for rustup), not
/// the servers the tests start (apache2, php-fpm, Django...); the test command still does.
#[test]
fn the_quick_start_installs_only_what_the_lab_needs() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let list = |mode: &[&str]| {
        let out = std::process::Command::new("bash")
            .arg(root.join("scripts/deps"))
            .arg("--list")
            .args(mode)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(list(&["lab"]), "curl\ngcc\n");
    let all = list(&[]);
    for package in ["apache2", "php-fpm", "python3-django", "nginx", "libapache2-mod-perl2", "gcc", "curl"] {
        assert!(all.lines().any(|l| l == package), "{package} not in {all}");
    }
    let script = |name: &str| std::fs::read_to_string(root.join("scripts").join(name)).unwrap();
    assert!(script("quickstart").lines().any(|l| l == "source scripts/deps lab"), "{}", script("quickstart"));
    assert!(script("test").lines().any(|l| l == "source scripts/deps all"), "{}", script("test"));
}
