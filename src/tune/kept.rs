//! Servers kept running between the windows of a comparison. A comparison measures every
//! configuration once per round, and on real servers (mod_perl, php-fpm, gunicorn) a launch
//! and its warm-up cost more than the window: the next window of a configuration is measured
//! on the server its last window left running. The others idle meanwhile (they cost memory,
//! not CPU), side by side only while the memory allows.

use super::point::Point;
use super::trial::{self, Launcher, Load, Trial, TrialOptions};
use crate::bench::BenchSpec;
use crate::server::Settings;

/// Servers kept running at most.
pub const MAX_KEPT: usize = 8;
/// Memory left to everything else, besides twice what one more server costs, KiB.
const MARGIN_KIB: u64 = 256 * 1024;

/// What a window needs of a running server: its configuration, and the load's shape (all but
/// the window's length).
#[derive(Debug, Clone, PartialEq)]
struct Shape {
    settings: Settings,
    spec: BenchSpec,
}

impl Shape {
    /// None for a load measured on a fresh server by its nature: a cold start, or a burst
    /// after an idle spell.
    fn of(settings: &Settings, load: &Load) -> Option<Shape> {
        let fresh = !load.warm || !load.idle_before.is_zero();
        (!fresh).then(|| Shape { settings: settings.clone(), spec: BenchSpec { duration: None, ..load.spec.clone() } })
    }
}

/// Whether one more server of `one_kib` fits beside what runs, with `available_kib` available
/// (MemAvailable; 0 when unknown: then it does not).
fn room_for_one_more(available_kib: u64, one_kib: u64) -> bool {
    available_kib.saturating_sub(one_kib) > 2 * one_kib + MARGIN_KIB
}

/// The servers kept running, least recently used first; dropping it stops them all.
pub struct Kept {
    servers: Vec<(Shape, Trial)>,
    /// MemAvailable, KiB (a seam for the tests).
    available_kib: fn() -> u64,
}

impl Default for Kept {
    fn default() -> Self {
        Kept { servers: Vec::new(), available_kib: crate::procmem::capacity::mem_available_kib }
    }
}

impl Kept {
    /// Servers running now.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// Whether no server is kept.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// One window of `settings` under `load`: on the server its previous window left running
    /// (no launch, no warm-up), else on a fresh launch kept running afterwards. A load that
    /// must start fresh, or a launcher that cannot run a configuration twice (a fixed port),
    /// launches and stops as a trial does. A window that fails stops its server.
    pub fn window(
        &mut self,
        launcher: &mut dyn Launcher,
        step: &str,
        settings: &Settings,
        load: &Load,
        opts: &TrialOptions,
    ) -> Point {
        let opts = &TrialOptions { repeats: 1, ..opts.clone() };
        let Some(shape) = Shape::of(settings, load).filter(|_| launcher.side_by_side()) else {
            self.make_room();
            return trial::run(launcher, step, settings, load, opts);
        };
        // A kept server whose queue will not drain is given up for a fresh one.
        let kept = self.servers.iter().position(|(s, _)| *s == shape).map(|i| self.servers.remove(i));
        let kept = kept.filter(|(_, trial)| trial.settle(load, opts).is_ok());
        let (shape, mut trial) = match kept {
            Some(kept) => kept,
            None => {
                self.make_room();
                match Trial::start(launcher, step, settings, load, opts) {
                    Ok(t) => (shape, t),
                    Err(failed) => return *failed,
                }
            }
        };
        let p = trial.point(step, load, opts);
        if p.ok() {
            self.servers.push((shape, trial));
        }
        p
    }

    /// Stops the servers kept for `settings`: their next window runs on a fresh launch.
    pub fn forget(&mut self, settings: &Settings) {
        self.servers.retain(|(shape, _)| shape.settings != *settings);
    }

    /// Before a launch: stops the least recently used servers until one more fits beside the
    /// rest (by the largest footprint any of them showed) and under `MAX_KEPT`.
    pub fn make_room(&mut self) {
        while !self.servers.is_empty() {
            let one_more = self.servers.iter().map(|(_, t)| t.largest_pss_kib()).max().unwrap_or(0);
            if self.servers.len() < MAX_KEPT && room_for_one_more((self.available_kib)(), one_more) {
                return;
            }
            self.servers.remove(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn load(duration_ms: u64) -> Load {
        Load::of(BenchSpec {
            connections: Some(16),
            duration: Some(Duration::from_millis(duration_ms)),
            ..BenchSpec::default()
        })
    }

    /// A later window that differs only in its length runs on the same server; another
    /// configuration, another connection count, a cold start or a burst after idle do not.
    #[test]
    fn only_the_windows_length_may_differ_on_a_kept_server() {
        let settings = Settings(vec![("workers".into(), "2".into())]);
        let shape = Shape::of(&settings, &load(1000)).unwrap();
        assert_eq!(Shape::of(&settings, &load(2500)), Some(shape.clone()));
        let other = Settings(vec![("workers".into(), "4".into())]);
        assert_ne!(Shape::of(&other, &load(1000)), Some(shape.clone()));
        assert_ne!(Shape::of(&settings, &load(1000).with_connections(32)), Some(shape.clone()));
        assert_eq!(Shape::of(&settings, &Load { warm: false, ..load(1000) }), None);
        assert_eq!(Shape::of(&settings, &Load { idle_before: Duration::from_secs(1), ..load(1000) }), None);
        // Ending a window over the budget is the window's business, not the server's.
        assert_eq!(Shape::of(&settings, &load(1000).settling_over_budget()), Some(shape));
    }

    #[test]
    fn one_more_server_needs_twice_its_footprint_and_a_margin_left() {
        let mib = 1024;
        // 100 MiB servers: 256 + 200 MiB must stay after the 100 MiB of the new one.
        assert!(room_for_one_more(557 * mib, 100 * mib));
        assert!(!room_for_one_more(556 * mib, 100 * mib));
        // Nothing known of the servers yet: the margin alone.
        assert!(room_for_one_more(300 * mib, 0));
        // MemAvailable unknown: never side by side.
        assert!(!room_for_one_more(0, 0));
    }

    #[test]
    fn without_room_every_kept_server_is_stopped_before_a_launch() {
        let mut kept = Kept { available_kib: || 0, ..Kept::default() };
        kept.make_room();
        assert!(kept.is_empty());
    }
}
