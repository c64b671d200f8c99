//! Private run directories: the configuration and logs of each launched server, and the
//! process groups it runs in. A run directory whose owner (a webtune process) is gone, as
//! after a SIGKILL, is reaped by the next launch: its groups that are still its own (checked,
//! since a group id is reused) are killed, the directory removed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use crate::procmem::procs;

/// Where run directories live: $XDG_RUNTIME_DIR/webtune, else /tmp/webtune-<uid>.
pub fn base() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("webtune"),
        _ => std::env::temp_dir().join(format!("webtune-{}", nix::unistd::getuid())),
    }
}

/// The variable every process of a launched server inherits: its run directory. A group
/// whose leader is gone is still recognised as this run's by a member that carries it.
pub const MARKER: &str = "WEBTUNE_RUN_DIR";

/// The file of a run directory that lists its server's cgroup directories.
pub const CGROUPS: &str = "cgroups";

/// A run's cgroup directories: those its `cgroups` file lists (only webtune's own, named
/// after the run, under /sys/fs/cgroup: the file cannot make the reaper kill elsewhere), and
/// those its name gives under this process's own cgroups (the file may not have been written).
fn run_cgroups(dir: &Path, name: &str) -> Vec<PathBuf> {
    let own_name = format!("{}{name}", crate::sys::cgroup::PREFIX);
    let listed = std::fs::read_to_string(dir.join(CGROUPS)).unwrap_or_default();
    let mut dirs: Vec<PathBuf> = listed
        .lines()
        .map(PathBuf::from)
        .filter(|d| d.starts_with("/sys/fs/cgroup") && d.file_name().is_some_and(|n| n.to_string_lossy() == own_name))
        .filter(|d| !d.components().any(|c| c == std::path::Component::ParentDir))
        .collect();
    dirs.extend(crate::sys::cgroup::dirs_named(name));
    dirs.sort();
    dirs.dedup();
    dirs
}

/// A directory being made: the reaper leaves it alone until its owner is dead.
const MAKING: &str = ".new-";
/// How long a directory being made may lack its owner file before it counts as abandoned.
const MAKING_GRACE: Duration = Duration::from_secs(60);

/// One launch's private directory, owned by this webtune process.
pub struct RunDir {
    pub path: PathBuf,
}

impl RunDir {
    /// A new directory owned by this process (reaping stale ones first). It is made under a
    /// name the reaper does not take for a run, its owner written, and only then renamed to
    /// `run-*`: a concurrent launch never finds a run directory without its owner.
    pub fn create() -> anyhow::Result<RunDir> {
        RunDir::create_in(&base())
    }

    /// `create`, in `base` rather than the user's own place.
    pub fn create_in(base: &Path) -> anyhow::Result<RunDir> {
        let base = base.to_path_buf();
        // 0755 whatever the umask (002 would make it group-writable, and refused below);
        // servers that drop privileges must still reach their run directory through it.
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(&base)
            .with_context(|| format!("cannot create {}", base.display()))?;
        check_base(&base)?;
        reap_stale(&base);
        let making = tempfile::Builder::new()
            .prefix(MAKING)
            .tempdir_in(&base)
            .with_context(|| format!("cannot create a run directory in {}", base.display()))?;
        // Servers may drop privileges (Apache's children run as www-data): let them read it.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(making.path(), std::fs::Permissions::from_mode(0o755))?;
        let me = std::process::id() as i32;
        std::fs::write(making.path().join("owner"), procs::identity(me).unwrap_or_default())?;
        let suffix =
            making.path().file_name().unwrap_or_default().to_string_lossy().trim_start_matches(MAKING).to_string();
        let path = base.join(format!("run-{me}-{suffix}"));
        std::fs::rename(making.path(), &path).with_context(|| format!("cannot create {}", path.display()))?;
        let _ = making.keep();
        Ok(RunDir { path })
    }

    /// Records a process group the server runs in (its leader, pid and start time), before
    /// anything else can go wrong.
    pub fn record_group(&self, pgid: i32) -> anyhow::Result<()> {
        use std::io::Write;
        let start = procs::info(pgid).map(|p| p.start_ticks.to_string()).unwrap_or_default();
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(self.path.join("groups"))?;
        f.write_all(format!("{pgid} {start}\n").as_bytes())?;
        f.sync_data()?;
        Ok(())
    }

    /// The directory's own name ("run-1234-abcd"), which the cgroups of its server share.
    pub fn name(&self) -> String {
        self.path.file_name().unwrap_or_default().to_string_lossy().into_owned()
    }

