//! Private run directories: the configuration and logs of each launched server, and the
//! process groups it runs in. A run directory whose owner (a webtune process) is gone, as
//! after a SIGKILL, is reaped by the next launch: its groups are killed, the directory removed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

/// Where run directories live: $XDG_RUNTIME_DIR/webtune, else /tmp/webtune-<uid>.
pub fn base() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("webtune"),
        _ => std::env::temp_dir().join(format!("webtune-{}", nix::unistd::getuid())),
    }
}

/// One launch's private directory, owned by this webtune process.
pub struct RunDir {
    pub path: PathBuf,
}

impl RunDir {
    /// A new directory owned by this process (reaping stale ones first).
    pub fn create() -> anyhow::Result<RunDir> {
        let base = base();
        std::fs::create_dir_all(&base).with_context(|| format!("cannot create {}", base.display()))?;
        reap_stale(&base);
        // Made under a "new-" name and renamed once its owner file is in: another webtune's
        // reap never sees a run directory without an owner (it would remove it as stale).
        let new = tempfile::Builder::new()
            .prefix(&format!("new-{}-", std::process::id()))
            .tempdir_in(&base)
            .with_context(|| format!("cannot create a run directory in {}", base.display()))?
            .keep();
        // Servers may drop privileges (Apache's children run as www-data): let them read it.
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&new, std::fs::Permissions::from_mode(0o755));
        std::fs::write(new.join("owner"), owner_line(std::process::id() as i32).unwrap_or_default())?;
        let name = new.file_name().unwrap_or_default().to_string_lossy().replacen("new-", "run-", 1);
        let path = base.join(name);
        std::fs::rename(&new, &path).with_context(|| format!("cannot rename {}", new.display()))?;
        Ok(RunDir { path })
    }

    /// Records a process group the server runs in, before anything else can go wrong.
    pub fn record_group(&self, pgid: i32) -> anyhow::Result<()> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(self.path.join("groups"))?;
        writeln!(f, "{pgid}")?;
        f.sync_data()?;
        Ok(())
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

/// "pid starttime": the start time tells a live owner from a new process that reused the pid.
fn owner_line(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let start = rest.split_whitespace().nth(19)?;
    Some(format!("{pid} {start}"))
}

fn alive_owner(dir: &Path) -> bool {
    let Ok(line) = std::fs::read_to_string(dir.join("owner")) else { return false };
    let Some(pid) = line.split_whitespace().next().and_then(|p| p.parse::<i32>().ok()) else { return false };
    owner_line(pid).as_deref() == Some(line.trim())
}

fn older_than(dir: &Path, age: Duration) -> bool {
    std::fs::metadata(dir).and_then(|m| m.modified()).is_ok_and(|t| t.elapsed().is_ok_and(|e| e > age))
}

/// Stops what dead owners left running and removes their directories. Returns the groups
/// it stopped.
pub fn reap_stale(base: &Path) -> Vec<i32> {
    let mut stopped = Vec::new();
    let Ok(entries) = std::fs::read_dir(base) else { return stopped };
    for e in entries.flatten() {
        let dir = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        // A "new-" directory left by a creator that died before renaming it: nothing ran in it.
        if name.starts_with("new-") && !alive_owner(&dir) && older_than(&dir, Duration::from_secs(60)) {
            let _ = std::fs::remove_dir_all(&dir);
            continue;
        }
        if !dir.is_dir() || !name.starts_with("run-") || alive_owner(&dir) {
            continue;
        }
        let groups = std::fs::read_to_string(dir.join("groups")).unwrap_or_default();
        for pgid in groups.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            if super::process::stop_group(pgid, Duration::from_secs(5)) {
                stopped.push(pgid);
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    stopped
}
