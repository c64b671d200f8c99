//! What a bench run requests: one URL, an http_load URL list, or a scenario of steps; each
//! becomes a request template rendered once. All must go to one server (one address).

use std::collections::{BTreeMap, HashMap};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use url::Url;

use super::access_log::AccessLog;
use crate::aggregate::breakdown::{Layout, MAX_REQUEST_PARTS};
use crate::engine::request::RequestSpec;
use crate::engine::{Order, Template, TlsSettings, Weights};
use crate::input::{self, InputError};

/// Where the requests go: scheme, host and port shared by every template.
pub struct Origin {
    pub addr: SocketAddr,
    pub tls: Option<TlsSettings>,
    scheme: String,
    host: String,
    port: u16,
    /// The Host header (host, and port when not the scheme's default).
    host_header: String,
}

/// The parts of every request that the command line sets.
pub struct Common {
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub content_type: Option<String>,
    pub keepalive: bool,
}

/// Every request of a run, rendered, with the one server they go to and the order to send them.
pub struct Workload {
    pub origin: Origin,
    pub templates: Vec<Template>,
    pub order: Order,
    /// The URL (or the first one) and its method, for the report.
    pub url: String,
    pub method: String,
    /// The per-URL split (empty for one URL), and why there is none when there are too many.
    pub layout_requests: Vec<String>,
    pub part_of: Arc<[u16]>,
    pub warning: Option<String>,
}

/// The most lines a URL file may have.
pub const MAX_URLS: usize = u16::MAX as usize + 1;

fn usage(msg: String) -> InputError {
    InputError(msg)
}

impl Origin {
    /// The origin of `url`: its address resolved, TLS set up for https (any certificate
    /// accepted when `insecure`).
    pub fn of(url: &Url, insecure: bool) -> Result<Origin, InputError> {
        let https = match url.scheme() {
            "http" => false,
            "https" => true,
            other => {
                return Err(usage(format!(
                    "bad URL {:?}: scheme {other:?} is not http or https{}",
                    url.as_str(),
                    did_you_mean(url.as_str())
                )));
            }
        };
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| usage(format!("bad URL {:?}: no host", url.as_str())))?;
        let port = url.port_or_known_default().unwrap_or(if https { 443 } else { 80 });
        let addr = resolve(host, port)?;
        let host_header = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        };
        let bare_host = host.trim_start_matches('[').trim_end_matches(']');
        let tls = if https {
            Some(TlsSettings::new(bare_host, insecure).map_err(|e| usage(format!("TLS set-up failed: {e}")))?)
        } else {
            None
        };
        Ok(Origin { addr, tls, scheme: url.scheme().into(), host: host.into(), port, host_header })
    }

    fn check(&self, url: &Url, place: &str) -> Result<(), InputError> {
        let same = url.scheme() == self.scheme
            && url.host_str() == Some(self.host.as_str())
            && url.port_or_known_default() == Some(self.port);
        if same {
            return Ok(());
        }
        Err(usage(format!(
            "{place}: {url} is not on {}://{}:{} like the first URL; one run loads one server",
            self.scheme, self.host, self.port
        )))
    }
}

/// Resolves the host. When it has several addresses (localhost: ::1 and 127.0.0.1), the
/// first that accepts a connection is used, as browsers and curl do; the engine then sticks
/// to it. With none accepting, the first is used and the run reports the refusals.
fn resolve(host: &str, port: u16) -> Result<SocketAddr, InputError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> =
        (bare, port).to_socket_addrs().map_err(|e| usage(format!("cannot resolve host {host:?}: {e}")))?.collect();
    match addrs.as_slice() {
        [] => Err(usage(format!("cannot resolve host {host:?}: no address"))),
        [only] => Ok(*only),
        several => Ok(several
            .iter()
            .find(|a| std::net::TcpStream::connect_timeout(a, Duration::from_secs(1)).is_ok())
            .unwrap_or(&several[0])
            .to_owned()),
    }
}

/// Parses a URL, relative to `base` when given; the error quotes the text.
pub fn parse_url(text: &str, base: Option<&Url>) -> Result<Url, InputError> {
    let parsed = match base {
        Some(b) => b.join(text),
        None => Url::parse(text),
    };
    parsed.map_err(|e| usage(format!("bad URL {text:?}: {e}{}", did_you_mean(text))))
}

