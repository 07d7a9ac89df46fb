//! Small text helpers shared by the report's sections: durations in at
//! most 6 characters, percentages, `i:count` lists, signal names, and
//! wrapping at 72 columns.

/// `i:count` for the non-zero counts, highest index first.
pub(super) fn nonzero_pairs(counts: &[u64], label: impl Fn(usize) -> String) -> String {
    let pairs: Vec<String> = counts
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, n)| **n > 0)
        .map(|(i, n)| format!("{}:{n}", label(i)))
        .collect();
    if pairs.is_empty() {
        "none".into()
    } else {
        pairs.join(" ")
    }
}
