//! `webtune lab`: an embedded pre-forking HTTP/1.1 server whose knobs reproduce what the seeds
//! describe of Apache prefork with mod_perl: a preloaded heap shared copy-on-write and dirtied
//! by requests, leaks, per-worker request limits, spare-worker management, keep-alive holding
//! workers, and a scoreboard at /server-status.
//!
//! parent.rs runs the pool; worker.rs serves; work.rs is what a request costs; heap.rs and
//! scoreboard.rs are the memory the processes share.

mod config;
mod heap;
mod parent;
pub mod scoreboard;
mod signals;
mod status;
pub mod work;
mod worker;

pub use config::LabConfig;
pub use work::Work;

/// Runs the lab until SIGTERM or SIGINT; every worker is stopped before it returns.
pub fn run(cfg: &LabConfig) -> anyhow::Result<()> {
    parent::run(cfg)
}
