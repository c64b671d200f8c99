//! One measured configuration: the tuner's unit of evidence.

use serde::{Deserialize, Serialize};

use crate::server::Settings;
use crate::stats::median;
use crate::sys::cpus::Placement;

/// The server's memory while it served the load, KiB.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemUse {
    /// Worker processes found (the master's descendants).
    pub workers: usize,
    /// The costliest worker's unique memory: what one more worker adds.
    pub worker_uss_max_kib: u64,
    pub worker_uss_mean_kib: u64,
    /// Memory each worker shares (with the parent and its siblings), mean.
    pub worker_shared_mean_kib: u64,
    /// The master's unique memory.
    pub parent_uss_kib: u64,
    /// The master's memory shared with other processes (its workers, mostly).
    pub parent_shared_kib: u64,
    /// The whole server's real footprint: the sum of PSS (a front proxy's included).
    pub pss_total_kib: u64,
    /// The part of it in anonymous and shared-memory pages, which programs outside the
    /// server do not map (a front's included): what configurations are compared by, as it
    /// reads the same whatever runs beside the server, where the whole PSS shrinks as other
    /// servers of the same binary start (a lab parent read 3916 KiB alone and 1790 beside two
    /// more labs, its anonymous pages 274 KiB both times). None when the kernel does not split
    /// the PSS (older kernels), or in runs stored before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_pss_kib: Option<u64>,
    /// A front proxy's share of it (the sum of its processes' PSS); None without a front.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub front_pss_kib: Option<u64>,
    /// Workers that fit the budget, by the seeds' arithmetic with these figures.
    /// None without a memory budget, or without a worker to measure.
    pub workers_fit: Option<u64>,
}

/// The container's own accounting during one window, from the kernel (the server ran in a
/// cgroup with these limits): what the OOM killer and the CPU quota act on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContainerUse {
    /// The memory limit, bytes; None without one.
    pub memory_limit_bytes: Option<u64>,
    /// The CPU quota, in CPUs; None without one.
    pub cpus: Option<f64>,
    /// The most the kernel charged at the window's memory samples, bytes, and its parts then.
    pub charge_max_bytes: u64,
    pub anon_bytes: u64,
    pub file_bytes: u64,
    pub sock_bytes: u64,
    pub kernel_bytes: u64,
    /// Processes the OOM killer killed during the window.
    pub oom_kills: u64,
    /// Processes it killed since the server was launched, warm-up included (its own cgroup).
    #[serde(default)]
    pub oom_kills_since_launch: u64,
    /// Of the window's quota periods, the share in which the container was throttled (0-1).
    pub throttled_share: Option<f64>,
    /// Time its processes waited, throttled, seconds summed over them.
    pub throttled_s: f64,
    /// Throttled in more of its periods than `[container] throttled` allows: the
    /// configuration misses the constraint.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub over_throttle_bound: bool,
    /// CPU time the server's processes used in the window, seconds (0 when unread).
    pub cpu_s: f64,
    /// Workers that fit the memory limit by the charge the kernel cannot reclaim (all of it but
    /// the page cache): the workers seen plus what is left under the limit divided by one
    /// worker's unique memory. None without a limit or a worker.
    pub workers_fit: Option<u64>,
    /// Workers that fit the memory budget by PSS (the seeds' arithmetic), beside the charge's
    /// figure: the lower of the two is the fit the tuner uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pss_workers_fit: Option<u64>,
}

impl ContainerUse {
    /// The charge the kernel cannot reclaim without killing: all but the page cache.
    pub fn unreclaimable_bytes(&self) -> u64 {
        self.charge_max_bytes.saturating_sub(self.file_bytes)
    }
}

/// The memory figure configurations are compared by, KiB: the server's own pages
/// (`MemUse::own_pss_kib`) when every window of `points` read them, else the whole PSS (runs
/// stored before they were read, kernels that do not split the PSS); never one against the other.
pub fn compared_memory(points: &[&Point]) -> fn(&MemUse) -> u64 {
    if own_pages_read(points) { |m| m.own_pss_kib.unwrap_or(m.pss_total_kib) } else { |m| m.pss_total_kib }
}

