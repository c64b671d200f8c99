//! What a bench run is asked to do, before it is checked: `BenchSpec`, with every default in
//! one place. The command line fills one from its flags, a target file's `[load]` deserialises
//! into one, and the tuner and `mem --url` build one in code. `BenchSpec::plan` checks it and
//! renders the requests into the `BenchPlan` that `bench::run` executes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::Deserialize;

use super::access_log::{AccessLog, LogSummary};
use super::workload::{self, Common, Workload};
use crate::aggregate::breakdown::Layout;
use crate::engine::{Arrival, Endpoint, Http2, Order, Pacing, Plan, Schedule, Spacing, Stage, Stop, Throttle};
use crate::input::{self, InputError};
use crate::sys;
use crate::sys::cpus::{CpuSet, Placement};

/// Clients of a closed loop when `-c` is not given.
pub const DEFAULT_CONNECTIONS: u64 = 10;
/// Connections an open loop may open when `-c` is not given.
pub const DEFAULT_OPEN_CONNECTIONS: u64 = 1000;
/// How long a run lasts when neither `-n`, `-d` nor stages say.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// A request not answered completely within this fails as a timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Concurrent HTTP/2 streams a connection may be asked for.
pub const MAX_STREAMS: u64 = 1000;
/// The largest request body sent over HTTP/2: what any server's initial window takes at once
/// (this client sends a body whole, never waiting for WINDOW_UPDATEs).
pub const MAX_H2_BODY: usize = crate::engine::h2::frame::DEFAULT_WINDOW as usize;
/// Stages a run may have.
const MAX_STAGES: usize = u16::MAX as usize;

/// How a URL list is walked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UrlOrder {
    /// In turn, each engine thread from its own place.
    #[default]
    Sequential,
    /// Uniformly at random (seeded).
    Random,
}

/// A bench run as asked for. `None` and `false` mean "the default"; `plan` applies them.
/// Field names are `webtune bench`'s long flags (`[load]` takes them with `_` or `-`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BenchSpec {
    /// The URL; with `urls` or `scenario`, the base relative URLs resolve against. A target
    /// file gives a `path` instead, and the tuner joins it to the launched server.
    #[serde(skip)]
    pub url: Option<String>,
    /// Instead of `url`: the path to request on a server launched for the run (a target
    /// file's `[load]`); `against` joins it to the server's address.
    pub path: Option<String>,
    /// Concurrent connections (closed loop: clients; open loop: the most it may open).
    pub connections: Option<u64>,
    /// Stop after this many requests.
    pub requests: Option<u64>,
    /// Stop after this long.
    #[serde(deserialize_with = "input::de::duration")]
    pub duration: Option<Duration>,
    /// Engine threads (default: one per available core, at most one per connection).
    pub threads: Option<u64>,
    /// A new connection for every request.
    #[serde(alias = "no-keepalive")]
    pub no_keepalive: bool,
    /// Collect every response as soon as it arrives (no coalesced wake-ups).
    #[serde(alias = "no-coalesce")]
    pub no_coalesce: bool,
    /// The request method (default GET; POST when a body is given, by -p or --body).
    pub method: Option<String>,
    /// Request headers, "Name: value".
    #[serde(rename = "header", alias = "headers")]
    pub headers: Vec<String>,
    /// The body, read from this file.
    #[serde(alias = "post-file")]
    pub post_file: Option<PathBuf>,
    /// The body's Content-Type.
    #[serde(alias = "content-type")]
    pub content_type: Option<String>,
    /// The body as text, or @FILE.
    pub body: Option<String>,
    #[serde(deserialize_with = "input::de::duration")]
    pub timeout: Option<Duration>,
    #[serde(alias = "connect-timeout", deserialize_with = "input::de::duration")]
    pub connect_timeout: Option<Duration>,
    /// Accept any TLS certificate.
    pub insecure: bool,
    /// Open loop: requests started per second, or the access log's own rate (`log`, `log*3`).
    pub rate: Option<Rate>,
    /// Open loop: how the starts are spaced.
    pub arrival: Option<Arrival>,
    /// Ramps, "10s:100,30s:1000,10s:0".
    pub stages: Option<String>,
    /// With `stages`: they ramp the request rate (open loop), not the clients.
    pub open: bool,
    /// A file of URLs.
    pub urls: Option<PathBuf>,
    /// A server's access logs (plain or gzip; several are read as one): their GET and HEAD
    /// requests answered 2xx or 3xx, weighted by count, are the workload.
    #[serde(alias = "access-log", deserialize_with = "input::de::paths")]
    pub access_log: Vec<PathBuf>,
    /// The logs' format: combined (default), common, vhost_combined, or an Apache `LogFormat`
    /// or nginx `log_format` string.
    #[serde(alias = "log-format")]
    pub log_format: Option<String>,
    /// The logs once read (`load_access_log`), so that a tune reads them once for all trials.
    #[serde(skip)]
    pub loaded_log: Option<LoadedLog>,
    pub order: Option<UrlOrder>,
    /// A cookie jar per client.
    pub cookies: bool,
    /// A TOML file of steps each virtual user takes.
    pub scenario: Option<PathBuf>,
    /// Each throttled client's bandwidth, bytes per second.
    #[serde(deserialize_with = "input::de::bandwidth")]
    pub throttle: Option<f64>,
    /// The share of clients throttled (0, 1].
    #[serde(alias = "slow-share", deserialize_with = "input::de::share")]
    pub slow_share: Option<f64>,
    /// Seeds random URL order and Poisson arrivals (default: from the clock).
    pub seed: Option<u64>,
    /// Hosts that send a share of the load too, `ssh://[user@]host[:port]` (see `remote`).
    pub remote: Vec<String>,
    /// With `remote`: this machine sends none of the load.
    #[serde(alias = "remote-only")]
    pub remote_only: bool,
    /// The CPUs the engine's threads run on (default: wherever this process may); the default
    /// thread count follows it. Set by --cpus client=, or by the tuner from its placement.
    #[serde(skip)]
    pub cpus: Option<CpuSet>,
    /// HTTP/2: over TLS with ALPN "h2" for https URLs, cleartext with prior knowledge (h2c)
    /// for http ones.
    #[serde(alias = "h2")]
    pub http2: bool,
    /// HTTP/2: concurrent streams per connection (default 1).
    pub streams: Option<u64>,
}

