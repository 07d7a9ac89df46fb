//! Direct reclaim and memcg reclaim: how long each target task stalled in
//! reclaim, and how many pages each reclaim freed.
//!
//! `mm_vmscan_{direct,memcg}_reclaim_begin` stamps the task (its
//! `task::TASK_SPANS` cell); `..._end` takes the stamp out and folds the
//! stall into the context's histogram. The stamp also tells `lru` whose
//! reclaim a shrink belongs to, so it is kept for every task, target or
//! not.
//!
//! Also here: the allocation orders that sent target tasks into reclaim
//! (`RECLAIM_ORDER`) and, per process, the total time stalled
//! (`RECLAIM_STALLERS`: every process, flagged when in the target).

use aya_ebpf::{
    helpers::{bpf_get_current_comm, bpf_get_current_pid_tgid},
    macros::{map, tracepoint},
    maps::{LruHashMap, PerCpuArray},
    programs::TracePointContext,
};
use vmtrace_common::{
    Counter, Field, Hist, MAX_STALLERS, ORDERS, ReclaimContext, ReclaimStart, Staller, order_cell,
};

use crate::{
    shared::{count, field, in_target, now_ns, record, tracepoint_field},
    task::TASK_SPANS,
};

/// Reclaims of target tasks per (context, allocation order).
#[map]
static RECLAIM_ORDER: PerCpuArray<u64> =
    PerCpuArray::with_max_entries(ReclaimContext::COUNT * ORDERS, 0);

/// Stall totals per process (tgid).
#[map]
static RECLAIM_STALLERS: LruHashMap<u32, Staller> = LruHashMap::with_max_entries(MAX_STALLERS, 0);

#[tracepoint]
pub fn direct_reclaim_begin(ctx: TracePointContext) -> u32 {
    let order = field!(direct_reclaim_begin_order);
    begin(&ctx, ReclaimContext::Direct, order);
    0
}

#[tracepoint]
pub fn direct_reclaim_end(ctx: TracePointContext) -> u32 {
    let nr_reclaimed = field!(direct_reclaim_end_nr_reclaimed);
    end(&ctx, nr_reclaimed);
    0
}

#[tracepoint]
pub fn memcg_reclaim_begin(ctx: TracePointContext) -> u32 {
    let order = field!(memcg_reclaim_begin_order);
    begin(&ctx, ReclaimContext::Memcg, order);
    0
}

#[tracepoint]
pub fn memcg_reclaim_end(ctx: TracePointContext) -> u32 {
    let nr_reclaimed = field!(memcg_reclaim_end_nr_reclaimed);
    end(&ctx, nr_reclaimed);
    0
}

#[inline(always)]
fn begin(ctx: &TracePointContext, context: ReclaimContext, order: Field) {
    let target = in_target();
    if target {
        let order = tracepoint_field(ctx, order) as u32;
        if let Some(cell) = RECLAIM_ORDER.get_ptr_mut(order_cell(context, order)) {
            // SAFETY: this CPU's cell of a live per-CPU map.
            unsafe { *cell += 1 };
        }
    }
    let Some(spans) = TASK_SPANS.current() else {
        count(Counter::ReclaimStartDropped, 1);
        return;
    };
    spans.reclaim_start_ns = now_ns();
    spans.reclaim_context = context as u32;
    spans.reclaim_target = target as u32;
}

#[inline(always)]
fn end(ctx: &TracePointContext, nr_reclaimed: Field) {
    let start = match TASK_SPANS.current_if_any() {
        Some(spans) if spans.reclaim_start_ns != 0 => {
            let start = ReclaimStart {
                start_ns: spans.reclaim_start_ns,
                context: spans.reclaim_context,
                target: spans.reclaim_target,
            };
            spans.reclaim_start_ns = 0;
            start
        }
        _ => {
            count(Counter::ReclaimEndUnmatched, 1);
            return;
        }
    };
    let stall = now_ns().saturating_sub(start.start_ns);
    add_stall(&start, stall);
    if start.target == 0 {
        return;
    }
    let pages = tracepoint_field(ctx, nr_reclaimed);
    if start.context == ReclaimContext::Memcg as u32 {
        record(Hist::MemcgReclaim, stall);
        count(Counter::MemcgReclaims, 1);
        count(Counter::MemcgReclaimNs, stall);
        count(Counter::MemcgReclaimPages, pages);
    } else {
        record(Hist::DirectReclaim, stall);
        count(Counter::DirectReclaims, 1);
        count(Counter::DirectReclaimNs, stall);
        count(Counter::DirectReclaimPages, pages);
    }
}

/// Adds one stall to the current process's totals.
#[inline(always)]
fn add_stall(start: &ReclaimStart, stall: u64) {
    let tgid = (bpf_get_current_pid_tgid() >> 32) as u32;
    let memcg = start.context == ReclaimContext::Memcg as u32;
    if let Some(s) = RECLAIM_STALLERS.get_ptr_mut(&tgid) {
        // SAFETY: a live entry; a racing update from another thread of the
        // process can lose one addition, which a report can afford.
        let s = unsafe { &mut *s };
        if memcg {
            s.memcg_ns += stall;
            s.memcg_count += 1;
        } else {
            s.direct_ns += stall;
            s.direct_count += 1;
        }
        return;
    }
    let mut s = Staller {
        comm: bpf_get_current_comm().unwrap_or([0; 16]),
        target: start.target,
        ..Staller::default()
    };
    if memcg {
        s.memcg_ns = stall;
        s.memcg_count = 1;
    } else {
        s.direct_ns = stall;
        s.direct_count = 1;
    }
    if RECLAIM_STALLERS.insert(&tgid, &s, 0).is_ok() {
        count(Counter::StallerInserts, 1);
    }
}
