//! An incremental HTTP/1.x response reader: feed it bytes as they arrive, it says when the
//! response is complete. Headers are parsed by httparse; bodies are framed by Content-Length,
//! chunked encoding or connection close, and counted, never stored.

/// Heads larger than this are rejected as malformed (oversized headers).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
const MAX_HEADERS: usize = 100;
/// Interim 1xx heads allowed before the final one. Servers send one or two (100 Continue,
/// 103 Early Hints); HTTP sets no limit, and a server that sends them without end would
/// keep the request from ever ending.
pub const MAX_INTERIM_HEADS: u32 = 100;

/// Why a response could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// The status line or a header is not HTTP/1.x.
    BadHead,
    /// The head is larger than MAX_HEAD_BYTES or has more than 100 headers.
    HeadTooLarge,
    /// A Content-Length or chunk size is not a number.
    BadFraming,
    /// The connection ended before the response was complete.
    Truncated,
    /// More than MAX_INTERIM_HEADS interim (1xx) heads came before the final one.
    TooManyInterim,
}

/// What feeding bytes to the reader gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// More bytes are needed.
    More,
    /// The response is complete; `consumed` bytes of the last feed belonged to it.
    Done { consumed: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading hex digits of a chunk size.
    Size {
        digits: u8,
    },
    /// Skipping a chunk extension up to the line end.
    Ext,
    /// Expecting the LF that ends the size line.
    SizeLf,
    /// Inside chunk data, this many bytes left.
    Data(u64),
    /// Expecting the CRLF after chunk data.
    DataCr,
    DataLf,
    /// At the start of a trailer line (after the last chunk).
    TrailerStart,
    /// Inside a trailer line.
    Trailer,
    /// Saw CR of the final empty line.
    EndLf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Length(u64),
    Chunked { chunk: Chunk, size: u64 },
    UntilClose,
    Done,
}

/// The reader of one response. `reset` makes it ready for the next one on the same connection.
#[derive(Debug)]
pub struct ResponseReader {
    state: State,
    /// Head bytes carried over when the head spans several reads.
    head: Vec<u8>,
    /// How much of `head` has been searched for the blank line (no rescans: linear time).
    scanned: usize,
    /// Interim 1xx heads of this response so far.
    interim: u32,
    /// The request was HEAD: no body whatever the headers say. Set per request.
    pub head_request: bool,
    pub status: u16,
    /// Status lines and headers (interim 1xx ones too) and chunked framing.
    pub header_bytes: u64,
    pub body_bytes: u64,
    /// The connection may carry another request after this response.
    pub keep_alive: bool,
    /// Copy the Server header into `server` (asked for once per run, not per request).
    pub capture_server: bool,
    pub server: Option<String>,
    /// Keep the Set-Cookie values of the final head in `set_cookies` (--cookies).
    pub capture_cookies: bool,
    pub set_cookies: Vec<String>,
}

impl Default for ResponseReader {
    fn default() -> Self {
        Self::new(false)
    }
}

impl ResponseReader {
    /// A reader for one response; `head_request`: the response to a HEAD has no body.
    pub fn new(head_request: bool) -> Self {
        ResponseReader {
            state: State::Head,
            head: Vec::new(),
            scanned: 0,
            interim: 0,
            head_request,
            status: 0,
            header_bytes: 0,
            body_bytes: 0,
            keep_alive: false,
            capture_server: false,
            server: None,
            capture_cookies: false,
            set_cookies: Vec::new(),
        }
    }

