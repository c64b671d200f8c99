//! `webtune lab`: flags to a validated `LabConfig`.

use std::net::ToSocketAddrs;

use super::UsageError;
use super::args::LabArgs;
use super::bench::parse_duration;
use crate::lab::{LabConfig, Work, work::parse_ms};

pub fn config(a: &LabArgs) -> Result<LabConfig, UsageError> {
    let listen = a
        .listen
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| UsageError(format!("--listen: bad address {:?} (expected HOST:PORT)", a.listen)))?;
    let duration = |flag: &str, v: &str| parse_ms(v).map_err(|e| UsageError(format!("{flag}: {e}")));
    let cfg = LabConfig {
        listen,
        workers: a.workers,
        start_workers: a.start_workers.unwrap_or(a.workers),
        min_spare: a.min_spare,
        max_spare: a.max_spare.unwrap_or(a.workers),
        max_requests: a.max_requests,
        keepalive: a.keepalive == "on",
        keepalive_timeout: parse_duration("--keepalive-timeout", &a.keepalive_timeout)?,
        max_keepalive_requests: a.max_keepalive_requests,
        backlog: a.backlog,
        preload_mb: a.preload_mb,
        work: Work {
            cpu: duration("--cpu", &a.cpu)?,
            io_wait: duration("--io-wait", &a.io_wait)?,
            dirty_kb: a.dirty_kb,
            leak_kb: a.leak_kb,
            body_bytes: a.body_bytes,
        },
    };
    cfg.validate().map_err(UsageError)?;
    Ok(cfg)
}
