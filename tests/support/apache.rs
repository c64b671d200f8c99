//! Apache httpd (prefork MPM, mod_perl 2), started by the test with a private configuration on
//! a free loopback port, stopped on drop.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Apache {
    pub port: u16,
    pub dir: tempfile::TempDir,
    child: Child,
}

pub struct ApacheOptions<'a> {
    /// "All" or "None".
    pub allow_override: &'a str,
    /// MiB of data a startup file builds in the parent before the children are forked.
    pub preload_mb: usize,
    pub workers: usize,
}

/// A ModPerl::Registry script at /perl/hello.pl.
const HELLO: &str = "use strict;\nprint \"Content-Type: text/plain\\r\\n\\r\\n\";\nprint \"hello from $$\\n\";\n";

impl Apache {
    pub fn start(opts: &ApacheOptions) -> Option<Apache> {
        let Some(bin) = super::find_program("apache2") else {
            super::missing("apache2 (Debian packages apache2 and libapache2-mod-perl2)");
            return None;
        };
        let modules = PathBuf::from("/usr/lib/apache2/modules");
        if !modules.join("mod_perl.so").exists() {
            super::missing("mod_perl (Debian package libapache2-mod-perl2)");
            return None;
        }
        for _attempt in 0..5 {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path().display().to_string();
            for sub in ["htdocs/a/b", "perl", "run"] {
                std::fs::create_dir_all(dir.path().join(sub)).unwrap();
            }
            std::fs::write(dir.path().join("htdocs/a/b/index.html"), "static\n").unwrap();
            std::fs::write(dir.path().join("perl/hello.pl"), HELLO).unwrap();
            // Data built at startup, before the fork: shared copy-on-write by every child.
            std::fs::write(
                dir.path().join("startup.pl"),
                format!(
                    "package WebtuneTest::Preload;\nour @DATA = map {{ 'x' x (1024 * 1024) }} 1 .. {};\n1;\n",
                    opts.preload_mb
                ),
            )
            .unwrap();
            chmod_tree(dir.path());
            let port = super::nginx::free_port();
            let user = if nix::unistd::geteuid().is_root() { "User www-data\nGroup www-data\n" } else { "" };
            let conf = format!(
                "ServerRoot {d}\nServerName localhost\nDefaultRuntimeDir {d}/run\nPidFile {d}/run/apache2.pid\n\
                 Listen 127.0.0.1:{port}\n{user}ErrorLog {d}/error.log\nLogLevel warn\n\
                 LoadModule mpm_prefork_module {m}/mod_mpm_prefork.so\n\
                 LoadModule authz_core_module {m}/mod_authz_core.so\n\
                 LoadModule alias_module {m}/mod_alias.so\n\
                 LoadModule dir_module {m}/mod_dir.so\n\
                 LoadModule perl_module {m}/mod_perl.so\n\
                 StartServers {w}\nMinSpareServers 1\nMaxSpareServers {w}\nMaxRequestWorkers {w}\nServerLimit {w}\n\
                 KeepAlive On\nDirectoryIndex index.html\n\
                 DocumentRoot {d}/htdocs\n\
                 <Directory />\n  AllowOverride None\n  Require all denied\n</Directory>\n\
                 <Directory {d}/htdocs>\n  AllowOverride {ao}\n  Require all granted\n</Directory>\n\
                 PerlRequire {d}/startup.pl\nPerlModule ModPerl::Registry\n\
                 Alias /perl/ {d}/perl/\n\
                 <Location /perl/>\n  SetHandler perl-script\n  PerlResponseHandler ModPerl::Registry\n  Options +ExecCGI\n  Require all granted\n</Location>\n",
                m = modules.display(),
                w = opts.workers,
                ao = opts.allow_override,
            );
            std::fs::write(dir.path().join("httpd.conf"), conf).unwrap();
            // Apache signals its whole process group when it stops: give it its own.
            use std::os::unix::process::CommandExt;
            let child = Command::new(&bin)
                .process_group(0)
                .arg("-f")
                .arg(dir.path().join("httpd.conf"))
                .arg("-DFOREGROUND")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start apache2");
            let mut a = Apache { port, dir, child };
            if super::wait_listening(&mut a.child, port, Duration::from_secs(20)) {
                return Some(a);
            }
            let log = std::fs::read_to_string(a.dir.path().join("error.log")).unwrap_or_default();
            eprintln!("apache2 did not start on port {port}: {log}");
        }
        panic!("apache2 did not start after 5 attempts");
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Stops Apache and waits until the parent has exited.
    pub fn stop(&mut self) {
        super::stop_child(&mut self.child, Duration::from_secs(10));
    }
}

impl Drop for Apache {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Lets Apache's children (another user when the test runs as root) read the tree.
pub fn chmod_tree(root: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    for entry in walk(root) {
        let mode = if entry.is_dir() { 0o777 } else { 0o644 };
        let _ = std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(mode));
    }
}

fn walk(root: &std::path::Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if out[i].is_dir()
            && let Ok(rd) = std::fs::read_dir(&out[i])
        {
            out.extend(rd.flatten().map(|e| e.path()));
        }
        i += 1;
    }
    out
}

/// A copy of Debian's /etc/apache2 in a temporary directory (`DIR/apache2`), for the tests of
/// a user's own tree; None (after `missing`, which fails under CI) without Apache, its Debian
/// configuration or mod_perl.
pub fn debian_etc_copy() -> Option<(tempfile::TempDir, std::path::PathBuf)> {
    if crate::support::find_program("apache2").is_none()
        || !std::path::Path::new("/usr/lib/apache2/modules/mod_perl.so").exists()
        || !std::path::Path::new("/etc/apache2/apache2.conf").exists()
    {
        crate::support::missing("apache2 with Debian's /etc/apache2 and mod_perl (apache2, libapache2-mod-perl2)");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("apache2");
    let cp = std::process::Command::new("cp").arg("-a").arg("/etc/apache2").arg(&conf).status().unwrap();
    assert!(cp.success(), "cp -a /etc/apache2");
    Some((dir, conf))
}
