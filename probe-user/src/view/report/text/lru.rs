//! The LRU sections of the text report: inactive-list shrinking (with
//! /proc/vmstat beside it, scan velocity, and why scanned pages were
//! kept back), shrinks by priority, and active-list shrinking.

use crate::model::format::{pct, write_wrapped};
use std::fmt::{Result, Write as _};

use super::names::nonzero_pairs;
use crate::model::report::{LruRowReport, RunReport};
use vmtrace_common::LruShrinkInactive;

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
            r.context.name(),
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
    kept_back(o, report, rows)
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

/// "where the scanned pages went": disjoint groups down (reclaimed,
/// activated, referenced and kept, the rest) that add up to what was
/// scanned, then the flags shrink_folio_list counts on the way, which
/// overlap those groups; the busiest (context, lru) pairs across (at
/// most 4 columns), summed over nodes.
///
/// What was read (mm/vmscan.c shrink_folio_list, 6.1/6.12/6.18): every
/// isolated folio ends in one of free_it (nr_reclaimed), activate_locked
/// (nr_activate[type], unless mlocked), keep_locked after
/// folio_check_references said FOLIOREF_KEEP (nr_ref_keep), or another
/// keep that no stat counts. The largest of those: pageout() returned
/// PAGE_SUCCESS and the folio is still under writeback (`goto keep`),
/// which is every anon folio just written to a swap device that
/// completes asynchronously; it stays on the inactive list until a later
/// pass frees it. nr_writeback, nr_immediate and nr_unmap_fail count
/// folios that went to activate_locked (already in "activated"); nr_dirty
/// and nr_congested count folios whatever became of them.
fn kept_back(o: &mut String, report: &RunReport, rows: &[LruRowReport]) -> Result {
    let cols = busiest_pairs(rows);
    if cols.is_empty() {
        return Ok(());
    }
    writeln!(o, "  where the scanned pages went (pages)")?;
    let mut head = format!("  {:<18}", "");
    for c in &cols {
        let _ = write!(head, " {:>12}", format!("{}/{}", c.context.name(), c.lru));
    }
    writeln!(o, "{head}")?;
    let groups: [(&str, Get); 5] = [
        ("reclaimed", |t| Some(t.nr_reclaimed)),
        ("activated", |t| Some(activated(t))),
        ("referenced, kept", |t| Some(t.nr_ref_keep)),
        ("the rest (below)", rest),
        ("= scanned", |t| Some(t.nr_scanned)),
    ];
    let flags: [(&str, Get); 5] = [
        ("  dirty", |t| Some(t.nr_dirty)),
        ("  congested", |t| Some(t.nr_congested)),
        ("  writeback", |t| Some(t.nr_writeback)),
        ("  immediate", |t| Some(t.nr_immediate)),
        ("  unmap failed", |t| Some(t.nr_unmap_fail)),
    ];
    pass_rows(o, &cols, &groups)?;
    writeln!(o, "  seen on the way (within the rows above)")?;
    pass_rows(o, &cols, &flags)?;
    rest_note(o, report, &cols)
}

/// A row's reader: None prints "n/a".
type Get = fn(&LruShrinkInactive) -> Option<u64>;

/// One line per (name, reader), a column per (context, lru) pair.
fn pass_rows(o: &mut String, cols: &[LruRowReport], rows: &[(&str, Get)]) -> Result {
    for (name, get) in rows {
        let mut line = format!("  {name:<18}");
        for c in cols {
            let v = get(&c.totals).map_or("n/a".to_string(), |v| v.to_string());
            let _ = write!(line, " {v:>12}");
        }
        writeln!(o, "{line}")?;
    }
    Ok(())
}

/// Folios moved to the active list, anon and file (an anon LRU's folios
/// are anon: the type is the folio's).
fn activated(t: &LruShrinkInactive) -> u64 {
    t.nr_activate_anon + t.nr_activate_file
}

/// Scanned pages that were neither freed, activated nor kept as
/// referenced; None when those exceed what was scanned (the groups then
/// do not partition the scan: MGLRU's retries, or a lost event).
fn rest(t: &LruShrinkInactive) -> Option<u64> {
    t.nr_scanned
        .checked_sub(t.nr_reclaimed + activated(t) + t.nr_ref_keep)
}

