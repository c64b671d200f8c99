//! nginx from the user's own configuration (`[target] config = "PATH/nginx.conf"`): the tree
//! read as nginx reads it (includes and their globs), its directives with their file:line and
//! byte spans, and the two layers of edits over it: the knobs' (on the user's own directives,
//! they make the diff) and the run's (loopback listeners, pid, logs, temporary paths, moved
//! sockets; only in the copy). Also the php-fpm adapter's front, with the pool's socket moved.

use crate::server::backends::{self, Backend, Reach};
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::adapter::{Ctx, Prepared, bracket};
pub use super::edit::Edit;
use super::edit::apply;
use crate::server::process::Spawn;
use crate::server::settings::{Count, Typed};
use crate::server::tree::{CopyPlace, Edits, UserTree};

/// How deep includes may nest (nginx has no limit but a cycle would never end).
const MAX_DEPTH: usize = 16;

/// Main-context directives: a knob that the tree does not set goes to the main file's top.
const MAIN: [&str; 9] = [
    "worker_processes",
    "worker_rlimit_nofile",
    "worker_rlimit_core",
    "worker_cpu_affinity",
    "worker_priority",
    "worker_shutdown_timeout",
    "timer_resolution",
    "pcre_jit",
    "thread_pool",
];
/// Events-context directives: into the events block.
const EVENTS: [&str; 5] = ["worker_connections", "multi_accept", "accept_mutex", "accept_mutex_delay", "use"];
/// Temporary paths every copy sets in its http block (nginx's compiled-in ones are outside).
const TEMP_PATHS: [&str; 5] =
    ["client_body_temp_path", "proxy_temp_path", "fastcgi_temp_path", "uwsgi_temp_path", "scgi_temp_path"];
/// Directives that pass requests on: a socket webtune moved is followed in their arguments.
const PASSES: [&str; 5] = ["fastcgi_pass", "proxy_pass", "uwsgi_pass", "scgi_pass", "grpc_pass"];
/// Cache directories: moved into the run directory like the temporary paths.
const CACHES: [&str; 4] = ["proxy_cache_path", "fastcgi_cache_path", "uwsgi_cache_path", "scgi_cache_path"];

/// One word of a directive: its text unquoted, where it is in the file.
#[derive(Debug, Clone)]
pub struct Arg {
    pub text: String,
    pub span: Range<usize>,
}

/// One directive of the tree, in read order.
#[derive(Debug, Clone)]
pub struct Node {
    pub file: usize,
    pub line: usize,
    pub name: String,
    pub args: Vec<Arg>,
    /// From the name to its `;` or `{`, inclusive.
    pub span: Range<usize>,
    /// The blocks it is in, outermost first (indices of nodes).
    pub parents: Vec<usize>,
    pub block: bool,
}

/// The user's nginx tree, parsed.
#[derive(Debug, Clone)]
pub struct NginxTree {
    pub tree: UserTree,
    pub nodes: Vec<Node>,
    /// Each block's own directives (indices of nodes): a search of every node for each
    /// server block was quadratic in a tree of many virtual hosts.
    kids: Vec<Vec<usize>>,
}

/// "FILE:LINE" of a node, for errors.
pub fn at(tree: &NginxTree, n: &Node) -> String {
    format!("{}:{}", tree.tree.files[n.file].path.display(), n.line)
}

impl NginxTree {
    /// Reads the tree whose main file is `main`, every include followed.
    pub fn read(main: &Path) -> Result<NginxTree, String> {
        let tree = UserTree::new("nginx", main).map_err(|e| e.0)?;
        let mut t = NginxTree { tree, nodes: Vec::new(), kids: Vec::new() };
        t.tree.enter(0).map_err(|e| e.0)?;
        t.parse_file(0, &[], 0)?;
        t.kids = vec![Vec::new(); t.nodes.len()];
        for (i, n) in t.nodes.iter().enumerate() {
            if let Some(&p) = n.parents.last() {
                t.kids[p].push(i);
            }
        }
        Ok(t)
    }

    /// The names of a node's enclosing blocks.
    pub fn context(&self, n: &Node) -> Vec<&str> {
        n.parents.iter().map(|&p| self.nodes[p].name.as_str()).collect()
    }

