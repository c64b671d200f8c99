//! `webtune syscalls`: strace a server's processes while the load engine sends a counted
//! number of requests, then report system calls per request and the waste the seeds warn of
//! (lookups of missing files such as .htaccess, a fork per request, many small writes).

pub mod parse;
pub mod trace;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The `schema` value written into every syscalls report, naming its layout.
pub const SCHEMA_ID: &str = "webtune.syscalls.v1";

/// What `webtune syscalls` found: system calls per request and the waste flagged.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SyscallReport {
    pub schema: String,
    pub requests: u64,
    pub pids: Vec<i32>,
    /// Per call name, sorted by calls per request (most first).
    pub calls: Vec<CallStats>,
    /// Paths looked up and not found, with how often per request.
    pub missing_files: Vec<MissingFile>,
    pub missing_lookups_per_request: f64,
    /// .htaccess files opened and read per request (they exist: Apache parses them anew).
    #[serde(default)]
    pub htaccess_reads_per_request: f64,
    pub spawns_per_request: f64,
    pub writes_per_request: f64,
    pub flags: Vec<String>,
}

/// How often one system call was made, and failed, per request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallStats {
    pub name: String,
    pub per_request: f64,
    pub errors_per_request: f64,
    /// Time inside the call per request, microseconds (blocking included).
    pub us_per_request: f64,
}

/// A path the server looked up and did not find (ENOENT).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MissingFile {
    pub path: String,
    pub per_request: f64,
    /// The calls that looked for it.
    pub calls: Vec<String>,
}

/// Counts the calls over `requests` requests and raises the seeds' flags.
pub fn summarize(calls: &[parse::Call], requests: u64, pids: Vec<i32>) -> SyscallReport {
    let per = |n: f64| if requests == 0 { 0.0 } else { n / requests as f64 };
    let mut by_name: BTreeMap<&str, (u64, u64, f64)> = BTreeMap::new();
    let mut missing: BTreeMap<&str, (u64, Vec<String>)> = BTreeMap::new();
    for c in calls {
        let e = by_name.entry(&c.name).or_default();
        e.0 += 1;
        e.1 += c.errno.is_some() as u64;
        e.2 += c.secs;
        if parse::is_lookup(&c.name)
            && c.errno.as_deref() == Some("ENOENT")
            && let Some(path) = &c.path
        {
            let m = missing.entry(path).or_default();
            m.0 += 1;
            if !m.1.contains(&c.name) {
                m.1.push(c.name.clone());
            }
        }
    }
    let mut stats: Vec<CallStats> = by_name
        .into_iter()
        .map(|(name, (n, errors, secs))| CallStats {
            name: name.to_string(),
            per_request: per(n as f64),
            errors_per_request: per(errors as f64),
            us_per_request: per(secs * 1e6),
        })
        .collect();
    stats.sort_by(|a, b| b.per_request.total_cmp(&a.per_request).then(a.name.cmp(&b.name)));
    let mut missing_files: Vec<MissingFile> = missing
        .into_iter()
        .map(|(path, (n, calls))| MissingFile { path: path.to_string(), per_request: per(n as f64), calls })
        .collect();
    missing_files.sort_by(|a, b| b.per_request.total_cmp(&a.per_request).then(a.path.cmp(&b.path)));
    let count = |f: fn(&str) -> bool| per(calls.iter().filter(|c| f(&c.name)).count() as f64);
    let missing_lookups_per_request = missing_files.iter().fold(0.0, |sum, m| sum + m.per_request);
    let htaccess_reads = calls.iter().filter(|c| {
        matches!(c.name.as_str(), "open" | "openat" | "openat2")
            && c.errno.is_none()
            && c.path.as_deref().is_some_and(|p| p.ends_with("/.htaccess"))
    });
    let htaccess_reads_per_request = per(htaccess_reads.count() as f64);
    let spawns_per_request = count(parse::is_spawn);
    let writes_per_request = count(parse::is_write);

    let mut flags = Vec::new();
    if missing_lookups_per_request >= 0.5 {
        let htaccess = missing_files.iter().filter(|m| m.path.ends_with("/.htaccess")).count();
        let hint = if htaccess > 0 {
            format!(" ({htaccess} of them .htaccess: AllowOverride None stops these lookups)")
        } else {
            String::new()
        };
        flags.push(format!("{missing_lookups_per_request:.1} lookups of files that do not exist per request{hint}"));
    }
    if htaccess_reads_per_request >= 0.5 {
        flags.push(format!(
            "{htaccess_reads_per_request:.1} .htaccess files read per request: Apache parses them on every request \
             (their directives in the server configuration, with AllowOverride None, are read once)"
        ));
    }
    if spawns_per_request >= 0.5 {
        flags.push(format!("{spawns_per_request:.2} fork/clone/execve per request: a process started per request"));
    }
    if writes_per_request > 3.0 {
        flags.push(format!(
            "{writes_per_request:.1} writes per response: many small writes (buffer the response, or BufferedLogs for the log)"
        ));
    }
    SyscallReport {
        schema: SCHEMA_ID.into(),
        requests,
        pids,
        calls: stats,
        missing_files,
        missing_lookups_per_request,
        htaccess_reads_per_request,
        spawns_per_request,
        writes_per_request,
        flags,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_htaccess_read_is_counted_and_flagged_apart_from_missing_lookups() {
        let trace = "\
7  openat(AT_FDCWD, \"/srv/htdocs/.htaccess\", O_RDONLY|O_CLOEXEC) = 9 <0.000010>
7  openat(AT_FDCWD, \"/srv/.htaccess\", O_RDONLY|O_CLOEXEC) = -1 ENOENT (No such file or directory) <0.000007>
7  openat(AT_FDCWD, \"/srv/htdocs/.htaccess\", O_RDONLY|O_CLOEXEC) = 9 <0.000010>
7  newfstatat(AT_FDCWD, \"/srv/htdocs/.htaccess\", {st_mode=S_IFREG|0644, st_size=3, ...}, 0) = 0 <0.000005>
";
        let r = summarize(&parse::parse(trace), 2, vec![7]);
        assert_eq!(r.htaccess_reads_per_request, 1.0);
        assert_eq!(r.missing_lookups_per_request, 0.5);
        assert!(r.flags.iter().any(|f| f.starts_with("1.0 .htaccess files read per request")), "{:?}", r.flags);
    }
}
