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
    let budget = a.memory.as_deref().map(|b| Budget::parse("--memory", b)).transpose()?;
    let pids = procmem::select(&selector).map_err(|e| InputError(e.to_string()))?;
    if let Some(every) = &a.watch {
        let every = input::duration("--watch", every)?;
        return watch(&pids, every, a.count, a.partial, a.json, &mut std::io::stdout().lock());
    }

    let first = readable(procmem::sample(&pids), a.partial)?;
    let before = first.procs.clone();
    let budget_kib = budget.map(|b| b.resolve(&before));
    let mut report = MemReport::new(&first, budget_kib);
    if let Some(url) = &a.url {
        let workers = before.iter().filter(|p| p.role == procmem::Role::Worker).count().max(1) as u64;
        let c = a.connections.unwrap_or(workers).min(a.requests).max(1);
        let bench = crate::bench::drive(url, c, a.requests, true, None, &crate::sys::interrupt_flag())?;
        // The process list may have changed (recycled workers): select again.
        let after = procmem::select(&selector).map_err(|e| InputError(e.to_string()))?;
        let after = readable(procmem::sample(&after), a.partial)?;
        let requests = bench.result.succeeded;
        let cap = budget_kib.and_then(|b| capacity::capacity(&after.procs, b));
        report = MemReport::new(&after, budget_kib);
        report.growth = Some(capacity::growth(&before, &after.procs, requests, cap.as_ref()));
    }
    super::print::emit(&report, super::output::stdout_format(a.json))?;
    Ok(ExitCode::SUCCESS)
}

fn watch(
    pids: &[i32],
    every: Duration,
    count: Option<u64>,
    partial: bool,
    json: bool,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let mut n = 0;
    if !json {
        writeln!(out, "{}", WatchSample::header())?;
    }
    while count.is_none_or(|c| n < c) {
        let taken = readable(procmem::sample(pids), partial)?;
        let sample = WatchSample::new(started.elapsed(), &taken);
        if json {
            serde_json::to_writer(&mut *out, &sample)?;
            writeln!(out)?;
        } else {
            writeln!(out, "{}", sample.line())?;
        }
        out.flush()?;
        n += 1;
        if taken.procs.is_empty() {
            anyhow::bail!("the server's processes are gone");
        }
        if count.is_none_or(|c| n < c) {
            std::thread::sleep(every);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The sample, unless processes were refused and partial figures were not accepted; or
/// unless nothing at all could be read (the server is gone).
fn readable(sample: procmem::Sample, partial: bool) -> anyhow::Result<procmem::Sample> {
    let denied = sample.denied();
    if !denied.is_empty() && (!partial || sample.procs.is_empty()) {
        let hint =
            if partial { "" } else { "; run as their owner or root, or pass --partial to accept figures without them" };
        anyhow::bail!("{}{hint}", procmem::Refused(denied));
    }
    Ok(sample)
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