    fn parse_file(&mut self, file: usize, parents: &[usize], depth: usize) -> Result<(), String> {
        let path = self.tree.files[file].path.clone();
        let f = self.tree.files[file].clone();
        let text = f.text.as_str();
        let mut stack: Vec<usize> = parents.to_vec();
        let mut words: Vec<Arg> = Vec::new();
        // By the file's line index: counting the newlines before each node was quadratic.
        let line_at = |pos: usize| f.line_at(pos);
        for tok in tokens(text).map_err(|(pos, e)| format!("{}:{}: {e}", path.display(), line_at(pos)))? {
            match tok {
                Token::Word(a) => words.push(a),
                Token::End(pos, opens) => {
                    let Some(first) = words.first().cloned() else {
                        return Err(format!(
                            "{}:{}: unexpected \"{}\"",
                            path.display(),
                            line_at(pos),
                            &text[pos..=pos]
                        ));
                    };
                    let node = Node {
                        file,
                        line: line_at(first.span.start),
                        name: first.text.clone(),
                        args: words.drain(..).skip(1).collect(),
                        span: first.span.start..pos + 1,
                        parents: stack.clone(),
                        block: opens,
                    };
                    let include = !opens && node.name == "include";
                    self.nodes.push(node);
                    if opens {
                        stack.push(self.nodes.len() - 1);
                    } else if include {
                        self.include(self.nodes.len() - 1, &stack, depth)?;
                    }
                }
                Token::Close(pos) => {
                    if !words.is_empty() || stack.len() <= parents.len() {
                        return Err(format!("{}:{}: unexpected \"}}\"", path.display(), line_at(pos)));
                    }
                    stack.pop();
                }
            }
        }
        if !words.is_empty() || stack.len() != parents.len() {
            let want = if words.is_empty() { "}" } else { ";" };
            return Err(format!(
                "{}:{}: unexpected end of file, expecting \"{want}\"",
                path.display(),
                line_at(text.len())
            ));
        }
        Ok(())
    }

    /// Reads what `include` node `i` names (relative to the main file's directory, as nginx
    /// resolves against its configuration's directory) and parses it in its place.
    fn include(&mut self, i: usize, stack: &[usize], depth: usize) -> Result<(), String> {
        let n = self.nodes[i].clone();
        let [pattern] = &n.args[..] else {
            return Err(format!("{}: include takes one file or pattern", at(self, &n)));
        };
        if depth >= MAX_DEPTH {
            return Err(format!("{}: includes nested more than {MAX_DEPTH} deep", at(self, &n)));
        }
        let pattern = self.tree.base.join(&pattern.text);
        let files = super::include::expand(&pattern).map_err(|e| format!("{}: {e}", at(self, &n)))?;
        for f in files {
            let idx = self.tree.read(&f).map_err(|e| format!("{}: include: {}", at(self, &n), e.0))?;
            self.tree.enter(idx).map_err(|e| format!("{}: include: {}", at(self, &n), e.0))?;
            self.parse_file(idx, stack, depth + 1)?;
            self.tree.leave();
        }
        Ok(())
    }

    fn nodes_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = (usize, &'a Node)> + 'a {
        self.nodes.iter().enumerate().filter(move |(_, n)| n.name == name)
    }

    /// The http server blocks, in read order.
    pub fn servers(&self) -> Vec<usize> {
        self.nodes_named("server").filter(|(_, n)| n.block && self.context(n) == ["http"]).map(|(i, _)| i).collect()
    }

    /// The server names of server block `s`.
    pub fn server_names(&self, s: usize) -> Vec<String> {
        self.children(s, "server_name").flat_map(|n| n.args.iter().map(|a| a.text.clone())).collect()
    }

    /// Directives `name` directly inside block `b`.
    fn children<'a>(&'a self, b: usize, name: &'a str) -> impl Iterator<Item = &'a Node> + 'a {
        self.kids[b].iter().map(|&i| &self.nodes[i]).filter(move |n| n.name == name)
    }

    /// The server block that serves `site` (a server_name, exact or with nginx's leading or
    /// trailing `*`), else the default: a listen marked default_server, else the first.
    pub fn loaded_server(&self, site: Option<&str>) -> Result<usize, String> {
        let servers = self.servers();
        if let Some(site) = site {
            let site = site.to_ascii_lowercase();
            let hit = |name: &String| {
                let name = name.to_ascii_lowercase();
                name == site
                    || name.strip_prefix('*').is_some_and(|s| site.ends_with(s))
                    || name.strip_prefix('.').is_some_and(|s| site == s || site.ends_with(&format!(".{s}")))
                    || name.strip_suffix('*').is_some_and(|s| site.starts_with(s))
            };
            if let Some(&s) = servers.iter().find(|&&s| self.server_names(s).iter().any(hit)) {
                return Ok(s);
            }
            let names: Vec<String> = servers.iter().flat_map(|&s| self.server_names(s)).collect();
            return Err(format!(
                "no server block of {} has server_name {site:?} (its server names: {})",
                self.tree.main().display(),
                if names.is_empty() { "none".into() } else { names.join(", ") }
            ));
        }
        let default = servers.iter().copied().find(|&s| {
            self.children(s, "listen")
                .any(|l| l.args.iter().skip(1).any(|a| a.text == "default_server" || a.text == "default"))
        });
        default
            .or(servers.first().copied())
            .ok_or_else(|| format!("{}: no server block in http", self.tree.main().display()))
    }

