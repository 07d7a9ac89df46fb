//! Label text for plots: cutting long labels, guessing text width for
//! layout.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_labels_are_cut() {
        assert_eq!(shorten(&"x".repeat(100)).chars().count(), MAX_LABEL);
        assert_eq!(shorten("  short "), "short");
    }
}
