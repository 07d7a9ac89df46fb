//! The reclaim sections of the report from the map totals: direct and
//! memcg reclaim stalls, reclaims by allocation order, the processes
//! that stalled most, slab shrinking, throttling, compaction and the
//! folios reclaim wrote out.

use crate::kernel::probes::MetricId;
use vmtrace_common::{Counter, Hist};

use crate::{
    kernel::collect::{KernelTotals, comm_to_string},
    model::{histogram::summarize, report::*},
};

impl RunReport {
    /// Fills the reclaim sections whose metrics ran (order and stallers
    /// always: they are empty when nothing fed them).
    pub(super) fn add_reclaim(
        &mut self,
        totals: &KernelTotals,
        enabled: &dyn Fn(MetricId) -> bool,
    ) {
        if enabled(MetricId::DirectReclaim) {
            self.direct_reclaim = Some(reclaim(
                totals,
                Hist::DirectReclaim,
                Counter::DirectReclaimPages,
            ));
        }
        if enabled(MetricId::MemcgReclaim) {
            self.memcg_reclaim = Some(reclaim(
                totals,
                Hist::MemcgReclaim,
                Counter::MemcgReclaimPages,
            ));
        }
        self.reclaim_order = order_rows(totals);
        self.top_stallers = top_stallers(totals);
        if enabled(MetricId::SlabShrink) {
            self.slab_shrink = Some(SlabReport {
                calls: summarize(totals.hist(Hist::SlabShrink)),
                objects_freed: totals.counter(Counter::SlabFreed),
            });
        }
        if enabled(MetricId::Throttle) {
            self.throttle = Some(throttle(totals));
        }
        if enabled(MetricId::Compaction) {
            self.compaction = Some(CompactionReport {
                runs: summarize(totals.hist(Hist::Compaction)),
                all_tasks: totals.counter(Counter::CompactionsAll),
            });
        }
        if enabled(MetricId::SwapOut) {
            self.swap_out = Some(SwapOutReport {
                anon_folios: totals.counter(Counter::WriteFolioAnon),
                file_folios: totals.counter(Counter::WriteFolioFile),
            });
        }
    }
}

/// Stall times and pages reclaimed of one kind of reclaim.
fn reclaim(totals: &KernelTotals, stalls: Hist, pages: Counter) -> ReclaimReport {
    ReclaimReport {
        stalls: summarize(totals.hist(stalls)),
        pages_reclaimed: totals.counter(pages),
    }
}

/// Target reclaims per allocation order, per context.
fn order_rows(totals: &KernelTotals) -> Vec<OrderRow> {
    totals
        .order
        .iter()
        .map(|(c, counts)| OrderRow {
            context: c.name().into(),
            counts: counts.clone(),
        })
        .collect()
}

/// The 10 processes that stalled longest in reclaim (direct + memcg).
fn top_stallers(totals: &KernelTotals) -> Vec<StallerReport> {
    let mut stallers: Vec<StallerReport> = totals
        .stallers
        .iter()
        .map(|(pid, s)| StallerReport {
            pid: *pid,
            comm: comm_to_string(&s.comm),
            target: s.stalls.target != 0,
            direct_stalls: s.stalls.direct_count,
            direct_ns: s.stalls.direct_ns,
            memcg_stalls: s.stalls.memcg_count,
            memcg_ns: s.stalls.memcg_ns,
        })
        .collect();
    stallers.sort_by_key(|s| std::cmp::Reverse(s.direct_ns + s.memcg_ns));
    stallers.truncate(10);
    stallers
}

/// Reclaim throttling: delays, events per reason bit, all tasks' count.
fn throttle(totals: &KernelTotals) -> ThrottleReport {
    let r = |i: usize| totals.throttle_reasons.get(i).copied().unwrap_or(0);
    ThrottleReport {
        delays: summarize(totals.hist(Hist::Throttle)),
        writeback: r(0),
        isolated: r(1),
        noprogress: r(2),
        congested: r(3),
        all_tasks: totals.counter(Counter::ThrottledAll),
    }
}
