//! `webtune mem`: select the server, sample its processes, add up, and (with --url) measure
//! how its memory grows per request.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use super::UsageError;
use super::args::MemArgs;
use super::bench::parse_duration;
use crate::procmem::{self, capacity};
use crate::report::mem::{MemReport, WatchSample};

pub fn run(a: &MemArgs) -> anyhow::Result<ExitCode> {
    let selector = a.server.selector()?;
    let budget = a.budget.as_deref().map(parse_budget).transpose()?;
    let pids = procmem::select(&selector).map_err(|e| UsageError(e.to_string()))?;
    if let Some(every) = &a.watch {
        let every = parse_duration("--watch", every)?;
        return watch(&pids, every, a.count, a.json, &mut std::io::stdout().lock());
    }

    let before = procmem::sample(&pids);
    let budget_kib = budget.map(|b| b.resolve(&before));
    let mut report = MemReport::new(&before, budget_kib);
    if let Some(url) = &a.url {
        let workers = before.iter().filter(|p| p.role == procmem::Role::Worker).count().max(1) as u64;
        let c = a.connections.unwrap_or(workers).min(a.requests).max(1);
        let bench = super::bench::drive(url, c, a.requests, true)?;
        // The process list may have changed (recycled workers): select again.
        let after = procmem::sample(&procmem::select(&selector).map_err(|e| UsageError(e.to_string()))?);
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

/// A budget as given: a size, or "auto".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    KiB(u64),
    /// MemAvailable plus the server's real memory now.
    Auto,
}

impl Budget {
    fn resolve(self, procs: &[procmem::ProcMem]) -> u64 {
        match self {
            Budget::KiB(k) => k,
            Budget::Auto => mem_available_kib() + capacity::totals(procs).pss_sum,
        }
    }
}

pub fn mem_available_kib() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("MemAvailable:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Parses "4GiB", "512MiB", "2G", "1500M", "800000K", "auto". Binary units throughout.
pub fn parse_budget(s: &str) -> Result<Budget, UsageError> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(Budget::Auto);
    }
    let bad = || UsageError(format!("--budget: bad size {s:?} (e.g. 4GiB, 512MiB, auto)"));
    let digits = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let value: f64 = s[..digits].parse().map_err(|_| bad())?;
    let kib_per_unit = match s[digits..].trim().to_ascii_lowercase().as_str() {
        "k" | "kb" | "kib" => 1.0,
        "m" | "mb" | "mib" => 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0,
        "t" | "tb" | "tib" => 1024.0 * 1024.0 * 1024.0,
        "" | "b" => 1.0 / 1024.0,
        _ => return Err(bad()),
    };
    Ok(Budget::KiB((value * kib_per_unit) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets() {
        assert_eq!(parse_budget("4GiB").unwrap(), Budget::KiB(4 * 1024 * 1024));
        assert_eq!(parse_budget("512M").unwrap(), Budget::KiB(512 * 1024));
        assert_eq!(parse_budget("1.5g").unwrap(), Budget::KiB(1536 * 1024));
        assert_eq!(parse_budget("auto").unwrap(), Budget::Auto);
        assert!(parse_budget("lots").is_err());
        assert!(parse_budget("4XB").is_err());
    }
}
