//! The operating system facts the tool needs: its own CPU use, the CPUs it and the server may
//! use (`cpus`), the container limits it and the server run in (`cgroup`), its file-descriptor
//! limit, and whether the user asked it to stop.

pub mod bounded;
pub mod cgroup;
pub mod cpus;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use nix::sys::resource::{Resource, UsageWho, getrlimit, getrusage, setrlimit};

/// User and system CPU time this process has used so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuTimes {
    pub user: Duration,
    pub sys: Duration,
}

impl CpuTimes {
    /// This process's CPU times so far, all threads (zero when getrusage fails).
    pub fn now() -> CpuTimes {
        let to_dur = |tv: nix::sys::time::TimeVal| {
            Duration::from_secs(tv.tv_sec() as u64) + Duration::from_micros(tv.tv_usec() as u64)
        };
        match getrusage(UsageWho::RUSAGE_SELF) {
            Ok(u) => CpuTimes { user: to_dur(u.user_time()), sys: to_dur(u.system_time()) },
            Err(_) => CpuTimes::default(),
        }
    }

    /// The CPU time used between `earlier` and these times.
    pub fn since(self, earlier: CpuTimes) -> CpuTimes {
        CpuTimes { user: self.user.saturating_sub(earlier.user), sys: self.sys.saturating_sub(earlier.sys) }
    }
}

/// Cores this process may run on (its CPU affinity, so `taskset -c 0` counts as one).
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Raises the soft RLIMIT_NOFILE to at least `needed` descriptors (up to the hard limit).
/// Errors say what the limit is and how to raise it.
pub fn ensure_fd_limit(needed: u64) -> anyhow::Result<()> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft >= needed {
        return Ok(());
    }
    if hard < needed {
        anyhow::bail!(
            "{needed} file descriptors are needed but the hard limit is {hard}; raise it (ulimit -Hn, or LimitNOFILE) or use fewer connections"
        );
    }
    setrlimit(Resource::RLIMIT_NOFILE, needed, hard)
        .map_err(|e| anyhow::anyhow!("cannot raise the open-file limit from {soft} to {needed}: {e}"))
}

/// The flag SIGINT, SIGTERM and SIGHUP set. One handler for the whole process (a second
/// cannot be installed): every command and every run in it watch the same flag.
pub fn interrupt_flag() -> Arc<AtomicBool> {
    INTERRUPT
        .get_or_init(|| {
            let flag = Arc::new(AtomicBool::new(false));
            let on_signal = flag.clone();
            // Without a handler (another library installed one) the signal keeps its default.
            let _ = ctrlc::set_handler(move || on_signal.store(true, Ordering::SeqCst));
            flag
        })
        .clone()
}

static INTERRUPT: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// The interrupt flag when a command installed the handler, else a flag never set: for code
/// deep in a library (a status page read) that must not install a handler of its own.
pub fn interrupt_if_installed() -> &'static AtomicBool {
    static NEVER: AtomicBool = AtomicBool::new(false);
    INTERRUPT.get().map_or(&NEVER, |f| f.as_ref())
}

/// Whether a stop was asked for (installs the handler on first use).
pub fn interrupted() -> bool {
    interrupt_flag().load(Ordering::SeqCst)
}

/// The IP addresses of this machine's network interfaces (empty when they cannot be read).
pub fn local_addresses() -> Vec<std::net::IpAddr> {
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else { return Vec::new() };
    addrs
        .filter_map(|a| a.address)
        .filter_map(|a| match (a.as_sockaddr_in(), a.as_sockaddr_in6()) {
            (Some(v4), _) => Some(std::net::IpAddr::V4(v4.ip())),
            (_, Some(v6)) => Some(std::net::IpAddr::V6(v6.ip())),
            _ => None,
        })
        .collect()
}
