//! php-fpm from the user's own configuration (`config = "PATH/php-fpm.conf"`, `pool`): the
//! tree read as php-fpm reads it (`include=` globs), its sections and `key = value` lines with
//! file:line and spans; the knobs' edits in the named pool's own lines (the diff), and the
//! run's (pid, logs and every pool's socket in the run directory, users dropped unless root;
//! only in the copy).

use std::ops::Range;
use std::path::Path;

use super::adapter::{Ctx, Prepared};
use super::edit::{Edit, apply, layered};
use super::nginx_tree;
use crate::server::file::TargetFile;
use crate::server::process::Spawn;
use crate::server::settings::Typed;
use crate::server::tree::{Edits, UserTree};

/// How deep includes may nest.
const MAX_DEPTH: usize = 8;

/// The canonical knobs' pool settings.
pub const NATIVE: [(&str, &str); 6] = [
    ("workers", "pm.max_children"),
    ("max_requests", "pm.max_requests"),
    ("start_workers", "pm.start_servers"),
    ("min_spare", "pm.min_spare_servers"),
    ("max_spare", "pm.max_spare_servers"),
    ("backlog", "listen.backlog"),
];

/// Pool settings that name users: kept when webtune runs as root, dropped when it cannot
/// switch users.
const USERS: [&str; 6] = ["user", "group", "listen.owner", "listen.group", "listen.acl_users", "listen.acl_groups"];

/// One `key = value` line.
#[derive(Debug, Clone)]
pub struct Setting {
    pub file: usize,
    pub line: usize,
    /// The section it is in ("global" before any).
    pub section: String,
    pub key: String,
    pub value: String,
    pub value_span: Range<usize>,
    /// The whole line with its newline, to drop it.
    pub line_span: Range<usize>,
}

/// A `[name]` header.
#[derive(Debug, Clone)]
pub struct Section {
    pub file: usize,
    pub line: usize,
    pub name: String,
    /// Just after the header's line.
    pub body: usize,
}

/// A user's php-fpm configuration tree: its files, settings and sections (global, pools).
#[derive(Debug, Clone)]
pub struct FpmTree {
    pub tree: UserTree,
    pub settings: Vec<Setting>,
    pub sections: Vec<Section>,
}

impl FpmTree {
    /// Reads the tree whose main file is `main`, every `include=` followed (a relative one
    /// against /usr, php-fpm's prefix when it runs without -p).
    pub fn read(main: &Path) -> Result<FpmTree, String> {
        let tree = UserTree::new("php-fpm", main).map_err(|e| e.0)?;
        let mut t = FpmTree { tree, settings: Vec::new(), sections: Vec::new() };
        let mut section = "global".to_string();
        t.tree.enter(0).map_err(|e| e.0)?;
        t.parse_file(0, &mut section, 0)?;
        Ok(t)
    }

