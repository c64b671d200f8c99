//! HTTP/2 frames (RFC 9113 §4, §6): the 9-byte header, the few frames a client writes, and
//! a request rendered once as HEADERS (+ DATA) frames whose stream id is patched per request.
//!
//! Written by hand rather than taken from the `h2` crate: that crate owns its connection and
//! needs a tokio runtime, while the engine drives its sockets from its own epoll loop and
//! wants a request to cost one memcpy of prepared bytes.

use crate::engine::request::RequestSpec;

/// Bytes of a frame header: length (3), type, flags, stream (4) (RFC 9113 §4.1).
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
    /// DATA (RFC 9113 §6.1).
    pub const DATA: u8 = 0x0;
    /// HEADERS (§6.2).
    pub const HEADERS: u8 = 0x1;
    /// PRIORITY (§6.3).
    pub const PRIORITY: u8 = 0x2;
    /// RST_STREAM (§6.4).
    pub const RST_STREAM: u8 = 0x3;
    /// SETTINGS (§6.5).
    pub const SETTINGS: u8 = 0x4;
    /// PUSH_PROMISE (§6.6).
    pub const PUSH_PROMISE: u8 = 0x5;
    /// PING (§6.7).
    pub const PING: u8 = 0x6;
    /// GOAWAY (§6.8).
    pub const GOAWAY: u8 = 0x7;
    /// WINDOW_UPDATE (§6.9).
    pub const WINDOW_UPDATE: u8 = 0x8;
    /// CONTINUATION (§6.10).
    pub const CONTINUATION: u8 = 0x9;
}

pub mod flag {
    /// DATA, HEADERS: the last frame of the stream from this side.
    pub const END_STREAM: u8 = 0x1;
    /// SETTINGS, PING: an acknowledgement.
    pub const ACK: u8 = 0x1;
    /// HEADERS, CONTINUATION: the last frame of the header block.
    pub const END_HEADERS: u8 = 0x4;
    /// DATA, HEADERS: a pad length byte and padding follow.
    pub const PADDED: u8 = 0x8;
    /// HEADERS: stream dependency and weight fields follow.
    pub const PRIORITY: u8 = 0x20;
}

pub mod setting {
    /// SETTINGS_HEADER_TABLE_SIZE (RFC 9113 §6.5.2).
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    /// SETTINGS_ENABLE_PUSH.
    pub const ENABLE_PUSH: u16 = 0x2;
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    /// SETTINGS_INITIAL_WINDOW_SIZE.
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    /// SETTINGS_MAX_FRAME_SIZE.
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    /// SETTINGS_MAX_HEADER_LIST_SIZE.
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
}

/// RST_STREAM and GOAWAY error codes this client sends or tells apart.
pub mod code {
    /// NO_ERROR (RFC 9113 §7): a graceful end.
    pub const NO_ERROR: u32 = 0x0;
    /// PROTOCOL_ERROR.
    pub const PROTOCOL_ERROR: u32 = 0x1;
    /// FLOW_CONTROL_ERROR.
    pub const FLOW_CONTROL_ERROR: u32 = 0x3;
    /// CANCEL: the stream is no longer needed.
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

/// Appends a WINDOW_UPDATE frame granting `increment` bytes on `stream` (0: the connection).
pub fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_head(out, 4, kind::WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

/// Appends a RST_STREAM frame ending `stream` with `error`.
pub fn put_rst_stream(out: &mut Vec<u8>, stream: u32, error: u32) {
    put_head(out, 4, kind::RST_STREAM, 0, stream);
    out.extend_from_slice(&error.to_be_bytes());
}

/// Appends the acknowledgement of the server's SETTINGS.
pub fn put_settings_ack(out: &mut Vec<u8>) {
    put_head(out, 0, kind::SETTINGS, flag::ACK, 0);
}

/// Appends the answer to the server's PING, its 8 bytes echoed.
pub fn put_ping_ack(out: &mut Vec<u8>, payload: &[u8]) {
    put_head(out, 8, kind::PING, flag::ACK, 0);
    out.extend_from_slice(payload);
}

/// Appends a GOAWAY frame: the connection ends after `last_stream`, for `error`.
pub fn put_goaway(out: &mut Vec<u8>, last_stream: u32, error: u32) {
    put_head(out, 8, kind::GOAWAY, 0, 0);
    out.extend_from_slice(&last_stream.to_be_bytes());
    out.extend_from_slice(&error.to_be_bytes());
}

/// Appends a prepared request (`prepare`) as stream `stream`: the bytes are copied and
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

/// Whole fields of the static table: one byte each, never worth the dynamic table.
const STATIC_FIELDS: [(&str, &str, u8); 6] = [
    (":method", "GET", 2),
    (":method", "POST", 3),
    (":path", "/", 4),
    (":scheme", "http", 6),
    (":scheme", "https", 7),
    ("accept-encoding", "gzip, deflate", 16),
];

/// The HPACK dynamic table size every decoder starts with (SETTINGS_HEADER_TABLE_SIZE's
/// default): what this client's requests may fill, and all it ever uses.
pub const TABLE_SIZE: u32 = 4096;

/// The first entry of the dynamic table in HPACK's index space (after the static table).
const FIRST_DYNAMIC: u64 = 62;

/// A request as HTTP/2 sends it, before rendering: its header fields in order (the
/// pseudo-headers first, names in lower case) and its body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields {
    pub fields: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// The request's fields: the pseudo-headers, the defaults the user did not override, the
/// user's headers without the HTTP/1 connection ones.
pub fn request_fields(spec: &RequestSpec, https: bool) -> Fields {
    let mut fields = Vec::new();
    let mut add = |name: &str, value: &str| fields.push((name.to_string(), value.to_string()));
    let given = |name: &str| spec.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str());
    add(":method", &spec.method);
    add(":scheme", if https { "https" } else { "http" });
    add(":path", &spec.path);
    add(":authority", given("host").unwrap_or(&spec.host));
    if given("user-agent").is_none() {
        add("user-agent", concat!("webtune/", env!("CARGO_PKG_VERSION")));
    }
    if given("accept").is_none() {
        add("accept", "*/*");
    }
    if let Some(body) = &spec.body {
        if given("content-length").is_none() {
            add("content-length", &body.len().to_string());
        }
        if let Some(ct) = &spec.content_type
            && given("content-type").is_none()
        {
            add("content-type", ct);
        }
    }
    for (name, value) in &spec.headers {
        let lower = name.to_ascii_lowercase();
        if !CONNECTION_SPECIFIC.contains(&lower.as_str()) {
            add(&lower, value);
        }
    }
    Fields { fields, body: spec.body.clone().unwrap_or_default() }
}

/// One request in the three forms a connection sends it, as frames with stream id 0
/// (`put_request` writes the id in).
///
/// Real clients (browsers, h2load) let HPACK's dynamic table carry what every request
/// repeats, and servers are built for that: a load of literals only would cost the server
/// work no real client makes it do. So a connection's first request after the server's SETTINGS
/// inserts the fields all the run's requests share (`priming`), and later ones name them by
/// index (`indexed`); before those SETTINGS, or when the server's table is smaller than the
/// default, literals only (`plain`), which never touch the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub plain: Vec<u8>,
    pub priming: Vec<u8>,
    pub indexed: Vec<u8>,
    /// Body bytes in DATA frames (what flow control counts).
    pub body: usize,
}