/// Whether every window of `points` that read memory read the server's own pages.
pub fn own_pages_read(points: &[&Point]) -> bool {
    points.iter().flat_map(|p| &p.samples).filter_map(|s| s.memory.as_ref()).all(|m| m.own_pss_kib.is_some())
}

/// One repeat: a bench run against a launched configuration.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Sample {
    /// Successful requests per second.
    pub rps: f64,
    /// Median total latency of the successful requests, ms.
    pub p50_ms: f64,
    /// 99th percentile of the successful requests' total latency, ms.
    pub p99_ms: f64,
    /// 99th percentile of the successful requests' time to first byte, ms.
    pub first_byte_p99_ms: f64,
    pub succeeded: u64,
    pub failed: u64,
    /// Read half-way through the run; None when the server's processes could not be read.
    pub memory: Option<MemUse>,
    /// The server's own counters mid-run (mod_status, stub_status...), when it has them.
    pub counters: Option<serde_json::Value>,
    /// Total latency, HdrHistogram V2 base64 (for percentile plots).
    #[serde(default)]
    pub histogram: Option<String>,
    /// The share of the machine's CPU (0-1) used during the window by everything that is
    /// neither the server's tree nor webtune, steal included; None when /proc/stat is unreadable.
    #[serde(default)]
    pub interference: Option<f64>,
    /// The hypervisor's steal alone, share of the machine (0-1).
    #[serde(default)]
    pub steal: Option<f64>,
    /// The window's length, seconds (it grows when workers recycle slowly).
    #[serde(default)]
    pub window_s: Option<f64>,
    /// webtune's own CPU time during the window (the client: engine and sampler), as a share
    /// (0-1) of the cores the client and the server may use together.
    #[serde(default)]
    pub client_share: Option<f64>,
    /// Connections the client opened during the window (each kept-alive one carried several
    /// of `succeeded`); None in points stored before they were counted.
    #[serde(default)]
    pub connections: Option<u64>,
    /// Open loop: requests still being answered when the window ended, when none of the
    /// window's requests had to wait for a free connection (the server kept up with what was
    /// offered): served in time, though after the count. None otherwise, or closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answering_at_end: Option<u64>,
    /// The server's CPU time a successful request, ms (the cgroup's count in a container,
    /// else its process trees'): a cost that others' CPU barely moves, where req/s falls with
    /// it. None in points stored before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_ms_per_request: Option<f64>,
    /// The machine's idle share during the window (0-1): near 0, its CPUs were full (the
    /// server's work, the client's and others'), and the server served what the CPU time it
    /// got could buy. None in points stored before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_idle: Option<f64>,
    /// The server's threads runnable but waiting for a CPU, on average over the window (the
    /// kernel's run-queue wait): of N workers kept busy, about N less this many could work at
    /// once without queueing for the CPUs. None without the kernel's schedstats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_waiting: Option<f64>,
    /// The container's accounting, when the server ran in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<ContainerUse>,
}

/// How many requests one of `max_requests` stands for: 1 where the server counts requests;
/// where it counts connections (`per_connection`), the requests a connection carried in
/// `samples`, at least 1 (None when their connections were not counted).
pub fn max_requests_scale(per_connection: bool, samples: &[Sample]) -> Option<f64> {
    if !per_connection {
        return Some(1.0);
    }
    let (requests, connections) =
        samples.iter().try_fold((0, 0), |(r, c), s| Some((r + s.succeeded, c + s.connections?)))?;
    (connections > 0).then(|| (requests as f64 / connections as f64).max(1.0))
}

/// The larger of two shares, either possibly unknown.
pub fn max_share(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// Whether a point was measured, or why not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Status {
    Ok,
    /// The server failed to start, crashed, or every request failed: the cause.
    Failed {
        cause: String,
    },
}

