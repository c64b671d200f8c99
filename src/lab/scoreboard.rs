//! The scoreboard: one slot per worker in memory shared by the parent and every worker
//! (an anonymous shared mapping made before the first fork), as Apache's scoreboard.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicI32, AtomicU8, AtomicU64, Ordering};

use nix::sys::mman::{MapFlags, ProtFlags, mmap_anonymous};

/// What a worker's slot says it is doing, as in Apache's scoreboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum State {
    /// No worker in this slot.
    Empty = 0,
    /// Forked, not yet waiting for a connection.
    Starting,
    /// Waiting in accept().
    Idle,
    /// Reading a request, working on it or writing the response.
    Busy,
    /// Holding a kept-alive connection, waiting for its next request.
    KeepAlive,
}

impl State {
    fn from_u8(v: u8) -> State {
        match v {
            1 => State::Starting,
            2 => State::Idle,
            3 => State::Busy,
            4 => State::KeepAlive,
            _ => State::Empty,
        }
    }

    /// The lowercase name shown in the status page ("idle", "keepalive"...).
    pub fn name(self) -> &'static str {
        match self {
            State::Empty => "empty",
            State::Starting => "starting",
            State::Idle => "idle",
            State::Busy => "busy",
            State::KeepAlive => "keepalive",
        }
    }
}

/// One worker's entry: its pid (0 when empty), state and request count.
#[repr(C)]
pub struct Slot {
    pub pid: AtomicI32,
    state: AtomicU8,
    /// Requests this worker has served.
    pub requests: AtomicU64,
}

impl Slot {
    /// What the worker in this slot is doing now.
    pub fn state(&self) -> State {
        State::from_u8(self.state.load(Ordering::Relaxed))
    }

    /// Publishes the worker's new state to every process.
    pub fn set_state(&self, s: State) {
        self.state.store(s as u8, Ordering::Relaxed);
    }
}

/// Server-wide counters, kept at the start of the mapping.
#[repr(C)]
pub struct Totals {
    pub requests: AtomicU64,
    /// Parent samples (every 100 ms) in which every allowed worker was busy.
    pub all_busy_samples: AtomicU64,
    pub samples: AtomicU64,
    /// Workers forked since start, and those that exited after max-requests.
    pub forked: AtomicU64,
    pub recycled: AtomicU64,
}

/// The shared mapping. Plain atomics in it are valid across processes: the mapping is
/// MAP_SHARED, so every process sees the same physical page.
pub struct Scoreboard {
    totals: NonNull<Totals>,
    slots: NonNull<Slot>,
    len: usize,
}

impl Scoreboard {
    /// Maps a zeroed scoreboard with `workers` slots (the pool's maximum); call before forking.
    pub fn new(workers: usize) -> anyhow::Result<Scoreboard> {
        let bytes = size_of::<Totals>() + workers * size_of::<Slot>();
        let size = std::num::NonZeroUsize::new(bytes).expect("non-empty scoreboard");
        // SAFETY: a fresh anonymous mapping, zero-filled: every atomic starts at 0 (Empty).
        let base =
            unsafe { mmap_anonymous(None, size, ProtFlags::PROT_READ | ProtFlags::PROT_WRITE, MapFlags::MAP_SHARED)? };
        let totals = base.cast::<Totals>();
        // SAFETY: Totals is followed by the slots inside the mapping; alignment of both is 8.
        let slots =
            unsafe { NonNull::new_unchecked(base.as_ptr().cast::<u8>().add(size_of::<Totals>()).cast::<Slot>()) };
        Ok(Scoreboard { totals, slots, len: workers })
    }

    /// The server-wide counters.
    pub fn totals(&self) -> &Totals {
        // SAFETY: the mapping lives as long as the process (never unmapped).
        unsafe { self.totals.as_ref() }
    }

    /// Every slot, in slot order.
    pub fn slots(&self) -> &[Slot] {
        // SAFETY: as above; `len` slots were mapped.
        unsafe { std::slice::from_raw_parts(self.slots.as_ptr(), self.len) }
    }

    /// Slot `i`; panics when out of range.
    pub fn slot(&self, i: usize) -> &Slot {
        &self.slots()[i]
    }

    /// The first empty slot, for a worker about to be forked; None when the pool is full.
    pub fn free_slot(&self) -> Option<usize> {
        self.slots().iter().position(|s| s.state() == State::Empty)
    }

    /// How many slots are in `state`.
    pub fn count(&self, state: State) -> usize {
        self.slots().iter().filter(|s| s.state() == state).count()
    }

    /// Workers present, whatever their state: the slots not empty.
    pub fn alive(&self) -> usize {
        self.slots().iter().filter(|s| s.state() != State::Empty).count()
    }
}
