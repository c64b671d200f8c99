//! The glue between the server module and the tuner: a target file's server as a `Launcher`,
//! a `Running` server as a `Launched` one.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::trial::{Launched, Launcher};
use crate::server::{self, Running, Settings, TargetFile};

/// Launches the target file's server through its adapter.
pub struct TargetLauncher<'a> {
    pub file: &'a TargetFile,
    /// Set by Ctrl-C: a server still starting is given up at once.
    pub interrupt: Arc<AtomicBool>,
}

impl Launcher for TargetLauncher<'_> {
    fn launch(&mut self, settings: &Settings) -> anyhow::Result<Box<dyn Launched>> {
        Ok(Box::new(server::launch_until(self.file, settings, &self.interrupt)?))
    }

    fn render(&self, settings: &Settings) -> String {
        self.file.recommend(settings)
    }

    fn diffs(&self, settings: &Settings) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
        self.file.diffs(settings)
    }

    /// Each launch gets its own run directory and, on port 0, its own free port.
    fn side_by_side(&self) -> bool {
        self.file.port == 0
    }
}

impl Launched for Running {
    fn base_url(&self) -> String {
        Running::base_url(self)
    }
    fn master_pid(&self) -> i32 {
        Running::master_pid(self)
    }
    fn front_pid(&self) -> Option<i32> {
        Running::front_pid(self)
    }
    fn counters(&self) -> Option<serde_json::Value> {
        Running::counters(self)
    }
    fn saturation(&self) -> Vec<String> {
        Running::saturation(self)
    }
    fn config_text(&self) -> Option<String> {
        Some(Running::config_text(self).to_string())
    }
    fn recycles_per_connection(&self) -> bool {
        Running::recycles_per_connection(self)
    }
    fn listening_outside(&self) -> Option<String> {
        Running::listening_outside(self)
    }
    fn container(&self) -> Option<(crate::sys::cgroup::Limits, crate::sys::cgroup::Usage)> {
        Some((self.container_limits()?.clone(), self.container_usage()?))
    }
    fn container_refused(&self) -> Option<String> {
        Running::container_refused(self).map(str::to_string)
    }
}
