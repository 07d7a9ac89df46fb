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
//! ends the wait for a CPU. Each stretch, when it ends, is added to the
//! task's running totals of the span's family (`SplitTotals`, in the
//! task's own cell); the span's end (`close`) adds the last stretch on
//! the CPU and the span's wall time there. So a span's end writes only
//! the line its stamp is on: the totals reach the counters at the
//! thread's exit (`reclaim::stall_thread_exit`) and, for live threads,
//! through the collector's task iterator (`reclaim::stall_flush`, into
//! `SPLIT_LIVE`). A span's own parts are the totals' change across it
//! (`entry` books them per way into reclaim). A thread that exits while
//! the iterator runs may be counted in both for that one read; at the
//! end of a run's window every job thread has exited and the counters
//! alone hold it all.
//!
//! The cross-check of the runnable part is the kernel's own
//! `sched_info.run_delay`, summed over the spans the same way. run_delay
//! grows only when the task is switched in (sched_info_arrive, from
//! prepare_task_switch, after trace_sched_switch) or dequeued while
//! queued (sched_info_dequeue): never while it runs. So its value at a
//! span's open equals its value at the span's first switch-out, and its
//! value at the span's close equals its value at the task's next
//! switch-out: `sched_switch` reads it at both (prev's sched_info line,
//! which the scheduler itself is touching), and a span that never left
//! the CPU changed it by 0. Neither end of a span reads a cold line of
//! task_struct (docs/BENCHMARKS.md).
//!
//! run_delay is timed on the run queue's clock, which misses part of
//! one kind of wait: a wake-up that preempts the CPU's task
//! (wakeup_preempt: resched_curr, then rq_clock_skip_update, on 6.1,
//! 6.12 and 6.18) has the next __schedule skip its clock update, so the
//! woken task's switch-in reads the clock as of its wake-up (or of the
//! last tick since) and run_delay gains ~0 for a wait that lasted until
//! the preempted task reached a preemption point: 128-256 us each,
//! 0.39-0.49 s in all over the reclaim kernel test's memhog beside two
//! CPU hogs, 2-3% of its wake-ups (bpftrace beside it). Such waits are
//! booked also as `preempt_wake_ns`: those that began at a wake-up
//! after which the woken task's run queue had RQCF_REQ_SKIP set (state
//! WOKEN; `clock_update_skipped`). The kernel misses such a wait from
//! its run queue's last clock update (the wake-up's, or a tick's since)
//! to its switch-in, so its run_delay change is at least runnable
//! minus preempt_wake. It can also read above runnable: the same
//! skipped update stamps a task preempted by such a wake-up as queued
//! at the stale clock (sched_info_depart), and a wake-up's enqueue,
//! which stamps last_queued, runs before sched_wakeup. memhog --threads
//! 4 in a 128 MiB box: runnable 1443 ms, preempt_wake 160, run_delay
//! 1495; the kernel test allows 2% of the wall time + 5 ms each way.
//!
//! The I/O waits: a target task switched out blocked with `in_iowait`
//! is stamped in its own cell (`Split::sleep_ns`), and its wake-up,
//! which looks the cell up anyway, closes the sleep. A target task with
//! no cell yet (attached to a running job: cells are made at forks,
//! execs and reclaim begins) is stamped in `IO_WAITS` instead (a
//! preallocated hash: no allocation under the run-queue lock, where
//! creating task storage could wake kswapd and deadlock). The hash cost
//! an insert, a lookup and a delete per sleep, ~20k sleeps a qsbench
//! run (docs/BENCHMARKS.md). Memory-stall sleeps likewise (`MEMSTALLS`).
//!
//! Cost: every context switch looks up prev's and next's task storage
//! (no cell: one helper call each) and every wake-up the woken task's;
//! see docs/BENCHMARKS.md.

use core::ffi::c_void;

