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
//! (`Counters::orders`, counted at the end) and, per process, the total time stalled
//! (`RECLAIM_STALLERS`: every process, flagged when in the target). A
//! reclaim's end adds its stall to the thread's own cell (`stalls` in
//! `TASK_SPANS`, the line it already reads); `stall_thread_exit` and the
//! collector's task iterator `stall_flush` move those into the
//! per-process rows.

use core::ffi::c_void;

use aya_ebpf::{
    bindings::BPF_LOCAL_STORAGE_GET_F_CREATE,
    helpers::{
        bpf_get_current_comm, bpf_get_current_pid_tgid, bpf_probe_read_kernel,
        generated::bpf_get_current_task_btf,
    },
    macros::{map, tracepoint},
    maps::LruHashMap,
    programs::TracePointContext,
};
use vmtrace_common::{
    Counter, Field, Hist, MAX_STALLERS, ReclaimContext, SplitFamily, StallTotals, Staller,
    order_cell,
};

use crate::{
    rare::count_rare,
    shared::{count, field, now_ns, record, tracepoint_field},
    task::TASK_SPANS,
};

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
    // SAFETY: the current task is valid for the program's run.
    let task = unsafe { bpf_get_current_task_btf() };
    let Some(spans) = TASK_SPANS.of(task.cast(), BPF_LOCAL_STORAGE_GET_F_CREATE.into()) else {
        count_rare!(Counter::ReclaimStartDropped, "no TASK_SPANS cell");
        return;
    };
    let target = crate::target::in_target_cached(task as *const u8, spans);
    let now = now_ns();
    spans.reclaim_start_ns = now;
    spans.reclaim_context = context as u8;
    spans.reclaim_target = target as u8;
    // Counted at the end, with the stall's other counters: one lookup.
    spans.reclaim_order = tracepoint_field(ctx, order) as u32;
    if target {
        crate::sched::open(&mut spans.split, SplitFamily::of_reclaim(context), now);
    }
}

#[inline(always)]
fn end(ctx: &TracePointContext, nr_reclaimed: Field) {
    let Some(spans) = TASK_SPANS.current_if_any() else {
        count_rare!(Counter::ReclaimEndUnmatched, "no TASK_SPANS cell");
        return;
    };
    let start_ns = core::mem::replace(&mut spans.reclaim_start_ns, 0);
    if start_ns == 0 {
        count_rare!(Counter::ReclaimEndUnmatched, "not stamped");
        return;
    }
    let now = now_ns();
    let stall = now.saturating_sub(start_ns);
    let memcg = spans.reclaim_context == ReclaimContext::Memcg as u8;
    let target = spans.reclaim_target != 0;
    if target {
        let family = if memcg {
            SplitFamily::MemcgReclaim
        } else {
            SplitFamily::DirectReclaim
        };
        crate::sched::close(&mut spans.split, family, start_ns, now);
    }
    // The process's row is updated later (`fold_stalls`): a hash lookup
    // here, cold in reclaim, cost more than the rest of the program.
    let p = &mut spans.stalls;
    if memcg {
        p.memcg_ns += stall;
        p.memcg_count += 1;
    } else {
        p.direct_ns += stall;
        p.direct_count += 1;
    }
    p.target |= target as u32;
    if !target {
        return;
    }
    let pages = tracepoint_field(ctx, nr_reclaimed);
    crate::cgroup::add_stall(memcg, stall);
    // One lookup of the counter cell for the three and the order.
    let (hist, n, ns, freed) = if memcg {
        (
            Hist::MemcgReclaim,
            Counter::MemcgReclaims,
            Counter::MemcgReclaimNs,
            Counter::MemcgReclaimPages,
        )
    } else {
        (
            Hist::DirectReclaim,
            Counter::DirectReclaims,
            Counter::DirectReclaimNs,
            Counter::DirectReclaimPages,
        )
    };
    record(hist, stall);
    let context = if memcg {
        ReclaimContext::Memcg
    } else {
        ReclaimContext::Direct
    };
    let order = order_cell(context, spans.reclaim_order) as usize;
    if let Some(c) = crate::shared::counters() {
        for (counter, add) in [(n, 1), (ns, stall), (freed, pages)] {
            if let Some(v) = c.n.get_mut(counter as usize) {
                *v += add;
            }
        }
        if let Some(v) = c.orders.get_mut(order) {
            *v += 1;
        }
    }
}