/// One configuration, launched and measured (or failed), with the evidence.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Point {
    /// The strategy's name for this measurement ("baseline", "workers=4", "burst"...).
    pub step: String,
    /// The configuration measured.
    pub settings: Settings,
    pub status: Status,
    /// One per repeat; empty when the point failed.
    pub samples: Vec<Sample>,
    /// Error-log lines that say the server ran out of workers.
    pub saturation: Vec<String>,
    /// The configuration as the server read it, for the evidence.
    pub config_text: Option<String>,
    /// Seconds the whole measurement took (launch, warm-up, repeats, stop).
    pub seconds: f64,
    /// The repeats varied by more than 10%: more were taken, and the point says so.
    pub noisy: bool,
    /// Requests sent to warm the server before the first repeat.
    #[serde(default)]
    pub warmed: u64,
    /// Workers alive when the load began (after any idle spell): what the server keeps idle.
    /// None when the point failed or the master could not be read.
    #[serde(default)]
    pub workers_at_start: Option<usize>,
    /// The largest share of the machine's CPU (0-1) others took in the windows kept.
    #[serde(default)]
    pub interference: f64,
    /// Windows measured again because others took more than the allowed share meanwhile.
    #[serde(default)]
    pub remeasured: u32,
    /// Why the windows were lengthened, or why they could not be made long enough.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Where the load came from: "local" (this machine) and each `ssh://` host of
    /// `[load] remote`, in that order; empty when the point failed before any load.
    #[serde(default)]
    pub load_from: Vec<String>,
    /// Where the server and the client ran (None: a failed point, or one stored before
    /// placements were recorded).
    #[serde(default)]
    pub placement: Option<Placement>,
    /// The largest share of the machine's CPU (0-1; the cores of `placement`) the client took
    /// in the windows kept.
    #[serde(default)]
    pub client_share: Option<f64>,
    /// Server launches its measurement made: 1, or 0 for a window measured on a server kept
    /// running from an earlier window of the same configuration (no launch, no warm-up; its
    /// `seconds` are the window's own). Points stored before servers were kept: 1.
    #[serde(default = "one_launch")]
    pub launches: usize,
    /// The server's `max_requests` counts the client's connections, not requests (Apache and
    /// Starman with no front): a worker's life in requests is `max_requests` times the
    /// requests a connection carried (`max_requests_scale`).
    #[serde(default)]
    pub recycles_per_connection: bool,
}

fn one_launch() -> usize {
    1
}

impl Point {
    /// A point measured once, in `seconds`, with these samples and nothing else known yet (no
    /// memory, no notes, one launch): what the other constructors start from.
    pub fn measured(step: &str, settings: &Settings, samples: Vec<Sample>, seconds: f64) -> Point {
        Point {
            step: step.into(),
            settings: settings.clone(),
            status: Status::Ok,
            samples,
            saturation: Vec::new(),
            config_text: None,
            seconds,
            noisy: false,
            warmed: 0,
            workers_at_start: None,
            interference: 0.0,
            remeasured: 0,
            notes: Vec::new(),
            load_from: Vec::new(),
            placement: None,
            client_share: None,
            launches: 1,
            recycles_per_connection: false,
        }
    }

    /// A point that could not be measured, with no samples; `seconds` is the time it cost.
    pub fn failed(step: &str, settings: &Settings, cause: String, seconds: f64) -> Point {
        Point { status: Status::Failed { cause }, ..Point::measured(step, settings, Vec::new(), seconds) }
    }