/// An open loop's rate: requests per second, or a multiple of the access log's mean rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    PerSecond(f64),
    Log(f64),
}

impl Rate {
    /// The rate in requests/s when it is given as one (not a multiple of a log's).
    pub fn per_second(self) -> Option<f64> {
        match self {
            Rate::PerSecond(r) => Some(r),
            Rate::Log(_) => None,
        }
    }
}

/// The largest multiple of a log's rate taken (`log*10000`).
const MAX_LOG_FACTOR: f64 = 1e4;

impl std::str::FromStr for Rate {
    type Err = InputError;

    /// "500", "log", "log*3", "log*0.5".
    fn from_str(text: &str) -> Result<Rate, InputError> {
        let t = text.trim();
        let bad = || {
            InputError(format!(
                "--rate: bad rate {t:?}: expected requests per second (500) or the access log's rate (log, log*3)"
            ))
        };
        let rate = match t.strip_prefix("log") {
            Some("") => Rate::Log(1.0),
            Some(rest) => Rate::Log(rest.trim().strip_prefix('*').ok_or_else(bad)?.trim().parse().map_err(|_| bad())?),
            None => Rate::PerSecond(t.parse().map_err(|_| bad())?),
        };
        match rate {
            Rate::PerSecond(r) if !(r.is_finite() && r > 0.0 && r <= 1e7) => Err(InputError(format!(
                "--rate must be a positive number of requests per second up to 10000000, not {t}"
            ))),
            Rate::Log(f) if !(f.is_finite() && f > 0.0 && f <= MAX_LOG_FACTOR) => Err(InputError(format!(
                "--rate {t}: the log's rate may be multiplied by more than 0 and up to {MAX_LOG_FACTOR}"
            ))),
            ok => Ok(ok),
        }
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Rate::PerSecond(r) => write!(f, "{r}"),
            Rate::Log(x) if *x == 1.0 => write!(f, "log"),
            Rate::Log(x) => write!(f, "log*{x}"),
        }
    }
}

