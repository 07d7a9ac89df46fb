//! Per-task state in task-local storage (BPF_MAP_TYPE_TASK_STORAGE): the
//! start stamps of the spans vmtrace times per task (a direct or memcg
//! reclaim, a shrinker call, a compaction run), and the parts of the
//! cell that `sched` (`Split`) and `entry` (`Entry`) keep there. The
//! cell's whole layout is here: those modules use this one, never the
//! other way round.
//!
//! A hash keyed by thread id costs an insert and a delete per span (a
//! bucket lock and an element taken from and returned to a free list:
//! most of the ~800 ns the reclaim programs cost with one, see
//! docs/BENCHMARKS.md). Task storage hangs off `task_struct` itself: a
//! lookup is a pointer walk, the stamps are overwritten in place, and the
//! kernel frees the cell when the task is freed, so no entry outlives its
//! task and no table fills up.
//!
//! aya-ebpf 0.2 has no task storage type: this is the BTF map definition
//! libbpf's loaders (and aya's) read from the `.maps` section: each
//! member's pointee type encodes one attribute.

use core::{ffi::c_void, ptr};

use aya_ebpf::{
    bindings::{BPF_F_NO_PREALLOC, BPF_LOCAL_STORAGE_GET_F_CREATE},
    helpers::generated::{bpf_get_current_task_btf, bpf_task_storage_get},
    macros::btf_map,
};
use vmtrace_common::{Counter, SplitFamily, SplitTotals, StallTotals};

use crate::{rare::count_rare, shared::now_ns};

/// BPF_MAP_TYPE_TASK_STORAGE (include/uapi/linux/bpf.h).
const MAP_TYPE_TASK_STORAGE: usize = 29;

#[repr(C)]
pub struct TaskStorage<T> {
    r#type: *const [i32; MAP_TYPE_TASK_STORAGE],
    key: *const i32,
    value: *const T,
    max_entries: *const [i32; 0],
    map_flags: *const [i32; BPF_F_NO_PREALLOC as usize],
}

// SAFETY: the members are never dereferenced; they only carry types
// for BTF. A static map definition must be Sync.
unsafe impl<T> Sync for TaskStorage<T> {}

impl<T> TaskStorage<T> {
    pub const fn new() -> Self {
        Self {
            r#type: ptr::null(),
            key: ptr::null(),
            value: ptr::null(),
            max_entries: ptr::null(),
            map_flags: ptr::null(),
        }
    }

    /// `task`'s cell: a `struct task_struct` pointer the verifier knows
    /// as one (the current task, or a task iterator's).
    #[inline(always)]
    pub fn of(&self, task: *mut c_void, flags: u64) -> Option<&mut T> {
        // SAFETY: the task is valid for the program's run; the helper
        // returns this map's cell of it or null (none yet without
        // F_CREATE; no memory; or the CPU is already inside a storage
        // operation, which the helper refuses rather than deadlock).
        unsafe {
            let cell = bpf_task_storage_get(
                ptr::from_ref(self).cast_mut().cast::<c_void>(),
                task.cast(),
                ptr::null_mut(),
                flags,
            );
            cell.cast::<T>().as_mut()
        }
    }

    /// The current task's cell, created zeroed when it has none.
    #[inline(always)]
    pub fn current(&self) -> Option<&mut T> {
        // SAFETY: the current task is valid for the program's run.
        let task = unsafe { bpf_get_current_task_btf() };
        self.of(task.cast(), BPF_LOCAL_STORAGE_GET_F_CREATE.into())
    }

    /// The current task's cell, if it has one.
    #[inline(always)]
    pub fn current_if_any(&self) -> Option<&mut T> {
        // SAFETY: the current task is valid for the program's run.
        self.of(unsafe { bpf_get_current_task_btf() }.cast(), 0)
    }
}

/// Start stamps of the current task's open spans (0 = none open), and
/// the task's reclaim stalls not yet in its process's row.
#[repr(C)]
pub struct TaskSpans {
    /// Direct or memcg reclaim: start, context (a `ReclaimContext`), and
    /// whether the task was in the target then.
    pub reclaim_start_ns: u64,
    /// The target verdict of the task's cgroup, cached by the reclaim
    /// begin (`target::in_target_cached`) for the cgroup whose serial
    /// number is `target_serial`: 0 none, 1 not in the target, 2 in it.
    /// Packed with the stamp in 24 bytes: the split's line is where
    /// sched_switch reads it (a wider head cost it ~70 ns a run).
    pub target_serial: u64,
    /// The allocation order, counted at the reclaim's end.
    pub reclaim_order: u32,
    pub reclaim_context: u8,
    pub reclaim_target: u8,
    pub target_verdict: u8,
    pub _pad: u8,
    /// The open span's time so far, split at the scheduler (`sched`):
    /// beside the reclaim stamp, so that a reclaim's begin writes one
    /// line of the cell.
    pub split: Split,
    /// The thread's stalls since they were last added to its process's
    /// `RECLAIM_STALLERS` row (`reclaim::fold_stalls`: at the thread's
    /// exit, and for live threads when the collector reads the maps).
    /// Near the stamp, so that a reclaim's end touches few lines.
    pub stalls: StallTotals,
    /// The shrinker call (`mm_shrink_slab_start`).
    pub slab_start_ns: u64,
    /// The compaction run of a target task.
    pub compaction_start_ns: u64,
    /// The OOM reaper's pass over one victim (this cell is the
    /// oom_reaper kthread's: it reaps one victim at a time).
    pub reap_start_ns: u64,
    /// How the reclaim the task is in was entered (`entry`): last, off
    /// the lines the reclaim pair touches.
    pub entry: Entry,
}

