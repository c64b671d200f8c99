//! The Debian package: scripts/package builds it from the binary these tests run, it unpacks
//! into a temporary root with dpkg-deb -x, and what it installed works: the binary prints its
//! version, the man page gunzips to roff, the completions complete.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::{missing, run_with_limit};

fn run(program: &str, args: &[&str]) -> crate::support::Run {
    let mut cmd = Command::new(program);
    cmd.args(args);
    let run = run_with_limit(cmd, Duration::from_secs(300));
    assert_eq!(run.code, 0, "{program} {args:?}: {}", run.stderr);
    run
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_package_installs_the_binary_its_man_pages_and_completions() {
    if Command::new("dpkg-shlibdeps").arg("--version").output().is_err() {
        return missing("dpkg-shlibdeps (dpkg-dev)");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/package");
    let built =
        run(script.to_str().unwrap(), &["--binary", env!("CARGO_BIN_EXE_webtune"), "--out", out.to_str().unwrap()]);
    let deb = built.stdout.trim();
    let version = env!("CARGO_PKG_VERSION");
    let arch = run("dpkg", &["--print-architecture"]).stdout;
    assert!(deb.ends_with(&format!("/webtune_{version}_{}.deb", arch.trim())), "{deb}");

    let field = |name: &str| run("dpkg-deb", &["-f", deb, name]).stdout.trim().to_string();
    assert_eq!(field("Package"), "webtune");
    assert_eq!(field("Version"), version);
    assert!(field("Depends").starts_with("libc6 (>= 2."), "{}", field("Depends"));
    assert!(field("Recommends").contains("strace"));
    let listing = run("dpkg-deb", &["-c", deb]).stdout;
    assert!(listing.lines().all(|l| l.contains(" root/root ")), "owned by root: {listing}");

    let root = dir.path().join("root");
    run("dpkg-deb", &["-x", deb, root.to_str().unwrap()]);
    let installed = root.join("usr/bin/webtune");
    let said = run(installed.to_str().unwrap(), &["--version"]).stdout;
    assert!(said.starts_with(&format!("webtune {version} (")) && said.ends_with(")\n"), "{said}");

    let man = root.join("usr/share/man/man1");
    let page = run("gzip", &["-dc", man.join("webtune.1.gz").to_str().unwrap()]).stdout;
    assert!(page.starts_with(".ie") && page.contains("\n.TH webtune 1 "), "{page}");
    assert!(
        page.contains(".SH \"EXIT STATUS\"") && page.contains("\\fB3\\fR\na \\-\\-fail\\-if threshold held"),
        "{page}"
    );
    // The commands' own pages, which webtune(1) names.
    assert!(page.contains("webtune\\-bench(1)"), "{page}");
    let bench = run("gzip", &["-dc", man.join("webtune-bench.1.gz").to_str().unwrap()]).stdout;
    assert!(bench.contains(".TH webtune-bench 1 ") && bench.contains("\\-\\-fail\\-if"), "{bench}");
    assert!(bench.contains(".SH \"EXIT STATUS\"") && !bench.contains(".SH EXTRA"), "{bench}");

    let share = root.join("usr/share");
    let bash = share.join("bash-completion/completions/webtune");
    assert!(read(&share.join("zsh/vendor-completions/_webtune")).starts_with("#compdef webtune\n"));
    assert!(read(&share.join("fish/vendor_completions.d/webtune.fish")).contains("complete -c webtune "));
    // bash itself completes with the installed script: a command, then a flag of bench.
    let complete = |words: &str| {
        let script = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             _webtune webtune \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            bash.display()
        );
        run("bash", &["-c", &script]).stdout
    };
    assert_eq!(complete("webtune ben"), "bench\n");
    assert_eq!(complete("webtune bench --fail"), "--fail-if\n");
}
