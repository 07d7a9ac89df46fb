//! The LRU sections of the text report: inactive-list shrinking (with
//! /proc/vmstat beside it, scan velocity, and why scanned pages were
//! kept back), shrinks by priority, and active-list shrinking.

use crate::view::format::{pct, write_wrapped};
use std::fmt::{Result, Write as _};

use super::names::nonzero_pairs;
use crate::model::report::{LruRowReport, RunReport};

/// The inactive LRU table per (node, context, lru), its total against
/// /proc/vmstat, the scan velocity and the kept-back table.
pub(super) fn shrink_inactive(o: &mut String, report: &RunReport) -> Result {
    let Some(rows) = &report.lru_shrink_inactive else {
        return Ok(());
    };
    writeln!(o)?;
    writeln!(o, "LRU shrink inactive (all tasks; vmstat: pgscan/pgsteal)")?;
    writeln!(
        o,
        "  {:>4} {:<7} {:<4} {:>8} {:>12} {:>12} {:>6}",
        "node", "context", "lru", "events", "scanned", "reclaimed", "eff%"
    )?;
    for r in rows {
        writeln!(
            o,
            "  {:>4} {:<7} {:<4} {:>8} {:>12} {:>12} {:>6}",
            r.node,
            r.context,
            r.lru,
            r.totals.events,
            r.totals.nr_scanned,
            r.totals.nr_reclaimed,
            pct(r.totals.nr_reclaimed, r.totals.nr_scanned)
        )?;
    }
    let (s, r) = report.lru_totals().unwrap_or_default();
    writeln!(o, "  {:<27} {:>12} {:>12} {:>6}", "total", s, r, pct(r, s))?;
    let v = &report.vmstat;
    writeln!(
        o,
        "  {:<27} {:>12} {:>12}",
        "/proc/vmstat", v.pgscan, v.pgsteal
    )?;
    let wall_s = report.usage.wall_s;
    if wall_s > 0.0 {
        writeln!(
            o,
            "  velocity {:.0} pages scanned/s, {:.0} reclaimed/s",
            s as f64 / wall_s,
            r as f64 / wall_s
        )?;
    }
    vmstat_twin(o, report)?;
    kept_back(o, rows)
}

/// One line when the tracepoint's scanned total and /proc/vmstat's
/// pgscan_anon + pgscan_file disagree by more than 2% (and 64 pages): why,
/// where the kernel explains it, or a flag. What was read (mm/vmscan.c):
/// shrink_inactive_list counts PGSCAN_ANON/FILE for every reclaim,
/// memcg reclaim included (only pgscan_kswapd/direct skip cgroup
/// reclaim, and vmtrace does not use them), so the classic LRU agrees.
/// MGLRU's evict_folios counts pgscan once per isolation in scan_folios
/// but, from 6.7, emits lru_shrink_inactive per shrink_folio_list pass,
/// retries included (more traced); 6.1-6.6 with lru_gen on emit none
/// (less traced). A v1 memcg's reclaim waits for writeback and retries
/// the same folio inside shrink_folio_list: not counted twice by either.
fn vmstat_twin(o: &mut String, report: &RunReport) -> Result {
    let (traced, _) = report.lru_totals().unwrap_or_default();
    let vmstat = report.vmstat.pgscan;
    let gap = traced.abs_diff(vmstat);
    if gap <= 64 || gap * 50 <= traced.max(vmstat) {
        return Ok(());
    }
    let share = pct(gap, vmstat.max(1));
    let mglru_traced = crate::model::recording::environment::kernel_version(&report.kernel_release)
        .is_some_and(|v| v >= (6, 7));
    let missed = report
        .dropped
        .program_misses
        .iter()
        .any(|(p, n)| p.contains("shrink_inactive") && *n > 0);
    let why = match (traced > vmstat, mglru_traced) {
        (true, true) => {
            "with MGLRU on, evict_folios traces each retry again: \
             trust /proc/vmstat"
        }
        (true, false) => "not explained by this kernel's code: flagged",
        (false, _) if missed => "the probe missed events (see dropped)",
        (false, true) => "reclaim outside the traced shrink path: flagged",
        (false, false) => {
            "with MGLRU on, this kernel traces no LRU shrink events: \
             trust /proc/vmstat"
        }
    };
    let more = if traced > vmstat { "more" } else { "fewer" };
    let text = format!("  probe scanned {gap} pages {more} than vmstat ({share}%): {why}");
    write_wrapped(o, &text)
}

