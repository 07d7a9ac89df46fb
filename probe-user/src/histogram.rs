//! Latency histograms as the collector sees them: the kernel's log-linear
//! buckets (summed over CPUs) turned into an HdrHistogram for quantiles,
//! and a summary that reports and JSON print.

use hdrhistogram::Histogram;
use serde::Serialize;
use vmtrace_common::hist::{BUCKETS, bucket_lower, bucket_upper};

/// Highest value an HdrHistogram here tracks: 2^62 ns is 146 years.
const HIGHEST: u64 = 1 << 62;

/// One non-empty kernel bucket: values in [lower_ns, upper_ns].
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Bucket {
    pub lower_ns: u64,
    pub upper_ns: u64,
    pub count: u64,
}

/// What a report shows of one latency histogram.
#[derive(Clone, Debug, Serialize, PartialEq)]
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
        // The top of the highest non-empty bucket: never below the truth.
        max_ns: buckets.last().map_or(0, |b| b.upper_ns),
        buckets,
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
        assert!(
            s.max_ns >= 1_000_000 && s.max_ns < 1_070_000,
            "{}",
            s.max_ns
        );
        close(s.total_ns, values.iter().sum());
    }

    #[test]
    fn empty_histogram_is_all_zero() {
        let s = summarize(&vec![0; BUCKETS]);
        assert_eq!((s.count, s.p50_ns, s.max_ns, s.total_ns), (0, 0, 0, 0));
        assert!(s.buckets.is_empty());
    }
}
