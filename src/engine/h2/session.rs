//! One HTTP/2 connection's protocol state, without I/O: feed it the bytes read, it reports
//! what happened to which stream and queues what must be written (acks, window updates).
//! Everything a server sends is bounded: frame size, header block size (a CONTINUATION
//! flood ends as malformed), decoded header list size.

use super::frame::{self, Head, code, flag, kind, setting};
use super::hpack;

/// The largest header block (HEADERS + CONTINUATIONs) and decoded header list accepted: the
/// HTTP/1 reader's head limit.
pub const MAX_HEADER_LIST: usize = crate::engine::response::MAX_HEAD_BYTES;

/// What a read brought.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A complete header block: `status` 0 for trailers; `bytes` on the wire (frame headers
    /// and the compressed block).
    Headers { stream: u32, status: u16, bytes: u64, end: bool },
    /// Body bytes (padding excluded).
    Data { stream: u32, len: u64, end: bool },
    /// The server reset the stream (RST_STREAM).
    Reset { stream: u32, code: u32 },
    /// The server will process no stream above `last` (GOAWAY).
    GoAway { last: u32, code: u32 },
    /// The server widened a stream's send window (WINDOW_UPDATE); 0 is the peer's error.
    WindowUpdate { stream: u32, increment: u32 },
}

/// The largest flow-control window (RFC 9113 §6.9.1).
pub const MAX_WINDOW: i64 = 0x7fff_ffff;

/// How a connection's requests use the server's HPACK dynamic table (`frame::Prepared`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Table {
    /// Literals only: no SETTINGS yet, or a table smaller than the default.
    Unused,
    /// The next request inserts the shared fields.
    Empty,
    /// They are in: requests refer to them.
    Primed,
    /// The server shrank its table under them: no more requests on this connection.
    Lost,
}

/// A violation of the protocol by the server: the connection is unusable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// One HTTP/2 connection's state as frames arrive: the header decoder, a frame cut by the
/// read, the header block being received.
pub struct Session {
    decoder: hpack::Decoder,
    /// An incomplete frame carried over from the previous read.
    partial: Vec<u8>,
    /// The header block being received: its stream, END_STREAM, fragments so far and the
    /// frames' bytes on the wire.
    block_stream: u32,
    block_end: bool,
    block: Vec<u8>,
    block_wire: u64,
    /// Frames to write: acks, window updates, requests.
    pub out: Vec<u8>,
    /// The server's first SETTINGS has come: no stream starts before (its limits are known).
    pub settings_seen: bool,
    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS.
    pub max_streams: u32,
    /// The peer's initial stream window and the connection's send window (request bodies).
    pub stream_window: i64,
    pub send_window: i64,
    /// Body bytes received since the last connection WINDOW_UPDATE.
    unacked: u64,
    /// The last stream the server said it will process, after a GOAWAY.
    pub goaway: Option<u32>,
    /// The GOAWAY code of the violation `feed` reported (PROTOCOL_ERROR unless a
    /// FLOW_CONTROL_ERROR).
    pub error_code: u32,
    /// What the requests do with the server's HPACK dynamic table, and its size limit.
    table: Table,
    table_limit: u32,
    /// Keep the first response's Server header here (asked for once per run).
    pub capture_server: bool,
    pub server: Option<String>,
}

impl Default for Session {
    /// A new connection's state; its preface and SETTINGS are queued in `out`.
    fn default() -> Session {
        let mut out = Vec::with_capacity(4096);
        frame::put_preface(&mut out, MAX_HEADER_LIST as u32);
        Session {
            decoder: hpack::Decoder::default(),
            partial: Vec::new(),
            block_stream: 0,
            block_end: false,
            block: Vec::new(),
            block_wire: 0,
            out,
            settings_seen: false,
            max_streams: frame::ASSUMED_MAX_STREAMS,
            stream_window: i64::from(frame::DEFAULT_WINDOW),
            send_window: i64::from(frame::DEFAULT_WINDOW),
            unacked: 0,
            goaway: None,
            error_code: code::PROTOCOL_ERROR,
            table: Table::Unused,
            table_limit: frame::TABLE_SIZE,
            capture_server: false,
            server: None,
        }
    }
}