/// How one field goes into a header block.
#[derive(Clone, Copy)]
enum Form {
    /// The whole field is in the static table.
    Static(u8),
    /// A literal without indexing (RFC 7541 §6.2.2).
    Plain,
    /// A literal with incremental indexing (§6.2.1): the server's table keeps it.
    Insert,
    /// An indexed field (§6.1).
    Indexed(u64),
}

/// Renders every request of a run, all of whose shared fields (same name and value, the
/// name once in each) go into the dynamic table in one order, as far as `TABLE_SIZE` holds:
/// whichever request opens a connection fills the table the others refer to.
pub fn prepare(requests: &[&Fields]) -> Vec<Prepared> {
    let static_index =
        |(n, v): &(String, String)| STATIC_FIELDS.iter().find(|(sn, sv, _)| sn == n && sv == v).map(|f| f.2);
    let once_in = |r: &Fields, f: &(String, String)| {
        r.fields.contains(f) && r.fields.iter().filter(|(n, _)| *n == f.0).count() == 1
    };
    let mut shared: Vec<&(String, String)> = Vec::new();
    let mut size = 0;
    if let Some(first) = requests.first() {
        for f in &first.fields {
            let entry = f.0.len() + f.1.len() + 32;
            if static_index(f).is_none()
                && requests.iter().all(|r| once_in(r, f))
                && size + entry <= TABLE_SIZE as usize
            {
                shared.push(f);
                size += entry;
            }
        }
    }
    let k = shared.len() as u64;
    requests
        .iter()
        .map(|r| {
            // Pseudo-headers must come first: the request's own, then the shared ones, then
            // the same for the regular headers.
            let pseudo = |f: &&(String, String)| f.0.starts_with(':');
            let own = |f: &&(String, String)| !shared.contains(f);
            let ordered: Vec<&(String, String)> = (r.fields.iter().filter(|f| pseudo(f) && own(f)))
                .chain(shared.iter().copied().filter(pseudo))
                .chain(r.fields.iter().filter(|f| !pseudo(f) && own(f)))
                .chain(shared.iter().copied().filter(|f| !pseudo(f)))
                .collect();
            let render = |shared_form: &dyn Fn(u64) -> Form| {
                let mut block = Vec::with_capacity(128);
                for f in &ordered {
                    let form = match (static_index(f), shared.iter().position(|s| s == f)) {
                        (Some(index), _) => Form::Static(index),
                        (None, Some(j)) => shared_form(j as u64),
                        (None, None) => Form::Plain,
                    };
                    field(&mut block, &f.0, &f.1, form);
                }
                frames(&block, &r.body)
            };
            Prepared {
                plain: render(&|_| Form::Plain),
                priming: render(&|_| Form::Insert),
                // The newest entry has the lowest index.
                indexed: render(&|j| Form::Indexed(FIRST_DYNAMIC + k - 1 - j)),
                body: r.body.len(),
            }
        })
        .collect()
}