    /// The windows of one configuration measured in turn with others (rounds), as one point:
    /// their samples in round order, the costs added up. Failed when any window failed.
    pub fn combine(step: &str, windows: &[Point]) -> Option<Point> {
        let first = windows.first()?;
        let mut p = first.clone();
        p.step = step.into();
        for w in &windows[1..] {
            p.samples.extend(w.samples.iter().cloned());
            p.saturation.extend(w.saturation.iter().cloned());
            p.seconds += w.seconds;
            p.noisy |= w.noisy;
            p.warmed += w.warmed;
            p.launches += w.launches;
            p.interference = p.interference.max(w.interference);
            p.remeasured += w.remeasured;
            p.client_share = max_share(p.client_share, w.client_share);
            p.placement = p.placement.take().or_else(|| w.placement.clone());
            p.notes.extend(w.notes.iter().filter(|n| !p.notes.contains(n)).cloned().collect::<Vec<_>>());
            if p.status == Status::Ok && w.status != Status::Ok {
                p.status = w.status.clone();
            }
        }
        // One warning about the client's share, of the largest share, rather than one per window.
        if let (Some(placement), Some(share)) = (&p.placement, p.client_share) {
            let warning = crate::sys::cpus::shared_client_warning(placement, share);
            if warning.is_some() {
                p.notes.retain(|n| !n.starts_with(crate::sys::cpus::SHARED_CLIENT_WARNING_START));
                p.notes.extend(warning);
            }
        }
        Some(p)
    }

    /// Measured, with at least one sample: its figures can be compared.
    pub fn ok(&self) -> bool {
        self.status == Status::Ok && !self.samples.is_empty()
    }

    /// The median over the repeats of the figure `f` picks (NaN without samples).
    pub fn median(&self, f: impl Fn(&Sample) -> f64) -> f64 {
        median(&self.samples.iter().map(f).collect::<Vec<_>>())
    }

    /// How many requests one of `max_requests` stands for in these windows (see
    /// `max_requests_scale`).
    pub fn max_requests_scale(&self) -> Option<f64> {
        max_requests_scale(self.recycles_per_connection, &self.samples)
    }

    /// Throughput: the repeats' median of successful requests per second.
    pub fn rps(&self) -> f64 {
        self.median(|s| s.rps)
    }

    /// The repeats' median p99 of total latency, ms.
    pub fn p99(&self) -> f64 {
        self.median(|s| s.p99_ms)
    }

    /// The repeats' median p99.9 of total latency, ms, read from their histograms as p99 is
    /// from theirs; None when no repeat kept a histogram.
    pub fn p999(&self) -> Option<f64> {
        let tails: Vec<f64> = self
            .samples
            .iter()
            .filter_map(|s| crate::aggregate::codec::decode(s.histogram.as_deref()?).ok())
            .filter(|h| !h.is_empty())
            .map(|h| h.value_at_quantile(0.999) as f64 / 1000.0)
            .collect();
        (!tails.is_empty()).then(|| median(&tails))
    }

    /// The tail of all its windows' requests pooled: their histograms added, so that a tail
    /// one window in ten shows (a connection held for a second in the accept queue) is not
    /// lost in a median of windows. None when no window kept a histogram.
    pub fn tail(&self) -> Option<Tail> {
        let mut all: Option<hdrhistogram::Histogram<u64>> = None;
        for h in self.samples.iter().filter_map(|s| crate::aggregate::codec::decode(s.histogram.as_deref()?).ok()) {
            match &mut all {
                Some(a) => a.add(&h).ok()?,
                None => all = Some(h),
            }
        }
        let all = all.filter(|h| !h.is_empty())?;
        Some(Tail {
            requests: all.len(),
            p999_ms: all.value_at_quantile(0.999) as f64 / 1000.0,
            max_ms: all.max() as f64 / 1000.0,
        })
    }

    /// The container figures of its windows, the worst of each: the most charged, every OOM
    /// kill, the most throttled; None when the server ran in no container.
    pub fn container(&self) -> Option<ContainerUse> {
        let windows: Vec<&ContainerUse> = self.samples.iter().filter_map(|s| s.container.as_ref()).collect();
        let costliest = *windows.iter().max_by_key(|c| c.unreclaimable_bytes())?;
        Some(ContainerUse {
            oom_kills: windows.iter().map(|c| c.oom_kills).sum(),
            oom_kills_since_launch: windows.iter().map(|c| c.oom_kills_since_launch).max().unwrap_or(0),
            throttled_share: windows.iter().filter_map(|c| c.throttled_share).reduce(f64::max),
            throttled_s: windows.iter().map(|c| c.throttled_s).sum(),
            over_throttle_bound: windows.iter().any(|c| c.over_throttle_bound),
            cpu_s: windows.iter().map(|c| c.cpu_s).sum(),
            workers_fit: windows.iter().filter_map(|c| c.workers_fit).min(),
            ..costliest.clone()
        })
    }

