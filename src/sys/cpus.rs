//! CPU placement: sets of CPUs in taskset's cpulist syntax ("0-3,6"), the CPUs this process
//! may use, confining a thread (or a child before it runs the server) to a set, and where the
//! server and the client run on one machine. Seed 001, section 1.6: "you should not run the
//! clients and the server on the same machine"; when one machine is all there is, the client
//! gets cores of its own, and where it cannot, the report says what it took.

use std::fmt;

use nix::sched::{CpuSet as NixCpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::input::InputError;

/// The longest cpulist text accepted: room for every CPU of a very large machine, written out.
const MAX_CPULIST: usize = 8192;

/// Machines with at least this many usable (physical) cores give the client cores of its own
/// by default.
pub const DISJOINT_FROM: usize = 4;

/// A non-empty set of CPU numbers, in increasing order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CpuSet(Vec<usize>);

/// `name: ` in front of a message, when there is a name.
fn named(name: &str, message: String) -> InputError {
    if name.is_empty() { InputError(message) } else { InputError(format!("{name}: {message}")) }
}

impl CpuSet {
    /// The most CPUs the kernel's affinity mask holds (CPU_SETSIZE): the bound on every number.
    pub fn max_cpus() -> usize {
        NixCpuSet::count()
    }

    /// "0-3,6", "2", "0,2-3" (taskset -c). Every number is below `max_cpus`.
    pub fn parse(name: &str, text: &str) -> Result<CpuSet, InputError> {
        let t = text.trim();
        let bad = |why: String| named(name, format!("bad CPU list {t:?}: {why}"));
        if t.len() > MAX_CPULIST {
            return Err(bad(format!("longer than {MAX_CPULIST} characters")));
        }
        let max = Self::max_cpus();
        let number = |s: &str| -> Result<usize, InputError> {
            let n: usize = s
                .trim()
                .parse()
                .map_err(|_| bad(format!("{:?} is not a CPU number (expected e.g. 0-3,6)", s.trim())))?;
            if n >= max {
                return Err(bad(format!("CPU {n} is beyond the largest possible ({})", max - 1)));
            }
            Ok(n)
        };
        let mut cpus = Vec::new();
        for part in t.split(',') {
            match part.split_once('-') {
                Some((lo, hi)) => {
                    let (lo, hi) = (number(lo)?, number(hi)?);
                    if lo > hi {
                        return Err(bad(format!("the range {lo}-{hi} runs backwards")));
                    }
                    cpus.extend(lo..=hi);
                }
                None => cpus.push(number(part)?),
            }
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuSet(cpus))
    }

    /// The CPUs of `cpus` (None when there are none).
    pub fn of(cpus: impl IntoIterator<Item = usize>) -> Option<CpuSet> {
        let mut v: Vec<usize> = cpus.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        (!v.is_empty()).then_some(CpuSet(v))
    }

    /// How many CPUs.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Never true: a set has at least one CPU (clippy's companion of `len`).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The CPU numbers, increasing.
    pub fn cpus(&self) -> &[usize] {
        &self.0
    }

    /// Whether the two sets have a CPU in common.
    pub fn intersects(&self, other: &CpuSet) -> bool {
        self.0.iter().any(|c| other.0.binary_search(c).is_ok())
    }

    /// Every CPU of either set.
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        CpuSet::of(self.0.iter().chain(&other.0).copied()).unwrap_or_else(|| self.clone())
    }

    /// The CPUs of this set that are not in `other` (None when none is left).
    pub fn without(&self, other: &CpuSet) -> Option<CpuSet> {
        CpuSet::of(self.0.iter().copied().filter(|c| other.0.binary_search(c).is_err()))
    }

    /// The CPUs the calling thread may run on (the whole process's, until a thread confines
    /// itself); one CPU when the kernel cannot say.
    pub fn allowed() -> CpuSet {
        sched_getaffinity(Pid::from_raw(0))
            .ok()
            .and_then(|set| CpuSet::of((0..Self::max_cpus()).filter(|&c| set.is_set(c).unwrap_or(false))))
            .unwrap_or(CpuSet(vec![0]))
    }

    /// The machine's online CPUs (/sys/devices/system/cpu/online), when readable.
    pub fn online() -> Option<CpuSet> {
        let text = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
        CpuSet::parse("", &text).ok()
    }

    /// The CPUs process (or thread) `pid` may run on, from its /proc status.
    pub fn of_process(pid: i32) -> Option<CpuSet> {
        parse_status(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
    }

    /// The kernel's mask for this set: built before a fork, so that the child only makes the
    /// system call (pre_exec may not allocate).
    pub fn mask(&self) -> NixCpuSet {
        let mut set = NixCpuSet::new();
        for &c in &self.0 {
            // Numbers are below max_cpus by construction.
            let _ = set.set(c);
        }
        set
    }

    /// Confines the calling thread to this set; threads it starts afterwards inherit it.
    pub fn confine_this_thread(&self) -> std::io::Result<()> {
        sched_setaffinity(Pid::from_raw(0), &self.mask()).map_err(std::io::Error::from)
    }

    /// An error when a CPU of this set is not one this process may use: `name` is where the
    /// set was given ("--cpus server").
    pub fn check_usable(&self, name: &str, allowed: &CpuSet) -> Result<(), InputError> {
        let Some(missing) = self.without(allowed) else { return Ok(()) };
        let online = CpuSet::online();
        let first = missing.0[0];
        let why = match &online {
            Some(on) if on.0.binary_search(&first).is_err() => {
                format!("this machine has no CPU {first} (online: {on})")
            }
            _ => format!("CPU {first} is not allowed to this process (it may use {allowed})"),
        };
        Err(named(name, why))
    }
}

impl fmt::Display for CpuSet {
    /// Ranges collapsed, as the kernel writes Cpus_allowed_list: "0-3,6".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut i = 0;
        let mut first = true;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end + 1 {
                i += 1;
                end += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if end > start {
                write!(f, "{start}-{end}")?
            } else {
                write!(f, "{start}")?
            }
            i += 1;
        }
        Ok(())
    }
}

