//! The reclaim sections of the report from the map totals: direct and
//! memcg reclaim stalls, reclaims by allocation order, the processes
//! that stalled most, slab shrinking, throttling, compaction and the
//! folios reclaim wrote out.

use vmtrace_common::{Counter, Hist, Holder, SplitFamily, SplitPart, split_counter};

use crate::{
    kernel::{collect::comm_to_string, totals::KernelTotals},
    model::{histogram::summarize, report::*},
};

/// Stall times and pages reclaimed of one kind of reclaim, with their
/// split at the scheduler when `split` (the sched_split metric ran).
pub(super) fn reclaim(
    totals: &KernelTotals,
    stalls: Hist,
    pages: Counter,
    split: Option<SplitFamily>,
) -> ReclaimReport {
    ReclaimReport {
        stalls: summarize(totals.hist(stalls)),
        pages_reclaimed: totals.counter(pages),
        split: split.map(|f| stall_split(totals, f)),
    }
}

/// One span family's split (probe-ebpf `sched`).
pub(super) fn stall_split(totals: &KernelTotals, family: SplitFamily) -> StallSplit {
    let c = |part| totals.counter(split_counter(family, part));
    StallSplit {
        on_cpu_ns: c(SplitPart::OnCpu),
        runnable_ns: c(SplitPart::Runnable),
        blocked_ns: c(SplitPart::Blocked),
        iowait_ns: c(SplitPart::Iowait),
        wall_ns: c(SplitPart::Wall),
        run_delay_ns: c(SplitPart::RunDelay),
        preempt_wake_ns: c(SplitPart::PreemptWake),
    }
}

/// The target's I/O-wait sleeps (probe-ebpf `sched`).
pub(super) fn io_waits(totals: &KernelTotals) -> IoWaitReport {
    IoWaitReport {
        waits: totals.counter(Counter::IoWaits),
        total_ns: totals.counter(Counter::IoWaitNs),
    }
}

/// The target's memory-stall sleeps outside the spans (probe-ebpf
/// `sched`).
pub(super) fn memstall_sleeps(totals: &KernelTotals) -> IoWaitReport {
    IoWaitReport {
        waits: totals.counter(Counter::MemstallSleeps),
        total_ns: totals.counter(Counter::MemstallSleepNs),
    }
}

/// Who held the CPU while the target waited (probe-ebpf `contention`).
pub(super) fn runnable(totals: &KernelTotals) -> RunnableReport {
    let c = |h: Holder| totals.counter(h.counter());
    RunnableReport {
        behind_job_ns: c(Holder::Job),
        behind_kswapd_ns: c(Holder::Kswapd),
        behind_kcompactd_ns: c(Holder::Kcompactd),
        behind_kthreads_ns: c(Holder::Kthreads),
        behind_others_ns: c(Holder::Others),
        behind_idle_ns: c(Holder::Idle),
        waits: totals.counter(Counter::RunnableWaits),
        cut: totals.counter(Counter::RunnableWaitsCut),
    }
}

/// Slab shrinker calls and the objects they freed.
pub(super) fn slab_shrink(totals: &KernelTotals) -> SlabReport {
    SlabReport {
        calls: summarize(totals.hist(Hist::SlabShrink)),
        objects_freed: totals.counter(Counter::SlabFreed),
    }
}

/// Target compaction runs, and all tasks' count; their split when
/// `split`.
pub(super) fn compaction(totals: &KernelTotals, split: bool) -> CompactionReport {
    CompactionReport {
        runs: summarize(totals.hist(Hist::Compaction)),
        all_tasks: totals.counter(Counter::CompactionsAll),
        split: split.then(|| stall_split(totals, SplitFamily::Compaction)),
    }
}

/// The folios reclaim wrote out, anon and file.
pub(super) fn swap_out(totals: &KernelTotals) -> SwapOutReport {
    SwapOutReport {
        anon_folios: totals.counter(Counter::WriteFolioAnon),
        file_folios: totals.counter(Counter::WriteFolioFile),
    }
}

/// Target reclaims per allocation order, per context.
pub(super) fn order_rows(totals: &KernelTotals) -> Vec<OrderRow> {
    totals
        .order
        .iter()
        .map(|(c, counts)| OrderRow {
            context: *c,
            counts: counts.clone(),
        })
        .collect()
}

/// The 10 processes that stalled longest in reclaim (direct + memcg).
pub(super) fn top_stallers(totals: &KernelTotals) -> Vec<StallerReport> {
    let mut stallers: Vec<StallerReport> = totals
        .stallers
        .iter()
        .map(|(pid, s)| StallerReport {
            pid: *pid,
            comm: comm_to_string(&s.comm),
            target: s.stalls.target != 0,
            direct_stalls: s.stalls.direct_count,
            direct_ns: s.stalls.direct_ns,
            memcg_stalls: s.stalls.memcg_count,
            memcg_ns: s.stalls.memcg_ns,
        })
        .collect();
    stallers.sort_by_key(|s| std::cmp::Reverse(s.direct_ns + s.memcg_ns));
    stallers.truncate(10);
    stallers
}

/// Reclaim throttling: delays, events per reason bit, all tasks' count.
pub(super) fn throttle(totals: &KernelTotals) -> ThrottleReport {
    let r = |i: usize| totals.throttle_reasons.get(i).copied().unwrap_or(0);
    ThrottleReport {
        delays: summarize(totals.hist(Hist::Throttle)),
        writeback: r(0),
        isolated: r(1),
        noprogress: r(2),
        congested: r(3),
        all_tasks: totals.counter(Counter::ThrottledAll),
    }
}
