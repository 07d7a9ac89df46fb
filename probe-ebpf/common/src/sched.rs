//! The scheduler's split of span wall time (families, parts, totals, their
//! counters) and the I/O-wait sleep table.

use crate::{Counter, ReclaimContext};

/// A span family whose wall time `sched` splits.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitFamily {
    DirectReclaim = 1,
    MemcgReclaim = 2,
    Compaction = 3,
}

impl SplitFamily {
    pub const ALL: [SplitFamily; 3] = [
        SplitFamily::DirectReclaim,
        SplitFamily::MemcgReclaim,
        SplitFamily::Compaction,
    ];
    pub const COUNT: u32 = Self::ALL.len() as u32;

    /// The family of a direct or memcg reclaim's stall.
    #[inline(always)]
    pub const fn of_reclaim(context: ReclaimContext) -> SplitFamily {
        match context {
            ReclaimContext::Memcg => SplitFamily::MemcgReclaim,
            _ => SplitFamily::DirectReclaim,
        }
    }

    /// The family's slot in `SplitTotals` arrays (`TaskSpans::split`,
    /// `SPLIT_LIVE`).
    #[inline(always)]
    pub const fn index(self) -> usize {
        self as usize - 1
    }
}

/// A task's split spans of one family, summed over its life: each part
/// only grows (`sched` adds a stretch when it ends; a span's end adds
/// its last stretch on the CPU and its wall time). A span's own parts
/// are the difference across it. The counters get a thread's totals at
/// its exit; live threads' are summed into `SPLIT_LIVE` by the
/// collector's task iterator.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SplitTotals {
    pub on_cpu_ns: u64,
    pub runnable_ns: u64,
    pub blocked_ns: u64,
    pub iowait_ns: u64,
    pub wall_ns: u64,
    pub run_delay_ns: u64,
    /// Of `runnable_ns`, the waits from a wake-up that preempted the
    /// CPU's task (its run queue then skips its next clock update:
    /// wakeup_preempt's rq_clock_skip_update) to the switch-in. The
    /// kernel's run_delay leaves most of such a wait out (the switch-in
    /// reads the clock as of the wake-up), so run_delay is at least
    /// runnable minus this (and may read a little above runnable:
    /// `sched`'s header).
    pub preempt_wake_ns: u64,
}

impl SplitTotals {
    /// `part`'s value.
    pub const fn part(&self, part: SplitPart) -> u64 {
        match part {
            SplitPart::OnCpu => self.on_cpu_ns,
            SplitPart::Runnable => self.runnable_ns,
            SplitPart::Blocked => self.blocked_ns,
            SplitPart::Iowait => self.iowait_ns,
            SplitPart::Wall => self.wall_ns,
            SplitPart::RunDelay => self.run_delay_ns,
            SplitPart::PreemptWake => self.preempt_wake_ns,
        }
    }
}

/// One part of a split span's time (the order of the counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitPart {
    OnCpu,
    Runnable,
    Blocked,
    Iowait,
    Wall,
    RunDelay,
    PreemptWake,
}

impl SplitPart {
    pub const ALL: [SplitPart; 7] = [
        SplitPart::OnCpu,
        SplitPart::Runnable,
        SplitPart::Blocked,
        SplitPart::Iowait,
        SplitPart::Wall,
        SplitPart::RunDelay,
        SplitPart::PreemptWake,
    ];
}

/// The counter holding `part` of `family`'s spans.
#[inline(always)]
pub const fn split_counter(family: SplitFamily, part: SplitPart) -> Counter {
    use Counter::*;
    use SplitPart::*;
    match family {
        SplitFamily::DirectReclaim => match part {
            OnCpu => DirectReclaimOnCpuNs,
            Runnable => DirectReclaimRunnableNs,
            Blocked => DirectReclaimBlockedNs,
            Iowait => DirectReclaimIowaitNs,
            Wall => DirectReclaimSplitWallNs,
            RunDelay => DirectReclaimRunDelayNs,
            PreemptWake => DirectReclaimPreemptWakeNs,
        },
        SplitFamily::MemcgReclaim => match part {
            OnCpu => MemcgReclaimOnCpuNs,
            Runnable => MemcgReclaimRunnableNs,
            Blocked => MemcgReclaimBlockedNs,
            Iowait => MemcgReclaimIowaitNs,
            Wall => MemcgReclaimSplitWallNs,
            RunDelay => MemcgReclaimRunDelayNs,
            PreemptWake => MemcgReclaimPreemptWakeNs,
        },
        SplitFamily::Compaction => match part {
            OnCpu => CompactionOnCpuNs,
            Runnable => CompactionRunnableNs,
            Blocked => CompactionBlockedNs,
            Iowait => CompactionIowaitNs,
            Wall => CompactionSplitWallNs,
            RunDelay => CompactionRunDelayNs,
            PreemptWake => CompactionPreemptWakeNs,
        },
    }
}

/// Most target I/O-wait sleeps open at once (one per sleeping thread).
pub const MAX_IO_WAITS: u32 = 16384;
