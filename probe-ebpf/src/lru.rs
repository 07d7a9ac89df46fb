//! LRU shrinking: `mm_vmscan_lru_shrink_inactive` totals (pages scanned and
//! reclaimed) per node and per reclaim context, for every task. These are
//! the numbers /proc/vmstat's pgscan/pgsteal count, split where vmstat
//! cannot split them.

use aya_ebpf::{
    helpers::bpf_get_current_comm,
    macros::{map, tracepoint},
    maps::PerCpuArray,
    programs::TracePointContext,
};
use vmtrace_common::{Counter, LruShrinkInactive, MAX_NODES, ReclaimContext, lru_cell};

use crate::{
    reclaim::RECLAIM_START,
    shared::{count, current_tid, fields, tracepoint_field},
};

/// Totals per (node, context); see [`lru_cell`].
#[map]
static LRU_SHRINK_INACTIVE: PerCpuArray<LruShrinkInactive> =
    PerCpuArray::with_max_entries(MAX_NODES * ReclaimContext::COUNT, 0);

#[tracepoint]
pub fn lru_shrink_inactive(ctx: TracePointContext) -> u32 {
    let f = fields();
    let nid = tracepoint_field(&ctx, f.lru_shrink_inactive_nid) as u32;
    if nid >= MAX_NODES {
        count(Counter::NodeOutOfRange, 1);
        return 0;
    }
    let Some(cell) = LRU_SHRINK_INACTIVE.get_ptr_mut(lru_cell(nid, context())) else {
        return 0;
    };
    let scanned = tracepoint_field(&ctx, f.lru_shrink_inactive_nr_scanned);
    let reclaimed = tracepoint_field(&ctx, f.lru_shrink_inactive_nr_reclaimed);
    // SAFETY: this CPU's cell of a live per-CPU map.
    unsafe {
        (*cell).events += 1;
        (*cell).nr_scanned += scanned;
        (*cell).nr_reclaimed += reclaimed;
    }
    0
}

/// Whose reclaim this shrink is part of.
#[inline(always)]
fn context() -> ReclaimContext {
    if let Some(start) = RECLAIM_START.get_ptr(&current_tid()) {
        // SAFETY: the entry belongs to the current task.
        if unsafe { (*start).context } == ReclaimContext::Memcg as u32 {
            return ReclaimContext::Memcg;
        }
        return ReclaimContext::Direct;
    }
    match bpf_get_current_comm() {
        Ok(comm) if comm.starts_with(b"kswapd") => ReclaimContext::Kswapd,
        _ => ReclaimContext::Other,
    }
}
