//! `webtune syscalls`: trace the server while the engine drives a counted number of requests.

use std::process::ExitCode;
use std::time::Duration;

use super::args::SyscallsArgs;
use crate::input::InputError;
use crate::procmem;
use crate::syscalls::{self, parse, trace::Tracer};

/// Attaches strace to the selected server, drives -n requests to the URL, detaches and reports.
pub fn run(a: &SyscallsArgs) -> anyhow::Result<ExitCode> {
    let selector = a.server.selector()?;
    if a.requests == 0 || a.connections == 0 || a.requests < a.connections {
        return Err(InputError("-n must be at least 1 and at least -c".into()).into());
    }
    let pids = procmem::select(&selector).map_err(|e| InputError(e.to_string()))?;
    let dir = tempfile::tempdir()?;
    let tracer = Tracer::attach(&pids, dir.path())?;
    let bench =
        crate::bench::drive(&a.url, a.connections, a.requests, !a.no_keepalive, None, &crate::sys::interrupt_flag());
    // Let the server finish what follows a response (logging, cleanup) before detaching.
    std::thread::sleep(Duration::from_millis(200));
    let text = tracer.stop()?;
    let bench = bench?;
    let report = syscalls::summarize(&parse::parse(&text), bench.result.succeeded, pids);
    super::print::emit(&report, super::output::stdout_format(a.json))?;
    Ok(ExitCode::SUCCESS)
}