    /// The path of file `name` inside the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Removes the directory (the server is stopped by then).
    pub fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The base must be this user's alone: a directory another user made (or may write in) could
/// hold planted run directories whose groups files name processes to kill.
fn check_base(base: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(base).with_context(|| format!("cannot read {}", base.display()))?;
    let me = nix::unistd::getuid().as_raw();
    if !meta.is_dir() || meta.uid() != me || meta.mode() & 0o022 != 0 {
        anyhow::bail!(
            "{} is not a directory of this user's alone (owner uid {}, mode {:o}): remove it, or set XDG_RUNTIME_DIR",
            base.display(),
            meta.uid(),
            meta.mode() & 0o7777
        );
    }
    Ok(())
}

/// Whether the directory's owner may still be running: only an owner file read whole that
/// names a process proven gone makes it stale (an unreadable one, say out of descriptors,
/// is not proof; a missing one is a crash before the directory was ever used).
fn alive_owner(dir: &Path) -> bool {
    match std::fs::read_to_string(dir.join("owner")) {
        Ok(token) => procs::identity_alive(&token),
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
    }
}

/// Every live process that carries run directory `dir`'s marker, whatever its group: a
/// daemon that left the run's process groups (setsid, a double fork) still inherits it.
/// (A process that clears its environment escapes this; only a cgroup would hold it.)
pub fn marked(dir: &Path) -> Vec<i32> {
    let marker = format!("{MARKER}={}", dir.display());
    let me = std::process::id() as i32;
    procs::all_pids()
        .into_iter()
        .filter(|&pid| pid != me)
        .filter(|pid| {
            // A zombie's environment reads empty: only the living match.
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|var| var == marker.as_bytes()))
        })
        .collect()
}

/// Stops every process that carries `dir`'s marker: SIGTERM, up to `grace`, then SIGKILL
/// (the table read again before each signal, so a pid reused meanwhile is spared). The pids
/// that could not be stopped.
pub fn stop_marked(dir: &Path, grace: Duration) -> Vec<i32> {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let signal_all = |signal| {
        let pids = marked(dir);
        for &pid in &pids {
            let _ = kill(Pid::from_raw(pid), signal);
        }
        pids
    };
    if signal_all(Signal::SIGTERM).is_empty() {
        return Vec::new();
    }
    let wait_gone = |limit: Duration| {
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            if marked(dir).is_empty() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    };
    if wait_gone(grace) {
        return Vec::new();
    }
    // Again and again for a moment: a daemon may fork while it is being killed.
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    while std::time::Instant::now() < deadline {
        if signal_all(Signal::SIGKILL).is_empty() || wait_gone(Duration::from_millis(100)) {
            return Vec::new();
        }
    }
    marked(dir)
}

/// Whether process group `pgid` is still the one this run started: its leader is the very
/// process recorded (pid and start time), or, the leader gone, a member carries the run's
/// marker. A group id reused by anything else is not ours to kill.
fn still_ours(dir: &Path, pgid: i32, leader_start: Option<u64>) -> bool {
    if let (Some(start), Some(leader)) = (leader_start, procs::info(pgid))
        && leader.start_ticks == start
        && leader.pgrp == pgid
    {
        return true;
    }
    let marker = format!("{MARKER}={}", dir.display());
    procs::snapshot().values().filter(|p| p.pgrp == pgid).any(|p| {
        std::fs::read(format!("/proc/{}/environ", p.pid))
            .is_ok_and(|env| env.split(|&b| b == 0).any(|var| var == marker.as_bytes()))
    })
}

/// Stops what dead owners left running and removes their directories. Returns the groups
/// it stopped. Only groups that are still the run's own are stopped (see `still_ours`).
pub fn reap_stale(base: &Path) -> Vec<i32> {
    let mut stopped = Vec::new();
    let Ok(entries) = std::fs::read_dir(base) else { return stopped };
    for e in entries.flatten() {
        let dir = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        if !e.file_type().is_ok_and(|t| t.is_dir()) || alive_owner(&dir) {
            continue;
        }
        if name.starts_with(MAKING) {
            // Its owner is still writing it, or died before it became a run (no groups yet):
            // only an old one is removed, since a half-written owner file reads as dead.
            let old =
                e.metadata().and_then(|m| m.modified()).is_ok_and(|t| t.elapsed().is_ok_and(|age| age > MAKING_GRACE));
            if old {
                let _ = std::fs::remove_dir_all(&dir);
            }
            continue;
        }
        if !name.starts_with("run-") {
            continue;
        }
        let groups = std::fs::read_to_string(dir.join("groups")).unwrap_or_default();
        for line in groups.lines() {
            let mut fields = line.split_whitespace();
            let Some(pgid) = fields.next().and_then(|p| p.parse::<i32>().ok()) else { continue };
            let leader_start = fields.next().and_then(|s| s.parse::<u64>().ok());
            if still_ours(&dir, pgid, leader_start) && super::process::stop_group(pgid, Duration::from_secs(5)) {
                stopped.push(pgid);
            }
        }
        // Daemons that left the groups; the directory stays while any survives, for the next try.
        // The run's cgroups hold whatever is left, even a process that cleared its environment.
        let cgroups_gone = crate::sys::cgroup::remove_dirs(&run_cgroups(&dir, &name));
        if stop_marked(&dir, Duration::from_secs(5)).is_empty() && cgroups_gone {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    stopped
}
