//! The shape of the house, read from the source: every path into the crate (`use crate::…`,
//! `use super::…`, a child module's name, `crate::x::` in code) is an arrow from one file to
//! another. Two rules keep holding (issue 48): no arrow points up the layers (`LAYERS`,
//! lowest first, the order src/lib.rs's module doc gives), and no files import each other in
//! a circle (a registry `mod.rs` that re-exports a toolkit its children import back is one).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules, lowest first: a module imports only from modules before it (and
/// from itself). src/lib.rs lists them in this order.
const LAYERS: &[&str] = &[
    "input",
    "engine",
    "stats",
    "syscalls",
    "sys",
    "safe_write",
    "fileset",
    "lab",
    "procmem",
    "aggregate",
    "bench",
    "server",
    "tune",
    "store",
    "report",
    "cli",
];

/// One source file: its module path (`["tune", "strategies", "joint"]`) and text.
struct File {
    module: Vec<String>,
    text: String,
}

/// Every .rs file under src/ by its path relative to src/ (main.rs, the binary, aside).
fn files() -> BTreeMap<String, File> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path: PathBuf = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
            if rel == "main.rs" {
                continue;
            }
            let mut module: Vec<String> = rel.trim_end_matches(".rs").split('/').map(String::from).collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                module.pop();
            }
            out.insert(rel, File { module, text: std::fs::read_to_string(&path).unwrap() });
        }
    }
    out
}

/// The text with comments, strings and char literals blanked (newlines kept), so that only
/// code is read.
fn code(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if c == 'r'
            && matches!(next, Some('"' | '#'))
            && !b[..i].last().is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                blank(&mut out, b[j]);
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                if i < b.len() {
                    blank(&mut out, b[i]);
                }
                i += 1;
            }
            out.push_str("\"\"");
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1F600}') or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < b.len() && b[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The code split into tokens: identifiers, `::` and single punctuation.
fn tokens(code: &str) -> Vec<String> {
    let b: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push(b[start..i].iter().collect());
        } else if c == ':' && b.get(i + 1) == Some(&':') {
            out.push("::".to_string());
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
            i += 1;
        }
    }
    out
}

/// The paths one `use` tree names, from `tokens[*i]` (after `use`), each with the name it
/// binds (the last segment, or its `as` alias): `a::{b, c::{self, d as e}}` gives
/// `a::b`, `a::c`, `a::c::d` (as e).
fn use_tree(tokens: &[String], i: &mut usize, prefix: &[String], out: &mut Vec<(Vec<String>, String)>) {
    let mut path = prefix.to_vec();
    while *i < tokens.len() {
        let t = tokens[*i].as_str();
        match t {
            "{" => {
                *i += 1;
                loop {
                    use_tree(tokens, i, &path, out);
                    match tokens.get(*i).map(String::as_str) {
                        Some(",") => *i += 1,
                        _ => break,
                    }
                    if tokens.get(*i).map(String::as_str) == Some("}") {
                        break;
                    }
                }
                *i += 1; // the closing brace
                return;
            }
            "::" => *i += 1,
            "*" => {
                *i += 1;
                out.push((path.clone(), "*".into()));
                return;
            }
            "self" if !path.is_empty() => {
                *i += 1;
                let name = path.last().cloned().unwrap();
                let name = alias(tokens, i).unwrap_or(name);
                out.push((path.clone(), name));
                return;
            }
            "," | "}" | ";" => {
                if !path.is_empty() {
                    let name = path.last().cloned().unwrap();
                    out.push((path.clone(), name));
                }
                return;
            }
            "as" => {
                let name = alias(tokens, i).unwrap();
                out.push((path.clone(), name));
                return;
            }
            _ => {
                path.push(t.to_string());
                *i += 1;
            }
        }
    }
}

fn alias(tokens: &[String], i: &mut usize) -> Option<String> {
    if tokens.get(*i).map(String::as_str) == Some("as") {
        *i += 2;
        return Some(tokens[*i - 1].clone());
    }
    None
}