impl Serialize for CpuSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<CpuSet, D::Error> {
        /// `client = "0-1"` or `client = 0` in a target file.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Text {
            Str(String),
            Int(u64),
        }
        let text = match Text::deserialize(d)? {
            Text::Str(s) => s,
            Text::Int(i) => i.to_string(),
        };
        CpuSet::parse("", &text).map_err(serde::de::Error::custom)
    }
}

/// The CPUs of `allowed` grouped by physical core (/sys/devices/system/cpu/cpuN/topology/
/// thread_siblings_list), cores in the order of their lowest CPU; a CPU whose siblings cannot
/// be read is a core of its own.
fn physical_cores(allowed: &CpuSet) -> Vec<CpuSet> {
    let mut cores: Vec<CpuSet> = Vec::new();
    for &cpu in &allowed.0 {
        if cores.iter().any(|c| c.0.contains(&cpu)) {
            continue;
        }
        let path = format!("/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list");
        let siblings = std::fs::read_to_string(path).ok().and_then(|t| CpuSet::parse("", &t).ok());
        let core = siblings
            .and_then(|s| CpuSet::of(s.0.into_iter().filter(|c| allowed.0.binary_search(c).is_ok())))
            .unwrap_or(CpuSet(vec![cpu]));
        cores.push(core);
    }
    cores
}

/// Cpus_allowed_list from /proc/PID/status (or /proc/PID/task/TID/status) text.
pub fn parse_status(status: &str) -> Option<CpuSet> {
    let line = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    CpuSet::parse("", line).ok()
}

/// Where the server and the client (webtune's engine) run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The server's CPUs; None when webtune did not start the server and could not find it
    /// on this machine (`bench` against another host).
    pub server: Option<CpuSet>,
    /// The engine's CPUs.
    pub client: CpuSet,
    /// The server and the client can run on the same CPUs: each takes CPU from the other, and
    /// the client's share of it is reported.
    pub shared: bool,
}

impl Placement {
    /// Where the server and the client run when nobody said, on this machine's cores (the
    /// hyperthreads of one core stay together: a client on one thread of a core would take
    /// the server's execution units through the other). See `default_on`.
    pub fn default_for(allowed: &CpuSet) -> Placement {
        Placement::default_on(&physical_cores(allowed))
    }

