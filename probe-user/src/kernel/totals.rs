//! What a read of the eBPF maps gives (`KernelTotals`, summed over
//! CPUs): filled by `collect`, read by the readers of the tables that
//! need more than the map (`entries`, `profile`) and by `fill`.

use vmtrace_common::{
    Counter, Hist, KswapdNode, LruIsolate, LruShrinkActive, LruShrinkInactive, LruType,
    ProcFaultTime, ProcFaults, ReclaimContext, Staller,
};

/// Everything the eBPF maps hold, summed over CPUs.
#[derive(Clone, Debug, Default)]
pub struct KernelTotals {
    /// Bucket counts per [`Hist`], indexed by `Hist as usize`.
    pub hists: Vec<Vec<u64>>,
    /// Per [`Counter`], indexed by `Counter as usize`.
    pub counters: Vec<u64>,
    /// Swap requests issued and not yet completed at the read (their
    /// slots in `SWAP_IO`): count and sectors. At a window's close they
    /// complete after the probes are gone: counted, never timed.
    pub swap_in_flight: (u64, u64),
    /// Non-empty (node, context, type) cells of the inactive LRU table.
    pub lru: Vec<LruRow<LruShrinkInactive>>,
    /// Non-empty cells of the active LRU table.
    pub lru_active: Vec<LruRow<LruShrinkActive>>,
    /// Inactive shrinks per priority (index 0..=12), per context.
    pub priority: Vec<(ReclaimContext, Vec<u64>)>,
    /// Target reclaims per allocation order (last cell: that order and
    /// above), per context; only contexts with any.
    pub order: Vec<(ReclaimContext, Vec<u64>)>,
    /// Per process: stall totals (tgid, record).
    pub stallers: Vec<(u32, Staller)>,
    /// Where the target's reclaims were entered (full reads only; None
    /// when the metric is off).
    pub entries: Option<crate::model::report::ReclaimEntries>,
    /// The job's CPU profile (full reads only; None when it is off).
    pub profile: Option<crate::model::profile::ProfileReport>,
    /// Per node with any kswapd activity: totals, and how long it has been
    /// awake now if it is (ns).
    pub kswapd: Vec<(u32, KswapdNode, Option<u64>)>,
    /// `mm_vmscan_wakeup_kswapd` per (node, zone index).
    pub kswapd_wakeups: Vec<(u32, u32, u64)>,
    /// kswapd wakeups per allocation order (last cell: that and above).
    pub kswapd_wakeup_order: Vec<u64>,
    /// Who woke kswapd (task name, times).
    pub kswapd_wakers: Vec<(String, u64)>,
    /// LRU isolation per (highest zone index, lru list), non-empty cells.
    pub isolate: Vec<(u32, u32, LruIsolate)>,
    /// Pages allocated per (node, zone index) (--page-alloc).
    pub page_alloc: Vec<(u32, u32, u64)>,
    /// `oom:reclaim_retry_zone` per (node, zone index).
    pub retry_zone: Vec<(u32, u32, u64)>,
    /// Fault time per process of the target (--fault-latency).
    pub process_fault_time: Vec<(u32, ProcFaultTime)>,
    /// Page faults per process of the target (tgid, record).
    pub processes: Vec<(u32, ProcFaults)>,
    /// Target throttling events per reason bit (writeback, isolated,
    /// noprogress, congested).
    pub throttle_reasons: Vec<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LruRow<T> {
    pub node: u32,
    pub context: ReclaimContext,
    pub lru: LruType,
    pub totals: T,
}

impl KernelTotals {
    pub fn counter(&self, c: Counter) -> u64 {
        self.counters.get(c as usize).copied().unwrap_or(0)
    }

    pub fn hist(&self, h: Hist) -> &[u64] {
        self.hists.get(h as usize).map_or(&[], Vec::as_slice)
    }
}
