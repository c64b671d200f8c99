//! HPACK header block decoding (RFC 7541): integers, strings, the static and dynamic tables.
//!
//! Written by hand, with Huffman codes from `httlib-huffman` (flattened 5-bit tables): the
//! HPACK crates tried did not fit a load generator's hot path: loona-hpack (and hpack,
//! fluke-hpack, its ancestors) rebuild a hash table for every Huffman string (~300 us per
//! nginx response measured here), and httlib-hpack panics on a truncated block, which a
//! hostile server may send. Every read here is bounds-checked.

use std::collections::VecDeque;

use httlib_huffman::DecoderSpeed;

/// The block does not decode: the connection is unusable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invalid;

/// The dynamic table size this client's SETTINGS allow (the default).
pub const TABLE_SIZE: usize = 4096;

/// An HPACK decoder: the dynamic table one connection's header blocks share (RFC 7541).
pub struct Decoder {
    /// Newest first: index 62 is the front.
    dynamic: VecDeque<(Vec<u8>, Vec<u8>)>,
    size: usize,
    max: usize,
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder { dynamic: VecDeque::new(), size: 0, max: TABLE_SIZE, name: Vec::new(), value: Vec::new() }
    }
}

impl Decoder {
    /// Decodes one header block, calling `field` with each name and value in order.
    pub fn decode(&mut self, block: &[u8], mut field: impl FnMut(&[u8], &[u8])) -> Result<(), Invalid> {
        let mut at = 0;
        while at < block.len() {
            let b = block[at];
            if b & 0x80 != 0 {
                let index = integer(block, &mut at, 7)?;
                let (n, v) = self.get(index)?;
                field(n, v);
            } else if b & 0xe0 == 0x20 {
                let size = integer(block, &mut at, 5)?;
                if size > TABLE_SIZE {
                    return Err(Invalid);
                }
                self.max = size;
                self.evict(0);
            } else {
                let indexing = b & 0xc0 == 0x40;
                let index = integer(block, &mut at, if indexing { 6 } else { 4 })?;
                self.name.clear();
                if index == 0 {
                    string(block, &mut at, &mut self.name)?;
                } else {
                    let name = self.get(index)?.0.to_vec();
                    self.name = name;
                }
                self.value.clear();
                string(block, &mut at, &mut self.value)?;
                field(&self.name, &self.value);
                if indexing {
                    self.insert(self.name.clone(), self.value.clone());
                }
            }
        }
        Ok(())
    }

    fn get(&self, index: usize) -> Result<(&[u8], &[u8]), Invalid> {
        match index {
            0 => Err(Invalid),
            i if i <= STATIC.len() => Ok((STATIC[i - 1].0.as_bytes(), STATIC[i - 1].1.as_bytes())),
            i => self.dynamic.get(i - STATIC.len() - 1).map(|(n, v)| (n.as_slice(), v.as_slice())).ok_or(Invalid),
        }
    }

    fn insert(&mut self, name: Vec<u8>, value: Vec<u8>) {
        let size = name.len() + value.len() + 32;
        // An entry larger than the table empties it (RFC 7541 §4.4).
        self.evict(size.min(self.max + 1));
        if size <= self.max {
            self.size += size;
            self.dynamic.push_front((name, value));
        }
    }

    /// Drops the oldest entries until `room` more bytes fit.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max {
            let Some((n, v)) = self.dynamic.pop_back() else {
                self.size = 0;
                return;
            };
            self.size -= n.len() + v.len() + 32;
        }
    }
}

/// An integer with a `prefix`-bit prefix at `block[*at]` (RFC 7541 §5.1), at most 2^28.
fn integer(block: &[u8], at: &mut usize, prefix: u8) -> Result<usize, Invalid> {
    let mask = (1usize << prefix) - 1;
    let mut n = usize::from(*block.get(*at).ok_or(Invalid)?) & mask;
    *at += 1;
    if n < mask {
        return Ok(n);
    }
    let mut shift = 0;
    loop {
        let b = *block.get(*at).ok_or(Invalid)?;
        *at += 1;
        n += usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(n);
        }
        shift += 7;
        if shift > 21 {
            return Err(Invalid);
        }
    }
}