    /// The default on `cores` (each the CPUs of one physical core, in order): with
    /// `DISJOINT_FROM` or more cores, about a quarter of them (at least one, the lowest
    /// numbered) for the client and the rest for the server; with fewer, everything shared
    /// (two sets of one core would halve the server).
    pub fn default_on(cores: &[CpuSet]) -> Placement {
        let all = CpuSet::of(cores.iter().flat_map(|c| c.0.iter().copied())).unwrap_or(CpuSet(vec![0]));
        let n = cores.len();
        if n < DISJOINT_FROM {
            return Placement::shared(&all);
        }
        let client_cores = ((n as f64 / 4.0).round() as usize).max(1);
        let pick = |range: &[CpuSet]| CpuSet::of(range.iter().flat_map(|c| c.0.iter().copied()));
        match (pick(&cores[..client_cores]), pick(&cores[client_cores..])) {
            (Some(client), Some(server)) => Placement { server: Some(server), client, shared: false },
            _ => Placement::shared(&all),
        }
    }

    /// Both on every CPU of `cpus`.
    pub fn shared(cpus: &CpuSet) -> Placement {
        Placement { server: Some(cpus.clone()), client: cpus.clone(), shared: true }
    }

    /// Every CPU either side may use: the cores a share of "the machine" is counted against.
    pub fn cores(&self) -> usize {
        self.server.as_ref().map_or(self.client.len(), |s| s.union(&self.client).len())
    }

    /// "server 1, client 0 (apart)" or "server and client share 0-1".
    pub fn describe(&self) -> String {
        match &self.server {
            Some(s) if self.shared && *s == self.client => format!("server and client share CPUs {s}"),
            Some(s) if self.shared => format!("server on CPUs {s}, client on {}, overlapping", self.client),
            Some(s) => format!("server on CPUs {s}, client on {} (apart)", self.client),
            None if self.shared => format!("client on CPUs {}, server on this machine (its CPUs unknown)", self.client),
            None => format!("client on CPUs {}, server not on this machine", self.client),
        }
    }
}

/// The share of the machine's CPU (0-1) above which a client sharing the server's CPUs is
/// warned about.
pub const SHARED_CLIENT_WARNING: f64 = 0.10;

/// How that warning starts (combined points keep one, of the largest share).
pub const SHARED_CLIENT_WARNING_START: &str = "the client took ";

/// The warning for a client that shared the server's CPUs and took `share` (0-1) of them, when
/// it took more than `SHARED_CLIENT_WARNING`.
pub fn shared_client_warning(placement: &Placement, share: f64) -> Option<String> {
    (placement.shared && share > SHARED_CLIENT_WARNING).then(|| {
        format!(
            "{SHARED_CLIENT_WARNING_START}{:.0}% of the CPU it shares with the server ({}): the client should not run on the server's CPUs, whose work it takes and slows; give them apart CPUs (--cpus server=...,client=...) or load from other machines",
            share * 100.0,
            placement.describe()
        )
    })
}

/// A placement as asked for (--cpus or a target file's [placement]): sets, or "shared", or
/// nothing (the default for this machine).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlacementSpec {
    pub server: Option<CpuSet>,
    pub client: Option<CpuSet>,
    /// Server and client on every CPU this process may use.
    #[serde(default)]
    pub shared: bool,
}

impl PlacementSpec {
    /// "server=2-7,client=0-1", "client=0", "shared". A CPU list's commas go on until the next
    /// `name=`.
    pub fn parse(name: &str, text: &str) -> Result<PlacementSpec, InputError> {
        let t = text.trim();
        if t.len() > 2 * MAX_CPULIST {
            return Err(named(name, "too long".into()));
        }
        if t == "shared" {
            return Ok(PlacementSpec { shared: true, ..PlacementSpec::default() });
        }
        let expected = "expected server=CPUS,client=CPUS (e.g. server=2-7,client=0-1) or shared";
        let mut spec = PlacementSpec::default();
        let mut current: Option<(&str, String)> = None;
        let mut sets: Vec<(&str, String)> = Vec::new();
        for part in t.split(',') {
            match part.split_once('=') {
                Some((role, list)) => {
                    sets.extend(current.take());
                    current = Some((role.trim(), list.trim().to_string()));
                }
                None => match &mut current {
                    Some((_, list)) => {
                        list.push(',');
                        list.push_str(part.trim());
                    }
                    None => return Err(named(name, format!("bad placement {t:?}: {expected}"))),
                },
            }
        }
        sets.extend(current);
        for (role, list) in sets {
            let slot = match role {
                "server" => &mut spec.server,
                "client" => &mut spec.client,
                other => return Err(named(name, format!("bad placement {t:?}: unknown role {other:?}; {expected}"))),
            };
            if slot.is_some() {
                return Err(named(name, format!("bad placement {t:?}: {role} given twice")));
            }
            *slot = Some(CpuSet::parse(format!("{name} {role}").trim_start(), &list)?);
        }
        Ok(spec)
    }

