//! nginx and php-fpm from the user's own configuration: Debian's stock trees copied from /etc
//! into a temporary directory (never written under /etc), a site added there as a user would,
//! then launched, tuned and diffed by webtune; the user's files' checksums stay as they were.
//!
//! The copies stand for a user's tree kept at another prefix: their own absolute includes
//! (`include /etc/nginx/...`, `include=/etc/php/...`) are rewritten by the test to the copy,
//! as the user's would name their own place; webtune reads what nginx and php-fpm would.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use webtune::server::{self, TargetFile};

use crate::support::{find_program, have, missing, webtune_with_limit};

/// Debian's php-fpm binary (php-fpm8.2) and its version directory under /etc/php.
fn php_fpm() -> Option<(String, String)> {
    let bin = std::fs::read_dir("/usr/sbin").ok()?.flatten().find_map(|e| {
        let n = e.file_name().to_string_lossy().into_owned();
        n.strip_prefix("php-fpm").filter(|v| !v.is_empty()).map(|v| (n.clone(), v.to_string()))
    });
    bin.filter(|(_, v)| Path::new(&format!("/etc/php/{v}/fpm/php-fpm.conf")).exists())
}

fn sh(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Replaces the text `from` with `to` in the file at `path`, which must be the test's own copy
/// (in the temporary directory): `from` may name /etc, the file written never lies there.
pub fn rewrite(path: &Path, from: &str, to: &str) {
    assert!(path.starts_with(std::env::temp_dir()) && !path.starts_with("/etc"), "{}: not a copy", path.display());
    let text = std::fs::read_to_string(path).unwrap();
    std::fs::write(path, text.replace(from, to)).unwrap();
}

/// `cp -a /etc/nginx` into `tmp`, its absolute includes pointed at the copy, Debian's default
/// site left enabled (a symlink to /etc: read in place, never written) beside `site`'s.
fn nginx_tree(tmp: &Path, name: &str, site: &str) -> PathBuf {
    let tree = tmp.join("nginx");
    sh(Command::new("cp").args(["-a", "/etc/nginx"]).arg(&tree));
    rewrite(&tree.join("nginx.conf"), "/etc/nginx", &tree.display().to_string());
    std::fs::write(tree.join("sites-available").join(name), site).unwrap();
    std::os::unix::fs::symlink(tree.join("sites-available").join(name), tree.join("sites-enabled").join(name)).unwrap();
    tree
}

/// A directory nginx's and php-fpm's workers (www-data) can read.
fn web_root(tmp: &Path, files: &[(&str, &str)]) -> PathBuf {
    let root = tmp.join("www");
    std::fs::create_dir_all(&root).unwrap();
    for (name, text) in files {
        std::fs::write(root.join(name), text).unwrap();
        chmod(&root.join(name), 0o644);
    }
    chmod(tmp, 0o755);
    chmod(&root, 0o755);
    root
}

/// sha256 of every file and symlink under `dirs`, by path.
fn checksums(dirs: &[&Path]) -> Vec<String> {
    let mut files = Vec::new();
    let mut todo: Vec<PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                todo.push(e.path());
            } else if t.is_symlink() {
                files.push(format!("{} -> {}", e.path().display(), std::fs::read_link(e.path()).unwrap().display()));
            } else {
                files.push(e.path().display().to_string());
            }
        }
    }
    files.sort();
    let plain: Vec<&String> = files.iter().filter(|f| !f.contains(" -> ")).collect();
    let out = Command::new("sha256sum").args(plain.iter().map(|s| s.as_str())).output().unwrap();
    assert!(out.status.success());
    let mut sums: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    sums.extend(files.into_iter().filter(|f| f.contains(" -> ")));
    sums
}