/// A string literal (RFC 7541 §5.2), Huffman-decoded when flagged, appended to `out`.
fn string(block: &[u8], at: &mut usize, out: &mut Vec<u8>) -> Result<(), Invalid> {
    let huffman = block.get(*at).ok_or(Invalid)? & 0x80 != 0;
    let len = integer(block, at, 7)?;
    let end = at.checked_add(len).filter(|&e| e <= block.len()).ok_or(Invalid)?;
    let raw = &block[*at..end];
    *at = end;
    if huffman {
        httlib_huffman::decode(raw, out, DecoderSpeed::FiveBits).map_err(|_| Invalid)
    } else {
        out.extend_from_slice(raw);
        Ok(())
    }
}

/// RFC 7541 appendix A.
const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(d: &mut Decoder, block: &[u8]) -> Result<Vec<(String, String)>, Invalid> {
        let mut out = Vec::new();
        d.decode(block, |n, v| out.push((String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into())))?;
        Ok(out)
    }

    /// RFC 7541 C.4: requests with Huffman coding, the dynamic table carried across blocks.
    #[test]
    fn rfc_7541_c4_examples() {
        let hex = |s: &str| -> Vec<u8> {
            let s: String = s.split_whitespace().collect();
            (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
        };
        let mut d = Decoder::default();
        let first = decode_all(&mut d, &hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff")).unwrap();
        assert_eq!(first[3], (":authority".into(), "www.example.com".into()));
        let second = decode_all(&mut d, &hex("8286 84be 5886 a8eb 1064 9cbf")).unwrap();
        assert_eq!(second[3], (":authority".into(), "www.example.com".into()), "from the dynamic table");
        assert_eq!(second[4], ("cache-control".into(), "no-cache".into()));
        let third = decode_all(&mut d, &hex("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf")).unwrap();
        assert_eq!(third[4], ("custom-key".into(), "custom-value".into()));
        assert_eq!(d.size, 164, "table size after C.4.3");
    }

    /// What an independent encoder writes (Huffman, indexing, table eviction) decodes back.
    #[test]
    fn independent_encoder_round_trip() {
        let mut enc = httlib_hpack::Encoder::default();
        let mut d = Decoder::default();
        let flags = httlib_hpack::Encoder::HUFFMAN_VALUE
            | httlib_hpack::Encoder::HUFFMAN_NAME
            | httlib_hpack::Encoder::WITH_INDEXING
            | httlib_hpack::Encoder::BEST_FORMAT;
        for round in 0..50 {
            let fields: Vec<(String, String)> = (0..8)
                .map(|i| {
                    (format!("x-name-{}", (round * 3 + i) % 17), format!("value {round} {i} {}", "z".repeat(i * 40)))
                })
                .collect();
            let mut block = Vec::new();
            for (n, v) in &fields {
                enc.encode((n.as_bytes().to_vec(), v.as_bytes().to_vec(), flags), &mut block).unwrap();
            }
            assert_eq!(decode_all(&mut d, &block).unwrap(), fields, "round {round}");
        }
    }

    #[test]
    fn truncated_and_out_of_range_are_invalid() {
        for bad in [
            &[0x82u8, 0x41][..],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
            &[0xbf],
            &[0x00, 0x05, b'a'],
            &[0x3f, 0xe2, 0x1f],
        ] {
            assert_eq!(decode_all(&mut Decoder::default(), bad), Err(Invalid), "{bad:?}");
        }
        let mut rng = fastrand::Rng::with_seed(11);
        for _ in 0..20_000 {
            let block: Vec<u8> = (0..rng.usize(0..64)).map(|_| rng.u8(..)).collect();
            let _ = decode_all(&mut Decoder::default(), &block);
        }
    }
}
