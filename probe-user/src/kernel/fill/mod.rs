//! Fills the model's run report from what the kernel side measured: the
//! eBPF maps' totals, the swap layout, the zones, the OOM victims. One
//! function per section of the report, by signal family: reclaim,
//! LRU lists, page faults, kswapd and the zones; here the entry point
//! for the map totals, what was dropped, swap I/O and the OOM victims.

use crate::kernel::probes::MetricId;
use vmtrace_common::{Counter, Hist};

use crate::{
    host::swapdev::SwapLayout,
    kernel::collect::{KernelTotals, comm_to_string},
    model::{histogram::summarize, report::*},
};

mod counters;
mod faults;
mod kswapd;
mod lru;
mod reclaim;
mod swapcause;

impl RunReport {
    /// Fills the eBPF-derived sections; `enabled` says which metrics ran.
    pub fn add_kernel_totals(&mut self, totals: &KernelTotals, enabled: &dyn Fn(MetricId) -> bool) {
        self.add_reclaim(totals, enabled);
        self.add_lru(totals, enabled);
        self.add_faults(totals, enabled);
        self.dropped = dropped(totals);
    }

    pub fn add_swap_io(&mut self, totals: &KernelTotals, layout: &SwapLayout) {
        self.swap_io = Some(SwapIoReport {
            areas: layout.areas.clone(),
            truncated: layout.truncated,
            write: summarize(totals.hist(Hist::SwapWrite)),
            write_bytes: totals.counter(Counter::SwapWriteSectors) * 512,
            read: summarize(totals.hist(Hist::SwapRead)),
            read_bytes: totals.counter(Counter::SwapReadSectors) * 512,
        });
    }

    /// Adds the OOM victims read from the ring buffer; `start_ns` is the
    /// CLOCK_MONOTONIC time the command started. `exited` holds the
    /// target processes seen exiting (process-exit probe; None when it
    /// did not run): a victim among them was the command's.
    pub fn add_oom_victims(
        &mut self,
        victims: &[vmtrace_common::OomVictim],
        start_ns: u64,
        exited: Option<&[u32]>,
    ) {
        self.oom_victims = Some(
            victims
                .iter()
                .map(|v| OomVictimReport {
                    time_s: v.time_ns.saturating_sub(start_ns) as f64 / 1e9,
                    pid: v.pid,
                    comm: comm_to_string(&v.comm),
                    target: exited.is_some_and(|e| e.contains(&v.pid)),
                    victim_known: exited.is_some(),
                    invoked_by_target: v.target != 0,
                    total_vm_kb: v.total_vm_kb,
                    anon_rss_kb: v.anon_rss_kb,
                    file_rss_kb: v.file_rss_kb,
                    shmem_rss_kb: v.shmem_rss_kb,
                })
                .collect(),
        );
    }
}

/// What the kernel side could not account for: events dropped on full
/// maps or without a start, and rows evicted from full tables (inserts
/// counted minus rows still held). Nested-program misses come later.
fn dropped(totals: &KernelTotals) -> Dropped {
    Dropped {
        reclaim_start_map_full: totals.counter(Counter::ReclaimStartDropped),
        reclaim_end_without_begin: totals.counter(Counter::ReclaimEndUnmatched),
        fault_start_map_full: totals.counter(Counter::FaultStartDropped),
        node_out_of_range: totals.counter(Counter::NodeOutOfRange),
        oom_records_lost: totals.counter(Counter::OomRecordsDropped),
        swap_io_map_full: totals.counter(Counter::SwapIoStartDropped),
        swap_io_unpaired: totals.counter(Counter::SwapIoUnpaired),
        evicted: evicted(totals),
        program_misses: Vec::new(),
    }
}

/// (table, rows lost) for each full table that evicted rows.
fn evicted(totals: &KernelTotals) -> Vec<(String, u64)> {
    [
        (
            "reclaim stallers",
            Counter::StallerInserts,
            totals.stallers.len(),
        ),
        (
            "process faults",
            Counter::ProcessFaultInserts,
            totals.processes.len(),
        ),
        (
            "process fault time",
            Counter::ProcessTimeInserts,
            totals.process_fault_time.len(),
        ),
        (
            "kswapd wakers",
            Counter::WakerInserts,
            totals.kswapd_wakers.len(),
        ),
    ]
    .into_iter()
    .filter_map(|(name, inserts, held)| {
        let lost = totals.counter(inserts).saturating_sub(held as u64);
        (lost > 0).then(|| (name.to_string(), lost))
    })
    .collect()
}