/// "127.0.0.1:8080/" or "localhost:8080" (curl's habit: no scheme): "; did you mean
/// http://localhost:8080/?", when the text with http:// in front is a URL with a host.
fn did_you_mean(text: &str) -> String {
    if text.contains("://") {
        return String::new();
    }
    match Url::parse(&format!("http://{text}")) {
        Ok(u) if u.host_str().is_some_and(|h| !h.is_empty() && !h.contains(' ')) => format!("; did you mean {u}?"),
        _ => String::new(),
    }
}

/// A URL line's weight: a finite positive number.
fn parse_weight(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(w) if w.is_finite() && w > 0.0 => Ok(w),
        _ => Err(format!("bad weight {text:?}: expected a positive number (weight=0.35)")),
    }
}

/// Accepts a non-empty method of letters, digits and `-_.!~*'` (any case, any name).
pub fn check_method(method: &str) -> Result<(), InputError> {
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.!~*'".contains(&b)) {
        return Err(usage(format!("bad method {method:?}")));
    }
    Ok(())
}

/// The request target a URL names: its path and query.
fn target_of(url: &Url) -> String {
    match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    }
}

/// A URL file's line as its request target: a path ("/a/../b") is sent as written (only
/// bytes a request line cannot carry encoded), a full URL as the url crate reads it.
fn as_written(text: &str, url: &Url) -> String {
    if text.starts_with('/') && !text.starts_with("//") {
        crate::bench::access_log::encode_target(text.as_bytes())
    } else {
        target_of(url)
    }
}

/// One request, rendered; `path` is its request target, as sent.
fn template(origin: &Origin, method: &str, url: &Url, path: String, common: &Common, extra: Step) -> Template {
    let mut headers = common.headers.clone();
    headers.extend(extra.headers);
    let spec = RequestSpec {
        method: method.to_string(),
        path,
        host: origin.host_header.clone(),
        headers,
        body: extra.body,
        content_type: extra.content_type.or_else(|| common.content_type.clone()),
        keepalive: common.keepalive,
    };
    let bytes = spec.render();
    let head_end = bytes.windows(4).position(|w| w == b"\r\n\r\n").map_or(bytes.len(), |p| p + 2);
    let h2 = crate::engine::h2::frame::request_fields(&spec, origin.scheme == "https").into();
    Template { bytes: bytes.into(), h2, head_end, head_request: method == "HEAD", url: url.clone(), think: extra.think }
}

/// What a scenario step adds to the common parts.
#[derive(Default)]
struct Step {
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
    content_type: Option<String>,
    think: Duration,
}

impl Workload {
    /// One URL, every request the same.
    pub fn single(url: &str, method: &str, common: &Common, insecure: bool) -> Result<Workload, InputError> {
        let parsed = parse_url(url, None)?;
        let origin = Origin::of(&parsed, insecure)?;
        let step = Step { body: common.body.clone(), ..Step::default() };
        let t = template(&origin, method, &parsed, target_of(&parsed), common, step);
        Ok(Workload::new(origin, vec![t], Vec::new(), Order::Sequential, url.into(), method.into()))
    }

    fn new(
        origin: Origin,
        templates: Vec<Template>,
        labels: Vec<String>,
        order: Order,
        url: String,
        method: String,
    ) -> Workload {
        // Identical lines share a part.
        let mut index: HashMap<&str, u16> = HashMap::new();
        let mut distinct = Vec::new();
        let part_of: Vec<u16> = labels
            .iter()
            .map(|l| {
                *index.entry(l).or_insert_with(|| {
                    distinct.push(l.clone());
                    (distinct.len() - 1) as u16
                })
            })
            .collect();
        let (layout_requests, part_of, warning) = if distinct.len() > MAX_REQUEST_PARTS {
            let warning = format!(
                "{} distinct URLs: no per-URL breakdown (it is kept for up to {MAX_REQUEST_PARTS})",
                distinct.len()
            );
            (Vec::new(), Vec::new(), Some(warning))
        } else {
            (distinct, part_of, None)
        };
        Workload { origin, templates, order, url, method, layout_requests, part_of: part_of.into(), warning }
    }