/// "why scanned pages were not reclaimed": reasons down, the busiest
/// (context, lru) pairs across (at most 4 columns), summed over nodes.
fn kept_back(o: &mut String, rows: &[LruRowReport]) -> Result {
    let cols = busiest_pairs(rows);
    if cols.is_empty() {
        return Ok(());
    }
    writeln!(o, "  scanned but kept back (pages)")?;
    let mut head = format!("  {:<16}", "");
    for c in &cols {
        let _ = write!(head, " {:>12}", format!("{}/{}", c.context, c.lru));
    }
    writeln!(o, "{head}")?;
    type Get = fn(&LruRowReport) -> u64;
    let reasons: [(&str, Get); 8] = [
        ("dirty", |c| c.totals.nr_dirty),
        ("writeback", |c| c.totals.nr_writeback),
        ("congested", |c| c.totals.nr_congested),
        ("immediate", |c| c.totals.nr_immediate),
        ("activated anon", |c| c.totals.nr_activate_anon),
        ("activated file", |c| c.totals.nr_activate_file),
        ("referenced kept", |c| c.totals.nr_ref_keep),
        ("unmap failed", |c| c.totals.nr_unmap_fail),
    ];
    for (name, get) in reasons {
        let mut line = format!("  {name:<16}");
        for c in &cols {
            let _ = write!(line, " {:>12}", get(c));
        }
        writeln!(o, "{line}")?;
    }
    Ok(())
}

/// The rows summed over nodes per (context, lru), most scanned first, at
/// most 4.
fn busiest_pairs(rows: &[LruRowReport]) -> Vec<LruRowReport> {
    let mut cols: Vec<LruRowReport> = Vec::new();
    for r in rows {
        let i = match cols
            .iter()
            .position(|c| c.context == r.context && c.lru == r.lru)
        {
            Some(i) => i,
            None => {
                cols.push(LruRowReport {
                    context: r.context.clone(),
                    lru: r.lru.clone(),
                    ..Default::default()
                });
                cols.len() - 1
            }
        };
        cols[i].totals += r.totals;
    }
    cols.sort_by_key(|c| std::cmp::Reverse(c.totals.nr_scanned));
    cols.truncate(4);
    cols
}

/// `<context> shrinks by priority (12 mildest, 0 last resort): ...`,
/// right under the inactive table (no blank line between).
pub(super) fn priorities(o: &mut String, report: &RunReport) -> Result {
    for p in &report.reclaim_priority {
        let pairs = nonzero_pairs(&p.counts, |i| i.to_string());
        let text = format!(
            "{} shrinks by priority (12 mildest, 0 last resort): {pairs}",
            p.context
        );
        write_wrapped(o, &text)?;
    }
    Ok(())
}

/// The active LRU table per (context, lru).
pub(super) fn shrink_active(o: &mut String, report: &RunReport) -> Result {
    let Some(rows) = &report.lru_shrink_active else {
        return Ok(());
    };
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(o)?;
    writeln!(o, "LRU shrink active (all tasks)")?;
    writeln!(
        o,
        "  {:<7} {:<4} {:>11} {:>11} {:>12} {:>12}",
        "context", "lru", "taken", "kept active", "deactivated", "referenced"
    )?;
    for r in rows {
        writeln!(
            o,
            "  {:<7} {:<4} {:>11} {:>11} {:>12} {:>12}",
            r.context,
            r.lru,
            r.totals.nr_taken,
            r.totals.nr_active,
            r.totals.nr_deactivated,
            r.totals.nr_referenced
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(release: &str, traced: u64, pgscan: u64) -> RunReport {
        let mut row = LruRowReport::default();
        row.totals.nr_scanned = traced;
        let mut r = RunReport {
            kernel_release: release.into(),
            lru_shrink_inactive: Some(vec![row]),
            ..Default::default()
        };
        r.vmstat.pgscan = pgscan;
        r
    }

    #[test]
    fn a_probe_count_apart_from_vmstat_says_why() {
        let line = |r: &RunReport| {
            let mut o = String::new();
            vmstat_twin(&mut o, r).expect("writes");
            o
        };
        // The 6.12 guest of issue 16: MGLRU's retries traced again.
        let o = line(&run("6.12.57+deb12-amd64", 34847, 28123));
        assert!(o.contains("6724 pages more than vmstat (23.9%)"), "{o}");
        assert!(o.contains("evict_folios"), "{o}");
        let o = line(&run("6.1.0-57-amd64", 34847, 28123));
        assert!(o.contains("flagged"), "{o}");
        let o = line(&run("6.1.0-57-amd64", 0, 28123));
        assert!(o.contains("traces no LRU shrink events"), "{o}");
        assert!(line(&run("6.18.4", 1000, 1010)).is_empty());
        for l in line(&run("6.12.1", 34847, 28123)).lines() {
            assert!(l.is_ascii() && l.len() <= 72, "{l:?}");
        }
    }
}
