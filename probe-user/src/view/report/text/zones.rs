//! The zones in the text report. Three tables, each keyed by what its
//! source names: per node and zone (zoneinfo, reclaim retries,
//! --page-alloc), per zone type over every node (/proc/vmstat
//! pgalloc_/pgskip_/allocstall_), and LRU isolation by the reclaim's
//! highest allowed zone (mm_vmscan_lru_isolate, which has no node).
//! A run whose reclaim was all memcg reclaim gets one line saying why
//! these tables say little about it.

use std::fmt::{Result, Write as _};

use crate::{
    model::format::write_wrapped,
    model::{
        report::{IsolateRow, RunReport, ZoneRow},
        sample::Sample,
        zones::{ZoneTypeCounts, highest_zone_name, zone_names},
    },
};

/// Every zone table of the run, and the memcg note where it applies.
pub(super) fn zones(o: &mut String, report: &RunReport) -> Result {
    let types = report.zone_vmstat.as_deref().unwrap_or(&[]);
    let isolate = report.lru_isolate.as_deref().unwrap_or(&[]);
    if report.zones.is_empty() && types.is_empty() && isolate.is_empty() {
        return Ok(());
    }
    writeln!(o)?;
    writeln!(o, "zones")?;
    if memcg_only(report) {
        write_wrapped(
            o,
            "  memcg reclaim is not limited by zone: the zone tables \
             describe global reclaim (none in this run)",
        )?;
    }
    per_node(o, report)?;
    lru_sizes(o, report)?;
    per_type(o, types)?;
    by_highest_zone(o, isolate, &names_by_index(&report.timeline))
}

/// Zone names by zone index: the first node's, from the last sample
/// that has zones.
fn names_by_index(timeline: &[Sample]) -> Vec<String> {
    timeline
        .iter()
        .rev()
        .find(|s| !s.zones.is_empty())
        .and_then(|s| zone_names(&s.zones).into_iter().next())
        .map(|(_, names)| names)
        .unwrap_or_default()
}

/// Reclaim happened, all of it memcg reclaim: no direct reclaim stall
/// (allocstall), no kswapd wakeup (the kswapd section's), no page
/// skipped for its zone.
fn memcg_only(report: &RunReport) -> bool {
    let memcg = report
        .memcg_reclaim
        .as_ref()
        .is_some_and(|r| r.stalls.count > 0);
    let skipped: u64 = report.zone_vmstat.iter().flatten().map(|t| t.pgskip).sum();
    let woken: u64 = report
        .kswapd
        .iter()
        .flat_map(|k| &k.wakeups)
        .map(|w| w.count)
        .sum();
    memcg && report.vmstat.allocstall == 0 && skipped == 0 && woken == 0
}

/// The rows worth a line: a populated zone (managed pages in the last
/// sample), or an empty one something was counted for. Older recordings
/// kept empty zones that only mm_vmscan_lru_isolate had named.
fn shown(report: &RunReport) -> Vec<&ZoneRow> {
    let last = report.timeline.iter().rev().find(|s| !s.zones.is_empty());
    report
        .zones
        .iter()
        .filter(|z| {
            let managed = last.map_or(1, |s| {
                s.zones
                    .iter()
                    .find(|x| x.node == z.node && x.zone == z.zone)
                    .map_or(1, |x| x.managed)
            });
            let counted = z.reclaim_retries + z.allocated_pages.unwrap_or(0);
            managed > 0 || counted > 0
        })
        .collect()
}

/// Per node and zone: reclaim retries, time below the watermarks and
/// boosted, pages allocated (--page-alloc).
fn per_node(o: &mut String, report: &RunReport) -> Result {
    let rows = shown(report);
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(
        o,
        "  per node and zone (retries: oom:reclaim_retry_zone; time"
    )?;
    writeln!(o, "  below the watermarks and boosted: zoneinfo samples)")?;
    writeln!(
        o,
        "  {:<10} {:>7} {:>6} {:>6} {:>7} {:>10}",
        "zone", "retries", "<low", "<min", "boosted", "allocated"
    )?;
    for z in &rows {
        let alloc = z
            .allocated_pages
            .map_or_else(|| "-".to_string(), |n| n.to_string());
        writeln!(
            o,
            "  {:<10} {:>7} {:>5.1}s {:>5.1}s {:>6.1}s {:>10}",
            format!("{}/{}", z.node, z.zone),
            z.reclaim_retries,
            z.below_low_s,
            z.below_min_s,
            z.boosted_s,
            alloc
        )?;
    }
    if rows.iter().any(|z| z.allocated_pages.is_some()) {
        writeln!(o, "  allocated: pages, kmem:mm_page_alloc (--page-alloc)")?;
    }
    Ok(())
}

