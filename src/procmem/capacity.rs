//! The arithmetic of the seeds (mod_perl guide, 1.5.1 and 1.6.2), with measured numbers.

use serde::{Deserialize, Serialize};

use super::{ProcMem, Role};
use crate::input::{self, InputError};

/// The memory a server may use, as given: a size, or "auto".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    KiB(u64),
    /// MemAvailable plus what the server uses now.
    Auto,
}

impl Budget {
    /// "4GiB", "512MiB" (sizes as `input::size_kib` reads them) or "auto".
    pub fn parse(name: &str, text: &str) -> Result<Budget, InputError> {
        if text.trim().eq_ignore_ascii_case("auto") {
            return Ok(Budget::Auto);
        }
        // A bare number keeps its own message: it asks for the unit.
        let bare_number = text.trim().parse::<f64>().is_ok();
        input::size_kib(name, text).map(Budget::KiB).map_err(|e| {
            if bare_number { e } else { InputError(format!("{name}: bad size {text:?} (e.g. 4GiB, 512MiB, auto)")) }
        })
    }

    /// In KiB, for a server whose processes are `procs` now (none before it starts).
    pub fn resolve(self, procs: &[ProcMem]) -> u64 {
        match self {
            Budget::KiB(k) => k,
            Budget::Auto => mem_available_kib() + totals(procs).pss_sum,
        }
    }
}

/// The kernel's estimate of memory available to new work (MemAvailable), KiB; 0 unknown.
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

/// Three ways to add up a server's memory, KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// What naive tools report: every shared page counted once per process.
    #[serde(rename = "rss_sum_kib")]
    pub rss_sum: u64,
    /// Each shared page divided among its sharers: the real total.
    #[serde(rename = "pss_sum_kib")]
    pub pss_sum: u64,
    /// The seeds' formula: sum of (size - shared) plus the largest shared.
    #[serde(rename = "seeds_formula_kib")]
    pub seeds_formula: u64,
}

/// Adds up `procs` all three ways.
pub fn totals(procs: &[ProcMem]) -> Totals {
    Totals {
        rss_sum: procs.iter().map(|p| p.mem.rss).sum(),
        pss_sum: procs.iter().map(|p| p.mem.pss).sum(),
        seeds_formula: procs.iter().map(|p| p.mem.rss.saturating_sub(p.shared)).sum::<u64>()
            + procs.iter().map(|p| p.shared).max().unwrap_or(0),
    }
}

/// How many workers fit a memory budget.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    pub budget_kib: u64,
    /// Workers in the sample the figures come from.
    pub workers_now: usize,
    /// The parent's memory shared with the workers (what each worker need not pay for).
    pub parent_shared_kib: u64,
    pub parent_uss_kib: u64,
    /// The costliest worker: what one more worker adds.
    pub max_worker_uss_kib: u64,
    /// The largest worker's resident size, shared pages included (for the naive answer).
    pub max_worker_rss_kib: u64,
    /// (budget - parent's USS - parent's shared) / largest worker USS.
    pub workers_fit: u64,
    /// The naive answer: budget / largest worker RSS.
    pub workers_fit_naive: u64,
}

/// None without any worker to measure.
pub fn capacity(procs: &[ProcMem], budget_kib: u64) -> Option<Capacity> {
    let workers: Vec<&ProcMem> = procs.iter().filter(|p| p.role == Role::Worker).collect();
    let parent = procs.iter().find(|p| p.role == Role::Parent);
    let max_uss = workers.iter().map(|w| w.uss).max()?.max(1);
    let max_rss = workers.iter().map(|w| w.mem.rss).max()?.max(1);
    let (parent_shared, parent_uss) = parent.map_or((0, 0), |p| (p.shared, p.uss));
    Some(Capacity {
        budget_kib,
        workers_now: workers.len(),
        parent_shared_kib: parent_shared,
        parent_uss_kib: parent_uss,
        max_worker_uss_kib: max_uss,
        max_worker_rss_kib: max_rss,
        workers_fit: budget_kib.saturating_sub(parent_shared + parent_uss) / max_uss,
        workers_fit_naive: budget_kib / max_rss,
    })
}

/// What serving requests does to the workers' memory, per request, KiB.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Growth {
    /// Requests served between the two samples.
    pub requests: u64,
    /// Workers measured before and after (recycled ones are left out).
    pub workers: usize,
    /// Growth of the workers' unique memory per request (leaks and pages unshared).
    #[serde(rename = "uss_kib_per_request")]
    pub uss_per_request: f64,
    /// Shared memory the workers lost per request (pages dirtied copy-on-write), counted on
    /// Shared_Dirty alone: see `growth`.
    #[serde(rename = "shared_lost_kib_per_request")]
    pub shared_lost_per_request: f64,
    /// The largest unique size per worker that keeps the pool within the budget
    /// (Apache2::SizeLimit's MAX_UNSHARED_SIZE).
    /// None without a budget, or without workers to share it.
    pub max_unshared_kib: Option<u64>,
    /// Requests per worker before the pool outgrows the budget (MaxRequestsPerChild);
    /// None when memory does not grow.
    /// Also None without a budget, or without workers to share it.
    pub max_requests_per_worker: Option<u64>,
}

