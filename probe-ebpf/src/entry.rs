//! Where reclaim was entered: the kernel stack, GFP flags and order of
//! every target direct and memcg reclaim, weighted by its stall; the
//! same for direct compaction; and who woke kswapd, for which zone.
//!
//! `entry_*_begin` (on the reclaim begin tracepoints, beside `reclaim`'s
//! own programs) keeps the allocation's GFP flags and order and a start
//! stamp in the task's `TASK_SPANS` cell; `entry_*_end` stamps the end,
//! then takes the target task's kernel stack into `ENTRY_STACKS` (a
//! stack-trace map: one id per distinct stack) and adds the stall to the
//! (way, stack, GFP, order) cell of `RECLAIM_ENTRIES`, with its time on
//! a CPU, runnable and blocked (the change of the task's `sched` split
//! totals across the stall, 0 when the split is off).
//!
//! The stack is taken at the end, after every stamp: the unwind
//! (microseconds) then lies outside each measured span. Taken at the
//! begin, after the reclaim pair's own begin had stamped, it was inside
//! the stall the histograms time and inside its on-CPU part (~9% of a
//! 50 us memcg stall). The begin and end tracepoints sit in the same
//! function (try_to_free_pages, try_to_free_mem_cgroup_pages; mm/vmscan.c
//! 6.1-6.18), so the stack at the end has the callers the begin had. The
//! programs on one tracepoint run in the order they were attached
//! (the perf event's bpf_prog_array), and the loader attaches the
//! reclaim pair's before these.
//!
//! Direct compaction has no end tracepoint of its own (and fexit and
//! kprobes are not available everywhere): `entry_compact_way`
//! (mm_compaction_try_to_compact_pages, in __alloc_pages_direct_compact)
//! takes the stack, GFP flags and order; each compaction run that
//! follows in the same task while it is in that allocation's direct
//! compaction (PF_MEMALLOC set, as memalloc_noreclaim_save does around
//! try_to_compact_pages on 6.1-6.18) is timed begin to end
//! (mm_compaction_begin/end, one per zone tried) and added to that way.
//! The deferred and unsuitable zones it skips cost microseconds and are
//! not timed.
//!
//! `entry_kswapd_wake` (mm_vmscan_wakeup_kswapd, in the waker's context
//! and only when kswapd was asleep: mm/vmscan.c wakeup_kswapd) counts
//! the waker's stack per (zone, GFP, order): no stall, the waker goes
//! on.
//!
//! Programs of their own, not code in the reclaim pair: `--no-stacks`
//! leaves that pair as it is, and the bench costs each on its own. A
//! stack is taken only at a reclaim's end, a direct compaction's way in
//! (before its timed runs) and a kswapd wake-up (each one every few ms
//! under pressure), never on a fault.

use aya_ebpf::{
    helpers::generated::bpf_get_current_task_btf,
    macros::{map, tracepoint},
    maps::{HashMap, StackTrace},
    programs::{TracePointContext, tracing::StackIdContext as _},
};
use vmtrace_common::{
    Counter, ENTRY_STACK_LOST, EntryCell, EntryKey, EntryWay, Field, MAX_ENTRIES, MAX_ENTRY_STACKS,
    MAX_NODES, MAX_ZONES, SplitFamily, SplitTotals, zone_cell,
};

use crate::{
    rare::count_rare,
    shared::{field, in_target, now_ns, tracepoint_field},
    task::{Entry, TASK_SPANS},
};

/// Kernel stacks at reclaim begins (sized by userspace: 1 entry when
/// stacks are off).
#[map]
static ENTRY_STACKS: StackTrace = StackTrace::with_max_entries(MAX_ENTRY_STACKS, 0);

/// Reclaims and their stall time per way in.
#[map]
static RECLAIM_ENTRIES: HashMap<EntryKey, EntryCell> = HashMap::with_max_entries(MAX_ENTRIES, 0);

#[tracepoint]
pub fn entry_direct_begin(ctx: TracePointContext) -> u32 {
    let (order, gfp) = (
        field!(direct_reclaim_begin_order),
        field!(direct_reclaim_begin_gfp_flags),
    );
    begin(&ctx, EntryWay::Direct, order, gfp);
    0
}

#[tracepoint]
pub fn entry_memcg_begin(ctx: TracePointContext) -> u32 {
    let (order, gfp) = (
        field!(memcg_reclaim_begin_order),
        field!(memcg_reclaim_begin_gfp_flags),
    );
    begin(&ctx, EntryWay::Memcg, order, gfp);
    0
}

