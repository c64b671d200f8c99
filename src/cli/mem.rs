//! `webtune mem`: select the server, sample its processes, add up, and (with --url) measure
//! how its memory grows per request.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use super::args::MemArgs;
use crate::input;
use crate::input::InputError;
use crate::procmem;
use crate::procmem::capacity::{self, Budget};
use crate::report::mem::{MemReport, WatchSample};

/// Prints the memory report of the selected server, or with --watch a line per interval.
pub fn run(a: &MemArgs) -> anyhow::Result<ExitCode> {
    let selector = a.server.selector()?;
    let budget = a.budget.as_deref().map(|b| Budget::parse("--budget", b)).transpose()?;
    let pids = procmem::select(&selector).map_err(|e| InputError(e.to_string()))?;
    if let Some(every) = &a.watch {
        let every = input::duration("--watch", every)?;
        return watch(&pids, every, a.count, a.json, &mut std::io::stdout().lock());
    }

    let before = procmem::sample(&pids);
    let budget_kib = budget.map(|b| b.resolve(&before));
    let mut report = MemReport::new(&before, budget_kib);
    if let Some(url) = &a.url {
        let workers = before.iter().filter(|p| p.role == procmem::Role::Worker).count().max(1) as u64;
        let c = a.connections.unwrap_or(workers).min(a.requests).max(1);
        let bench = crate::bench::drive(url, c, a.requests, true, None, &crate::sys::interrupt_flag())?;
        // The process list may have changed (recycled workers): select again.
        let after = procmem::sample(&procmem::select(&selector).map_err(|e| InputError(e.to_string()))?);
        let requests = bench.result.succeeded;
        let cap = budget_kib.and_then(|b| capacity::capacity(&after, b));
        report = MemReport::new(&after, budget_kib);
        report.growth = Some(capacity::growth(&before, &after, requests, cap.as_ref()));
    }
    super::emit(&report, a.json, crate::report::mem::write_text)?;
    Ok(ExitCode::SUCCESS)
}

fn watch(
    pids: &[i32],
    every: Duration,
    count: Option<u64>,
    json: bool,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let mut n = 0;
    if !json {
        writeln!(out, "{}", WatchSample::header())?;
    }
    while count.is_none_or(|c| n < c) {
        let procs = procmem::sample(pids);
        let sample = WatchSample::new(started.elapsed(), &procs);
        if json {
            serde_json::to_writer(&mut *out, &sample)?;
            writeln!(out)?;
        } else {
            writeln!(out, "{}", sample.line())?;
        }
        out.flush()?;
        n += 1;
        if procs.is_empty() {
            anyhow::bail!("the server's processes are gone");
        }
        if count.is_none_or(|c| n < c) {
            std::thread::sleep(every);
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use crate::procmem::capacity::Budget;

    #[test]
    fn budgets() {
        let parse = |t: &str| Budget::parse("--budget", t);
        assert_eq!(parse("4GiB").unwrap(), Budget::KiB(4 * 1024 * 1024));
        assert_eq!(parse("512M").unwrap(), Budget::KiB(512 * 1024));
        assert_eq!(parse("1.5g").unwrap(), Budget::KiB(1536 * 1024));
        assert_eq!(parse("auto").unwrap(), Budget::Auto);
        assert!(parse("lots").is_err());
        assert!(parse("4XB").is_err());
    }
}
