//! The bench's statistics: medians, ranges and quantiles of a handful of
//! rounds. vmtrace's own (`vmtrace::analysis::stats`: means, Welch's
//! test) live in the collector crate, which would bring aya, tokio and the
//! eBPF build into the bench; and it has no median or range, which is
//! what a bench of ten noisy rounds reports. So these few lines stay here.

/// The median of `v` (sorted in place; None when empty).
pub fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// median [min-max] of values.
pub fn spread(values: &[f64], digits: usize) -> String {
    let mut v = values.to_vec();
    match median(&mut v) {
        None => "-".into(),
        Some(m) => format!(
            "{m:.digits$} [{:.digits$}-{:.digits$}]",
            v[0],
            v[v.len() - 1]
        ),
    }
}

/// The value at quantile `q` of `sorted` (nearest rank; 0 when empty).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_spread() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(spread(&[1.0, 1.2, 0.9], 2), "1.00 [0.90-1.20]");
        assert_eq!(spread(&[], 2), "-");
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        assert_eq!(quantile(&[], 0.5), 0.0);
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.5), 3.0);
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.99), 5.0);
    }
}