impl<'de> Deserialize<'de> for Rate {
    /// `rate = 500` or `rate = "log*3"`.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Rate, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        let text = match Raw::deserialize(d)? {
            Raw::Number(n) => n.to_string(),
            Raw::Text(t) => t,
        };
        text.parse().map_err(|e: InputError| serde::de::Error::custom(e.0))
    }
}

/// Access logs read once and shared by every plan made from a spec (a tune's trials).
#[derive(Clone)]
pub struct LoadedLog(pub Arc<AccessLog>);

impl PartialEq for LoadedLog {
    fn eq(&self, other: &LoadedLog) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for LoadedLog {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "LoadedLog({})", self.0.account())
    }
}

/// The checked run: everything the engine and the exporters need.
pub struct BenchPlan {
    pub engine: Plan,
    pub url: String,
    pub method: String,
    /// Write per-second histograms here (HdrHistogram log).
    pub hdr_log: Option<PathBuf>,
    /// How the report splits the figures.
    pub layout: Layout,
    pub describe: Described,
    /// Where the client runs and the server was found, for the report; None: the client on
    /// whatever this process may use, the server not looked for.
    pub placement: Option<Placement>,
}

/// What the report says about the plan beyond the engine's settings.
pub struct Described {
    pub stages: Option<String>,
    pub requests_file: Option<String>,
    pub warning: Option<String>,
    /// The access logs replayed: what was and was not.
    pub access_log: Option<LogSummary>,
}

impl BenchSpec {
    /// A closed-loop run of `requests` requests to `url` over `connections` connections.
    pub fn requests_to(url: &str, connections: u64, requests: u64) -> BenchSpec {
        BenchSpec {
            url: Some(url.to_string()),
            connections: Some(connections),
            requests: Some(requests),
            ..BenchSpec::default()
        }
    }

    /// This spec aimed at the server at `base` ("http://127.0.0.1:8080"): its `path` (default
    /// "/") becomes the URL.
    pub fn against(&self, base: &str) -> BenchSpec {
        let path = self.path.as_deref().unwrap_or("/");
        BenchSpec { url: Some(format!("{}{path}", base.trim_end_matches('/'))), path: None, ..self.clone() }
    }

    /// Reads the access logs now, once, if the spec has any (a tune, before its trials).
    pub fn load_access_log(&mut self) -> Result<(), InputError> {
        if let (false, None) = (self.access_log.is_empty(), &self.loaded_log) {
            self.loaded_log = Some(LoadedLog(Arc::new(self.read_access_log()?)));
        }
        Ok(())
    }

    /// The access logs' busiest minute, requests/s: the traffic to size a server for. None
    /// without logs (or times in them), or before `load_access_log`.
    pub fn busiest_minute_rate(&self) -> Option<f64> {
        self.loaded_log.as_ref()?.0.summary.busiest_minute.as_ref().map(|b| b.rate)
    }

    fn read_access_log(&self) -> Result<AccessLog, InputError> {
        AccessLog::read(&self.access_log, self.log_format.as_deref(), workload::MAX_URLS)
    }

    /// Whether requests start on a schedule (open loop) rather than on answers.
    pub fn is_open_loop(&self) -> bool {
        self.rate.is_some() || self.arrival.is_some() || self.open
    }

    /// Connections when `-c` is not given: in the open loop the most it may open, in a
    /// closed-loop ramp the highest stage's clients, else the closed loop's default.
    pub fn default_connections(&self) -> u64 {
        if self.is_open_loop() {
            return DEFAULT_OPEN_CONNECTIONS;
        }
        match self.stages.as_deref().and_then(|s| parse_stages(s).ok()) {
            Some(stages) => stages.iter().map(|s| s.target).fold(0.0, f64::max).ceil() as u64,
            None => DEFAULT_CONNECTIONS,
        }
    }

    /// How long a time-bound run lasts (None: it stops after a number of requests). Stages
    /// that do not parse count as the default; `plan` reports them.
    pub fn run_length(&self) -> Option<Duration> {
        if let Some(stages) = self.stages.as_deref().and_then(|s| parse_stages(s).ok()) {
            return Some(stages.iter().map(|s| s.duration).sum());
        }
        match (self.requests, self.duration) {
            (Some(_), _) => None,
            (None, Some(d)) => Some(d),
            (None, None) => Some(DEFAULT_DURATION),
        }
    }

