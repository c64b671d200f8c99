//! Running strace on live processes: attach, wait until every process is traced, detach.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Why strace could not be started or attached.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("strace is not installed (Debian: apt-get install strace)")]
    Missing,
    #[error(
        "strace could not attach: {0} (ptrace needs the same user or root, and kernel.yama.ptrace_scope 0 or CAP_SYS_PTRACE)"
    )]
    NotPermitted(String),
    #[error("strace failed: {0}")]
    Failed(String),
}

/// A running strace; stopping it (or dropping the guard) detaches from the processes.
pub struct Tracer {
    child: Child,
    pub output: PathBuf,
    stderr: PathBuf,
}

impl Tracer {
    /// Attaches to `pids` (following their forks) and returns once all are traced.
    pub fn attach(pids: &[i32], dir: &Path) -> Result<Tracer, TraceError> {
        let strace = find_strace().ok_or(TraceError::Missing)?;
        let output = dir.join("strace.out");
        let stderr = dir.join("strace.err");
        let err_file = std::fs::File::create(&stderr).map_err(|e| TraceError::Failed(e.to_string()))?;
        let mut cmd = Command::new(strace);
        cmd.args(["-f", "-T", "-qq", "-s", "512", "-o"]).arg(&output);
        for pid in pids {
            cmd.arg("-p").arg(pid.to_string());
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err_file)
            .spawn()
            .map_err(|e| TraceError::Failed(e.to_string()))?;
        let mut tracer = Tracer { child, output, stderr };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(_)) = tracer.child.try_wait() {
                let msg = std::fs::read_to_string(&tracer.stderr).unwrap_or_default();
                let first = msg.lines().next().unwrap_or("it exited").trim().to_string();
                return Err(if msg.contains("Operation not permitted") || msg.contains("ptrace") {
                    TraceError::NotPermitted(first)
                } else {
                    TraceError::Failed(first)
                });
            }
            if pids.iter().all(|p| traced_by(*p) == Some(tracer.child.id() as i32) || !alive(*p)) {
                return Ok(tracer);
            }
            if Instant::now() > deadline {
                return Err(TraceError::Failed("attaching took more than 10 s".into()));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Detaches (SIGINT makes strace detach cleanly) and waits for the output to be complete.
    pub fn stop(mut self) -> Result<String, TraceError> {
        self.interrupt();
        std::fs::read_to_string(&self.output).map_err(|e| TraceError::Failed(format!("no output: {e}")))
    }

    fn interrupt(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.interrupt();
    }
}

fn find_strace() -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    path.split(':').chain(["/usr/bin", "/usr/sbin"]).map(|d| Path::new(d).join("strace")).find(|p| p.is_file())
}

/// The TracerPid line of /proc/PID/status.
fn traced_by(pid: i32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("TracerPid:")).and_then(|v| v.trim().parse().ok())
}

fn alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}