/// Compares two samples of the same server taken `requests` requests apart.
///
/// Copy-on-write only unshares pages written before the fork, which smaps counts as
/// Shared_Dirty; a write moves them to Private_Dirty. Shared_Clean is file pages (code,
/// read-only data) that a worker maps on first use and the kernel may drop at any time: a
/// worker that runs a new code path during the window gains megabytes of it, which would
/// hide that much copy-on-write loss, so the loss is measured on Shared_Dirty only.
pub fn growth(before: &[ProcMem], after: &[ProcMem], requests: u64, cap: Option<&Capacity>) -> Growth {
    let mut uss = 0i64;
    let mut shared = 0i64;
    let mut workers = 0;
    for a in after.iter().filter(|p| p.role == Role::Worker) {
        if let Some(b) = before.iter().find(|b| b.pid == a.pid) {
            uss += a.uss as i64 - b.uss as i64;
            shared += b.mem.shared_dirty as i64 - a.mem.shared_dirty as i64;
            workers += 1;
        }
    }
    let per = |v: i64| if requests == 0 { 0.0 } else { v as f64 / requests as f64 };
    let uss_per_request = per(uss);
    let (max_unshared_kib, max_requests_per_worker) = match cap {
        Some(c) if c.workers_now > 0 => {
            let n = c.workers_now as u64;
            let room = c.budget_kib.saturating_sub(c.parent_shared_kib + c.parent_uss_kib);
            let max_unshared = room / n;
            // Each worker serves requests in turn: a worker's USS grows by the per-request
            // growth for each request it serves.
            let requests = (uss_per_request > 0.0).then(|| {
                let headroom = max_unshared.saturating_sub(c.max_worker_uss_kib) as f64;
                (headroom / uss_per_request).floor() as u64
            });
            (Some(max_unshared), requests)
        }
        _ => (None, None),
    };
    Growth {
        requests,
        workers,
        uss_per_request,
        shared_lost_per_request: per(shared),
        max_unshared_kib,
        max_requests_per_worker,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procmem::MemSnapshot;

    fn proc(pid: i32, role: Role, rss: u64, shared: u64, pss: u64) -> ProcMem {
        let mem = MemSnapshot { rss, pss, shared_dirty: shared, private_dirty: rss - shared, ..Default::default() };
        ProcMem { pid, ppid: 1, name: "x".into(), role, mem, uss: mem.uss(), shared: mem.shared() }
    }

    /// A parent of 70 MiB sharing 64 MiB with two workers of 66 MiB each.
    #[test]
    fn totals_by_each_method() {
        let procs = [
            proc(1, Role::Parent, 70_000, 64_000, 27_333),
            proc(2, Role::Worker, 66_000, 64_000, 23_333),
            proc(3, Role::Worker, 66_000, 64_000, 23_333),
        ];
        let t = totals(&procs);
        assert_eq!(t.rss_sum, 202_000);
        assert_eq!(t.pss_sum, 73_999);
        assert_eq!(t.seeds_formula, 6_000 + 2_000 + 2_000 + 64_000);
        let c = capacity(&procs, 1_000_000).unwrap();
        assert_eq!(c.workers_fit, (1_000_000 - 64_000 - 6_000) / 2_000);
        assert_eq!(c.workers_fit_naive, 1_000_000 / 66_000);
    }

    #[test]
    fn growth_per_request_and_limits() {
        let before = [proc(1, Role::Parent, 70_000, 64_000, 0), proc(2, Role::Worker, 66_000, 64_000, 0)];
        // 100 requests: the worker's USS grew by 6400 KiB (64 per request), 3200 of it unshared.
        let after = [proc(1, Role::Parent, 70_000, 64_000, 0), proc(2, Role::Worker, 69_200, 60_800, 0)];
        let cap = capacity(&after, 100_000).unwrap();
        let g = growth(&before, &after, 100, Some(&cap));
        assert_eq!(g.workers, 1);
        assert!((g.uss_per_request - 64.0).abs() < 1e-9);
        assert!((g.shared_lost_per_request - 32.0).abs() < 1e-9);
        assert_eq!(g.max_unshared_kib, Some(100_000 - 64_000 - 6_000));
        assert_eq!(g.max_requests_per_worker, Some((30_000 - 8_400) / 64));
    }

    /// Seen on a loaded machine: a worker mapped 2 MiB more code during the window while
    /// 12800 KiB of its preloaded heap was unshared.
    #[test]
    fn code_mapped_during_the_window_does_not_hide_copy_on_write() {
        let before = [proc(2, Role::Worker, 66_000, 64_000, 0)];
        // 12800 KiB moved from Shared_Dirty to Private_Dirty; 2048 KiB of Shared_Clean came in.
        let mut after = [proc(2, Role::Worker, 66_000 + 2_048, 64_000 - 12_800, 0)];
        after[0].mem.private_dirty -= 2_048;
        after[0].mem.shared_clean += 2_048;
        after[0].uss = after[0].mem.uss();
        after[0].shared = after[0].mem.shared();
        let g = growth(&before, &after, 400, None);
        assert!((g.uss_per_request - 32.0).abs() < 1e-9, "{}", g.uss_per_request);
        assert!((g.shared_lost_per_request - 32.0).abs() < 1e-9, "{}", g.shared_lost_per_request);
    }
}
