//! Reading strace output (`strace -f -T -o FILE`): which calls, how long, and the lookups of
//! files that do not exist.

use std::collections::BTreeMap;

/// One completed system call.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub pid: i32,
    pub name: String,
    /// The first quoted argument (a path, for the calls that take one).
    pub path: Option<String>,
    /// "ENOENT" and the like when the call failed.
    pub errno: Option<String>,
    /// Time spent in the call (strace -T), seconds.
    pub secs: f64,
}

/// Parses a whole strace output file. Calls split by other threads' output
/// ("<unfinished ...>" then "<... name resumed>") are joined; signals and exits are skipped.
pub fn parse(text: &str) -> Vec<Call> {
    let mut calls = Vec::new();
    let mut pending: BTreeMap<(i32, String), String> = BTreeMap::new();
    for line in text.lines() {
        let (pid, rest) = split_pid(line);
        let rest = rest.trim_start();
        if rest.starts_with("---") || rest.starts_with("+++") || rest.is_empty() {
            continue;
        }
        if let Some(head) = rest.strip_suffix("<unfinished ...>") {
            if let Some(name) = call_name(head) {
                pending.insert((pid, name), head.to_string());
            }
            continue;
        }
        let full = if let Some(resumed) = rest.strip_prefix("<... ") {
            let Some((name, tail)) = resumed.split_once(" resumed>") else { continue };
            match pending.remove(&(pid, name.to_string())) {
                Some(head) => format!("{head}{tail}"),
                None => format!("{name}({tail}"),
            }
        } else {
            rest.to_string()
        };
        if let Some(call) = parse_call(pid, &full) {
            calls.push(call);
        }
    }
    calls
}

/// With -f, lines start with the pid ("1234  read(..."); without, they do not.
fn split_pid(line: &str) -> (i32, &str) {
    let trimmed = line.trim_start();
    let digits = trimmed.find(|c: char| !c.is_ascii_digit()).unwrap_or(0);
    if digits > 0 && trimmed[digits..].starts_with(' ') {
        (trimmed[..digits].parse().unwrap_or(0), &trimmed[digits..])
    } else {
        (0, trimmed)
    }
}

fn call_name(s: &str) -> Option<String> {
    let open = s.find('(')?;
    let name = &s[..open];
    (!name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')).then(|| name.to_string())
}

fn parse_call(pid: i32, s: &str) -> Option<Call> {
    let name = call_name(s)?;
    // The result follows the last " = " (arguments may contain " = " inside strings rarely,
    // the result never does).
    let (args, result) = s.rsplit_once(" = ")?;
    let secs = result.rsplit_once('<').and_then(|(_, t)| t.trim_end_matches('>').parse::<f64>().ok()).unwrap_or(0.0);
    let errno = result.trim_start().strip_prefix("-1 ").and_then(|e| e.split_whitespace().next()).map(str::to_string);
    let path = args.split_once('"').and_then(|(_, rest)| rest.split_once('"')).map(|(p, _)| p.to_string());
    Some(Call { pid, name, path, errno, secs })
}

/// Calls that look a file up by name.
pub fn is_lookup(name: &str) -> bool {
    matches!(
        name,
        "stat"
            | "lstat"
            | "stat64"
            | "lstat64"
            | "newfstatat"
            | "fstatat64"
            | "statx"
            | "access"
            | "faccessat"
            | "faccessat2"
            | "open"
            | "openat"
            | "openat2"
            | "readlink"
            | "readlinkat"
            | "creat"
    )
}

/// Calls that start a process or thread.
pub fn is_spawn(name: &str) -> bool {
    matches!(name, "fork" | "vfork" | "clone" | "clone3" | "execve" | "execveat")
}

/// Calls that send response bytes.
pub fn is_write(name: &str) -> bool {
    matches!(name, "write" | "writev" | "send" | "sendto" | "sendmsg" | "sendfile" | "sendfile64" | "pwrite64")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"4321  accept4(3, {sa_family=AF_INET, sin_port=htons(40000), sin_addr=inet_addr("127.0.0.1")}, [16], SOCK_CLOEXEC) = 9 <0.512301>
4321  read(9, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 8000) = 28 <0.000015>
4321  newfstatat(AT_FDCWD, "/srv/www/.htaccess", 0x7ffd, 0) = -1 ENOENT (No such file or directory) <0.000009>
4321  openat(AT_FDCWD, "/srv/.htaccess", O_RDONLY|O_CLOEXEC) = -1 ENOENT (No such file or directory) <0.000007>
4322  read(5,  <unfinished ...>
4321  writev(9, [{iov_base="HTTP/1.1 200 OK\r\n", iov_len=17}], 1) = 17 <0.000031>
4322  <... read resumed>"x", 1) = 1 <0.250000>
4321  --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED} ---
4321  clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD) = 4400 <0.000210>
4400  +++ exited with 0 +++
"#;

    #[test]
    fn parses_calls_results_and_times() {
        let calls = parse(SAMPLE);
        let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["accept4", "read", "newfstatat", "openat", "writev", "read", "clone"]);
        assert_eq!(calls[2].path.as_deref(), Some("/srv/www/.htaccess"));
        assert_eq!(calls[2].errno.as_deref(), Some("ENOENT"));
        assert_eq!(calls[1].errno, None);
        assert!((calls[0].secs - 0.512301).abs() < 1e-9);
        // The resumed read is joined to its start and keeps its pid and time.
        assert_eq!((calls[5].pid, calls[5].secs), (4322, 0.25));
        assert!(is_lookup("newfstatat") && is_spawn("clone") && is_write("writev"));
    }

    #[test]
    fn lines_without_pids() {
        let calls = parse("close(3) = 0 <0.000004>\n");
        assert_eq!(calls.len(), 1);
        assert_eq!((calls[0].pid, calls[0].name.as_str()), (0, "close"));
    }
}
