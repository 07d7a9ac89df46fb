//! Latency distributions as curves to plot: the quantile function of a
//! recorded histogram (its HdrHistogram, or the kernel buckets when that
//! does not decode), sampled along a log scale of 1/(1-q).

use crate::model::histogram::{self, Bucket, Summary};

/// Percentile steps along the curve, in decades of 1/(1-q).
const CURVE_STEP: f64 = 0.02;
/// Percentile axis: at most 99.9999999% (9 decades).
pub const MAX_DECADES: f64 = 9.0;

/// A latency distribution as a quantile function: the recording's
/// HdrHistogram when it decodes, else the kernel buckets.
enum Dist {
    Hdr(hdrhistogram::Histogram<u64>),
    Buckets(Vec<Bucket>, u64),
}

impl Dist {
    fn of(s: &Summary) -> Option<Dist> {
        if let Ok(h) = histogram::decode(&s.hdr)
            && !h.is_empty()
        {
            return Some(Dist::Hdr(h));
        }
        let mut buckets: Vec<Bucket> = s.buckets.iter().filter(|b| b.count > 0).cloned().collect();
        buckets.sort_by_key(|b| b.lower_ns);
        let n = buckets
            .iter()
            .map(|b| b.count)
            .fold(0u64, u64::saturating_add);
        (n > 0).then_some(Dist::Buckets(buckets, n))
    }

    fn count(&self) -> u64 {
        match self {
            Dist::Hdr(h) => h.len(),
            Dist::Buckets(_, n) => *n,
        }
    }

    fn value_at(&self, q: f64) -> u64 {
        let q = if q.is_finite() {
            q.clamp(0.0, 1.0)
        } else {
            0.0
        };
        match self {
            Dist::Hdr(h) => h.value_at_quantile(q),
            Dist::Buckets(b, n) => {
                let rank = ((q * *n as f64).ceil() as u64).clamp(1, *n);
                let mut seen = 0u64;
                for bucket in b {
                    seen = seen.saturating_add(bucket.count);
                    if seen >= rank {
                        return bucket_mid(bucket);
                    }
                }
                b.last().map_or(0, bucket_mid)
            }
        }
    }

    fn max(&self) -> u64 {
        match self {
            Dist::Hdr(h) => h.max(),
            Dist::Buckets(b, _) => b.last().map_or(0, bucket_mid),
        }
    }
}

fn bucket_mid(b: &Bucket) -> u64 {
    b.lower_ns + b.upper_ns.saturating_sub(b.lower_ns) / 2
}

/// A series ready to draw: its points are (decades of 1/(1-q), log10 ns).
pub struct Curve {
    pub count: u64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
    pub points: Vec<(f64, f64)>,
}

fn log_ns(v: u64) -> f64 {
    (v.max(1) as f64).log10()
}

/// The curve of a summary; None when it has no values.
pub fn curve_of(s: &Summary) -> Option<Curve> {
    let d = Dist::of(s)?;
    let n = d.count();
    let max = d.max();
    let end = (n as f64).log10().clamp(0.0, MAX_DECADES);
    let mut points: Vec<(f64, f64)> = Vec::new();
    let mut k = 0u32;
    loop {
        let x = f64::from(k) * CURVE_STEP;
        if x >= end - 1e-9 {
            break;
        }
        let q = 1.0 - 10f64.powf(-x);
        points.push((x, log_ns(d.value_at(q))));
        k += 1;
    }
    points.push((end, log_ns(max)));
    Some(Curve {
        count: n,
        p50: d.value_at(0.5),
        p99: d.value_at(0.99),
        max,
        points: without_flat_middles(&points),
    })
}

/// Drops points in the middle of flat runs: the curve is the same.
fn without_flat_middles(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut slim: Vec<(f64, f64)> = Vec::with_capacity(points.len());
    for (i, &p) in points.iter().enumerate() {
        let flat_before = i > 0 && points[i - 1].1 == p.1;
        let flat_after = i + 1 < points.len() && points[i + 1].1 == p.1;
        if !(flat_before && flat_after) {
            slim.push(p);
        }
    }
    slim
}
