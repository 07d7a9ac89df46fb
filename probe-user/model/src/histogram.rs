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
use vmtrace_common::{
    Hist,
    hist::{BUCKETS, bucket_lower, bucket_upper},
};

/// Highest value an HdrHistogram here tracks: 2^62 ns is 146 years.
const HIGHEST: u64 = 1 << 62;

/// One non-empty kernel bucket: values in [lower_ns, upper_ns].
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct Bucket {
    pub lower_ns: u64,
    pub upper_ns: u64,
    pub count: u64,
}

/// What a report shows of one latency histogram.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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

/// Whose work a kernel histogram times: the target's tasks, or every
/// task (kswapd, shrinkers, swap I/O and the OOM reaper work for every
/// task). Exhaustive: a new [`Hist`] must say.
pub const fn whose(h: Hist) -> &'static str {
    match h {
        Hist::KswapdAwake | Hist::SlabShrink | Hist::SwapWrite | Hist::SwapRead | Hist::OomReap => {
            "every task"
        }
        Hist::DirectReclaim
        | Hist::MemcgReclaim
        | Hist::MinorFault
        | Hist::MajorFault
        | Hist::Throttle
        | Hist::Compaction => "of the target",
    }
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

/// V2 cookies (HdrHistogram's, with the 0x10 word-size bits).
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// The V2 header: cookie, payload length, normalizing offset, digits,
/// lowest and highest value, integer-to-double ratio.
const V2_HEADER: usize = 40;
/// The most counts slots a histogram read from a recording may have.
/// vmtrace writes 7296 (1 ns to 2^62 ns, 2 digits); hdrhistogram sizes
/// its counts array from the header alone, so a 48-character payload
/// could otherwise ask for gigabytes (1 to 2^63 at 5 digits: 6 M slots,
/// and a declared payload length of 4 GiB is allocated before a byte of
/// it is read).
pub const MAX_SLOTS: u64 = 1 << 14;
/// The longest counts payload `MAX_SLOTS` slots need (a LEB128 count is
/// at most 9 bytes).
const MAX_PAYLOAD: usize = 9 * MAX_SLOTS as usize;

fn be_u32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_be_bytes)
}

fn be_u64(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_be_bytes)
}

/// The counts slots hdrhistogram allocates for these bounds (its
/// `new_with_bounds` and `resize`, in integers); None when it would
/// refuse them.
fn slots(low: u64, high: u64, digits: u32) -> Option<u64> {
    if !(1..=u64::MAX / 2).contains(&low) || high < 2 * low || digits > 5 {
        return None;
    }
    let largest = 2 * 10u64.pow(digits);
    let sub_magnitude = largest.next_power_of_two().trailing_zeros();
    let unit_magnitude = 63 - low.leading_zeros();
    if unit_magnitude + sub_magnitude > 63 {
        return None;
    }
    let mut untrackable = 1u64 << (sub_magnitude + unit_magnitude);
    let mut buckets = 1u64;
    while untrackable <= high {
        if untrackable > u64::MAX / 2 {
            buckets += 1;
            break;
        }
        untrackable <<= 1;
        buckets += 1;
    }
    Some((buckets + 1) * (1u64 << (sub_magnitude - 1)))
}