use aya_ebpf::{
    macros::{btf_tracepoint, map},
    maps::{Array, HashMap},
    programs::BtfTracePointContext,
};
use vmtrace_common::{Counter, MAX_IO_WAITS, SplitFamily, SplitPart, SplitTotals, split_counter};

use crate::{
    contention,
    rare::count_rare,
    shared::{count_all, field, in_target, now_ns},
    task::{Split, TASK_SPANS, TaskSpans},
};

/// What a task with an open split is doing since `mark_ns` (WOKEN:
/// runnable since a wake-up that left its run queue's next clock update
/// skipped; RUNNABLE: any other wake-up, or switched out runnable).
const ON_CPU: u32 = 0;
const RUNNABLE: u32 = 1;
const BLOCKED: u32 = 2;
const IOWAIT: u32 = 3;
const WOKEN: u32 = 4;

/// `Split::sleep_kind`: the open sleep outside the spans.
const SLEEP_IO: u32 = 1;
const SLEEP_MEMSTALL: u32 = 2;

/// Open I/O-wait sleeps of target threads: `task_struct` address ->
/// start. Keyed by the address so that the wake-up needs no read of the
/// task; the entry goes at that wake-up, and a sleeping task cannot be
/// freed, so no address is reused while its entry lives.
#[map]
static IO_WAITS: HashMap<u64, u64> = HashMap::with_max_entries(MAX_IO_WAITS, 0);

/// Open memory-stall sleeps of target threads outside reclaim and
/// compaction, as `IO_WAITS`.
#[map]
static MEMSTALLS: HashMap<u64, u64> = HashMap::with_max_entries(MAX_IO_WAITS, 0);

/// Live threads' split totals per family (`SplitFamily::index`),
/// summed by the collector's task iterator (`add_live`); userspace
/// zeroes it before each run of the iterator.
#[map]
static SPLIT_LIVE: Array<SplitTotals> = Array::with_max_entries(SplitFamily::COUNT, 0);

/// A thread's totals go to the counters (it is exiting; its pending
/// run_delay change is read now, from `task`, a BTF pointer).
#[inline(always)]
pub fn fold_at_exit(s: &mut Split, task: *const u8) {
    settle_run_delay(s, task);
    for family in SplitFamily::ALL {
        let Some(t) = s.totals.get_mut(family.index()).map(core::mem::take) else {
            continue;
        };
        if t.wall_ns == 0 {
            continue;
        }
        let at = |part| (split_counter(family, part), t.part(part));
        count_all([
            at(SplitPart::OnCpu),
            at(SplitPart::Runnable),
            at(SplitPart::Blocked),
            at(SplitPart::Iowait),
            at(SplitPart::Wall),
            at(SplitPart::RunDelay),
            at(SplitPart::PreemptWake),
        ]);
    }
}

/// A live thread's totals are added to `SPLIT_LIVE` (the collector's
/// task iterator; the totals stay: they only grow, and the thread's
/// exit moves them to the counters). A span open now is not in them
/// yet, nor a closed span's pending run_delay change.
#[inline(always)]
pub fn add_live(s: &Split) {
    for family in SplitFamily::ALL {
        let Some(t) = s.totals.get(family.index()) else {
            continue;
        };
        if t.wall_ns == 0 && t.on_cpu_ns == 0 {
            continue;
        }
        if let Some(live) = SPLIT_LIVE.get_ptr_mut(family.index() as u32) {
            // SAFETY: a live map value; the iterator runs on one CPU
            // at a time (the reading file's).
            unsafe {
                (*live).on_cpu_ns += t.on_cpu_ns;
                (*live).runnable_ns += t.runnable_ns;
                (*live).blocked_ns += t.blocked_ns;
                (*live).iowait_ns += t.iowait_ns;
                (*live).wall_ns += t.wall_ns;
                (*live).run_delay_ns += t.run_delay_ns;
                (*live).preempt_wake_ns += t.preempt_wake_ns;
            }
        }
    }
}

