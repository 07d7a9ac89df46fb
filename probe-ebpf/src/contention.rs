//! Who the target waited for: the time each target task was runnable on
//! a CPU another task held, by who held it (`Holder`: the job's own
//! threads, kswapd, kcompactd, other kernel threads, other tasks, or
//! nobody while the CPU idled). Contention is then measured where the
//! job waited, not inferred from the machine's busy time.
//!
//! Per CPU (`CPU_WAITS`, changed only under that CPU's run-queue lock):
//! how many target tasks are queued there, since when, and the task-ns
//! its current holder has kept them waiting so far. A wait begins when a
//! target task is woken onto the CPU (`sched_wakeup`, under the lock of
//! the task's run queue: ttwu_do_activate and ttwu_runnable on 6.1,
//! 6.12 and 6.18) or switched out still runnable (preempted, or yielding
//! in TASK_RUNNING); it ends when the task is switched in there. At each
//! change of the count, the stretch since the last one is added to the
//! holder's pending task-ns (stretch x waiters); at each context switch
//! on the CPU the holder, prev, is current, so it is classified then
//! (`in_target` works only on the current task) and its pending time
//! booked to its counter. A task the load balancer moves while it waits
//! (`sched_migrate_task`, under the source queue's lock, without the
//! destination's) leaves the source's count; its wait on the destination
//! is not timed (`RunnableWaitsCut`): the destination's numbers change
//! only under its own lock.
//!
//! A task is a target waiter only when it has a `TASK_SPANS` cell whose
//! verdict says so (2): no cell can be made under a run-queue lock, so
//! `contention_fork` and `contention_exec` make one for each target
//! task as it is forked or execs (the job's tasks from the start, for
//! `run`), and a reclaim's begin for any other.
//!
//! The sum over holders equals the target's run_delay over the timed
//! waits (kernel/sched/stats.h: sched_info_enqueue stamps last_queued,
//! sched_info_arrive adds now - last_queued at the switch-in): the
//! kernel test checks it against delay accounting. Except where a
//! wake-up preempted the CPU's task: run_delay then misses most of the
//! wait (`sched`'s header), so the sum may exceed it by those waits.

use core::ffi::c_void;

use aya_ebpf::{
    bindings::BPF_LOCAL_STORAGE_GET_F_CREATE,
    helpers::{bpf_get_smp_processor_id, generated::bpf_get_current_task_btf},
    macros::{btf_tracepoint, map},
    maps::Array,
    programs::BtfTracePointContext,
};
use vmtrace_common::{Counter, CpuWaiters, Holder, MAX_CPUS};

use crate::{
    rare::count_rare,
    shared::{count, field, in_target, now_ns, target},
    task::{TASK_SPANS, TaskSpans},
};

/// Per CPU: its waiting target tasks (see the module's header).
#[map]
static CPU_WAITS: Array<CpuWaiters> = Array::with_max_entries(MAX_CPUS, 0);

/// `TaskSpans::target_verdict` of a task in the target.
pub const VERDICT_TARGET: u8 = 2;

const PF_IDLE: u32 = 0x0000_0002;
const PF_KTHREAD: u32 = 0x0020_0000;

/// The current task's holder class: `task` is current (prev at a
/// switch), `cell` its cell if it has one.
#[inline(always)]
fn holder(task: *const u8, cell: Option<&TaskSpans>) -> Holder {
    if cell.is_some_and(|c| c.target_verdict == VERDICT_TARGET) {
        return Holder::Job;
    }
    let f = field!(task_flags);
    // SAFETY: a BTF-typed load from a live task (see `sched::run_delay`).
    let flags = if f.size == 4 {
        unsafe { core::ptr::read_volatile(task.add(f.offset as usize) as *const u32) }
    } else {
        0
    };
    if flags & PF_IDLE != 0 {
        return Holder::Idle;
    }
    if flags & PF_KTHREAD == 0 {
        return if in_target() {
            Holder::Job
        } else {
            Holder::Others
        };
    }
    let c = field!(task_comm);
    if c.size < 8 {
        return Holder::Kthreads;
    }
    // SAFETY: as above; comm is a 16-byte array, its first 8 read.
    let head = unsafe { core::ptr::read_volatile(task.add(c.offset as usize) as *const u64) };
    // "kswapd" + a node number; "kcompactd" + a node number.
    const KSWAPD: u64 = u64::from_le_bytes(*b"kswapd\0\0");
    const KCOMPACT: u64 = u64::from_le_bytes(*b"kcompact");
    if head & 0xffff_ffff_ffff == KSWAPD {
        Holder::Kswapd
    } else if head == KCOMPACT {
        Holder::Kcompactd
    } else {
        Holder::Kthreads
    }
}

/// The CPU's waiter state (None beyond `MAX_CPUS`).
#[inline(always)]
fn cpu_state(cpu: u32) -> Option<&'static mut CpuWaiters> {
    // SAFETY: a live map value; changed only under the CPU's run-queue
    // lock, which every caller holds.
    CPU_WAITS.get_ptr_mut(cpu).map(|p| unsafe { &mut *p })
}

/// Closes the stretch since the last change of the count: its task-ns
/// go to the current holder's pending time.
#[inline(always)]
fn close_stretch(st: &mut CpuWaiters, now: u64) {
    if st.waiters != 0 {
        st.pending_ns += now.saturating_sub(st.since_ns) * st.waiters as u64;
    }
    st.since_ns = now;
}