/// The uncompressed V2 bytes of a payload, checked before anything is
/// allocated from its header: the cookie, a compressed length within
/// what is there, inflation bounded, a payload length equal to the bytes
/// that follow the header and at most `MAX_PAYLOAD`, and bounds that
/// imply at most `MAX_SLOTS` counts.
fn checked_v2(bytes: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>> {
    use std::io::Read as _;
    let inner = match be_u32(bytes, 0) {
        V2_COOKIE => std::borrow::Cow::Borrowed(bytes),
        V2_COMPRESSED_COOKIE => {
            let declared = be_u32(bytes, 4) as usize;
            let Some(deflated) = bytes.get(8..).filter(|d| d.len() == declared) else {
                bail!(
                    "histogram payload declares {declared} compressed bytes, holds {}",
                    bytes.len().saturating_sub(8)
                );
            };
            let mut inflated = Vec::new();
            flate2::read::ZlibDecoder::new(deflated)
                .take((V2_HEADER + MAX_PAYLOAD + 1) as u64)
                .read_to_end(&mut inflated)
                .context("histogram payload does not inflate")?;
            if inflated.len() > V2_HEADER + MAX_PAYLOAD {
                bail!("histogram payload inflates past {MAX_PAYLOAD} bytes of counts");
            }
            std::borrow::Cow::Owned(inflated)
        }
        _ => bail!("histogram payload is not an HdrHistogram V2 encoding (cookie)"),
    };
    if inner.len() < V2_HEADER || be_u32(&inner, 0) != V2_COOKIE {
        bail!("histogram payload's header is cut short or has the wrong cookie");
    }
    let declared = be_u32(&inner, 4) as usize;
    let held = inner.len() - V2_HEADER;
    if declared != held || declared > MAX_PAYLOAD {
        bail!(
            "histogram payload declares {declared} bytes of counts, holds {held} \
             (at most {MAX_PAYLOAD})"
        );
    }
    let (digits, low, high) = (be_u32(&inner, 12), be_u64(&inner, 16), be_u64(&inner, 24));
    match slots(low, high, digits) {
        Some(n) if n <= MAX_SLOTS => Ok(inner),
        Some(n) => bail!(
            "histogram payload asks for {n} counts ({low} to {high}, {digits} digits), \
             more than {MAX_SLOTS}"
        ),
        None => bail!("histogram payload has impossible bounds ({low} to {high}, {digits} digits)"),
    }
}

/// Decodes what `encode` wrote (any V2 payload, compressed or not, whose
/// header passes `checked_v2`).
pub fn decode(text: &str) -> Result<Histogram<u64>> {
    if text.is_empty() {
        bail!("empty histogram payload");
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .context("histogram payload is not base64")?;
    let v2 = checked_v2(&bytes)?;
    let mut cursor = std::io::Cursor::new(v2.as_ref());
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

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// A V2 header (uncompressed) with these fields and `counts` after it.
    fn v2(declared: u32, digits: u32, low: u64, high: u64, counts: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(V2_COOKIE.to_be_bytes());
        b.extend(declared.to_be_bytes());
        b.extend(0u32.to_be_bytes());
        b.extend(digits.to_be_bytes());
        b.extend(low.to_be_bytes());
        b.extend(high.to_be_bytes());
        b.extend(1.0f64.to_be_bytes());
        b.extend(counts);
        b
    }

    fn deflated(inner: &[u8]) -> Vec<u8> {
        use std::io::Write as _;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(inner).expect("deflate");
        let z = z.finish().expect("deflate");
        let mut b = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        b.extend((z.len() as u32).to_be_bytes());
        b.extend(z);
        b
    }

    #[test]
    fn slots_match_hdrhistogram() {
        for (low, high, digits) in [
            (1, 1u64 << 62, 2),
            (1, 1000, 3),
            (7, 1 << 40, 5),
            (1, u64::MAX, 0),
        ] {
            let h = Histogram::<u64>::new_with_bounds(low, high, digits as u8).expect("valid");
            assert_eq!(slots(low, high, digits), Some(h.distinct_values() as u64));
        }
        assert_eq!(slots(1, 1 << 62, 2), Some(7296));
        assert_eq!(slots(0, 10, 2), None);
        assert_eq!(slots(1, 10, 6), None);
    }

    #[test]
    fn hostile_headers_are_refused_before_allocating() {
        // The 4 GiB payload length of the issue, compressed: 48 characters.
        let four_gib = b64(&deflated(&v2(u32::MAX, 2, 1, 1 << 62, &[])));
        assert!(four_gib.len() <= 48, "{}", four_gib.len());
        let e = format!("{:#}", decode(&four_gib).expect_err("refused"));
        assert!(
            e.contains("declares 4294967295 bytes of counts, holds 0"),
            "{e}"
        );
        // 6 M counts slots (1 to 2^63, 5 digits) with an honest length.
        let e = format!(
            "{:#}",
            decode(&b64(&v2(0, 5, 1, 1 << 63, &[]))).expect_err("refused")
        );
        assert!(e.contains("more than 16384"), "{e}");
        // A compressed length beyond the bytes there; a zlib bomb.
        let mut short = deflated(&v2(0, 2, 1, 1 << 62, &[]));
        short[4..8].copy_from_slice(&1000u32.to_be_bytes());
        assert!(decode(&b64(&short)).is_err());
        let bomb = deflated(&v2(10_000_000, 2, 1, 1 << 62, &vec![0; 10_000_000]));
        let e = format!("{:#}", decode(&b64(&bomb)).expect_err("refused"));
        assert!(e.contains("inflates past"), "{e}");
        // What vmtrace writes still decodes, compressed or not.
        let mut counts = vec![0; BUCKETS];
        counts[40] = 5;
        let h = to_hdr(&counts);
        let mut plain = Vec::new();
        hdrhistogram::serialization::V2Serializer::new()
            .serialize(&h, &mut plain)
            .expect("serialises");
        assert_eq!(decode(&b64(&plain)).expect("plain decodes").len(), 5);
        assert_eq!(decode(&encode(&h)).expect("deflated decodes").len(), 5);
    }
}