/// A thread is exiting: its pending stalls go to its process's row, and
/// its split totals to the counters, before its task storage goes away.
#[tracepoint]
pub fn stall_thread_exit(_ctx: TracePointContext) -> u32 {
    if let Some(spans) = TASK_SPANS.current_if_any() {
        let tgid = (bpf_get_current_pid_tgid() >> 32) as u32;
        fold_stalls(tgid, &mut spans.stalls, || {
            bpf_get_current_comm().unwrap_or([0; 16])
        });
        // SAFETY: the current task is valid for the program's run.
        let task = unsafe { bpf_get_current_task_btf() } as *const u8;
        crate::sched::fold_at_exit(&mut spans.split, task);
    }
    0
}

/// A task iterator (`iter/task`), run by the collector before it reads
/// `RECLAIM_STALLERS`: every live thread's pending stalls go to its
/// process's row, and its split totals are summed into `SPLIT_LIVE`.
/// Its context is `struct bpf_iter__task { meta; task; }`; `task` is
/// null on the iterator's last call.
#[unsafe(no_mangle)]
#[unsafe(link_section = "iter/task")]
pub extern "C" fn stall_flush(ctx: *mut c_void) -> u32 {
    // SAFETY: the second pointer of the iterator's context, read at a
    // fixed offset (the verifier types it as the task or null).
    let task = unsafe { *ctx.cast::<*mut c_void>().add(1) };
    if task.is_null() {
        return 0;
    }
    let Some(spans) = TASK_SPANS.of(task, 0) else {
        return 0;
    };
    crate::sched::add_live(&spans.split);
    let task = task as *const u8;
    let tgid = field!(task_tgid);
    let comm = field!(task_comm);
    // SAFETY: bpf_probe_read_kernel checks the addresses; the offsets
    // are the running kernel's (BTF).
    let tgid =
        unsafe { bpf_probe_read_kernel(task.add(tgid.offset as usize) as *const u32) }.unwrap_or(0);
    fold_stalls(tgid, &mut spans.stalls, || {
        // SAFETY: as above.
        unsafe { bpf_probe_read_kernel(task.add(comm.offset as usize) as *const [u8; 16]) }
            .unwrap_or([0; 16])
    });
    0
}

/// Adds a thread's pending stalls to its process's row (tgid) and clears
/// them. Rows are added to atomically: threads of one process exit on
/// several CPUs at once.
#[inline(always)]
fn fold_stalls(tgid: u32, pending: &mut StallTotals, comm: impl FnOnce() -> [u8; 16]) {
    if pending.direct_count == 0 && pending.memcg_count == 0 {
        return;
    }
    let p = core::mem::take(pending);
    if add_to_row(tgid, &p) {
        return;
    }
    let s = Staller {
        comm: comm(),
        stalls: p,
    };
    // BPF_NOEXIST: another thread of the process may have inserted the
    // row since; then add to it instead of overwriting it.
    if RECLAIM_STALLERS.insert(&tgid, &s, BPF_NOEXIST).is_ok() {
        count(Counter::StallerInserts, 1);
    } else {
        add_to_row(tgid, &p);
    }
}

const BPF_NOEXIST: u64 = 1;

/// Adds to the process's row, if it has one.
#[inline(always)]
fn add_to_row(tgid: u32, p: &StallTotals) -> bool {
    use core::intrinsics::{AtomicOrdering::Relaxed, atomic_xadd};
    let Some(s) = RECLAIM_STALLERS.get_ptr_mut(&tgid) else {
        return false;
    };
    // SAFETY: a live, aligned entry; changed only through atomic adds
    // (BPF_ATOMIC: see fault::add_process_faults).
    unsafe {
        atomic_xadd::<u64, u64, { Relaxed }>(&raw mut (*s).stalls.direct_ns, p.direct_ns);
        atomic_xadd::<u64, u64, { Relaxed }>(&raw mut (*s).stalls.direct_count, p.direct_count);
        atomic_xadd::<u64, u64, { Relaxed }>(&raw mut (*s).stalls.memcg_ns, p.memcg_ns);
        atomic_xadd::<u64, u64, { Relaxed }>(&raw mut (*s).stalls.memcg_count, p.memcg_count);
        // Only ever set to 1: racing stores agree.
        if p.target != 0 {
            (*s).stalls.target = 1;
        }
    }
    true
}