    fn parse_file(&mut self, file: usize, section: &mut String, depth: usize) -> Result<(), String> {
        let path = self.tree.files[file].path.clone();
        let text = self.tree.files[file].text.clone();
        let mut pos = 0;
        for (n, raw) in text.split_inclusive('\n').enumerate() {
            let line_span = pos..pos + raw.len();
            pos += raw.len();
            let start = line_span.start + (raw.len() - raw.trim_start().len());
            let line = raw.trim();
            let at = format!("{}:{}", path.display(), n + 1);
            if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
                continue;
            }
            if let Some(name) = line.strip_prefix('[') {
                let name = name.split(']').next().unwrap_or("").trim().to_string();
                self.sections.push(Section { file, line: n + 1, name: name.clone(), body: line_span.end });
                *section = name;
                continue;
            }
            let Some((key, rest)) = line.split_once('=') else {
                return Err(format!("{at}: expected key = value or [section]: {}", crate::input::echo(line)));
            };
            let key = key.trim().to_string();
            let eq = start + raw.trim_start().find('=').unwrap_or(0) + 1;
            let value_start = eq + (rest.len() - rest.trim_start().len());
            let value = value_of(rest.trim_start());
            let value_span = value_start..value_start + value.1;
            if key == "include" {
                if depth >= MAX_DEPTH {
                    return Err(format!("{at}: includes nested more than {MAX_DEPTH} deep"));
                }
                let pattern = Path::new("/usr").join(&value.0);
                for f in super::include::expand(&pattern).map_err(|e| format!("{at}: {e}"))? {
                    let idx = self.tree.read(&f).map_err(|e| format!("{at}: include: {}", e.0))?;
                    self.tree.enter(idx).map_err(|e| format!("{at}: include: {}", e.0))?;
                    self.parse_file(idx, section, depth + 1)?;
                    self.tree.leave();
                }
            }
            self.settings.push(Setting {
                file,
                line: n + 1,
                section: section.clone(),
                key,
                value: value.0,
                value_span,
                line_span,
            });
        }
        Ok(())
    }

    /// The pools, in read order (a section seen twice counts once).
    pub fn pools(&self) -> Vec<&Section> {
        let mut out: Vec<&Section> = Vec::new();
        for s in self.sections.iter().filter(|s| s.name != "global") {
            if !out.iter().any(|o| o.name == s.name) {
                out.push(s);
            }
        }
        out
    }

    /// The pool to tune: `pool`, or the only one.
    pub fn pool(&self, pool: Option<&str>) -> Result<String, String> {
        let pools = self.pools();
        let list = || {
            pools
                .iter()
                .map(|s| format!("{} ({}:{})", s.name, self.tree.files[s.file].path.display(), s.line))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match pool {
            Some(p) if pools.iter().any(|s| s.name == p) => Ok(p.to_string()),
            Some(p) => {
                Err(format!("pool {p:?}: {} has no such pool (its pools: {})", self.tree.main().display(), list()))
            }
            None if pools.len() == 1 => Ok(pools[0].name.clone()),
            None if pools.is_empty() => {
                Err(format!("{}: no pool ([name] section) in the tree", self.tree.main().display()))
            }
            None => Err(format!(
                "{} has {} pools: name one with pool = \"NAME\" ({})",
                self.tree.main().display(),
                pools.len(),
                list()
            )),
        }
    }

    /// The last value `key` has in `section` (the one php-fpm keeps).
    pub fn value(&self, section: &str, key: &str) -> Option<&Setting> {
        self.settings.iter().rev().find(|s| s.section == section && s.key == key)
    }

    /// What `pool` listens on, as an nginx pass names it (`unix:/run/php/php8.2-fpm.sock`,
    /// `127.0.0.1:9000`), with the other spellings of a port (`9000` is every address).
    pub fn listen(&self, pool: &str) -> Result<Vec<String>, String> {
        let Some(l) = self.value(pool, "listen") else {
            let s = self.sections.iter().find(|s| s.name == pool);
            let at = s.map_or(String::new(), |s| format!("{}:{}: ", self.tree.files[s.file].path.display(), s.line));
            return Err(format!("{at}pool {pool} has no listen"));
        };
        let v = l.value.as_str();
        Ok(if v.starts_with('/') {
            vec![format!("unix:{v}")]
        } else if v.bytes().all(|b| b.is_ascii_digit()) {
            vec![format!("127.0.0.1:{v}"), format!("localhost:{v}"), format!("[::1]:{v}")]
        } else {
            vec![v.to_string()]
        })
    }

    /// The pool settings `values` ask for (canonical knobs under php-fpm's names), with pm's
    /// spare servers made to fit max_children so that php-fpm accepts the pool
    /// (max_spare <= max_children, min_spare <= start <= max_spare).
    fn wanted(&self, pool: &str, values: &Typed) -> anyhow::Result<Vec<(String, String)>> {
        if values.preload().is_some() {
            anyhow::bail!("php-fpm has no preload to switch (opcache.preload is a php.ini setting)");
        }
        let mut want: Vec<(String, String)> = Vec::new();
        // Every knob under its pool key, as written (counts and pm alike).
        for (knob, value) in values.pairs() {
            // keep-alive is the front's.
            if ["keepalive", "keepalive_timeout"].contains(&knob) {
                continue;
            }
            let key = NATIVE.iter().find(|(k, _)| *k == knob).map_or(knob, |(_, n)| n);
            want.retain(|(k, _)| k != key);
            want.push((key.to_string(), value.to_string()));
        }
        if self.effective(pool, &want, "pm").as_deref() == Some("dynamic")
            && let Some(max) = self.number(pool, &want, "pm.max_children")
        {
            let max_spare = self.number(pool, &want, "pm.max_spare_servers").unwrap_or(max).min(max);
            let min_spare = self.number(pool, &want, "pm.min_spare_servers").unwrap_or(1).min(max_spare);
            let start = self
                .number(pool, &want, "pm.start_servers")
                .unwrap_or(min_spare + (max_spare - min_spare) / 2)
                .clamp(min_spare, max_spare);
            for (k, v) in
                [("pm.max_spare_servers", max_spare), ("pm.min_spare_servers", min_spare), ("pm.start_servers", start)]
            {
                if self.number(pool, &want, k) != Some(v) {
                    want.retain(|(w, _)| w != k);
                    want.push((k.to_string(), v.to_string()));
                }
            }
        }
        Ok(want)
    }

    /// `key`'s value with `want` applied: the wanted one, else the pool's.
    fn effective(&self, pool: &str, want: &[(String, String)], key: &str) -> Option<String> {
        want.iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .or_else(|| self.value(pool, key).map(|s| s.value.clone()))
    }

    fn number(&self, pool: &str, want: &[(String, String)], key: &str) -> Option<u64> {
        self.effective(pool, want, key)?.parse().ok()
    }

    /// The knobs' edits, in `pool`'s own lines: a setting the pool has is changed there (no
    /// edit when the value is the user's), one it does not is added under its header.
    pub fn knob_edits(&self, pool: &str, values: &Typed) -> anyhow::Result<Vec<Edit>> {
        let header = self.sections.iter().find(|s| s.name == pool).ok_or_else(|| anyhow::anyhow!("no pool {pool}"))?;
        let mut edits = Vec::new();
        for (key, value) in self.wanted(pool, values)? {
            let theirs: Vec<&Setting> = self.settings.iter().filter(|s| s.section == pool && s.key == key).collect();
            for s in &theirs {
                if s.value != value {
                    edits.push(Edit { file: s.file, at: s.value_span.clone(), text: value.clone() });
                }
            }
            if theirs.is_empty() {
                edits.push(Edit {
                    file: header.file,
                    at: header.body..header.body,
                    text: format!("{key} = {value}\n"),
                });
            }
        }
        Ok(edits)
    }

    /// How many workers `pool` starts with `values`: static max_children, dynamic
    /// start_servers, ondemand none.
    pub fn start_workers(&self, pool: &str, values: &Typed) -> Option<usize> {
        let want = self.wanted(pool, values).ok()?;
        let n = |k: &str| self.number(pool, &want, k).map(|n| n as usize);
        match self.effective(pool, &want, "pm").as_deref().unwrap_or("static") {
            "dynamic" => n("pm.start_servers"),
            "ondemand" => Some(0),
            _ => n("pm.max_children"),
        }
    }

    /// The run's edits: the global pid and error log into `dir`, every pool's socket moved
    /// (`socket(pool)`) and open to the front, its slow and access logs and PHP's error_log
    /// into `run_dir`, users dropped unless root, absolute includes to the copy at `copy_dir`. A
    /// chroot is refused (FILE:LINE).
    pub fn run_edits(
        &self,
        run_dir: &Path,
        copy_dir: &Path,
        socket: &dyn Fn(&str) -> String,
    ) -> Result<Vec<Edit>, String> {
        let d = run_dir.display();
        let is_root = nix::unistd::geteuid().is_root();
        let mut edits = Vec::new();
        let mut global = (false, false);
        for s in &self.settings {
            let at = || format!("{}:{}", self.tree.files[s.file].path.display(), s.line);
            let set = |text: String| Edit { file: s.file, at: s.value_span.clone(), text };
            let drop = || Edit { file: s.file, at: s.line_span.clone(), text: String::new() };
            match (s.section == "global", s.key.as_str()) {
                // Relative ones too: php-fpm resolves them against /usr, not the copy.
                (_, "include") => {
                    let p = &Path::new("/usr").join(&s.value);
                    let to = self
                        .tree
                        .copied(copy_dir, p.parent().unwrap_or(Path::new("/")))
                        .join(p.file_name().unwrap_or_default());
                    edits.push(set(to.display().to_string()));
                }
                (true, "pid") => {
                    global.0 = true;
                    edits.push(set(format!("{d}/php-fpm.pid")));
                }
                // syslog too: the tune's traffic is not the machine's log's to carry.
                (true, "error_log") => {
                    global.1 = true;
                    edits.push(set(format!("{d}/php-fpm.err")));
                }
                (false, "listen") => edits.push(set(socket(&s.section))),
                (false, "listen.mode") => edits.push(set("0666".into())),
                (false, "slowlog") => edits.push(set(format!("{d}/{}.slow", s.section))),
                (false, "access.log") => edits.push(set(format!("{d}/{}.access", s.section))),
                (false, "php_admin_value[error_log]" | "php_value[error_log]") => {
                    edits.push(set(format!("{d}/{}.php-errors", s.section)))
                }
                (false, "chroot") => {
                    return Err(format!("{}: chroot: a chrooted pool is not run by webtune yet", at()));
                }
                (false, k) if USERS.contains(&k) && !is_root => edits.push(drop()),
                _ => {}
            }
        }
        // What the tree does not set goes under [global] (or, without one, before the rest).
        let mut missing = String::new();
        if !global.0 {
            missing += &format!("pid = {d}/php-fpm.pid\n");
        }
        if !global.1 {
            missing += &format!("error_log = {d}/php-fpm.err\n");
        }
        match self.sections.iter().find(|s| s.name == "global") {
            Some(g) => edits.push(Edit { file: g.file, at: g.body..g.body, text: missing }),
            None => edits.push(Edit { file: 0, at: 0..0, text: format!("[global]\n{missing}") }),
        }
        for p in self.pools() {
            if self.value(&p.name, "listen.mode").is_none() {
                // The front may run as another user: the socket is in the private run directory.
                edits.push(Edit { file: p.file, at: p.body..p.body, text: "listen.mode = 0666\n".into() });
            }
        }
        Ok(edits)
    }

    /// Every file's text with `edits` applied, for the files they change.
    pub fn apply(&self, edits: &[Edit]) -> Edits {
        apply(&self.tree, edits)
    }

    /// What the pool sets now, under the canonical names.
    pub fn current(&self, pool: &str) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        if let Some(pm) = self.value(pool, "pm") {
            out.push(("pm".into(), pm.value.clone()));
        }
        for (knob, key) in NATIVE {
            if let Some(s) = self.value(pool, key) {
                out.push((knob.to_string(), s.value.clone()));
            }
        }
        out
    }
}

