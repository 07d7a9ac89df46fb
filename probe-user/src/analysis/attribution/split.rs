//! The split of an elapsed-time difference among the components'
//! elapsed equivalents, bounded so that no part exceeds the difference.

/// The split of an elapsed-time difference among components.
#[derive(Debug)]
pub(super) struct Split {
    /// Per component: elapsed seconds attributed (the sign of the
    /// difference; 0 for a component that did not move with it).
    pub parts: Vec<f64>,
    /// Per component: its share of what is explained, in [0, 1]; None
    /// when it explains nothing.
    pub shares: Vec<Option<f64>>,
    /// Per component that moved against the difference: the elapsed
    /// seconds netted out of the parts (the sign opposite), else 0.
    pub offsets: Vec<f64>,
    pub explained: f64,
    pub unexplained: f64,
    /// Factor (<= 1) the components were scaled by when, net, they came
    /// to more than the difference.
    pub scale: f64,
}

/// Splits an elapsed difference `diff` (s) among the components'
/// elapsed equivalents `equiv` (s, signed: each one's difference times
/// its rate, `w` for CPU-seconds, `w_io` for task-seconds of waiting).
///
/// Those that moved with the difference contribute, those that moved
/// against it offset. Explained is the net (contributions less offsets),
/// at least 0 and at most |diff|; where the net is larger every
/// equivalent is scaled down alike. Each contributor's part is its share
/// of the contributions times the explained seconds; unexplained is the
/// rest of the difference. So parts and unexplained have the sign of the
/// difference and add up to it, no part exceeds it, the shares lie in
/// [0, 1] and add up to 1.
pub(super) fn split(diff: f64, equiv: &[f64]) -> Split {
    let n = equiv.len();
    let mut s = Split {
        parts: vec![0.0; n],
        shares: vec![None; n],
        offsets: vec![0.0; n],
        explained: 0.0,
        unexplained: if diff.is_finite() { diff } else { 0.0 },
        scale: 1.0,
    };
    if !diff.is_finite() || diff.abs() < 1e-9 || equiv.iter().any(|e| !e.is_finite()) {
        return s;
    }
    let sign = diff.signum();
    let size = diff.abs();
    let gross: f64 = equiv.iter().map(|e| (sign * e).max(0.0)).sum();
    let against: f64 = equiv.iter().map(|e| (-sign * e).max(0.0)).sum();
    let net = gross - against;
    let explained = net.clamp(0.0, size);
    s.scale = if net > size { size / net } else { 1.0 };
    for (i, &e) in equiv.iter().enumerate() {
        let with = sign * e;
        if with > 0.0 && gross > 0.0 {
            s.parts[i] = sign * with / gross * explained;
            s.shares[i] = (explained > 0.0).then_some(with / gross);
        } else if with < 0.0 {
            s.offsets[i] = e * s.scale;
        }
    }
    s.explained = sign * explained;
    s.unexplained = sign * (size - explained);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The invariants of a split, whatever the components did.
    fn check(diff: f64, s: &Split) {
        let parts: f64 = s.parts.iter().sum();
        assert!((parts + s.unexplained - diff).abs() < 1e-9, "{s:?}");
        assert!((parts - s.explained).abs() < 1e-9, "{s:?}");
        for p in &s.parts {
            assert!(p * diff >= 0.0 && p.abs() <= diff.abs() + 1e-12, "{s:?}");
        }
        assert!(s.unexplained * diff >= 0.0 && s.unexplained.abs() <= diff.abs() + 1e-12);
        let shares: Vec<f64> = s.shares.iter().flatten().copied().collect();
        assert!(shares.iter().all(|x| (0.0..=1.0).contains(x)), "{s:?}");
        if s.explained != 0.0 {
            assert!((shares.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{s:?}");
        }
        for o in &s.offsets {
            assert!(o * diff <= 0.0, "{s:?}");
        }
    }

    #[test]
    fn splits_keep_their_bounds() {
        let cases: &[(f64, &[f64])] = &[
            (2.7, &[417.0, -200.0, 10.0]),
            (2.7, &[1.0, 0.5]),
            (2.7, &[1.0, -3.0]),
            (-0.76, &[-0.01, -0.1, 0.0, -0.2, 0.0, 0.0]),
            (-0.76, &[5.0, 6.0]),
            (1.0, &[0.0, 0.0]),
            (0.0, &[1.0, -1.0]),
        ];
        for &(diff, equiv) in cases {
            check(diff, &split(diff, equiv));
        }
        // Over-explained: scaled down to the difference, nothing left.
        let s = split(2.7, &[417.0, -200.0, 10.0]);
        assert!((s.explained - 2.7).abs() < 1e-9 && s.unexplained.abs() < 1e-9);
        assert!(s.scale < 0.02 && s.offsets[1] < 0.0);
        // Under-explained: the rest is unexplained, offsets netted.
        let s = split(2.7, &[1.0, 0.5, -0.5]);
        assert!((s.explained - 1.0).abs() < 1e-9 && (s.unexplained - 1.7).abs() < 1e-9);
        assert!((s.shares[0].unwrap_or(0.0) - 2.0 / 3.0).abs() < 1e-9);
        // Against the difference on balance: nothing explained.
        let s = split(2.7, &[1.0, -3.0]);
        assert_eq!(s.explained, 0.0);
        assert!(s.shares.iter().all(Option::is_none));
    }
}
