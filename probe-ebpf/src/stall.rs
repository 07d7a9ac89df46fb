//! Other waits on the reclaim side: how long shrinkers take
//! (`mm_shrink_slab_start/end`, every task: kswapd shrinks too), how long
//! target tasks are throttled in reclaim (`mm_vmscan_throttled`, which
//! reports the delay itself) and how long their compaction runs take
//! (`mm_compaction_begin/end`).

use aya_ebpf::{
    macros::{map, tracepoint},
    maps::PerCpuArray,
    programs::TracePointContext,
};
use vmtrace_common::{Counter, Hist, SplitFamily, THROTTLE_REASONS};

use crate::{
    rare::count_rare,
    shared::{count, field, in_target, now_ns, record, tracepoint_field},
    task::{Span, TASK_SPANS, since_stamp, stamp},
};

/// Throttling events of target tasks per reason bit.
#[map]
static THROTTLE_REASON: PerCpuArray<u64> = PerCpuArray::with_max_entries(THROTTLE_REASONS, 0);

#[tracepoint]
pub fn shrink_slab_start(_ctx: TracePointContext) -> u32 {
    stamp(Span::Slab, |s| &mut s.slab_start_ns);
    0
}

#[tracepoint]
pub fn shrink_slab_end(ctx: TracePointContext) -> u32 {
    if let Some(took) = since_stamp(|s| &mut s.slab_start_ns) {
        record(Hist::SlabShrink, took);
        count(
            Counter::SlabFreed,
            tracepoint_field(&ctx, field!(shrink_slab_end_retval)),
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
    let delayed_us = tracepoint_field(&ctx, field!(throttled_usec_delayed));
    // (saturating_mul would need a 128-bit multiply, which BPF lacks)
    record(Hist::Throttle, delayed_us.min(u64::MAX / 1000) * 1000);
    let reason = tracepoint_field(&ctx, field!(throttled_reason));
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
        let Some(spans) = TASK_SPANS.current() else {
            count_rare!(Counter::SpanStartDropped, "compaction");
            return 0;
        };
        let now = now_ns();
        spans.compaction_start_ns = now;
        crate::sched::open(&mut spans.split, SplitFamily::Compaction, now);
    }
    0
}

#[tracepoint]
pub fn compaction_end(_ctx: TracePointContext) -> u32 {
    let Some(spans) = TASK_SPANS.current_if_any() else {
        return 0;
    };
    let start = core::mem::replace(&mut spans.compaction_start_ns, 0);
    if start == 0 {
        return 0;
    }
    let now = now_ns();
    record(Hist::Compaction, now.saturating_sub(start));
    crate::sched::close(&mut spans.split, SplitFamily::Compaction, start, now);
    0
}