    /// The `webtune bench` arguments that ask for this spec (the URL first): what a remote host
    /// runs. Values are written exactly (durations in nanoseconds); `remote` is not included.
    pub fn to_args(&self) -> Vec<String> {
        let mut a: Vec<String> = self.url.iter().cloned().collect();
        let mut flag = |name: &str, value: Option<String>| {
            if let Some(v) = value {
                a.push(name.to_string());
                a.push(v);
            }
        };
        let nanos = |d: Option<Duration>| d.map(|d| format!("{}ns", d.as_nanos()));
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        flag("-c", self.connections.map(|c| c.to_string()));
        flag("-n", self.requests.map(|n| n.to_string()));
        flag("-d", nanos(self.duration));
        flag("-t", self.threads.map(|t| t.to_string()));
        flag("-m", self.method.clone());
        for h in &self.headers {
            flag("-H", Some(h.clone()));
        }
        flag("-p", path(&self.post_file));
        flag("-T", self.content_type.clone());
        flag("--body", self.body.clone());
        flag("--timeout", nanos(self.timeout));
        flag("--connect-timeout", nanos(self.connect_timeout));
        flag("--rate", self.rate.map(|r| r.to_string()));
        for log in &self.access_log {
            flag("--access-log", path(&Some(log.clone())));
        }
        flag("--log-format", self.log_format.clone());
        flag("--arrival", self.arrival.map(|v| value_name(&v)));
        flag("--stages", self.stages.clone());
        flag("--urls", path(&self.urls));
        flag("--order", self.order.map(|v| value_name(&v)));
        flag("--scenario", path(&self.scenario));
        flag("--throttle", self.throttle.map(|b| format!("{b}B/s")));
        flag("--slow-share", self.slow_share.map(|s| s.to_string()));
        flag("--seed", self.seed.map(|s| s.to_string()));
        flag("--streams", self.streams.map(|s| s.to_string()));
        let switches = [
            (self.http2, "--h2"),
            (self.no_keepalive, "--no-keepalive"),
            (self.no_coalesce, "--no-coalesce"),
            (self.insecure, "--insecure"),
            (self.open, "--open"),
            (self.cookies, "--cookies"),
        ];
        a.extend(switches.iter().filter(|(on, _)| *on).map(|(_, name)| name.to_string()));
        a
    }

    /// Checks the spec and renders its requests. Each error names the flag it is about.
    pub fn plan(&self) -> Result<BenchPlan, InputError> {
        let stages = self.stages.as_deref().map(parse_stages).transpose()?;
        let open = self.is_open_loop();
        let log = self.log()?;
        let rate = self.rate(log.as_deref())?;
        let (connections, stop) = self.connections_and_stop(open, rate, stages.as_deref())?;
        let http2 = self.http2_settings()?;
        let connections = connections as usize;
        let threads = self.threads(connections)?;
        let timeout = self.timeout.unwrap_or(DEFAULT_TIMEOUT);
        if timeout.is_zero() {
            return Err(InputError("--timeout must be longer than zero".into()));
        }
        let connect_timeout = self.connect_timeout.unwrap_or(timeout);
        let (common, method) = self.common()?;
        let work = self.workload(log.as_deref(), &common, &method, open)?;
        let throttle = self.throttle()?;
        let seed = self.seed.unwrap_or_else(|| {
            SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
        });
        let pacing = self.pacing(stages.as_deref(), open, rate, log.as_deref(), seed)?;
        let layout = layout(&work, stages.as_deref(), open, throttle);
        if http2.is_some() && work.templates.iter().any(|t| t.h2.body.len() > MAX_H2_BODY) {
            return Err(InputError(format!("--h2: a request body may be at most {MAX_H2_BODY} bytes")));
        }
        let tls = work.origin.tls.as_ref().map(|t| if http2.is_some() { t.for_h2() } else { t.clone() });
        let endpoint = Endpoint {
            addr: work.origin.addr,
            tls,
            templates: work.templates.clone().into(),
            order: work.order.clone(),
        };
        let engine = Plan {
            endpoint,
            connections,
            threads,
            stop,
            keepalive: common.keepalive,
            timeout,
            connect_timeout,
            pacing,
            cookies: self.cookies,
            throttle,
            seed,
            coalesce: !self.no_coalesce,
            affinity: self.cpus.as_ref().map(CpuSet::mask),
            http2,
        };
        Ok(BenchPlan {
            engine,
            url: work.url.clone(),
            method: work.method.clone(),
            hdr_log: None,
            placement: None,
            layout,
            describe: Described {
                stages: self.stages.clone(),
                requests_file: self.urls.as_ref().or(self.scenario.as_ref()).map(|p| p.display().to_string()),
                warning: work.warning,
                access_log: log.map(|l| l.summary.clone()),
            },
        })
    }