    /// Where a directive the tree does not set goes: the main file's first main-context
    /// directive (before it), or just inside its events or http block.
    fn insertion(&self, name: &str) -> Option<(usize, usize, String)> {
        let block = if MAIN.contains(&name) {
            let first = self.nodes.iter().find(|n| n.file == 0 && n.parents.is_empty())?;
            return Some((0, first.span.start, String::new()));
        } else if EVENTS.contains(&name) {
            "events"
        } else {
            "http"
        };
        let (_, b) = self.nodes_named(block).find(|(_, n)| n.block && n.parents.is_empty())?;
        Some((b.file, b.span.end, "\n\t".into()))
    }

    /// The knobs' edits: `values` on the user's own directives (main, events, http and server
    /// level; a location's own value is the user's choice), else added where nginx reads them.
    pub fn knob_edits(&self, values: &Typed, site: Option<&str>) -> anyhow::Result<Vec<Edit>> {
        let mut set: Vec<(String, String)> = Vec::new();
        if let Some(w) = values.workers() {
            set.push(("worker_processes".into(), w.to_string()));
        }
        match (values.keepalive().unwrap_or(true), values.keepalive_timeout()) {
            (false, _) => set.push(("keepalive_timeout".into(), "0".into())),
            (true, Some(t)) => set.push(("keepalive_timeout".into(), format!("{}s", t.seconds()?))),
            (true, None) => {}
        }
        if let Some(n) = values.max_requests() {
            anyhow::bail!("nginx workers are not recycled (max_requests {n}): drop the knob for nginx");
        }
        for (k, v) in values.natives() {
            if k == "access_log" || TEMP_PATHS.contains(&k) || k == "lock_file" {
                anyhow::bail!(
                    "{k}: with your own configuration, webtune moves this path into its run directory itself"
                );
            }
            set.push((k.to_string(), v.to_string()));
        }
        let mut edits = Vec::new();
        for (name, value) in set {
            let want = format!("{name} {value};");
            let theirs: Vec<&Node> = self
                .nodes_named(&name)
                .map(|(_, n)| n)
                .filter(|n| self.context(n).iter().all(|c| ["events", "http", "server"].contains(c)))
                .collect();
            for n in &theirs {
                let now: Vec<&str> = n.args.iter().map(|a| a.text.as_str()).collect();
                if now.join(" ") != value {
                    edits.push(Edit { file: n.file, at: n.span.clone(), text: want.clone() });
                }
            }
            if theirs.is_empty() {
                let (file, pos, indent) =
                    self.insertion(&name).ok_or_else(|| anyhow::anyhow!("{name}: no place for it in the tree"))?;
                let text = if indent.is_empty() { format!("{want}\n") } else { format!("{indent}{want}") };
                edits.push(Edit { file, at: pos..pos, text });
            }
        }
        if let Some(b) = values.backlog() {
            let s = self.loaded_server(site).map_err(|e| anyhow::anyhow!(e))?;
            if let Some(l) = self.children(s, "listen").next() {
                let mut words: Vec<String> = l.args.iter().map(|a| a.text.clone()).collect();
                words.retain(|w| !w.starts_with("backlog="));
                words.push(format!("backlog={b}"));
                edits.push(Edit { file: l.file, at: l.span.clone(), text: format!("listen {};", words.join(" ")) });
            }
        }
        Ok(edits)
    }

