//! Direct reclaim and memcg reclaim: how long each target task stalled in
//! reclaim, and how many pages each reclaim freed.
//!
//! `mm_vmscan_{direct,memcg}_reclaim_begin` stamps the task in
//! `RECLAIM_START`; `..._end` takes the stamp out and folds the stall into
//! the context's histogram. The stamp also tells `lru` whose reclaim a
//! shrink belongs to, so it is kept for every task, target or not.

use aya_ebpf::{
    macros::{map, tracepoint},
    maps::HashMap,
    programs::TracePointContext,
};
use aya_log_ebpf::warn;
use vmtrace_common::{Counter, Field, Hist, MAX_TASKS_IN_RECLAIM, ReclaimContext, ReclaimStart};

use crate::shared::{count, current_tid, fields, in_target, now_ns, record, tracepoint_field};

/// Tasks inside a direct or memcg reclaim, by thread id.
#[map]
pub static RECLAIM_START: HashMap<u32, ReclaimStart> =
    HashMap::with_max_entries(MAX_TASKS_IN_RECLAIM, 0);

#[tracepoint]
pub fn direct_reclaim_begin(ctx: TracePointContext) -> u32 {
    begin(&ctx, ReclaimContext::Direct);
    0
}

#[tracepoint]
pub fn direct_reclaim_end(ctx: TracePointContext) -> u32 {
    let nr_reclaimed = fields().direct_reclaim_end_nr_reclaimed;
    end(&ctx, nr_reclaimed);
    0
}

#[tracepoint]
pub fn memcg_reclaim_begin(ctx: TracePointContext) -> u32 {
    begin(&ctx, ReclaimContext::Memcg);
    0
}

#[tracepoint]
pub fn memcg_reclaim_end(ctx: TracePointContext) -> u32 {
    let nr_reclaimed = fields().memcg_reclaim_end_nr_reclaimed;
    end(&ctx, nr_reclaimed);
    0
}

#[inline(always)]
fn begin(ctx: &TracePointContext, context: ReclaimContext) {
    let tid = current_tid();
    let start = ReclaimStart {
        start_ns: now_ns(),
        context: context as u32,
        target: in_target() as u32,
    };
    if RECLAIM_START.insert(&tid, &start, 0).is_err() {
        count(Counter::ReclaimStartDropped, 1);
        warn!(
            ctx,
            "vmtrace: reclaim map full, stall of tid {} not timed", tid
        );
    }
}

#[inline(always)]
fn end(ctx: &TracePointContext, nr_reclaimed: Field) {
    let tid = current_tid();
    let Some(start) = RECLAIM_START.get_ptr(&tid) else {
        count(Counter::ReclaimEndUnmatched, 1);
        return;
    };
    // SAFETY: the entry is this task's own; only this task removes it.
    let start = unsafe { *start };
    let _ = RECLAIM_START.remove(&tid);
    if start.target == 0 {
        return;
    }
    let stall = now_ns().saturating_sub(start.start_ns);
    let pages = tracepoint_field(ctx, nr_reclaimed);
    if start.context == ReclaimContext::Memcg as u32 {
        record(Hist::MemcgReclaim, stall);
        count(Counter::MemcgReclaims, 1);
        count(Counter::MemcgReclaimPages, pages);
    } else {
        record(Hist::DirectReclaim, stall);
        count(Counter::DirectReclaims, 1);
        count(Counter::DirectReclaimPages, pages);
    }
}