    /// Ready for the next response on the connection.
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.head.clear();
        self.scanned = 0;
        self.interim = 0;
        self.status = 0;
        self.header_bytes = 0;
        self.body_bytes = 0;
        self.keep_alive = false;
        self.set_cookies.clear();
    }

    /// True once any byte of the response has been seen.
    pub fn started(&self) -> bool {
        self.header_bytes > 0 || !self.head.is_empty() || self.state != State::Head
    }

    /// Whether the response is complete.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Feeds the next bytes of the response.
    pub fn feed(&mut self, data: &[u8]) -> Result<Progress, ParseError> {
        let mut pos = 0;
        while pos < data.len() || self.state == State::Done {
            match self.state {
                State::Done => return Ok(Progress::Done { consumed: pos }),
                State::Head => pos += self.feed_head(&data[pos..])?,
                State::Length(left) => {
                    let take = left.min((data.len() - pos) as u64);
                    self.body_bytes += take;
                    pos += take as usize;
                    self.state = if left == take { State::Done } else { State::Length(left - take) };
                }
                State::UntilClose => {
                    self.body_bytes += (data.len() - pos) as u64;
                    pos = data.len();
                }
                State::Chunked { .. } => pos += self.feed_chunked(&data[pos..])?,
            }
        }
        Ok(if self.state == State::Done { Progress::Done { consumed: pos } } else { Progress::More })
    }

    /// The connection reached end of file: completes a close-delimited body, else truncation.
    pub fn eof(&mut self) -> Result<(), ParseError> {
        match self.state {
            State::UntilClose => {
                self.state = State::Done;
                Ok(())
            }
            State::Done => Ok(()),
            _ => Err(ParseError::Truncated),
        }
    }

    /// Consumes head bytes, one head at a time; returns how many of `data` it used. An interim
    /// 1xx head is counted and consumed on its own (the state stays Head), so no head is
    /// counted twice however the bytes are split.
    fn feed_head(&mut self, data: &[u8]) -> Result<usize, ParseError> {
        // Fast path: the whole head arrived in this read (the common case), parse in place.
        if self.head.is_empty() {
            if let Some(n) = self.parse_head(data, None)? {
                return Ok(n);
            }
            if !may_be_http(data) {
                return Err(ParseError::BadHead);
            }
            if data.len() > MAX_HEAD_BYTES {
                return Err(ParseError::HeadTooLarge);
            }
            self.head.extend_from_slice(data);
            self.scanned = data.len();
            return Ok(data.len());
        }
        let before = self.head.len();
        self.head.extend_from_slice(data);
        let head = std::mem::take(&mut self.head);
        // The blank line may straddle the old end: look from 3 bytes before it.
        let parsed = self.parse_head(&head, Some(self.scanned.saturating_sub(3)));
        self.head = head;
        match parsed? {
            Some(n) => {
                self.head.clear();
                self.scanned = 0;
                // The buffered bytes held no complete head, so this one ends in `data`.
                n.checked_sub(before).ok_or(ParseError::BadHead)
            }
            None if !may_be_http(&self.head) => Err(ParseError::BadHead),
            None if self.head.len() > MAX_HEAD_BYTES => Err(ParseError::HeadTooLarge),
            None => {
                self.scanned = self.head.len();
                Ok(data.len())
            }
        }
    }

    /// Parses the head at the start of `buf`; returns its length, or None while it is
    /// incomplete. A head is judged only once its blank line is there, however its bytes
    /// were split. A final head sets the body's framing. `from`: None on a first attempt,
    /// which parses straight away (a whole head in one read is the common case); on later
    /// attempts, where to look for the blank line first, so that a head arriving in pieces
    /// is not parsed again for every piece.
    fn parse_head(&mut self, buf: &[u8], from: Option<usize>) -> Result<Option<usize>, ParseError> {
        if from.is_some_and(|from| !has_blank_line(buf, from)) {
            return Ok(None);
        }
        // Uninitialised: filling 100 empty headers cost more than parsing a typical head.
        let mut headers = [const { std::mem::MaybeUninit::<httparse::Header>::uninit() }; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut []);
        let n = match httparse::ParserConfig::default().parse_response_with_uninit_headers(&mut resp, buf, &mut headers)
        {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(_) if from.is_none() && !has_blank_line(buf, 0) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => return Err(ParseError::HeadTooLarge),
            Err(_) => return Err(ParseError::BadHead),
        };
        if n > MAX_HEAD_BYTES {
            return Err(ParseError::HeadTooLarge);
        }
        let status = resp.code.unwrap_or(0);
        self.header_bytes += n as u64;
        if !(100..200).contains(&status) || status == 101 {
            self.status = status;
            self.state = self.framing(&resp)?;
        } else {
            self.interim += 1;
            if self.interim > MAX_INTERIM_HEADS {
                return Err(ParseError::TooManyInterim);
            }
        }
        Ok(Some(n))
    }

    fn framing(&mut self, resp: &httparse::Response) -> Result<State, ParseError> {
        let http11 = resp.version == Some(1);
        let mut keep_alive = http11;
        let mut length: Option<u64> = None;
        let mut chunked = false;
        let mut other_coding = false;
        for h in resp.headers.iter() {
            let name = h.name.as_bytes();
            // Most headers say nothing about framing: skip them by length first.
            if !matches!(name.len(), 6 | 10 | 14 | 17) {
                continue;
            }
            if name.eq_ignore_ascii_case(b"content-length") {
                let v = parse_decimal(h.value).ok_or(ParseError::BadFraming)?;
                if length.is_some_and(|l| l != v) {
                    return Err(ParseError::BadFraming);
                }
                length = Some(v);
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                // Chunked must be the last coding; anything else is delimited by close.
                let last = h.value.rsplit(|&b| b == b',').next().unwrap_or(b"");
                chunked = trim(last).eq_ignore_ascii_case(b"chunked");
                other_coding = !chunked;
            } else if name.eq_ignore_ascii_case(b"connection") {
                for token in h.value.split(|&b| b == b',') {
                    let token = trim(token);
                    if token.eq_ignore_ascii_case(b"close") {
                        keep_alive = false;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") && !http11 {
                        keep_alive = true;
                    }
                }
            } else if self.capture_server && name.eq_ignore_ascii_case(b"server") {
                self.server = Some(String::from_utf8_lossy(h.value).into_owned());
            } else if self.capture_cookies && name.eq_ignore_ascii_case(b"set-cookie") {
                self.set_cookies.push(String::from_utf8_lossy(h.value).into_owned());
            }
        }
        let status = self.status;
        let no_body = self.head_request || status == 204 || status == 304 || status == 101;
        Ok(if no_body {
            self.keep_alive = keep_alive && status != 101;
            State::Done
        } else if chunked {
            self.keep_alive = keep_alive;
            State::Chunked { chunk: Chunk::Size { digits: 0 }, size: 0 }
        } else if let (Some(0), false) = (length, other_coding) {
            self.keep_alive = keep_alive;
            State::Done
        } else if let (Some(n), false) = (length, other_coding) {
            self.keep_alive = keep_alive;
            State::Length(n)
        } else {
            self.keep_alive = false;
            State::UntilClose
        })
    }

    /// Consumes chunked-body bytes; returns how many of `data` it used.
    fn feed_chunked(&mut self, data: &[u8]) -> Result<usize, ParseError> {
        let State::Chunked { mut chunk, mut size } = self.state else { unreachable!() };
        let mut i = 0;
        while i < data.len() {
            if let Chunk::Data(left) = chunk {
                let take = left.min((data.len() - i) as u64);
                self.body_bytes += take;
                i += take as usize;
                chunk = if take == left { Chunk::DataCr } else { Chunk::Data(left - take) };
                continue;
            }
            let b = data[i];
            i += 1;
            // Chunk sizes, CRLFs and trailers count with the headers, byte by byte as they are
            // accepted, so every byte received is in one of the two counts however the reads
            // fall (a byte that is refused is in neither).
            chunk = match chunk {
                Chunk::Size { digits } => match b {
                    b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                        if digits >= 15 {
                            return Err(ParseError::BadFraming);
                        }
                        size = size * 16 + (b as char).to_digit(16).unwrap() as u64;
                        Chunk::Size { digits: digits + 1 }
                    }
                    _ if digits == 0 => return Err(ParseError::BadFraming),
                    b'\r' => Chunk::SizeLf,
                    b'\n' => self.after_size(size),
                    b';' | b' ' | b'\t' => Chunk::Ext,
                    _ => return Err(ParseError::BadFraming),
                },
                Chunk::Ext => match b {
                    b'\r' => Chunk::SizeLf,
                    b'\n' => self.after_size(size),
                    _ => Chunk::Ext,
                },
                Chunk::SizeLf => match b {
                    b'\n' => self.after_size(size),
                    _ => return Err(ParseError::BadFraming),
                },
                Chunk::Data(_) => unreachable!(),
                Chunk::DataCr => match b {
                    b'\r' => Chunk::DataLf,
                    b'\n' => {
                        size = 0;
                        Chunk::Size { digits: 0 }
                    }
                    _ => return Err(ParseError::BadFraming),
                },
                Chunk::DataLf => match b {
                    b'\n' => {
                        size = 0;
                        Chunk::Size { digits: 0 }
                    }
                    _ => return Err(ParseError::BadFraming),
                },
                Chunk::TrailerStart => match b {
                    b'\r' => Chunk::EndLf,
                    b'\n' => {
                        self.header_bytes += 1;
                        self.state = State::Done;
                        return Ok(i);
                    }
                    _ => Chunk::Trailer,
                },
                Chunk::Trailer => match b {
                    b'\n' => Chunk::TrailerStart,
                    _ => Chunk::Trailer,
                },
                Chunk::EndLf => match b {
                    b'\n' => {
                        self.header_bytes += 1;
                        self.state = State::Done;
                        return Ok(i);
                    }
                    _ => return Err(ParseError::BadFraming),
                },
            };
            self.header_bytes += 1;
        }
        self.state = State::Chunked { chunk, size };
        Ok(i)
    }

    fn after_size(&self, size: u64) -> Chunk {
        if size == 0 { Chunk::TrailerStart } else { Chunk::Data(size) }
    }
}

