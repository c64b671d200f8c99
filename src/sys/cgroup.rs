//! Control groups, the kernel's container limits: the limits a process runs in (read from its
//! cgroup, v2 or v1, the tightest of its ancestors'), a cgroup made with given limits for a
//! launched server, and the kernel's own accounting of it: the memory it charges (anonymous,
//! page cache, socket buffers, kernel memory), OOM kills, CPU throttling.
//!
//! The kernel's charge is what the OOM killer acts on; PSS divides shared pages among their
//! sharers, while the kernel charges a page to the cgroup that touched it first. Both are
//! read: a pool that PSS says fits may still be killed.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// A value this large (v1 writes 2^63 rounded down to a page) means no limit.
const UNLIMITED: u64 = 1 << 60;

/// What a cgroup limits, as read from the kernel or stated in a target file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Limits {
    /// Memory, bytes (v2 memory.max, v1 memory.limit_in_bytes).
    pub memory: Option<u64>,
    /// Swap beyond the memory, bytes (v2 memory.swap.max; v1 memsw minus memory); None: the
    /// kernel's default, which `Cgroup::create` sets to none (as Kubernetes runs pods).
    pub swap: Option<u64>,
    /// CPU quota as a number of CPUs (quota / period): 0.5 is half of one CPU.
    pub cpus: Option<f64>,
    /// The quota's period (default 100 ms).
    pub period: Option<Duration>,
    /// The CPUs the cgroup may run on ("0-3"), when not all.
    pub cpuset: Option<String>,
}