    /// The run's edits, which make the copy runnable here: listeners on loopback ports
    /// (`port` for the loaded server's, a free one for each other), logs, pid, temporary and
    /// cache paths in the run directory, absolute includes to the copy, moved sockets
    /// followed, `user` dropped unless root. `backlog` keeps the knob's. The `-g` directives
    /// the command line adds.
    pub fn run_edits(&self, place: &CopyPlace, backlog: Option<&str>) -> Result<(Vec<Edit>, String), String> {
        let d = place.run_dir.display();
        let mut edits = Vec::new();
        let arg = |n: &Node, text: String| n.args.first().map(|a| Edit { file: n.file, at: a.span.clone(), text });
        let loaded = self.loaded_server(place.site)?;
        let mut ports = Listeners::new(place, self.loaded_key(loaded)?);
        // The listener the load uses: the loaded server's first.
        let loaded_listen = self.children(loaded, "listen").next().map(|l| (l.file, l.span.start));
        let mut http_sets: Vec<&str> = Vec::new();
        let mut caches = 0;
        for (i, n) in self.nodes.iter().enumerate() {
            let ctx = self.context(n);
            match n.name.as_str() {
                "include" => {
                    let written = n.args.first().map_or("", |a| a.text.as_str());
                    if Path::new(written).is_absolute() {
                        let dir = Path::new(written).parent().unwrap_or(Path::new("/"));
                        let name = Path::new(written).file_name().unwrap_or_default();
                        let to = self.tree.copied(place.copy_dir, dir).join(name);
                        edits.extend(arg(n, quote(&to.display().to_string())));
                    }
                }
                "pid" | "daemon" | "master_process" | "lock_file" => {
                    // The command line's -g sets the first three; the lock is the run's.
                    edits.push(Edit { file: n.file, at: n.span.clone(), text: String::new() });
                }
                "user" if ctx.is_empty() && !place.as_root => {
                    edits.push(Edit { file: n.file, at: n.span.clone(), text: String::new() });
                }
                // A syslog or stderr log goes to the run's file too: the tune's traffic is not
                // the machine's log's to carry.
                "error_log" => edits.extend(arg(n, format!("{d}/error.log"))),
                "access_log" if n.args.first().is_some_and(|a| a.text != "off") => {
                    edits.extend(arg(n, format!("{d}/access.log")))
                }
                name if TEMP_PATHS.contains(&name) => {
                    if ctx == ["http"] {
                        http_sets.push(name);
                    }
                    edits.extend(arg(n, format!("{d}/{}", name.trim_end_matches("_temp_path"))));
                }
                name if CACHES.contains(&name) => {
                    caches += 1;
                    edits.extend(arg(n, format!("{d}/cache-{caches}")));
                }
                name if PASSES.contains(&name) || (name == "server" && ctx.last() == Some(&"upstream")) => {
                    if let Some(a) = n.args.first()
                        && let Some(to) = follow(&a.text, place.moved)
                    {
                        edits.extend(arg(n, to));
                    }
                }
                "listen" if matches!(ctx.last(), Some(&"server")) => {
                    let server = n.parents.last().copied();
                    let addr = n.args.first().map_or("", |a| a.text.as_str());
                    let key = listen_key(addr).map_err(|e| format!("{}: {e}", at(self, n)))?;
                    let port = ports.port(&key)?;
                    let mut words = vec![format!("{}:{port}", bracket(place.host))];
                    let on_loaded = key == ports.loaded;
                    words.extend(
                        n.args
                            .iter()
                            .skip(1)
                            .map(|a| a.text.clone())
                            .filter(|w| !["default_server", "default"].contains(&w.as_str()))
                            .filter(|w| !w.starts_with("ipv6only="))
                            .filter(|w| !(on_loaded && backlog.is_some() && w.starts_with("backlog="))),
                    );
                    // The loaded server answers whatever Host the load sends.
                    if server == Some(loaded) && loaded_listen == Some((n.file, n.span.start)) {
                        words.push("default_server".into());
                        if let Some(b) = backlog {
                            words.push(format!("backlog={b}"));
                        }
                    }
                    edits.push(Edit { file: n.file, at: n.span.clone(), text: format!("listen {};", words.join(" ")) });
                }
                "server" if n.block && ctx == ["http"] && self.children(i, "listen").next().is_none() => {
                    // No listen: nginx's *:80 (*:8000 unprivileged), here on loopback.
                    let key = ("*".to_string(), if place.as_root { 80 } else { 8000 });
                    let port = ports.port(&key)?;
                    let mut text = format!("\n\tlisten {}:{port}", bracket(place.host));
                    if i == loaded && key == ports.loaded {
                        text += " default_server";
                    }
                    edits.push(Edit { file: n.file, at: n.span.end..n.span.end, text: text + ";" });
                }
                _ => {}
            }
        }
        let http = self.nodes_named("http").find(|(_, n)| n.block && n.parents.is_empty()).map(|(_, n)| n);
        if let Some(h) = http {
            let missing: String = TEMP_PATHS
                .iter()
                .filter(|t| !http_sets.contains(t))
                .map(|t| format!("\n\t{t} {d}/{};", t.trim_end_matches("_temp_path")))
                .collect();
            edits.push(Edit { file: h.file, at: h.span.end..h.span.end, text: missing });
        }
        let g = format!("daemon off; master_process on; pid {d}/nginx.pid;");
        Ok((edits, g))
    }

    /// The loaded server's listener (its first listen, or nginx's default).
    fn loaded_key(&self, s: usize) -> Result<(String, u16), String> {
        match self.children(s, "listen").next() {
            Some(l) => {
                listen_key(l.args.first().map_or("", |a| a.text.as_str())).map_err(|e| format!("{}: {e}", at(self, l)))
            }
            None => Ok(("*".into(), if nix::unistd::geteuid().is_root() { 80 } else { 8000 })),
        }
    }

    /// What the tree sets now, under the canonical names where one maps.
    pub fn current(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (name, knob) in [
            ("worker_processes", "workers"),
            ("keepalive_timeout", "keepalive_timeout"),
            ("keepalive_requests", "keepalive_requests"),
        ] {
            if let Some((_, n)) = self.nodes_named(name).filter(|(_, n)| self.context(n).len() <= 1).last() {
                out.push((knob.to_string(), n.args.iter().map(|a| a.text.as_str()).collect::<Vec<_>>().join(" ")));
            }
        }
        out
    }

