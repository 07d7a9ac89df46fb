//! The LRU sections of the report from the map totals: inactive and
//! active list shrinking per (node, context, list), shrinks by reclaim
//! priority, and isolation per (highest zone, list).

use crate::{kernel::collect::KernelTotals, model::report::*};

impl RunReport {
    /// Fills the LRU sections whose metrics ran.
    pub(super) fn add_lru(&mut self, totals: &KernelTotals, enabled: &dyn Fn(&str) -> bool) {
        if enabled("lru_shrink_inactive") {
            self.lru_shrink_inactive = Some(inactive_rows(totals));
            self.reclaim_priority = priority_rows(totals);
        }
        if enabled("lru_shrink_active") {
            self.lru_shrink_active = Some(active_rows(totals));
        }
        if enabled("lru_isolate") {
            self.lru_isolate = Some(isolate_rows(totals));
        }
    }
}

fn inactive_rows(totals: &KernelTotals) -> Vec<LruRowReport> {
    totals
        .lru
        .iter()
        .map(|r| LruRowReport {
            node: r.node,
            context: r.context.name().into(),
            lru: r.lru.name().into(),
            totals: r.totals,
        })
        .collect()
}

/// Inactive shrinks per priority (12 mildest .. 0), per context.
fn priority_rows(totals: &KernelTotals) -> Vec<PriorityRow> {
    totals
        .priority
        .iter()
        .map(|(c, counts)| PriorityRow {
            context: c.name().into(),
            counts: counts.clone(),
        })
        .collect()
}

fn active_rows(totals: &KernelTotals) -> Vec<LruActiveRowReport> {
    totals
        .lru_active
        .iter()
        .map(|r| LruActiveRowReport {
            node: r.node,
            context: r.context.name().into(),
            lru: r.lru.name().into(),
            totals: r.totals,
        })
        .collect()
}

fn isolate_rows(totals: &KernelTotals) -> Vec<IsolateRow> {
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
