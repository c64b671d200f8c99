//! A user's own Apache tree (`[target] config = "PATH/apache2.conf"`), read as Apache reads
//! it: ServerRoot is the main file's directory (Debian's `-d`), Debian's `envvars` beside it
//! gives the `${VARIABLES}`, `Include`/`IncludeOptional` follow globs and directories, and
//! `<IfModule>`/`<IfDefine>` are read through (every directive kept, with the sections it is
//! in). Two kinds of change come out of it, kept apart as `UserTree` wants: the knobs' edits
//! on the user's own directives (the diff) and the run's rewrites that make the copy run here
//! (loopback listeners, pid, mutex and log paths in the run directory), which never reach it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::server::backends::{self, Backend, Reach};
use crate::server::tree::{CopyPlace, Edits, MAX_FILES, UserTree};

/// How deep includes may nest (Apache's own limit is 128).
const MAX_DEPTH: usize = 64;
/// Directives that write a log: each is moved into the run directory; a piped one starts a
/// program webtune cannot confine. (ScriptLog takes no pipe, but writes a file all the same.)
const LOGS: [&str; 6] = ["ErrorLog", "CustomLog", "TransferLog", "GlobalLog", "ForensicLog", "ScriptLog"];
/// Directives whose first argument is a place the server writes, and the name it takes in the
/// run directory: a directory or file, or (socache) a `shmcb:PATH(SIZE)` or `dbm:PATH` file.
const WRITES: [(&str, &str); 3] = [("CacheRoot", "cache"), ("CoreDumpDirectory", ""), ("DavLockDB", "davlock")];
const SOCACHES: [(&str, &str); 3] =
    [("SSLSessionCache", "ssl_scache"), ("SSLStaplingCache", "ssl_stapling"), ("AuthnCacheSOCache", "authn_cache")];
/// The MPM's own directives: added to its configuration file when the tree does not set them.
const MPM_DIRECTIVES: [&str; 14] = [
    "StartServers",
    "MinSpareServers",
    "MaxSpareServers",
    "MinSpareThreads",
    "MaxSpareThreads",
    "MaxRequestWorkers",
    "MaxClients",
    "ServerLimit",
    "ThreadLimit",
    "ThreadsPerChild",
    "MaxConnectionsPerChild",
    "MaxRequestsPerChild",
    "AsyncRequestWorkerFactor",
    "ThreadStackSize",
];
/// Old and new names of one setting: the tree's spelling is the one edited.
const ALIASES: [(&str, &str); 2] =
    [("MaxRequestWorkers", "MaxClients"), ("MaxConnectionsPerChild", "MaxRequestsPerChild")];

/// What a line of configuration is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Plain,
    /// `<Name args>`
    Open,
    /// `</Name>`
    Close,
}

/// A section a directive is in: `IfModule mpm_prefork_module`, `VirtualHost *:80`...
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Lowercase.
    pub name: String,
    pub args: String,
}

/// One directive as read, where it is.
#[derive(Debug, Clone)]
pub struct Directive {
    /// Index of its file in the tree.
    pub file: usize,
    /// First physical line, from 0.
    pub line: usize,
    /// Physical lines it spans (backslash continuations).
    pub span: usize,
    pub kind: Kind,
    /// As written (without `<` or `</`).
    pub name: String,
    /// As written, `${VARIABLES}` unexpanded (without an opener's `>`).
    pub args: String,
    /// The sections around it, outermost first.
    pub within: Vec<Section>,
    /// For an opener: the line of its `</Name>` in the same file.
    pub close: Option<usize>,
}

impl Directive {
    /// Whether the directive is `name` (Apache's names are case-insensitive).
    pub fn is(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name)
    }

    fn inside(&self, section: &str) -> bool {
        self.within.iter().any(|s| s.name == section)
    }
}

/// The tree as Apache reads it.
pub struct ApacheTree {
    pub tree: UserTree,
    pub directives: Vec<Directive>,
    /// Debian's envvars, `export NAME=value` in order, expanded.
    pub env: Vec<(String, String)>,
    /// `Define NAME value` of the tree: variables too, but Apache's own, not the environment's.
    pub defines: Vec<(String, String)>,
    /// Include paths that reach a file of the tree through a symbolic link (Debian's
    /// `*-enabled` entries): (as Apache names it, the file itself), made again in the copy.
    pub links: Vec<(PathBuf, PathBuf)>,
    /// The envvars and the Defines by name, a Define over the environment and the last one
    /// winning: looked up once per directive, it is kept, not rebuilt (which was quadratic).
    vars: HashMap<String, String>,
}

