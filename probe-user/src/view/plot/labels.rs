//! Label text for plots: cutting long labels, guessing text width for
//! layout, and the numbers of linear axis ticks.

/// Labels longer than this are cut (with an ellipsis).
pub const MAX_LABEL: usize = 40;

/// Cuts a label to `MAX_LABEL` characters.
pub fn shorten(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() <= MAX_LABEL {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(MAX_LABEL - 1).collect();
        t.push('…');
        t
    }
}

/// Rough width of text in the sans-serif fonts people have (DejaVu Sans,
/// the widest common one, averages about 0.6 em).
pub fn text_w(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.6
}

/// A number with SI suffix and at most 3 significant digits: `25.6k`, `4.8M`.
pub fn fmt_si(v: f64) -> String {
    if !v.is_finite() || v.abs() < 1e-9 {
        return "0".into();
    }
    let a = v.abs();
    let (x, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    format!("{}{suffix}", trim_num(x))
}

/// At most 3 significant digits, no trailing zeros: `2`, `2.5`, `0.125`.
pub fn trim_num(v: f64) -> String {
    if !v.is_finite() {
        return "0".into();
    }
    let a = v.abs();
    let decimals = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" { "0".into() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(fmt_si(25_557.0), "25.6k");
        assert_eq!(fmt_si(4_800_000.0), "4.8M");
        assert_eq!(fmt_si(0.5), "0.5");
        assert_eq!(trim_num(-0.0001), "0");
    }

    #[test]
    fn long_labels_are_cut() {
        assert_eq!(shorten(&"x".repeat(100)).chars().count(), MAX_LABEL);
        assert_eq!(shorten("  short "), "short");
    }
}