impl Limits {
    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        self.memory.is_some() || self.cpus.is_some() || self.cpuset.is_some()
    }

    /// The tighter of two limits, each field alone (a nested cgroup is bound by its ancestors).
    fn tighter(self, other: Limits) -> Limits {
        fn min<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(if b < a { b } else { a }),
                (a, b) => a.or(b),
            }
        }
        let period = if other.cpus.is_some() && min(self.cpus, other.cpus) == other.cpus {
            other.period
        } else {
            self.period.or(other.period)
        };
        Limits {
            memory: min(self.memory, other.memory),
            swap: min(self.swap, other.swap),
            cpus: min(self.cpus, other.cpus),
            period,
            cpuset: other.cpuset.or(self.cpuset),
        }
    }

    /// "memory 512 MiB, swap none, 1.5 CPUs (quota 150 ms per 100 ms), cpuset 0-1".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(m) = self.memory {
            parts.push(format!("memory {}", crate::input::format_bytes(m)));
        }
        match self.swap {
            Some(0) => parts.push("swap none".into()),
            Some(s) => parts.push(format!("swap {}", crate::input::format_bytes(s))),
            None => {}
        }
        if let Some(c) = self.cpus {
            parts.push(format!("{} CPUs", crate::input::format_decimal(c)));
        }
        if let Some(s) = &self.cpuset {
            parts.push(format!("cpuset {s}"));
        }
        if parts.is_empty() { "no limits".into() } else { parts.join(", ") }
    }

    /// The limits of v2 cgroup directory `leaf`: the tightest of it and its ancestors up to
    /// `root` (the mount point), each read from its files.
    pub fn read_v2(leaf: &Path, root: &Path) -> Limits {
        ancestry(leaf, root).into_iter().fold(Limits::default(), |acc, dir| {
            let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
            let (cpus, period) = read("cpu.max").and_then(|t| parse_cpu_max(&t)).unzip();
            acc.tighter(Limits {
                memory: read("memory.max").and_then(|t| parse_limit(&t)),
                swap: read("memory.swap.max").and_then(|t| parse_limit(&t)),
                cpus,
                period,
                cpuset: read("cpuset.cpus").map(|t| t.trim().to_string()).filter(|s| !s.is_empty()),
            })
        })
    }

    /// The limits of v1 cgroups: the memory controller's directory (and its mount point), the
    /// cpu controller's, and the cpuset's; each the tightest of the directory and its ancestors.
    pub fn read_v1(memory: Option<(&Path, &Path)>, cpu: Option<(&Path, &Path)>, cpuset: Option<&Path>) -> Limits {
        let mut limits = Limits::default();
        for dir in memory.map(|(leaf, root)| ancestry(leaf, root)).unwrap_or_default() {
            let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok().and_then(|t| parse_limit(&t));
            let memory = read("memory.limit_in_bytes");
            let swap = match (read("memory.memsw.limit_in_bytes"), memory) {
                (Some(both), Some(m)) => Some(both.saturating_sub(m)),
                _ => None,
            };
            limits = limits.tighter(Limits { memory, swap, ..Limits::default() });
        }
        for dir in cpu.map(|(leaf, root)| ancestry(leaf, root)).unwrap_or_default() {
            let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok().and_then(|t| t.trim().parse::<i64>().ok());
            if let (Some(quota), Some(period)) = (read("cpu.cfs_quota_us"), read("cpu.cfs_period_us"))
                && quota > 0
                && period > 0
            {
                let cpus = Some(quota as f64 / period as f64);
                let period = Some(Duration::from_micros(period as u64));
                limits = limits.tighter(Limits { cpus, period, ..Limits::default() });
            }
        }
        if let Some(dir) = cpuset {
            let set = std::fs::read_to_string(dir.join("cpuset.cpus")).unwrap_or_default().trim().to_string();
            let all = format!("0-{}", crate::sys::cpus::CpuSet::max_cpus().saturating_sub(1));
            if !set.is_empty() && set != all {
                limits.cpuset = Some(set);
            }
        }
        limits
    }

    /// The limits process `pid` runs in, and where they came from ("cgroup v1
    /// /process_api/ab12 (memory), /(cpu)"). None when its cgroup cannot be read.
    pub fn of_pid(pid: i32) -> Option<(Limits, String)> {
        let mounts = Mounts::read();
        let membership = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        let groups = parse_membership(&membership);
        if let Some(v2) = &mounts.v2
            && mounts.v1.is_empty()
        {
            let path = groups.iter().find(|(h, _, _)| h == "0")?.2.clone();
            let leaf = v2.dir_of(&path);
            return Some((Limits::read_v2(&leaf, &v2.point), format!("cgroup v2 {path}")));
        }
        let find = |controller: &str| -> Option<(PathBuf, PathBuf, String)> {
            let (_, _, path) = groups.iter().find(|(_, cs, _)| cs.split(',').any(|c| c == controller))?;
            let mount = mounts.v1.iter().find(|m| m.controllers.iter().any(|c| c == controller))?;
            Some((mount.dir_of(path), mount.point.clone(), path.clone()))
        };
        let memory = find("memory");
        let cpu = find("cpu");
        let cpuset = find("cpuset");
        let limits = Limits::read_v1(
            memory.as_ref().map(|(l, r, _)| (l.as_path(), r.as_path())),
            cpu.as_ref().map(|(l, r, _)| (l.as_path(), r.as_path())),
            cpuset.as_ref().map(|(l, _, _)| l.as_path()),
        );
        let named = |c: &str, g: &Option<(PathBuf, PathBuf, String)>| g.as_ref().map(|(_, _, p)| format!("{p} ({c})"));
        let from = [named("memory", &memory), named("cpu", &cpu)].into_iter().flatten().collect::<Vec<_>>().join(", ");
        Some((limits, format!("cgroup v1 {from}")))
    }
}

/// `leaf` and each of its ancestors down to `root` included, root first. Only `leaf` when it
/// does not lie under `root`.
fn ancestry(leaf: &Path, root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = leaf.ancestors().take_while(|d| d.starts_with(root)).map(Path::to_path_buf).collect();
    if dirs.is_empty() {
        dirs.push(leaf.to_path_buf());
    }
    dirs.reverse();
    dirs
}

/// A limit file's value: bytes, None for "max" or a value that means no limit.
fn parse_limit(text: &str) -> Option<u64> {
    text.trim().parse::<u64>().ok().filter(|&v| v < UNLIMITED)
}

/// v2 cpu.max ("150000 100000", "max 100000"): CPUs and period; None when unlimited.
fn parse_cpu_max(text: &str) -> Option<(f64, Duration)> {
    let mut fields = text.split_whitespace();
    let quota: u64 = fields.next()?.parse().ok()?;
    let period: u64 = fields.next().and_then(|p| p.parse().ok()).unwrap_or(100_000);
    (quota > 0 && period > 0).then(|| (quota as f64 / period as f64, Duration::from_micros(period)))
}

