//! The lab server's settings and their checks.

use std::net::SocketAddr;
use std::time::Duration;

use super::work::Work;

/// The lab server's settings, from `webtune lab`'s flags.
#[derive(Debug, Clone)]
pub struct LabConfig {
    pub listen: SocketAddr,
    /// The most workers (Apache's MaxRequestWorkers).
    pub workers: usize,
    pub start_workers: usize,
    pub min_spare: usize,
    pub max_spare: usize,
    /// Requests a worker serves before it exits and is replaced (0: never).
    pub max_requests: u64,
    pub keepalive: bool,
    pub keepalive_timeout: Duration,
    /// Requests per connection (0: unlimited).
    pub max_keepalive_requests: u64,
    pub backlog: i32,
    pub preload_mb: usize,
    /// What each request costs unless its query string says otherwise.
    pub work: Work,
}

impl LabConfig {
    /// Checks the knobs against each other; the message names the flag.
    pub fn validate(&self) -> Result<(), String> {
        if self.workers == 0 {
            return Err("--workers must be at least 1".into());
        }
        if self.start_workers == 0 {
            return Err("--start-workers must be at least 1".into());
        }
        if self.start_workers > self.workers {
            return Err(format!("--start-workers {} is more than --workers {}", self.start_workers, self.workers));
        }
        if self.min_spare > self.max_spare {
            return Err(format!("--min-spare {} is more than --max-spare {}", self.min_spare, self.max_spare));
        }
        if self.backlog < 1 {
            return Err("--backlog must be at least 1".into());
        }
        Ok(())
    }
}
