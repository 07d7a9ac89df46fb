//! The fault-cause section of the text report: the major faults split
//! into swap-ins (from the swap device, zswap, the zero map) and file
//! page-cache reads, and the refaults by kind, from the kernel's own
//! counters (/proc/vmstat deltas; what each counts is written at
//! `model::report::SwapCauses`), with the memory box's memory.stat
//! beside them where the box has those counters.

use std::fmt::{Result, Write as _};

use crate::{
    model::format::{fmt_thousands, write_wrapped},
    model::report::{RunReport, SwapCauses},
};

/// A counter, or `n/a` where this kernel lacks it.
pub(super) fn count(v: Option<u64>) -> String {
    v.map_or("n/a".into(), fmt_thousands)
}

/// `major faults by cause` and the refault table, when the run has the
/// counters and anything faulted or was swapped in.
pub(super) fn fault_causes(o: &mut String, report: &RunReport) -> Result {
    let Some(c) = &report.swap_causes else {
        return Ok(());
    };
    let refaults = c.refault_anon.unwrap_or(0) + c.refault_file.unwrap_or(0);
    if c.pgmajfault.unwrap_or(0) + c.swapin_pages().unwrap_or(0) + refaults == 0 {
        return Ok(());
    }
    writeln!(o)?;
    writeln!(o, "major faults by cause (all tasks, /proc/vmstat)")?;
    let row = |o: &mut String, what: &str, n: String, source: &str| {
        writeln!(o, "  {what:<22} {n:>11}   {source}")
    };
    row(o, "major faults", count(c.pgmajfault), "pgmajfault")?;
    let approx = |v: Option<u64>| v.map_or("n/a".into(), |n| format!("~{}", fmt_thousands(n)));
    row(
        o,
        "swap-ins",
        approx(c.swapin_faults()),
        "pages in - swap_ra",
    )?;
    row(o, "  from swap device", count(c.pswpin), "pages, pswpin")?;
    row(o, "  from zswap", count(c.zswpin), "pages, zswpin")?;
    row(o, "  zero-filled", count(c.swpin_zero), "pages, swpin_zero")?;
    row(o, "  read ahead", count(c.swap_ra), "pages, swap_ra")?;
    row(
        o,
        "  readahead hits",
        count(c.swap_ra_hit),
        "minor, swap_ra_hit",
    )?;
    row(
        o,
        "file reads",
        approx(c.file_faults()),
        "the rest: page cache",
    )?;
    missing_counters(o, c)?;
    refault_table(o, c)?;
    box_counters(o, report)
}

/// One line naming the counters this kernel does not have.
fn missing_counters(o: &mut String, c: &SwapCauses) -> Result {
    let missing: Vec<&str> = [
        ("zswpin", c.zswpin),
        ("zswpwb", c.zswpwb),
        ("swpin_zero", c.swpin_zero),
        ("swap_ra", c.swap_ra),
        ("workingset_refault_*", c.refault_file),
    ]
    .iter()
    .filter(|(_, v)| v.is_none())
    .map(|(k, _)| *k)
    .collect();
    if missing.is_empty() {
        return Ok(());
    }
    write_wrapped(
        o,
        &format!(
            "  (n/a: this kernel has no {}; not counted, not 0)",
            missing.join(", ")
        ),
    )
}

/// Refaults, activations and restores per LRU type (workingset_*).
fn refault_table(o: &mut String, c: &SwapCauses) -> Result {
    if c.refault_anon.is_none() && c.refault_file.is_none() {
        return Ok(());
    }
    writeln!(o, "  refaults: evicted pages read back (faults, read(),")?;
    writeln!(o, "  swap-ins alike; vmstat workingset_*)")?;
    writeln!(
        o,
        "  {:<8} {:>14} {:>14} {:>14}",
        "", "refault", "activate", "restore"
    )?;
    for (kind, r, a, s) in [
        ("anon", c.refault_anon, c.activate_anon, c.restore_anon),
        ("file", c.refault_file, c.activate_file, c.restore_file),
    ] {
        writeln!(
            o,
            "  {kind:<8} {:>14} {:>14} {:>14}",
            count(r),
            count(a),
            count(s)
        )?;
    }
    Ok(())
}

/// The box's own counters (memory.stat: the job's tasks only), those of
/// them the box's cgroup version has.
fn box_counters(o: &mut String, report: &RunReport) -> Result {
    let Some(b) = &report.membox else {
        return Ok(());
    };
    let keys = [
        "pgmajfault",
        "workingset_refault_anon",
        "workingset_refault_file",
        "zswpin",
        "zswpout",
        "zswpwb",
    ];
    let parts: Vec<String> = keys
        .iter()
        .filter_map(|k| Some(format!("{k} {}", fmt_thousands(*b.memory_stat.get(*k)?))))
        .collect();
    if parts.is_empty() {
        return Ok(());
    }
    write_wrapped(
        o,
        &format!("  the box alone (memory.stat): {}", parts.join(", ")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::vmstat::VmStat;

    #[test]
    fn fault_causes_names_file_reads_and_missing_counters() {
        let d = VmStat::parse(
            "pgmajfault 17012\npswpin 2500\nswap_ra 400\nswap_ra_hit 380\n\
             zswpin 0\nzswpout 0\nworkingset_refault_anon 2400\n\
             workingset_refault_file 14000\nworkingset_activate_anon 1\n\
             workingset_activate_file 2\nworkingset_restore_anon 3\n\
             workingset_restore_file 4\n",
        );
        let report = RunReport {
            swap_causes: Some(SwapCauses::from_delta(&d)),
            ..Default::default()
        };
        let mut o = String::new();
        fault_causes(&mut o, &report).expect("write");
        assert!(o.contains("~2,100"), "{o}");
        assert!(o.contains("~14,912"), "{o}");
        assert!(o.contains("no zswpwb, swpin_zero;"), "{o}");
        for l in o.lines() {
            assert!(l.is_ascii() && l.len() <= 72, "{l:?}");
        }
    }
}