/// Where a `WRITES` or `SOCACHES` directive's place goes in the run directory `d`: a path
/// its new name, a cache file its kind and size (`shmcb:D/ssl_scache(512000)`); None for what
/// writes nowhere of its own (`none`, a `shmcb` at the default place, another provider).
fn moved_writer(x: &Directive, first: &str, d: &str) -> Option<String> {
    let named = |list: &[(&str, &'static str)]| list.iter().find(|(n, _)| x.is(n)).map(|(_, name)| *name);
    let at = |name: &str| if name.is_empty() { d.to_string() } else { format!("{d}/{name}") };
    if let Some(name) = named(&WRITES) {
        return Some(format!("\"{}\"", at(name)));
    }
    let name = named(&SOCACHES)?;
    let (kind, path) = first.split_once(':')?;
    let size = path.find('(').map_or("", |i| &path[i..]);
    (["shmcb", "dbm", "shm"].contains(&kind.to_ascii_lowercase().as_str()) && !path.starts_with('('))
        .then(|| format!("{kind}:{}{size}", at(name)))
}

/// Error text of a line: "PATH:LINE: why".
fn at(path: &Path, line: usize, why: impl std::fmt::Display) -> String {
    format!("{}:{}: {why}", path.display(), line + 1)
}

impl ApacheTree {
    /// Reads the tree whose main file is `main`; refuses, with file:line, what cannot be run
    /// safely from a copy (a Listen inside a <Macro>, a piped log, an Include that cannot be read).
    pub fn read(main: &Path) -> Result<ApacheTree, String> {
        let tree = UserTree::new("apache2", main).map_err(|e| e.0)?;
        let base = tree.base.clone();
        let mut me = ApacheTree {
            tree,
            directives: Vec::new(),
            env: Vec::new(),
            defines: Vec::new(),
            links: Vec::new(),
            vars: HashMap::new(),
        };
        me.env.push(("APACHE_CONFDIR".into(), base.display().to_string()));
        let envvars = base.join("envvars");
        if envvars.is_file() {
            let i = me.tree.read(&envvars).map_err(|e| e.0)?;
            let text = me.tree.files[i].text.clone();
            me.env = source_envvars(&text, me.env.clone());
        }
        me.vars = me.env.iter().cloned().collect();
        let mut reader = Reader { root: base };
        me.tree.enter(0).map_err(|e| e.0)?;
        reader.file(&mut me, 0, &[], 0)?;
        Ok(me)
    }

    /// A variable of the envvars or a `Define`, as Apache expands `${NAME}`.
    pub fn expand(&self, text: &str) -> String {
        expand(text, &self.vars)
    }

    /// The file a directive is in.
    pub fn path_of(&self, d: &Directive) -> &Path {
        &self.tree.files[d.file].path
    }

    /// The MPM the tree loads ("prefork", "event", "worker"), from its first LoadModule of one.
    pub fn mpm(&self) -> Option<String> {
        self.directives.iter().filter(|d| d.kind == Kind::Plain && d.is("LoadModule")).find_map(|d| {
            let module = words(&d.args).into_iter().next()?;
            Some(module.strip_prefix("mpm_")?.strip_suffix("_module")?.to_string())
        })
    }

    /// Whether `d` is read by the server the tree loads: not in a <Macro>, nor in another
    /// MPM's <IfModule>.
    fn applies(&self, d: &Directive, mpm: Option<&str>) -> bool {
        !d.inside("macro")
            && d.within
                .iter()
                .all(|s| s.name != "ifmodule" || mpm_of_condition(&s.args).is_none_or(|m| Some(m.as_str()) == mpm))
    }

    /// Where the server would pass requests on: ProxyPass(Match) and BalancerMember URLs,
    /// RewriteRule [P] targets, `SetHandler proxy:...` and ProxyRemote(Match) chains, in every
    /// virtual host (not in a <Macro>, whose Use is refused when it pipes).
    pub fn backends(&self) -> Vec<Backend> {
        let mut out = Vec::new();
        for d in self.directives.iter().filter(|d| d.kind == Kind::Plain && !d.inside("macro")) {
            let w = words(&self.expand(&d.args));
            // A balancer's name is not a backend: its members are.
            let url = |w: &[String]| {
                w.iter()
                    .take(2)
                    .find(|a| (a.contains("://") && !a.starts_with("balancer://")) || a.starts_with("unix:"))
                    .cloned()
            };
            let target = if d.is("ProxyPass") || d.is("ProxyPassMatch") || d.is("BalancerMember") {
                url(&w)
            } else if d.is("ProxyRemote") || d.is("ProxyRemoteMatch") {
                w.get(1).cloned()
            } else if d.is("SetHandler") {
                w.first().filter(|h| h.to_ascii_lowercase().starts_with("proxy:")).cloned()
            } else if d.is("RewriteRule") {
                let flags = w.get(2).map_or(String::new(), |f| f.trim_matches(['[', ']']).to_ascii_lowercase());
                w.get(1).filter(|_| flags.split(',').any(|f| f == "p" || f == "proxy")).cloned()
            } else {
                None
            };
            if let Some(Reach::Address(address)) = target.map(|t| backends::reach(&t, &[])) {
                let at = format!("{}:{}", self.tree.relative(self.path_of(d)).display(), d.line + 1);
                out.push(Backend { at, directive: d.name.clone(), address });
            }
        }
        out
    }

    /// Where the tree sets directive `name` (or its other name), as the server reads it; for
    /// a two-word knob (`PerlSetVar Debug`), where its first argument is the second word.
    pub fn occurrences(&self, name: &str) -> Vec<&Directive> {
        let mpm = self.mpm();
        let (first, var) = match name.split_once(' ') {
            Some((f, v)) => (f, Some(v)),
            None => (name, None),
        };
        let alias = ALIASES.iter().find_map(|(a, b)| {
            if a.eq_ignore_ascii_case(first) {
                Some(*b)
            } else if b.eq_ignore_ascii_case(first) {
                Some(*a)
            } else {
                None
            }
        });
        let mut seen = Vec::new();
        let mut out = Vec::new();
        for d in &self.directives {
            let named = d.is(first) || alias.is_some_and(|a| d.is(a));
            let var_ok = var.is_none_or(|v| words(&d.args).first().is_some_and(|w| w.eq_ignore_ascii_case(v)));
            if d.kind == Kind::Plain && named && var_ok && self.applies(d, mpm.as_deref()) {
                // A file included twice is edited once.
                if !seen.contains(&(d.file, d.line)) {
                    seen.push((d.file, d.line));
                    out.push(d);
                }
            }
        }
        out
    }

    /// The value the tree sets for `name` now (the last one read wins, as in Apache).
    pub fn current(&self, name: &str) -> Option<String> {
        let d = self.occurrences(name).into_iter().next_back()?;
        let args = d.args.trim();
        Some(match name.split_once(' ') {
            Some(_) => args.split_once(char::is_whitespace).map_or("", |(_, v)| v).trim().to_string(),
            None => args.to_string(),
        })
    }

    /// The knobs' edits, `(directive, value)` in the tree's syntax, on the user's own lines:
    /// changed wherever the tree sets them, added where the server reads them otherwise.
    /// Also what the recommendation says: each line with the file it lands in.
    pub fn knob_ops(&self, settings: &[(String, String)]) -> (Ops, Vec<String>) {
        let mpm = self.mpm();
        let mut ops = Ops::default();
        let mut said = Vec::new();
        for (name, value) in settings {
            let found = self.occurrences(name);
            let (first, var) = match name.split_once(' ') {
                Some((f, v)) => (f, Some(v)),
                None => (name.as_str(), None),
            };
            let written = match var {
                Some(v) => format!("{v} {value}"),
                None => value.clone(),
            };
            if found.is_empty() {
                let (file, line, indent) = self.place_for(first, mpm.as_deref());
                ops.insert(file, line, format!("{indent}{name} {value}"));
                let rel = self.tree.relative(&self.tree.files[file].path);
                said.push(format!("{name} {value}   # added to {}", rel.display()));
                continue;
            }
            for d in found {
                let rel = self.tree.relative(self.path_of(d));
                said.push(format!("{name} {value}   # {}:{}", rel.display(), d.line + 1));
                if same_value(&d.args, &written) {
                    continue;
                }
                let first_line = self.tree.files[d.file].line(d.line).unwrap_or("");
                ops.replace(d.file, d.line, d.span, with_args(first_line, &d.name, &written));
            }
        }
        (ops, said)
    }

    /// Where a directive the tree does not set goes: inside the loaded MPM's <IfModule>, or
    /// at the end of its mpm_NAME.conf, for the MPM's directives; else at the end of the
    /// main file. (file, line to insert before, indentation)
    fn place_for(&self, name: &str, mpm: Option<&str>) -> (usize, usize, String) {
        let end_of = |file: usize| (file, self.tree.files[file].line_count(), String::new());
        if !MPM_DIRECTIVES.iter().any(|m| m.eq_ignore_ascii_case(name)) {
            return end_of(0);
        }
        let Some(mpm) = mpm else { return end_of(0) };
        let block = self
            .directives
            .iter()
            .find(|d| d.kind == Kind::Open && d.is("IfModule") && mpm_of_condition(&d.args).as_deref() == Some(mpm));
        if let Some(open) = block
            && let Some(close) = open.close
        {
            let indent = self
                .directives
                .iter()
                .find(|d| d.file == open.file && d.line > open.line && d.line < close)
                .and_then(|d| self.tree.files[d.file].line(d.line))
                .map(|l| l[..l.len() - l.trim_start().len()].to_string())
                .unwrap_or_else(|| "\t".into());
            return (open.file, close, indent);
        }
        let conf = format!("mpm_{mpm}.conf");
        match self.tree.files.iter().position(|f| f.path.file_name().is_some_and(|n| n == conf.as_str())) {
            Some(i) => end_of(i),
            None => end_of(0),
        }
    }

    /// The user's files with `ops` applied, by path: what `UserTree::diff` and `write_copy` take.
    pub fn edited(&self, ops: &Ops) -> Edits {
        let mut out = Edits::new();
        for (file, list) in &ops.0 {
            let f = &self.tree.files[*file];
            out.insert(f.path.clone(), apply(&f.text, list));
        }
        out
    }
}

/// Edits by file, by (line, lines replaced): the new lines; 0 lines replaced inserts before
/// `line`. Keyed, so that a rewrite of a line already edited finds it at once (a list
/// searched per edit was quadratic in a tree of many virtual hosts).
#[derive(Debug, Default, Clone)]
pub struct Ops(pub BTreeMap<usize, BTreeMap<(usize, usize), Vec<String>>>);

impl Ops {
    /// Replaces `span` (at least 1) lines from `line`.
    pub fn replace(&mut self, file: usize, line: usize, span: usize, text: String) {
        // The run's rewrite of a line wins over a knob's edit of the same line in the copy.
        self.0.entry(file).or_default().insert((line, span.max(1)), vec![text]);
    }

    /// Inserts `text` before line `line` of file `file`.
    pub fn insert(&mut self, file: usize, line: usize, text: String) {
        self.0.entry(file).or_default().entry((line, 0)).or_default().push(text);
    }

    /// Both sets of edits; `later`'s win on a line both replace.
    pub fn merged(&self, later: &Ops) -> Ops {
        let mut out = self.clone();
        for (file, list) in &later.0 {
            for (&(line, span), text) in list {
                for t in text {
                    if span == 0 {
                        out.insert(*file, line, t.clone());
                    } else {
                        out.replace(*file, line, span, t.clone());
                    }
                }
            }
        }
        out
    }
}

/// `text` with `ops` applied, in one pass: each line keeps its own ending (CRLF stays CRLF);
/// an insertion goes before a replacement of its line, and of two replacements that meet
/// the first.
fn apply(text: &str, ops: &BTreeMap<(usize, usize), Vec<String>>) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let eol = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut out = String::with_capacity(text.len() + 64 * ops.len());
    let mut next = 0;
    for (&(line, span), new) in ops {
        let at = line.min(lines.len());
        if at < next {
            continue;
        }
        lines[next..at].iter().for_each(|l| out.push_str(l));
        // A last line without its newline gets one before what follows it.
        if at == lines.len() && at > next && !out.ends_with('\n') {
            out.push('\n');
        }
        for t in new {
            out.push_str(t);
            out.push_str(eol);
        }
        next = (at + span).min(lines.len());
    }
    lines[next..].iter().for_each(|l| out.push_str(l));
    out
}

/// The names of the logs moved into the run directory: each log its file's own name, a
/// second of the same name numbered (`2-access.log`).
#[derive(Default)]
struct LogNames {
    /// By the path the tree gives.
    by_path: HashMap<String, String>,
    taken: HashSet<String>,
    /// The next number to try for a name.
    next: HashMap<String, usize>,
}

impl LogNames {
    fn name(&mut self, path: &str) -> String {
        if let Some(name) = self.by_path.get(path) {
            return name.clone();
        }
        let base = match Path::new(path).file_name() {
            _ if path.starts_with("syslog") => "syslog.log".into(),
            Some(n) => n.to_string_lossy().to_string(),
            None => "log".into(),
        };
        let mut name = base.clone();
        while self.taken.contains(&name) {
            let n = self.next.entry(base.clone()).or_insert(2);
            name = format!("{n}-{base}");
            *n += 1;
        }
        self.taken.insert(name.clone());
        self.by_path.insert(path.to_string(), name.clone());
        name
    }
}

/// `line` (a directive named `name`) with its arguments replaced, its indentation and the
/// gap after the name kept (Debian aligns values in columns).
fn with_args(line: &str, name: &str, args: &str) -> String {
    let indent = &line[..line.len() - line.trim_start().len()];
    let rest = &line.trim_start()[name.len().min(line.trim_start().len())..];
    let gap = &rest[..rest.len() - rest.trim_start().len()];
    let gap = if gap.is_empty() { " " } else { gap };
    format!("{indent}{name}{gap}{args}")
}

/// Whether the tree's arguments already say `value` (on/On alike, spaces aside).
fn same_value(args: &str, value: &str) -> bool {
    let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ").to_ascii_lowercase();
    norm(args) == norm(value)
}

/// Which MPM an <IfModule> condition names (`mpm_prefork_module`, `prefork.c`,
/// `mpm_prefork.c`), if any; a negated one names none.
fn mpm_of_condition(args: &str) -> Option<String> {
    let c = args.trim().trim_matches('"');
    if c.starts_with('!') {
        return None;
    }
    let name = c.strip_suffix("_module").or_else(|| c.strip_suffix(".c"))?;
    let name = name.strip_prefix("mpm_").unwrap_or(name);
    ["prefork", "worker", "event"].contains(&name).then(|| name.to_string())
}

/// Debian's envvars, read simply: `export NAME=value` lines, `$NAME`/`${NAME}` expanded from
/// what came before (unset ones empty, as in the shell), quotes dropped; anything else (the
/// `if` around SUFFIX) is not run.
pub fn source_envvars(text: &str, mut env: Vec<(String, String)>) -> Vec<(String, String)> {
    for line in text.lines() {
        let Some(rest) = line.trim().strip_prefix("export ") else { continue };
        let Some((name, value)) = rest.trim().split_once('=') else { continue };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let value = value.trim().trim_matches('"').trim_matches('\'');
        let value = shell_expand(value, &env);
        env.retain(|(k, _)| k != name);
        env.push((name.to_string(), value));
    }
    env
}

fn lookup<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// `$NAME` and `${NAME}` as the shell expands them (unset: empty).
fn shell_expand(value: &str, env: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, len) = match after.strip_prefix('{') {
            Some(b) => match b.find('}') {
                Some(end) => (&b[..end], end + 2),
                None => ("", 0),
            },
            None => {
                let end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
                (&after[..end], end)
            }
        };
        if len == 0 {
            out.push('$');
            rest = after;
            continue;
        }
        out.push_str(lookup(env, name).unwrap_or(""));
        rest = &after[len..];
    }
    out + rest
}

