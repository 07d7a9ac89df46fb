//! Other waits on the reclaim side: how long shrinkers take
//! (`mm_shrink_slab_start/end`, every task: kswapd shrinks too), how long
//! target tasks are throttled in reclaim (`mm_vmscan_throttled`, which
//! reports the delay itself) and how long their compaction runs take
//! (`mm_compaction_begin/end`).

use aya_ebpf::{
    macros::{map, tracepoint},
    maps::{LruHashMap, PerCpuArray},
    programs::TracePointContext,
};
use vmtrace_common::{Counter, Hist, MAX_TASKS_IN_SPAN, THROTTLE_REASONS};

use crate::shared::{count, current_tid, fields, in_target, now_ns, record, tracepoint_field};

/// Start of the shrinker call each task is in.
#[map]
static SLAB_START: LruHashMap<u32, u64> = LruHashMap::with_max_entries(MAX_TASKS_IN_SPAN, 0);

/// Start of the compaction run each target task is in.
#[map]
static COMPACTION_START: LruHashMap<u32, u64> = LruHashMap::with_max_entries(MAX_TASKS_IN_SPAN, 0);

/// Throttling events of target tasks per reason bit.
#[map]
static THROTTLE_REASON: PerCpuArray<u64> = PerCpuArray::with_max_entries(THROTTLE_REASONS, 0);

#[inline(always)]
fn stamp(map: &LruHashMap<u32, u64>) {
    if map.insert(&current_tid(), &now_ns(), 0).is_err() {
        count(Counter::SpanStartDropped, 1);
    }
}

/// Time since the current task's stamp, which is removed.
#[inline(always)]
fn since_stamp(map: &LruHashMap<u32, u64>) -> Option<u64> {
    let tid = current_tid();
    let start = map.get_ptr(&tid)?;
    // SAFETY: the entry belongs to the current task.
    let start = unsafe { *start };
    let _ = map.remove(&tid);
    Some(now_ns().saturating_sub(start))
}

#[tracepoint]
pub fn shrink_slab_start(_ctx: TracePointContext) -> u32 {
    stamp(&SLAB_START);
    0
}

#[tracepoint]
pub fn shrink_slab_end(ctx: TracePointContext) -> u32 {
    if let Some(took) = since_stamp(&SLAB_START) {
        record(Hist::SlabShrink, took);
        count(
            Counter::SlabFreed,
            tracepoint_field(&ctx, fields().shrink_slab_end_retval),
        );
    }
    0
}

#[tracepoint]
pub fn throttled(ctx: TracePointContext) -> u32 {
    count(Counter::ThrottledAll, 1);
    if !in_target() {
        return 0;
    }
    let f = fields();
    let delayed_us = tracepoint_field(&ctx, f.throttled_usec_delayed);
    // (saturating_mul would need a 128-bit multiply, which BPF lacks)
    record(Hist::Throttle, delayed_us.min(u64::MAX / 1000) * 1000);
    let reason = tracepoint_field(&ctx, f.throttled_reason);
    for bit in 0..THROTTLE_REASONS {
        if reason & (1 << bit) != 0
            && let Some(cell) = THROTTLE_REASON.get_ptr_mut(bit)
        {
            // SAFETY: this CPU's cell of a live per-CPU map.
            unsafe { *cell += 1 };
        }
    }
    0
}

#[tracepoint]
pub fn compaction_begin(_ctx: TracePointContext) -> u32 {
    count(Counter::CompactionsAll, 1);
    if in_target() {
        stamp(&COMPACTION_START);
    }
    0
}

#[tracepoint]
pub fn compaction_end(_ctx: TracePointContext) -> u32 {
    if let Some(took) = since_stamp(&COMPACTION_START) {
        record(Hist::Compaction, took);
    }
    0
}
