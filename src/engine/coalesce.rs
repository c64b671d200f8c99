//! Wake-up coalescing for the closed loop, within a bound on what it does to the load.
//!
//! A load generator that wakes for every response or two spends much of its CPU going to
//! sleep and waking up (on a virtual machine one sleep-and-wake costs as much as a request).
//! When many responses arrive per wake-up anyway, the worker can pause a little before
//! collecting them, so each wake-up serves a batch, as a network card's interrupt
//! moderation does. The pause never shows in a latency: responses carry the kernel's receive
//! timestamp, and the next request's time starts when it is really sent.
//!
//! What it costs is real, though: a response waits in its socket through the pause and then
//! behind the rest of its batch, and its client sends the next request that much later, so
//! fewer requests are at the server than `-c` says. Measured against nginx at 110k
//! requests/s with 50 clients, batching held responses 240 us of a 466 us cycle: the server
//! had about 24 requests in flight, not 50, and its latency halved. So the wait is measured
//! (arrival stamp to read) and bounded: an epoch whose responses waited more than a
//! sixteenth of the cycle on average ends the pausing, which is tried again after a back-off
//! (doubling, up to about a second). Coalescing therefore stays where a batch is small
//! against the cycle (many clients, slow responses) and keeps out where it would thin the
//! load. The report says how many responses were batched and how long they waited.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The pause, as a fraction of a client's cycle (from one request's start to the next's).
const SHARE_OF_CYCLE: u32 = 8;
/// The longest pause asked for (the kernel's timer slack, 50 us by default, comes on top).
const MAX_PAUSE: Duration = Duration::from_micros(100);
/// Fewer responses than this expected per pause: no pause (batching would not pay for the
/// extra sleep). Below the cap that means fewer than MIN_BATCH x SHARE_OF_CYCLE clients.
const MIN_BATCH: f64 = 4.0;
/// The fewest clients per thread that can fill a batch below the cap; with fewer, the
/// receive timestamps would cost (about 0.4 us a request here) for nothing.
pub const MIN_CLIENTS: usize = MIN_BATCH as usize * SHARE_OF_CYCLE as usize;
/// Batched responses may wait in the client at most this fraction of the cycle on average:
/// the server keeps at least 15/16 of the clients' requests.
const WAIT_SHARE_OF_CYCLE: u32 = 16;
/// How often the pause is reconsidered from the completions since the last time.
const EPOCH: Duration = Duration::from_millis(20);
/// The longest back-off after an epoch that waited too long, in epochs.
const MAX_BACKOFF: u32 = 64;

/// One thread's coalescing: how long it may pause before polling, adjusted epoch by epoch
/// within the bound on waiting.
pub struct Coalescer {
    pause: Duration,
    since: Instant,
    /// This epoch: completions, and those collected after a pause with their total wait.
    done: u64,
    batched: u64,
    waited: Duration,
    /// Epochs to sit out before pausing again, and the next back-off.
    idle: u32,
    backoff: u32,
    /// The run's batched responses and their total wait, for the report (`finish`).
    total: Batched,
}

/// Responses collected after a pause, and how long they waited in the client in all.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Batched {
    pub responses: u64,
    pub waited: Duration,
}

impl Batched {
    /// Adds another thread's counts.
    pub fn add(&mut self, other: Batched) {
        self.responses += other.responses;
        self.waited += other.waited;
    }
}

impl Coalescer {
    /// A coalescer that does not pause yet, its first epoch starting `now`.
    pub fn new(now: Instant) -> Coalescer {
        Coalescer {
            pause: Duration::ZERO,
            since: now,
            done: 0,
            batched: 0,
            waited: Duration::ZERO,
            idle: 0,
            backoff: 1,
            total: Batched::default(),
        }
    }

    /// Whether responses are being collected after pauses: only then are they read with
    /// their receive timestamps (a plain read is cheaper).
    #[inline]
    pub fn pausing(&self) -> bool {
        !self.pause.is_zero()
    }

    /// A response completed; `waited`: how long it sat in the client, when it was batched.
    #[inline]
    pub fn completed(&mut self, waited: Option<Duration>) {
        self.done += 1;
        if let Some(w) = waited {
            self.batched += 1;
            self.waited += w;
        }
    }

    /// How long to pause before the next wait for events, with `clients` in their cycle.
    pub fn pause(&mut self, now: Instant, clients: usize) -> Duration {
        let elapsed = now.saturating_duration_since(self.since);
        if elapsed < EPOCH {
            return self.pause;
        }
        let rate = self.done as f64 / elapsed.as_secs_f64();
        let cycle = cycle(rate, clients);
        if self.batched > 0 && self.waited / self.batched as u32 > cycle / WAIT_SHARE_OF_CYCLE {
            // The batches kept too many requests from the server: stop, try again later.
            self.pause = Duration::ZERO;
            self.idle = self.backoff;
            self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        } else if self.idle > 0 {
            self.idle -= 1;
        } else {
            if self.batched > 0 {
                self.backoff = 1;
            }
            self.pause = pause_for(rate, clients);
        }
        self.total.add(Batched { responses: self.batched, waited: self.waited });
        self.since = now;
        self.done = 0;
        self.batched = 0;
        self.waited = Duration::ZERO;
        self.pause
    }

