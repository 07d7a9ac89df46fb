//! Following a process tree (`attach --pid/--comm`): every process a
//! target process forks becomes a target, from its first instruction, and
//! leaves the set when it exits. Userspace seeds `TARGET_PIDS` with the
//! processes present at attach time.

use aya_ebpf::{macros::tracepoint, programs::TracePointContext};
use vmtrace_common::Counter;

use crate::shared::{TARGET_PIDS, count, current_tid, field, target, tracepoint_field};

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
        count(Counter::TargetPidsFull, 1);
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