    /// Requests a second it served of an open loop's offer: those answered, and those it was
    /// still answering at the window's end while it kept up (`Sample::answering_at_end`).
    pub fn served_rps(&self) -> f64 {
        self.median(|s| {
            let window = s.window_s.filter(|&w| w > 0.0);
            match (s.answering_at_end, window) {
                (Some(n), Some(w)) => s.rps + n as f64 / w,
                _ => s.rps,
            }
        })
    }

    /// The server's CPU time a request, ms: the median of its windows that measured it.
    pub fn cpu_per_request_ms(&self) -> Option<f64> {
        let v: Vec<f64> = self.samples.iter().filter_map(|s| s.server_cpu_ms_per_request).collect();
        (!v.is_empty()).then(|| median(&v))
    }

    /// The memory figures of the repeat whose workers cost most (the conservative one).
    pub fn memory(&self) -> Option<&MemUse> {
        self.samples.iter().filter_map(|s| s.memory.as_ref()).max_by_key(|m| m.worker_uss_max_kib)
    }

    /// Relative spread of the throughput over the repeats.
    pub fn rps_spread(&self) -> f64 {
        let m = median(&self.samples.iter().map(|s| s.rps).collect::<Vec<_>>());
        if m > 0.0 { self.rps_range() / m } else { 0.0 }
    }

    /// The repeats' highest throughput less their lowest, req/s.
    pub fn rps_range(&self) -> f64 {
        crate::stats::spread(&self.samples.iter().map(|s| s.rps).collect::<Vec<_>>())
    }

    /// The cause, for a failed point.
    pub fn cause(&self) -> Option<&str> {
        match &self.status {
            Status::Failed { cause } => Some(cause),
            Status::Ok => None,
        }
    }
}

/// The far end of a point's latency, over all its windows' requests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tail {
    /// Requests the histograms hold.
    pub requests: u64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

impl Tail {
    /// p99.9 rests on at least this many requests beyond it: fewer, and it is one request
    /// (a single pause). The quick start's 3 windows of 2 s hold about 2,700 requests.
    const BEYOND: u64 = 2;

    /// Whether enough requests were counted for p99.9 to be more than the slowest one or two.
    pub fn resolved(&self) -> bool {
        self.requests >= Self::BEYOND * 1000
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A point whose repeats had these throughputs.
    pub fn point(rps: &[f64]) -> Point {
        let samples = rps.iter().map(|&r| Sample { rps: r, p99_ms: 10.0, ..Sample::default() }).collect();
        Point::measured("t", &Settings::default(), samples, 1.0)
    }

    /// Windows of a shared placement, each warned about its client's share: the combined point
    /// warns once, of the largest share.
    #[test]
    fn a_combined_point_warns_once_of_the_clients_largest_share() {
        use crate::sys::cpus::{CpuSet, Placement};
        let placement = Placement::shared(&CpuSet::allowed());
        let windows: Vec<Point> = [0.42, 0.51, 0.47]
            .iter()
            .map(|&share| {
                let mut p = point(&[100.0]);
                p.placement = Some(placement.clone());
                p.client_share = Some(share);
                p.notes = vec![crate::sys::cpus::shared_client_warning(&placement, share).unwrap(), "other".into()];
                p
            })
            .collect();
        let p = Point::combine("c", &windows).unwrap();
        let warnings: Vec<&String> = p.notes.iter().filter(|n| n.starts_with("the client took ")).collect();
        assert_eq!(warnings.len(), 1, "{:?}", p.notes);
        assert!(warnings[0].starts_with("the client took 51% "), "{}", warnings[0]);
        assert_eq!(p.notes.iter().filter(|n| *n == "other").count(), 1);
    }
}
