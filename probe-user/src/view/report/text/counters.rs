//! The kernel's own event counters beside vmtrace's sections: compaction
//! (compact_*, next to the eBPF compaction runs), THP and mTHP (thp_*,
//! hugepages-*/stats) and the LRU list sizes over the samples, all from
//! /proc/vmstat (or sysfs), machine-wide. What each counter counts is
//! written at `model::counters`; a counter the kernel lacks reads `n/a`.

use std::fmt::{Result, Write as _};

use super::causes::count;
use crate::{
    model::format::{fmt_thousands, write_wrapped},
    model::{counters::LruSizes, report::RunReport},
};

fn row(o: &mut String, what: &str, n: Option<u64>, source: &str) -> Result {
    writeln!(o, "  {what:<26} {:>11}   {source}", count(n))
}

/// Direct compactions and their outcome, kcompactd runs and the pages
/// the scanners looked at, when any happened.
pub(super) fn compaction_counters(o: &mut String, report: &RunReport) -> Result {
    let Some(c) = &report.compaction_counters else {
        return Ok(());
    };
    let all = [c.stall, c.daemon_wake, c.migrate_scanned, c.free_scanned];
    if all.iter().all(|v| v.unwrap_or(0) == 0) {
        return Ok(());
    }
    writeln!(o)?;
    writeln!(o, "compaction events (all tasks, /proc/vmstat)")?;
    row(o, "direct compactions", c.stall, "compact_stall")?;
    row(o, "  then got the page", c.success, "compact_success")?;
    row(o, "  still no page", c.fail, "compact_fail")?;
    row(o, "kcompactd runs", c.daemon_wake, "compact_daemon_wake")?;
    row(
        o,
        "pages scanned to migrate",
        c.migrate_scanned,
        "compact_migrate_scanned",
    )?;
    row(
        o,
        "free pages scanned",
        c.free_scanned,
        "compact_free_scanned",
    )
}

/// THP faults, fallbacks, swap-outs, collapses and splits, and the
/// per-size mTHP counters, when any happened.
pub(super) fn thp(o: &mut String, report: &RunReport) -> Result {
    let Some(t) = report.thp.as_ref().filter(|t| t.any()) else {
        return Ok(());
    };
    writeln!(o)?;
    writeln!(o, "transparent huge pages (all tasks, /proc/vmstat)")?;
    row(o, "THP faults", t.fault_alloc, "thp_fault_alloc")?;
    row(
        o,
        "fell back to small pages",
        t.fault_fallback,
        "thp_fault_fallback",
    )?;
    row(
        o,
        "  memcg charge failed",
        t.fault_fallback_charge,
        "..._fallback_charge",
    )?;
    row(o, "swapped out whole", t.swpout, "thp_swpout")?;
    row(
        o,
        "split to be swapped out",
        t.swpout_fallback,
        "thp_swpout_fallback",
    )?;
    row(
        o,
        "allocated to collapse",
        t.collapse_alloc,
        "thp_collapse_alloc",
    )?;
    row(o, "split", t.split_page, "thp_split_page")?;
    let sizes: Vec<_> = t.sizes.iter().filter(|s| s.any()).collect();
    if sizes.is_empty() {
        return Ok(());
    }
    write_wrapped(
        o,
        "  per size (hugepages-<size>/stats, anonymous memory): faults \
         anon_fault_alloc, fallback anon_fault_fallback, swap-out \
         swpout, swap split swpout_fallback",
    )?;
    writeln!(
        o,
        "  {:>8} {:>11} {:>11} {:>11} {:>11}",
        "size", "faults", "fallback", "swap-out", "swap split"
    )?;
    for s in sizes {
        writeln!(
            o,
            "  {:>8} {:>11} {:>11} {:>11} {:>11}",
            s.size,
            count(s.anon_fault_alloc),
            count(s.anon_fault_fallback),
            count(s.swpout),
            count(s.swpout_fallback)
        )?;
    }
    Ok(())
}

/// The four LRU lists over the samples: first, last, least and most
/// pages (the whole machine's lists, not the box's).
pub(super) fn lru_sizes(o: &mut String, report: &RunReport) -> Result {
    let samples: Vec<LruSizes> = report.timeline.iter().filter_map(|s| s.lru).collect();
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        return Ok(());
    };
    writeln!(o)?;
    writeln!(
        o,
        "LRU lists, whole machine (/proc/vmstat, pages, {} samples)",
        samples.len()
    )?;
    writeln!(
        o,
        "  {:<18} {:>12} {:>12} {:>12} {:>12}",
        "list", "first", "last", "least", "most"
    )?;
    for (i, (name, _)) in first.lists().iter().enumerate() {
        let values: Vec<u64> = samples.iter().map(|s| s.lists()[i].1).collect();
        let min = values.iter().copied().min().unwrap_or(0);
        let max = values.iter().copied().max().unwrap_or(0);
        writeln!(
            o,
            "  {:<18} {:>12} {:>12} {:>12} {:>12}",
            name,
            fmt_thousands(first.lists()[i].1),
            fmt_thousands(last.lists()[i].1),
            fmt_thousands(min),
            fmt_thousands(max)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        counters::{CompactionCounters, MthpSizeCounters, ThpCounters},
        sample::Sample,
    };

    #[test]
    fn counters_name_their_source_and_say_what_is_missing() {
        let r = RunReport {
            compaction_counters: Some(CompactionCounters {
                stall: Some(5),
                success: Some(3),
                fail: Some(2),
                daemon_wake: None,
                ..Default::default()
            }),
            thp: Some(ThpCounters {
                fault_alloc: Some(512),
                fault_fallback: Some(0),
                sizes: vec![MthpSizeCounters {
                    size: "2048kB".into(),
                    anon_fault_alloc: Some(512),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            timeline: [100u64, 300, 200]
                .iter()
                .map(|&n| Sample {
                    lru: Some(LruSizes {
                        active_anon: n,
                        ..Default::default()
                    }),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let mut o = String::new();
        compaction_counters(&mut o, &r).expect("write");
        thp(&mut o, &r).expect("write");
        lru_sizes(&mut o, &r).expect("write");
        assert!(
            o.contains("direct compactions                   5   compact_stall"),
            "{o}"
        );
        assert!(o.contains("kcompactd runs                     n/a   compact_daemon_wake"));
        assert!(o.contains("THP faults                         512   thp_fault_alloc"));
        assert!(o.contains("    2048kB         512         n/a"), "{o}");
        assert!(
            o.contains("nr_active_anon              100          200          100          300")
        );
        assert!(o.lines().all(|l| l.len() <= 72 && l.is_ascii()), "{o}");
    }
}