#[tracepoint]
pub fn entry_direct_end(ctx: TracePointContext) -> u32 {
    end(&ctx, EntryWay::Direct, SplitFamily::DirectReclaim);
    0
}

#[tracepoint]
pub fn entry_memcg_end(ctx: TracePointContext) -> u32 {
    end(&ctx, EntryWay::Memcg, SplitFamily::MemcgReclaim);
    0
}

/// A direct compaction begins: its way in (the runs that follow are
/// timed by `entry_compaction_begin/end`).
#[tracepoint]
pub fn entry_compact_way(ctx: TracePointContext) -> u32 {
    if !in_target() {
        return 0;
    }
    let Some(spans) = TASK_SPANS.current() else {
        count_rare!(Counter::SpanStartDropped, "compaction entry");
        return 0;
    };
    let e = &mut spans.entry;
    e.stack_id = stack(&ctx);
    e.context = EntryWay::Compaction as u32;
    e.gfp = tracepoint_field(&ctx, field!(try_to_compact_pages_gfp_mask)) as u32;
    e.order = tracepoint_field(&ctx, field!(try_to_compact_pages_order)) as u32;
    e.start_ns = 0;
    0
}

#[tracepoint]
pub fn entry_compaction_begin(_ctx: TracePointContext) -> u32 {
    let Some(spans) = TASK_SPANS.current_if_any() else {
        return 0;
    };
    if spans.entry.context != EntryWay::Compaction as u32 || !in_direct_compaction() {
        return 0;
    }
    let now = now_ns();
    let split = spans.split.totals_now(SplitFamily::Compaction, now);
    stamp(&mut spans.entry, now, &split);
    0
}

#[tracepoint]
pub fn entry_compaction_end(ctx: TracePointContext) -> u32 {
    end(&ctx, EntryWay::Compaction, SplitFamily::Compaction);
    0
}

/// A kswapd wake-up: the waker's way, per zone.
#[tracepoint]
pub fn entry_kswapd_wake(ctx: TracePointContext) -> u32 {
    if !in_target() {
        return 0;
    }
    let nid = tracepoint_field(&ctx, field!(wakeup_kswapd_nid)) as u32;
    let zid = tracepoint_field(&ctx, field!(wakeup_kswapd_zid)) as u32;
    if nid >= MAX_NODES || zid >= MAX_ZONES {
        return 0;
    }
    let key = EntryKey {
        stack_id: stack(&ctx),
        context: EntryWay::KswapdWake as u32,
        gfp: tracepoint_field(&ctx, field!(wakeup_kswapd_gfp_flags)) as u32,
        order: tracepoint_field(&ctx, field!(wakeup_kswapd_order)) as u32,
        zone: zone_cell(nid, zid),
    };
    add(&key, 0, &SplitTotals::default(), &SplitTotals::default());
    0
}

#[inline(always)]
fn begin(ctx: &TracePointContext, way: EntryWay, order: Field, gfp: Field) {
    if !in_target() {
        return;
    }
    let Some(spans) = TASK_SPANS.current() else {
        count_rare!(Counter::SpanStartDropped, "reclaim entry");
        return;
    };
    let start_ns = now_ns();
    // The split's totals now: the stall's parts are their change up to
    // its end (whichever of this and the reclaim pair runs first).
    let family = match way {
        EntryWay::Memcg => SplitFamily::MemcgReclaim,
        _ => SplitFamily::DirectReclaim,
    };
    let split = spans.split.totals_now(family, start_ns);
    let e = &mut spans.entry;
    // Taken at the end (`end`), outside the stall.
    e.stack_id = ENTRY_STACK_LOST;
    e.context = way as u32;
    e.gfp = tracepoint_field(ctx, gfp) as u32;
    e.order = tracepoint_field(ctx, order) as u32;
    stamp(e, start_ns, &split);
}

/// The current task's kernel stack, no frames skipped (a tracepoint
/// program's stack starts at the function that holds the tracepoint).
#[inline(always)]
fn stack(ctx: &TracePointContext) -> i32 {
    match ctx.get_stackid(&ENTRY_STACKS, 0) {
        Ok(id) => id as i32,
        Err(e) => {
            count_rare!(Counter::EntryStacksLost, "ENTRY_STACKS errno", -e);
            ENTRY_STACK_LOST
        }
    }
}

/// Starts timing the way's stall at `now`, with the split's totals then.
#[inline(always)]
fn stamp(e: &mut Entry, now: u64, split: &SplitTotals) {
    e.runnable_ns = split.runnable_ns;
    e.blocked_ns = split.blocked_ns;
    e.start_ns = now;
}