/// /proc/PID/cgroup: (hierarchy id, controllers, path) per line.
fn parse_membership(text: &str) -> Vec<(String, String, String)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, ':');
            Some((f.next()?.to_string(), f.next()?.to_string(), f.next()?.to_string()))
        })
        .collect()
}

/// A mounted cgroup hierarchy.
#[derive(Debug, Clone)]
struct Mount {
    /// Where it is mounted.
    point: PathBuf,
    /// The cgroup path its mount point shows (not "/" inside a container's namespace).
    root: String,
    controllers: Vec<String>,
}

impl Mount {
    /// The directory under this mount of the cgroup that `groups` (a /proc/PID/cgroup) puts
    /// its process in: the line of this mount's controllers, or v2's "0::" line.
    fn dir_in(&self, groups: &[(String, String, String)]) -> PathBuf {
        let line = groups.iter().find(|(h, cs, _)| match self.controllers.is_empty() {
            true => h == "0",
            false => cs.split(',').any(|c| self.controllers.iter().any(|m| m == c)),
        });
        self.dir_of(line.map_or("/", |g| g.2.as_str()))
    }

    /// The directory of cgroup `path` (as /proc/PID/cgroup names it) under this mount.
    fn dir_of(&self, path: &str) -> PathBuf {
        let relative = path.strip_prefix(self.root.as_str()).unwrap_or(path);
        self.point.join(relative.trim_start_matches('/'))
    }
}

/// The cgroup mounts of this process's mount namespace.
#[derive(Debug, Clone, Default)]
struct Mounts {
    v2: Option<Mount>,
    v1: Vec<Mount>,
}