/// `task`'s `sched_info.run_delay` (0 where BTF lacks it).
///
/// `task` is a BTF pointer (`bpf_get_current_task_btf`, or a tp_btf
/// argument), so this is a plain load: the offsets are constants to the
/// verifier (frozen .rodata, see `field!`), which checks the access
/// against the running kernel's BTF and has it JITed as a load that
/// cannot fault (BPF_PROBE_MEM). bpf_probe_read_kernel, two helper calls
/// with the task lookup, cost more than the rest of a reclaim's end.
#[inline(always)]
pub fn run_delay(task: *const u8) -> u64 {
    let (info, delay) = (field!(task_sched_info), field!(sched_info_run_delay));
    if info.size == 0 || delay.size != 8 {
        return 0;
    }
    let at = info.offset as usize + delay.offset as usize;
    // SAFETY: a BTF-typed load from a live task, checked as above.
    unsafe { core::ptr::read_volatile(task.add(at) as *const u64) }
}

/// Whether the run queue `task` (a BTF pointer, as in `run_delay`) was
/// just woken onto will skip its next clock update (RQCF_REQ_SKIP in
/// `rq.clock_update_flags`, reached by `task->se.cfs_rq->rq`; false
/// where BTF lacks a member): set by the wake-up's wakeup_preempt when
/// it preempted the CPU's task, cleared by the next __schedule.
#[inline(always)]
fn clock_update_skipped(task: *const u8) -> bool {
    const RQCF_REQ_SKIP: u32 = 0x01;
    let (se, cfs_rq, rq, flags) = (
        field!(task_se),
        field!(sched_entity_cfs_rq),
        field!(cfs_rq_rq),
        field!(rq_clock_update_flags),
    );
    if se.size == 0 || cfs_rq.size != 8 || rq.size != 8 || flags.size != 4 {
        return false;
    }
    // SAFETY: BTF-typed loads, as in `run_delay`: each pointer read is
    // typed by the verifier from BTF and each load through it cannot
    // fault (BPF_PROBE_MEM).
    unsafe {
        let at = se.offset as usize + cfs_rq.offset as usize;
        let c = core::ptr::read_volatile(task.add(at) as *const u64) as *const u8;
        if c.is_null() {
            return false;
        }
        let r = core::ptr::read_volatile(c.add(rq.offset as usize) as *const u64) as *const u8;
        if r.is_null() {
            return false;
        }
        core::ptr::read_volatile(r.add(flags.offset as usize) as *const u32) & RQCF_REQ_SKIP != 0
    }
}

/// Whether `task` (a BTF pointer, as in `run_delay`) is in an I/O wait
/// (`in_iowait`, a bitfield: `size & 7` is its bit in the byte at
/// `offset`; false where BTF lacks it).
#[inline(always)]
fn in_iowait(task: *const u8) -> bool {
    bit(task, field!(task_in_iowait))
}

/// Whether `task` is in a memory stall (`in_memstall`, as `in_iowait`).
#[inline(always)]
fn in_memstall(task: *const u8) -> bool {
    bit(task, field!(task_in_memstall))
}

/// A one-bit bitfield of `task` (`size & 7`: its bit in the byte at
/// `offset`); false where BTF lacks it.
#[inline(always)]
fn bit(task: *const u8, f: vmtrace_common::Field) -> bool {
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
    split.mark_ns = now;
    split.state = ON_CPU;
    split.family = family as u32;
    split.switched = 0;
}

/// Closes the current task's split for a span of `family` that began at
/// `start_ns`: its last stretch on the CPU and its wall time go to the
/// family's totals.
#[inline(always)]
pub fn close(split: &mut Split, family: SplitFamily, start_ns: u64, now: u64) {
    if split.mark_ns == 0 || split.family != family as u32 {
        return;
    }
    let on_cpu = now.saturating_sub(split.mark_ns);
    split.mark_ns = 0;
    if split.switched != 0 {
        split.pending = 1;
        split.pending_family = family as u32;
    }
    if let Some(t) = split.totals_of(family as u32) {
        t.on_cpu_ns += on_cpu;
        t.wall_ns += now.saturating_sub(start_ns);
    }
}