    /// The access log the run replays: read here unless the caller loaded it; the flags that
    /// need one are refused without it.
    fn log(&self) -> Result<Option<Arc<AccessLog>>, InputError> {
        let usage = |msg: String| InputError(msg);
        let log = match (&self.loaded_log, self.access_log.is_empty()) {
            (Some(l), _) => Some(l.0.clone()),
            (None, false) => Some(Arc::new(self.read_access_log()?)),
            (None, true) => None,
        };
        let from_log = matches!(self.rate, Some(Rate::Log(_))) || self.arrival == Some(Arrival::Log);
        if log.is_none() && from_log {
            return Err(usage("--rate log and --arrival log need --access-log".into()));
        }
        if log.is_none() && self.log_format.is_some() {
            return Err(usage("--log-format needs --access-log".into()));
        }
        Ok(log)
    }

    /// Requests per second of the open loop (--rate R, or --rate log's multiple of the log's).
    fn rate(&self, log: Option<&AccessLog>) -> Result<Option<f64>, InputError> {
        let usage = |msg: String| InputError(msg);
        let log_rate = || {
            log.and_then(|l| l.summary.mean_rate).ok_or_else(|| {
                usage(
                    "--rate log: the access log gives no rate (its format has no time, or its requests span no time)"
                        .into(),
                )
            })
        };
        let rate = match self.rate {
            Some(Rate::PerSecond(r)) => Some(r),
            Some(Rate::Log(factor)) => Some(log_rate()? * factor),
            // --arrival log alone: at the log's own rate.
            None if self.arrival == Some(Arrival::Log) => Some(log_rate()?),
            None => None,
        };
        Ok(rate)
    }

    /// The connections (-c, checked against the stages) and when the run stops.
    fn connections_and_stop(
        &self,
        open: bool,
        rate: Option<f64>,
        stages: Option<&[Stage]>,
    ) -> Result<(u64, Stop), InputError> {
        let usage = |msg: String| InputError(msg);
        if open && rate.is_none() && stages.is_none() {
            return Err(usage("the open loop needs --rate R or --stages".into()));
        }
        if rate.is_some() && stages.is_some() {
            return Err(usage("--rate and --stages cannot be used together".into()));
        }
        if let Some(r) = rate
            && !(r.is_finite() && r > 0.0 && r <= 1e7)
        {
            return Err(usage(format!(
                "--rate must be a positive number of requests per second up to 10000000, not {r}"
            )));
        }
        let highest = stages.map(|s| s.iter().map(|s| s.target).fold(0.0, f64::max));
        if highest == Some(0.0) {
            return Err(usage("--stages: every stage's value is 0: nothing would be sent".into()));
        }
        let connections = match (self.connections, highest) {
            (Some(0), _) => return Err(usage("-c must be at least 1".into())),
            (Some(c), Some(h)) if !open && (c as f64) < h => {
                return Err(usage(format!("-c {c} is lower than the highest stage ({h} clients)")));
            }
            (Some(c), _) => c,
            (None, _) => self.default_connections(),
        };
        let stop = match (self.requests, self.duration, stages) {
            (_, _, Some(s)) => Stop::Duration(s.iter().map(|s| s.duration).sum()),
            (Some(0), _, _) => return Err(usage("-n must be at least 1".into())),
            (Some(n), _, _) if n < connections && !open => {
                return Err(usage(format!(
                    "-n {n} is smaller than -c {connections}: every connection needs a request"
                )));
            }
            (Some(n), _, _) => Stop::Requests(n),
            (None, Some(d), _) => Stop::Duration(d),
            (None, None, _) => Stop::Duration(DEFAULT_DURATION),
        };
        if stop == Stop::Duration(Duration::ZERO) {
            return Err(usage("-d must be longer than zero".into()));
        }
        Ok((connections, stop))
    }