/// A target task begins waiting on `cpu`.
#[inline(always)]
fn begin_wait(cell: &mut TaskSpans, cpu: u32, now: u64) {
    let Some(st) = cpu_state(cpu) else {
        count(Counter::RunnableWaitsCut, 1);
        return;
    };
    close_stretch(st, now);
    st.waiters += 1;
    cell.split.wait_cpu = cpu + 1;
    count(Counter::RunnableWaits, 1);
}

/// At a context switch on this CPU: prev's time holding it goes to its
/// class; next's wait (if it was one) ends; prev's begins when it stays
/// runnable and is a target task. Returns `now` if it read the clock.
#[inline(always)]
pub fn on_switch(
    prev: *const u8,
    prev_cell: Option<&mut TaskSpans>,
    next_cell: Option<&mut TaskSpans>,
    prev_runnable: bool,
    mut now: u64,
) -> u64 {
    // SAFETY: a helper with no arguments.
    let cpu = unsafe { bpf_get_smp_processor_id() };
    let Some(st) = cpu_state(cpu) else {
        return now;
    };
    let next_waits = next_cell.as_ref().is_some_and(|c| c.split.wait_cpu != 0);
    let prev_waits = prev_runnable
        && prev_cell
            .as_ref()
            .is_some_and(|c| c.target_verdict == VERDICT_TARGET && c.split.wait_cpu == 0);
    if st.waiters == 0 && st.pending_ns == 0 && !next_waits && !prev_waits {
        return now;
    }
    if now == 0 {
        now = now_ns();
    }
    close_stretch(st, now);
    if st.pending_ns != 0 {
        let class = holder(prev, prev_cell.as_deref());
        count(class.counter(), core::mem::take(&mut st.pending_ns));
    }
    if let Some(c) = next_cell
        && c.split.wait_cpu != 0
    {
        if c.split.wait_cpu == cpu + 1 {
            st.waiters = st.waiters.saturating_sub(1);
        } else {
            // Queued elsewhere as far as vmtrace knew: its count there
            // is fixed by that CPU's next switch-in of it, never; count
            // the wait as cut (a migration whose trace was missed).
            count(Counter::RunnableWaitsCut, 1);
        }
        c.split.wait_cpu = 0;
    }
    if prev_waits && let Some(c) = prev_cell {
        begin_wait(c, cpu, now);
    }
    now
}

/// A task was woken: a target task that is not on a CPU begins waiting
/// on its run queue's CPU. Returns `now` if it read the clock.
#[inline(always)]
pub fn on_wakeup(p: *const u8, cell: &mut TaskSpans, mut now: u64) -> u64 {
    if cell.target_verdict != VERDICT_TARGET || cell.split.wait_cpu != 0 {
        return now;
    }
    let (cpu_f, on_cpu_f) = (field!(task_cpu), field!(task_on_cpu));
    if cpu_f.size != 4 || on_cpu_f.size != 4 {
        return now;
    }
    // SAFETY: BTF-typed loads from a live task (see `sched::run_delay`).
    let (cpu, on_cpu) = unsafe {
        (
            core::ptr::read_volatile(p.add(cpu_f.offset as usize) as *const u32),
            core::ptr::read_volatile(p.add(on_cpu_f.offset as usize) as *const i32),
        )
    };
    // Woken before it left its CPU (ttwu_runnable): it never waited.
    if on_cpu != 0 {
        return now;
    }
    if now == 0 {
        now = now_ns();
    }
    begin_wait(cell, cpu, now);
    now
}

/// A task moves to another CPU: a target task queued on the source
/// leaves its count (its wait there ends; the rest is not timed).
#[inline(always)]
pub fn on_migrate(cell: &mut TaskSpans) {
    let waited = cell.split.wait_cpu;
    if waited == 0 {
        return;
    }
    cell.split.wait_cpu = 0;
    if let Some(st) = cpu_state(waited - 1) {
        close_stretch(st, now_ns());
        st.waiters = st.waiters.saturating_sub(1);
    }
    count(Counter::RunnableWaitsCut, 1);
}

#[btf_tracepoint(function = "sched_migrate_task")]
pub fn contention_migrate(ctx: BtfTracePointContext) -> i32 {
    // (struct task_struct *p, int dest_cpu)
    let p: *mut c_void = ctx.arg(0);
    if let Some(cell) = TASK_SPANS.of(p, 0) {
        on_migrate(cell);
    }
    0
}

/// Marks `task`'s cell as a target task's, making the cell; not when
/// the whole machine is the target (every task would get a cell, and
/// nothing is another task).
#[inline(always)]
fn mark_target(task: *mut c_void) {
    let t = target();
    if t.cgroup_id == 0 && t.by_pid == 0 {
        return;
    }
    match TASK_SPANS.of(task, BPF_LOCAL_STORAGE_GET_F_CREATE.into()) {
        Some(cell) => cell.target_verdict = VERDICT_TARGET,
        None => count_rare!(Counter::SpanStartDropped, "target mark"),
    }
}

/// `sched_process_fork`, in the parent: a target task's child is one
/// (it shares the parent's cgroup, or joins a followed process tree).
#[btf_tracepoint(function = "sched_process_fork")]
pub fn contention_fork(ctx: BtfTracePointContext) -> i32 {
    // (struct task_struct *parent, struct task_struct *child)
    let child: *mut c_void = ctx.arg(1);
    if in_target() {
        mark_target(child);
    }
    0
}

/// `sched_process_exec`: the task is current, its cgroup final (the
/// job `run` starts is moved into its box before it execs).
#[btf_tracepoint(function = "sched_process_exec")]
pub fn contention_exec(_ctx: BtfTracePointContext) -> i32 {
    if in_target() {
        // SAFETY: the current task is valid for the program's run.
        let task = unsafe { bpf_get_current_task_btf() };
        mark_target(task.cast());
    }
    0
}
