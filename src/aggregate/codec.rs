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

/// Reads back what `encode` wrote; errs on text that is not base64 HdrHistogram V2.
pub fn decode(text: &str) -> anyhow::Result<Histogram<u64>> {
    let bytes = STANDARD.decode(text.trim()).map_err(|e| anyhow::anyhow!("histogram is not base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| anyhow::anyhow!("histogram is not HdrHistogram V2: {e:?}"))
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
}
