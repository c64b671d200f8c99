//! Histograms as text: HdrHistogram's V2 compressed format, base64 (what other HdrHistogram
//! tools read), so a JSON report carries its latency distribution exactly.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

/// None for an empty histogram.
pub fn encode(h: &Histogram<u64>) -> Option<String> {
    if h.is_empty() {
        return None;
    }
    let mut bytes = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut bytes).expect("serializing to memory cannot fail");
    Some(STANDARD.encode(bytes))
}

/// The longest encoded histogram read (webtune's are a few KiB).
const MAX_TEXT: usize = 16 << 20;
/// The most a compressed histogram may inflate to.
const MAX_INFLATED: usize = 64 << 20;
/// The most counts a histogram's declared bounds may ask for (8 bytes each: 32 MiB).
const MAX_COUNTS: u64 = 1 << 22;
/// HdrHistogram's V2 cookies (plain, deflated) and the plain header's size.
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
const V2_HEADER: usize = 40;

/// Reads back what `encode` wrote; errs on text that is not base64 HdrHistogram V2, and on
/// one whose declared sizes (payload, inflated length, counts array) pass a cap: the decoder
/// would allocate whatever a crafted header declares.
pub fn decode(text: &str) -> anyhow::Result<Histogram<u64>> {
    let text = text.trim();
    if text.len() > MAX_TEXT {
        anyhow::bail!("histogram is {} bytes of text, more than {MAX_TEXT}", text.len());
    }
    let bytes = STANDARD.decode(text).map_err(|e| anyhow::anyhow!("histogram is not base64: {e}"))?;
    let plain = match be_u32(&bytes, 0) {
        Some(V2_COMPRESSED_COOKIE) => {
            let declared = be_u32(&bytes, 4).unwrap_or(0) as usize;
            let compressed = bytes.get(8..).unwrap_or_default();
            if declared > compressed.len() {
                anyhow::bail!("histogram declares {declared} compressed bytes but holds {}", compressed.len());
            }
            let mut inflated = Vec::new();
            use std::io::Read;
            flate2::read::ZlibDecoder::new(&compressed[..declared])
                .take(MAX_INFLATED as u64 + 1)
                .read_to_end(&mut inflated)
                .map_err(|e| anyhow::anyhow!("histogram does not inflate: {e}"))?;
            if inflated.len() > MAX_INFLATED {
                anyhow::bail!("histogram inflates to more than {MAX_INFLATED} bytes");
            }
            inflated
        }
        Some(V2_COOKIE) => bytes,
        _ => anyhow::bail!("histogram is not HdrHistogram V2: no V2 cookie"),
    };
    check_header(&plain)?;
    Deserializer::new()
        .deserialize(&mut plain.as_slice())
        .map_err(|e| anyhow::anyhow!("histogram is not HdrHistogram V2: {e:?}"))
}

/// The plain V2 header's payload length and bounds, checked against what it holds and the caps.
fn check_header(plain: &[u8]) -> anyhow::Result<()> {
    if be_u32(plain, 0) != Some(V2_COOKIE) || plain.len() < V2_HEADER {
        anyhow::bail!("histogram is not HdrHistogram V2: its header is cut");
    }
    let payload = be_u32(plain, 4).unwrap_or(0) as usize;
    if payload > plain.len() - V2_HEADER {
        anyhow::bail!("histogram declares a {payload}-byte payload but holds {}", plain.len() - V2_HEADER);
    }
    let digits = be_u32(plain, 12).unwrap_or(0);
    let low = be_u64(plain, 16).unwrap_or(0);
    let high = be_u64(plain, 24).unwrap_or(0);
    if digits > 5 || low == 0 || high < low.saturating_mul(2) {
        anyhow::bail!("histogram has invalid bounds ({low} to {high}, {digits} digits)");
    }
    let counts = counts_len(low, high, digits);
    if counts > MAX_COUNTS {
        anyhow::bail!(
            "histogram's bounds ({low} to {high}, {digits} digits) need {counts} counts, more than {MAX_COUNTS}"
        );
    }
    Ok(())
}

/// How many counts HdrHistogram allocates for these bounds (as Histogram::new_with_bounds).
fn counts_len(low: u64, high: u64, digits: u32) -> u64 {
    let largest_single_unit = 2 * 10u64.pow(digits);
    let sub_buckets = largest_single_unit.next_power_of_two();
    let unit_magnitude = 63 - low.leading_zeros();
    let mut smallest_untrackable = (sub_buckets as u128) << unit_magnitude;
    let mut buckets = 1u64;
    while smallest_untrackable <= high as u128 {
        smallest_untrackable <<= 1;
        buckets += 1;
    }
    (buckets + 1) * (sub_buckets / 2)
}

fn be_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_exactly() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 10_000_000, 3).unwrap();
        for v in [1, 17, 1_000, 1_001, 250_000, 9_999_999] {
            h.record_n(v, v % 7 + 1).unwrap();
        }
        let back = decode(&encode(&h).unwrap()).unwrap();
        assert_eq!(back.len(), h.len());
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(back.value_at_quantile(q), h.value_at_quantile(q));
        }
        assert!(encode(&Histogram::<u64>::new(3).unwrap()).is_none());
        assert!(decode("not base64!").is_err());
        assert!(decode("aGVsbG8=").is_err());
    }

    #[test]
    fn a_header_that_declares_more_than_it_holds_or_the_cap_is_refused() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 10_000_000, 3).unwrap();
        h.record(5).unwrap();
        let mut plain = Vec::new();
        hdrhistogram::serialization::V2Serializer::new().serialize(&h, &mut plain).unwrap();
        assert!(decode(&STANDARD.encode(&plain)).is_ok());
        let mut huge = plain.clone();
        huge[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let e = decode(&STANDARD.encode(&huge)).unwrap_err().to_string();
        assert!(e.contains("declares a 4294967295-byte payload"), "{e}");
        let mut wide = plain.clone();
        wide[12..16].copy_from_slice(&5u32.to_be_bytes());
        wide[24..32].copy_from_slice(&u64::MAX.to_be_bytes());
        let e = decode(&STANDARD.encode(&wide)).unwrap_err().to_string();
        assert!(e.contains("more than 4194304"), "{e}");
        // The bounds webtune itself uses (an hour of microseconds, 3 digits) pass.
        assert!(counts_len(1, 3_600_000_000, 3) < 100_000);
    }
}
