//! What the engine says about each request: one `Record` per request attempt, plus a few
//! connection events that are not requests.

use std::time::Instant;

/// Why a request failed, in httperf's classes. The discriminant indexes count arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ErrorClass {
    /// connect() answered ECONNREFUSED: nothing listens, or the backlog is full.
    Refused = 0,
    /// The TCP handshake did not finish within the connect timeout.
    ConnectTimeout,
    /// The peer reset the connection (ECONNRESET, EPIPE) mid-request.
    Reset,
    /// The response did not complete within the request timeout.
    Timeout,
    /// EADDRNOTAVAIL: the client ran out of ephemeral ports.
    AddrUnavailable,
    /// EMFILE/ENFILE/ENOBUFS: the client ran out of file descriptors or socket memory.
    FdUnavailable,
    /// The response could not be parsed as HTTP/1.x, or the server broke the HTTP/2 protocol.
    Malformed,
    /// The server closed the connection before the response was complete.
    ClosedEarly,
    /// A TLS handshake or record error.
    Tls,
    /// Any other socket error.
    Other,
    /// HTTP/2: the server reset the stream (RST_STREAM).
    StreamReset,
    /// HTTP/2: the server's GOAWAY left the stream unprocessed (with an error code, or a
    /// second time after a graceful one).
    GoAway,
    /// HTTP/1.1: the server sent bytes no request asked for (a response on accept, a second
    /// response to one request): which response answers which request is lost.
    Unsolicited,
    /// HTTP/2: the server made webtune queue more replies than the bound (PING or SETTINGS
    /// floods it does not read), or more than it lets webtune write.
    Flood,
}

impl ErrorClass {
    /// How many classes there are.
    pub const COUNT: usize = 14;
    /// Every class, in the order reports list them.
    pub const ALL: [ErrorClass; Self::COUNT] = [
        ErrorClass::Refused,
        ErrorClass::ConnectTimeout,
        ErrorClass::Reset,
        ErrorClass::Timeout,
        ErrorClass::AddrUnavailable,
        ErrorClass::FdUnavailable,
        ErrorClass::Malformed,
        ErrorClass::ClosedEarly,
        ErrorClass::Tls,
        ErrorClass::Other,
        ErrorClass::StreamReset,
        ErrorClass::GoAway,
        ErrorClass::Unsolicited,
        ErrorClass::Flood,
    ];

    /// The stable name used in reports and the JSON schema.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Refused => "refused",
            ErrorClass::ConnectTimeout => "connect_timeout",
            ErrorClass::Reset => "reset",
            ErrorClass::Timeout => "timeout",
            ErrorClass::AddrUnavailable => "addr_unavailable",
            ErrorClass::FdUnavailable => "fd_unavailable",
            ErrorClass::Malformed => "malformed",
            ErrorClass::ClosedEarly => "closed_early",
            ErrorClass::Tls => "tls",
            ErrorClass::Other => "other",
            ErrorClass::StreamReset => "stream_reset",
            ErrorClass::GoAway => "goaway",
            ErrorClass::Unsolicited => "unsolicited",
            ErrorClass::Flood => "flood",
        }
    }

    /// Classifies an OS error met while connecting, writing or reading.
    pub fn from_io(err: &std::io::Error) -> ErrorClass {
        use std::io::ErrorKind as K;
        match err.raw_os_error() {
            Some(libc::ECONNREFUSED) => return ErrorClass::Refused,
            Some(libc::ECONNRESET | libc::EPIPE | libc::ECONNABORTED) => return ErrorClass::Reset,
            Some(libc::ETIMEDOUT) => return ErrorClass::ConnectTimeout,
            Some(libc::EADDRNOTAVAIL | libc::EADDRINUSE) => return ErrorClass::AddrUnavailable,
            Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM) => {
                return ErrorClass::FdUnavailable;
            }
            _ => {}
        }
        match err.kind() {
            K::ConnectionRefused => ErrorClass::Refused,
            K::ConnectionReset | K::BrokenPipe | K::ConnectionAborted => ErrorClass::Reset,
            K::UnexpectedEof => ErrorClass::ClosedEarly,
            K::InvalidData => ErrorClass::Tls,
            _ => ErrorClass::Other,
        }
    }
}

/// One finished request attempt. Durations are in microseconds from `start`.
#[derive(Debug, Clone, Copy)]
pub struct Record {
    /// When the request began: its scheduled time in the open loop, else its connect if it
    /// needed a new connection, else its first write.
    pub start: Instant,
    /// Open loop: how long it waited past its scheduled time for a free connection (0 when
    /// one was free).
    pub queued_us: u64,
    /// Which template (URL, scenario step) it used.
    pub template: u16,
    /// Which stage of `--stages` it was scheduled in (0 without stages).
    pub stage: u16,
    /// Its client was throttled (--throttle, --slow-share).
    pub slow: bool,
    /// Time to establish the connection, when this request opened one.
    pub connect_us: Option<u64>,
    /// Time to the first byte of the response (0 when none came).
    pub first_byte_us: u64,
    /// Time to the last byte of the response, or to the failure.
    pub total_us: u64,
    /// The final status code (after any 1xx), 0 on failure.
    pub status: u16,
    pub header_bytes: u64,
    pub body_bytes: u64,
    pub error: Option<ErrorClass>,
    /// The body length differs from the first successful response's (counted apart from
    /// failures: pages whose length varies are not errors).
    pub length_differs: bool,
}

impl Record {
    /// Whether the request got a response (of any status).
    pub fn is_ok(&self) -> bool {
        self.error.is_none()
    }
}

/// Connection-level facts that are not request outcomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnEvent {
    /// A TCP connection was established.
    Opened,
    /// The server closed a kept-alive connection between requests; the request was retried
    /// on a new connection. Servers do this at their keep-alive limits: not an error.
    ServerClosedIdle,
}