/// `${NAME}` as Apache expands it: from the environment or a Define; unknown ones stay.
pub fn expand(text: &str, vars: &HashMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        match after.find('}') {
            Some(end) => {
                match vars.get(&after[..end]) {
                    Some(v) => out.push_str(v),
                    None => out.push_str(&rest[i..i + end + 3]),
                }
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    out + rest
}

/// A directive's arguments as Apache splits them: by white space, "quoted" or 'quoted'
/// words whole, a backslash keeping the quote after it.
pub fn words(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = args.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&c) = chars.peek() else { break };
        let mut word = String::new();
        if c == '"' || c == '\'' {
            chars.next();
            while let Some(x) = chars.next() {
                if x == '\\' && chars.peek() == Some(&c) {
                    word.push(c);
                    chars.next();
                } else if x == c {
                    break;
                } else {
                    word.push(x);
                }
            }
        } else {
            while let Some(&x) = chars.peek() {
                if x.is_whitespace() {
                    break;
                }
                word.push(x);
                chars.next();
            }
        }
        out.push(word);
    }
    out
}

/// Reads files into the tree, following includes.
struct Reader {
    /// ServerRoot: relative includes are relative to it.
    root: PathBuf,
}

impl Reader {
    fn file(&mut self, tree: &mut ApacheTree, index: usize, within: &[Section], depth: usize) -> Result<(), String> {
        let path = tree.tree.files[index].path.clone();
        let text = tree.tree.files[index].text.clone();
        let physical: Vec<&str> = text.lines().collect();
        let mut stack: Vec<Section> = within.to_vec();
        let mut opened: Vec<usize> = Vec::new();
        let mut i = 0;
        while i < physical.len() {
            let start = i;
            let logical = logical_line(&physical, &mut i);
            let line = logical.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (kind, name, args) = split_directive(line);
            let d = Directive {
                file: index,
                line: start,
                span: i - start,
                kind,
                name: name.clone(),
                args: args.clone(),
                within: stack.clone(),
                close: None,
            };
            let in_macro = d.inside("macro");
            match kind {
                Kind::Open => {
                    opened.push(tree.directives.len());
                    stack.push(Section { name: name.to_ascii_lowercase(), args: args.clone() });
                    tree.directives.push(d);
                    continue;
                }
                Kind::Close => {
                    if let Some(o) = opened.pop() {
                        tree.directives[o].close = Some(start);
                    }
                    stack.pop();
                    tree.directives.push(d);
                    continue;
                }
                Kind::Plain => {}
            }
            let expanded = words(&expand(&args, &tree.vars));
            let first = expanded.first().cloned().unwrap_or_default();
            if d.is("Listen") && in_macro {
                return Err(at(&path, start, "a Listen inside a <Macro> cannot be moved to a loopback port"));
            }
            if LOGS.iter().any(|l| d.is(l)) && first.starts_with('|') {
                return Err(at(&path, start, format!("{name} {first}: a piped log starts a program; log to a file")));
            }
            // A macro's body is checked above; what a Use passes in is only seen here.
            if d.is("Use")
                && !in_macro
                && let Some(pipe) = expanded.iter().find(|w| w.starts_with('|'))
            {
                return Err(at(
                    &path,
                    start,
                    format!(
                        "Use {}: {pipe} passed to a macro starts a program (a piped log); log to a file",
                        expanded.join(" ")
                    ),
                ));
            }
            if d.is("Define")
                && !in_macro
                && let Some(n) = expanded.first()
            {
                let value = expanded.get(1).cloned().unwrap_or_default();
                tree.vars.insert(n.clone(), value.clone());
                tree.defines.push((n.clone(), value));
            }
            if d.is("ServerRoot") && !in_macro && !first.is_empty() {
                self.root = PathBuf::from(&first);
            }
            tree.directives.push(d);
            let optional = name.eq_ignore_ascii_case("IncludeOptional");
            if (name.eq_ignore_ascii_case("Include") || optional) && !in_macro {
                if depth >= MAX_DEPTH {
                    return Err(at(&path, start, format!("includes nest deeper than {MAX_DEPTH}")));
                }
                let pattern =
                    if Path::new(&first).is_absolute() { PathBuf::from(&first) } else { self.root.join(&first) };
                let found = glob(&pattern).map_err(|e| at(&path, start, format!("{name} {first}: {e}")))?;
                if found.is_empty() && !optional {
                    return Err(at(
                        &path,
                        start,
                        format!("{name} {first}: no file matches (IncludeOptional allows that)"),
                    ));
                }
                for seen in found {
                    let real = std::fs::canonicalize(&seen)
                        .map_err(|e| at(&path, start, format!("{name} {}: {e}", seen.display())))?;
                    let child =
                        tree.tree.read(&real).map_err(|e| at(&path, start, format!("{name} {first}: {}", e.0)))?;
                    if seen != real && !tree.links.contains(&(seen.clone(), real.clone())) {
                        tree.links.push((seen, real));
                    }
                    tree.tree.enter(child).map_err(|e| at(&path, start, format!("{name} {first}: {}", e.0)))?;
                    self.file(tree, child, &stack, depth + 1)?;
                    tree.tree.leave();
                }
            }
        }
        Ok(())
    }
}

