//! Fuzzes `webtune::engine::response::ResponseReader`, the incremental HTTP/1.x response parser.
//!
//! Input layout: byte 0 is a selector, the rest is the byte stream a server sent on one connection.
//!   - bit 0 of the selector: the request was HEAD (`ResponseReader::new(true)`);
//!   - bits 1..=7: how the stream is cut into reads (see `Splitter`).
//!
//! The stream is parsed twice: once delivered in one read, once cut into pieces as a network would
//! deliver them. Responses are pipelined: after `Done { consumed }` the reader is `reset()` and the
//! bytes left in that read are fed to it as the start of the next response. (The engine itself
//! closes a connection that sent bytes past a response; this just exercises `reset` and the
//! `consumed` boundary on many responses per input.)
//!
//! Checked:
//!   - nothing panics (including arithmetic overflow: run with `-a`, debug assertions);
//!   - `consumed <= piece.len()`, and a fresh reader never finishes having consumed nothing;
//!   - once Done: `header_bytes + body_bytes` == bytes consumed by that response across feeds
//!     (for a close-delimited body at `eof()`: == all bytes fed to it), chunked or not (chunk
//!     framing and trailers count in `header_bytes`); when `eof()` reports truncation: `<=` the
//!     bytes fed;
//!   - `header_bytes`, `body_bytes` never exceed the input length;
//!   - a finished response has a final status (not 1xx except 101); one ended by `eof()` is
//!     not keep-alive;
//!   - differential: whole vs split give the same sequence of outcomes (same Done/Err/eof
//!     class and error variant, consumed, status, header_bytes, body_bytes, keep_alive).
#![no_main]

use libfuzzer_sys::fuzz_target;
use webtune::engine::response::{MAX_HEAD_BYTES, ParseError, Progress, ResponseReader};

