//! Page faults. Counting is cheap: a perf_event program on the software
//! event PAGE_FAULTS_MAJ (raised by the kernel at the end of
//! handle_mm_fault, only for major faults) counts every major fault and the
//! target's.
//!
//! Fault latency (`--fault-latency`, off by default: it costs ~20% of a
//! minor fault here, see ../shared/FACTS.md) stamps the task at the
//! `page_fault_user` tracepoint (tp_btf: called directly, no perf buffer
//! copy) and closes the stamp from the PAGE_FAULTS_MIN/MAJ programs.

use aya_ebpf::{
    macros::{btf_tracepoint, map, perf_event},
    maps::LruHashMap,
    programs::{BtfTracePointContext, PerfEventContext},
};
use vmtrace_common::{Counter, Hist, MAX_TASKS_IN_FAULT};

use crate::shared::{count, current_tid, in_target, now_ns, record};

/// Start of the fault each target thread is in (0 = none). LRU, so that
/// threads that exit mid-fault cannot fill it.
#[map]
static FAULT_START: LruHashMap<u32, u64> = LruHashMap::with_max_entries(MAX_TASKS_IN_FAULT, 0);

#[perf_event]
pub fn major_fault(_ctx: PerfEventContext) -> u32 {
    count(Counter::MajorFaultsAll, 1);
    if in_target() {
        count(Counter::MajorFaultsTarget, 1);
        close(Hist::MajorFault);
    }
    0
}

/// Attached only with fault latency on.
#[perf_event]
pub fn minor_fault(_ctx: PerfEventContext) -> u32 {
    if in_target() {
        count(Counter::MinorFaultsTarget, 1);
        close(Hist::MinorFault);
    }
    0
}

/// Attached only with fault latency on.
#[btf_tracepoint(function = "page_fault_user")]
pub fn page_fault_user(_ctx: BtfTracePointContext) -> i32 {
    if !in_target() {
        return 0;
    }
    let tid = current_tid();
    let now = now_ns();
    match FAULT_START.get_ptr_mut(&tid) {
        // SAFETY: the entry belongs to the current thread.
        Some(start) => unsafe { *start = now },
        None => {
            if FAULT_START.insert(&tid, &now, 0).is_err() {
                count(Counter::FaultStartDropped, 1);
            }
        }
    }
    0
}

/// Ends the current thread's fault, if one was stamped.
#[inline(always)]
fn close(h: Hist) {
    if let Some(start) = FAULT_START.get_ptr_mut(&current_tid()) {
        // SAFETY: the entry belongs to the current thread.
        let started = unsafe { *start };
        if started != 0 {
            record(h, now_ns().saturating_sub(started));
            // SAFETY: as above.
            unsafe { *start = 0 };
        }
    }
}