    /// Every file's text with `edits` applied, for the files they change.
    pub fn apply(&self, edits: &[Edit]) -> Edits {
        apply(&self.tree, edits)
    }

    /// The copy's texts: the run's edits, and the knobs' where the run does not rewrite.
    pub fn copy_texts(&self, knobs: &[Edit], run: &[Edit]) -> Edits {
        self.apply(&super::edit::layered(knobs, run))
    }
}

/// The ports of the copy's listeners: one per distinct address of the user's.
struct Listeners<'a> {
    place: &'a CopyPlace<'a>,
    loaded: (String, u16),
    chosen: Vec<((String, u16), u16)>,
}

impl<'a> Listeners<'a> {
    fn new(place: &'a CopyPlace<'a>, loaded: (String, u16)) -> Self {
        Listeners { place, chosen: vec![(loaded.clone(), place.load_port)], loaded }
    }

    fn port(&mut self, key: &(String, u16)) -> Result<u16, String> {
        if let Some((_, p)) = self.chosen.iter().find(|(k, _)| k == key) {
            return Ok(*p);
        }
        let l = std::net::TcpListener::bind((self.place.host, 0))
            .map_err(|e| format!("cannot bind {}: {e}", self.place.host))?;
        let p = l.local_addr().map_err(|e| e.to_string())?.port();
        self.chosen.push((key.clone(), p));
        Ok(p)
    }
}

/// A listen address as (host, port): `80`, `*:80`, `[::]:80`, `127.0.0.1`, `example.org:8080`.
pub fn listen_key(addr: &str) -> Result<(String, u16), String> {
    if addr.starts_with("unix:") {
        return Err(format!("listen {addr}: a unix socket listener is not rewritten yet (webtune loads over TCP)"));
    }
    if addr.contains('$') {
        return Err(format!("listen {addr}: a variable in a listen address cannot be rewritten"));
    }
    let bad = || format!("listen {addr}: not an address webtune can rewrite");
    let (host, port) = if let Some(rest) = addr.strip_prefix('[') {
        let (h, p) = rest.split_once(']').ok_or_else(bad)?;
        (format!("[{h}]"), p.strip_prefix(':').unwrap_or(""))
    } else if addr.bytes().all(|b| b.is_ascii_digit()) {
        ("*".to_string(), addr)
    } else {
        match addr.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p),
            None => (addr.to_string(), ""),
        }
    };
    let port = if port.is_empty() { 80 } else { port.parse().map_err(|_| bad())? };
    let host = if ["*", "0.0.0.0", ""].contains(&host.as_str()) { "*".to_string() } else { host.to_ascii_lowercase() };
    Ok((host, port))
}

/// Where an address a pass directive names moved to, if it did (`unix:/run/x.sock`, also
/// inside `http://unix:/run/x.sock:/uri`, or `127.0.0.1:9000`).
fn follow(arg: &str, moved: &[(String, String)]) -> Option<String> {
    for (from, to) in moved {
        if arg == from {
            return Some(to.clone());
        }
        if let Some(i) = arg.find(from.as_str()) {
            let after = &arg[i + from.len()..];
            let before = &arg[..i];
            if (after.is_empty() || after.starts_with(':')) && (before.is_empty() || before.ends_with("://")) {
                return Some(format!("{before}{to}{after}"));
            }
        }
    }
    None
}

/// A path as an nginx word, quoted when it needs to be.
fn quote(s: &str) -> String {
    if s.contains(|c: char| c.is_whitespace() || "\"';{}#$".contains(c)) {
        format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        s.to_string()
    }
}

enum Token {
    Word(Arg),
    /// A `;` (false) or `{` (true) at this byte.
    End(usize, bool),
    Close(usize),
}

/// nginx's lexer: words, quoted strings with backslash escapes, `#` comments, `;`, `{`, `}`;
/// `${name}` inside a word is a variable, not a block.
fn tokens(text: &str) -> Result<Vec<Token>, (usize, String)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            c if c.is_ascii_whitespace() => i += 1,
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b';' => {
                out.push(Token::End(i, false));
                i += 1;
            }
            b'{' => {
                out.push(Token::End(i, true));
                i += 1;
            }
            b'}' => {
                out.push(Token::Close(i));
                i += 1;
            }
            q @ (b'"' | b'\'') => {
                let start = i;
                let mut s = Vec::new();
                i += 1;
                loop {
                    match b.get(i) {
                        None => return Err((start, "unexpected end of file in a quoted string".into())),
                        Some(&c) if c == q => break,
                        Some(b'\\') if matches!(b.get(i + 1), Some(&c) if c == q || c == b'\\') => {
                            s.push(b[i + 1]);
                            i += 2;
                        }
                        Some(&c) => {
                            s.push(c);
                            i += 1;
                        }
                    }
                }
                i += 1;
                out.push(Token::Word(Arg { text: String::from_utf8_lossy(&s).into_owned(), span: start..i }));
            }
            _ => {
                let start = i;
                while i < b.len() && !b[i].is_ascii_whitespace() && !b";{}".contains(&b[i]) {
                    if b[i] == b'$' && b.get(i + 1) == Some(&b'{') {
                        while i < b.len() && b[i] != b'}' {
                            i += 1;
                        }
                    }
                    if b[i] == b'\\' && i + 1 < b.len() {
                        i += 1;
                    }
                    i += 1;
                }
                out.push(Token::Word(Arg { text: text[start..i].to_string(), span: start..i }));
            }
        }
    }
    Ok(out)
}

