//! The page-fault sections of the report from the map totals: fault
//! counts, faults per process at exit with the kernel's delay
//! accounting beside them, and fault latency with time per process.

use crate::kernel::probes::MetricId;
use vmtrace_common::{Counter, Hist};

use crate::{
    kernel::collect::{KernelTotals, comm_to_string},
    model::{histogram::summarize, report::*},
};

impl RunReport {
    /// Fills the fault sections (and delay accounting) whose metrics ran.
    pub(super) fn add_faults(&mut self, totals: &KernelTotals, enabled: &dyn Fn(MetricId) -> bool) {
        if enabled(MetricId::MajorFault) {
            self.faults.major_all = Some(totals.counter(Counter::MajorFaultsAll));
            self.faults.major_target = Some(totals.counter(Counter::MajorFaultsTarget));
        }
        if enabled(MetricId::KernelFaults) {
            self.faults.kernel_mode_target = Some(totals.counter(Counter::KernelFaultsTarget));
        }
        if enabled(MetricId::ProcessFaults) {
            self.delays = Some(delays(totals));
            self.faults.processes = Some(process_faults(totals));
        }
        if enabled(MetricId::FaultLatency) {
            self.faults.minor_target = Some(totals.counter(Counter::MinorFaultsTarget));
            self.faults.minor_latency = Some(summarize(totals.hist(Hist::MinorFault)));
            self.faults.major_latency = Some(summarize(totals.hist(Hist::MajorFault)));
            self.faults.process_time = Some(fault_times(totals));
        }
    }
}

/// The target threads' delays at exit, as the eBPF side summed them
/// (values longer than their thread lived dropped and counted apart);
/// `accounting_on` and `already_on` are the session's to set.
fn delays(totals: &KernelTotals) -> DelayReport {
    DelayReport {
        accounting_on: false,
        blkio_ns: totals.counter(Counter::DelayBlkioNs),
        swapin_ns: totals.counter(Counter::DelaySwapinNs),
        freepages_ns: totals.counter(Counter::DelayFreepagesNs),
        thrashing_ns: totals.counter(Counter::DelayThrashingNs),
        compact_ns: totals.counter(Counter::DelayCompactNs),
        cpu_ns: totals.counter(Counter::DelayCpuNs),
        implausible: totals.counter(Counter::DelayImplausible),
        implausible_ns: totals.counter(Counter::DelayImplausibleNs),
        untracked_threads: totals.counter(Counter::DelayUntracked),
        already_on: false,
    }
}

/// Faults summed over every process, with the 10 that took most major
/// (then minor) faults.
fn process_faults(totals: &KernelTotals) -> ProcessFaultTotals {
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
fn fault_times(totals: &KernelTotals) -> Vec<ProcessFaultTime> {
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
