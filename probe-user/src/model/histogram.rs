//! Latency histograms as the collector sees them: the kernel's log-linear
//! buckets (summed over CPUs) turned into an HdrHistogram for quantiles,
//! and a summary that reports and JSON print.
//!
//! Each kernel bucket's count is recorded at the bucket's midpoint, so
//! every figure here (quantiles, max, total) is within half a bucket
//! (1/32) of the true value, and every figure is the HdrHistogram's own:
//! a tool that decodes `Summary::hdr` gets the same numbers.

use anyhow::{Context, Result, bail};
use base64::Engine;
use hdrhistogram::{
    Histogram,
    serialization::{Deserializer, Serializer, V2DeflateSerializer},
};
use serde::{Deserialize, Serialize};
use vmtrace_common::hist::{BUCKETS, bucket_lower, bucket_upper};

/// Highest value an HdrHistogram here tracks: 2^62 ns is 146 years.
const HIGHEST: u64 = 1 << 62;

/// One non-empty kernel bucket: values in [lower_ns, upper_ns].
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Bucket {
    pub lower_ns: u64,
    pub upper_ns: u64,
    pub count: u64,
}

/// What a report shows of one latency histogram.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub count: u64,
    /// Sum of bucket midpoints (within 1/32 of the true total).
    pub total_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    pub buckets: Vec<Bucket>,
    /// The same distribution as an HdrHistogram (V2, deflate-compressed,
    /// base64: the payload of an HdrHistogram interval log line), so that
    /// HdrHistogram's own tools can load it.
    pub hdr: String,
}

/// The midpoint of a kernel bucket: the value it stands for.
fn midpoint(idx: usize) -> u64 {
    let (lo, hi) = (bucket_lower(idx), bucket_upper(idx).min(HIGHEST));
    lo + (hi.saturating_sub(lo)) / 2
}

/// Builds an HdrHistogram from kernel bucket counts (one slot per bucket).
pub fn to_hdr(counts: &[u64]) -> Histogram<u64> {
    // 2 significant digits: finer than the kernel's 1/16 buckets.
    let mut h = Histogram::<u64>::new_with_bounds(1, HIGHEST, 2)
        .unwrap_or_else(|_| Histogram::<u64>::new(2).expect("2 sigfigs is valid"));
    for (idx, &n) in counts.iter().enumerate().take(BUCKETS) {
        if n > 0 {
            h.saturating_record_n(midpoint(idx).max(1), n);
        }
    }
    h
}

/// An HdrHistogram as V2 deflate-compressed base64 (the interval log
/// payload). Empty only if serialisation fails, which it does not for
/// histograms built here.
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    match V2DeflateSerializer::new().serialize(h, &mut bytes) {
        Ok(_) => base64::engine::general_purpose::STANDARD.encode(bytes),
        Err(_) => String::new(),
    }
}

/// Decodes what `encode` wrote (any V2 payload, compressed or not).
pub fn decode(text: &str) -> Result<Histogram<u64>> {
    if text.is_empty() {
        bail!("empty histogram payload");
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .context("histogram payload is not base64")?;
    let mut cursor = std::io::Cursor::new(bytes);
    Deserializer::new()
        .deserialize(&mut cursor)
        .map_err(|e| match e {
            hdrhistogram::serialization::DeserializeError::IoError(io) => {
                anyhow::anyhow!("histogram payload does not decode ({io})")
            }
            other => anyhow::anyhow!("histogram payload does not decode ({other})"),
        })
}

/// The kernel buckets' counts as an HdrHistogram delta: `now - before`,
/// for per-interval histograms of cumulative maps.
pub fn delta(now: &[u64], before: &[u64]) -> Vec<u64> {
    now.iter()
        .enumerate()
        .map(|(i, &n)| n.saturating_sub(before.get(i).copied().unwrap_or(0)))
        .collect()
}

pub fn summarize(counts: &[u64]) -> Summary {
    let hdr = to_hdr(counts);
    let buckets: Vec<Bucket> = counts
        .iter()
        .enumerate()
        .take(BUCKETS)
        .filter(|&(_, &n)| n > 0)
        .map(|(idx, &n)| Bucket {
            lower_ns: bucket_lower(idx),
            upper_ns: bucket_upper(idx),
            count: n,
        })
        .collect();
    let total_ns = counts
        .iter()
        .enumerate()
        .take(BUCKETS)
        .map(|(idx, &n)| midpoint(idx).saturating_mul(n))
        .fold(0u64, u64::saturating_add);
    let q = |q: f64| {
        if hdr.is_empty() {
            0
        } else {
            hdr.value_at_quantile(q)
        }
    };
    Summary {
        count: counts.iter().sum(),
        total_ns,
        p50_ns: q(0.50),
        p90_ns: q(0.90),
        p99_ns: q(0.99),
        p999_ns: q(0.999),
        max_ns: if hdr.is_empty() { 0 } else { hdr.max() },
        buckets,
        hdr: encode(&hdr),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vmtrace_common::hist::bucket_of;

    fn counts_of(values: &[u64]) -> Vec<u64> {
        let mut counts = vec![0; BUCKETS];
        for &v in values {
            counts[bucket_of(v)] += 1;
        }
        counts
    }

    #[test]
    fn quantiles_within_bucket_precision() {
        // 1000 values 1 us .. 1 ms.
        let values: Vec<u64> = (1..=1000).map(|i| i * 1000).collect();
        let s = summarize(&counts_of(&values));
        assert_eq!(s.count, 1000);
        let close = |got: u64, want: u64| {
            let err = (got as f64 - want as f64).abs() / want as f64;
            assert!(err < 0.07, "got {got} want {want}");
        };
        close(s.p50_ns, 500_000);
        close(s.p90_ns, 900_000);
        close(s.p99_ns, 990_000);
        close(s.max_ns, 1_000_000);
        close(s.total_ns, values.iter().sum());
    }

    #[test]
    fn empty_histogram_is_all_zero() {
        let s = summarize(&vec![0; BUCKETS]);
        assert_eq!((s.count, s.p50_ns, s.max_ns, s.total_ns), (0, 0, 0, 0));
        assert!(s.buckets.is_empty());
    }

    #[test]
    fn hdr_payload_decodes_to_the_same_figures() {
        let values: Vec<u64> = (1..=5000).map(|i| i * 977).collect();
        let s = summarize(&counts_of(&values));
        let h = decode(&s.hdr).expect("decodes");
        assert_eq!(h.len(), s.count);
        assert_eq!(h.value_at_quantile(0.5), s.p50_ns);
        assert_eq!(h.value_at_quantile(0.99), s.p99_ns);
        assert_eq!(h.max(), s.max_ns);
        assert!(decode("not base64!").is_err());
        assert!(decode("SGVsbG8=").is_err());
        assert!(decode("").is_err());
    }
}
