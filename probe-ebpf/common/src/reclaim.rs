//! Reclaim: who reclaims (context), the orders and throttle reasons counted,
//! and the per-process stall totals.

/// `mm_vmscan_throttled` reasons (bit numbers of `reason`), in order:
/// VMSCAN_THROTTLE_WRITEBACK, _ISOLATED, _NOPROGRESS, _CONGESTED.
pub const THROTTLE_REASONS: u32 = 4;

/// Who was reclaiming when the LRU was shrunk. Decided in the kernel from
/// the per-task reclaim map (direct/memcg) and the task name (kswapd).
/// In JSON (recordings, reports) it is its name, `kswapd`, `direct`,
/// `memcg` or `other` (serde's snake_case of the variant, held to
/// `name()` by the model's tests); a recording with another reads as
/// corrupt.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "user",
    derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema),
    serde(rename_all = "snake_case")
)]
pub enum ReclaimContext {
    Kswapd = 0,
    Direct = 1,
    Memcg = 2,
    /// Anything else: node reclaim (__node_reclaim) and hibernation's
    /// shrink_all_memory. khugepaged reclaims through try_to_free_pages
    /// (direct) and memory.reclaim through try_to_free_mem_cgroup_pages
    /// (memcg), both inside a span the probes saw begin.
    Other = 3,
}

impl ReclaimContext {
    pub const ALL: [ReclaimContext; 4] = [
        ReclaimContext::Kswapd,
        ReclaimContext::Direct,
        ReclaimContext::Memcg,
        ReclaimContext::Other,
    ];
    pub const COUNT: u32 = Self::ALL.len() as u32;

    pub fn name(self) -> &'static str {
        match self {
            ReclaimContext::Kswapd => "kswapd",
            ReclaimContext::Direct => "direct",
            ReclaimContext::Memcg => "memcg",
            ReclaimContext::Other => "other",
        }
    }

    /// Whether its reclaims' orders are the allocations': memcg reclaim's
    /// tracepoint gives 0 whatever the charge (as `EntryWay::order_known`).
    pub const fn order_known(self) -> bool {
        match self {
            ReclaimContext::Memcg => false,
            ReclaimContext::Kswapd | ReclaimContext::Direct | ReclaimContext::Other => true,
        }
    }
}

/// Allocation orders tracked one by one; higher ones share the last cell.
pub const ORDERS: u32 = 12;

/// Index of a (context, order) cell in `Counters::orders`.
pub const fn order_cell(ctx: ReclaimContext, order: u32) -> u32 {
    let o = if order < ORDERS { order } else { ORDERS - 1 };
    ctx as u32 * ORDERS + o
}

/// Processes tracked for "who stalled most" (LRU: the least recently
/// stalled drop out first when more processes stall than this).
pub const MAX_STALLERS: u32 = 4096;

/// Per process (tgid): time spent stalled in reclaim, `RECLAIM_STALLERS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Staller {
    pub comm: [u8; 16],
    pub stalls: StallTotals,
}

/// Reclaim stalls summed: a process's row in `RECLAIM_STALLERS`, and a
/// thread's stalls not yet added to it (kept in the thread's task
/// storage by the reclaim programs).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StallTotals {
    pub direct_ns: u64,
    pub direct_count: u64,
    pub memcg_ns: u64,
    pub memcg_count: u64,
    /// 1 when any of them was a stall in the target.
    pub target: u32,
    pub _pad: u32,
}