/// Whether the current task is in an allocation's direct compaction
/// (PF_MEMALLOC, set by memalloc_noreclaim_save around
/// try_to_compact_pages; not by a write to compact_memory). Where BTF
/// lacks `task_struct.flags`, true: the way recorded at the task's last
/// try_to_compact_pages is then the only test.
#[inline(always)]
fn in_direct_compaction() -> bool {
    const PF_MEMALLOC: u32 = 0x0000_0800;
    let f = field!(task_flags);
    if f.size != 4 {
        return true;
    }
    // SAFETY: the current task is valid for the program's run; a
    // BTF-typed load at an offset the verifier knows (see
    // `sched::run_delay`).
    let flags = unsafe {
        let task = bpf_get_current_task_btf() as *const u8;
        core::ptr::read_volatile(task.add(f.offset as usize) as *const u32)
    };
    flags & PF_MEMALLOC != 0
}

/// The stall of the way `way` (timed since its stamp) ends: it goes to
/// the way's cell, with the change of `family`'s split totals. A
/// reclaim's stack is taken here, after the end is stamped; a direct
/// compaction's was taken at its way in.
#[inline(always)]
fn end(ctx: &TracePointContext, way: EntryWay, family: SplitFamily) {
    let Some(spans) = TASK_SPANS.current_if_any() else {
        return;
    };
    let start_ns = core::mem::replace(&mut spans.entry.start_ns, 0);
    if start_ns == 0 || spans.entry.context != way as u32 {
        return;
    }
    let now = now_ns();
    let split = spans.split.totals_now(family, now);
    let stack_id = match way {
        EntryWay::Direct | EntryWay::Memcg => stack(ctx),
        EntryWay::Compaction | EntryWay::KswapdWake => spans.entry.stack_id,
    };
    let e = &spans.entry;
    let key = EntryKey {
        stack_id,
        context: e.context,
        gfp: e.gfp,
        order: e.order,
        zone: 0,
    };
    let then = SplitTotals {
        runnable_ns: e.runnable_ns,
        blocked_ns: e.blocked_ns,
        ..SplitTotals::default()
    };
    add(&key, now.saturating_sub(start_ns), &then, &split);
}

/// Adds one event (a stall of `stall` ns; 0 for a wake-up) to `key`'s
/// cell, with the split's change from `then` to `now`.
#[inline(always)]
fn add(key: &EntryKey, stall: u64, then: &SplitTotals, now: &SplitTotals) {
    let cell = match RECLAIM_ENTRIES.get_ptr_mut(key) {
        Some(cell) => cell,
        None => {
            // BPF_NOEXIST: another CPU may have inserted it meanwhile;
            // the lookup below then finds that one.
            let _ = RECLAIM_ENTRIES.insert(key, &EntryCell::default(), BPF_NOEXIST);
            match RECLAIM_ENTRIES.get_ptr_mut(key) {
                Some(cell) => cell,
                None => {
                    count_rare!(Counter::EntriesFull, "RECLAIM_ENTRIES full");
                    return;
                }
            }
        }
    };
    use core::intrinsics::{AtomicOrdering::Relaxed, atomic_xadd};
    // SAFETY: a live, aligned map value, changed only through atomic adds
    // (tasks entering the same way stall on several CPUs).
    unsafe {
        atomic_xadd::<u64, u64, { Relaxed }>(&raw mut (*cell).count, 1);
        if stall == 0 {
            return;
        }
        atomic_xadd::<u64, u64, { Relaxed }>(&raw mut (*cell).stall_ns, stall);
        // Off the CPU: what the scheduler booked across the stall. The
        // rest of the stall was on a CPU: also the stretches outside the
        // split's own span (this program's stamps on either side of the
        // reclaim pair's), since a task cannot leave the CPU inside a
        // tracepoint.
        let runnable = now.runnable_ns.saturating_sub(then.runnable_ns).min(stall);
        let blocked = now
            .blocked_ns
            .saturating_sub(then.blocked_ns)
            .min(stall - runnable);
        atomic_xadd::<u64, u64, { Relaxed }>(&raw mut (*cell).runnable_ns, runnable);
        atomic_xadd::<u64, u64, { Relaxed }>(&raw mut (*cell).blocked_ns, blocked);
        atomic_xadd::<u64, u64, { Relaxed }>(
            &raw mut (*cell).on_cpu_ns,
            stall - runnable - blocked,
        );
    }
}

const BPF_NOEXIST: u64 = 1;