    /// Threads (-t, else the cores the run may use), no more than the connections.
    fn threads(&self, connections: usize) -> Result<usize, InputError> {
        Ok(match self.threads {
            Some(0) => return Err(InputError("-t must be at least 1".into())),
            Some(t) => t as usize,
            None => self.cpus.as_ref().map_or_else(sys::available_cores, CpuSet::len),
        }
        .min(connections))
    }

    /// What every request shares (headers, body, content type, keep-alive) and the method.
    fn common(&self) -> Result<(Common, String), InputError> {
        let body = match (&self.post_file, &self.body) {
            (Some(path), _) => Some(read_body(path)?),
            (None, Some(b)) => match b.strip_prefix('@') {
                Some(path) => Some(read_body(path.as_ref())?),
                None => Some(b.clone().into_bytes()),
            },
            (None, None) => None,
        };
        let method = match &self.method {
            Some(m) => m.clone(),
            // A body without a method is a POST, whichever option gave it (-p, --body).
            None if body.is_some() => "POST".to_string(),
            None => "GET".to_string(),
        };
        workload::check_method(&method)?;
        let content_type = self.content_type.as_deref().map(|t| input::header_value("-T", t)).transpose()?;
        let common = Common {
            headers: self.headers.iter().map(|h| input::header(h)).collect::<Result<Vec<_>, _>>()?,
            body,
            content_type,
            keepalive: !self.no_keepalive,
        };
        Ok((common, method))
    }

    /// The requests: one URL, a URL list, a scenario or an access log.
    fn workload(
        &self,
        log: Option<&AccessLog>,
        common: &Common,
        method: &str,
        open: bool,
    ) -> Result<Workload, InputError> {
        let usage = |msg: String| InputError(msg);
        let base = self.url.as_deref();
        if log.is_some() && (self.urls.is_some() || self.scenario.is_some()) {
            return Err(usage("give one of --urls, --scenario and --access-log".into()));
        }
        if log.is_some() && (common.body.is_some() || self.method.is_some()) {
            return Err(usage(
                "--access-log: the log's requests keep their own method (GET or HEAD) and send no body".into(),
            ));
        }
        Ok(match (&self.urls, &self.scenario, base) {
            (None, None, Some(url)) if let Some(log) = &log => Workload::access_log(log, url, common, self.insecure)?,
            (None, None, None) if log.is_some() => {
                return Err(usage("--access-log needs the URL of the server to send the log's paths to".into()));
            }
            (Some(_), Some(_), _) => return Err(usage("give --urls or --scenario, not both".into())),
            (Some(file), None, base) => {
                let random = self.order == Some(UrlOrder::Random);
                let work = Workload::url_file(file, base, random, common, self.insecure)?;
                if matches!(work.order, Order::Weighted(_)) && self.order == Some(UrlOrder::Sequential) {
                    return Err(usage(format!(
                        "{}: a weighted URL list is drawn at random; --order sequential would ignore the weights",
                        file.display()
                    )));
                }
                work
            }
            (None, Some(file), base) => {
                if open {
                    return Err(usage("a --scenario runs in the closed loop: no --rate, --open or --arrival".into()));
                }
                Workload::scenario(file, base, common, self.insecure)?
            }
            (None, None, Some(url)) => Workload::single(url, method, common, self.insecure)?,
            (None, None, None) => return Err(usage("give a URL, --urls FILE or --scenario FILE".into())),
        })
    }

    /// --throttle and --slow-share: the share of connections that read slowly, and how slowly.
    fn throttle(&self) -> Result<Option<Throttle>, InputError> {
        let usage = |msg: String| InputError(msg);
        Ok(match (self.throttle, self.slow_share) {
            (Some(_), Some(s)) if s <= 0.0 => {
                return Err(usage(format!("--slow-share: bad share {s}: expected a percentage in (0%, 100%]")));
            }
            (Some(bytes_per_s), share) => Some(Throttle { bytes_per_s, share: share.unwrap_or(1.0) }),
            (None, Some(_)) => return Err(usage("--slow-share needs --throttle".into())),
            (None, None) => None,
        })
    }