    /// The placement on a machine where this process may use `allowed`: the sets given,
    /// checked; a side not given gets the other CPUs; nothing given, the default.
    pub fn resolve(&self, name: &str, allowed: &CpuSet) -> Result<Placement, InputError> {
        let role = |r: &str| if name.is_empty() { r.to_string() } else { format!("{name} {r}") };
        if self.shared {
            if self.server.is_some() || self.client.is_some() {
                return Err(named(name, "shared puts both on every CPU: give it without server= or client=".into()));
            }
            return Ok(Placement::shared(allowed));
        }
        if let Some(s) = &self.server {
            s.check_usable(&role("server"), allowed)?;
        }
        if let Some(c) = &self.client {
            c.check_usable(&role("client"), allowed)?;
        }
        let rest = |given: &CpuSet, other: &str| {
            allowed.without(given).ok_or_else(|| {
                named(
                    name,
                    format!(
                        "{given} leaves no CPU for the {other} (this process may use {allowed}): give {other}= too, or shared"
                    ),
                )
            })
        };
        let (server, client) = match (&self.server, &self.client) {
            (Some(s), Some(c)) => (s.clone(), c.clone()),
            (Some(s), None) => (s.clone(), rest(s, "client")?),
            (None, Some(c)) => (rest(c, "server")?, c.clone()),
            (None, None) => return Ok(Placement::default_for(allowed)),
        };
        let shared = server.intersects(&client);
        Ok(Placement { server: Some(server), client, shared })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str) -> CpuSet {
        CpuSet::parse("", text).unwrap()
    }

    #[test]
    fn cpulists_parse_as_taskset_and_print_as_the_kernel() {
        assert_eq!(set("0-3,6").cpus(), [0, 1, 2, 3, 6]);
        assert_eq!(set(" 6,0-3,2 ").to_string(), "0-3,6");
        assert_eq!(set("5").to_string(), "5");
        assert_eq!(set("0,1,2,4,5,7").to_string(), "0-2,4-5,7");
        let e = CpuSet::parse("--cpus client", "3-1").unwrap_err().0;
        assert_eq!(e, "--cpus client: bad CPU list \"3-1\": the range 3-1 runs backwards");
        assert!(CpuSet::parse("", "").is_err());
        assert!(CpuSet::parse("", "a-b").is_err());
        assert!(CpuSet::parse("", "0-99999999999999999999").is_err());
        let e = CpuSet::parse("", "0-100000").unwrap_err().0;
        assert!(e.contains("beyond the largest possible"), "{e}");
        assert_eq!(parse_status("Name:\tx\nCpus_allowed_list:\t1,3-4\n"), Some(set("1,3-4")));
    }

    #[test]
    fn placements_parse_with_commas_inside_the_lists() {
        let p = PlacementSpec::parse("--cpus", "server=2-7,9,client=0-1").unwrap();
        assert_eq!(p.server, Some(set("2-7,9")));
        assert_eq!(p.client, Some(set("0-1")));
        assert!(PlacementSpec::parse("--cpus", "shared").unwrap().shared);
        let e = PlacementSpec::parse("--cpus", "2-7").unwrap_err().0;
        assert!(e.starts_with("--cpus: bad placement \"2-7\": expected server=CPUS,client=CPUS"), "{e}");
        let e = PlacementSpec::parse("--cpus", "engine=1").unwrap_err().0;
        assert!(e.contains("unknown role \"engine\""), "{e}");
        let e = PlacementSpec::parse("--cpus", "client=1,client=2").unwrap_err().0;
        assert!(e.contains("client given twice"), "{e}");
        let e = PlacementSpec::parse("--cpus", "client=x").unwrap_err().0;
        assert!(e.starts_with("--cpus client: bad CPU list \"x\""), "{e}");
    }