impl Session {
    /// Feeds bytes read from the connection; `events` receives what they completed.
    pub fn feed(&mut self, mut data: &[u8], events: &mut Vec<Event>) -> Result<(), Malformed> {
        if !self.partial.is_empty() {
            // Complete the carried frame from the new bytes, then go on in place.
            loop {
                let need = match self.partial.len() {
                    n if n < frame::HEADER_LEN => frame::HEADER_LEN,
                    _ => frame::HEADER_LEN + self.check_len(Head::parse(&self.partial).len)?,
                };
                if self.partial.len() >= frame::HEADER_LEN && self.partial.len() == need {
                    break;
                }
                let take = (need - self.partial.len()).min(data.len());
                if take == 0 {
                    return Ok(());
                }
                self.partial.extend_from_slice(&data[..take]);
                data = &data[take..];
            }
            let mut carried = std::mem::take(&mut self.partial);
            let result = self.frame(&carried, events);
            // Keep the allocation for the next carried frame.
            carried.clear();
            self.partial = carried;
            result?;
        }
        while data.len() >= frame::HEADER_LEN {
            let need = frame::HEADER_LEN + self.check_len(Head::parse(data).len)?;
            if data.len() < need {
                break;
            }
            self.frame(&data[..need], events)?;
            data = &data[need..];
        }
        self.partial.extend_from_slice(data);
        Ok(())
    }

    fn check_len(&self, len: usize) -> Result<usize, Malformed> {
        if len > frame::MAX_FRAME {
            return Err(Malformed);
        }
        Ok(len)
    }

    /// One complete frame.
    fn frame(&mut self, bytes: &[u8], events: &mut Vec<Event>) -> Result<(), Malformed> {
        let h = Head::parse(bytes);
        self.check_len(h.len)?;
        let payload = &bytes[frame::HEADER_LEN..];
        if self.block_stream != 0 && (h.kind != kind::CONTINUATION || h.stream != self.block_stream) {
            // A header block must be followed by its own CONTINUATIONs only.
            return Err(Malformed);
        }
        match h.kind {
            kind::DATA => {
                if h.stream == 0 {
                    return Err(Malformed);
                }
                let body = unpad(h.flags, payload)?;
                self.unacked += h.len as u64;
                if self.unacked >= u64::from(frame::WINDOW / 2) {
                    frame::put_window_update(&mut self.out, 0, self.unacked as u32);
                    self.unacked = 0;
                }
                let end = h.flags & flag::END_STREAM != 0;
                events.push(Event::Data { stream: h.stream, len: body.len() as u64, end });
            }
            kind::HEADERS => {
                if h.stream == 0 {
                    return Err(Malformed);
                }
                let mut fragment = unpad(h.flags, payload)?;
                if h.flags & flag::PRIORITY != 0 {
                    fragment = fragment.get(5..).ok_or(Malformed)?;
                }
                self.block.clear();
                self.block_stream = h.stream;
                self.block_end = h.flags & flag::END_STREAM != 0;
                self.block_wire = 0;
                self.fragment(h, fragment, events)?;
            }
            kind::CONTINUATION => {
                if self.block_stream == 0 {
                    return Err(Malformed);
                }
                self.fragment(h, payload, events)?;
            }
            kind::RST_STREAM => {
                if h.stream == 0 || payload.len() != 4 {
                    return Err(Malformed);
                }
                events.push(Event::Reset { stream: h.stream, code: be32(payload) });
            }
            kind::SETTINGS => {
                if h.stream != 0 || !payload.len().is_multiple_of(6) {
                    return Err(Malformed);
                }
                if h.flags & flag::ACK == 0 {
                    for s in payload.chunks_exact(6) {
                        self.setting(u16::from_be_bytes([s[0], s[1]]), be32(&s[2..]))?;
                    }
                    frame::put_settings_ack(&mut self.out);
                    self.table = match (self.table, self.table_limit >= frame::TABLE_SIZE) {
                        (Table::Unused, true) if !self.settings_seen => Table::Empty,
                        (table, true) => table,
                        // Entries the requests name may be gone; a smaller table must also
                        // be announced in the next header block: end here instead.
                        (Table::Primed | Table::Lost, false) => Table::Lost,
                        (_, false) => Table::Unused,
                    };
                    self.settings_seen = true;
                }
            }
            kind::PING => {
                if h.stream != 0 || payload.len() != 8 {
                    return Err(Malformed);
                }
                if h.flags & flag::ACK == 0 {
                    frame::put_ping_ack(&mut self.out, payload);
                }
            }
            kind::GOAWAY => {
                if h.stream != 0 || payload.len() < 8 {
                    return Err(Malformed);
                }
                let last = be32(payload) & 0x7fff_ffff;
                // A second GOAWAY may only lower the last stream.
                let last = self.goaway.map_or(last, |l| l.min(last));
                self.goaway = Some(last);
                events.push(Event::GoAway { last, code: be32(&payload[4..]) });
            }
            kind::WINDOW_UPDATE => {
                if payload.len() != 4 {
                    return Err(Malformed);
                }
                let increment = be32(payload) & 0x7fff_ffff;
                if h.stream != 0 {
                    // The stream's window is the worker's (it knows which streams are open).
                    events.push(Event::WindowUpdate { stream: h.stream, increment });
                    return Ok(());
                }
                // RFC 9113 §6.9: a zero increment on the connection is a PROTOCOL_ERROR, a
                // window past 2^31-1 a FLOW_CONTROL_ERROR; both end the connection.
                if increment == 0 {
                    return Err(Malformed);
                }
                self.send_window += i64::from(increment);
                if self.send_window > MAX_WINDOW {
                    self.error_code = code::FLOW_CONTROL_ERROR;
                    return Err(Malformed);
                }
            }
            // Push is disabled by our SETTINGS: a promise is a protocol error.
            kind::PUSH_PROMISE => return Err(Malformed),
            // PRIORITY, and unknown kinds, which must be ignored (RFC 9113 §4.1).
            _ => {}
        }
        Ok(())
    }

