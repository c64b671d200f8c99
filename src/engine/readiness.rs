//! What the HTTP/1.1 and HTTP/2 workers' event loops share: a connection's token, and one
//! wait for readiness. Plain functions the compiler inlines into each loop: no allocation and
//! no dynamic dispatch per turn.

use std::io::{self, ErrorKind};
use std::time::{Duration, Instant};

use mio::{Events, Poll, Token};

use super::coalesce::Coalescer;

/// A connection's token: its index, and in the high half its generation, so that events of a
/// closed connection whose index was reused are told apart (`conn_of`).
#[inline]
pub(super) fn token(index: usize, generation: u32) -> Token {
    Token(index | ((generation as usize) << 32))
}

/// The index and generation of a connection's token.
#[inline]
pub(super) fn conn_of(token: Token) -> (usize, u32) {
    (token.0 & 0xffff_ffff, (token.0 >> 32) as u32)
}

/// Waits up to `wait` for readiness into `events`, the coalescer (when wake-ups are coalesced)
/// first pausing to gather a batch; a wait a signal interrupted is a turn like any other.
#[inline]
pub(super) fn wait(
    poll: &mut Poll,
    events: &mut Events,
    coalescer: Option<&mut Coalescer>,
    now: Instant,
    running: usize,
    wait: Duration,
) -> io::Result<()> {
    if let Some(co) = coalescer {
        co.pause_before(now, running, wait);
    }
    match poll.poll(events, Some(wait)) {
        Err(e) if e.kind() != ErrorKind::Interrupted => Err(e),
        _ => Ok(()),
    }
}