/// The user's tree at `main`, read and judged before anything starts: every include read,
/// every listen one webtune can rewrite, the `site` served (FILE:LINE when not).
pub fn check(main: &Path, file: &crate::server::file::TargetFile) -> Result<NginxTree, String> {
    if let Some(at) = apache_line(main) {
        return Err(format!("{at}: an Apache configuration; only nginx's is read here yet"));
    }
    let t = NginxTree::read(main)?;
    let site = t.site_for(file);
    let site = site.as_deref();
    let dir = PathBuf::from("/nonexistent-run");
    let place = CopyPlace {
        run_dir: &dir,
        copy_dir: &dir,
        host: "127.0.0.1",
        load_port: 1,
        site,
        host_header: None,
        moved: &[],
        as_root: nix::unistd::geteuid().is_root(),
    };
    t.run_edits(&place, None)?;
    Ok(t)
}

/// "FILE:LINE" of the first line that only Apache writes (`<VirtualHost`, `ServerRoot`,
/// `Include`...), when the file is one of Apache's.
fn apache_line(main: &Path) -> Option<String> {
    let text = crate::input::read_text(main, "configuration file").ok()?;
    let apache = [
        "<VirtualHost",
        "<IfModule",
        "<Directory",
        "ServerRoot ",
        "Include ",
        "IncludeOptional ",
        "LoadModule ",
        "Listen ",
    ];
    let n = text.lines().position(|l| apache.iter().any(|a| l.trim_start().starts_with(a)))?;
    Some(format!("{}:{}", main.display(), n + 1))
}

/// The load's Host header (without its port), if it sends one.
fn host_header(file: &crate::server::file::TargetFile) -> Option<String> {
    file.load.headers.iter().find_map(|h| {
        let (name, value) = h.split_once(':')?;
        name.trim().eq_ignore_ascii_case("host").then(|| {
            let v = value.trim();
            match v.strip_prefix('[') {
                Some(rest) => rest.split(']').next().unwrap_or(rest).to_string(),
                None => v.split(':').next().unwrap_or(v).to_string(),
            }
        })
    })
}

impl NginxTree {
    /// The virtual host to load: `site` (it must exist), else the load's Host header when a
    /// server block names it (else nginx's default server answers it, as it would).
    pub fn site_for(&self, file: &crate::server::file::TargetFile) -> Option<String> {
        file.site.clone().or_else(|| host_header(file).filter(|h| self.loaded_server(Some(h)).is_ok()))
    }
}