    fn setting(&mut self, id: u16, value: u32) -> Result<(), Malformed> {
        match id {
            setting::MAX_CONCURRENT_STREAMS => self.max_streams = value,
            setting::INITIAL_WINDOW_SIZE => {
                if value > 0x7fff_ffff {
                    return Err(Malformed);
                }
                self.stream_window = i64::from(value);
            }
            setting::MAX_FRAME_SIZE if !(16_384..=16_777_215).contains(&value) => return Err(Malformed),
            setting::ENABLE_PUSH if value > 1 => return Err(Malformed),
            setting::HEADER_TABLE_SIZE => self.table_limit = value,
            _ => {}
        }
        Ok(())
    }

    /// Adds a header block fragment; decodes the block when it ends.
    fn fragment(&mut self, h: Head, fragment: &[u8], events: &mut Vec<Event>) -> Result<(), Malformed> {
        if self.block.len() + fragment.len() > MAX_HEADER_LIST {
            return Err(Malformed);
        }
        self.block.extend_from_slice(fragment);
        self.block_wire += (frame::HEADER_LEN + h.len) as u64;
        if h.flags & flag::END_HEADERS == 0 {
            return Ok(());
        }
        let stream = std::mem::take(&mut self.block_stream);
        let mut status = None;
        let mut first = true;
        let mut bad = false;
        let mut size = 0usize;
        let capture = self.capture_server && self.server.is_none();
        let mut server = None;
        let decoded = self.decoder.decode(&self.block, |name, value| {
            size += name.len() + value.len() + 32;
            if name == b":status" {
                // The status must come first, once, as three digits.
                bad |= !first || value.len() != 3 || !value.iter().all(u8::is_ascii_digit);
                status = std::str::from_utf8(value).ok().and_then(|v| v.parse::<u16>().ok());
            } else if name.first() == Some(&b':') {
                bad = true;
            } else if capture && name == b"server" {
                server = Some(String::from_utf8_lossy(value).into_owned());
            }
            first = false;
        });
        if decoded.is_err() || bad || size > MAX_HEADER_LIST {
            return Err(Malformed);
        }
        if server.is_some() {
            self.server = server;
        }
        let status = match status {
            Some(s) if (100..=999).contains(&s) => s,
            Some(_) => return Err(Malformed),
            // A block without a status is a trailer: it must end the stream.
            None if self.block_end => 0,
            None => return Err(Malformed),
        };
        events.push(Event::Headers { stream, status, bytes: self.block_wire, end: self.block_end });
        Ok(())
    }

    /// Queues a request for `stream` in the form the table's state allows, taking its body
    /// from the send window.
    pub fn request(&mut self, request: &frame::Prepared, stream: u32) {
        let frames = match self.table {
            Table::Unused | Table::Lost => &request.plain,
            Table::Empty => {
                self.table = Table::Primed;
                &request.priming
            }
            Table::Primed => &request.indexed,
        };
        self.send_window -= request.body as i64;
        frame::put_request(&mut self.out, frames, stream);
    }

    /// No new stream may start here (the server's GOAWAY, or its table shrank under the
    /// requests): the connection ends once its streams are done.
    pub fn draining(&self) -> bool {
        self.goaway.is_some() || self.table == Table::Lost
    }

