//! The page-fault sections' tables from the map totals: faults per
//! process at exit with the kernel's delay accounting beside them, and
//! the processes that spent longest in faults (--fault-latency). The
//! fault counts and latency histograms are read in `fill` itself.

use vmtrace_common::Counter;

use crate::{
    kernel::{collect::comm_to_string, totals::KernelTotals},
    model::report::*,
};

/// The target threads' delays at exit, as the eBPF side summed them
/// (values longer than their thread lived dropped and counted apart);
/// `accounting_on`: kernel.task_delayacct was on for the window,
/// `already_on`: before it too.
pub(super) fn delays(totals: &KernelTotals, accounting_on: bool, already_on: bool) -> DelayReport {
    DelayReport {
        accounting_on,
        blkio_ns: totals.counter(Counter::DelayBlkioNs),
        swapin_ns: totals.counter(Counter::DelaySwapinNs),
        freepages_ns: totals.counter(Counter::DelayFreepagesNs),
        thrashing_ns: totals.counter(Counter::DelayThrashingNs),
        compact_ns: totals.counter(Counter::DelayCompactNs),
        wpcopy_ns: totals.counter(Counter::DelayWpcopyNs),
        irq_ns: totals.counter(Counter::DelayIrqNs),
        cpu_ns: totals.counter(Counter::DelayCpuNs),
        implausible: totals.counter(Counter::DelayImplausible),
        implausible_ns: totals.counter(Counter::DelayImplausibleNs),
        untracked_threads: totals.counter(Counter::DelayUntracked),
        already_on,
    }
}

/// Faults summed over every process, with the 10 that took most major
/// (then minor) faults.
pub(super) fn process_faults(totals: &KernelTotals) -> ProcessFaultTotals {
    let mut top: Vec<ProcessFaults> = totals
        .processes
        .iter()
        .map(|(pid, p)| ProcessFaults {
            pid: *pid,
            comm: comm_to_string(&p.comm),
            threads: p.threads,
            minor: p.min_flt,
            major: p.maj_flt,
        })
        .collect();
    let totals_row = ProcessFaultTotals {
        processes: top.len() as u64,
        threads: top.iter().map(|p| p.threads).sum(),
        minor: top.iter().map(|p| p.minor).sum(),
        major: top.iter().map(|p| p.major).sum(),
        top: Vec::new(),
    };
    top.sort_by_key(|p| std::cmp::Reverse((p.major, p.minor)));
    top.truncate(10);
    ProcessFaultTotals { top, ..totals_row }
}

/// The 10 processes that spent longest in faults, named from the
/// per-process fault table.
pub(super) fn fault_times(totals: &KernelTotals) -> Vec<ProcessFaultTime> {
    let mut times: Vec<ProcessFaultTime> = totals
        .process_fault_time
        .iter()
        .map(|(pid, t)| ProcessFaultTime {
            pid: *pid,
            comm: totals
                .processes
                .iter()
                .find(|(p, _)| p == pid)
                .map(|(_, p)| comm_to_string(&p.comm))
                .unwrap_or_default(),
            minor: t.minor,
            minor_ns: t.minor_ns,
            major: t.major,
            major_ns: t.major_ns,
            max_ns: t.max_ns,
        })
        .collect();
    times.sort_by_key(|t| std::cmp::Reverse(t.minor_ns + t.major_ns));
    times.truncate(10);
    times
}
