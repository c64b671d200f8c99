//! A proxy's copy passes the load on to the user's backends: refused, with the line and what
//! to write, unless the target file names them in `upstreams`; a spy backend on another
//! loopback address counts what reaches it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::{self, bench_json, missing, webtune_with_limit};

/// A backend on 127.0.0.2 that answers "ok" and counts the requests it was sent.
struct Spy {
    port: u16,
    seen: Arc<AtomicUsize>,
}

impl Spy {
    fn start() -> Spy {
        let listener = std::net::TcpListener::bind("127.0.0.2:0").expect("bind 127.0.0.2");
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = seen.clone();
        std::thread::spawn(move || {
            for mut s in listener.incoming().flatten() {
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let mut buf = [0u8; 4096];
                if s.read(&mut buf).unwrap_or(0) > 0 {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
            }
        });
        Spy { port, seen }
    }

    fn seen(&self) -> usize {
        self.seen.load(Ordering::Relaxed)
    }
}

/// A copy of Debian's /etc/nginx whose default site's `location /` is `location_body`, with
/// `extra` beside it in sites-enabled; the target file with `upstreams`.
fn nginx_proxy(dir: &Path, location_body: &str, extra: &str, upstreams: &str) -> PathBuf {
    let copied = Command::new("cp").args(["-a", "/etc/nginx"]).arg(dir).status().unwrap();
    assert!(copied.success());
    // The copy's own files: Debian's absolute includes and site link pointed at the copy.
    let main = dir.join("nginx/nginx.conf");
    let text = std::fs::read_to_string(&main).unwrap().replace("/etc/nginx/", &format!("{}/nginx/", dir.display()));
    std::fs::write(&main, text).unwrap();
    let link = dir.join("nginx/sites-enabled/default");
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink("../sites-available/default", &link).unwrap();
    let site = dir.join("nginx/sites-available/default");
    let text = std::fs::read_to_string(&site).unwrap().replace("try_files $uri $uri/ =404;", location_body);
    std::fs::write(&site, text).unwrap();
    std::fs::write(dir.join("nginx/sites-enabled/extra.conf"), extra).unwrap();
    let target = dir.join("target.toml");
    std::fs::write(
        &target,
        format!(
            "[target]\nadapter = \"nginx\"\nconfig = \"{}\"\nupstreams = {upstreams}\n",
            dir.join("nginx/nginx.conf").display()
        ),
    )
    .unwrap();
    target
}

fn launch(target: &Path) -> support::Run {
    webtune_with_limit(&["launch", target.to_str().unwrap(), "--for", "1s"], Duration::from_secs(60))
}

#[test]
fn an_nginx_copy_that_proxies_is_refused_unless_its_backends_are_named() {
    if support::find_program("nginx").is_none() || !Path::new("/etc/nginx/nginx.conf").exists() {
        return missing("nginx with Debian's /etc/nginx");
    }
    let spy = Spy::start();
    let backend = format!("127.0.0.2:{}", spy.port);
    let pass = format!("proxy_pass http://{backend};");
    let group = format!("upstream app {{ server {backend}; }}\n");
    for (body, extra, names) in [
        (pass.clone(), String::new(), format!("proxy_pass {backend}")),
        ("proxy_pass http://app/;".to_string(), group.clone(), format!("server (upstream) {backend}")),
        ("proxy_pass http://$http_x_to;".to_string(), String::new(), "a variable names it".to_string()),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let run = launch(&nginx_proxy(dir.path(), &body, &extra, "[]"));
        assert_eq!(run.code, 2, "{body}: {}", run.stdout);
        assert!(
            run.stderr.contains(&names) && run.stderr.contains("the copy would pass the tune's load"),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("name them in the target file: upstreams = ["), "{}", run.stderr);
        assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
        assert!(!run.stdout.contains("ready at"), "{}", run.stdout);
    }
    assert_eq!(spy.seen(), 0, "a request reached the backend before the refusal");

    // A server block the load does not reach may proxy: it takes nothing.
    let dir = tempfile::tempdir().unwrap();
    let other = format!("server {{ listen 80; server_name other.test; location / {{ {pass} }} }}\n");
    let run = launch(&nginx_proxy(dir.path(), "try_files $uri $uri/ =404;", &other, "[]"));
    assert_eq!(run.code, 0, "{}", run.stderr);

    // Named, the backend takes the load it is sent.
    let dir = tempfile::tempdir().unwrap();
    let target = nginx_proxy(dir.path(), "proxy_pass http://app/;", &group, &format!("[\"{backend}\"]"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(["launch", target.to_str().unwrap(), "--for", "30s"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut first).unwrap();
    let url = first.split_whitespace().find(|w| w.starts_with("http://")).expect("a URL").to_string();
    let (v, run) = bench_json(&["-n", "20", "-c", "1", "--no-keepalive", &url]);
    support::stop_child(&mut child, Duration::from_secs(10));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(v["result"]["succeeded"], 20, "{v:#}");
    assert!(spy.seen() >= 20, "the named backend saw {}", spy.seen());
}

#[test]
fn an_apache_copy_that_proxies_is_refused_unless_its_backends_are_named() {
    let Some((user, conf)) = crate::user_trees::debian_tree() else { return };
    let spy = Spy::start();
    let backend = format!("127.0.0.2:{}", spy.port);
    for m in ["proxy.load", "proxy_http.load", "proxy.conf"] {
        if !conf.join("mods-enabled").join(m).exists() {
            crate::user_trees::enable(&conf, "mods", m);
        }
    }
    std::fs::write(conf.join("conf-available/api.conf"), format!("\nProxyPass \"/api\" \"http://{backend}/\"\n"))
        .unwrap();
    crate::user_trees::enable(&conf, "conf", "api.conf");
    let target = crate::user_trees::write_target(user.path(), "target.toml", &conf, "");
    let run = launch(&target);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr.contains(&format!("conf-available/api.conf:2: ProxyPass {backend}: the copy would pass")),
        "{}",
        run.stderr
    );
    assert_eq!(spy.seen(), 0);
    let target =
        crate::user_trees::write_target(user.path(), "target.toml", &conf, &format!("upstreams = [\"{backend}\"]\n"));
    let run = launch(&target);
    assert_eq!(run.code, 0, "{}", run.stderr);
}