    /// Gives a stream's window back after `n` body bytes (only a body near 1 GiB needs it).
    pub fn consumed(&mut self, stream: u32, n: u32) {
        frame::put_window_update(&mut self.out, stream, n);
    }

    /// Tells the server this client gave up on `stream` (its timeout).
    pub fn cancel(&mut self, stream: u32) {
        frame::put_rst_stream(&mut self.out, stream, code::CANCEL);
    }

    /// Ends `stream` for the server's breach of the protocol on it (a stream error).
    pub fn reset(&mut self, stream: u32, error: u32) {
        frame::put_rst_stream(&mut self.out, stream, error);
    }
}

/// A padded frame's payload without its padding.
fn unpad(flags: u8, payload: &[u8]) -> Result<&[u8], Malformed> {
    if flags & flag::PADDED == 0 {
        return Ok(payload);
    }
    let (&pad, rest) = payload.split_first().ok_or(Malformed)?;
    rest.len().checked_sub(usize::from(pad)).map(|end| &rest[..end]).ok_or(Malformed)
}

#[inline]
fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::h2::frame::put_head;

    fn response(stream: u32, body: &[u8]) -> Vec<u8> {
        let mut enc = httlib_hpack::Encoder::default();
        let mut block = Vec::new();
        let flags = httlib_hpack::Encoder::HUFFMAN_VALUE | httlib_hpack::Encoder::WITH_INDEXING;
        enc.encode((b":status".to_vec(), b"200".to_vec(), flags), &mut block).unwrap();
        enc.encode((b"server".to_vec(), b"test".to_vec(), flags), &mut block).unwrap();
        let mut out = Vec::new();
        put_head(&mut out, block.len(), kind::HEADERS, flag::END_HEADERS, stream);
        out.extend_from_slice(&block);
        put_head(&mut out, body.len() + 3, kind::DATA, flag::END_STREAM | flag::PADDED, stream);
        out.push(2);
        out.extend_from_slice(body);
        out.extend_from_slice(&[0, 0]);
        out
    }

    /// A response split at every byte boundary gives the same events as whole.
    #[test]
    fn frames_split_anywhere_decode_the_same() {
        let mut wire = Vec::new();
        put_head(&mut wire, 6, kind::SETTINGS, 0, 0);
        wire.extend_from_slice(&[0, 3, 0, 0, 0, 7]);
        wire.extend(response(1, b"hello"));
        wire.extend(response(3, b"world!"));
        for cut in 0..wire.len() {
            let mut s = Session { capture_server: true, ..Session::default() };
            let mut events = Vec::new();
            s.feed(&wire[..cut], &mut events).unwrap();
            s.feed(&wire[cut..], &mut events).unwrap();
            assert_eq!(s.max_streams, 7);
            assert_eq!(s.server.as_deref(), Some("test"));
            let datas: Vec<_> = events
                .iter()
                .filter_map(
                    |e| if let Event::Data { stream, len, end } = e { Some((*stream, *len, *end)) } else { None },
                )
                .collect();
            assert_eq!(datas, [(1, 5, true), (3, 6, true)], "cut at {cut}");
            assert!(matches!(events[0], Event::Headers { stream: 1, status: 200, end: false, .. }), "cut at {cut}");
        }
    }

    /// Header blocks that never end, frames over the limit and promises are refused.
    #[test]
    fn floods_and_violations_are_malformed() {
        let mut s = Session::default();
        let mut wire = Vec::new();
        put_head(&mut wire, 0, kind::HEADERS, 0, 1);
        for _ in 0..(MAX_HEADER_LIST / 1000 + 1) {
            put_head(&mut wire, 1000, kind::CONTINUATION, 0, 1);
            wire.extend_from_slice(&[0x40; 1000]);
        }
        assert_eq!(s.feed(&wire, &mut Vec::new()), Err(Malformed));

        let mut big = Vec::new();
        put_head(&mut big, frame::MAX_FRAME + 1, kind::DATA, 0, 1);
        assert_eq!(Session::default().feed(&big, &mut Vec::new()), Err(Malformed));

        let mut promise = Vec::new();
        put_head(&mut promise, 4, kind::PUSH_PROMISE, flag::END_HEADERS, 1);
        promise.extend_from_slice(&[0, 0, 0, 2]);
        assert_eq!(Session::default().feed(&promise, &mut Vec::new()), Err(Malformed));

        // Another frame between HEADERS and its CONTINUATION.
        let mut cut = Vec::new();
        put_head(&mut cut, 0, kind::HEADERS, 0, 1);
        put_head(&mut cut, 8, kind::PING, 0, 0);
        cut.extend_from_slice(&[0; 8]);
        assert_eq!(Session::default().feed(&cut, &mut Vec::new()), Err(Malformed));
    }

    /// Random bytes as header blocks and frames: an error or events, never a panic or a hang.
    #[test]
    fn garbage_never_panics() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..2000 {
            let mut s = Session::default();
            let len = rng.usize(0..200);
            let mut wire = Vec::new();
            put_head(&mut wire, len, kind::HEADERS, flag::END_HEADERS, 1);
            wire.extend((0..len).map(|_| rng.u8(..)));
            let _ = s.feed(&wire, &mut Vec::new());
            let junk: Vec<u8> = (0..rng.usize(0..300)).map(|_| rng.u8(..)).collect();
            let _ = Session::default().feed(&junk, &mut Vec::new());
        }
    }

    #[test]
    fn ping_is_answered_and_resets_and_goaway_are_reported() {
        let mut s = Session::default();
        let preface = s.out.len();
        let mut wire = Vec::new();
        put_head(&mut wire, 8, kind::PING, 0, 0);
        wire.extend_from_slice(b"12345678");
        frame::put_rst_stream(&mut wire, 5, 2);
        frame::put_goaway(&mut wire, 3, 11);
        frame::put_goaway(&mut wire, 7, 0);
        let mut events = Vec::new();
        s.feed(&wire, &mut events).unwrap();
        assert_eq!(&s.out[preface + 9..], b"12345678");
        assert_eq!(Head::parse(&s.out[preface..]).flags, flag::ACK);
        assert_eq!(
            events,
            [
                Event::Reset { stream: 5, code: 2 },
                Event::GoAway { last: 3, code: 11 },
                Event::GoAway { last: 3, code: 0 }
            ]
        );
    }

    fn settings(pairs: &[(u16, u32)]) -> Vec<u8> {
        let mut wire = Vec::new();
        put_head(&mut wire, pairs.len() * 6, kind::SETTINGS, 0, 0);
        for (id, value) in pairs {
            wire.extend_from_slice(&id.to_be_bytes());
            wire.extend_from_slice(&value.to_be_bytes());
        }
        wire
    }

    /// Which form of a request each of `n` requests went out in.
    fn forms(s: &mut Session, n: usize) -> Vec<&'static str> {
        let fields = frame::request_fields(
            &crate::engine::request::RequestSpec {
                method: "GET".into(),
                path: "/p".into(),
                host: "h".into(),
                ..Default::default()
            },
            false,
        );
        let p = frame::prepare(&[&fields]).remove(0);
        (0..n)
            .map(|k| {
                s.out.clear();
                s.request(&p, 2 * k as u32 + 1);
                let form = &s.out[..];
                let name = |f: &[u8]| f[frame::HEADER_LEN..] == form[frame::HEADER_LEN..];
                if name(&p.plain) {
                    "plain"
                } else if name(&p.priming) {
                    "priming"
                } else {
                    assert!(name(&p.indexed));
                    "indexed"
                }
            })
            .collect()
    }

    /// Literals until the server's SETTINGS; then one request fills the table and the rest
    /// refer to it, unless the server's table is smaller than the default. A table shrunk
    /// under the requests ends the connection's new streams.
    #[test]
    fn the_dynamic_table_is_used_only_as_the_servers_settings_allow() {
        let mut s = Session::default();
        assert_eq!(forms(&mut s, 1), ["plain"]);
        s.feed(&settings(&[(setting::MAX_CONCURRENT_STREAMS, 100)]), &mut Vec::new()).unwrap();
        assert_eq!(forms(&mut s, 3), ["priming", "indexed", "indexed"]);
        assert!(!s.draining());
        // A later SETTINGS keeping the default changes nothing; a smaller table ends it.
        s.feed(&settings(&[(setting::HEADER_TABLE_SIZE, 8192)]), &mut Vec::new()).unwrap();
        assert_eq!(forms(&mut s, 1), ["indexed"]);
        s.feed(&settings(&[(setting::HEADER_TABLE_SIZE, 100)]), &mut Vec::new()).unwrap();
        assert!(s.draining());

        let mut small = Session::default();
        small.feed(&settings(&[(setting::HEADER_TABLE_SIZE, 0)]), &mut Vec::new()).unwrap();
        assert_eq!(forms(&mut small, 2), ["plain", "plain"]);
        assert!(!small.draining());
    }
}
