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
    kept_back(o, rows)
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
