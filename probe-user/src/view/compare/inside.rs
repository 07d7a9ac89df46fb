//! The CPU inside the stalls, compared, in the text: the functions
//! whose share of the in-stall samples moved (`analysis::profile`).

use std::fmt::Write as _;

use crate::analysis::{profile::ProfileRow, stats::Describe};
use crate::model::format::wrap;

/// Functions shown per group in the text (all are in the JSON).
const FUNCTIONS_SHOWN: usize = 6;

/// `CPU inside the stalls, B vs A`: the kernel functions whose share of
/// the job's sampled CPU inside reclaim and compaction moved (see
/// `analysis::profile`), most change first; or that none moved.
pub(super) fn write_profile(o: &mut String, rows: &[ProfileRow], g: usize) {
    if rows.is_empty() {
        return;
    }
    let moved = crate::analysis::profile::moved(rows, g);
    let _ = writeln!(o);
    let (a, b) = (super::cells::letter(0), super::cells::letter(g));
    if moved.is_empty() {
        for l in wrap(
            &format!(
                "CPU inside the stalls, {b} vs {a}: no function's share \
                 moved beyond noise ({} functions, Holm-corrected, at least \
                 {:.0}% of the samples in reclaim and compaction)",
                rows.len(),
                100.0 * crate::analysis::profile::MIN_SHARE
            ),
            72,
        ) {
            let _ = writeln!(o, "{l}");
        }
        return;
    }
    let _ = writeln!(o, "CPU inside the stalls, {b} vs {a}: functions that moved");
    let _ = writeln!(o, "(share of the samples in reclaim and compaction, mean)");
    let pct = |d: Option<Describe>| d.map_or("-".into(), |d| format!("{:.1}%", 100.0 * d.mean));
    for r in moved.iter().take(FUNCTIONS_SHOWN) {
        // A function one group never ran inside a stall has no test.
        // A function that moved without passing the test was switched
        // on or off in every run (analysis::profile): said so, not "~".
        let mark = match r.changes[g - 1] {
            Some(c) if c.significant() => super::cells::mark(&c),
            Some(c) if c.diff > 0.0 => "(new)",
            Some(_) => "(gone)",
            None => "",
        };
        let _ = writeln!(
            o,
            "  {:<34} {a} {:>6} -> {b} {:>6} {mark}",
            r.function,
            pct(r.total[0]),
            pct(r.total[g]),
        );
    }
    if moved.len() > FUNCTIONS_SHOWN {
        let _ = writeln!(
            o,
            "  ... {} more (in --json)",
            moved.len() - FUNCTIONS_SHOWN
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::{describe, welch};

    fn row(name: &str, a: &[f64], b: &[f64]) -> ProfileRow {
        ProfileRow {
            function: name.into(),
            total: vec![describe(a), describe(b)],
            self_share: vec![describe(a), describe(b)],
            changes: vec![Some(crate::analysis::Change {
                diff: describe(b).map_or(0.0, |d| d.mean) - describe(a).map_or(0.0, |d| d.mean),
                pct: None,
                welch: welch(a, b),
            })],
            moved: vec![true],
        }
    }

    /// A switched-on function that no test could judge is said to be
    /// new, not marked "~" (within noise) in a list of what moved.
    #[test]
    fn a_function_switched_on_is_new_not_noise() {
        let rows = [
            row("zswap_store", &[0.01, 0.012, 0.009], &[0.42, 0.44, 0.43]),
            row("lzo_scompress", &[0.0, 0.0, 0.0], &[0.05, 0.35, 0.17]),
        ];
        let mut o = String::new();
        write_profile(&mut o, &rows, 1);
        assert!(o.contains("zswap_store"), "{o}");
        let line = |f: &str| o.lines().find(|l| l.contains(f)).unwrap_or("").to_string();
        assert!(line("zswap_store").ends_with("**"), "{o}");
        assert!(line("lzo_scompress").ends_with("(new)"), "{o}");
        assert!(o.lines().all(|l| l.len() <= 72), "{o}");
    }
}
