//! The front-end proxy of seed 001 ("The Big Picture"): a light nginx in front of heavy
//! pre-forked workers absorbs slow clients, so a worker is free as soon as it has produced its
//! response. `front = "nginx"` puts one before any adapter's server: the server moves to a
//! private loopback port, nginx takes the target's port with response buffering on, and both
//! start and stop in the same run directory. The client-facing keep-alive knobs go to the
//! front; the back end's connections from the front carry one request each (nginx's default
//! HTTP/1.0 to upstreams), so the back end runs with its own keep-alive off, as the guide
//! advises.

use super::adapters::adapter::{Ctx, Prepared, bracket, write};
use super::process::Spawn;
use super::settings::{Typed, get};
use crate::input::is_on as on;

/// The knob's name.
pub const KNOB: &str = "front";

/// Its values.
pub const VALUES: [&str; 2] = ["none", "nginx"];

/// Workers of the front: light processes, one per core is nginx's own advice, but the load
/// and the back end need the cores here; one worker multiplexes thousands of connections.
const FRONT_WORKERS: &str = "1";

/// Whether `values` ask for a front.
pub fn wanted(values: &[(String, String)]) -> bool {
    get(values, KNOB) == Some("nginx")
}

/// The knob's value, judged: one of `VALUES`.
pub fn check(value: &str) -> Result<(), String> {
    if VALUES.contains(&value) { Ok(()) } else { Err(format!("{KNOB} = {value:?}: expected \"none\" or \"nginx\"")) }
}

/// What `values` cannot have beside a front: HTTP/2 from the clients (this front speaks
/// HTTP/1.1 to them, and nginx before 1.25 cannot serve both on one cleartext port).
pub fn conflict(values: &[(String, String)]) -> Option<String> {
    (wanted(values) && get(values, "http2").is_some_and(on))
        .then(|| format!("{KNOB} = \"nginx\" with http2 on: the front speaks HTTP/1.1 to the clients"))
}

/// The values the back end gets: without the front knob, and, behind a front, with its
/// keep-alive off (the front's own connections carry one request each).
pub fn back_values(values: &[(String, String)]) -> Vec<(String, String)> {
    let front = wanted(values);
    let mut out: Vec<(String, String)> = values
        .iter()
        .filter(|(k, _)| k != KNOB && !(front && (k == "keepalive" || k == "keepalive_timeout")))
        .cloned()
        .collect();
    if front {
        out.push(("keepalive".into(), "off".into()));
    }
    out
}

/// The front's http-level directives for the client-facing knobs.
fn client_directives(values: &Typed) -> anyhow::Result<String> {
    Ok(match (values.keepalive().unwrap_or(true), values.keepalive_timeout()) {
        (false, _) => "keepalive_timeout 0;".into(),
        (true, Some(t)) => format!("keepalive_timeout {}s;", t.seconds()?),
        (true, None) => String::new(),
    })
}

/// The proxy's location: buffered (the worker hands its whole response to nginx and is free),
/// the client's Host and address passed on.
fn proxy_location(upstream: &str) -> String {
    format!(
        "location / {{\n      proxy_pass http://{upstream};\n      proxy_buffering on;\n      \
         proxy_buffers 64 8k;\n      proxy_max_temp_file_size 64m;\n      \
         proxy_set_header Host $http_host;\n      proxy_set_header X-Forwarded-For $remote_addr;\n    }}"
    )
}

/// Adds an nginx front to a prepared back end listening on `back_port`: its configuration
/// (`front-nginx.conf`), its process (started last, stopped first) and its log.
pub fn add(ctx: &Ctx, values: &Typed, back_port: u16, prepared: &mut Prepared) -> anyhow::Result<()> {
    let d = ctx.run_dir_text();
    let upstream = format!("{}:{back_port}", bracket(ctx.host));
    let listen = format!("{}:{}", bracket(ctx.host), ctx.port);
    let user = if nix::unistd::geteuid().is_root() { "user root;\n" } else { "" };
    let conf = format!(
        "# nginx front (webtune front = \"nginx\"): clients here, the server on {upstream}\n\
         daemon off;\nmaster_process on;\nworker_processes {FRONT_WORKERS};\n{user}pid {d}/front-nginx.pid;\n\
         error_log {d}/front-error.log notice;\nevents {{ worker_connections 4096; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/front-body;\n  proxy_temp_path {d}/front-proxy;\n  \
         fastcgi_temp_path {d}/front-fastcgi;\n  uwsgi_temp_path {d}/front-uwsgi;\n  scgi_temp_path {d}/front-scgi;\n  \
         {}\n  server {{\n    listen {listen};\n    {}\n  }}\n}}\n",
        client_directives(values)?,
        proxy_location(&upstream)
    );
    write(ctx.dir, "front-nginx.conf", &conf)?;
    prepared.config_text = format!("{}\n\n{conf}", prepared.config_text);
    prepared.spawns.push(Spawn::new(
        "front-nginx",
        "nginx",
        vec![
            "-c".into(),
            format!("{d}/front-nginx.conf"),
            "-p".into(),
            d.clone(),
            "-e".into(),
            format!("{d}/front-error.log"),
        ],
    ));
    prepared.front = Some(prepared.spawns.len() - 1);
    prepared.error_logs.push(ctx.dir.join("front-error.log"));
    Ok(())
}

/// The front's lines of a recommendation, None without a front.
pub fn recommend(values: &[(String, String)]) -> Option<String> {
    if !wanted(values) {
        return None;
    }
    let client = client_directives(&Typed::read(values)).unwrap_or_default();
    let client = if client.is_empty() { String::new() } else { format!("\n  {client}") };
    Some(format!(
        "# front: nginx (one worker), the server behind it on a private port with keep-alive off\n\
         http {{{client}\n  server {{\n    listen 80;\n    {}\n  }}\n}}",
        proxy_location("127.0.0.1:8080")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn behind_a_front_the_back_end_loses_the_knob_and_its_keepalive() {
        let front = v(&[("workers", "4"), ("front", "nginx"), ("keepalive", "on"), ("keepalive_timeout", "5")]);
        assert_eq!(back_values(&front), v(&[("workers", "4"), ("keepalive", "off")]));
        let none = v(&[("workers", "4"), ("front", "none"), ("keepalive", "on")]);
        assert_eq!(back_values(&none), v(&[("workers", "4"), ("keepalive", "on")]));
        assert_eq!(client_directives(&Typed::read(&front)).unwrap(), "keepalive_timeout 5s;");
        assert_eq!(client_directives(&Typed::read(&v(&[("keepalive", "off")]))).unwrap(), "keepalive_timeout 0;");
    }

    #[test]
    fn the_recommendation_names_the_front_only_when_there_is_one() {
        assert!(recommend(&v(&[("front", "none")])).is_none());
        let r = recommend(&v(&[("front", "nginx"), ("keepalive_timeout", "3")])).unwrap();
        assert!(r.contains("proxy_buffering on;") && r.contains("keepalive_timeout 3s;"), "{r}");
        assert!(check("nginx").is_ok() && check("varnish").is_err());
    }
}
