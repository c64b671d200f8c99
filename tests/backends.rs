//! A proxy's copy passes the load on to the user's backends: refused, with the line and what
//! to write, unless the target file names them in `upstreams`; a spy backend on another
//! loopback address counts what reaches it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::support::rogue::{Rogue, read_request, response};
use crate::support::{self, bench_json, missing, webtune_with_limit};

/// A backend on 127.0.0.2 that answers "ok": what reaches it is counted in `accepted`.
fn spy() -> Rogue {
    Rogue::start_on("127.0.0.2:0", |mut s, _| {
        if read_request(&mut s).is_some() {
            let _ = s.write_all(&response("200 OK", b"ok"));
        }
    })
}

fn seen(spy: &Rogue) -> u64 {
    spy.accepted.load(Ordering::SeqCst)
}

/// A copy of Debian's /etc/nginx whose default site's `location /` is `location_body`, with
/// `extra` beside it in sites-enabled; the target file with `upstreams`.
fn nginx_proxy(dir: &Path, location_body: &str, extra: &str, upstreams: &str) -> PathBuf {
    let copied = Command::new("cp").args(["-a", "/etc/nginx"]).arg(dir).status().unwrap();
    assert!(copied.success());
    // The copy's own files: Debian's absolute includes and site link pointed at the copy.
    crate::user_trees_fpm::rewrite(&dir.join("nginx/nginx.conf"), "/etc/nginx/", &format!("{}/nginx/", dir.display()));
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
    let spy = spy();
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
    assert_eq!(seen(&spy), 0, "a request reached the backend before the refusal");

    // A server block the load does not reach may proxy: it takes nothing.
    let dir = tempfile::tempdir().unwrap();
    let other = format!("server {{ listen 80; server_name other.test; location / {{ {pass} }} }}\n");
    let run = launch(&nginx_proxy(dir.path(), "try_files $uri $uri/ =404;", &other, "[]"));
    assert_eq!(run.code, 0, "{}", run.stderr);

    // Named, the backend takes the load it is sent.
    let dir = tempfile::tempdir().unwrap();
    let target = nginx_proxy(dir.path(), "proxy_pass http://app/;", &group, &format!("[\"{backend}\"]"));
    let (mut child, port) = support::launched(&target, "30s");
    let url = format!("http://127.0.0.1:{port}/");
    let (v, run) = bench_json(&["-n", "20", "-c", "1", "--no-keepalive", &url]);
    support::stop_child(&mut child, Duration::from_secs(10));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(v["result"]["succeeded"], 20, "{v:#}");
    assert!(seen(&spy) >= 20, "the named backend saw {}", seen(&spy));
}

#[test]
fn an_apache_copy_that_proxies_is_refused_unless_its_backends_are_named() {
    let Some((user, conf)) = crate::user_trees::debian_tree() else { return };
    let spy = spy();
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
    assert_eq!(seen(&spy), 0);
    let target =
        crate::user_trees::write_target(user.path(), "target.toml", &conf, &format!("upstreams = [\"{backend}\"]\n"));
    let run = launch(&target);
    assert_eq!(run.code, 0, "{}", run.stderr);
}
