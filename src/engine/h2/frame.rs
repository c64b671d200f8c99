//! HTTP/2 frames (RFC 9113 §4, §6): the 9-byte header, the few frames a client writes, and
//! a request rendered once as HEADERS (+ DATA) frames whose stream id is patched per request.
//!
//! Written by hand rather than taken from the `h2` crate: that crate owns its connection and
//! needs a tokio runtime, while the engine drives its sockets from its own epoll loop and
//! wants a request to cost one memcpy of prepared bytes.

use crate::engine::request::RequestSpec;

pub const HEADER_LEN: usize = 9;
/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// The default SETTINGS_MAX_FRAME_SIZE, which this client never raises: a server's frame
/// larger than this is a protocol error.
pub const MAX_FRAME: usize = 16_384;
/// Streams a server is assumed to allow before its SETTINGS say (RFC 9113 §6.5.2 advises at
/// least 100).
pub const ASSUMED_MAX_STREAMS: u32 = 100;
/// The receive window this client offers per stream and for the connection, as h2load's
/// default (-w 30, -W 30): the server never waits for a WINDOW_UPDATE on loopback.
pub const WINDOW: u32 = (1 << 30) - 1;
/// The window a peer starts with before its SETTINGS (RFC 9113 §6.9.2).
pub const DEFAULT_WINDOW: u32 = 65_535;

pub mod kind {
    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const PRIORITY: u8 = 0x2;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PUSH_PROMISE: u8 = 0x5;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;
}

pub mod flag {
    pub const END_STREAM: u8 = 0x1;
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const PADDED: u8 = 0x8;
    pub const PRIORITY: u8 = 0x20;
}

pub mod setting {
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    pub const ENABLE_PUSH: u16 = 0x2;
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
}

/// RST_STREAM and GOAWAY error codes this client sends or tells apart.
pub mod code {
    pub const NO_ERROR: u32 = 0x0;
    pub const PROTOCOL_ERROR: u32 = 0x1;
    pub const CANCEL: u32 = 0x8;
}

