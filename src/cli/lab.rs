//! `webtune lab`: flags to a validated `LabConfig`.

use std::net::ToSocketAddrs;

use super::args::LabArgs;
use crate::input;
use crate::input::InputError;
use crate::lab::{LabConfig, Work};

/// The flags as a checked `LabConfig`; --start-workers and --max-spare default to --workers.
pub fn config(a: &LabArgs) -> Result<LabConfig, InputError> {
    let listen = a
        .listen
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| InputError(format!("--listen: bad address {:?} (expected HOST:PORT)", a.listen)))?;
    let cfg = LabConfig {
        listen,
        workers: a.workers,
        start_workers: a.start_workers.unwrap_or(a.workers),
        min_spare: a.min_spare,
        max_spare: a.max_spare.unwrap_or(a.workers),
        max_requests: a.max_requests,
        keepalive: a.keepalive == super::args::OnOff::On,
        keepalive_timeout: input::duration("--keepalive-timeout", &a.keepalive_timeout)?,
        max_keepalive_requests: a.max_keepalive_requests,
        backlog: a.backlog,
        preload_mb: match (&a.preload, a.preload_mb) {
            (Some(size), _) => input::size_kib("--preload", size)?.div_ceil(1024) as usize,
            (None, mb) => mb.unwrap_or(0),
        },
        work: Work {
            cpu: input::duration("--cpu", &a.cpu)?,
            io_wait: input::duration("--io-wait", &a.io_wait)?,
            dirty_kb: sized_kib("--dirty", &a.dirty, a.dirty_kb)?.unwrap_or(0),
            leak_kb: sized_kib("--leak", &a.leak, a.leak_kb)?.unwrap_or(0),
            body_bytes: match (&a.body, a.body_bytes) {
                (Some(size), _) => Some(input::size_bytes("--body", size)?),
                (None, old) => old,
            }
            .unwrap_or(100),
        },
    };
    cfg.validate().map_err(InputError)?;
    Ok(cfg)
}

/// A size flag in KiB (`--dirty 64KiB`), or its old spelling's bare number (`--dirty-kb 64`).
fn sized_kib(flag: &str, size: &Option<String>, old: Option<u64>) -> Result<Option<u64>, InputError> {
    size.as_deref().map(|s| input::size_kib(flag, s)).transpose().map(|new| new.or(old))
}