impl Mounts {
    fn read() -> Mounts {
        Mounts::parse(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
    }

    /// mountinfo: "36 35 0:30 /root /mnt/point rw,... - cgroup cgroup rw,memory".
    fn parse(text: &str) -> Mounts {
        let mut mounts = Mounts::default();
        for line in text.lines() {
            let Some((before, after)) = line.split_once(" - ") else { continue };
            let fields: Vec<&str> = before.split_whitespace().collect();
            let rest: Vec<&str> = after.split_whitespace().collect();
            let (Some(root), Some(point), Some(fstype)) = (fields.get(3), fields.get(4), rest.first()) else {
                continue;
            };
            let point = PathBuf::from(unescape_octal(point));
            let root = unescape_octal(root);
            match *fstype {
                "cgroup2" => mounts.v2 = Some(Mount { point, root, controllers: Vec::new() }),
                "cgroup" => {
                    let options = rest.get(2).copied().unwrap_or("");
                    let controllers = options.split(',').filter(|o| !matches!(*o, "rw" | "ro")).map(str::to_string);
                    mounts.v1.push(Mount { point, root, controllers: controllers.collect() });
                }
                _ => {}
            }
        }
        mounts
    }
}

/// mountinfo escapes spaces and such as \040.
fn unescape_octal(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let code: String = chars.clone().take(3).collect();
            if let Ok(b) = u8::from_str_radix(&code, 8) {
                out.push(b as char);
                chars.nth(2);
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// The kernel's accounting of a cgroup at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    /// The memory charged now, bytes (what the limit is enforced on).
    pub charge: u64,
    /// The most ever charged since the cgroup was made, bytes.
    pub peak: Option<u64>,
    /// Of the charge: anonymous memory, page cache, socket buffers, kernel memory.
    pub anon: u64,
    pub file: u64,
    pub sock: u64,
    pub kernel: u64,
    /// Processes the OOM killer killed in it so far.
    pub oom_kills: u64,
    /// CPU quota periods so far, and those in which the cgroup was throttled.
    pub periods: u64,
    pub throttled_periods: u64,
    /// Time its processes waited, throttled, microseconds.
    pub throttled_us: u64,
    /// CPU time its processes used, microseconds.
    pub cpu_us: u64,
}

/// Which kind of hierarchy a cgroup lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// A cgroup webtune made: one directory (v2) or one per controller (v1: memory, cpu). Removed
/// by `remove` (its processes killed first) and on drop.
#[derive(Debug)]
pub struct Cgroup {
    pub version: Version,
    /// v2: the one directory; v1: the memory controller's, the cpu controller's, and cpuacct's
    /// when it is mounted apart.
    pub dirs: Vec<PathBuf>,
    pub limits: Limits,
    removed: bool,
}

/// The name prefix of every cgroup webtune makes: the next run's clean-up finds them by it.
pub const PREFIX: &str = "webtune-";

impl Cgroup {
    /// Makes cgroup `name` (under webtune's own cgroup in each hierarchy, so nested in the
    /// limits webtune itself runs in) with `limits`. An error says, in one line, why it could not.
    pub fn create(name: &str, limits: &Limits) -> Result<Cgroup, String> {
        let name = format!("{PREFIX}{name}");
        let mounts = Mounts::read();
        let own = parse_membership(&std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default());
        if let Some(v2) = mounts.v2.as_ref().filter(|_| mounts.v1.iter().all(|m| m.controllers.is_empty())) {
            return Cgroup::create_v2(&v2.dir_in(&own), &v2.point, &name, limits);
        }
        let mut dirs = Vec::new();
        // cpuacct counts the CPU time: with cpu when mounted together, else a third directory.
        let cpuacct_apart = mounts
            .v1
            .iter()
            .any(|m| m.controllers.iter().any(|c| c == "cpuacct") && !m.controllers.iter().any(|c| c == "cpu"));
        let controllers: &[&str] = if cpuacct_apart { &["memory", "cpu", "cpuacct"] } else { &["memory", "cpu"] };
        for &controller in controllers {
            let mount = mounts
                .v1
                .iter()
                .find(|m| m.controllers.iter().any(|c| c == controller))
                .ok_or_else(|| format!("no cgroup {controller} controller is mounted"))?;
            dirs.push(mount.dir_in(&own).join(&name));
        }
        let mut cgroup = Cgroup { version: Version::V1, dirs, limits: limits.clone(), removed: false };
        for dir in cgroup.dirs.clone() {
            if let Err(e) = std::fs::create_dir(&dir) {
                cgroup.remove();
                return Err(format!("cannot make cgroup {}: {e}", dir.display()));
            }
        }
        if let Err(e) = cgroup.write_v1_limits() {
            cgroup.remove();
            return Err(e);
        }
        Ok(cgroup)
    }

    /// v2: a child of webtune's own cgroup, the memory and cpu controllers enabled for it
    /// (at the mount's root when webtune's own cgroup holds processes, which v2 forbids there).
    fn create_v2(own: &Path, root: &Path, name: &str, limits: &Limits) -> Result<Cgroup, String> {
        let enable = |parent: &Path| write(&parent.join("cgroup.subtree_control"), "+memory +cpu");
        let parent = if enable(own).is_ok() { own.to_path_buf() } else { root.to_path_buf() };
        if parent == root {
            enable(root).map_err(|e| format!("cannot enable the memory and cpu controllers: {e}"))?;
        }
        let dir = parent.join(name);
        std::fs::create_dir(&dir).map_err(|e| format!("cannot make cgroup {}: {e}", dir.display()))?;
        let mut cgroup =
            Cgroup { version: Version::V2, dirs: vec![dir.clone()], limits: limits.clone(), removed: false };
        let set = || -> Result<(), String> {
            if let Some(m) = limits.memory {
                write(&dir.join("memory.max"), &m.to_string())?;
                // Without a stated swap, none: the limit is the memory the server may hold.
                let _ = write(&dir.join("memory.swap.max"), &limits.swap.unwrap_or(0).to_string());
            }
            if let Some(c) = limits.cpus {
                let period = limits.period.unwrap_or(Duration::from_millis(100)).as_micros() as u64;
                write(&dir.join("cpu.max"), &format!("{} {period}", (c * period as f64).round() as u64))?;
            }
            Ok(())
        };
        if let Err(e) = set() {
            cgroup.remove();
            return Err(e);
        }
        Ok(cgroup)
    }

    fn write_v1_limits(&self) -> Result<(), String> {
        let (memory, cpu) = (&self.dirs[0], &self.dirs[1]);
        if let Some(m) = self.limits.memory {
            write(&memory.join("memory.limit_in_bytes"), &m.to_string())?;
            let memsw = memory.join("memory.memsw.limit_in_bytes");
            if memsw.exists() {
                write(&memsw, &(m + self.limits.swap.unwrap_or(0)).to_string())?;
            }
        }
        if let Some(c) = self.limits.cpus {
            let period = self.limits.period.unwrap_or(Duration::from_millis(100)).as_micros() as u64;
            write(&cpu.join("cpu.cfs_period_us"), &period.to_string())?;
            write(&cpu.join("cpu.cfs_quota_us"), &((c * period as f64).round() as u64).max(1000).to_string())?;
        }
        Ok(())
    }

    /// The files a process writes "0" into to join the cgroup (every hierarchy's).
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.join("cgroup.procs")).collect()
    }