/// The arrows: for each file, the files it imports from.
fn graph(files: &BTreeMap<String, File>) -> BTreeMap<String, BTreeSet<String>> {
    let by_module: BTreeMap<Vec<String>, String> = files.iter().map(|(f, x)| (x.module.clone(), f.clone())).collect();
    // The file a path lands in: the longest prefix of it that is a module with a file.
    let target =
        |path: &[String]| -> Option<String> { (1..=path.len()).rev().find_map(|n| by_module.get(&path[..n]).cloned()) };
    let is_module = |path: &[String]| by_module.contains_key(path);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, file) in files {
        let toks = tokens(&code(&file.text));
        let mut to = BTreeSet::new();
        // Inline modules (`mod tests { … }`): their names and the depth of their brace.
        let mut inline: Vec<(String, usize)> = Vec::new();
        let mut depth = 0usize;
        // Names bound by `use` to modules of the crate.
        let mut bound: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut i = 0;
        while i < toks.len() {
            let here: Vec<String> = file.module.iter().cloned().chain(inline.iter().map(|(m, _)| m.clone())).collect();
            // A path's first segment made absolute, or None for another crate's.
            let resolve = |seg: &[String], bound: &BTreeMap<String, Vec<String>>| -> Option<Vec<String>> {
                let mut abs = here.clone();
                let mut rest = seg;
                match seg.first().map(String::as_str)? {
                    "crate" => {
                        abs.clear();
                        rest = &seg[1..];
                    }
                    "self" => rest = &seg[1..],
                    "super" => {
                        while rest.first().map(String::as_str) == Some("super") {
                            abs.pop();
                            rest = &rest[1..];
                        }
                    }
                    first => {
                        if let Some(m) = bound.get(first) {
                            abs = m.clone();
                            rest = &seg[1..];
                        } else {
                            let mut child = here.clone();
                            child.push(first.to_string());
                            let mut file_child = file.module.clone();
                            file_child.push(first.to_string());
                            if !is_module(&child) && !is_module(&file_child) {
                                return None;
                            }
                            if !is_module(&child) {
                                abs = file.module.clone();
                            }
                        }
                    }
                }
                abs.extend(rest.iter().cloned());
                Some(abs)
            };
            let t = toks[i].as_str();
            match t {
                "{" => {
                    depth += 1;
                    i += 1;
                }
                "}" => {
                    if inline.last().is_some_and(|(_, d)| *d == depth) {
                        inline.pop();
                    }
                    depth = depth.saturating_sub(1);
                    i += 1;
                }
                "mod" if toks.get(i + 2).map(String::as_str) == Some("{") => {
                    inline.push((toks[i + 1].clone(), depth + 1));
                    i += 2;
                }
                "use" => {
                    i += 1;
                    let mut paths = Vec::new();
                    use_tree(&toks, &mut i, &[], &mut paths);
                    for (path, name) in paths {
                        let Some(abs) = resolve(&path, &bound) else { continue };
                        if let Some(f) = target(&abs) {
                            to.insert(f);
                        }
                        if name != "*" && is_module(&abs) {
                            bound.insert(name, abs);
                        }
                    }
                }
                _ if (t.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_'))
                    && toks.get(i + 1).map(String::as_str) == Some("::")
                    && (i == 0 || toks[i - 1] != "::") =>
                {
                    let mut path = vec![t.to_string()];
                    let mut j = i + 1;
                    while toks.get(j).map(String::as_str) == Some("::")
                        && toks.get(j + 1).is_some_and(|s| s.chars().all(|c| c.is_alphanumeric() || c == '_'))
                    {
                        path.push(toks[j + 1].clone());
                        j += 2;
                    }
                    if let Some(f) = resolve(&path, &bound).and_then(|abs| target(&abs)) {
                        to.insert(f);
                    }
                    i = j;
                }
                _ => i += 1,
            }
        }
        to.remove(name);
        to.remove("lib.rs");
        edges.insert(name.clone(), to);
    }
    edges
}

fn layer(file: &str) -> Option<usize> {
    let top = file.split('/').next().unwrap().trim_end_matches(".rs");
    LAYERS.iter().position(|l| *l == top)
}

/// The arrows that point up the layers: "from -> to".
fn up_imports(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut out = Vec::new();
    for (from, tos) in edges {
        for to in tos {
            if let (Some(a), Some(b)) = (layer(from), layer(to))
                && b > a
            {
                out.push(format!("{from} -> {to}"));
            }
        }
    }
    out
}

/// The circles: each group of files that reach each other (a strongly connected component
/// of more than one file), named by its files.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(f) = todo.pop() {
            for t in edges.get(&f).into_iter().flatten() {
                if seen.insert(t.clone()) {
                    todo.push(t.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> = edges.keys().map(|f| (f, reach(f))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for f in edges.keys() {
        if done.contains(f) || !reaches[f].contains(f) {
            continue;
        }
        let group: Vec<String> = reaches[f].iter().filter(|g| reaches[*g].contains(f)).cloned().collect();
        done.extend(group.iter().cloned());
        out.push(group);
    }
    out
}

#[test]
fn no_import_points_up_the_layers() {
    let files = files();
    for f in files.keys() {
        let top = f.split('/').next().unwrap().trim_end_matches(".rs");
        assert!(f == "lib.rs" || LAYERS.contains(&top), "{f}: a module that LAYERS does not place");
    }
    let up = up_imports(&graph(&files));
    assert!(up.is_empty(), "{} imports point up the layers (LAYERS, lowest first):\n{}", up.len(), up.join("\n"));
}

#[test]
fn no_files_import_each_other_in_a_circle() {
    let circles = circles(&graph(&files()));
    let text: Vec<String> = circles.iter().map(|c| c.join(" <-> ")).collect();
    assert!(circles.is_empty(), "{} circles between files:\n{}", circles.len(), text.join("\n"));
}

#[test]
fn the_reader_sees_the_arrows_it_should() {
    // The reader itself, on a small tree: a `use` group, a relative child path, `super`, a
    // path in code, an alias, and an inline test module's `super::*` (its own file).
    let mut files = BTreeMap::new();
    let mut add = |name: &str, module: &[&str], text: &str| {
        files.insert(
            name.to_string(),
            File { module: module.iter().map(|s| s.to_string()).collect(), text: text.to_string() },
        );
    };
    add("a/mod.rs", &["a"], "mod b; pub use b::Thing; // use crate::c::X;\n");
    add("a/b.rs", &["a", "b"], "use super::Other; #[cfg(test)] mod tests { use super::*; }");
    add("c.rs", &["c"], "use crate::{a::{self as aa}, d};\nfn f() { let s = \"crate::e::X\"; aa::b::g(); }");
    add("d.rs", &["d"], "fn f() { crate::e::g(); }");
    add("e.rs", &["e"], "use std::fmt;");
    let edges = graph(&files);
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(edges["a/mod.rs"], set(&["a/b.rs"]));
    assert_eq!(edges["a/b.rs"], set(&["a/mod.rs"]));
    assert_eq!(edges["c.rs"], set(&["a/mod.rs", "a/b.rs", "d.rs"]));
    assert_eq!(edges["d.rs"], set(&["e.rs"]));
    assert_eq!(edges["e.rs"], set(&[]));
    assert_eq!(circles(&edges), vec![vec!["a/b.rs".to_string(), "a/mod.rs".to_string()]]);
}