/// Whether an incomplete head may still become an HTTP/1.x one: after any empty lines (which
/// httparse skips), its first bytes agree with "HTTP/1.". Bytes from something else (an SSH
/// banner, a TLS alert, binary garbage) seldom hold a blank line, and without this check they
/// would wait for one until the request timed out or the connection closed (timeout or
/// closed_early, when the truth is malformed). The verdict depends only on the bytes so far,
/// never on how they were split into reads.
fn may_be_http(head: &[u8]) -> bool {
    const VERSION: &[u8] = b"HTTP/1.";
    let lead = head.iter().take_while(|b| matches!(b, b'\r' | b'\n')).count();
    let start = &head[lead..];
    let n = start.len().min(VERSION.len());
    start[..n] == VERSION[..n]
}

/// Whether the head's blank line is in `buf` (looking from `from`).
fn has_blank_line(buf: &[u8], from: usize) -> bool {
    // httparse skips empty lines before a status line: they do not end a head.
    let lead = buf.iter().take_while(|b| matches!(b, b'\r' | b'\n')).count();
    find_head_end(&buf[from.max(lead).min(buf.len())..]).is_some()
}

/// Finds the blank line that ends a head (CRLF CRLF, or bare LF LF as httparse accepts).
fn find_head_end(buf: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'\n', &buf[i..]) {
        let nl = i + off;
        match buf.get(nl + 1) {
            Some(b'\n') => return Some(nl + 2),
            Some(b'\r') if buf.get(nl + 2) == Some(&b'\n') => return Some(nl + 3),
            _ => i = nl + 1,
        }
    }
    None
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(start, |e| e + 1);
    &s[start..end]
}