    /// The processes in it now.
    pub fn pids(&self) -> Vec<i32> {
        let mut pids: Vec<i32> = self
            .procs_files()
            .iter()
            .flat_map(|f| {
                std::fs::read_to_string(f)
                    .unwrap_or_default()
                    .lines()
                    .filter_map(|l| l.parse().ok())
                    .collect::<Vec<_>>()
            })
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// The kernel's accounting now.
    pub fn usage(&self) -> Usage {
        match self.version {
            Version::V2 => usage_v2(&self.dirs[0]),
            Version::V1 => usage_v1(&self.dirs[0], &self.dirs[1], self.dirs.get(2).unwrap_or(&self.dirs[1])),
        }
    }

    /// Kills what is left in it and removes it. True when every directory is gone.
    pub fn remove(&mut self) -> bool {
        self.removed = true;
        remove_dirs(&self.dirs)
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        if !self.removed {
            self.remove();
        }
    }
}

/// SIGKILL to every process in the directories, then rmdir each (tried for up to 2 s: the
/// kernel keeps a cgroup busy until its last process is reaped). True when all are gone.
pub fn remove_dirs(dirs: &[PathBuf]) -> bool {
    use nix::sys::signal::{Signal, kill};
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    loop {
        let mut left = false;
        for dir in dirs.iter().filter(|d| d.exists()) {
            for pid in std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default().lines() {
                if let Ok(pid) = pid.parse::<i32>() {
                    let _ = kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
                }
            }
            if std::fs::remove_dir(dir).is_err() && dir.exists() {
                left = true;
            }
        }
        if !left {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every cgroup directory webtune made whose name says it belongs to run `run` (a run
/// directory's name): for the clean-up after a webtune that was killed.
pub fn dirs_named(name: &str) -> Vec<PathBuf> {
    let name = format!("{PREFIX}{name}");
    let mounts = Mounts::read();
    let own = parse_membership(&std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default());
    let mut candidates = Vec::new();
    if let Some(v2) = &mounts.v2 {
        candidates.push(v2.dir_in(&own).join(&name));
        candidates.push(v2.point.join(&name));
    }
    candidates.extend(mounts.v1.iter().map(|m| m.dir_in(&own).join(&name)));
    candidates.sort();
    candidates.dedup();
    candidates.into_iter().filter(|d| d.is_dir()).collect()
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("cannot write {value:?} to {}: {e}", path.display()))
}

/// "key value" lines (memory.stat, cpu.stat, memory.events, memory.oom_control).
fn keyed(path: &Path) -> std::collections::HashMap<String, u64> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn usage_v2(dir: &Path) -> Usage {
    let stat = keyed(&dir.join("memory.stat"));
    let cpu = keyed(&dir.join("cpu.stat"));
    let get = |m: &std::collections::HashMap<String, u64>, k: &str| m.get(k).copied().unwrap_or(0);
    Usage {
        charge: read_u64(&dir.join("memory.current")).unwrap_or(0),
        peak: read_u64(&dir.join("memory.peak")),
        anon: get(&stat, "anon"),
        file: get(&stat, "file"),
        sock: get(&stat, "sock"),
        kernel: get(&stat, "kernel").max(get(&stat, "slab") + get(&stat, "kernel_stack") + get(&stat, "pagetables")),
        oom_kills: get(&keyed(&dir.join("memory.events")), "oom_kill"),
        periods: get(&cpu, "nr_periods"),
        throttled_periods: get(&cpu, "nr_throttled"),
        throttled_us: get(&cpu, "throttled_usec"),
        cpu_us: get(&cpu, "usage_usec"),
    }
}

fn usage_v1(memory: &Path, cpu: &Path, cpuacct: &Path) -> Usage {
    let stat = keyed(&memory.join("memory.stat"));
    let cpu_stat = keyed(&cpu.join("cpu.stat"));
    let get = |m: &std::collections::HashMap<String, u64>, k: &str| m.get(k).copied().unwrap_or(0);
    let cpu_ns = read_u64(&cpuacct.join("cpuacct.usage")).unwrap_or(0);
    Usage {
        charge: read_u64(&memory.join("memory.usage_in_bytes")).unwrap_or(0),
        peak: read_u64(&memory.join("memory.max_usage_in_bytes")),
        anon: get(&stat, "rss") + get(&stat, "shmem").min(get(&stat, "cache")),
        file: get(&stat, "cache").saturating_sub(get(&stat, "shmem")),
        sock: read_u64(&memory.join("memory.kmem.tcp.usage_in_bytes")).unwrap_or(0),
        kernel: read_u64(&memory.join("memory.kmem.usage_in_bytes")).unwrap_or(0),
        oom_kills: get(&keyed(&memory.join("memory.oom_control")), "oom_kill"),
        periods: get(&cpu_stat, "nr_periods"),
        throttled_periods: get(&cpu_stat, "nr_throttled"),
        throttled_us: get(&cpu_stat, "throttled_time") / 1000,
        cpu_us: cpu_ns / 1000,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_names_both_kinds_of_hierarchy() {
        let m = Mounts::parse(
            "30 25 0:26 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n\
             31 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n\
             32 25 0:28 /kubepods/pod1 /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate\n",
        );
        assert_eq!(m.v1.len(), 2);
        assert_eq!(m.v1[1].controllers, ["cpu", "cpuacct"]);
        let v2 = m.v2.unwrap();
        assert_eq!(v2.dir_of("/kubepods/pod1/c1"), PathBuf::from("/sys/fs/cgroup/unified/c1"));
        assert_eq!(m.v1[0].dir_of("/a/b"), PathBuf::from("/sys/fs/cgroup/memory/a/b"));
    }

    #[test]
    fn v2_limits_are_the_tightest_of_the_cgroup_and_its_ancestors() {
        let root = tempfile::tempdir().unwrap();
        let pod = root.path().join("kubepods/pod1");
        let leaf = pod.join("c1");
        std::fs::create_dir_all(&leaf).unwrap();
        let put = |d: &Path, f: &str, v: &str| std::fs::write(d.join(f), v).unwrap();
        put(&pod, "memory.max", "536870912\n");
        put(&pod, "cpu.max", "max 100000\n");
        put(&leaf, "memory.max", "max\n");
        put(&leaf, "memory.swap.max", "0\n");
        put(&leaf, "cpu.max", "150000 100000\n");
        put(&leaf, "cpuset.cpus", "0-1\n");
        let l = Limits::read_v2(&leaf, root.path());
        assert_eq!(l.memory, Some(512 << 20));
        assert_eq!(l.swap, Some(0));
        assert_eq!((l.cpus, l.period), (Some(1.5), Some(Duration::from_millis(100))));
        assert_eq!(l.cpuset.as_deref(), Some("0-1"));
        assert_eq!(l.describe(), "memory 512MiB, swap none, 1.5 CPUs, cpuset 0-1");
        // A tighter quota above wins.
        put(&pod, "cpu.max", "50000 100000\n");
        assert_eq!(Limits::read_v2(&leaf, root.path()).cpus, Some(0.5));
    }

    #[test]
    fn limit_files_read_as_the_kernel_writes_them() {
        assert_eq!(parse_limit("max\n"), None);
        assert_eq!(parse_limit("9223372036854771712\n"), None);
        assert_eq!(parse_limit("536870912\n"), Some(512 << 20));
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cpu_max("150000 100000\n"), Some((1.5, Duration::from_millis(100))));
        assert_eq!(crate::input::format_decimal(0.5), "0.5");
        assert_eq!(crate::input::format_decimal(2.0), "2");
    }
}
