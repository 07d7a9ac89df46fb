//! Where the wall time of a family of spans went at the scheduler (the
//! reclaim stalls', the compaction runs'): probe-ebpf `sched`'s split,
//! beside the kernel's own run_delay.

use serde::{Deserialize, Serialize};

/// Where the wall time of a family of spans (reclaim stalls, compaction
/// runs) of target tasks went, measured at the scheduler: each span's
/// time on a CPU, runnable (woken or preempted, waiting for a CPU) and
/// blocked (asleep), summed over the spans. The programs follow the
/// task at `sched_switch` (switched out: preempted or asleep; switched
/// in) and `sched_wakeup` (asleep -> runnable) while a span is open, on
/// one clock (bpf_ktime_get_ns), so on_cpu + runnable + blocked is each
/// span's wall time when no switch was missed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StallSplit {
    pub on_cpu_ns: u64,
    pub runnable_ns: u64,
    pub blocked_ns: u64,
    /// Of `blocked_ns`: sleeps in an I/O wait (`in_iowait`: io_schedule,
    /// folio and buffer waits for I/O).
    pub iowait_ns: u64,
    /// The spans' wall time, summed (begin to end).
    pub wall_ns: u64,
    /// The kernel's own figure for the runnable part: the change of the
    /// task's `sched_info.run_delay` over each span (kernel/sched/stats.h,
    /// sched_info_arrive), a cross-check of `runnable_ns`.
    pub run_delay_ns: u64,
    /// Of `runnable_ns`: waits from a wake-up that preempted the CPU's
    /// task to the switch-in (a preempting wake-up's latency; the woken
    /// task's run queue had RQCF_REQ_SKIP set after it). The kernel's
    /// run_delay leaves most of these out (the switch-in reads the run
    /// queue's clock as of the wake-up: wakeup_preempt's
    /// rq_clock_skip_update), so `run_delay_ns` is at least
    /// `runnable_ns` minus this (it may read a little above
    /// `runnable_ns`: the same skipped clock update makes a preempted
    /// task's wait start early). 0 in recordings
    /// before it was measured.
    #[serde(default)]
    pub preempt_wake_ns: u64,
}

impl StallSplit {
    /// The parts' sum, which should equal `wall_ns`.
    pub fn parts_ns(&self) -> u64 {
        self.on_cpu_ns + self.runnable_ns + self.blocked_ns
    }
}
