//! Puts the git commit the binary is built from into `webtune --version` (WEBTUNE_COMMIT):
//! twelve hex digits, "-dirty" when the work tree had changes, or "unknown" without git or
//! outside a repository (a source tarball, a packaging chroot).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Whether the package is the top of a git work tree (not a tarball unpacked inside some
/// other repository, whose commit is not this source's).
fn in_own_repository() -> bool {
    let top = git(&["rev-parse", "--show-toplevel"]).and_then(|t| std::fs::canonicalize(t).ok());
    let here = std::env::var_os("CARGO_MANIFEST_DIR").and_then(|d| std::fs::canonicalize(d).ok());
    top.is_some() && top == here
}

fn main() {
    let head = if in_own_repository() { git(&["rev-parse", "--short=12", "HEAD"]) } else { None };
    let commit = match head {
        Some(hash) if !hash.is_empty() => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
            if dirty { format!("{hash}-dirty") } else { hash }
        }
        _ => "unknown".to_string(),
    };
    println!("cargo:rustc-env=WEBTUNE_COMMIT={commit}");
    // Run again when the commit or the index moves (HEAD, the branch it names, a commit or an
    // add), or a source changes (the dirty mark); not on every build.
    // (A path that does not exist, such as a packed branch, would make every build rerun it.)
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    for path in ["HEAD", "index"].into_iter().chain(branch.as_deref()) {
        if let Some(p) = git(&["rev-parse", "--git-path", path]).filter(|p| std::path::Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    for path in ["build.rs", "Cargo.toml", "Cargo.lock", "src"] {
        println!("cargo:rerun-if-changed={path}");
    }
}