/// What "the rest" is, next to what reclaim wrote (mm_vmscan_write_folio).
/// An anon folio written to a block device stays under writeback until
/// the I/O ends, so shrink_folio_list keeps it and a later pass frees it;
/// a write to zswap (zswap_store in swap_writepage) or zram (a bio that
/// completes inside submit) has ended when pageout() returns, and the
/// folio is freed in the same pass.
fn rest_note(o: &mut String, report: &RunReport, cols: &[LruRowReport]) -> Result {
    let total: Option<u64> = cols.iter().map(|c| rest(&c.totals)).sum();
    let synchronous = report.swap_causes.as_ref().is_some_and(|c| {
        c.zswap_active()
            || c.swap_areas
                .iter()
                .any(|a| a.device.as_deref().is_some_and(|d| d.starts_with("zram")))
    });
    let text = match (total, &report.swap_out) {
        (None, _) => "  the rest: n/a, reclaimed + activated + kept exceed \
                      scanned (the groups do not partition the scan)"
            .to_string(),
        (Some(rest), Some(w)) if synchronous => format!(
            "  the rest: kept without a count; swap writes to zswap or \
             zram end at once, so written anon folios are freed in the \
             same pass. Reclaim wrote {} folios (mm_vmscan_write_folio), \
             the rest is {rest} pages",
            w.anon_folios + w.file_folios
        ),
        (Some(rest), Some(w)) => format!(
            "  the rest: kept without a count, chiefly folios written out \
             and still under writeback (async swap or file I/O), freed by \
             a later pass; so eff% of anon swap-out stays near 50%. \
             Reclaim wrote {} folios (mm_vmscan_write_folio), the rest is \
             {rest} pages",
            w.anon_folios + w.file_folios
        ),
        (Some(_), None) => "  the rest: kept without a count, chiefly folios \
                            written out and still under writeback"
            .to_string(),
    };
    write_wrapped(o, &text)
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
                    node: 0,
                    context: r.context,
                    lru: r.lru.clone(),
                    totals: Default::default(),
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

/// `<context> inactive shrinks by priority: ...`, right under the
/// inactive table (no blank line between). Each count is one
/// mm_vmscan_lru_shrink_inactive event: shrink_lruvec calls
/// shrink_inactive_list with at most SWAP_CLUSTER_MAX (32) pages at a
/// time, so one reclaim pass at one priority is many events.
pub(super) fn priorities(o: &mut String, report: &RunReport) -> Result {
    for p in &report.reclaim_priority {
        let pairs = nonzero_pairs(&p.counts, |i| i.to_string());
        let text = format!(
            "{} inactive-list shrinks (batches of <= 32 pages) by \
             priority (12 mildest, 0 last resort): {pairs}",
            p.context.name()
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
            r.context.name(),
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
        let mut row = LruRowReport {
            node: 0,
            context: crate::model::report::ReclaimContext::Kswapd,
            lru: "file".into(),
            totals: Default::default(),
        };
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

    /// "near 50%" only where swap writes go to a block device: zswap and
    /// zram end the write inside pageout(), so nothing waits a pass.
    #[test]
    fn the_rest_says_near_half_only_for_asynchronous_swap() {
        use crate::model::report::{SwapArea, SwapCauses, SwapOutReport};
        let note = |causes: Option<SwapCauses>| {
            let mut r = run("6.18.4", 1000, 1000);
            r.swap_out = Some(SwapOutReport {
                anon_folios: 300,
                file_folios: 0,
            });
            r.swap_causes = causes;
            let cols = r.lru_shrink_inactive.clone().unwrap_or_default();
            let mut o = String::new();
            rest_note(&mut o, &r, &cols).expect("writes");
            o
        };
        assert!(note(None).contains("near 50%"));
        let zswap = SwapCauses {
            zswpout: Some(300),
            ..Default::default()
        };
        let o = note(Some(zswap));
        assert!(!o.contains("near 50%") && o.contains("same pass"), "{o}");
        let zram = SwapCauses {
            swap_areas: vec![SwapArea {
                device: Some("zram0".into()),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(note(Some(zram)).contains("same pass"));
        for l in note(Some(SwapCauses::default())).lines() {
            assert!(l.is_ascii() && l.len() <= 72, "{l:?}");
        }
    }
}
