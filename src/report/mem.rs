//! The memory report: per-process table, totals side by side, capacity and growth.

use std::io::{self, Write};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::procmem::capacity::{self, Capacity, Growth, Totals};
use crate::procmem::{ProcMem, Role, Sample, Unread, Unreadable};

/// The `schema` value written into every memory report, naming its layout.
pub const SCHEMA_ID: &str = "webtune.mem.v2";

/// What `webtune mem` found: each process's memory, the totals, and what fits the budget.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemReport {
    /// Always SCHEMA_ID for this layout.
    pub schema: String,
    /// KiB throughout.
    pub processes: Vec<ProcMem>,
    pub totals: Totals,
    /// How far the RSS sum overstates the real total (PSS sum), in percent.
    pub rss_sum_overstates_percent: f64,
    /// None without a budget, or without a worker to measure.
    pub capacity: Option<Capacity>,
    /// Only with `--url`: how memory grew over the requests sent.
    pub growth: Option<Growth>,
    /// The server's processes left out of every figure above: refused ("denied", only with
    /// `--partial`) or gone while being read ("exited", a recycled worker).
    #[serde(default)]
    pub unread: Vec<Unread>,
}

impl MemReport {
    /// The report for one sample, with no growth; capacity only with a budget.
    pub fn new(sample: &Sample, budget_kib: Option<u64>) -> MemReport {
        let procs = &sample.procs;
        let totals = capacity::totals(procs);
        MemReport {
            schema: SCHEMA_ID.into(),
            processes: procs.to_vec(),
            totals,
            rss_sum_overstates_percent: percent_over(totals.rss_sum, totals.pss_sum),
            capacity: budget_kib.and_then(|b| capacity::capacity(procs, b)),
            growth: None,
            unread: sample.unread.clone(),
        }
    }
}

fn percent_over(naive: u64, real: u64) -> f64 {
    if real == 0 { 0.0 } else { (naive as f64 / real as f64 - 1.0) * 100.0 }
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The report as text: the process table in MiB, then totals, capacity and growth.
pub fn write_text(r: &MemReport, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "{:>8}  {:<7} {:<15} {:>9} {:>9} {:>9} {:>9} {:>9}   (MiB)",
        "pid", "role", "name", "rss", "pss", "uss", "shared", "swap"
    )?;
    for p in &r.processes {
        writeln!(
            out,
            "{:>8}  {:<7} {:<15} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
            p.pid,
            if p.role == Role::Parent { "parent" } else { "worker" },
            p.name,
            mib(p.mem.rss),
            mib(p.mem.pss),
            mib(p.uss),
            mib(p.shared),
            mib(p.mem.swap)
        )?;
    }
    for u in &r.unread {
        let why = match u.reason {
            Unreadable::Denied => "not readable by this user: left out of every figure below",
            Unreadable::Exited => "exited while being read",
        };
        writeln!(out, "{:>8}  {:<7} {:<15} {why}", u.pid, "-", u.name)?;
    }
    let t = &r.totals;
    writeln!(out)?;
    let denied = r.unread.iter().filter(|u| u.reason == Unreadable::Denied).count();
    if denied > 0 {
        writeln!(out, "PARTIAL: {denied} of the server's processes could not be read; the figures leave them out")?;
    }
    writeln!(out, "Real memory:   {:.1} MiB (sum of PSS)", mib(t.pss_sum))?;
    writeln!(
        out,
        "Private + largest shared: {:.1} MiB (sum of RSS - shared, plus the largest shared)",
        mib(t.seeds_formula)
    )?;
    writeln!(
        out,
        "RSS sum:       {:.1} MiB: what adding up ps/top figures gives, {:.0}% more than the real total",
        mib(t.rss_sum),
        r.rss_sum_overstates_percent
    )?;
    if let Some(c) = &r.capacity {
        writeln!(out)?;
        writeln!(
            out,
            "Budget {:.1} MiB: {} workers fit (the parent keeps {:.1} MiB shared + {:.1} MiB of its own; the largest worker adds {:.1} MiB); RAM / RSS would say {}",
            mib(c.budget_kib),
            c.workers_fit,
            mib(c.parent_shared_kib),
            mib(c.parent_uss_kib),
            mib(c.max_worker_uss_kib),
            c.workers_fit_naive
        )?;
    }
    if let Some(g) = &r.growth {
        writeln!(out)?;
        writeln!(
            out,
            "Over {} requests ({} workers measured): unique memory +{:.1} KiB per request, shared memory -{:.1} KiB per request",
            g.requests, g.workers, g.uss_per_request, g.shared_lost_per_request
        )?;
        if let Some(limit) = g.max_unshared_kib {
            write!(out, "To stay within the budget: keep each worker under {:.1} MiB unshared", mib(limit))?;
            match g.max_requests_per_worker {
                Some(n) => writeln!(out, ", i.e. recycle it after at most {n} requests")?,
                None => writeln!(out, " (memory did not grow: no recycling needed)")?,
            }
        }
    }
    Ok(())
}

/// One line of `--watch`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WatchSample {
    /// Seconds since watching began.
    pub t_s: f64,
    pub processes: usize,
    pub pss_sum_kib: u64,
    pub rss_sum_kib: u64,
    /// The seeds' formula: sum of (RSS - shared) plus the largest shared.
    pub seeds_formula_kib: u64,
    /// The costliest worker's unique memory (0 without workers).
    pub max_worker_uss_kib: u64,
    /// The least shared memory of any worker: falls as copy-on-write unshares pages (0 without workers).
    pub min_worker_shared_kib: u64,
    /// Processes refused by the kernel and left out of this line (only with `--partial`).
    #[serde(default)]
    pub denied: usize,
}

impl WatchSample {
    /// A sample taken `t` after watching began.
    pub fn new(t: Duration, sample: &Sample) -> WatchSample {
        let procs = &sample.procs;
        let totals = capacity::totals(procs);
        let workers = || procs.iter().filter(|p| p.role == Role::Worker);
        WatchSample {
            t_s: t.as_secs_f64(),
            processes: procs.len(),
            pss_sum_kib: totals.pss_sum,
            rss_sum_kib: totals.rss_sum,
            seeds_formula_kib: totals.seeds_formula,
            max_worker_uss_kib: workers().map(|p| p.uss).max().unwrap_or(0),
            min_worker_shared_kib: workers().map(|p| p.shared).min().unwrap_or(0),
            denied: sample.denied().len(),
        }
    }

    /// The column titles above the text lines.
    pub fn header() -> String {
        format!(
            "{:>8} {:>6} {:>10} {:>10} {:>10} {:>12} {:>12}   (MiB)",
            "t(s)", "procs", "pss sum", "rss sum", "formula", "max wkr uss", "min wkr shr"
        )
    }

    /// The sample as one text line under `header`, sizes in MiB.
    pub fn line(&self) -> String {
        format!(
            "{:>8.1} {:>6} {:>10.1} {:>10.1} {:>10.1} {:>12.1} {:>12.1}",
            self.t_s,
            self.processes,
            mib(self.pss_sum_kib),
            mib(self.rss_sum_kib),
            mib(self.seeds_formula_kib),
            mib(self.max_worker_uss_kib),
            mib(self.min_worker_shared_kib)
        ) + &if self.denied > 0 { format!("   PARTIAL: {} processes unreadable", self.denied) } else { String::new() }
    }
}