/// The tree at `main`, read and judged before anything starts: includes read, no chroot.
pub fn check(main: &Path) -> Result<FpmTree, String> {
    let t = FpmTree::read(main)?;
    let dir = Path::new("/nonexistent-run");
    t.run_edits(dir, dir, &|_| String::new())?;
    Ok(t)
}

/// The target's pool judged, and its front: an nginx tree whose fastcgi_pass reaches the
/// pool's listen (an Apache one is not run yet). The key to blame and why.
pub fn check_target(file: &TargetFile) -> Result<(), (&'static str, String)> {
    let Some(main) = file.config.file() else { return Ok(()) };
    let t = check(&main.path).map_err(|e| ("config", e))?;
    let pool_key = if file.pool.is_some() { "pool" } else { "config" };
    let pool = t.pool(file.pool.as_deref()).map_err(|e| (pool_key, e))?;
    let from = t.listen(&pool).map_err(|e| (pool_key, e))?;
    if let Some(front) = &file.front_config {
        let f = nginx_tree::check(&front.path, file).map_err(|e| ("front_config", e))?;
        let moved: Vec<(String, String)> = from.iter().map(|f| (f.clone(), String::new())).collect();
        if !f.follows(&moved) {
            return Err((
                "front_config",
                format!(
                    "no fastcgi_pass in {} (or its includes) reaches pool {pool}'s listen {}",
                    f.tree.main().display(),
                    from[0]
                ),
            ));
        }
    }
    Ok(())
}

