//! Latency histograms as text: count, quantiles and a bar per power of
//! two (merging the kernel's 16 sub-buckets), bpftrace-style but at most
//! 72 columns.

use crate::model::format::fmt_ns;
use std::fmt::Write as _;

use vmtrace_common::hist::{BUCKETS, SUB, bucket_lower};

use crate::model::histogram::Summary;

/// Count, quantiles and a bar per power of two.
pub(super) fn write_hist(o: &mut String, s: &Summary) -> std::fmt::Result {
    if s.count == 0 {
        writeln!(o, "  (none)")?;
        return Ok(());
    }
    writeln!(
        o,
        "  {:>9} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "count", "p50", "p90", "p99", "p99.9", "max"
    )?;
    writeln!(
        o,
        "  {:>9} {:>8} {:>8} {:>8} {:>8} {:>8}",
        s.count,
        fmt_ns(s.p50_ns),
        fmt_ns(s.p90_ns),
        fmt_ns(s.p99_ns),
        fmt_ns(s.p999_ns),
        fmt_ns(s.max_ns)
    )?;
    for (lo, hi, n, bar) in power_of_two_rows(s) {
        writeln!(
            o,
            "  [{:>6}, {:>6}) {:>9} |{:<32}|",
            fmt_ns(lo),
            fmt_ns(hi),
            n,
            bar
        )?;
    }
    Ok(())
}

/// (lower, upper, count, bar) per power of two from the first to the last
/// non-empty one.
pub(in crate::view::report) fn power_of_two_rows(s: &Summary) -> Vec<(u64, u64, u64, String)> {
    let sub = SUB as usize;
    let mut groups: Vec<(usize, u64)> = Vec::new();
    for b in &s.buckets {
        let idx = vmtrace_common::hist::bucket_of(b.lower_ns);
        let g = idx / sub;
        match groups.last_mut() {
            Some((last, n)) if *last == g => *n = n.saturating_add(b.count),
            _ => groups.push((g, b.count)),
        }
    }
    let (Some(first), Some(last)) = (groups.first(), groups.last()) else {
        return Vec::new();
    };
    let (first, last) = (first.0, last.0);
    let max = groups.iter().map(|g| g.1).max().unwrap_or(1).max(1);
    (first..=last)
        .map(|g| {
            let n = groups.iter().find(|x| x.0 == g).map_or(0, |x| x.1);
            let lo = bucket_lower(g * sub);
            let hi = if (g + 1) * sub < BUCKETS {
                bucket_lower((g + 1) * sub)
            } else {
                u64::MAX
            };
            let width = ((n as u128 * 32).div_ceil(max as u128)) as usize;
            (lo, hi, n, "@".repeat(width.min(32)))
        })
        .collect()
}