impl NginxTree {
    /// Whether a pass directive reaches one of `moved`'s addresses.
    /// Where the copy would pass the load on, after the run's moves (`moved`): the pass
    /// directives of the server block loaded (`loaded`) that do not reach the run's own
    /// server, and the members of the upstream groups they name. Other server blocks take no
    /// load.
    pub fn backends(&self, moved: &[(String, String)], loaded: usize) -> Vec<Backend> {
        let groups: Vec<(usize, String)> = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.name == "upstream")
            .filter_map(|(i, n)| Some((i, n.args.first()?.text.clone())))
            .collect();
        let names: Vec<String> = groups.iter().map(|(_, g)| g.clone()).collect();
        let mut used = Vec::new();
        let mut out = Vec::new();
        let passes = self.nodes.iter().filter(|n| {
            (PASSES.contains(&n.name.as_str()) || n.name == "memcached_pass") && n.parents.contains(&loaded)
        });
        for n in passes {
            let Some(first) = n.args.first().filter(|a| follow(&a.text, moved).is_none()) else { continue };
            match backends::reach(&first.text, &names) {
                Reach::Address(address) => out.push(Backend { at: at(self, n), directive: n.name.clone(), address }),
                Reach::Group(name) => used.extend(groups.iter().filter(|(_, g)| *g == name).map(|(i, _)| *i)),
            }
        }
        let members =
            self.nodes.iter().filter(|n| n.name == "server" && n.parents.last().is_some_and(|p| used.contains(p)));
        for n in members {
            let Some(first) = n.args.first().filter(|a| follow(&a.text, moved).is_none()) else { continue };
            if let Reach::Address(address) = backends::reach(&first.text, &[]) {
                out.push(Backend { at: at(self, n), directive: "server (upstream)".into(), address });
            }
        }
        out
    }

    /// Whether a pass or an upstream server of the tree goes to one of the addresses `moved` names.
    pub fn follows(&self, moved: &[(String, String)]) -> bool {
        self.nodes.iter().any(|n| {
            (PASSES.contains(&n.name.as_str()) || n.name == "server")
                && n.args.first().is_some_and(|a| follow(&a.text, moved).is_some())
        })
    }

    /// Writes the copy (the knobs' and the run's edits) under the run directory's `nginx/`
    /// and returns how to start it, with the copy's changed files for the evidence.
    pub fn start(
        &self,
        ctx: &Ctx,
        knobs: &[Edit],
        backlog: Option<&str>,
        moved: &[(String, String)],
    ) -> anyhow::Result<(Spawn, String)> {
        let root = ctx.dir.join("nginx");
        let site = self.site_for(ctx.file);
        let loaded = self.loaded_server(site.as_deref()).map_err(anyhow::Error::msg)?;
        backends::check(&self.backends(moved, loaded), &ctx.file.upstreams).map_err(anyhow::Error::msg)?;
        let place = CopyPlace {
            run_dir: &ctx.dir.path,
            copy_dir: &root,
            host: ctx.host,
            load_port: ctx.port,
            site: site.as_deref(),
            host_header: None,
            moved,
            as_root: nix::unistd::geteuid().is_root(),
        };
        let (run, g) = self.run_edits(&place, backlog).map_err(anyhow::Error::msg)?;
        let texts = self.copy_texts(knobs, &run);
        let main = self.tree.write_copy(&root, &texts)?;
        let program = match ctx.file.adapter {
            crate::server::file::AdapterName::Nginx => ctx.file.program.as_deref().unwrap_or("nginx"),
            _ => "nginx",
        };
        let d = ctx.run_dir_text();
        let spawn = Spawn::new(
            "nginx",
            program,
            vec![
                "-c".into(),
                main.display().to_string(),
                "-e".into(),
                format!("{d}/error.log"),
                "-g".into(),
                g.clone(),
            ],
        );
        let mut evidence =
            format!("# nginx: a copy of {} in {}, started with -g '{g}'\n", self.tree.main().display(), root.display());
        for (path, text) in &texts {
            evidence += &format!("# {} (copy, rewritten)\n{text}\n", path.display());
        }
        Ok((spawn, evidence))
    }
}

/// nginx from the user's tree: the knobs on their directives, the copy started.
pub fn prepare(ctx: &Ctx, values: &Typed, main: &Path) -> anyhow::Result<Prepared> {
    let t = NginxTree::read(main).map_err(anyhow::Error::msg)?;
    let knobs = t.knob_edits(values, t.site_for(ctx.file).as_deref())?;
    let (spawn, config_text) = t.start(ctx, &knobs, values.backlog().map(Count::text), &[])?;
    Ok(Prepared {
        spawns: vec![spawn],
        master: 0,
        config_text,
        error_logs: vec![ctx.dir.join("error.log"), ctx.dir.join("nginx.log")],
        status_path: None,
        front: None,
    })
}

