//! What a request costs the lab: CPU, waiting, dirtied shared pages, leaked memory, and the
//! body it returns. Set per server, and per request through the query string.

use std::time::Duration;

use nix::time::{ClockId, clock_gettime};

use super::heap::{Heap, PAGE, PageWalk};

/// What one request makes the worker do: burn CPU, wait, dirty pages, leak, send a body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    /// Busy CPU time (measured on the worker's CPU clock, so contention does not shorten it).
    pub cpu: Duration,
    /// Sleep, as when waiting on a database.
    pub io_wait: Duration,
    /// KiB of the preloaded heap to dirty (rounded up to whole pages).
    pub dirty_kb: u64,
    /// KiB allocated, filled and never freed.
    pub leak_kb: u64,
    pub body_bytes: u64,
}

impl Work {
    /// Applies query parameters: `cpu=5ms&io=20ms&dirty=64&leak=16&body=1024`. Durations read
    /// as everywhere in webtune (`input::duration`: a bare number is seconds); sizes are KiB
    /// (body: bytes). Unknown keys are ignored, as a web application ignores parameters it
    /// does not use.
    pub fn with_query(mut self, query: &str) -> Result<Work, String> {
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "cpu" => self.cpu = duration(key, value)?,
                "io" | "io_wait" | "io-wait" => self.io_wait = duration(key, value)?,
                "dirty" | "dirty_kb" => self.dirty_kb = parse_num(key, value, MAX_DIRTY_KB)?,
                "leak" | "leak_kb" => self.leak_kb = parse_num(key, value, MAX_LEAK_KB)?,
                "body" | "body_bytes" => self.body_bytes = parse_num(key, value, MAX_BODY)?,
                _ => {}
            }
        }
        Ok(self)
    }
}

/// What one request may ask of a worker: enough for any phenomenon the lab reproduces, never
/// enough to take the machine (a 1 GiB leak a request, 4 GiB dirtied, an hour's CPU or wait).
const MAX_LEAK_KB: u64 = 1 << 20;
const MAX_DIRTY_KB: u64 = 4 << 20;
const MAX_BODY: u64 = 1 << 40;
const MAX_WORK_TIME: Duration = Duration::from_secs(3600);

fn duration(key: &str, s: &str) -> Result<Duration, String> {
    let d = crate::input::duration(key, s).map_err(|e| e.0)?;
    if d > MAX_WORK_TIME {
        return Err(format!("bad {key} {s:?}: at most 1h a request"));
    }
    Ok(d)
}

fn parse_num(key: &str, s: &str, max: u64) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if n <= max => Ok(n),
        _ => Err(format!("bad {key} {s:?}: expected a whole number up to {max}")),
    }
}

/// The per-worker state the work touches.
pub struct Worksite<'a> {
    pub heap: &'a Heap,
    pub walk: PageWalk,
    pub leaked: Vec<Box<[u8]>>,
}

impl Worksite<'_> {
    /// Does the work of one request, in order: CPU, dirtying, leaking, then the wait. A leak
    /// the machine cannot hold is an error, not an abort of the worker.
    pub fn perform(&mut self, w: &Work) -> Result<(), String> {
        if !w.cpu.is_zero() {
            burn_cpu(w.cpu);
        }
        if w.dirty_kb > 0 && self.heap.pages() > 0 {
            let pages = (w.dirty_kb as usize * 1024).div_ceil(PAGE);
            for _ in 0..pages {
                self.heap.dirty(self.walk.next_page());
            }
        }
        if w.leak_kb > 0 {
            let bytes = w.leak_kb as usize * 1024;
            let mut leak = Vec::new();
            leak.try_reserve_exact(bytes).map_err(|_| format!("cannot leak {} KiB more: out of memory", w.leak_kb))?;
            // Filled, so the pages are resident, not just reserved.
            leak.resize(bytes, 0xa5u8);
            self.leaked.push(leak.into_boxed_slice());
        }
        if !w.io_wait.is_zero() {
            std::thread::sleep(w.io_wait);
        }
        Ok(())
    }
}

fn cpu_now() -> Duration {
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).map(Duration::from).unwrap_or_default()
}

/// Spins until this thread has used `d` of CPU time.
fn burn_cpu(d: Duration) {
    let end = cpu_now() + d;
    let mut x = 0u64;
    while cpu_now() < end {
        for i in 0..256u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_overrides_defaults() {
        let base = Work { cpu: Duration::from_millis(2), body_bytes: 10, ..Work::default() };
        let w = base.with_query("cpu=5ms&io=20ms&dirty=64&leak=8&body=100&other=1").unwrap();
        assert_eq!(w.cpu, Duration::from_millis(5));
        assert_eq!(w.io_wait, Duration::from_millis(20));
        assert_eq!((w.dirty_kb, w.leak_kb, w.body_bytes), (64, 8, 100));
        assert!(base.with_query("cpu=soon").is_err());
        assert_eq!(base.with_query("").unwrap(), base);
    }

    #[test]
    fn burns_the_cpu_time_asked() {
        let before = cpu_now();
        burn_cpu(Duration::from_millis(20));
        let used = cpu_now() - before;
        assert!(used >= Duration::from_millis(20) && used < Duration::from_millis(40), "{used:?}");
    }
}