/// The logical line that starts at physical line `*i` (a line ending in `\` continues on
/// the next); `*i` moves past it.
fn logical_line(physical: &[&str], i: &mut usize) -> String {
    let mut logical = String::new();
    loop {
        let l = physical[*i];
        *i += 1;
        match l.strip_suffix('\\') {
            Some(cont) if *i < physical.len() => logical.push_str(cont),
            _ => {
                logical.push_str(l);
                break;
            }
        }
    }
    logical
}

/// A directive's line as its kind, name and arguments: `</Name>`, `<Name args>`, `Name args`.
fn split_directive(line: &str) -> (Kind, String, String) {
    if let Some(close) = line.strip_prefix("</") {
        (Kind::Close, close.trim_end_matches('>').trim().to_string(), String::new())
    } else if let Some(open) = line.strip_prefix('<') {
        let open = open.trim_end().strip_suffix('>').unwrap_or(open);
        let (n, a) = open.split_once(char::is_whitespace).unwrap_or((open, ""));
        (Kind::Open, n.to_string(), a.trim().to_string())
    } else {
        let (n, a) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        (Kind::Plain, n.to_string(), a.trim().to_string())
    }
}

/// A <VirtualHost>'s addresses moved with their listeners (`new_port_of`), each once; the
/// load's virtual host on webtune's own listener (`own`, the load port) on every address.
fn vhost_addrs(addrs: &[String], own: Option<u16>, new_port_of: &dyn Fn(&str) -> Option<u16>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for a in addrs {
        let keep = if a.starts_with("_default_") { "_default_" } else { "*" };
        let moved = match (own, new_port_of(a)) {
            (Some(load_port), _) => format!("*:{load_port}"),
            (None, Some(port)) => format!("{keep}:{port}"),
            (None, None) => a.clone(),
        };
        if !out.contains(&moved) {
            out.push(moved);
        }
    }
    out
}

/// A Mutex directive's words with every file-based mechanism's directory moved to `dir`.
fn moved_mutexes(words: &[String], dir: &str) -> Vec<String> {
    words
        .iter()
        .map(|m| match m.split_once(':') {
            Some((kind, _)) if ["file", "fcntl", "flock"].contains(&kind) => format!("{kind}:{dir}"),
            _ => m.clone(),
        })
        .collect()
}

/// The files a pattern names, as Apache includes them, sorted: wildcards (`*`, `?`, `[...]`)
/// in any component, a directory standing for every file under it. A path without wildcards
/// that does not exist gives none. The caps hold as it goes (a symlink to `.` would make
/// the walk endless): `MAX_FILES` paths at most, each directory walked once.
fn glob(pattern: &Path) -> Result<Vec<PathBuf>, String> {
    let mut found = vec![PathBuf::from("/")];
    for comp in pattern.components().skip(1) {
        let part = comp.as_os_str().to_string_lossy().to_string();
        let mut next = Vec::new();
        for dir in &found {
            if !part.contains(['*', '?', '[']) {
                let p = dir.join(&part);
                if p.exists() {
                    next.push(p);
                }
                continue;
            }
            let Some(names) = super::include::names(dir)? else { continue };
            next.extend(names.into_iter().filter(|n| fnmatch(&part, n)).map(|n| dir.join(n)));
            if next.len() > MAX_FILES {
                return Err(format!("more than {MAX_FILES} paths match"));
            }
        }
        found = next;
    }
    let mut walk = Walk::default();
    for p in found {
        if p.is_dir() {
            walk.dir(&p)?;
        } else {
            walk.file(p)?;
        }
    }
    Ok(walk.files)
}

