//! The file names an `include` pattern matches, as glob(3) finds them for nginx and php-fpm:
//! wildcards (`*`, `?`, `[...]`) in the last component only, sorted, dot files only when the
//! pattern asks for them; a pattern that matches nothing includes nothing.

use std::path::{Path, PathBuf};

use crate::server::tree::MAX_ENTRIES;

/// Whether `pattern` has wildcards.
pub fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '['])
}

/// The files `pattern` (absolute) names: itself when it has no wildcard (read by the caller,
/// which says why it cannot be), else the matching files in its directory.
pub fn expand(pattern: &Path) -> Result<Vec<PathBuf>, String> {
    let text = pattern.to_string_lossy();
    if !is_glob(&text) {
        return Ok(vec![pattern.to_path_buf()]);
    }
    let (Some(dir), Some(name)) = (pattern.parent(), pattern.file_name()) else {
        return Err(format!("include {text}: not a file pattern"));
    };
    if is_glob(&dir.to_string_lossy()) {
        return Err(format!("include {text}: wildcards in a directory name are not read yet"));
    }
    let name = name.to_string_lossy();
    let Some(names) = names(dir).map_err(|e| format!("include {text}: {e}"))? else { return Ok(Vec::new()) };
    let found: Vec<PathBuf> = names
        .into_iter()
        .filter(|n| (!n.starts_with('.') || name.starts_with('.')) && matches(name.as_bytes(), n.as_bytes()))
        .map(|n| dir.join(n))
        // A directory matched is nothing to read (symlinks are followed); anything else is
        // read, and refused there unless it is a regular file (a FIFO would hold the server).
        .filter(|p| !p.is_dir())
        .collect();
    Ok(found)
}

/// The names in `dir`, sorted; None when it cannot be read. Counted as they are read: a
/// directory of more than `MAX_ENTRIES` is refused before it fills memory.
pub fn names(dir: &Path) -> Result<Option<Vec<String>>, String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(None) };
    let mut out = Vec::new();
    for e in entries.flatten() {
        if out.len() >= MAX_ENTRIES {
            return Err(format!("{}: more than {MAX_ENTRIES} entries", dir.display()));
        }
        out.push(e.file_name().to_string_lossy().into_owned());
    }
    out.sort();
    Ok(Some(out))
}

/// fnmatch(3) without flags, for one file name.
fn matches(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|i| matches(rest, &name[i..])),
        Some((b'?', rest)) => !name.is_empty() && matches(rest, &name[1..]),
        Some((b'[', rest)) if rest.contains(&b']') => {
            let Some((&c, tail)) = name.split_first() else { return false };
            let (negate, set) = match rest.first() {
                Some(b'!' | b'^') => (true, &rest[1..]),
                _ => (false, rest),
            };
            // A ']' first in the set is a member, not its end.
            let end = set.iter().skip(1).position(|&b| b == b']').map(|i| i + 1).unwrap_or(0);
            if set.is_empty() || set[end] != b']' {
                return pattern[0] == c && matches(rest, tail);
            }
            let members = &set[..end];
            let mut hit = false;
            let mut i = 0;
            while i < members.len() {
                if i + 2 < members.len() && members[i + 1] == b'-' {
                    hit |= (members[i]..=members[i + 2]).contains(&c);
                    i += 3;
                } else {
                    hit |= members[i] == c;
                    i += 1;
                }
            }
            hit != negate && matches(&set[end + 1..], tail)
        }
        Some((&p, rest)) => name.first() == Some(&p) && matches(rest, &name[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_glob3_does() {
        assert!(matches(b"*.conf", b"www.conf") && !matches(b"*.conf", b"www.conf.bak"));
        assert!(matches(b"?.c[a-o]nf", b"a.conf") && !matches(b"[!a]*", b"abc"));
        let dir = tempfile::tempdir().unwrap();
        for f in ["b.conf", "a.conf", ".hidden.conf", "c.txt"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("d.conf")).unwrap();
        let got = expand(&dir.path().join("*.conf")).unwrap();
        assert_eq!(got, [dir.path().join("a.conf"), dir.path().join("b.conf")]);
        assert!(expand(&dir.path().join("none/*.conf")).unwrap().is_empty());
        assert_eq!(expand(&dir.path().join("x")).unwrap(), [dir.path().join("x")]);
    }
}