    /// Each CPU a core of its own.
    fn singles(text: &str) -> Vec<CpuSet> {
        set(text).0.into_iter().map(|c| CpuSet(vec![c])).collect()
    }

    #[test]
    fn the_default_gives_the_client_a_quarter_from_four_cores_and_shares_below() {
        let two = Placement::default_on(&singles("0-1"));
        assert_eq!((two.server.as_ref(), &two.client, two.shared), (Some(&set("0-1")), &set("0-1"), true));
        let four = Placement::default_on(&singles("0-3"));
        assert_eq!((four.server.unwrap(), four.client, four.shared), (set("1-3"), set("0"), false));
        let eight = Placement::default_on(&singles("0-7"));
        assert_eq!((eight.server.unwrap(), eight.client), (set("2-7"), set("0-1")));
        // Allowed CPUs need not start at 0 or be contiguous.
        let odd = Placement::default_on(&[set("4"), set("5"), set("8"), set("9"), set("12")]);
        assert_eq!((odd.server.unwrap(), odd.client), (set("5,8-9,12"), set("4")));
        // Hyperthreads: 4 cores of 2 threads (siblings 0,4 1,5 2,6 3,7): the client gets a whole
        // core, never one thread of a core the server runs on.
        let smt = Placement::default_on(&[set("0,4"), set("1,5"), set("2,6"), set("3,7")]);
        assert_eq!((smt.server.unwrap(), smt.client, smt.shared), (set("1-3,5-7"), set("0,4"), false));
        // 2 cores of 2 threads: 2 cores, shared.
        assert!(Placement::default_on(&[set("0-1"), set("2-3")]).shared);
    }

    #[test]
    fn resolving_checks_the_cpus_and_fills_the_side_not_given() {
        let allowed = set("0-3");
        let p = PlacementSpec::parse("", "client=0").unwrap().resolve("--cpus", &allowed).unwrap();
        assert_eq!((p.server.unwrap(), p.client, p.shared), (set("1-3"), set("0"), false));
        let p = PlacementSpec::parse("", "server=0-2,client=2-3").unwrap().resolve("--cpus", &allowed).unwrap();
        assert!(p.shared, "overlapping sets share");
        let e = PlacementSpec::parse("", "server=0-3").unwrap().resolve("--cpus", &allowed).unwrap_err().0;
        assert!(e.starts_with("--cpus: 0-3 leaves no CPU for the client"), "{e}");
        let big = CpuSet::max_cpus() - 1;
        let e = PlacementSpec::parse("", &format!("client={big}")).unwrap().resolve("--cpus", &allowed).unwrap_err().0;
        assert!(e.starts_with("--cpus client: this machine has no CPU") || e.contains("not allowed"), "{e}");
        let p = PlacementSpec::parse("", "shared").unwrap().resolve("--cpus", &allowed).unwrap();
        assert_eq!(p, Placement::shared(&allowed));
        assert_eq!(p.cores(), 4);
    }

    #[test]
    fn a_thread_confined_to_one_cpu_says_so_in_proc() {
        let cpu = CpuSet::allowed().cpus()[0];
        let seen = std::thread::spawn(move || {
            CpuSet::of([cpu]).unwrap().confine_this_thread().unwrap();
            // The thread's own status, as a test outside the process reads it.
            let tid = nix::unistd::gettid().as_raw();
            CpuSet::of_process(tid)
        })
        .join()
        .unwrap();
        assert_eq!(seen, CpuSet::of([cpu]));
    }

    #[test]
    fn a_shared_client_over_ten_percent_is_warned_with_what_to_do() {
        let shared = Placement::shared(&set("0-1"));
        assert_eq!(shared_client_warning(&shared, 0.05), None);
        let w = shared_client_warning(&shared, 0.25).unwrap();
        assert!(
            w.contains("25%") && w.contains("should not run on the server's CPUs") && w.contains("apart CPUs"),
            "{w}"
        );
        let apart = PlacementSpec::parse("", "server=1,client=0").unwrap().resolve("", &set("0-1")).unwrap();
        assert_eq!(shared_client_warning(&apart, 0.5), None);
    }
}