/// A walk of the directories an include names: every file under them, sorted, subdirectories
/// in place, counted as it goes.
#[derive(Default)]
struct Walk {
    files: Vec<PathBuf>,
    /// Directories walked, by device and inode: one reached again (two links to it) is
    /// walked once.
    seen: HashSet<(u64, u64)>,
    /// The directories being walked, outermost first: one reached again from inside itself
    /// (a symlink to `.` or `..`) is a loop Apache would not finish either.
    open: Vec<((u64, u64), PathBuf)>,
}

impl Walk {
    fn dir(&mut self, dir: &Path) -> Result<(), String> {
        let id = std::fs::metadata(dir)
            .map(|m| {
                use std::os::unix::fs::MetadataExt;
                (m.dev(), m.ino())
            })
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        if let Some((_, outer)) = self.open.iter().find(|(o, _)| *o == id) {
            return Err(format!(
                "{} leads back to {}, which it is in (a symlink loop)",
                dir.display(),
                outer.display()
            ));
        }
        if !self.seen.insert(id) {
            return Ok(());
        }
        if self.seen.len() > MAX_FILES {
            return Err(format!("more than {MAX_FILES} directories under the include"));
        }
        let names = super::include::names(dir)?.ok_or_else(|| format!("{}: cannot be read", dir.display()))?;
        self.open.push((id, dir.to_path_buf()));
        for n in names {
            let p = dir.join(n);
            if p.is_dir() { self.dir(&p)? } else { self.file(p)? }
        }
        self.open.pop();
        Ok(())
    }

    fn file(&mut self, path: PathBuf) -> Result<(), String> {
        self.files.push(path);
        if self.files.len() > MAX_FILES {
            return Err(format!("more than {MAX_FILES} files"));
        }
        Ok(())
    }
}

/// Shell wildcards on one name: `*`, `?`, `[abc]`, `[a-z]`, `[!x]`; a leading dot is matched
/// only by a dot (as fnmatch with FNM_PERIOD).
fn fnmatch(pattern: &str, name: &str) -> bool {
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    fn go(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).any(|i| go(&p[1..], &n[i..])),
            Some('?') => !n.is_empty() && go(&p[1..], &n[1..]),
            Some('[') => {
                let Some(end) = p.iter().skip(1).position(|&c| c == ']').map(|e| e + 1) else {
                    return n.first() == Some(&'[') && go(&p[1..], &n[1..]);
                };
                let Some(&c) = n.first() else { return false };
                let set = &p[1..end];
                let (negate, set) = match set.first() {
                    Some('!' | '^') => (true, &set[1..]),
                    _ => (false, set),
                };
                let mut hit = false;
                let mut i = 0;
                while i < set.len() {
                    if i + 2 < set.len() && set[i + 1] == '-' {
                        hit |= set[i] <= c && c <= set[i + 2];
                        i += 3;
                    } else {
                        hit |= set[i] == c;
                        i += 1;
                    }
                }
                hit != negate && go(&p[end + 1..], &n[1..])
            }
            Some(&x) => n.first() == Some(&x) && go(&p[1..], &n[1..]),
        }
    }
    go(&p, &n)
}

/// A `<VirtualHost>` of the tree.
#[derive(Debug, Clone)]
pub struct VHost {
    /// Its opener in `directives`.
    pub opener: usize,
    /// Its addresses, expanded (`*:80`, `_default_:443`, `[::1]:8080`).
    pub addrs: Vec<String>,
    /// ServerName and ServerAlias values, lowercase, without scheme or port.
    pub names: Vec<String>,
}

/// The port of an address (`*:80` -> 80; `*` -> none).
fn port_of(addr: &str) -> Option<u16> {
    let (_, port) = addr.rsplit_once(':')?;
    port.parse().ok()
}

/// The run's rewrites of the copy, and webtune's own lines beside it.
pub struct Placed {
    pub ops: Ops,
    /// What changed in the copy, "file:line: old -> new", for the evidence.
    pub said: Vec<String>,
    /// webtune's own directives, read after the tree (`apache2 -c Include`).
    pub own: String,
    /// The error logs as moved into the run directory, the server's own first.
    pub error_logs: Vec<PathBuf>,
}

impl Placed {
    /// webtune's own directives, read after the tree: the run's files, an error log when the
    /// tree has none at server level, the load's listener when `listen` names its host, the
    /// status page.
    fn own_directives(&mut self, p: &CopyPlace, server_error_log: bool, listen: Option<&str>) {
        let d = p.run_dir.display();
        let mut own = format!(
            "# webtune's own directives, read after the tree (apache2 -c): the run's files, its status page.\n\
             PidFile {d}/apache2.pid\nDefaultRuntimeDir {d}\n"
        );
        if !server_error_log {
            own += &format!("ErrorLog {d}/logs/error.log\n");
            self.error_logs.insert(0, PathBuf::from(format!("{d}/logs/error.log")));
        }
        if let Some(host) = listen {
            own += &format!("Listen {host}:{}\n", p.load_port);
            self.said.push(format!("(webtune's own file): Listen {host}:{} for the site loaded", p.load_port));
        }
        own += &format!(
            "<IfModule !status_module>\nLoadModule status_module {}/mod_status.so\n</IfModule>\n\
             <Location {STATUS}>\n  SetHandler server-status\n  <IfModule authz_core_module>\n    Require all granted\n  </IfModule>\n</Location>\n",
            MODULES
        );
        self.own = own;
    }
}

