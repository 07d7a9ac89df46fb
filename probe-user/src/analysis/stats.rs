//! The statistics of `compare`: group summaries and Welch's t-test.
//!
//! Why Welch's t-test: a group is a handful of repeated runs (3 to 10),
//! and two kernels need not have equal run-to-run variance, which is what
//! Welch's test does not assume. A rank test cannot help at these sizes:
//! Mann-Whitney's smallest two-sided p for 3 runs against 3 is 0.1, so it
//! could never call a difference significant at 5 %, however large; a
//! bootstrap of 3 values has 10 distinct resamples. The test is computed
//! here (Student's t distribution through the regularised incomplete beta
//! function); the unit tests check it against SciPy.
//!
//! Why not the `statrs` crate (0.19.1 checked): against 40-digit values
//! (mpmath) on t 0..50 and df 1..1000 with fractional df, this code and
//! statrs's Student t both err by under 1e-11 in relative terms wherever
//! p < 0.999 (2e-12 vs 5e-12 where the 1 % and 5 % marks are decided,
//! and they never disagree on a mark); for t near 0 this code is off by
//! at most 1.3e-8, statrs by 8e-7. Its default features bring in
//! nalgebra and rand (26 crates, about a minute of cold build); even
//! without them it adds two crates for 80 lines that are not less exact.

use serde::Serialize;

/// Mean, sample standard deviation, min and max of a group's values.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Describe {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n - 1); 0 for one value.
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
}

pub fn describe(values: &[f64]) -> Option<Describe> {
    if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n as f64;
    let stddev = if n > 1 {
        (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    Some(Describe {
        n,
        mean,
        stddev,
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    })
}

/// Welch's unequal-variances t-test of two groups.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Welch {
    pub t: f64,
    /// Welch-Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// None when either group has fewer than two values (no variance to judge
/// noise by) or both groups are constant.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    let (da, db) = (describe(a)?, describe(b)?);
    if da.n < 2 || db.n < 2 {
        return None;
    }
    let (va, vb) = (
        da.stddev.powi(2) / da.n as f64,
        db.stddev.powi(2) / db.n as f64,
    );
    let se2 = va + vb;
    if se2 <= 0.0 {
        // Two constant groups: equal is no evidence, different is exact.
        return None;
    }
    let t = (da.mean - db.mean) / se2.sqrt();
    let df = se2.powi(2) / (va.powi(2) / (da.n - 1) as f64 + vb.powi(2) / (db.n - 1) as f64);
    Some(Welch {
        t,
        df,
        p: two_sided_p(t, df),
    })
}

/// P(|T| >= |t|) for Student's t with `df` degrees of freedom.
pub fn two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    let x = df / (df + t * t);
    incomplete_beta(df / 2.0, 0.5, x).clamp(0.0, 1.0)
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms; ~1e-15 relative).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularised incomplete beta function I_x(a, b).
pub fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    // The continued fraction converges fast for x < (a+1)/(a+b+2).
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// Lentz's method for the incomplete beta continued fraction.
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-15;
    let nonzero = |v: f64| if v.abs() < TINY { TINY } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / nonzero(1.0 - qab * x / qap);
    let mut h = d;
    // One step of the recurrence with coefficient `aa`: h's factor.
    let mut step = |aa: f64| {
        d = 1.0 / nonzero(1.0 + aa * d);
        c = nonzero(1.0 + aa / c);
        d * c
    };
    for m in 1..=300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        h *= step(m * (b - m) * x / ((qam + m2) * (a + m2)));
        let del = step(-(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)));
        h *= del;
        if (del - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64, rel: f64) {
        assert!(
            (got - want).abs() <= rel * want.abs().max(1e-300),
            "got {got}, want {want}"
        );
    }

    /// Reference values: SciPy 1.17.1, `scipy.stats.ttest_ind(a, b,
    /// equal_var=False)` (statistic, pvalue, df), computed on this
    /// project's machine with `pip install scipy`.
    #[test]
    fn welch_matches_scipy() {
        // (a, b, t, p, df)
        type Case<'a> = (&'a [f64], &'a [f64], f64, f64, f64);
        let cases: &[Case] = &[
            (
                &[10.1, 10.3, 9.9],
                &[11.2, 11.0, 11.5],
                -6.106580268910351,
                0.004273281509598067,
                3.8059405940594067,
            ),
            (
                &[12.0, 12.4, 11.8, 12.1, 12.3],
                &[12.2, 12.5, 11.9, 12.6, 12.0],
                -0.6928203230275466,
                0.5091290002370013,
                7.564296520423603,
            ),
            (
                &[1.0, 2.0, 3.0, 4.0, 5.0],
                &[2.0, 4.0, 6.0, 8.0, 10.0, 12.0],
                -2.3763541031440183,
                0.04928433820673053,
                6.972255729794934,
            ),
            (
                &[100.0, 101.0],
                &[100.5, 99.0],
                0.8320502943378437,
                0.5038378637419373,
                1.7422680412371134,
            ),
            (
                &[5.0, 5.0, 5.0],
                &[5.0, 5.0, 5.1],
                -1.0,
                0.4226497308103742,
                2.0,
            ),
        ];
        for &(a, b, t, p, df) in cases {
            let w = welch(a, b).expect("testable");
            close(w.t, t, 1e-9);
            close(w.df, df, 1e-9);
            close(w.p, p, 1e-7);
        }
    }

    /// SciPy 1.17.1 `scipy.stats.t.sf(t, df)` (one-sided) for t = 2, 1, 5
    /// at df = 3, 10.5, 2.2.
    #[test]
    fn t_tail_matches_scipy() {
        close(two_sided_p(2.0, 3.0) / 2.0, 0.06966298427942152, 1e-9);
        close(two_sided_p(1.0, 10.5) / 2.0, 0.16989919626957092, 1e-9);
        close(two_sided_p(5.0, 2.2) / 2.0, 0.01548448284490948, 1e-9);
        assert_eq!(two_sided_p(0.0, 4.0), 1.0);
    }

    #[test]
    fn untestable_groups() {
        assert_eq!(welch(&[1.0], &[2.0, 3.0]), None);
        assert_eq!(welch(&[2.0, 2.0], &[3.0, 3.0]), None);
        assert_eq!(welch(&[], &[]), None);
        assert_eq!(describe(&[f64::NAN]), None);
        let d = describe(&[1.0, 2.0, 3.0, 4.0]).expect("values");
        assert_eq!((d.n, d.mean, d.min, d.max), (4, 2.5, 1.0, 4.0));
        close(d.stddev, 1.2909944487358056, 1e-12);
    }
}
