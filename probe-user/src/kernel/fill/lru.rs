//! The LRU sections of the report from the map totals: inactive and
//! active list shrinking per (node, context, list), shrinks by reclaim
//! priority, and isolation per (highest zone, list).

use crate::{kernel::totals::KernelTotals, model::report::*};

/// Inactive list shrinking per (node, context, list).
pub(super) fn inactive_rows(totals: &KernelTotals) -> Vec<LruRowReport> {
    totals
        .lru
        .iter()
        .map(|r| LruRowReport {
            node: r.node,
            context: r.context,
            lru: r.lru.name().into(),
            totals: r.totals,
        })
        .collect()
}

/// Inactive shrinks per priority (12 mildest .. 0), per context.
pub(super) fn priority_rows(totals: &KernelTotals) -> Vec<PriorityRow> {
    totals
        .priority
        .iter()
        .map(|(c, counts)| PriorityRow {
            context: *c,
            counts: counts.clone(),
        })
        .collect()
}

/// Active list deactivation per (node, context, list).
pub(super) fn active_rows(totals: &KernelTotals) -> Vec<LruActiveRowReport> {
    totals
        .lru_active
        .iter()
        .map(|r| LruActiveRowReport {
            node: r.node,
            context: r.context,
            lru: r.lru.name().into(),
            totals: r.totals,
        })
        .collect()
}

/// Isolation per (highest zone, list).
pub(super) fn isolate_rows(totals: &KernelTotals) -> Vec<IsolateRow> {
    totals
        .isolate
        .iter()
        .map(|(zone, lru, i)| IsolateRow {
            highest_zone_idx: *zone,
            lru: *lru,
            totals: *i,
        })
        .collect()
}