impl ApacheTree {
    /// The virtual hosts of the tree, in order (those inside a macro left out).
    pub fn vhosts(&self) -> Vec<VHost> {
        let mut out: Vec<VHost> = Vec::new();
        let mut current: Option<usize> = None;
        for (i, d) in self.directives.iter().enumerate() {
            if d.inside("macro") {
                continue;
            }
            match d.kind {
                Kind::Open if d.is("VirtualHost") => {
                    let addrs = words(&self.expand(&d.args));
                    out.push(VHost { opener: i, addrs, names: Vec::new() });
                    current = Some(out.len() - 1);
                }
                Kind::Close if d.is("VirtualHost") => current = None,
                Kind::Plain if d.is("ServerName") || d.is("ServerAlias") => {
                    if let Some(v) = current {
                        for w in words(&self.expand(&d.args)) {
                            let w = w.split_once("://").map_or(w.as_str(), |(_, h)| h).to_ascii_lowercase();
                            let w = w
                                .rsplit_once(':')
                                .filter(|(_, p)| p.parse::<u16>().is_ok())
                                .map_or(w.as_str(), |(h, _)| h);
                            out[v].names.push(w.to_string());
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// The virtual host `site` names (ServerName or ServerAlias, wildcards as Apache takes
    /// them); an error that lists the names there are when none answers.
    pub fn site(&self, site: &str) -> Result<usize, String> {
        let vhosts = self.vhosts();
        answering(&vhosts, site).ok_or_else(|| {
            let names: Vec<String> = vhosts.iter().flat_map(|v| v.names.iter().cloned()).collect();
            format!(
                "site {site:?}: no <VirtualHost> of the tree has that ServerName or ServerAlias (there are: {})",
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            )
        })
    }

    /// The tree's distinct listeners (`Listen` arguments, in the order read), the port each
    /// moves to, and whether the picked virtual host needs a listener of its own.
    fn listener_ports(
        &self,
        p: &CopyPlace,
        vhosts: &[VHost],
        picked: Option<usize>,
        free: &mut dyn FnMut() -> anyhow::Result<u16>,
    ) -> anyhow::Result<(Vec<String>, BTreeMap<String, u16>, bool)> {
        // Distinct listeners, in the order read.
        let listens: Vec<&Directive> =
            self.directives.iter().filter(|x| x.kind == Kind::Plain && x.is("Listen")).collect();
        let mut keys: Vec<String> = Vec::new();
        for l in &listens {
            let k = words(&self.expand(&l.args)).into_iter().next().unwrap_or_default();
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        let key_port = |k: &str| k.parse::<u16>().ok().or_else(|| port_of(k));
        // The load port goes to the picked host's listener when it is the first host there
        // (Apache's default for it); else the picked host gets a listener of its own.
        let mut ports: BTreeMap<String, u16> = BTreeMap::new();
        let mut own_listener = false;
        match picked {
            Some(v) => {
                let port = vhosts[v].addrs.iter().find_map(|a| port_of(a));
                let first_there = port.is_some_and(|port| {
                    vhosts[..v].iter().all(|o| o.addrs.iter().all(|a| port_of(a).is_some_and(|x| x != port)))
                });
                match keys.iter().find(|k| key_port(k) == port) {
                    Some(k) if first_there => {
                        ports.insert(k.clone(), p.load_port);
                    }
                    _ => own_listener = true,
                }
            }
            None => match keys.first() {
                Some(k) => {
                    ports.insert(k.clone(), p.load_port);
                }
                None => own_listener = true,
            },
        }
        for k in &keys {
            if !ports.contains_key(k) {
                ports.insert(k.clone(), free()?);
            }
        }
        Ok((keys, ports, own_listener))
    }

    /// The virtual host the load goes to: the `site` named, else the one answering the Host
    /// header the load sends, else the first (None without any).
    fn picked(&self, p: &CopyPlace, vhosts: &[VHost]) -> anyhow::Result<Option<usize>> {
        Ok(match (p.site, p.host_header) {
            (Some(site), _) => Some(self.site(site).map_err(anyhow::Error::msg)?),
            (None, Some(h)) => {
                answering(vhosts, h.rsplit_once(':').filter(|(_, x)| x.parse::<u16>().is_ok()).map_or(h, |(h, _)| h))
                    .or((!vhosts.is_empty()).then_some(0))
            }
            (None, None) => (!vhosts.is_empty()).then_some(0),
        })
    }

    /// The run's rewrites: every Listen on a loopback port (the picked virtual host's is the
    /// load port), virtual hosts following their listeners, pid, runtime, mutex, scoreboard
    /// and log paths in the run directory, User and Group gone unless root. `free` gives a
    /// free port for each other listener.
    pub fn place(&self, p: &CopyPlace, free: &mut dyn FnMut() -> anyhow::Result<u16>) -> anyhow::Result<Placed> {
        let d = p.run_dir.display().to_string();
        let host = super::adapter::bracket(p.host);
        let vhosts = self.vhosts();
        let picked = self.picked(p, &vhosts)?;
        let (keys, ports, own_listener) = self.listener_ports(p, &vhosts, picked, free)?;
        let key_port = |k: &str| k.parse::<u16>().ok().or_else(|| port_of(k));
        let new_port_of = |addr: &str| -> Option<u16> {
            let port = port_of(addr)?;
            keys.iter()
                .find(|k| k.as_str() == addr)
                .or_else(|| keys.iter().find(|k| key_port(k) == Some(port)))
                .map(|k| ports[k])
        };

        let mut placed = Placed { ops: Ops::default(), said: Vec::new(), own: String::new(), error_logs: Vec::new() };
        let mut logs = LogNames::default();
        let mut error_logs: HashSet<PathBuf> = HashSet::new();
        let mut server_error_log = false;
        for (i, x) in self.directives.iter().enumerate() {
            let old_line = self.tree.files[x.file].line(x.line).unwrap_or("");
            let indent = &old_line[..old_line.len() - old_line.trim_start().len()];
            let w = words(&self.expand(&x.args));
            let first = w.first().cloned().unwrap_or_default();
            let (_, rest) = split_first_raw(&x.args);
            let rest = if rest.is_empty() { String::new() } else { format!(" {rest}") };
            // A program the user's server starts too: run, but named in the plan.
            if x.is("RewriteMap")
                && let Some(program) = w.get(1).and_then(|m| m.strip_prefix("prg:"))
            {
                let rel = self.tree.relative(self.path_of(x));
                placed.said.push(format!(
                    "{}:{}: RewriteMap {first} starts {program} beside the server, as yours does",
                    rel.display(),
                    x.line + 1
                ));
            }
            let new = match x.kind {
                Kind::Open if x.is("VirtualHost") && !x.inside("macro") => {
                    let own = own_listener && picked.is_some_and(|v| vhosts[v].opener == i);
                    let addrs = vhost_addrs(&w, own.then_some(p.load_port), &new_port_of);
                    Some(format!("{indent}<{} {}>", x.name, addrs.join(" ")))
                }
                Kind::Plain if x.is("Listen") => {
                    let port = ports[&first];
                    let proto = w.get(1).map(|s| format!(" {s}")).unwrap_or_default();
                    Some(format!("{indent}{} {host}:{port}{proto}", x.name))
                }
                Kind::Plain if x.is("PidFile") => Some(format!("{indent}{} {d}/apache2.pid", x.name)),
                Kind::Plain if x.is("DefaultRuntimeDir") => Some(format!("{indent}{} {d}", x.name)),
                Kind::Plain if x.is("ServerRoot") => Some(format!("{indent}{} \"{}\"", x.name, p.copy_dir.display())),
                Kind::Plain if x.is("ScoreBoardFile") => {
                    let name = Path::new(&first)
                        .file_name()
                        .map_or("apache2.scoreboard".into(), |n| n.to_string_lossy().to_string());
                    Some(format!("{indent}{} {d}/{name}", x.name))
                }
                Kind::Plain if x.is("Mutex") => {
                    let moved = moved_mutexes(&w, &d);
                    (moved != w).then(|| format!("{indent}{} {}", x.name, moved.join(" ")))
                }
                Kind::Plain if WRITES.iter().chain(&SOCACHES).any(|(n, _)| x.is(n)) && !first.is_empty() => {
                    moved_writer(x, &first, &d).map(|moved| format!("{indent}{} {moved}{rest}", x.name))
                }
                // syslog too: Apache would send it to /dev/log, outside the run.
                Kind::Plain if LOGS.iter().any(|l| x.is(l)) && !first.is_empty() => {
                    let path = format!("{d}/logs/{}", logs.name(&first));
                    if x.is("ErrorLog") {
                        let server = !x.inside("virtualhost");
                        server_error_log |= server;
                        let pb = PathBuf::from(&path);
                        if error_logs.insert(pb.clone()) {
                            if server { placed.error_logs.insert(0, pb) } else { placed.error_logs.push(pb) }
                        }
                    }
                    Some(format!("{indent}{} \"{path}\"{rest}", x.name))
                }
                Kind::Plain if (x.is("User") || x.is("Group")) && !p.as_root => {
                    Some(format!("{indent}# {} (webtune: not root, the copy runs as this user)", old_line.trim()))
                }
                Kind::Plain if x.is("Include") || x.is("IncludeOptional") => {
                    let (raw, _) = split_first_raw(&x.args);
                    let raw = raw.trim_matches('"').trim_matches('\'');
                    Path::new(raw).is_absolute().then(|| {
                        format!("{indent}{} \"{}\"", x.name, self.tree.copied(p.copy_dir, Path::new(raw)).display())
                    })
                }
                _ => None,
            };
            if let Some(new) = new
                && new != old_line
            {
                let rel = self.tree.relative(self.path_of(x));
                placed.said.push(format!("{}:{}: {} -> {}", rel.display(), x.line + 1, old_line.trim(), new.trim()));
                placed.ops.replace(x.file, x.line, x.span, new);
            }
        }
        placed.own_directives(p, server_error_log, own_listener.then_some(host.as_str()));
        Ok(placed)
    }

    /// Writes the copy into `copy` with `ops` applied, and the links Apache follows there
    /// (`mods-enabled/x.conf` -> the copy's `mods-available/x.conf`); what else sits beside
    /// the main file (certificates, `magic`) is linked to the user's, read in place.
    pub fn write_copy(&self, copy: &Path, ops: &Ops) -> anyhow::Result<PathBuf> {
        let main = self.tree.write_copy(copy, &self.edited(ops))?;
        for (seen, real) in &self.links {
            let at = self.tree.copied(copy, seen);
            if std::fs::symlink_metadata(&at).is_err() {
                if let Some(dir) = at.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                std::os::unix::fs::symlink(self.tree.copied(copy, real), &at)?;
            }
        }
        if let Ok(entries) = std::fs::read_dir(&self.tree.base) {
            for e in entries.flatten() {
                let at = copy.join(e.file_name());
                if std::fs::symlink_metadata(&at).is_err() {
                    std::os::unix::fs::symlink(e.path(), &at)?;
                }
            }
        }
        Ok(main)
    }
}

/// Where Debian installs Apache's modules.
pub(super) const MODULES: &str = "/usr/lib/apache2/modules";

/// The path of webtune's status page in the copy (its own, beside any the tree has).
pub const STATUS: &str = "/webtune-server-status";

/// The first virtual host answering to `name` (lowercase; ServerAlias wildcards).
fn answering(vhosts: &[VHost], name: &str) -> Option<usize> {
    let name = name.to_ascii_lowercase();
    vhosts.iter().position(|v| v.names.iter().any(|n| n == &name || (n.contains(['*', '?']) && fnmatch(n, &name))))
}

/// A directive's first argument as written (quotes kept) and the rest.
fn split_first_raw(args: &str) -> (String, String) {
    let a = args.trim_start();
    let end = match a.chars().next() {
        Some(q @ ('"' | '\'')) => a[1..].find(q).map_or(a.len(), |i| i + 2),
        _ => a.find(char::is_whitespace).unwrap_or(a.len()),
    };
    (a[..end].to_string(), a[end..].trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small Debian-like tree: main file, envvars, an enabled MPM conf through a link.
    fn tree(mpm_conf: &str, main_extra: &str) -> (tempfile::TempDir, ApacheTree) {
        let dir = write_tree(mpm_conf, main_extra);
        let t = ApacheTree::read(&dir.path().join("apache2.conf")).unwrap();
        (dir, t)
    }

    fn write_tree(mpm_conf: &str, main_extra: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for sub in ["mods-available", "mods-enabled", "sites-enabled"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(
            root.join("envvars"),
            "unset HOME\nexport APACHE_RUN_USER=www-data\nexport APACHE_LOG_DIR=/var/log/apache2$SUFFIX\n",
        )
        .unwrap();
        std::fs::write(
            root.join("apache2.conf"),
            format!(
                "PidFile ${{APACHE_PID_FILE}}\nUser ${{APACHE_RUN_USER}}\nErrorLog ${{APACHE_LOG_DIR}}/error.log\n\
                 LoadModule mpm_prefork_module /usr/lib/apache2/modules/mod_mpm_prefork.so\n\
                 IncludeOptional mods-enabled/*.conf\nListen 80\nIncludeOptional sites-enabled/\n{main_extra}"
            ),
        )
        .unwrap();
        std::fs::write(root.join("mods-available/mpm_prefork.conf"), mpm_conf).unwrap();
        std::os::unix::fs::symlink("../mods-available/mpm_prefork.conf", root.join("mods-enabled/mpm_prefork.conf"))
            .unwrap();
        std::fs::write(
            root.join("sites-enabled/a.conf"),
            "<VirtualHost *:80>\n  ServerName a.test\n</VirtualHost>\n<VirtualHost *:80>\n  ServerName b.test\n  \
             ServerAlias *.b.test\n  CustomLog /var/log/b.log combined\n</VirtualHost>\n",
        )
        .unwrap();
        dir
    }

    fn set(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn knobs_land_on_the_users_own_lines_or_where_the_server_reads_them() {
        let conf = "<IfModule mpm_prefork_module>\n\tStartServers   5\n\tMaxClients     150\n</IfModule>\n\
                    <IfModule mpm_event_module>\n\tMaxRequestWorkers 400\n</IfModule>\n";
        let (_dir, t) = tree(conf, "PerlSetVar Debug 1\n");
        assert_eq!(t.mpm().as_deref(), Some("prefork"));
        assert_eq!(t.env.iter().find(|(k, _)| k == "APACHE_LOG_DIR").unwrap().1, "/var/log/apache2");
        // The old name is the tree's spelling; the event MPM's block is not read.
        assert_eq!(t.current("MaxRequestWorkers").as_deref(), Some("150"));
        let (ops, said) = t.knob_ops(&set(&[
            ("MaxRequestWorkers", "8"),
            ("StartServers", "5"),
            ("MaxSpareServers", "3"),
            ("PerlSetVar Debug", "0"),
            ("Timeout", "30"),
        ]));
        let diff = t.tree.diff(&t.edited(&ops)).unwrap();
        assert!(diff.contains("-\tMaxClients     150\n+\tMaxClients     8\n"), "{diff}");
        assert!(diff.contains("+\tMaxSpareServers 3\n </IfModule>\n <IfModule mpm_event_module>"), "{diff}");
        assert!(diff.contains("-PerlSetVar Debug 1\n+PerlSetVar Debug 0\n+Timeout 30\n"), "{diff}");
        let changed = |w: &str| diff.lines().any(|l| (l.starts_with('-') || l.starts_with('+')) && l.contains(w));
        assert!(!changed("StartServers") && !changed("400"), "equal values give no hunk:\n{diff}");
        assert!(diff.contains("+++ b/mods-available/mpm_prefork.conf"), "the link's target is patched:\n{diff}");
        assert!(said.iter().any(|l| l == "MaxRequestWorkers 8   # mods-available/mpm_prefork.conf:3"), "{said:?}");

        // Debian's own mpm_prefork.conf has no <IfModule>: added at its end.
        let (_dir, t) = tree("StartServers 5\n", "");
        let (ops, _) = t.knob_ops(&set(&[("MaxConnectionsPerChild", "100"), ("KeepAlive", "Off")]));
        let diff = t.tree.diff(&t.edited(&ops)).unwrap();
        assert!(diff.contains(" StartServers 5\n+MaxConnectionsPerChild 100\n"), "{diff}");
        assert!(diff.contains("+++ b/apache2.conf") && diff.contains("+KeepAlive Off\n"), "{diff}");
    }

    #[test]
    fn the_copy_listens_on_loopback_and_keeps_its_files_in_the_run_directory() {
        let (dir, t) = tree("MaxRequestWorkers 10\n", "");
        let run = dir.path().join("run");
        let copy = run.join("conf");
        let mut next = 9000;
        let mut free = || {
            next += 1;
            Ok(next)
        };
        let placing = |site: Option<&'static str>| CopyPlace {
            run_dir: &run,
            copy_dir: &copy,
            host: "127.0.0.1",
            load_port: 8000,
            site,
            host_header: None,
            moved: &[],
            as_root: false,
        };
        // The first host of *:80 is its default: Listen 80 becomes the load port.
        let placed = t.place(&placing(None), &mut free).unwrap();
        let text = |placed: &Placed| {
            let edited = t.edited(&placed.ops);
            edited.iter().map(|(p, s)| format!("{}\n{s}", p.display())).collect::<String>()
        };
        let all = text(&placed);
        assert!(all.contains("Listen 127.0.0.1:8000\n") && all.contains("<VirtualHost *:8000>"), "{all}");
        assert!(all.contains(&format!("PidFile {}/apache2.pid", run.display())), "{all}");
        assert!(all.contains(&format!("ErrorLog \"{}/logs/error.log\"", run.display())), "{all}");
        assert!(all.contains(&format!("CustomLog \"{}/logs/b.log\" combined", run.display())), "{all}");
        assert!(all.contains("# User ${APACHE_RUN_USER} (webtune: not root"), "{all}");
        assert!(!placed.own.contains("Listen"), "{}", placed.own);
        // A host that is not its port's default gets the load port to itself.
        let placed = t.place(&placing(Some("x.b.test")), &mut free).unwrap();
        let all = text(&placed);
        assert!(all.contains("Listen 127.0.0.1:9001\n") && all.contains("<VirtualHost *:8000>"), "{all}");
        assert!(all.contains("<VirtualHost *:9001>") && placed.own.contains("Listen 127.0.0.1:8000\n"), "{all}");
        assert!(t.place(&placing(Some("c.test")), &mut free).is_err());

        // The copy keeps the link Apache follows; the user's files are as they were.
        let main = t.write_copy(&copy, &placed.ops).unwrap();
        assert_eq!(main, copy.join("apache2.conf"));
        let link = std::fs::read_link(copy.join("mods-enabled/mpm_prefork.conf")).unwrap();
        assert_eq!(link, copy.join("mods-available/mpm_prefork.conf"));
        let user = std::fs::read_to_string(dir.path().join("apache2.conf")).unwrap();
        assert!(user.contains("Listen 80\n"));
    }

    #[test]
    fn what_the_server_writes_moves_to_the_run_directory_and_a_program_it_starts_is_named() {
        let extra = "SSLSessionCache shmcb:/var/run/apache2/ssl_scache(512000)\nSSLStaplingCache none\n\
                     CacheRoot /var/cache/apache2/mod_cache_disk\nDavLockDB /var/lock/dav\nErrorLog syslog:local1\n\
                     ScriptLog /var/log/cgi.log\nRewriteMap lower prg:/usr/local/bin/lower\n";
        let (dir, t) = tree("", extra);
        let run = dir.path().join("run");
        let copy = run.join("conf");
        let placing = CopyPlace {
            run_dir: &run,
            copy_dir: &copy,
            host: "127.0.0.1",
            load_port: 8000,
            site: None,
            host_header: None,
            moved: &[],
            as_root: false,
        };
        let mut next = 9000;
        let placed = t
            .place(&placing, &mut || {
                next += 1;
                Ok(next)
            })
            .unwrap();
        let all: String = t.edited(&placed.ops).values().cloned().collect();
        let r = run.display();
        for line in [
            format!("SSLSessionCache shmcb:{r}/ssl_scache(512000)\n"),
            "SSLStaplingCache none\n".to_string(),
            format!("CacheRoot \"{r}/cache\"\n"),
            format!("DavLockDB \"{r}/davlock\"\n"),
            format!("ErrorLog \"{r}/logs/syslog.log\"\n"),
            format!("ScriptLog \"{r}/logs/cgi.log\"\n"),
            "RewriteMap lower prg:/usr/local/bin/lower\n".to_string(),
        ] {
            assert!(all.contains(&line), "{line}\n{all}");
        }
        assert!(
            placed
                .said
                .iter()
                .any(|l| l.ends_with("RewriteMap lower starts /usr/local/bin/lower beside the server, as yours does")),
            "{:?}",
            placed.said
        );
    }

    #[test]
    fn what_cannot_run_from_a_copy_is_refused_with_its_line() {
        let refused = |extra: &str| {
            let dir = write_tree("", extra);
            ApacheTree::read(&dir.path().join("apache2.conf")).err().unwrap_or_default()
        };
        assert!(
            refused("\n<Macro M $p>\n  Listen $p\n</Macro>\n").contains("apache2.conf:10: a Listen inside a <Macro>")
        );
        assert!(
            refused("CustomLog \"|/bin/rotatelogs x\" common\n").contains("apache2.conf:8: CustomLog |/bin/rotatelogs")
        );
        assert!(
            refused("Include nothing-here/*.conf\n").contains("apache2.conf:8: Include nothing-here/*.conf: no file")
        );
        assert!(refused("IncludeOptional nothing-here/*.conf\n").is_empty());
    }

    #[test]
    fn wildcards_and_envvars_read_as_the_shell_would() {
        assert!(fnmatch("*.conf", "a.conf") && !fnmatch("*.conf", ".a.conf") && !fnmatch("*.conf", "a.load"));
        assert!(fnmatch("mpm_[a-p]*.lo?d", "mpm_prefork.load") && !fnmatch("[!m]*", "mpm"));
        let env = source_envvars("export A=/x\nexport B=\"${A}/y$C\"\nif [ 1 ]; then\n  export D=z\nfi\n", Vec::new());
        assert_eq!(env, set(&[("A", "/x"), ("B", "/x/y"), ("D", "z")]));
        assert_eq!(expand("${A}/log ${NOPE}", &env.iter().cloned().collect()), "/x/log ${NOPE}");
        assert_eq!(words("a \"b c\" 'd' e\\\"f"), ["a", "b c", "d", "e\\\"f"]);
    }
}