/// The current task's split, kept by `sched`: the open span (`mark_ns`
/// 0: none) and what the task is doing in it since then (`state`, one
/// of `sched`'s ON_CPU..IOWAIT), the run_delay bookkeeping, and the
/// running totals per family.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Split {
    pub mark_ns: u64,
    pub state: u32,
    /// The `SplitFamily` of the open span.
    pub family: u32,
    /// `sched_info.run_delay` when the open span opened (read at its
    /// first switch-out: `switched` 1 from then on), or when the closed
    /// span of `pending_family` opened (`pending` 1: its change is read
    /// at the task's next switch-out).
    pub run_delay_ns: u64,
    pub switched: u32,
    pub pending: u32,
    pub pending_family: u32,
    /// The CPU + 1 the task waits on as a target waiter (`contention`),
    /// 0 when it does not.
    pub wait_cpu: u32,
    /// The open sleep `sched` times outside the spans (`SLEEP_IO` or
    /// `SLEEP_MEMSTALL`; 0 none) and its start: a target task's own
    /// cell holds it, the maps `IO_WAITS`/`MEMSTALLS` only a task
    /// without one.
    pub sleep_kind: u32,
    pub sleep_ns: u64,
    /// Per family, `SplitFamily::index`.
    pub totals: [SplitTotals; SplitFamily::COUNT as usize],
}

impl Split {
    /// The totals of `family` (a `SplitFamily` as u32).
    #[inline(always)]
    pub fn totals_of(&mut self, family: u32) -> Option<&mut SplitTotals> {
        // Bounded for the verifier: the families are 1..=COUNT. An
        // opaque copy of the index, as in `shared::record`: else the
        // compiler tests family - 1 but indexes with family (its - 1
        // folded into the offset), a register the verifier never bounded.
        let i = (family as usize).wrapping_sub(1);
        // SAFETY: a read of a local.
        let i = unsafe { core::ptr::read_volatile(&i) };
        self.totals.get_mut(i)
    }

    /// `family`'s totals as of `now`, the open span's stretch so far
    /// included (the task is on a CPU: it is running this).
    #[inline(always)]
    pub fn totals_now(&mut self, family: SplitFamily, now: u64) -> SplitTotals {
        let open = self.mark_ns != 0 && self.family == family as u32;
        let since = now.saturating_sub(self.mark_ns);
        let mut t = self.totals_of(family as u32).copied().unwrap_or_default();
        if open {
            t.on_cpu_ns += since;
        }
        t
    }
}

/// The way into the reclaim or direct compaction the task is in
/// (`TaskSpans::entry`); `start_ns` 0: not timing a stall now.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Entry {
    pub start_ns: u64,
    pub stack_id: i32,
    pub context: u32,
    pub gfp: u32,
    pub order: u32,
    /// The task's split totals of the context's family at the begin
    /// (on-CPU is the rest of the stall).
    pub runnable_ns: u64,
    pub blocked_ns: u64,
}

#[btf_map]
pub static TASK_SPANS: TaskStorage<TaskSpans> = TaskStorage::new();

/// Stamps the current task's span `at` (in its `TASK_SPANS` cell); a
/// task the kernel gives no cell counts `Counter::SpanStartDropped`
/// (`span` names it in the `--debug-probes` line).
#[inline(always)]
pub fn stamp(span: Span, at: impl FnOnce(&mut TaskSpans) -> &mut u64) {
    match TASK_SPANS.current() {
        Some(spans) => *at(spans) = now_ns(),
        None => match span {
            Span::Slab => count_rare!(Counter::SpanStartDropped, "slab shrink"),
            Span::OomReap => count_rare!(Counter::SpanStartDropped, "OOM reap"),
        },
    }
}

/// The spans `stamp` times.
#[derive(Clone, Copy)]
pub enum Span {
    Slab,
    OomReap,
}

/// Time since the current task's stamp `at`, which is cleared.
#[inline(always)]
pub fn since_stamp(at: impl FnOnce(&mut TaskSpans) -> &mut u64) -> Option<u64> {
    let start = at(TASK_SPANS.current_if_any()?);
    let started = core::mem::replace(start, 0);
    (started != 0).then(|| now_ns().saturating_sub(started))
}
