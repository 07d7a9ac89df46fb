//! The log-linear bucket layout of the latency histograms kept in the
//! kernel. Values below 16 get a bucket each; above, every power of two is
//! split into 16 equal sub-buckets, so a bucket is at most 1/16 (6.25%) of
//! its lower bound wide, from 1 ns to u64::MAX in 976 buckets. The eBPF
//! side only calls [`bucket_of`]; userspace turns buckets back into values
//! with [`bucket_lower`] / [`bucket_upper`].

/// Bits of linear precision inside one power of two.
pub const SUB_BITS: u32 = 4;
/// Sub-buckets per power of two.
pub const SUB: u64 = 1 << SUB_BITS;
/// Number of buckets: values < 16 and 60 powers of two of 16 each.
pub const BUCKETS: usize = ((64 - SUB_BITS) as usize + 1) * SUB as usize;

/// One histogram as stored in a per-CPU array cell.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Buckets {
    pub counts: [u64; BUCKETS],
}

impl Default for Buckets {
    fn default() -> Self {
        Buckets {
            counts: [0; BUCKETS],
        }
    }
}

/// floor(log2(v)) for v > 0, without a loop (the BPF verifier likes
/// straight-line code; LLVM's ctlz expansion is longer).
#[inline(always)]
pub fn log2_floor(mut v: u64) -> u32 {
    let mut r = 0;
    if v >= 1 << 32 {
        v >>= 32;
        r += 32;
    }
    if v >= 1 << 16 {
        v >>= 16;
        r += 16;
    }
    if v >= 1 << 8 {
        v >>= 8;
        r += 8;
    }
    if v >= 1 << 4 {
        v >>= 4;
        r += 4;
    }
    if v >= 1 << 2 {
        v >>= 2;
        r += 2;
    }
    if v >= 1 << 1 {
        r += 1;
    }
    r
}

/// The bucket a value falls in; always < [`BUCKETS`].
#[inline(always)]
pub fn bucket_of(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let msb = log2_floor(v);
    let sub = (v >> (msb - SUB_BITS)) & (SUB - 1);
    ((msb - SUB_BITS + 1) as usize) * SUB as usize + sub as usize
}

/// Smallest value that falls in bucket `idx`.
pub fn bucket_lower(idx: usize) -> u64 {
    let sub_n = SUB as usize;
    if idx < sub_n {
        return idx as u64;
    }
    let msb = (idx / sub_n) as u32 + SUB_BITS - 1;
    let sub = (idx % sub_n) as u64;
    (SUB + sub) << (msb - SUB_BITS)
}

/// Largest value that falls in bucket `idx` (inclusive).
pub fn bucket_upper(idx: usize) -> u64 {
    if idx + 1 >= BUCKETS {
        u64::MAX
    } else {
        bucket_lower(idx + 1) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_matches_leading_zeros() {
        for shift in 0..64 {
            for v in [
                1u64 << shift,
                (1u64 << shift) | 1,
                (1u64 << shift) + ((1u64 << shift) >> 1),
            ] {
                if v == 0 {
                    continue;
                }
                assert_eq!(log2_floor(v), 63 - v.leading_zeros(), "v={v}");
            }
        }
        assert_eq!(log2_floor(u64::MAX), 63);
    }

    #[test]
    fn buckets_are_contiguous_and_cover_u64() {
        assert_eq!(bucket_lower(0), 0);
        for idx in 0..BUCKETS - 1 {
            assert_eq!(bucket_upper(idx) + 1, bucket_lower(idx + 1), "idx={idx}");
            assert_eq!(bucket_of(bucket_lower(idx)), idx);
            assert_eq!(bucket_of(bucket_upper(idx)), idx);
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
        assert_eq!(BUCKETS, 976);
    }

    #[test]
    fn relative_width_is_bounded() {
        for idx in SUB as usize..BUCKETS - 1 {
            let (lo, hi) = (bucket_lower(idx), bucket_upper(idx));
            // width / lower <= 1/16
            assert!((hi - lo + 1) * SUB <= lo, "idx={idx} lo={lo} hi={hi}");
        }
    }
}
