//! The job's CPU profile: a sampler on the software CPU clock of every
//! CPU (`PERF_COUNT_SW_CPU_CLOCK` at a fixed frequency, set by
//! userspace) that keeps the kernel stack of the task it interrupted,
//! when that task is a target task, as a count per distinct stack
//! (`PROFILE`, ids in `PROFILE_STACKS`): never a stream. A sample stands
//! for 1/frequency s of that task's CPU time, so samples per stack are
//! seconds on a CPU per kernel path: what the job's system CPU was
//! spent on (reclaim, filling the page cache, copying, faulting).
//!
//! A target task interrupted in user mode has no kernel stack: it is
//! counted in `ProfileUserSamples` without a walk (the interrupted
//! registers' privilege level, `pt_regs.cs`, where BTF shows x86-64's
//! layout; elsewhere the helper finds an empty kernel call chain,
//! -EFAULT), and every kernel sample in `ProfileKernelSamples`, so the
//! user/kernel split of the samples is exact and can be checked
//! against rusage. Inside an open reclaim or compaction span of the
//! task (its `TASK_SPANS` stamps) every kernel sample walks its stack;
//! outside, one in `PROFILE_OUTSIDE_ONE_IN`, at random, walks and
//! counts that many (an unbiased count per stack, for a quarter of the
//! walks from the timer interrupt through the job's kernel path: what
//! that saved is in docs/BENCHMARKS.md); without the registers every
//! sample is walked. Any other stack not kept (a stack-map hash
//! collision or a full table) is counted in `ProfileStacksLost`, with
//! its weight.

use aya_ebpf::{
    EbpfContext as _,
    helpers::generated::bpf_get_prandom_u32,
    macros::{map, perf_event},
    maps::{HashMap, StackTrace},
    programs::{PerfEventContext, tracing::StackIdContext as _},
};
use vmtrace_common::{Counter, MAX_PROFILE_STACKS, PROFILE_OUTSIDE_ONE_IN};

use crate::{
    rare::count_rare,
    shared::{count, field, in_target},
    task::TASK_SPANS,
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

/// x86-64's `pt_regs.cs` offset; the sampler reads the interrupted
/// context's privilege level there only when BTF agrees.
const PT_REGS_CS: u16 = 136;

#[perf_event]
pub fn profile(ctx: PerfEventContext) -> u32 {
    if !in_target() {
        return 0;
    }
    // Whether the task was interrupted in user mode, where the
    // registers say so (None: the walk finds out).
    let user_mode = (field!(pt_regs_cs).offset == PT_REGS_CS).then(|| {
        // SAFETY: the context's registers (bpf_perf_event_data.regs,
        // its first member); the verifier rewrites the read.
        let cs = unsafe { core::ptr::read_volatile((ctx.as_ptr() as *const u64).add(17)) };
        cs & 3 != 0
    });
    let weight = match user_mode {
        Some(true) => {
            count(Counter::ProfileUserSamples, 1);
            return 0;
        }
        Some(false) => {
            count(Counter::ProfileKernelSamples, 1);
            if in_span() {
                1
            } else {
                // SAFETY: a helper with no arguments.
                if u64::from(unsafe { bpf_get_prandom_u32() }) % PROFILE_OUTSIDE_ONE_IN != 0 {
                    return 0;
                }
                PROFILE_OUTSIDE_ONE_IN
            }
        }
        // Without the registers every sample is walked: the walk tells
        // a user-mode sample from a kernel one.
        None => 1,
    };
    match ctx.get_stackid(&PROFILE_STACKS, 0) {
        Err(e) if e == -EFAULT && user_mode.is_none() => {
            count(Counter::ProfileUserSamples, 1);
        }
        found => {
            if user_mode.is_none() {
                count(Counter::ProfileKernelSamples, 1);
            }
            match found {
                Ok(id) => add(id as i32, weight),
                Err(e) => {
                    count(Counter::ProfileStacksLost, weight - 1);
                    count_rare!(Counter::ProfileStacksLost, "PROFILE_STACKS errno", -e);
                }
            }
        }
    }
    0
}

/// Whether the current task is inside a reclaim or compaction span
/// (its stamps: the reclaim pair's, a compaction run's, the way into
/// a stall `entry` times).
#[inline(always)]
fn in_span() -> bool {
    TASK_SPANS.current_if_any().is_some_and(|c| {
        c.reclaim_start_ns != 0 || c.compaction_start_ns != 0 || c.entry.start_ns != 0
    })
}

#[inline(always)]
fn add(id: i32, weight: u64) {
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
        atomic_xadd::<u64, u64, { Relaxed }>(cell, weight);
    }
}