/// A frame's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl Head {
    /// Parses the first 9 bytes of `b` (which must have them).
    #[inline]
    pub fn parse(b: &[u8]) -> Head {
        Head {
            len: (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }
}

/// Appends a frame header.
#[inline]
pub fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let l = (len as u32).to_be_bytes();
    out.extend_from_slice(&[l[1], l[2], l[3], kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// The preface, SETTINGS (no push, large windows, bounded header lists) and a connection
/// WINDOW_UPDATE up to `WINDOW`: what a client sends first.
pub fn put_preface(out: &mut Vec<u8>, max_header_list: u32) {
    out.extend_from_slice(PREFACE);
    let settings: [(u16, u32); 3] = [
        (setting::ENABLE_PUSH, 0),
        (setting::INITIAL_WINDOW_SIZE, WINDOW),
        (setting::MAX_HEADER_LIST_SIZE, max_header_list),
    ];
    put_head(out, settings.len() * 6, kind::SETTINGS, 0, 0);
    for (id, value) in settings {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
    put_window_update(out, 0, WINDOW - DEFAULT_WINDOW);
}

pub fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_head(out, 4, kind::WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

pub fn put_rst_stream(out: &mut Vec<u8>, stream: u32, error: u32) {
    put_head(out, 4, kind::RST_STREAM, 0, stream);
    out.extend_from_slice(&error.to_be_bytes());
}

pub fn put_settings_ack(out: &mut Vec<u8>) {
    put_head(out, 0, kind::SETTINGS, flag::ACK, 0);
}

pub fn put_ping_ack(out: &mut Vec<u8>, payload: &[u8]) {
    put_head(out, 8, kind::PING, flag::ACK, 0);
    out.extend_from_slice(payload);
}

pub fn put_goaway(out: &mut Vec<u8>, last_stream: u32, error: u32) {
    put_head(out, 8, kind::GOAWAY, 0, 0);
    out.extend_from_slice(&last_stream.to_be_bytes());
    out.extend_from_slice(&error.to_be_bytes());
}

/// Appends a prepared request (`render_request`) as stream `stream`: the bytes are copied and
/// each frame's stream id written in.
#[inline]
pub fn put_request(out: &mut Vec<u8>, request: &[u8], stream: u32) {
    let base = out.len();
    out.extend_from_slice(request);
    let mut at = base;
    while at + HEADER_LEN <= out.len() {
        let len = Head::parse(&out[at..]).len;
        out[at + 5..at + 9].copy_from_slice(&stream.to_be_bytes());
        at += HEADER_LEN + len;
    }
}

/// The request's body length in DATA frames (what flow control counts).
pub fn body_len(request: &[u8]) -> usize {
    let mut at = 0;
    let mut body = 0;
    while at + HEADER_LEN <= request.len() {
        let h = Head::parse(&request[at..]);
        if h.kind == kind::DATA {
            body += h.len;
        }
        at += HEADER_LEN + h.len;
    }
    body
}

/// Headers that describe an HTTP/1 connection and have no place in HTTP/2 (RFC 9113
/// §8.2.2); Host becomes :authority.
const CONNECTION_SPECIFIC: [&str; 6] =
    ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"];

/// Header names of the HPACK static table (RFC 7541 appendix A) that requests use, with
/// their index: a literal with an indexed name saves the name's bytes.
const STATIC_NAMES: [(&str, u8); 14] = [
    (":authority", 1),
    (":method", 2),
    (":path", 4),
    (":scheme", 6),
    ("accept-encoding", 16),
    ("accept-language", 17),
    ("accept", 19),
    ("authorization", 23),
    ("cache-control", 24),
    ("content-length", 28),
    ("content-type", 31),
    ("cookie", 32),
    ("referer", 51),
    ("user-agent", 58),
];

/// The request as frames with stream id 0: HEADERS (and CONTINUATIONs when the block is
/// larger than a frame), then DATA frames for the body, END_STREAM on the last. The header
/// block uses static-table indices and literals without indexing, so it never touches the
/// server's dynamic table and the same bytes serve every request.
pub fn render_request(spec: &RequestSpec, https: bool) -> Vec<u8> {
    let mut block = Vec::with_capacity(128);
    match spec.method.as_str() {
        "GET" => block.push(0x80 | 2),
        "POST" => block.push(0x80 | 3),
        m => literal(&mut block, ":method", m),
    }
    block.push(0x80 | if https { 7 } else { 6 });
    match spec.path.as_str() {
        "/" => block.push(0x80 | 4),
        p => literal(&mut block, ":path", p),
    }
    let given = |name: &str| spec.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str());
    literal(&mut block, ":authority", given("host").unwrap_or(&spec.host));
    if given("user-agent").is_none() {
        literal(&mut block, "user-agent", concat!("webtune/", env!("CARGO_PKG_VERSION")));
    }
    if given("accept").is_none() {
        literal(&mut block, "accept", "*/*");
    }
    if let Some(body) = &spec.body {
        if given("content-length").is_none() {
            literal(&mut block, "content-length", &body.len().to_string());
        }
        if let Some(ct) = &spec.content_type
            && given("content-type").is_none()
        {
            literal(&mut block, "content-type", ct);
        }
    }
    for (name, value) in &spec.headers {
        let lower = name.to_ascii_lowercase();
        if !CONNECTION_SPECIFIC.contains(&lower.as_str()) {
            literal(&mut block, &lower, value);
        }
    }
    let body = spec.body.as_deref().unwrap_or_default();
    let mut out = Vec::with_capacity(block.len() + body.len() + 4 * HEADER_LEN);
    let chunks: Vec<&[u8]> = block.chunks(MAX_FRAME).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let mut flags = if i + 1 == chunks.len() { flag::END_HEADERS } else { 0 };
        let kind = if i == 0 { kind::HEADERS } else { kind::CONTINUATION };
        if i == 0 && body.is_empty() {
            flags |= flag::END_STREAM;
        }
        put_head(&mut out, chunk.len(), kind, flags, 0);
        out.extend_from_slice(chunk);
    }
    let parts: Vec<&[u8]> = body.chunks(MAX_FRAME).collect();
    for (i, part) in parts.iter().enumerate() {
        let flags = if i + 1 == parts.len() { flag::END_STREAM } else { 0 };
        put_head(&mut out, part.len(), kind::DATA, flags, 0);
        out.extend_from_slice(part);
    }
    out
}

/// A literal header field without indexing (RFC 7541 §6.2.2), its name indexed when the
/// static table has it; strings are sent raw (no Huffman: rendered once, size hardly matters).
fn literal(block: &mut Vec<u8>, name: &str, value: &str) {
    match STATIC_NAMES.iter().find(|(n, _)| *n == name) {
        Some(&(_, index)) => integer(block, 4, 0x00, u64::from(index)),
        None => {
            block.push(0x00);
            string(block, name.as_bytes());
        }
    }
    string(block, value.as_bytes());
}

fn string(block: &mut Vec<u8>, s: &[u8]) {
    integer(block, 7, 0x00, s.len() as u64);
    block.extend_from_slice(s);
}

/// An HPACK integer with an `prefix`-bit prefix, high bits `pattern` (RFC 7541 §5.1).
fn integer(block: &mut Vec<u8>, prefix: u8, pattern: u8, mut n: u64) {
    let max = (1u64 << prefix) - 1;
    if n < max {
        block.push(pattern | n as u8);
        return;
    }
    block.push(pattern | max as u8);
    n -= max;
    while n >= 128 {
        block.push((n % 128) as u8 | 0x80);
        n /= 128;
    }
    block.push(n as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(block: &[u8]) -> Vec<(String, String)> {
        let mut d = httlib_hpack::Decoder::default();
        let mut out = Vec::new();
        d.decode(&mut block.to_vec(), &mut out).unwrap();
        out.into_iter().map(|(n, v, _)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap())).collect()
    }

    /// The rendered block decodes (by an independent decoder) to the request, without the
    /// HTTP/1 connection headers, names lowercased; the body follows in DATA frames.
    #[test]
    fn request_renders_as_headers_and_data_frames() {
        let spec = RequestSpec {
            method: "POST".into(),
            path: "/form?a=1".into(),
            host: "127.0.0.1:8080".into(),
            headers: vec![("X-Test".into(), "yes".into()), ("Connection".into(), "close".into())],
            body: Some(vec![b'x'; MAX_FRAME + 10]),
            content_type: Some("text/plain".into()),
            keepalive: false,
        };
        let frames = render_request(&spec, true);
        let h = Head::parse(&frames);
        assert_eq!((h.kind, h.flags, h.stream), (kind::HEADERS, flag::END_HEADERS, 0));
        let headers = decode(&frames[HEADER_LEN..HEADER_LEN + h.len]);
        let agent = concat!("webtune/", env!("CARGO_PKG_VERSION"));
        let expect = [
            (":method", "POST"),
            (":scheme", "https"),
            (":path", "/form?a=1"),
            (":authority", "127.0.0.1:8080"),
            ("user-agent", agent),
            ("accept", "*/*"),
            ("content-length", "16394"),
            ("content-type", "text/plain"),
            ("x-test", "yes"),
        ];
        let got: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        assert_eq!(got, expect);
        assert_eq!(body_len(&frames), MAX_FRAME + 10);
        let mut out = vec![1, 2, 3];
        put_request(&mut out, &frames, 7);
        let mut at = 3;
        let mut kinds = Vec::new();
        while at < out.len() {
            let h = Head::parse(&out[at..]);
            assert_eq!(h.stream, 7);
            kinds.push((h.kind, h.flags & flag::END_STREAM, h.len));
            at += HEADER_LEN + h.len;
        }
        assert_eq!(at, out.len());
        assert_eq!(kinds[1..], [(kind::DATA, 0, MAX_FRAME), (kind::DATA, flag::END_STREAM, 10)]);
    }

    #[test]
    fn get_without_body_ends_the_stream_in_headers_and_long_values_use_multibyte_lengths() {
        let long = "v".repeat(300);
        let spec = RequestSpec {
            method: "GET".into(),
            path: "/".into(),
            host: "h".into(),
            headers: vec![("Host".into(), "other".into()), ("x-long".into(), long.clone())],
            ..RequestSpec::default()
        };
        let frames = render_request(&spec, false);
        let h = Head::parse(&frames);
        assert_eq!(h.flags, flag::END_HEADERS | flag::END_STREAM);
        assert_eq!(frames.len(), HEADER_LEN + h.len);
        let headers = decode(&frames[HEADER_LEN..]);
        assert_eq!(
            headers[..4].iter().map(|(n, v)| (n.as_str(), v.as_str())).collect::<Vec<_>>(),
            [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "other")]
        );
        assert_eq!(headers.last().unwrap(), &("x-long".to_string(), long));
    }
}