/// php-fpm from the user's tree, the knobs in the pool's own lines, every pool's socket in
/// the run directory; and its front: the user's nginx (`front_config`) with its fastcgi_pass
/// following the pool's socket, else webtune's own.
pub fn prepare(ctx: &Ctx, values: &Typed, main: &Path) -> anyhow::Result<Prepared> {
    let t = FpmTree::read(main).map_err(anyhow::Error::msg)?;
    let pool = t.pool(ctx.file.pool.as_deref()).map_err(anyhow::Error::msg)?;
    let d = ctx.run_dir_text();
    let sock = format!("{d}/fpm.sock");
    let socket = |p: &str| if p == pool { sock.clone() } else { format!("{d}/fpm-{p}.sock") };
    let knobs = t.knob_edits(&pool, values)?;
    let root = ctx.dir.join("php-fpm");
    let run = t.run_edits(&ctx.dir.path, &root, &socket).map_err(anyhow::Error::msg)?;
    let texts = t.apply(&layered(&knobs, &run));
    let conf = t.tree.write_copy(&root, &texts)?;
    let mut config_text = format!("# php-fpm: a copy of {} in {}\n", t.tree.main().display(), root.display());
    for (path, text) in &texts {
        config_text += &format!("# {} (copy, rewritten)\n{text}\n", path.display());
    }
    let moved: Vec<(String, String)> =
        t.listen(&pool).map_err(anyhow::Error::msg)?.into_iter().map(|f| (f, format!("unix:{sock}"))).collect();
    let front = match &ctx.file.front_config {
        Some(front) => {
            let f = nginx_tree::NginxTree::read(&front.path).map_err(anyhow::Error::msg)?;
            f.start(ctx, &[], None, &moved)?
        }
        None => super::fpm::own_front(ctx, values, &sock)?,
    };
    let program = ctx.file.program.clone().unwrap_or_else(super::fpm::fpm_program);
    // -F: in the foreground whatever daemonize says; no -c: the system's php.ini, as the
    // user's php-fpm reads it.
    let fpm = Spawn::new("php-fpm", &program, vec!["-F".into(), "-y".into(), conf.display().to_string()]);
    Ok(Prepared {
        config_text: format!("{config_text}\n# nginx front\n{}", front.1),
        spawns: vec![fpm, front.0],
        master: 0,
        error_logs: vec![ctx.dir.join("php-fpm.err"), ctx.dir.join("php-fpm.log"), ctx.dir.join("error.log")],
        status_path: None,
        front: Some(1),
    })
}