    /// Pauses (sleeps) before a wait for events of at most `wait`, as `pause` says; never
    /// when there is nothing to wait for.
    pub fn pause_before(&mut self, now: Instant, clients: usize, wait: Duration) {
        if wait.is_zero() {
            return;
        }
        let pause = self.pause(now, clients).min(wait);
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }

    /// The run's totals, the current epoch included.
    pub fn finish(mut self) -> Batched {
        self.total.add(Batched { responses: self.batched, waited: self.waited });
        self.total
    }
}

/// A client's cycle at a completion rate (per second) of `clients`: clients / rate (Little's
/// law); it is used rather than the measured latency because a pause shortens the server's
/// queue, and so the latency it would be derived from. At most a second.
fn cycle(rate: f64, clients: usize) -> Duration {
    if rate <= 0.0 || clients == 0 {
        return Duration::from_secs(1);
    }
    Duration::from_secs_f64((clients as f64 / rate).min(1.0))
}

/// The pause for a completion rate (per second) of `clients`.
fn pause_for(rate: f64, clients: usize) -> Duration {
    if rate <= 0.0 || clients == 0 {
        return Duration::ZERO;
    }
    let pause = (cycle(rate, clients) / SHARE_OF_CYCLE).min(MAX_PAUSE);
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

    /// One epoch of 2000 completions (100k/s) of which `batched` waited `wait` each.
    fn epoch(c: &mut Coalescer, t: &mut Instant, batched: u64, wait: Duration) -> Duration {
        for k in 0..2_000 {
            c.completed((k < batched).then_some(wait));
        }
        *t += EPOCH;
        c.pause(*t, 50)
    }

    #[test]
    fn the_pause_follows_the_completions_of_the_last_epoch() {
        let mut t = Instant::now();
        let mut c = Coalescer::new(t);
        assert_eq!(c.pause(t + Duration::from_millis(10), 50), Duration::ZERO, "epoch not over");
        // 2000 in 20 ms: 100k/s, a 500 us cycle.
        let pause = Duration::from_nanos(62_500);
        assert_eq!(epoch(&mut c, &mut t, 0, Duration::ZERO), pause);
        // Batched responses that waited 25 us (under 500/16): go on.
        assert_eq!(epoch(&mut c, &mut t, 2_000, Duration::from_micros(25)), pause);
        assert_eq!(c.finish().responses, 2_000);
    }

    #[test]
    fn batches_that_wait_too_long_stop_the_pauses_with_a_growing_back_off() {
        let mut t = Instant::now();
        let mut c = Coalescer::new(t);
        assert!(!epoch(&mut c, &mut t, 0, Duration::ZERO).is_zero());
        // 240 us of a 500 us cycle: stop, sit out 1 epoch, then try again.
        let long = Duration::from_micros(240);
        assert!(epoch(&mut c, &mut t, 2_000, long).is_zero());
        assert!(epoch(&mut c, &mut t, 0, Duration::ZERO).is_zero());
        assert!(!epoch(&mut c, &mut t, 0, Duration::ZERO).is_zero());
        // Too long again: 2 epochs out, then 4.
        assert!(epoch(&mut c, &mut t, 2_000, long).is_zero());
        for _ in 0..2 {
            assert!(epoch(&mut c, &mut t, 0, Duration::ZERO).is_zero());
        }
        assert!(!epoch(&mut c, &mut t, 0, Duration::ZERO).is_zero());
        assert!(epoch(&mut c, &mut t, 2_000, long).is_zero());
        for _ in 0..4 {
            assert!(epoch(&mut c, &mut t, 0, Duration::ZERO).is_zero());
        }
        assert!(!epoch(&mut c, &mut t, 0, Duration::ZERO).is_zero());
        // A batch within the bound resets the back-off.
        assert!(!epoch(&mut c, &mut t, 2_000, Duration::from_micros(20)).is_zero());
        assert!(epoch(&mut c, &mut t, 2_000, long).is_zero());
        assert!(epoch(&mut c, &mut t, 0, Duration::ZERO).is_zero());
        assert!(!epoch(&mut c, &mut t, 0, Duration::ZERO).is_zero());
        let total = c.finish();
        assert_eq!(total.responses, 5 * 2_000);
        assert_eq!(total.waited, long * 4 * 2_000 + Duration::from_micros(20) * 2_000);
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