/// `patch -p1 --dry-run -d DIR < DIFF`: whether it applies, and what patch said.
fn patch_dry_run(dir: &Path, diff: &str) -> (bool, String) {
    use std::io::Write;
    let mut child = Command::new("patch")
        .args(["-p1", "--dry-run", "-d"])
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("patch");
    child.stdin.take().unwrap().write_all(diff.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

fn get(r: &server::Running, path: &str) -> (u16, String) {
    server::http::get(&r.host, r.port, path, Duration::from_secs(5)).unwrap_or_else(|| panic!("GET {path} failed"))
}

const INDEX_PHP: &str = "<?php\n$uri = $_SERVER['REQUEST_URI'];\n\
    if (strpos($uri, '/pretty/url') === 0) { echo \"pretty-url-marker served by php for $uri\\n\"; }\n\
    else { echo \"index for $uri\\n\"; }\n";

/// Debian's nginx tree with a PHP site (try_files to index.php, fastcgi_pass to the pool's
/// socket under /run/php) and Debian's php-fpm tree: the pool's socket moves into the run
/// directory and the front follows it; a pretty URL is served by PHP through try_files;
/// pm.max_children is tuned and the diff touches the pool file only and applies.
#[test]
fn php_site_behind_the_users_nginx_tunes_the_pool_file() {
    if !have(&["nginx", "patch", "sha256sum"]) {
        return;
    }
    let Some((_bin, version)) = php_fpm() else {
        missing("php-fpm with Debian's /etc/php tree");
        return;
    };
    let started = std::time::Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let root = web_root(tmp.path(), &[("index.php", INDEX_PHP)]);
    let site = format!(
        "server {{\n\tlisten 80;\n\tlisten [::]:80;\n\troot {};\n\tindex index.php index.html;\n\
         \tserver_name shop.example;\n\n\tlocation / {{\n\t\ttry_files $uri $uri/ /index.php?$args;\n\t}}\n\n\
         \tlocation ~ \\.php$ {{\n\t\tinclude snippets/fastcgi-php.conf;\n\t\tfastcgi_pass unix:/run/php/php{version}-fpm.sock;\n\t}}\n}}\n",
        root.display()
    );
    let nginx = nginx_tree(tmp.path(), "shop", &site);
    let php = tmp.path().join("php");
    sh(Command::new("cp").args(["-a", "/etc/php"]).arg(&php));
    let fpm_dir = php.join(&version).join("fpm");
    rewrite(&fpm_dir.join("php-fpm.conf"), "/etc/php", &php.display().to_string());
    // The user's own PHP settings in the pool stay theirs.
    let pool_file = fpm_dir.join("pool.d/www.conf");
    let pool = std::fs::read_to_string(&pool_file).unwrap();
    std::fs::write(&pool_file, format!("{pool}\nphp_admin_value[memory_limit] = 96M\n")).unwrap();
    let before = checksums(&[&nginx, &php]);

    let target = tmp.path().join("shop.toml");
    std::fs::write(
        &target,
        format!(
            "[target]\nadapter = \"php-fpm\"\nconfig = \"php/{version}/fpm/php-fpm.conf\"\nfront_config = \"nginx/nginx.conf\"\n\
             site = \"shop.example\"\nready = \"/pretty/url\"\n[knobs]\nworkers = [2, 4]\n\
             [load]\npath = \"/pretty/url\"\nduration = \"1s\"\nconnections = 2\n"
        ),
    )
    .unwrap();
    let file = TargetFile::load(&target).unwrap_or_else(|e| panic!("{}", e.0));

    // A launch: the pretty URL reaches PHP through try_files; the pool starts as the user has
    // it (pm dynamic, start_servers 2), then with max_children 4.
    let r = server::launch(&file, &[]).unwrap_or_else(|e| panic!("{e:#}"));
    let (code, body) = get(&r, "/pretty/url?x=1");
    assert_eq!(code, 200, "{body}\n{}", r.config_text());
    assert!(body.contains("pretty-url-marker served by php for /pretty/url?x=1"), "{body}");
    let (_, limit) = get(&r, "/index.php?limit");
    assert!(limit.contains("index for /index.php?limit"), "{limit}");
    assert!(r.config_text().contains(&format!("listen = {}/fpm.sock", r.dir().display())), "{}", r.config_text());
    assert!(r.config_text().contains(&format!("fastcgi_pass unix:{}/fpm.sock;", r.dir().display())));
    assert!(r.config_text().contains("php_admin_value[memory_limit] = 96M"));
    assert_eq!(r.worker_pids().len(), 2, "{:?}", r.worker_pids());
    drop(r);
    let r = server::launch(&file, &[("workers".into(), "4".into())]).unwrap_or_else(|e| panic!("{e:#}"));
    assert!(r.config_text().contains("pm.max_children = 4"), "{}", r.config_text());
    assert!(get(&r, "/pretty/url").1.contains("pretty-url-marker"));
    drop(r);
    println!("launches: {:?}", started.elapsed());

    // The tune: its answer is a diff of the pool file alone. A value the user fixes with --set
    // is theirs to ask for, so it is patched without a verdict (a swept knob moves from the
    // pool's own 5 only on one: tests/baseline_trees.rs).
    let diffs = tmp.path().join("diffs");
    let run = crate::support::quick_tune(&target, &["--diff", diffs.to_str().unwrap(), "--set", "workers=4"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.stdout);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let diff = std::fs::read_to_string(diffs.join("php-fpm.diff"))
        .unwrap_or_else(|e| panic!("php-fpm.diff: {e}: {:#}", v["evidence"]));
    assert!(!diffs.join("nginx.diff").exists(), "the front is not tuned");
    let changed: Vec<&str> = diff.lines().filter_map(|l| l.strip_prefix("+++ b/")).collect();
    assert_eq!(changed, ["pool.d/www.conf"], "{diff}");
    assert!(diff.contains("-pm.max_children = 5\n+pm.max_children = 4\n"), "{diff}");
    assert_eq!(v["diffs"]["php-fpm"].as_str(), Some(diff.as_str()));
    let (applies, said) = patch_dry_run(&fpm_dir, &diff);
    assert!(applies, "{said}\n{diff}");
    assert_eq!(checksums(&[&nginx, &php]), before, "the user's files changed");
    println!("with the tune: {:?}", started.elapsed());
}

/// An nginx site that proxies to a gunicorn the test starts: `site` picks its server block
/// over Debian's default one on the same port; workers land on the user's worker_processes.
#[test]
fn proxy_site_in_front_of_gunicorn_from_the_users_nginx() {
    if !have(&["nginx", "gunicorn", "patch", "sha256sum"]) {
        return;
    }
    let started = std::time::Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let app = tmp.path().join("app");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::write(
        app.join("hello.py"),
        "def app(environ, start_response):\n    start_response('200 OK', [('Content-Type', 'text/plain')])\n    \
         return [b'gunicorn-marker ' + environ['PATH_INFO'].encode() + b'\\n']\n",
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut gunicorn = Command::new(find_program("gunicorn").unwrap())
        .args(["--bind", &format!("127.0.0.1:{port}"), "--workers", "1", "--chdir"])
        .arg(&app)
        .arg("hello:app")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(crate::support::wait_listening(&mut gunicorn, port, Duration::from_secs(20)), "gunicorn did not start");
    let site = format!(
        "server {{\n\tlisten 80;\n\tserver_name api.example;\n\tlocation / {{\n\t\tinclude proxy_params;\n\
         \t\tproxy_pass http://127.0.0.1:{port};\n\t}}\n}}\n"
    );
    let nginx = nginx_tree(tmp.path(), "api", &site);
    let before = checksums(&[&nginx]);
    let target = tmp.path().join("api.toml");
    // The proxied gunicorn takes the load: named, as a user whose backend may take it would.
    let text = "[target]\nadapter = \"nginx\"\nconfig = \"nginx/nginx.conf\"\nsite = \"api.example\"\nready = \"/hello\"\n\
                [knobs]\nworkers = [1, 2]\n";
    std::fs::write(&target, text).unwrap();
    let Err(refused) = TargetFile::load(&target).map(|_| ()) else { panic!("an unnamed backend is refused") };
    let refused = refused.0;
    assert!(refused.contains(&format!("proxy_pass 127.0.0.1:{port}: the copy would pass")), "{refused}");
    std::fs::write(&target, text.replace("[knobs]", &format!("upstreams = [\"127.0.0.1:{port}\"]\n[knobs]"))).unwrap();
    let file = TargetFile::load(&target).unwrap_or_else(|e| panic!("{}", e.0));
    let r = server::launch(&file, &[("workers".into(), "2".into()), ("keepalive_timeout".into(), "5".into())])
        .unwrap_or_else(|e| panic!("{e:#}"));
    let (code, body) = get(&r, "/hello");
    assert_eq!((code, body.as_str()), (200, "gunicorn-marker /hello\n"), "{}", r.config_text());
    assert_eq!(r.worker_pids().len(), 2, "{}", r.config_text());
    drop(r);
    let diffs = file.diffs(&[("workers".into(), "2".into()), ("keepalive_timeout".into(), "5".into())]).unwrap();
    let diff = &diffs["nginx"];
    assert!(diff.contains("-worker_processes auto;\n+worker_processes 2;\n"), "{diff}");
    assert!(diff.contains("+\tkeepalive_timeout 5s;\n"), "{diff}");
    assert_eq!(diff.lines().filter(|l| l.starts_with("+++ ")).count(), 1, "only nginx.conf changes: {diff}");
    let (applies, said) = patch_dry_run(&nginx, diff);
    assert!(applies, "{said}\n{diff}");
    assert!(file.diffs(&[]).unwrap().is_empty(), "the user's own values give no diff");
    // Without `site`, the load's Host header picks the server block; one no block names
    // leaves it to nginx's default (Debian's site here).
    for (host, marker) in [("api.example:80", "gunicorn-marker"), ("nowhere.example", "nginx")] {
        let target = tmp.path().join("host.toml");
        std::fs::write(
            &target,
            format!(
                "[target]\nadapter = \"nginx\"\nconfig = \"nginx/nginx.conf\"\nready = \"/hello\"\n\
                 upstreams = [\"127.0.0.1:{port}\"]\n[load]\nheaders = [\"Host: {host}\"]\n"
            ),
        )
        .unwrap();
        let file = TargetFile::load(&target).unwrap_or_else(|e| panic!("{}", e.0));
        let r = server::launch(&file, &[]).unwrap_or_else(|e| panic!("{e:#}"));
        let (_, body) = get(&r, "/hello");
        assert!(body.contains(marker), "Host {host}: {body}");
    }
    crate::support::stop_child(&mut gunicorn, Duration::from_secs(5));
    assert_eq!(checksums(&[&nginx]), before, "the user's files changed");
    println!("proxy site: {:?}", started.elapsed());
}

/// What webtune cannot rewrite safely is refused before anything starts, with the user's
/// file:line and exit 2; their files are untouched.
#[test]
fn constructs_that_cannot_be_rewritten_are_refused_with_file_and_line() {
    if !have(&["nginx"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let nginx =
        nginx_tree(tmp.path(), "bad", "server {\n\tserver_name bad.example;\n\tlisten unix:/run/bad.sock;\n}\n");
    let refused = |toml: &str| {
        let t = tmp.path().join("t.toml");
        std::fs::write(&t, toml).unwrap();
        let before = checksums(&[tmp.path()]);
        let run = webtune_with_limit(&["launch", t.to_str().unwrap(), "--for", "0s"], Duration::from_secs(30));
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert_eq!(checksums(&[tmp.path()]), before, "the user's files changed");
        run.stderr
    };
    let e = refused("[target]\nadapter = \"nginx\"\nconfig = \"nginx/nginx.conf\"\n");
    let bad = nginx.join("sites-enabled/bad");
    assert!(e.contains(&format!("{}:3: listen unix:/run/bad.sock", bad.display())), "{e}");

    std::fs::write(nginx.join("sites-available/bad"), "server {\n\tlisten 80;\n\tinclude /nonexistent/x.conf;\n}\n")
        .unwrap();
    let e = refused("[target]\nadapter = \"nginx\"\nconfig = \"nginx/nginx.conf\"\n");
    assert!(e.contains(&format!("{}:3: include", bad.display())) && e.contains("/nonexistent/x.conf"), "{e}");

    // php-fpm: two pools and none named; a chroot; an Apache front.
    let fpm = tmp.path().join("fpm");
    std::fs::create_dir_all(fpm.join("pool.d")).unwrap();
    std::fs::write(fpm.join("php-fpm.conf"), format!("[global]\ninclude={}/pool.d/*.conf\n", fpm.display())).unwrap();
    std::fs::write(
        fpm.join("pool.d/www.conf"),
        "[www]\nlisten = /run/php/www.sock\npm = static\npm.max_children = 2\n",
    )
    .unwrap();
    std::fs::write(fpm.join("pool.d/api.conf"), "[api]\nlisten = 127.0.0.1:9001\npm = static\npm.max_children = 2\n")
        .unwrap();
    let e = refused("[target]\nadapter = \"php-fpm\"\nconfig = \"fpm/php-fpm.conf\"\n");
    assert!(e.contains("has 2 pools") && e.contains("api (") && e.contains("pool.d/www.conf:1)"), "{e}");
    let e = refused("[target]\nadapter = \"php-fpm\"\nconfig = \"fpm/php-fpm.conf\"\npool = \"shop\"\n");
    assert!(e.contains("t.toml:4: pool: pool \"shop\"") && e.contains("its pools: "), "{e}");
    std::fs::write(tmp.path().join("apache2.conf"), "ServerRoot /etc/apache2\nListen 80\n").unwrap();
    let e = refused(
        "[target]\nadapter = \"php-fpm\"\nconfig = \"fpm/php-fpm.conf\"\npool = \"www\"\nfront_config = \"apache2.conf\"\n",
    );
    assert!(e.contains("t.toml:5: front_config:") && e.contains("apache2.conf:1: an Apache configuration"), "{e}");
    std::fs::write(fpm.join("pool.d/api.conf"), "[api]\nlisten = 9001\nchroot = /srv\n").unwrap();
    let e = refused("[target]\nadapter = \"php-fpm\"\nconfig = \"fpm/php-fpm.conf\"\npool = \"www\"\n");
    assert!(e.contains(&format!("{}:3: chroot", fpm.join("pool.d/api.conf").display())), "{e}");
}

/// The user's nginx and php-fpm running from their trees (the test's copies, whose run files
/// are at the test's place): `webtune init --pid` on the php-fpm master finds its tree, its
/// pool and the nginx that passes requests to it, and the target it writes launches a copy
/// that serves the same pages.
#[test]
fn init_pid_on_a_running_php_fpm_finds_its_pool_and_its_nginx() {
    if !have(&["nginx"]) {
        return;
    }
    let Some((bin, version)) = php_fpm() else {
        missing("php-fpm with Debian's /etc/php tree");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let root = web_root(tmp.path(), &[("index.php", INDEX_PHP)]);
    let port = crate::support::nginx::free_port();
    let socket = tmp.path().join("fpm.sock");
    let site = format!(
        "server {{\n\tlisten 127.0.0.1:{port};\n\troot {};\n\tindex index.php index.html;\n\tserver_name shop.example;\n\n\
         \tlocation / {{\n\t\ttry_files $uri $uri/ /index.php?$args;\n\t}}\n\n\
         \tlocation ~ \\.php$ {{\n\t\tinclude snippets/fastcgi-php.conf;\n\t\tfastcgi_pass unix:{};\n\t}}\n}}\n",
        root.display(),
        socket.display()
    );
    let nginx = nginx_tree(tmp.path(), "shop", &site);
    // Only the user's site listens (Debian's default one would want port 80).
    std::fs::remove_file(nginx.join("sites-enabled/default")).unwrap();
    rewrite(&nginx.join("nginx.conf"), "/run/nginx.pid", &tmp.path().join("nginx.pid").display().to_string());
    let php = tmp.path().join("php");
    sh(Command::new("cp").args(["-a", "/etc/php"]).arg(&php));
    let fpm_dir = php.join(&version).join("fpm");
    let conf = fpm_dir.join("php-fpm.conf");
    rewrite(&conf, "/etc/php", &php.display().to_string());
    rewrite(&conf, &format!("/run/php/php{version}-fpm.pid"), &tmp.path().join("fpm.pid").display().to_string());
    rewrite(&conf, &format!("/var/log/php{version}-fpm.log"), &tmp.path().join("fpm.log").display().to_string());
    rewrite(
        &fpm_dir.join("pool.d/www.conf"),
        &format!("/run/php/php{version}-fpm.sock"),
        &socket.display().to_string(),
    );

    use std::os::unix::process::CommandExt;
    let spawn = |cmd: &mut Command| cmd.process_group(0).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let mut fpm = spawn(Command::new(format!("/usr/sbin/{bin}")).arg("-F").arg("-y").arg(&conf));
    let mut web = spawn(Command::new("nginx").arg("-c").arg(nginx.join("nginx.conf")).args(["-g", "daemon off;"]));
    let stop = |fpm: &mut std::process::Child, web: &mut std::process::Child| {
        crate::support::stop_child(web, Duration::from_secs(5));
        crate::support::stop_child(fpm, Duration::from_secs(5));
    };
    if !crate::support::wait_listening(&mut web, port, Duration::from_secs(20)) {
        stop(&mut fpm, &mut web);
        panic!("the user's nginx did not start");
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let served = loop {
        let got = server::http::get("127.0.0.1", port, "/pretty/url?x=1", Duration::from_secs(5));
        match got {
            Some((200, body)) => break body,
            _ if std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            other => {
                stop(&mut fpm, &mut web);
                panic!("the user's site did not serve: {other:?}");
            }
        }
    };
    assert!(served.contains("pretty-url-marker"), "{served}");
    let before = checksums(&[&nginx, &php]);
    let init = crate::support::webtune(&["init", "--pid", &fpm.id().to_string()]);
    stop(&mut fpm, &mut web);
    assert_eq!(init.code, 0, "{}", init.stderr);
    let t = &init.stdout;
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap().display().to_string();
    assert!(t.contains("adapter = \"php-fpm\""), "{t}");
    assert!(t.contains(&format!("config = \"{}\"", canonical(&conf))), "{t}");
    assert!(t.contains(&format!("front_config = \"{}\"", canonical(&nginx.join("nginx.conf")))), "{t}");
    assert!(t.contains("passes requests to pool www") && t.contains("# worker "), "{t}");
    let target = tmp.path().join("init.toml");
    std::fs::write(&target, t).unwrap();
    let file = TargetFile::load(&target).unwrap_or_else(|e| panic!("{}", e.0));
    let r = server::launch(&file, &[]).unwrap_or_else(|e| panic!("{e:#}"));
    let (code, body) = get(&r, "/pretty/url?x=1");
    drop(r);
    assert_eq!((code, body), (200, served), "the copy serves what the user's setup served");
    assert_eq!(checksums(&[&nginx, &php]), before, "init and launch wrote nothing of the user's");
}

/// Includes that loop through a symlink are refused at once with their line, not followed
/// until a depth cap (or memory) ends them: nginx's `include conf.d/l1/*.conf` from a file of
/// conf.d with `l1 -> .`, and php-fpm's `include=` of its pool directory through a link to it
/// from a pool. Before, nginx read the same file 16 deep and php-fpm 8; a second such include
/// in the file doubled the reads at every level.
#[test]
fn include_loops_through_symlinks_are_refused_at_once() {
    if !have(&["nginx"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let nginx = nginx_tree(tmp.path(), "a", "server {\n\tlisten 80;\n\tserver_name a.example;\n}\n");
    std::os::unix::fs::symlink(".", nginx.join("conf.d/l1")).unwrap();
    std::os::unix::fs::symlink(".", nginx.join("conf.d/l2")).unwrap();
    std::fs::write(nginx.join("conf.d/loop.conf"), "include conf.d/l1/*.conf;\ninclude conf.d/l2/*.conf;\n").unwrap();
    let fpm = tmp.path().join("fpm");
    std::fs::create_dir_all(fpm.join("pool.d")).unwrap();
    std::fs::write(fpm.join("php-fpm.conf"), format!("[global]\ninclude={}/pool.d/*.conf\n", fpm.display())).unwrap();
    std::os::unix::fs::symlink("..", fpm.join("pool.d/up")).unwrap();
    std::fs::write(
        fpm.join("pool.d/www.conf"),
        format!(
            "[www]\nlisten = 127.0.0.1:9001\npm = static\npm.max_children = 2\ninclude={}/pool.d/up/pool.d/*.conf\n",
            fpm.display()
        ),
    )
    .unwrap();
    let cases = [
        ("nginx", "nginx/nginx.conf", "conf.d/loop.conf:1: include: ", "conf.d/l1/loop.conf includes itself"),
        ("php-fpm", "fpm/php-fpm.conf", "pool.d/www.conf:5: include: ", "pool.d/up/pool.d/www.conf includes itself"),
    ];
    for (adapter, config, line, why) in cases {
        let t = tmp.path().join("t.toml");
        std::fs::write(&t, format!("[target]\nadapter = \"{adapter}\"\nconfig = \"{config}\"\n")).unwrap();
        let started = std::time::Instant::now();
        let run = webtune_with_limit(&["launch", t.to_str().unwrap(), "--for", "0s"], Duration::from_secs(20));
        assert_eq!(run.code, 2, "{adapter}: {}\n{}", run.stdout, run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{adapter}: one line: {}", run.stderr);
        assert!(run.stderr.contains(line) && run.stderr.contains(why), "{adapter}: {}", run.stderr);
        assert!(started.elapsed() < Duration::from_secs(5), "{adapter}: took {:?}", started.elapsed());
    }
}

/// A 50k-entry `map` (1.9 MB, a large redirect map) is read by `init --config` and launched
/// in seconds, and the launched copy answers from it. Before, each directive's line was
/// counted from the file's start: 31 s in init and again at every launch (release build).
/// A debug build took 1.2 s to init and 0.7 s to launch here (beside three other tests on 2
/// cores): the bound, 10 s, leaves room for a busy machine and still catches quadratic
/// behaviour.
#[test]
fn a_map_of_50k_entries_is_read_and_launched_in_seconds() {
    if !have(&["nginx"]) {
        return;
    }
    let bound = Duration::from_secs(10);
    let tmp = tempfile::tempdir().unwrap();
    let site =
        "server {\n\tlisten 80;\n\tserver_name map.example;\n\tlocation / { return 200 \"to $webtune_to\\n\"; }\n}\n";
    let nginx = nginx_tree(tmp.path(), "map", site);
    let mut map = String::from("map $uri $webtune_to {\n    default none;\n");
    for i in 0..50_000 {
        map += &format!("    /old/path/{i:06} /new/path/{i:06};\n");
    }
    std::fs::write(nginx.join("conf.d/redirects.conf"), map + "}\n").unwrap();
    let main = nginx.join("nginx.conf");
    let started = std::time::Instant::now();
    let init = webtune_with_limit(&["init", "--config", main.to_str().unwrap()], Duration::from_secs(120));
    let took = started.elapsed();
    assert_eq!(init.code, 0, "{}", init.stderr);
    assert!(took < bound, "init --config took {took:?}");
    let target = tmp.path().join("map.toml");
    std::fs::write(&target, "[target]\nadapter = \"nginx\"\nconfig = \"nginx/nginx.conf\"\nsite = \"map.example\"\n")
        .unwrap();
    let file = TargetFile::load(&target).unwrap_or_else(|e| panic!("{}", e.0));
    let started = std::time::Instant::now();
    let r = server::launch(&file, &[]).unwrap_or_else(|e| panic!("{e:#}"));
    let ready = started.elapsed();
    let (code, body) = get(&r, "/old/path/049999");
    assert_eq!((code, body.as_str()), (200, "to /new/path/049999\n"));
    drop(r);
    assert!(ready < bound, "launch took {ready:?} to be ready");
    println!("init --config: {took:?}; launch ready: {ready:?}");
}