/// How one response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// `feed` returned Done; this many bytes of the stream belonged to the response.
    Done(u64),
    /// `feed` returned an error.
    Err(ParseError),
    /// The stream ended before Done; what `eof()` said.
    Eof(Result<(), ParseError>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Outcome {
    end: End,
    status: u16,
    header_bytes: u64,
    body_bytes: u64,
    keep_alive: bool,
}

/// Cuts the stream into reads. `mode` is 0..=127.
struct Splitter {
    mode: u8,
    rng: u64,
    emitted: usize,
}

/// Fixed read sizes for modes 16..=31: around typical buffer sizes and MAX_HEAD_BYTES.
const FIXED: [usize; 16] =
    [17, 31, 32, 63, 64, 100, 127, 128, 255, 256, 511, 1000, 1024, 1460, 4096, MAX_HEAD_BYTES + 1];

impl Splitter {
    fn new(mode: u8) -> Self {
        Splitter { mode, rng: 0x9E37_79B9_7F4A_7C15 ^ (mode as u64).wrapping_mul(0x2545_F491_4F6C_DD1D), emitted: 0 }
    }

    fn next_rand(&mut self) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Size of the next read, given the stream length and how much is left (> 0). Never 0.
    fn next(&mut self, total: usize, left: usize) -> usize {
        let n = match self.mode {
            // 1..=16 bytes per read, 1 being the byte-at-a-time worst case.
            0..=15 => self.mode as usize + 1,
            16..=31 => FIXED[(self.mode - 16) as usize],
            // Exactly two reads, cut at a fraction of the stream.
            32..=47 => {
                let cut = (total * (self.mode as usize - 31) / 17).max(1);
                if self.emitted == 0 { cut } else { left }
            }
            // Pseudo-random sizes, mostly tiny, sometimes larger.
            _ => {
                let r = self.next_rand();
                let cap = match (self.mode >> 4) & 3 {
                    0 => 3,
                    1 => 17,
                    2 => 128,
                    _ => 1500,
                };
                if r >> 60 == 0 { 1 + (r as usize >> 8) % 4096 } else { 1 + (r as usize >> 8) % cap }
            }
        };
        let n = n.clamp(1, left);
        self.emitted += n;
        n
    }
}

/// One pending response being parsed.
struct Current {
    reader: ResponseReader,
    /// Bytes fed to this reader so far (for the consumed-bytes invariant).
    fed: u64,
}

/// Checks a finished response that consumed `consumed_total` bytes: every one of them is counted
/// once, in `header_bytes` (heads, chunk framing, trailers) or in `body_bytes` (payload).
fn check_done(r: &ResponseReader, consumed_total: u64, input_len: usize) {
    check_status(r);
    assert_eq!(
        r.header_bytes + r.body_bytes,
        consumed_total,
        "header_bytes {} + body_bytes {} != bytes consumed {consumed_total}",
        r.header_bytes,
        r.body_bytes
    );
    check_bounds(r, input_len);
}

fn check_status(r: &ResponseReader) {
    // httparse takes any three digits, so 000..=099 are possible (and harmless) final statuses.
    assert!(r.status <= 999, "finished with status {}", r.status);
    assert!(!(100..200).contains(&r.status) || r.status == 101, "finished on an interim status {}", r.status);
}

fn check_bounds(r: &ResponseReader, input_len: usize) {
    assert!(r.body_bytes <= input_len as u64, "body_bytes {} > input length {}", r.body_bytes, input_len);
    assert!(r.header_bytes <= input_len as u64, "header_bytes {} > input length {}", r.header_bytes, input_len);
}

fn outcome(r: &ResponseReader, end: End) -> Outcome {
    Outcome { end, status: r.status, header_bytes: r.header_bytes, body_bytes: r.body_bytes, keep_alive: r.keep_alive }
}

/// Parses `data` as a stream of pipelined responses, delivered in reads cut by `next_size`.
fn run(data: &[u8], head_request: bool, mut next_size: impl FnMut(usize) -> usize) -> Vec<Outcome> {
    let mut out = Vec::new();
    let mut cur = Current { reader: ResponseReader::new(head_request), fed: 0 };
    let mut pos = 0;
    'reads: while pos < data.len() {
        let n = next_size(data.len() - pos);
        assert!(n >= 1 && n <= data.len() - pos);
        let mut piece = &data[pos..pos + n];
        pos += n;
        // One read may finish several responses.
        while !piece.is_empty() {
            match cur.reader.feed(piece) {
                Ok(Progress::More) => {
                    cur.fed += piece.len() as u64;
                    check_bounds(&cur.reader, data.len());
                    break;
                }
                Ok(Progress::Done { consumed }) => {
                    assert!(consumed <= piece.len(), "consumed {consumed} > piece length {}", piece.len());
                    assert!(cur.reader.is_done());
                    let total = cur.fed + consumed as u64;
                    assert!(total > 0, "a fresh reader finished having consumed nothing");
                    check_done(&cur.reader, total, data.len());
                    out.push(outcome(&cur.reader, End::Done(total)));
                    // Done is sticky until reset.
                    assert_eq!(cur.reader.feed(b"x"), Ok(Progress::Done { consumed: 0 }));
                    assert_eq!(cur.reader.eof(), Ok(()));
                    cur.reader.reset();
                    assert!(!cur.reader.started());
                    cur.fed = 0;
                    piece = &piece[consumed..];
                }
                Err(e) => {
                    check_bounds(&cur.reader, data.len());
                    out.push(outcome(&cur.reader, End::Err(e)));
                    break 'reads;
                }
            }
        }
    }
    let errored = matches!(out.last(), Some(Outcome { end: End::Err(_), .. }));
    // End of stream: a response in progress (or no response at all) meets eof().
    if !errored && (cur.fed > 0 || out.is_empty()) {
        let r = cur.reader.eof();
        match r {
            Ok(()) => {
                assert!(cur.reader.is_done());
                assert!(!cur.reader.keep_alive, "a close-delimited response left keep_alive set");
                check_done(&cur.reader, cur.fed, data.len());
            }
            Err(e) => {
                assert_eq!(e, ParseError::Truncated, "eof() may only report truncation");
                let counted = cur.reader.header_bytes + cur.reader.body_bytes;
                assert!(counted <= cur.fed, "truncated: header_bytes + body_bytes {counted} > bytes fed {}", cur.fed);
                check_bounds(&cur.reader, data.len());
            }
        }
        out.push(outcome(&cur.reader, End::Eof(r)));
    }
    out
}

/// Whole and split runs must agree; the one tolerated difference is which of two head errors is
/// seen first when the stream is larger than MAX_HEAD_BYTES (a split read can hit the size limit
/// before the bad byte the whole read sees, or the other way round).
fn same(a: &[Outcome], b: &[Outcome], input_len: usize) -> bool {
    if a == b {
        return true;
    }
    if input_len <= MAX_HEAD_BYTES || a.len() != b.len() {
        return false;
    }
    let n = a.len();
    a[..n - 1] == b[..n - 1]
        && matches!(
            (a[n - 1].end, b[n - 1].end),
            (End::Err(ParseError::BadHead), End::Err(ParseError::HeadTooLarge))
                | (End::Err(ParseError::HeadTooLarge), End::Err(ParseError::BadHead))
        )
}

fuzz_target!(|input: &[u8]| {
    let Some((&selector, data)) = input.split_first() else { return };
    let head_request = selector & 1 == 1;
    let mode = selector >> 1;

    let whole = run(data, head_request, |left| left);
    let mut splitter = Splitter::new(mode);
    let split = run(data, head_request, |left| splitter.next(data.len(), left));

    assert!(
        same(&whole, &split, data.len()),
        "whole and split disagree (head_request={head_request}, mode={mode})\n whole: {whole:?}\n split: {split:?}"
    );
});
