//! The scheduler's view of target tasks: where the wall time of a
//! reclaim stall or a compaction run went (on a CPU, runnable, blocked,
//! of that in an I/O wait), and the target's I/O-wait sleeps. Both are
//! timed the same way on 6.1, 6.12 and 6.18, on one clock.
//!
//! A span's start (`open`, from `reclaim` and `stall`) marks the task on
//! a CPU in its `TASK_SPANS` cell. `sched_switch` ends prev's stretch on
//! the CPU: prev stays runnable when it was preempted or its state is
//! TASK_RUNNING (kernel/sched/core.c __schedule: only a task with a
//! sleeping state that was not preempted is dequeued), else it is
//! blocked, in an I/O wait when `in_iowait` is set (io_schedule_prepare).
//! `sched_wakeup` (ttwu_do_wakeup: every wake-up, also of a task still
//! queued, ttwu_runnable) turns blocked into runnable, and the switch-in
//! ends the wait for a CPU. The span's end (`close`) adds the last
//! stretch on the CPU and folds the parts into the family's counters,
//! with the span's wall time and the change of the kernel's own
//! `sched_info.run_delay` over it, the cross-check of the runnable part.
//! run_delay grows only when the task is switched in (sched_info_arrive,
//! from prepare_task_switch, after trace_sched_switch) or dequeued while
//! queued (sched_info_dequeue): never while it runs. So its value at the
//! span's open equals its value at the span's first switch-out, where
//! `sched_switch` reads it; a span that never left the CPU changed it by
//! 0 and its end reads nothing. The reclaim pair, which runs for every
//! stall, thus reads no cold line of task_struct (docs/BENCHMARKS.md).
//!
//! The I/O waits: a target task switched out blocked with `in_iowait`
//! is stamped in `IO_WAITS` (a preallocated hash: no allocation under
//! the run-queue lock, where creating task storage could wake kswapd
//! and deadlock), and its wake-up closes the sleep.
//!
//! Cost: every context switch looks up prev's and next's task storage
//! (no cell: one helper call each) and every wake-up the woken task's;
//! see docs/BENCHMARKS.md.

use core::ffi::c_void;

use aya_ebpf::{
    helpers::generated::bpf_get_current_task_btf,
    macros::{btf_tracepoint, map},
    maps::HashMap,
    programs::BtfTracePointContext,
};
use vmtrace_common::{Counter, MAX_IO_WAITS, SplitFamily, SplitPart, split_counter};

use crate::{
    shared::{count, count_all, field, in_target, now_ns},
    task::TASK_SPANS,
};

/// What a task with an open split is doing since `mark_ns`.
const ON_CPU: u32 = 0;
const RUNNABLE: u32 = 1;
const BLOCKED: u32 = 2;
const IOWAIT: u32 = 3;

/// An open span's parts so far (`TaskSpans::split`); `mark_ns` 0: none
/// open.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Split {
    pub mark_ns: u64,
    pub state: u32,
    /// The `SplitFamily` that opened it.
    pub family: u32,
    pub on_cpu_ns: u64,
    pub runnable_ns: u64,
    pub blocked_ns: u64,
    pub iowait_ns: u64,
    /// `sched_info.run_delay` when the span opened, read at its first
    /// switch-out (`switched` 1 from then on).
    pub run_delay_ns: u64,
    pub switched: u32,
    pub _pad: u32,
}

/// Open I/O-wait sleeps of target threads: `task_struct` address ->
/// start. Keyed by the address so that the wake-up needs no read of the
/// task; the entry goes at that wake-up, and a sleeping task cannot be
/// freed, so no address is reused while its entry lives.
#[map]
static IO_WAITS: HashMap<u64, u64> = HashMap::with_max_entries(MAX_IO_WAITS, 0);

/// `task`'s `sched_info.run_delay` (0 where BTF lacks it).
///
/// `task` is a BTF pointer (`bpf_get_current_task_btf`, or a tp_btf
/// argument), so this is a plain load: the offsets are constants to the
/// verifier (frozen .rodata, see `field!`), which checks the access
/// against the running kernel's BTF and has it JITed as a load that
/// cannot fault (BPF_PROBE_MEM). bpf_probe_read_kernel, two helper calls
/// with the task lookup, cost more than the rest of a reclaim's end.
#[inline(always)]
fn run_delay(task: *const u8) -> u64 {
    let (info, delay) = (field!(task_sched_info), field!(sched_info_run_delay));
    if info.size == 0 || delay.size != 8 {
        return 0;
    }
    let at = info.offset as usize + delay.offset as usize;
    // SAFETY: a BTF-typed load from a live task, checked as above.
    unsafe { core::ptr::read_volatile(task.add(at) as *const u64) }
}

/// Whether `task` (a BTF pointer, as in `run_delay`) is in an I/O wait
/// (`in_iowait`, a bitfield: `size & 7` is its bit in the byte at
/// `offset`; false where BTF lacks it).
#[inline(always)]
fn in_iowait(task: *const u8) -> bool {
    let f = field!(task_in_iowait);
    if f.offset == 0 {
        return false;
    }
    // SAFETY: as in `run_delay`; the verifier allows a byte load that
    // covers a bitfield (btf_struct_walk).
    let byte = unsafe { core::ptr::read_volatile(task.add(f.offset as usize)) };
    (byte >> (f.size & 7)) & 1 == 1
}