/// The unified diff of the user's php-fpm files for `values` (the front is not tuned).
pub fn diffs(file: &TargetFile, main: &Path, values: &Typed) -> anyhow::Result<Vec<(String, String)>> {
    let t = FpmTree::read(main).map_err(anyhow::Error::msg)?;
    let pool = t.pool(file.pool.as_deref()).map_err(anyhow::Error::msg)?;
    let knobs = t.knob_edits(&pool, values)?;
    Ok(t.tree.diffs(&t.apply(&knobs)))
}

/// The pool settings `values` ask for, as lines of the pool's file.
pub fn recommend(file: &TargetFile, main: &Path, values: &Typed) -> Option<String> {
    let t = FpmTree::read(main).ok()?;
    let pool = t.pool(file.pool.as_deref()).ok()?;
    let want = t.wanted(&pool, values).ok()?;
    let lines: Vec<String> = want.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    Some(format!("; pool [{pool}]\n{}", lines.join("\n")))
}

/// A value as php-fpm's ini reader takes it: quoted, or up to a `;` comment; and how many
/// bytes it spans in the line.
fn value_of(rest: &str) -> (String, usize) {
    let rest = rest.trim_end_matches(['\n', '\r']);
    if let Some(q) = rest.strip_prefix('"')
        && let Some(end) = q.find('"')
    {
        return (q[..end].to_string(), end + 2);
    }
    let v = rest.split(';').next().unwrap_or("").trim_end();
    (v.to_string(), v.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pools_own_lines_change_and_spares_follow_max_children() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pool.d")).unwrap();
        let main = dir.path().join("php-fpm.conf");
        std::fs::write(
            &main,
            format!("[global]\npid = /run/php/x.pid\ninclude={}/pool.d/*.conf\n", dir.path().display()),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("pool.d/www.conf"),
            "[www]\nuser = www-data\nlisten = /run/php/php8.2-fpm.sock\npm = dynamic\npm.max_children = 5\n\
             pm.start_servers = 2\npm.min_spare_servers = 1\npm.max_spare_servers = 3 ; spare\nphp_admin_value[memory_limit] = 64M\n",
        )
        .unwrap();
        let t = FpmTree::read(&main).unwrap();
        assert_eq!(t.pool(None).unwrap(), "www");
        assert!(t.pool(Some("api")).unwrap_err().contains("its pools: www ("));
        assert_eq!(t.listen("www").unwrap(), ["unix:/run/php/php8.2-fpm.sock"]);
        let edits = t.knob_edits("www", &Typed::of(&[("workers", "2"), ("max_requests", "500")])).unwrap();
        let diff = t.tree.diff(&t.apply(&edits)).unwrap();
        assert_eq!(crate::server::tree::changed_files(&diff), ["pool.d/www.conf"]);
        assert!(diff.contains("-pm.max_children = 5\n+pm.max_children = 2\n"), "{diff}");
        assert!(
            diff.contains("+pm.max_spare_servers = 2 ; spare\n") && diff.contains("+pm.max_requests = 500\n"),
            "{diff}"
        );
        assert!(!diff.contains("+pm.start_servers"), "2 is within [1, 2]: {diff}");
        assert_eq!(t.start_workers("www", &Typed::of(&[("workers", "2")])), Some(2));
        assert_eq!(t.current("www")[1], ("workers".into(), "5".into()));

        let run = dir.path().join("run");
        let sock = format!("{}/fpm.sock", run.display());
        let runs = t.run_edits(&run, &run, &|_| sock.clone()).unwrap();
        let copy = apply(&t.tree, &runs.iter().cloned().chain(edits).collect::<Vec<_>>());
        let main_copy = &copy[&t.tree.files[0].path];
        assert!(main_copy.contains(&format!("include={}/pool.d/*.conf", run.display())), "{main_copy}");
        assert!(main_copy.contains(&format!("error_log = {}/php-fpm.err", run.display())), "{main_copy}");
        let pool = &copy[&t.tree.files[1].path];
        assert!(
            pool.contains(&format!("listen = {sock}\n")) && pool.contains("php_admin_value[memory_limit] = 64M"),
            "{pool}"
        );

        std::fs::write(dir.path().join("pool.d/api.conf"), "[api]\nlisten = 9000\nchroot = /srv\n").unwrap();
        let t = FpmTree::read(&main).unwrap();
        assert!(t.pool(None).unwrap_err().contains("2 pools"));
        assert!(t.run_edits(&run, &run, &|_| sock.clone()).unwrap_err().contains("api.conf:3: chroot"));
    }
}
