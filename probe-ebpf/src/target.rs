//! Following a process tree (`attach --pid/--comm`): every process a
//! target process forks becomes a target, from its first instruction, and
//! leaves the set when it exits. Userspace seeds `TARGET_PIDS` with the
//! processes present at attach time.

use aya_ebpf::{macros::tracepoint, programs::TracePointContext};
use vmtrace_common::Counter;

use crate::{
    rare::count_rare,
    shared::{TARGET_PIDS, count, current_tid, field, in_target, target, tracepoint_field},
    task::TaskSpans,
};

/// `sched:sched_process_fork`, run in the parent: a target's child (a
/// process, or a thread until it exits) joins the target.
#[tracepoint]
pub fn target_fork(ctx: TracePointContext) -> u32 {
    if target().by_pid == 0 {
        return 0;
    }
    let tgid = (aya_ebpf::helpers::bpf_get_current_pid_tgid() >> 32) as u32;
    // SAFETY: a lookup whose value is not kept.
    if unsafe { TARGET_PIDS.get(&tgid) }.is_none() {
        return 0;
    }
    let child = tracepoint_field(&ctx, field!(fork_child_pid)) as u32;
    if child == 0 {
        return 0;
    }
    if TARGET_PIDS.insert(&child, &1, 0).is_err() {
        count_rare!(Counter::TargetPidsFull, "TARGET_PIDS full, child", child);
    } else {
        count(Counter::TargetForks, 1);
    }
    0
}

/// `sched:sched_process_exit`: an exiting thread leaves the set (the
/// group leader takes its process with it).
#[tracepoint]
pub fn target_exit(_ctx: TracePointContext) -> u32 {
    if target().by_pid != 0 {
        let _ = TARGET_PIDS.remove(&current_tid());
    }
    0
}

/// `in_target` for a reclaim's begin, cached in the task's cell: the
/// verdict is kept with the serial number of the cgroup it was asked
/// for, and asked again only when the task's cgroup is another one.
/// The kernel's answer (`bpf_get_current_ancestor_cgroup_id`) reads the
/// target's ancestor and its kernfs node, lines cold when a task comes
/// from user space into reclaim (~30 ns a begin, docs/BENCHMARKS.md);
/// the serial number is two pointers away, through the css_set that
/// PSI's memstall entry has just read. A css's serial number is unique
/// and never reused (kernel/cgroup/cgroup.c, `css_serial_nr_next++`),
/// so a cgroup freed and another made at its address cannot inherit
/// a verdict. Only for a cgroup target: a process target changes with
/// forks and exits, so it is asked each time; so is every task where
/// BTF lacks a member of the key (it reads 0).
#[inline(always)]
pub fn in_target_cached(task: *const u8, spans: &mut TaskSpans) -> bool {
    let t = target();
    if t.by_pid != 0 || t.cgroup_id == 0 {
        return in_target();
    }
    let serial = cgroup_serial(task);
    if serial != 0 && spans.target_serial == serial && spans.target_verdict != 0 {
        return spans.target_verdict == 2;
    }
    let verdict = in_target();
    spans.target_serial = serial;
    spans.target_verdict = 1 + verdict as u8;
    verdict
}

/// `task->cgroups->dfl_cgrp->self.serial_nr`: plain loads from a BTF
/// pointer (as `sched::run_delay`), 0 where BTF lacks a member. The
/// root cgroup's serial number is 0 as well: its tasks are asked each
/// time.
#[inline(always)]
fn cgroup_serial(task: *const u8) -> u64 {
    let (cgroups, dfl, own, serial) = (
        field!(task_cgroups),
        field!(css_set_dfl_cgrp),
        field!(cgroup_self),
        field!(css_serial_nr),
    );
    if cgroups.size != 8 || dfl.size != 8 || own.size != 8 || serial.size != 8 {
        return 0;
    }
    // SAFETY: BTF-typed loads the verifier checks against the running
    // kernel's types; each is JITed as a load that cannot fault.
    unsafe {
        let cset = core::ptr::read_volatile(task.add(cgroups.offset as usize) as *const *const u8);
        if cset.is_null() {
            return 0;
        }
        let cgrp = core::ptr::read_volatile(cset.add(dfl.offset as usize) as *const *const u8);
        if cgrp.is_null() {
            return 0;
        }
        let at = own.offset as usize + serial.offset as usize;
        core::ptr::read_volatile(cgrp.add(at) as *const u64)
    }
}
