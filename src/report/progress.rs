//! The live progress line on a terminal: one line on stderr, rewritten each second.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use crate::engine::Stop;

/// The line, and whether it is on the screen now.
pub struct ProgressLine {
    enabled: bool,
    drawn: bool,
}

impl ProgressLine {
    /// Draws only when stderr is a terminal and the user did not ask for quiet.
    pub fn new(quiet: bool) -> ProgressLine {
        ProgressLine { enabled: !quiet && std::io::stderr().is_terminal(), drawn: false }
    }

    /// `goal` is the run's bound: a request count or a duration.
    pub fn draw(&mut self, elapsed: Duration, ok: u64, failed: u64, rate: f64, goal: Stop) {
        if !self.enabled {
            return;
        }
        let done = match goal {
            Stop::Requests(n) => format!("{}/{} requests", ok + failed, n),
            Stop::Duration(d) => format!("{:.0}/{:.0} s", elapsed.as_secs_f64(), d.as_secs_f64()),
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{done}  {ok} ok  {failed} failed  {rate:.0} req/s");
        let _ = err.flush();
        self.drawn = true;
    }

    /// Erases the line, so that the report starts on a clean line.
    pub fn clear(&mut self) {
        if self.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
            self.drawn = false;
        }
    }
}