/// Ends the stretch since the mark in `state`, booking it; the task is
/// now in `next`.
#[inline(always)]
fn advance(s: &mut Split, next: u32, now: u64) {
    let took = now.saturating_sub(s.mark_ns);
    let state = s.state;
    if let Some(t) = s.totals_of(s.family) {
        match state {
            ON_CPU => t.on_cpu_ns += took,
            RUNNABLE | WOKEN => t.runnable_ns += took,
            IOWAIT => {
                t.blocked_ns += took;
                t.iowait_ns += took;
            }
            _ => t.blocked_ns += took,
        }
    }
    s.mark_ns = now;
    s.state = next;
}

/// At prev's switch-out: the run_delay change of its last closed span,
/// and the value the open one started from (see the module's header).
#[inline(always)]
fn read_run_delay(s: &mut Split, prev: *const u8) {
    let open_unread = s.mark_ns != 0 && s.switched == 0;
    if s.pending == 0 && !open_unread {
        return;
    }
    let now = run_delay(prev);
    if s.pending != 0 {
        s.pending = 0;
        let base = s.run_delay_ns;
        if let Some(t) = s.totals_of(s.pending_family) {
            t.run_delay_ns += now.saturating_sub(base);
        }
    }
    if open_unread {
        s.run_delay_ns = now;
        s.switched = 1;
    }
}

/// Resolves a closed span's pending run_delay change (the thread is
/// exiting: there is no next switch-out to read it at).
#[inline(always)]
pub fn settle_run_delay(s: &mut Split, task: *const u8) {
    if s.pending != 0 {
        s.pending = 0;
        let base = s.run_delay_ns;
        let now = run_delay(task);
        if let Some(t) = s.totals_of(s.pending_family) {
            t.run_delay_ns += now.saturating_sub(base);
        }
    }
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
    let mut prev_cell = TASK_SPANS.of(prev, 0);
    let mut next_cell = TASK_SPANS.of(next, 0);
    let mut in_span = false;
    if let Some(spans) = prev_cell.as_deref_mut() {
        read_run_delay(&mut spans.split, prev as *const u8);
        in_span = spans.split.mark_ns != 0;
        if spans.split.mark_ns != 0 {
            now = now_ns();
            let state = match (asleep, iowait) {
                (false, _) => RUNNABLE,
                (true, true) => IOWAIT,
                (true, false) => BLOCKED,
            };
            advance(&mut spans.split, state, now);
        }
    }
    // prev is current here: the target filter applies to it. A memory
    // stall outside the spans (which book their own sleeps) is
    // memory.high's penalty; rare, so the target test comes last.
    let sleep = if iowait {
        SLEEP_IO
    } else if asleep && !in_span && in_memstall(prev as *const u8) {
        SLEEP_MEMSTALL
    } else {
        0
    };
    if sleep != 0 {
        let verdict = prev_cell.as_deref().map_or(0, |c| c.target_verdict);
        if verdict == contention::VERDICT_TARGET || in_target() {
            if now == 0 {
                now = now_ns();
            }
            stamp_sleep(prev_cell.as_deref_mut(), prev as u64, sleep, now);
        }
    }
    if let Some(spans) = next_cell.as_deref_mut()
        && spans.split.mark_ns != 0
    {
        if now == 0 {
            now = now_ns();
        }
        if spans.split.state == BLOCKED || spans.split.state == IOWAIT {
            count_rare!(Counter::SplitWakeupMissed);
        }
        // A wait the kernel's run_delay mostly misses (see the module's
        // header).
        if spans.split.state == WOKEN {
            let took = now.saturating_sub(spans.split.mark_ns);
            if let Some(t) = spans.split.totals_of(spans.split.family) {
                t.preempt_wake_ns += took;
            }
        }
        advance(&mut spans.split, ON_CPU, now);
    }
    contention::on_switch(prev as *const u8, prev_cell, next_cell, !asleep, now);
    0
}

