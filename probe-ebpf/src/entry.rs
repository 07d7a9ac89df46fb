//! Where reclaim was entered: the kernel stack, GFP flags and order of
//! every target direct and memcg reclaim, weighted by its stall.
//!
//! `entry_*_begin` (on the reclaim begin tracepoints, beside `reclaim`'s
//! own programs) takes the target task's kernel stack once into
//! `ENTRY_STACKS` (a stack-trace map: one id per distinct stack) and
//! keeps its id, the allocation's GFP flags and order and a start stamp
//! in the task's `TASK_SPANS` cell; `entry_*_end` adds the stall to the
//! (stack, context, GFP, order) cell of `RECLAIM_ENTRIES`. Programs of
//! their own, not code in the reclaim pair: `--no-stacks` leaves that
//! pair as it is, and the bench costs each on its own. A stack is taken
//! only at a reclaim's begin (one every few ms under pressure), never on
//! a fault.

use aya_ebpf::{
    macros::{map, tracepoint},
    maps::{HashMap, StackTrace},
    programs::{TracePointContext, tracing::StackIdContext as _},
};
use vmtrace_common::{
    Counter, ENTRY_STACK_LOST, EntryCell, EntryKey, Field, MAX_ENTRIES, MAX_ENTRY_STACKS,
    ReclaimContext,
};

use crate::{
    shared::{count, field, in_target, now_ns, tracepoint_field},
    task::TASK_SPANS,
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
    begin(&ctx, ReclaimContext::Direct, order, gfp);
    0
}

#[tracepoint]
pub fn entry_memcg_begin(ctx: TracePointContext) -> u32 {
    let (order, gfp) = (
        field!(memcg_reclaim_begin_order),
        field!(memcg_reclaim_begin_gfp_flags),
    );
    begin(&ctx, ReclaimContext::Memcg, order, gfp);
    0
}

#[tracepoint]
pub fn entry_direct_end(_ctx: TracePointContext) -> u32 {
    end(ReclaimContext::Direct);
    0
}

#[tracepoint]
pub fn entry_memcg_end(_ctx: TracePointContext) -> u32 {
    end(ReclaimContext::Memcg);
    0
}

#[inline(always)]
fn begin(ctx: &TracePointContext, context: ReclaimContext, order: Field, gfp: Field) {
    if !in_target() {
        return;
    }
    let Some(spans) = TASK_SPANS.current() else {
        count(Counter::SpanStartDropped, 1);
        return;
    };
    // Stamped before the stack is taken: the unwind (microseconds, more
    // on a busy machine) is vmtrace's cost, not the stall's, and the
    // reclaim pair's own begin stamps before it too.
    let start_ns = now_ns();
    // Kernel stack, no frames skipped: a tracepoint program's stack
    // starts at the function that holds the tracepoint.
    let stack_id = match ctx.get_stackid(&ENTRY_STACKS, 0) {
        Ok(id) => id as i32,
        Err(_) => {
            count(Counter::EntryStacksLost, 1);
            ENTRY_STACK_LOST
        }
    };
    let e = &mut spans.entry;
    e.stack_id = stack_id;
    e.context = context as u32;
    e.gfp = tracepoint_field(ctx, gfp) as u32;
    e.order = tracepoint_field(ctx, order) as u32;
    e.start_ns = start_ns;
}

#[inline(always)]
fn end(context: ReclaimContext) {
    let Some(spans) = TASK_SPANS.current_if_any() else {
        return;
    };
    let e = &mut spans.entry;
    let start_ns = core::mem::replace(&mut e.start_ns, 0);
    if start_ns == 0 || e.context != context as u32 {
        return;
    }
    let stall = now_ns().saturating_sub(start_ns);
    let key = EntryKey {
        stack_id: e.stack_id,
        context: e.context,
        gfp: e.gfp,
        order: e.order,
    };
    let cell = match RECLAIM_ENTRIES.get_ptr_mut(&key) {
        Some(cell) => cell,
        None => {
            // BPF_NOEXIST: another CPU may have inserted it meanwhile;
            // the lookup below then finds that one.
            let _ = RECLAIM_ENTRIES.insert(&key, &EntryCell::default(), BPF_NOEXIST);
            match RECLAIM_ENTRIES.get_ptr_mut(&key) {
                Some(cell) => cell,
                None => {
                    count(Counter::EntriesFull, 1);
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
        atomic_xadd::<u64, u64, { Relaxed }>(&raw mut (*cell).stall_ns, stall);
    }
}

const BPF_NOEXIST: u64 = 1;

/// The way into the reclaim the task is in (`TaskSpans::entry`);
/// `start_ns` 0: none.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Entry {
    pub start_ns: u64,
    pub stack_id: i32,
    pub context: u32,
    pub gfp: u32,
    pub order: u32,
}
