//! The LRU sections of the report from the map totals: inactive and
//! active list shrinking per (node, context, list), shrinks by reclaim
//! priority, and isolation per (highest zone, list).

use crate::kernel::probes::MetricId;
use crate::{kernel::collect::KernelTotals, model::report::*};

impl RunReport {
    /// Fills the LRU sections whose metrics ran.
    pub(super) fn add_lru(&mut self, totals: &KernelTotals, enabled: &dyn Fn(MetricId) -> bool) {
        if enabled(MetricId::LruShrinkInactive) {
            self.lru_shrink_inactive = Some(inactive_rows(totals));
            self.reclaim_priority = priority_rows(totals);
        }
        if enabled(MetricId::LruShrinkActive) {
            self.lru_shrink_active = Some(active_rows(totals));
        }
        if enabled(MetricId::LruIsolate) {
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
