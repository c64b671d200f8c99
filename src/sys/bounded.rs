//! Reads from a server or a peer outside the load engine (readiness probes, status pages,
//! stats sockets, remote hosts): each under one overall deadline and a size cap, and given up
//! as soon as `stop` is set. A peer that never ends, trickles a byte at a time or never
//! answers cannot hold webtune, nor grow it: a per-read timeout alone allows all three.

use std::io::{self, Read};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

/// How often a blocked read looks at the stop flag: well within the second Ctrl-C may wait.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// A reader whose every read ends by `deadline`, holds at most `cap` bytes, and stops on `stop`.
pub struct Bounded<'a, R> {
    inner: R,
    deadline: Instant,
    cap: usize,
    stop: &'a AtomicBool,
    what: &'a str,
    buf: Vec<u8>,
    /// Where the unread part of `buf` starts.
    pos: usize,
    eof: bool,
}

impl<'a, R: Read + AsFd> Bounded<'a, R> {
    /// `what` names the peer in errors ("the readiness probe", "host a").
    pub fn new(inner: R, deadline: Instant, cap: usize, stop: &'a AtomicBool, what: &'a str) -> Self {
        Bounded { inner, deadline, cap, stop, what, buf: Vec::new(), pos: 0, eof: false }
    }

    /// Raises (or lowers) the cap: a short first line, then a long document.
    pub fn set_cap(&mut self, cap: usize) {
        self.cap = cap;
    }

    /// Moves the deadline (a later phase of the same exchange).
    pub fn set_deadline(&mut self, deadline: Instant) {
        self.deadline = deadline;
    }

    /// Everything up to the end of the stream.
    pub fn read_to_end(&mut self) -> io::Result<Vec<u8>> {
        while !self.eof {
            self.over_cap()?;
            self.fill()?;
        }
        self.over_cap()?;
        let rest = self.buf.split_off(self.pos);
        self.buf.clear();
        self.pos = 0;
        Ok(rest)
    }

    /// The next line without its newline; None at the end of the stream.
    pub fn read_line(&mut self) -> io::Result<Option<Vec<u8>>> {
        loop {
            if let Some(n) = self.buf[self.pos..].iter().position(|&b| b == b'\n') {
                let line = self.buf[self.pos..self.pos + n].to_vec();
                self.pos += n + 1;
                return Ok(Some(line));
            }
            if self.eof {
                if self.pos == self.buf.len() {
                    return Ok(None);
                }
                return Ok(Some(self.read_to_end()?));
            }
            self.over_cap()?;
            self.fill()?;
        }
    }

    /// An error once more than `cap` bytes wait unread (no newline among them, for a line).
    fn over_cap(&self) -> io::Result<()> {
        if self.buf.len() - self.pos > self.cap {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} sent more than {} bytes", self.what, self.cap),
            ));
        }
        Ok(())
    }

    /// One read, waiting at most until the deadline, in slices short enough to see `stop`.
    fn fill(&mut self) -> io::Result<()> {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"));
            }
            let now = Instant::now();
            if now >= self.deadline {
                return Err(io::Error::new(io::ErrorKind::TimedOut, format!("{} did not finish in time", self.what)));
            }
            let wait = (self.deadline - now).min(STOP_CHECK);
            let mut fds = [PollFd::new(self.inner.as_fd(), PollFlags::POLLIN)];
            let ms = PollTimeout::try_from(wait.as_millis().max(1) as u32).unwrap_or(PollTimeout::MAX);
            match poll(&mut fds, ms) {
                Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
                Ok(_) => {}
                Err(e) => return Err(e.into()),
            }
            // Compact what was consumed before growing.
            if self.pos > 0 {
                self.buf.drain(..self.pos);
                self.pos = 0;
            }
            let mut chunk = [0u8; 16 * 1024];
            // Never more than one byte beyond the cap: what tells it was passed.
            let room = (self.cap + 1).saturating_sub(self.buf.len()).clamp(1, chunk.len());
            let n = match self.inner.read(&mut chunk[..room]) {
                Ok(n) => n,
                Err(e) if matches!(e.kind(), io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock) => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                self.eof = true;
                return Ok(());
            }
            self.buf.extend_from_slice(&chunk[..n]);
            return Ok(());
        }
    }
}

/// The time left until `deadline`, at least a millisecond (a zero timeout means "none").
pub fn left(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_stream_that_never_ends_is_capped_and_a_silent_one_ends_at_the_deadline() {
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        let stop = AtomicBool::new(false);
        let writer = std::thread::spawn(move || while b.write_all(&[b'x'; 4096]).is_ok() {});
        let mut r = Bounded::new(&a, Instant::now() + Duration::from_secs(5), 100_000, &stop, "peer");
        let e = r.read_to_end().unwrap_err();
        assert!(e.to_string().contains("more than 100000 bytes"), "{e}");
        drop(r);
        drop(a);
        writer.join().unwrap();

        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let started = Instant::now();
        let mut r = Bounded::new(&a, Instant::now() + Duration::from_millis(300), 100, &stop, "peer");
        assert_eq!(r.read_line().unwrap_err().kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(1));
        stop.store(true, Ordering::Relaxed);
        let mut r = Bounded::new(&a, Instant::now() + Duration::from_secs(60), 100, &stop, "peer");
        assert_eq!(r.read_line().unwrap_err().kind(), io::ErrorKind::Interrupted);
    }
}