/// The unified diff of the user's files for `values`, when they change any.
pub fn diffs(
    file: &crate::server::file::TargetFile,
    main: &Path,
    values: &Typed,
) -> anyhow::Result<Vec<(String, String)>> {
    let t = NginxTree::read(main).map_err(anyhow::Error::msg)?;
    let knobs = t.knob_edits(values, t.site_for(file).as_deref())?;
    Ok(t.tree.diffs(&t.apply(&knobs)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy placed in `run` itself, loaded on `port`.
    fn test_place<'a>(run: &'a Path, port: u16, moved: &'a [(String, String)]) -> CopyPlace<'a> {
        let root = nix::unistd::geteuid().is_root();
        CopyPlace {
            run_dir: run,
            copy_dir: run,
            host: "127.0.0.1",
            load_port: port,
            site: None,
            host_header: None,
            moved,
            as_root: root,
        }
    }

    fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, NginxTree) {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let t = NginxTree::read(&dir.path().join(files[0].0)).unwrap();
        (dir, t)
    }

    #[test]
    fn the_loaded_servers_backends_are_found_after_the_runs_moves() {
        let (_dir, t) = tree(&[(
            "nginx.conf",
            "events {}\nhttp {\n upstream app { server 127.0.0.2:81; server unix:/run/a.sock; }\n upstream idle { server 10.0.0.9:1; }\n\
             server {\n  listen 80 default_server;\n  location / { proxy_pass http://127.0.0.2:8080; }\n  location /a { proxy_pass http://app/x; }\n\
             location ~ \\.php$ { fastcgi_pass unix:/run/php/x.sock; }\n }\n server { server_name other; location / { proxy_pass http://10.0.0.1; } }\n}\n",
        )]);
        let loaded = t.loaded_server(None).unwrap();
        let moved = vec![("unix:/run/php/x.sock".to_string(), "unix:/run/webtune/fpm.sock".to_string())];
        let found: Vec<(String, String)> =
            t.backends(&moved, loaded).into_iter().map(|b| (b.directive, b.address)).collect();
        let want = [
            ("proxy_pass", "127.0.0.2:8080"),
            ("server (upstream)", "127.0.0.2:81"),
            ("server (upstream)", "unix:/run/a.sock"),
        ];
        assert_eq!(found, want.map(|(d, a)| (d.to_string(), a.to_string())));
    }

    #[test]
    fn includes_are_read_in_place_and_knobs_land_on_the_users_directives() {
        let (dir, t) = tree(&[
            (
                "nginx.conf",
                "user www-data;\nworker_processes auto;\npid /run/nginx.pid;\nevents { worker_connections 768; }\nhttp {\n\tsendfile on;\n\tinclude sites-enabled/*;\n}\n",
            ),
            (
                "sites-enabled/a",
                "server {\n\tlisten 80 default_server;\n\tlisten [::]:80 default_server;\n\tserver_name a.example;\n\tlocation ~ \\.php$ { fastcgi_pass unix:/run/php/x.sock; }\n}\nserver { server_name b.example; }\n",
            ),
        ]);
        assert_eq!(t.tree.files.len(), 2);
        assert_eq!(t.servers().len(), 2);
        assert_eq!(t.loaded_server(Some("b.example")).unwrap(), t.servers()[1]);
        assert_eq!(t.loaded_server(None).unwrap(), t.servers()[0]);
        assert!(t.loaded_server(Some("c.example")).unwrap_err().contains("a.example, b.example"));
        let knobs = t
            .knob_edits(&Typed::of(&[("workers", "4"), ("keepalive_timeout", "5"), ("sendfile", "on")]), None)
            .unwrap();
        let diff = t.tree.diff(&t.apply(&knobs)).unwrap();
        assert!(diff.contains("-worker_processes auto;\n+worker_processes 4;\n"), "{diff}");
        assert!(diff.contains(" http {\n+\tkeepalive_timeout 5s;\n"), "{diff}");
        assert!(!diff.contains("-\tsendfile"), "equal values give no hunk: {diff}");

        let run = dir.path().join("run");
        let moved = [("unix:/run/php/x.sock".to_string(), format!("unix:{}/fpm.sock", run.display()))];
        let place = test_place(&run, 8123, &moved);
        let (edits, g) = t.run_edits(&place, None).unwrap();
        assert!(g.contains("daemon off;"));
        let copy = t.copy_texts(&knobs, &edits);
        let main = &copy[&t.tree.files[0].path];
        assert!(main.contains("worker_processes 4;") && !main.contains("/run/nginx.pid"), "{main}");
        assert!(main.contains(&format!("client_body_temp_path {}/client_body;", run.display())), "{main}");
        let site = &copy[&t.tree.files[1].path];
        assert!(site.contains("listen 127.0.0.1:8123 default_server;"), "{site}");
        assert!(site.contains(&format!("fastcgi_pass unix:{}/fpm.sock;", run.display())), "{site}");
        assert_eq!(
            site.matches("listen 127.0.0.1:").count(),
            3,
            "one listener each, and one for the server without: {site}"
        );
    }

    #[test]
    fn what_cannot_be_rewritten_is_refused_with_its_line() {
        let (_d, t) = tree(&[("n.conf", "events {}\nhttp {\n server {\n  listen unix:/run/x.sock;\n }\n}\n")]);
        let run = PathBuf::from("/r");
        let place = test_place(&run, 1, &[]);
        let e = t.run_edits(&place, None).unwrap_err();
        assert!(e.contains("n.conf:4: listen unix:/run/x.sock"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("n.conf"), "include /nonexistent/x.conf;\n").unwrap();
        let e = NginxTree::read(&dir.path().join("n.conf")).unwrap_err();
        assert!(e.contains("n.conf:1: include"), "{e}");
        std::fs::write(dir.path().join("n.conf"), "include /nonexistent/*.conf;\nhttp {\n").unwrap();
        let e = NginxTree::read(&dir.path().join("n.conf")).unwrap_err();
        assert!(e.contains("n.conf:3: unexpected end of file"), "{e}");
        assert_eq!(listen_key("[::]:80").unwrap(), ("[::]".into(), 80));
        assert_eq!(listen_key("8080").unwrap(), ("*".into(), 8080));
        assert_eq!(listen_key("localhost").unwrap(), ("localhost".into(), 80));
        assert_eq!(
            follow("http://unix:/a.sock:/x", &[("unix:/a.sock".into(), "unix:/b.sock".into())]).unwrap(),
            "http://unix:/b.sock:/x"
        );
        assert!(follow("unix:/a.sock2", &[("unix:/a.sock".into(), "unix:/b".into())]).is_none());
    }
}