    /// How requests are paced: the closed loop's clients or the open loop's rate, by stages or
    /// constant, and the open loop's arrivals.
    fn pacing(
        &self,
        stages: Option<&[Stage]>,
        open: bool,
        rate: Option<f64>,
        log: Option<&AccessLog>,
        seed: u64,
    ) -> Result<Pacing, InputError> {
        let arrival = match (self.arrival.unwrap_or(Arrival::Uniform), log) {
            (Arrival::Uniform, _) => Spacing::Uniform,
            (Arrival::Poisson, _) => Spacing::Poisson,
            (Arrival::Log, Some(log)) => Spacing::Trace(log.unit_gaps(seed)?),
            (Arrival::Log, None) => unreachable!("checked above: --arrival log needs --access-log"),
        };
        Ok(match (stages, open) {
            (Some(s), true) => Pacing::Open { rate: Schedule::stages(s.to_vec()), arrival },
            (Some(s), false) => Pacing::Closed { clients: Some(Schedule::stages(s.to_vec())) },
            (None, true) => Pacing::Open { rate: Schedule::constant(rate.unwrap_or(1.0)), arrival },
            (None, false) => Pacing::Closed { clients: None },
        })
    }
}

/// The report's layout: the workload's parts and, with stages, one row a stage.
fn layout(work: &Workload, stages: Option<&[Stage]>, open: bool, throttle: Option<Throttle>) -> Layout {
    let mut layout = Layout::default();
    work.apply(&mut layout);
    if let Some(s) = stages {
        let unit = if open { "/s" } else { " clients" };
        layout.stages = s
            .iter()
            .enumerate()
            .map(|(i, st)| {
                (format!("{} {} to {}{unit}", i + 1, humantime::format_duration(st.duration), st.target), st.duration)
            })
            .collect();
    }
    layout.clients = throttle.is_some_and(|t| t.share < 1.0);
    layout
}

/// The flag value that names `v` (`--arrival poisson`).
fn value_name(v: &impl clap::ValueEnum) -> String {
    v.to_possible_value().map(|p| p.get_name().to_string()).unwrap_or_default()
}

impl BenchSpec {
    /// The HTTP/2 settings, None for HTTP/1.1. HTTP/2 runs the plain closed loop: what it
    /// does not do yet is refused by name.
    fn http2_settings(&self) -> Result<Option<Http2>, InputError> {
        if !self.http2 {
            return match self.streams {
                Some(_) => Err(InputError("--streams needs --h2".into())),
                None => Ok(None),
            };
        }
        let streams = match self.streams {
            None => 1,
            Some(n) if (1..=MAX_STREAMS).contains(&n) => n as u32,
            Some(n) => return Err(InputError(format!("--streams must be between 1 and {MAX_STREAMS}, not {n}"))),
        };
        let unsupported = [
            (self.is_open_loop(), "--rate, --open or --arrival"),
            (self.stages.is_some(), "--stages"),
            (self.scenario.is_some(), "--scenario"),
            (self.cookies, "--cookies"),
            (self.throttle.is_some(), "--throttle"),
            (self.no_keepalive, "--no-keepalive"),
        ];
        if let Some((_, flag)) = unsupported.iter().find(|(given, _)| *given) {
            return Err(InputError(format!("--h2 does not work with {flag} yet")));
        }
        Ok(Some(Http2 { streams }))
    }
}

/// "10s:100,30s:1000,10s:0".
fn parse_stages(text: &str) -> Result<Vec<Stage>, InputError> {
    let stages = text
        .split(',')
        .map(|part| {
            let bad = || InputError(format!("--stages: bad stage {part:?}: expected DURATION:VALUE, e.g. 30s:100"));
            let (d, v) = part.trim().split_once(':').ok_or_else(bad)?;
            let duration = input::duration("--stages", d)?;
            let target: f64 = v.trim().parse().map_err(|_| bad())?;
            if duration.is_zero() || !(0.0..=1e7).contains(&target) {
                return Err(bad());
            }
            Ok(Stage { duration, target })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if stages.len() > MAX_STAGES {
        return Err(InputError("--stages: too many stages".into()));
    }
    if stages.iter().map(|s| s.duration).sum::<Duration>() > input::MAX_DURATION {
        return Err(InputError("--stages: the stages last longer than 366 days".into()));
    }
    Ok(stages)
}

fn read_body(path: &std::path::Path) -> Result<Vec<u8>, InputError> {
    input::read_bounded(path, "body file")
}