    /// Sets the per-URL split of `layout` to this workload's.
    pub fn apply(&self, layout: &mut Layout) {
        layout.requests = self.layout_requests.clone();
        layout.part_of = self.part_of.clone();
    }

    /// An http_load URL file: "URL" or "METHOD URL" per line, optionally ending in
    /// "weight=W" (every line or none: a weighted list is drawn at random in proportion); blank
    /// lines and # comments are skipped. Relative URLs resolve against `base`.
    pub fn url_file(
        path: &Path,
        base: Option<&str>,
        random: bool,
        common: &Common,
        insecure: bool,
    ) -> Result<Workload, InputError> {
        let text = read_text(path, "URL file")?;
        let base = base.map(|b| parse_url(b, None)).transpose()?;
        let mut lines = Vec::new();
        let mut weights: Vec<f64> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let place = format!("{}:{}", path.display(), n + 1);
            let mut words: Vec<&str> = line.split_whitespace().collect();
            let weight = match words.last().and_then(|w| w.strip_prefix("weight=")) {
                Some(w) => {
                    words.pop();
                    Some(parse_weight(w).map_err(|e| usage(format!("{place}: {e}")))?)
                }
                None => None,
            };
            let (method, target) = match words[..] {
                [u] => ("GET".to_string(), u),
                [m, u] => (m.to_ascii_uppercase(), u),
                _ => {
                    return Err(usage(format!(
                        "{place}: expected \"URL\" or \"METHOD URL\", then optionally weight=W, got {line:?}"
                    )));
                }
            };
            check_method(&method).map_err(|e| usage(format!("{place}: {}", e.0)))?;
            let url = parse_url(target, base.as_ref()).map_err(|e| usage(format!("{place}: {}", e.0)))?;
            if (weights.len() != lines.len() && weight.is_some()) || (!weights.is_empty() && weight.is_none()) {
                return Err(usage(format!(
                    "{place}: some lines have a weight= and some not: give every line a weight, or none"
                )));
            }
            weights.extend(weight);
            lines.push((place, method, url, target));
        }
        let Some((_, first_method, first, _)) = lines.first() else {
            return Err(usage(format!("URL file {}: no URL in it", path.display())));
        };
        // Records name their template in 16 bits.
        if lines.len() > MAX_URLS {
            return Err(usage(format!("URL file {}: {} URLs, at most {MAX_URLS}", path.display(), lines.len())));
        }
        let origin = Origin::of(first, insecure)?;
        let (url, method) = (first.to_string(), first_method.clone());
        let mut templates = Vec::new();
        let mut labels = Vec::new();
        for (place, method, url, target) in &lines {
            origin.check(url, place)?;
            let body = if matches!(method.as_str(), "GET" | "HEAD") { None } else { common.body.clone() };
            templates.push(template(
                &origin,
                method,
                url,
                as_written(target, url),
                common,
                Step { body, ..Step::default() },
            ));
            labels.push(format!("{method} {url}"));
        }
        let order = match (weights.is_empty(), random) {
            (false, _) => Order::Weighted(Weights::new(&weights)),
            (true, true) => Order::Random,
            (true, false) => Order::Sequential,
        };
        Ok(Workload::new(origin, templates, labels, order, url, method))
    }

    /// A server's access logs: their GET and HEAD requests, drawn in proportion to how often
    /// the logs have them. Each path goes to `base`'s server, whatever host the log names.
    pub fn access_log(log: &AccessLog, base: &str, common: &Common, insecure: bool) -> Result<Workload, InputError> {
        let base = parse_url(base, None)?;
        let origin = Origin::of(&base, insecure)?;
        let mut templates = Vec::with_capacity(log.requests.len());
        let mut labels = Vec::with_capacity(log.requests.len());
        let mut weights = Vec::with_capacity(log.requests.len());
        for r in &log.requests {
            // Sent as logged (dot segments, %2e, escapes kept); the URL, tidied by the url
            // crate, serves only cookies and redirects. set_path, not join: a logged "//host/x"
            // stays a path on this server.
            let target = crate::bench::access_log::wire_target(&r.target);
            let mut url = base.clone();
            let (path, query) = target.split_once('?').map_or((target.as_str(), None), |(p, q)| (p, Some(q)));
            url.set_path(path);
            url.set_query(query);
            templates.push(template(&origin, &r.method, &url, target.clone(), common, Step::default()));
            labels.push(format!("{} {}", r.method, r.target));
            weights.push(r.count as f64);
        }
        let order = if templates.len() == 1 { Order::Sequential } else { Order::Weighted(Weights::new(&weights)) };
        Ok(Workload::new(origin, templates, labels, order, base.to_string(), "GET".into()))
    }

    /// A scenario file: the steps each virtual user takes, in order, again and again.
    pub fn scenario(path: &Path, base: Option<&str>, common: &Common, insecure: bool) -> Result<Workload, InputError> {
        let text = read_text(path, "scenario")?;
        let file: ScenarioFile = toml::from_str(&text)
            .map_err(|e| usage(format!("scenario {}: {}", path.display(), one_line(&e, &text))))?;
        let base = match file.base.as_deref().or(base) {
            Some(b) => Some(parse_url(b, None)?),
            None => None,
        };
        if file.step.is_empty() {
            return Err(usage(format!("scenario {}: no [[step]]", path.display())));
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut resolved = Vec::new();
        for (n, s) in file.step.iter().enumerate() {
            let place = format!("scenario {} step {}", path.display(), n + 1);
            let method = s.method.clone().unwrap_or_else(|| "GET".into()).to_ascii_uppercase();
            check_method(&method).map_err(|e| usage(format!("{place}: {}", e.0)))?;
            let url = parse_url(&s.url, base.as_ref()).map_err(|e| usage(format!("{place}: {}", e.0)))?;
            let body = match (&s.body, &s.body_file) {
                (Some(_), Some(_)) => return Err(usage(format!("{place}: give body or body_file, not both"))),
                (Some(b), None) => Some(b.clone().into_bytes()),
                (None, Some(f)) => {
                    let f = dir.join(f);
                    Some(input::read_bounded(&f, "body file").map_err(|e| e.at(&place))?)
                }
                (None, None) => None,
            };
            let think = match &s.think {
                Some(t) => input::duration(&format!("{place}: think"), t)?,
                None => Duration::ZERO,
            };
            let mut headers = Vec::new();
            for (k, v) in file.headers.iter().chain(&s.headers) {
                headers.push(input::header(&format!("{k}: {v}")).map_err(|e| usage(format!("{place}: {}", e.0)))?);
            }
            let content_type = s
                .content_type
                .as_deref()
                .map(|t| input::header_value("content_type", t).map_err(|e| e.at(&place)))
                .transpose()?;
            let label = s.name.clone().unwrap_or_else(|| format!("{method} {}", url.path()));
            resolved.push((place, method, url, Step { headers, body, content_type, think }, label));
        }
        let origin = Origin::of(&resolved[0].2, insecure)?;
        let (url, method) = (resolved[0].2.to_string(), resolved[0].1.clone());
        let mut templates = Vec::new();
        let mut labels = Vec::new();
        for (place, method, url, step, label) in resolved {
            origin.check(&url, &place)?;
            templates.push(template(&origin, &method, &url, target_of(&url), common, step));
            labels.push(label);
        }
        Ok(Workload::new(origin, templates, labels, Order::Scenario, url, method))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    /// Relative step URLs resolve against it (else against the command line's URL).
    base: Option<String>,
    /// Headers on every step.
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    step: Vec<ScenarioStep>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioStep {
    name: Option<String>,
    method: Option<String>,
    url: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    body: Option<String>,
    body_file: Option<PathBuf>,
    content_type: Option<String>,
    think: Option<String>,
}

fn read_text(path: &Path, what: &str) -> Result<String, InputError> {
    input::read_text(path, what)
}

/// toml's errors span lines (a source excerpt); keep the line number and the message.
fn one_line(e: &toml::de::Error, text: &str) -> String {
    let msg = input::did_you_mean(&e.message().trim().replace('\n', " "));
    match e.span() {
        Some(span) => format!("line {}: {msg}", text[..span.start.min(text.len())].matches('\n').count() + 1),
        None => msg,
    }
}
