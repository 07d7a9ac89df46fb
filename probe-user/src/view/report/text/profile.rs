//! The job's CPU inside reclaim and compaction, in the text report: the
//! profile's samples whose stack passes through the functions that open
//! the stall spans (`ProfileReport::in_stall`), as CPU-seconds, and the
//! kernel functions that held them: by self share (interrupted in the
//! function: where the cycles went) and by total share (below it).

use std::fmt::{Result, Write as _};

use crate::model::format::fmt_secs;
use crate::model::profile::FunctionSamples;
use crate::model::report::RunReport;

/// What a ranking orders the functions by.
type Rank = fn(&FunctionSamples) -> u64;

/// Functions listed per ranking.
const SHOWN: usize = 8;

pub(super) fn inside_stalls(o: &mut String, report: &RunReport) -> Result {
    let Some(p) = &report.profile else {
        return Ok(());
    };
    let inside = p.in_stall();
    if inside.samples == 0 {
        return Ok(());
    }
    writeln!(o)?;
    writeln!(
        o,
        "CPU inside reclaim and compaction: {} samples at {} Hz ({})",
        inside.samples,
        p.hz,
        fmt_secs(p.seconds(inside.samples))
    )?;
    let share = |n: u64| 100.0 * n as f64 / inside.samples as f64;
    let rankings: [(&str, Rank); 2] = [
        ("by self (interrupted in it)", |f| f.own),
        ("by total (it, or below it)", |f| f.total),
    ];
    for (title, key) in rankings {
        writeln!(o, "  {title}:")?;
        writeln!(o, "  {:>6} {:>6}  function", "self", "total")?;
        for (name, f) in inside.ranked(key).into_iter().take(SHOWN) {
            let name: String = name.chars().take(54).collect();
            writeln!(
                o,
                "  {:>5.1}% {:>5.1}%  {name}",
                share(f.own),
                share(f.total)
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::profile::{ProfileReport, ProfileStack};

    #[test]
    fn the_functions_inside_the_stalls_by_self_and_total() {
        let stack = |frames: &[&str], samples| ProfileStack {
            frames: frames.iter().map(|f| f.to_string()).collect(),
            samples,
        };
        let report = RunReport {
            profile: Some(ProfileReport {
                hz: 1000,
                stacks: vec![
                    stack(
                        &["lzo1x_1_do_compress", "zswap_store", "try_to_free_pages"],
                        60,
                    ),
                    stack(&["isolate_lru_folios", "try_to_free_pages"], 40),
                    stack(&["clear_page_erms", "do_anonymous_page"], 900),
                ],
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut o = String::new();
        inside_stalls(&mut o, &report).expect("writes");
        assert!(
            o.contains("CPU inside reclaim and compaction: 100 samples at 1000 Hz (100ms)"),
            "{o}"
        );
        let lines: Vec<&str> = o.lines().collect();
        assert_eq!(lines[4], "   60.0%  60.0%  lzo1x_1_do_compress", "{o}");
        assert!(o.contains("    0.0% 100.0%  try_to_free_pages"), "{o}");
        assert!(!o.contains("clear_page_erms"), "{o}");
        assert!(o.lines().all(|l| l.len() <= 72 && l.is_ascii()), "{o}");
        let mut none = String::new();
        inside_stalls(&mut none, &RunReport::default()).expect("writes");
        assert!(none.is_empty());
    }
}