fn parse_decimal(s: &[u8]) -> Option<u64> {
    let s = trim(s);
    if s.is_empty() || s.len() > 19 {
        return None;
    }
    s.iter().try_fold(0u64, |acc, &b| b.is_ascii_digit().then(|| acc * 10 + (b - b'0') as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `bytes` in pieces of `step` bytes; returns the reader and what was consumed.
    fn feed_in_steps(bytes: &[u8], step: usize, head: bool) -> (ResponseReader, Result<usize, ParseError>) {
        let mut r = ResponseReader::new(head);
        let mut total = 0;
        for piece in bytes.chunks(step) {
            match r.feed(piece) {
                Ok(Progress::Done { consumed }) => return (r, Ok(total + consumed)),
                Ok(Progress::More) => total += piece.len(),
                Err(e) => return (r, Err(e)),
            }
        }
        (r, Err(ParseError::Truncated))
    }

    const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
        5;ext=1\r\nhello\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: t\r\n\r\n";

    #[test]
    fn content_length_split_anywhere() {
        let msg = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nServer: x\r\n\r\n0123456789";
        for step in 1..=msg.len() {
            let (r, n) = feed_in_steps(msg, step, false);
            assert_eq!(n, Ok(msg.len()), "step {step}");
            assert_eq!((r.status, r.body_bytes, r.header_bytes), (200, 10, 50));
            assert!(r.keep_alive);
        }
    }

    #[test]
    fn chunked_split_at_every_byte() {
        for step in 1..=CHUNKED.len() {
            let (r, n) = feed_in_steps(CHUNKED, step, false);
            assert_eq!(n, Ok(CHUNKED.len()), "step {step}");
            assert_eq!(r.body_bytes, 31);
            // Framing counts with the headers: every byte is in one count.
            assert_eq!(r.header_bytes + r.body_bytes, CHUNKED.len() as u64);
        }
    }

    #[test]
    fn interim_1xx_is_skipped() {
        let msg = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n\
            HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
        for step in 1..=msg.len() {
            let (r, n) = feed_in_steps(msg, step, false);
            assert_eq!(n, Ok(msg.len()));
            assert_eq!((r.status, r.body_bytes), (201, 2));
            // Regression (found by the fuzzer): interim heads were counted again each time a
            // split head was re-parsed.
            assert_eq!(r.header_bytes, msg.len() as u64 - 2, "step {step}");
        }
    }

    #[test]
    fn many_interim_heads_are_each_within_the_limit() {
        // As many interim heads as allowed, together larger than MAX_HEAD_BYTES.
        let interim = format!("HTTP/1.1 103 Early Hints\r\nLink: <{}>\r\n\r\n", "a".repeat(700));
        let mut msg = interim.repeat(MAX_INTERIM_HEADS as usize).into_bytes();
        assert!(msg.len() > MAX_HEAD_BYTES);
        msg.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        for step in [1000, 4096, msg.len()] {
            let (r, n) = feed_in_steps(&msg, step, false);
            assert_eq!(n, Ok(msg.len()), "step {step}");
            assert_eq!(r.header_bytes + r.body_bytes, msg.len() as u64);
        }
    }

    #[test]
    fn endless_interim_heads_end_the_response() {
        let msg = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(MAX_INTERIM_HEADS as usize + 1);
        for step in [1, 7, 4096, msg.len()] {
            let (r, n) = feed_in_steps(&msg, step, false);
            assert_eq!(n, Err(ParseError::TooManyInterim), "step {step}");
            assert_eq!(r.status, 0);
        }
        // The count is per response.
        let mut r = ResponseReader::new(false);
        let some = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(MAX_INTERIM_HEADS as usize);
        for _ in 0..2 {
            assert_eq!(r.feed(&some), Ok(Progress::More));
            assert_eq!(r.feed(b"HTTP/1.1 204 No Content\r\n\r\n"), Ok(Progress::Done { consumed: 27 }));
            r.reset();
        }
    }

    #[test]
    fn head_and_204_have_no_body() {
        let msg = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
        assert_eq!(feed_in_steps(msg, 7, true).1, Ok(msg.len()));
        let msg = b"HTTP/1.1 204 No Content\r\n\r\n";
        assert_eq!(feed_in_steps(msg, 3, false).1, Ok(msg.len()));
    }

    #[test]
    fn close_delimited_body_ends_at_eof() {
        let mut r = ResponseReader::new(false);
        assert_eq!(r.feed(b"HTTP/1.0 200 OK\r\n\r\nabc"), Ok(Progress::More));
        assert_eq!(r.feed(b"def"), Ok(Progress::More));
        assert_eq!(r.eof(), Ok(()));
        assert_eq!(r.body_bytes, 6);
        assert!(!r.keep_alive);
    }

    #[test]
    fn connection_semantics() {
        let mut r = ResponseReader::new(false);
        r.feed(b"HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n").unwrap();
        assert!(!r.keep_alive);
        let mut r = ResponseReader::new(false);
        r.feed(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n").unwrap();
        assert!(r.keep_alive);
    }

    #[test]
    fn truncated_and_malformed() {
        let mut r = ResponseReader::new(false);
        r.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234").unwrap();
        assert_eq!(r.eof(), Err(ParseError::Truncated));
        let mut r = ResponseReader::new(false);
        assert_eq!(r.feed(b"HTTX/1.1 200 OK\r\n\r\n"), Err(ParseError::BadHead));
        let mut r = ResponseReader::new(false);
        assert_eq!(r.feed(b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n"), Err(ParseError::BadFraming));
        let mut r = ResponseReader::new(false);
        let big = format!("HTTP/1.1 200 OK\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD_BYTES));
        assert_eq!(feed_in_steps(big.as_bytes(), 4096, false).1, Err(ParseError::HeadTooLarge));
        assert_eq!(r.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), Err(ParseError::BadFraming));
    }

    #[test]
    fn non_http_bytes_are_malformed_at_once() {
        // No blank line in any of them: before, each waited for one (timeout or closed_early).
        let cases: [&[u8]; 4] = [
            b"SSH-2.0-OpenSSH_9.6p1 Debian-3\r\n",
            // A TLS alert record (handshake failure), as a TLS server answers plain bytes.
            b"\x15\x03\x01\x00\x02\x02\x28",
            b"\r\n\x00\xff\xfe garbage",
            b"HTTP/2.0 200 OK\r\n",
        ];
        for msg in cases {
            for step in 1..=msg.len() {
                assert_eq!(feed_in_steps(msg, step, false).1, Err(ParseError::BadHead), "{msg:?} in steps of {step}");
            }
        }
        // What may still become a status line waits for more.
        for prefix in [&b"H"[..], b"\r\nHTTP/", b"HTTP/1.1 200 OK\r\nX: y\r\n"] {
            assert_eq!(ResponseReader::new(false).feed(prefix), Ok(Progress::More), "{prefix:?}");
        }
    }

    /// Regressions found by the fuzzer: the outcome and the byte counts must not depend on how
    /// the reads fall.
    #[test]
    fn split_reads_agree_with_one_read() {
        let cases: [&[u8]; 3] =
            [b"HTTP/1.1 200\nTransfer-Encoding:chunked\n\n0X", b"\n\nHTX", b"\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"];
        for msg in cases {
            let (whole, whole_result) = feed_in_steps(msg, msg.len(), false);
            for step in 1..msg.len() {
                let (split, split_result) = feed_in_steps(msg, step, false);
                assert_eq!(split_result, whole_result, "{msg:?} in steps of {step}");
                assert_eq!((split.header_bytes, split.body_bytes), (whole.header_bytes, whole.body_bytes));
            }
        }
    }

    #[test]
    fn reports_leftover_after_done() {
        let mut r = ResponseReader::new(false);
        let p = r.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA").unwrap();
        assert_eq!(p, Progress::Done { consumed: 40 });
    }
}