/// Per node and zone at the end: free pages and the four LRU lists.
fn lru_sizes(o: &mut String, report: &RunReport) -> Result {
    let rows = shown(report);
    if rows.iter().all(|z| z.end.is_none()) {
        return Ok(());
    }
    writeln!(
        o,
        "  pages at the end (zoneinfo: free, nr_zone_<lru>; reserve: the\n  \
         largest lowmem_reserve, kept from higher-zone allocations)"
    )?;
    writeln!(
        o,
        "  {:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
        "zone", "free", "in.anon", "act.anon", "in.file", "act.file", "reserve"
    )?;
    for z in &rows {
        let Some(e) = &z.end else { continue };
        writeln!(
            o,
            "  {:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
            format!("{}/{}", z.node, z.zone),
            e.free,
            e.inactive_anon,
            e.active_anon,
            e.inactive_file,
            e.active_file,
            e.lowmem_reserve
        )?;
    }
    Ok(())
}

/// Per zone type, every node: the /proc/vmstat per-zone counters.
fn per_type(o: &mut String, types: &[ZoneTypeCounts]) -> Result {
    let rows: Vec<&ZoneTypeCounts> = types
        .iter()
        .filter(|t| t.pgalloc + t.pgskip + t.allocstall > 0)
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(
        o,
        "  per zone type, all nodes (/proc/vmstat deltas; allocstall by"
    )?;
    writeln!(o, "  the reclaim's highest allowed zone)")?;
    writeln!(
        o,
        "  {:<10} {:>12} {:>12} {:>12}",
        "zone", "pgalloc", "pgskip", "allocstall"
    )?;
    for t in rows {
        writeln!(
            o,
            "  {:<10} {:>12} {:>12} {:>12}",
            t.zone, t.pgalloc, t.pgskip, t.allocstall
        )?;
    }
    Ok(())
}

/// mm_vmscan_lru_isolate by the reclaim's highest allowed zone, every
/// node and LRU list together: pages scanned, skipped (above that zone)
/// and taken off the LRU.
fn by_highest_zone(o: &mut String, isolate: &[IsolateRow], names: &[String]) -> Result {
    let mut idx: Vec<u32> = isolate.iter().map(|i| i.highest_zone_idx).collect();
    idx.sort_unstable();
    idx.dedup();
    let rows: Vec<(u32, u64, u64, u64)> = idx
        .into_iter()
        .map(|z| {
            let of = isolate.iter().filter(|i| i.highest_zone_idx == z);
            let sum = |f: fn(&IsolateRow) -> u64| -> u64 { of.clone().map(f).sum() };
            (
                z,
                sum(|i| i.totals.nr_scanned),
                sum(|i| i.totals.nr_skipped),
                sum(|i| i.totals.nr_taken),
            )
        })
        .filter(|r| r.1 + r.2 + r.3 > 0)
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(o, "  LRU isolation by highest allowed zone, all nodes")?;
    writeln!(o, "  (mm_vmscan_lru_isolate, pages)")?;
    writeln!(
        o,
        "  {:<22} {:>12} {:>10} {:>12}",
        "highest zone", "scanned", "skipped", "taken"
    )?;
    for (z, scanned, skipped, taken) in rows {
        writeln!(
            o,
            "  {:<22} {:>12} {:>10} {:>12}",
            highest_zone_name(z, names),
            scanned,
            skipped,
            taken
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        report::{KswapdReport, ZoneCount, ZoneTypeCounts},
        zones::ZoneEnd,
    };

    fn global_run() -> RunReport {
        let row = |node, zone: &str, alloc| ZoneRow {
            node,
            zone: zone.into(),
            allocated_pages: Some(alloc),
            end: Some(ZoneEnd {
                free: 46275,
                ..Default::default()
            }),
            ..Default::default()
        };
        RunReport {
            zones: vec![row(0, "DMA32", 104450), row(1, "DMA32", 97219)],
            zone_vmstat: Some(vec![ZoneTypeCounts {
                zone: "Movable".into(),
                allocstall: 42,
                ..Default::default()
            }]),
            kswapd: Some(KswapdReport {
                wakeups: vec![ZoneCount {
                    node: 1,
                    zone: "Movable".into(),
                    count: 50,
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_global_run_has_rows_per_node_and_per_zone_type() {
        let mut o = String::new();
        zones(&mut o, &global_run()).expect("write");
        assert!(!o.contains("memcg reclaim"), "{o}");
        assert!(o.contains("  0/DMA32"), "{o}");
        assert!(o.contains("  1/DMA32") && o.contains("97219"), "{o}");
        assert!(o.contains("  Movable") && o.contains(" 42\n"), "{o}");
        for l in o.lines() {
            assert!(l.len() <= 72 && l.is_ascii(), "{l}");
        }
    }
}