/// Stamps the start of a target task's sleep of `kind`: in its cell
/// when it has one, else in the kind's map under its address (`key`).
#[inline(always)]
fn stamp_sleep(cell: Option<&mut TaskSpans>, key: u64, kind: u32, now: u64) {
    if let Some(c) = cell {
        c.split.sleep_kind = kind;
        c.split.sleep_ns = now;
        return;
    }
    if kind == SLEEP_IO {
        if IO_WAITS.insert(&key, &now, 0).is_err() {
            count_rare!(Counter::IoWaitDropped, "IO_WAITS full");
        }
    } else if MEMSTALLS.insert(&key, &now, 0).is_err() {
        count_rare!(Counter::MemstallDropped, "MEMSTALLS full");
    }
}

/// The counters of a sleep of `kind`: sleeps, and their time.
#[inline(always)]
fn sleep_counters(kind: u32) -> (Counter, Counter) {
    if kind == SLEEP_IO {
        (Counter::IoWaits, Counter::IoWaitNs)
    } else {
        (Counter::MemstallSleeps, Counter::MemstallSleepNs)
    }
}

/// Closes the sleep of the task at `key` if `open` holds one: one to
/// `sleeps`, its time to `ns`. Returns `now` if it read the clock.
#[inline(always)]
fn close_sleep(
    open: &HashMap<u64, u64>,
    key: u64,
    mut now: u64,
    (sleeps, ns): (Counter, Counter),
) -> u64 {
    // SAFETY: the value is copied before the entry is removed.
    if let Some(&start) = unsafe { open.get(&key) } {
        let _ = open.remove(&key);
        if now == 0 {
            now = now_ns();
        }
        count_all([(sleeps, 1), (ns, now.saturating_sub(start))]);
    }
    now
}

#[btf_tracepoint(function = "sched_wakeup")]
pub fn sched_wakeup(ctx: BtfTracePointContext) -> i32 {
    // (struct task_struct *p)
    let p: *mut c_void = ctx.arg(0);
    let mut now = 0;
    if let Some(spans) = TASK_SPANS.of(p, 0) {
        if spans.split.mark_ns != 0 && (spans.split.state == BLOCKED || spans.split.state == IOWAIT)
        {
            now = now_ns();
            let next = if clock_update_skipped(p as *const u8) {
                WOKEN
            } else {
                RUNNABLE
            };
            advance(&mut spans.split, next, now);
        }
        now = contention::on_wakeup(p as *const u8, spans, now);
        // The sleep stamped in the cell (the task had one when it slept:
        // a sleeping task's cell is made by no one but itself).
        let kind = core::mem::take(&mut spans.split.sleep_kind);
        if kind != 0 {
            if now == 0 {
                now = now_ns();
            }
            let (sleeps, ns) = sleep_counters(kind);
            let took = now.saturating_sub(spans.split.sleep_ns);
            count_all([(sleeps, 1), (ns, took)]);
            return 0;
        }
    }
    // in_memstall and in_iowait are still set at the wake-up
    // (psi_memstall_leave and io_schedule_finish run once the task runs
    // again): only then can it be in MEMSTALLS or IO_WAITS.
    if in_memstall(p as *const u8) {
        now = close_sleep(&MEMSTALLS, p as u64, now, sleep_counters(SLEEP_MEMSTALL));
    }
    if in_iowait(p as *const u8) {
        close_sleep(&IO_WAITS, p as u64, now, sleep_counters(SLEEP_IO));
    }
    0
}