/// A header block and a body as frames with stream id 0: HEADERS (and CONTINUATIONs when
/// the block is larger than a frame), then DATA frames, END_STREAM on the last.
fn frames(block: &[u8], body: &[u8]) -> Vec<u8> {
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

/// One field in `form`; a literal's name is indexed when the static table has it, and
/// strings are sent raw (no Huffman: rendered once, their size hardly matters).
fn field(block: &mut Vec<u8>, name: &str, value: &str, form: Form) {
    let (prefix, pattern) = match form {
        Form::Static(index) => return block.push(0x80 | index),
        Form::Indexed(index) => return integer(block, 7, 0x80, index),
        Form::Plain => (4, 0x00),
        Form::Insert => (6, 0x40),
    };
    match STATIC_NAMES.iter().find(|(n, _)| *n == name) {
        Some(&(_, index)) => integer(block, prefix, pattern, u64::from(index)),
        None => {
            block.push(pattern);
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
        let frames = prepare(&[&request_fields(&spec, true)]).remove(0).plain;
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
        assert_eq!(prepare(&[&request_fields(&spec, true)])[0].body, MAX_FRAME + 10);
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
        let frames = prepare(&[&request_fields(&spec, false)]).remove(0).plain;
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

    /// The header block of prepared frames (one HEADERS frame).
    fn block(frames: &[u8]) -> &[u8] {
        let h = Head::parse(frames);
        assert_eq!(h.kind, kind::HEADERS);
        &frames[HEADER_LEN..HEADER_LEN + h.len]
    }

    fn spec(path: &str, headers: &[(&str, &str)]) -> RequestSpec {
        RequestSpec {
            method: "GET".into(),
            path: path.into(),
            host: "127.0.0.1:8080".into(),
            headers: headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
            ..RequestSpec::default()
        }
    }

    /// One connection's decoder (an independent one) reads a priming request and then every
    /// request indexed as the plain form says, whichever request primed; indexed blocks are
    /// a few bytes: one per field.
    #[test]
    fn requests_refer_to_the_fields_a_connections_first_request_put_in_the_table() {
        let long = "z".repeat(200);
        let specs = [
            spec("/a", &[("x-run", "7"), ("x-long", &long)]),
            spec("/b/c", &[("x-run", "7"), ("x-long", &long), ("x-only-b", "1")]),
            spec("/a", &[("x-long", &long), ("x-run", "7")]),
        ];
        let fields: Vec<Fields> = specs.iter().map(|s| request_fields(s, false)).collect();
        let prepared = prepare(&fields.iter().collect::<Vec<_>>());
        for first in 0..prepared.len() {
            let mut d = httlib_hpack::Decoder::default();
            let mut decode = |block: &[u8]| {
                let mut out = Vec::new();
                d.decode(&mut block.to_vec(), &mut out).unwrap();
                let fields: Vec<(String, String)> = out
                    .into_iter()
                    .map(|(n, v, _)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
                    .collect();
                fields
            };
            assert_eq!(decode(block(&prepared[first].priming)), decode(block(&prepared[first].plain)));
            for (i, p) in prepared.iter().enumerate() {
                let plain = decode(block(&p.plain));
                let mut want = fields[i].fields.clone();
                let mut got = plain.clone();
                want.sort();
                got.sort();
                assert_eq!(got, want, "request {i}: the same fields");
                assert_eq!(plain.iter().take_while(|f| f.0.starts_with(':')).count(), 4, "pseudo-headers first");
                assert_eq!(decode(block(&p.indexed)), plain, "request {i} after request {first} primed");
            }
        }
        // Shared: :authority, user-agent, accept, x-run, x-long (not :path, not x-only-b).
        // /a's indexed block: :method GET and :scheme http from the static table, :path as a
        // literal (2 + 2 bytes), five one-byte indices.
        assert_eq!(block(&prepared[0].indexed).len(), 2 + 4 + 5);
    }

    /// A field that would overflow the table the server starts with stays a literal, and a
    /// lone request shares everything the static table does not hold.
    #[test]
    fn the_shared_fields_fit_the_default_table() {
        let big = "b".repeat(TABLE_SIZE as usize);
        let fields = request_fields(&spec("/x", &[("x-big", &big), ("x-small", "s")]), false);
        let p = prepare(&[&fields]).remove(0);
        let mut d = httlib_hpack::Decoder::default();
        let mut out = Vec::new();
        d.decode(&mut block(&p.priming).to_vec(), &mut out).unwrap();
        out.clear();
        d.decode(&mut block(&p.indexed).to_vec(), &mut out).unwrap();
        assert!(out.iter().any(|(n, v, _)| n == b"x-big" && *v == big.as_bytes()));
        // :path, :authority, user-agent, accept and x-small indexed; the big one literal.
        assert_eq!(block(&p.indexed).len(), 2 + 5 + (1 + 1 + 5 + 3 + big.len()));
    }
}
