//! Wake-up coalescing for the closed loop.
//!
//! A load generator that wakes for every response or two spends much of its CPU going to
//! sleep and waking up (on a virtual machine one sleep-and-wake costs as much as a request).
//! When many responses arrive per wake-up anyway, the worker pauses a little before
//! collecting them, so each wake-up serves a batch, as a network card's interrupt
//! moderation does. The pause never shows in a latency: responses carry the kernel's receive
//! timestamp, and the next request's time starts when it is really sent.
//!
//! What it may cost: a response waits in its socket for up to the pause, so in the closed
//! loop its client sends its next request that much later. While the server is saturated
//! (requests wait in its queue) that changes nothing; otherwise it lowers the request rate by
//! about half the pause over the round trip. The pause is bounded by a fraction of the round
//! trip and by an absolute cap, and it is taken only when enough responses arrive per pause
//! for batching to pay.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The pause, as a fraction of a client's cycle (from one request's start to the next's).
const SHARE_OF_CYCLE: u32 = 8;
/// The longest pause.
const MAX_PAUSE: Duration = Duration::from_micros(100);
/// Fewer responses than this expected per pause: no pause (batching would not pay for the
/// extra sleep). Below the cap that means fewer than MIN_BATCH x SHARE_OF_CYCLE clients.
const MIN_BATCH: f64 = 4.0;
/// The fewest clients per thread that can fill a batch below the cap; with fewer, the
/// receive timestamps would cost (about 0.4 us a request here) for nothing.
pub const MIN_CLIENTS: usize = MIN_BATCH as usize * SHARE_OF_CYCLE as usize;
/// How often the pause is recomputed from the completions since the last time.
const EPOCH: Duration = Duration::from_millis(20);

pub struct Coalescer {
    pause: Duration,
    since: Instant,
    done: u64,
}

impl Coalescer {
    pub fn new(now: Instant) -> Coalescer {
        Coalescer { pause: Duration::ZERO, since: now, done: 0 }
    }

    #[inline]
    pub fn completed(&mut self) {
        self.done += 1;
    }

    /// How long to pause before the next wait for events, with `clients` in their cycle.
    pub fn pause(&mut self, now: Instant, clients: usize) -> Duration {
        let elapsed = now.saturating_duration_since(self.since);
        if elapsed >= EPOCH {
            self.pause = pause_for(self.done as f64 / elapsed.as_secs_f64(), clients);
            self.since = now;
            self.done = 0;
        }
        self.pause
    }
}

/// The pause for a completion rate (per second) of `clients`. Their cycle is clients / rate
/// (Little's law); it is used rather than the measured latency because a pause shortens the
/// server's queue, and so the latency it would be derived from.
fn pause_for(rate: f64, clients: usize) -> Duration {
    if rate <= 0.0 || clients == 0 {
        return Duration::ZERO;
    }
    let cycle = Duration::from_secs_f64((clients as f64 / rate).min(1.0));
    let pause = (cycle / SHARE_OF_CYCLE).min(MAX_PAUSE);
    if rate * pause.as_secs_f64() >= MIN_BATCH { pause } else { Duration::ZERO }
}

/// When a response arrived, from the kernel's receive timestamp (wall clock, nanoseconds
/// since the epoch), on the monotonic clock. A stamp from the future or older than a second
/// (the wall clock was set) is not trusted: `now` then.
pub fn arrival(now: Instant, stamp: Duration) -> Instant {
    let Ok(wall) = SystemTime::now().duration_since(UNIX_EPOCH) else { return now };
    match wall.checked_sub(stamp) {
        Some(age) if age < Duration::from_secs(1) => now.checked_sub(age).unwrap_or(now),
        _ => now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_only_when_a_batch_arrives_per_pause() {
        // nginx on one core, 50 clients at 100k/s: a 500 us cycle, a 62.5 us pause.
        assert_eq!(pause_for(100_000.0, 50), Duration::from_nanos(62_500));
        // 1 client, or 20 (2.5 responses per pause): no pause.
        assert_eq!(pause_for(30_000.0, 1), Duration::ZERO);
        assert_eq!(pause_for(100_000.0, 20), Duration::ZERO);
        // A slow application, 200 clients at 5k/s: a 40 ms cycle, capped at 100 us, which
        // holds half a response: no pause.
        assert_eq!(pause_for(5_000.0, 200), Duration::ZERO);
        // 1000 clients at 200k/s: capped.
        assert_eq!(pause_for(200_000.0, 1000), MAX_PAUSE);
        // Nothing completed (a stalled server): no pause.
        assert_eq!(pause_for(0.0, 50), Duration::ZERO);
    }

    #[test]
    fn the_pause_follows_the_completions_of_the_last_epoch() {
        let t0 = Instant::now();
        let mut c = Coalescer::new(t0);
        for _ in 0..2_000 {
            c.completed();
        }
        assert_eq!(c.pause(t0 + Duration::from_millis(10), 50), Duration::ZERO, "epoch not over");
        // 2000 in 20 ms: 100k/s.
        assert_eq!(c.pause(t0 + EPOCH, 50), Duration::from_nanos(62_500));
        assert_eq!(c.pause(t0 + EPOCH * 2, 50), Duration::ZERO);
    }

    #[test]
    fn arrival_converts_a_wall_clock_stamp() {
        let now = Instant::now();
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let at = arrival(now, wall - Duration::from_micros(300));
        let age = now - at;
        assert!(age >= Duration::from_micros(300) && age < Duration::from_millis(50), "{age:?}");
        assert_eq!(arrival(now, wall + Duration::from_secs(5)), now);
        assert_eq!(arrival(now, wall - Duration::from_secs(5)), now);
    }
}
