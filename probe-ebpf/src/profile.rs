//! The job's CPU profile: a sampler on the software CPU clock of every
//! CPU (`PERF_COUNT_SW_CPU_CLOCK` at a fixed frequency, set by
//! userspace) that keeps the kernel stack of the task it interrupted,
//! when that task is a target task, as a count per distinct stack
//! (`PROFILE`, ids in `PROFILE_STACKS`): never a stream. A sample stands
//! for 1/frequency s of that task's CPU time, so samples per stack are
//! seconds on a CPU per kernel path: what the job's system CPU was
//! spent on (reclaim, filling the page cache, copying, faulting).
//!
//! A target task interrupted in user mode has no kernel stack (the
//! helper finds an empty kernel call chain: -EFAULT); it is counted in
//! `ProfileUserSamples`, so the user/kernel split of the samples can be
//! checked against rusage. Any other stack not kept (a stack-map hash
//! collision or a full table) is counted in `ProfileStacksLost`.

use aya_ebpf::{
    macros::{map, perf_event},
    maps::{HashMap, StackTrace},
    programs::{PerfEventContext, tracing::StackIdContext as _},
};
use vmtrace_common::{Counter, MAX_PROFILE_STACKS};

use crate::{
    rare::count_rare,
    shared::{count, in_target},
};

/// Kernel stacks of target samples (sized by userspace: 1 entry when
/// the profile is off).
#[map]
static PROFILE_STACKS: StackTrace = StackTrace::with_max_entries(MAX_PROFILE_STACKS, 0);

/// Samples per stack id.
#[map]
static PROFILE: HashMap<i32, u64> = HashMap::with_max_entries(MAX_PROFILE_STACKS, 0);

/// Insert only if absent (include/uapi/linux/bpf.h).
const BPF_NOEXIST: u64 = 1;

/// -EFAULT from bpf_get_stackid: no kernel frames (user mode).
const EFAULT: i32 = 14;

#[perf_event]
pub fn profile(ctx: PerfEventContext) -> u32 {
    if !in_target() {
        return 0;
    }
    match ctx.get_stackid(&PROFILE_STACKS, 0) {
        Ok(id) => add(id as i32),
        Err(e) if e == -EFAULT => count(Counter::ProfileUserSamples, 1),
        Err(e) => count_rare!(Counter::ProfileStacksLost, "PROFILE_STACKS errno", -e),
    }
    0
}

#[inline(always)]
fn add(id: i32) {
    let cell = match PROFILE.get_ptr_mut(&id) {
        Some(cell) => cell,
        None => {
            // Another CPU may have inserted it meanwhile: the lookup
            // below finds that one.
            let _ = PROFILE.insert(&id, &0, BPF_NOEXIST);
            match PROFILE.get_ptr_mut(&id) {
                Some(cell) => cell,
                None => {
                    count_rare!(Counter::ProfileStacksLost, "PROFILE full");
                    return;
                }
            }
        }
    };
    use core::intrinsics::{AtomicOrdering::Relaxed, atomic_xadd};
    // SAFETY: a live, aligned map value, changed only by atomic adds.
    unsafe {
        atomic_xadd::<u64, u64, { Relaxed }>(cell, 1);
    }
}