/// Opens the current task's split for a span of `family` (none when one
/// is open already: spans of these families do not nest).
#[inline(always)]
pub fn open(split: &mut Split, family: SplitFamily, now: u64) {
    if split.mark_ns != 0 {
        return;
    }
    // The parts are 0: a new cell is zeroed and `close` takes the last
    // span's, so only the line with the mark is written.
    split.mark_ns = now;
    split.state = ON_CPU;
    split.family = family as u32;
}

/// Closes the current task's split for a span of `family` that began at
/// `start_ns`, folding it into the family's counters.
#[inline(always)]
pub fn close(split: &mut Split, family: SplitFamily, start_ns: u64, now: u64) {
    if split.mark_ns == 0 || split.family != family as u32 {
        return;
    }
    let s = core::mem::take(split);
    let on_cpu = s.on_cpu_ns + now.saturating_sub(s.mark_ns);
    let run_delay = if s.switched != 0 {
        // SAFETY: the current task is valid for the program's run.
        let task = unsafe { bpf_get_current_task_btf() } as *const u8;
        run_delay(task).saturating_sub(s.run_delay_ns)
    } else {
        0
    };
    let at = |part| split_counter(family, part);
    count_all([
        (at(SplitPart::OnCpu), on_cpu),
        (at(SplitPart::Runnable), s.runnable_ns),
        (at(SplitPart::Blocked), s.blocked_ns),
        (at(SplitPart::Iowait), s.iowait_ns),
        (at(SplitPart::Wall), now.saturating_sub(start_ns)),
        (at(SplitPart::RunDelay), run_delay),
    ]);
}

/// Ends the stretch since the mark in `state`, booking it; the task is
/// now in `next`.
#[inline(always)]
fn advance(s: &mut Split, next: u32, now: u64) {
    let took = now.saturating_sub(s.mark_ns);
    match s.state {
        ON_CPU => s.on_cpu_ns += took,
        RUNNABLE => s.runnable_ns += took,
        IOWAIT => {
            s.blocked_ns += took;
            s.iowait_ns += took;
        }
        _ => s.blocked_ns += took,
    }
    s.mark_ns = now;
    s.state = next;
}

#[btf_tracepoint(function = "sched_switch")]
pub fn sched_switch(ctx: BtfTracePointContext) -> i32 {
    // (bool preempt, struct task_struct *prev, *next, unsigned int
    // prev_state): include/trace/events/sched.h, 5.18 and later.
    let preempt: u64 = ctx.arg(0);
    let prev: *mut c_void = ctx.arg(1);
    let next: *mut c_void = ctx.arg(2);
    let prev_state: u64 = ctx.arg(3);
    let asleep = preempt & 0xff == 0 && prev_state & 0xffff_ffff != 0;
    let iowait = asleep && in_iowait(prev as *const u8);
    let mut now = 0;
    if let Some(spans) = TASK_SPANS.of(prev, 0)
        && spans.split.mark_ns != 0
    {
        now = now_ns();
        let state = match (asleep, iowait) {
            (false, _) => RUNNABLE,
            (true, true) => IOWAIT,
            (true, false) => BLOCKED,
        };
        if spans.split.switched == 0 {
            // Not yet switched in since the open: run_delay as it was
            // then (see the module's header).
            spans.split.run_delay_ns = run_delay(prev as *const u8);
            spans.split.switched = 1;
        }
        advance(&mut spans.split, state, now);
    }
    // prev is current here: the target filter applies to it.
    if iowait && in_target() {
        if now == 0 {
            now = now_ns();
        }
        if IO_WAITS.insert(&(prev as u64), &now, 0).is_err() {
            count(Counter::IoWaitDropped, 1);
        }
    }
    if let Some(spans) = TASK_SPANS.of(next, 0)
        && spans.split.mark_ns != 0
    {
        if now == 0 {
            now = now_ns();
        }
        if spans.split.state == BLOCKED || spans.split.state == IOWAIT {
            count(Counter::SplitWakeupMissed, 1);
        }
        advance(&mut spans.split, ON_CPU, now);
    }
    0
}

#[btf_tracepoint(function = "sched_wakeup")]
pub fn sched_wakeup(ctx: BtfTracePointContext) -> i32 {
    // (struct task_struct *p)
    let p: *mut c_void = ctx.arg(0);
    let mut now = 0;
    if let Some(spans) = TASK_SPANS.of(p, 0)
        && spans.split.mark_ns != 0
        && (spans.split.state == BLOCKED || spans.split.state == IOWAIT)
    {
        now = now_ns();
        advance(&mut spans.split, RUNNABLE, now);
    }
    // in_iowait is still set at the wake-up (io_schedule_finish clears
    // it once the task runs again): only then can it be in IO_WAITS.
    if in_iowait(p as *const u8) {
        let key = p as u64;
        // SAFETY: the value is copied before the entry is removed.
        if let Some(&start) = unsafe { IO_WAITS.get(&key) } {
            let _ = IO_WAITS.remove(&key);
            if now == 0 {
                now = now_ns();
            }
            count_all([
                (Counter::IoWaits, 1),
                (Counter::IoWaitNs, now.saturating_sub(start)),
            ]);
        }
    }
    0
}
