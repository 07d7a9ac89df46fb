//! LRU shrinking: `mm_vmscan_lru_shrink_inactive` and `..._active` totals
//! per node, reclaim context and LRU type (anon/file), for every task, and
//! the distribution of reclaim priorities. LRU isolation
//! (`mm_vmscan_lru_isolate`) per highest allowed zone and list: the zone
//! question of the seed mails (pages skipped because they sit in a zone
//! the reclaim may not take from). The inactive scanned/reclaimed
//! totals are what /proc/vmstat's pgscan/pgsteal count, split where vmstat
//! cannot split them.

use aya_ebpf::{
    helpers::bpf_get_current_comm,
    macros::{map, tracepoint},
    maps::PerCpuArray,
    programs::TracePointContext,
};
use vmtrace_common::{
    Counter, Field, LRU_CELLS, LRU_LISTS, LruIsolate, LruShrinkActive, LruShrinkInactive, LruType,
    MAX_NODES, MAX_ZONES, PRIORITIES, RECLAIM_WB_FILE, ReclaimContext, isolate_cell, lru_cell,
    priority_cell,
};

use crate::{
    rare::count_rare,
    shared::{field, tracepoint_field},
    task::TASK_SPANS,
};

/// Inactive-list shrink totals per (node, context, type); see [`lru_cell`].
#[map]
static LRU_SHRINK_INACTIVE: PerCpuArray<LruShrinkInactive> =
    PerCpuArray::with_max_entries(LRU_CELLS, 0);

/// Active-list shrink totals, same cells.
#[map]
static LRU_SHRINK_ACTIVE: PerCpuArray<LruShrinkActive> =
    PerCpuArray::with_max_entries(LRU_CELLS, 0);

/// Inactive shrinks per (context, priority); see [`priority_cell`].
#[map]
static RECLAIM_PRIORITY: PerCpuArray<u64> =
    PerCpuArray::with_max_entries(ReclaimContext::COUNT * PRIORITIES, 0);

/// Isolation totals per (highest zone index, LRU list); see [`isolate_cell`].
#[map]
static LRU_ISOLATE: PerCpuArray<LruIsolate> =
    PerCpuArray::with_max_entries(MAX_ZONES * LRU_LISTS, 0);

#[tracepoint]
pub fn lru_isolate(ctx: TracePointContext) -> u32 {
    let rd = |f: Field| tracepoint_field(&ctx, f);
    let zone = rd(field!(lru_isolate_highest_zoneidx)) as u32;
    let lru = rd(field!(lru_isolate_lru)) as u32;
    if zone >= MAX_ZONES || lru >= LRU_LISTS {
        count_rare!(
            Counter::NodeOutOfRange,
            "lru_isolate zone",
            zone,
            "lru",
            lru
        );
        return 0;
    }
    if let Some(cell) = LRU_ISOLATE.get_ptr_mut(isolate_cell(zone, lru)) {
        // SAFETY: this CPU's cell of a live per-CPU map.
        let c = unsafe { &mut *cell };
        c.events += 1;
        c.nr_requested += rd(field!(lru_isolate_nr_requested));
        c.nr_scanned += rd(field!(lru_isolate_nr_scanned));
        c.nr_skipped += rd(field!(lru_isolate_nr_skipped));
        c.nr_taken += rd(field!(lru_isolate_nr_taken));
    }
    0
}

#[tracepoint]
pub fn lru_shrink_inactive(ctx: TracePointContext) -> u32 {
    let rd = |f: Field| tracepoint_field(&ctx, f);
    let nid = rd(field!(lru_shrink_inactive_nid)) as u32;
    if nid >= MAX_NODES {
        count_rare!(Counter::NodeOutOfRange, "lru_shrink node", nid);
        return 0;
    }
    let context = context();
    let lru = lru_type(rd(field!(lru_shrink_inactive_reclaim_flags)));
    if let Some(cell) = LRU_SHRINK_INACTIVE.get_ptr_mut(lru_cell(nid, context, lru)) {
        // SAFETY: this CPU's cell of a live per-CPU map.
        let c = unsafe { &mut *cell };
        c.events += 1;
        c.nr_scanned += rd(field!(lru_shrink_inactive_nr_scanned));
        c.nr_reclaimed += rd(field!(lru_shrink_inactive_nr_reclaimed));
        c.nr_dirty += rd(field!(lru_shrink_inactive_nr_dirty));
        c.nr_writeback += rd(field!(lru_shrink_inactive_nr_writeback));
        c.nr_congested += rd(field!(lru_shrink_inactive_nr_congested));
        c.nr_immediate += rd(field!(lru_shrink_inactive_nr_immediate));
        c.nr_activate_anon += rd(field!(lru_shrink_inactive_nr_activate0));
        c.nr_activate_file += rd(field!(lru_shrink_inactive_nr_activate1));
        c.nr_ref_keep += rd(field!(lru_shrink_inactive_nr_ref_keep));
        c.nr_unmap_fail += rd(field!(lru_shrink_inactive_nr_unmap_fail));
    }
    let priority = rd(field!(lru_shrink_inactive_priority)) as u32;
    if priority < PRIORITIES
        && let Some(cell) = RECLAIM_PRIORITY.get_ptr_mut(priority_cell(context, priority))
    {
        // SAFETY: as above.
        unsafe { *cell += 1 };
    }
    0
}

#[tracepoint]
pub fn lru_shrink_active(ctx: TracePointContext) -> u32 {
    let rd = |f: Field| tracepoint_field(&ctx, f);
    let nid = rd(field!(lru_shrink_active_nid)) as u32;
    if nid >= MAX_NODES {
        count_rare!(Counter::NodeOutOfRange, "lru_shrink node", nid);
        return 0;
    }
    let lru = lru_type(rd(field!(lru_shrink_active_reclaim_flags)));
    if let Some(cell) = LRU_SHRINK_ACTIVE.get_ptr_mut(lru_cell(nid, context(), lru)) {
        // SAFETY: this CPU's cell of a live per-CPU map.
        let c = unsafe { &mut *cell };
        c.events += 1;
        c.nr_taken += rd(field!(lru_shrink_active_nr_taken));
        c.nr_active += rd(field!(lru_shrink_active_nr_active));
        c.nr_deactivated += rd(field!(lru_shrink_active_nr_deactivated));
        c.nr_referenced += rd(field!(lru_shrink_active_nr_referenced));
    }
    0
}

#[inline(always)]
fn lru_type(reclaim_flags: u64) -> LruType {
    if reclaim_flags & RECLAIM_WB_FILE != 0 {
        LruType::File
    } else {
        LruType::Anon
    }
}

/// Whose reclaim this shrink is part of.
#[inline(always)]
fn context() -> ReclaimContext {
    if let Some(spans) = TASK_SPANS.current_if_any()
        && spans.reclaim_start_ns != 0
    {
        if spans.reclaim_context == ReclaimContext::Memcg as u8 {
            return ReclaimContext::Memcg;
        }
        return ReclaimContext::Direct;
    }
    match bpf_get_current_comm() {
        Ok(comm) if comm.starts_with(b"kswapd") => ReclaimContext::Kswapd,
        _ => ReclaimContext::Other,
    }
}
