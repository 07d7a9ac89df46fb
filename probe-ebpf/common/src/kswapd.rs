//! kswapd: its per-node awake periods and the waker table's size.

/// Per node: kswapd's sleeps and wakes (`KSWAPD_NODES`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KswapdNode {
    /// `mm_vmscan_kswapd_wake` events: one per balancing round
    /// (balance_pgdat), as /proc/vmstat's pageoutrun counts them.
    pub wakes: u64,
    /// `mm_vmscan_kswapd_sleep` events that closed an awake period.
    pub sleeps: u64,
    /// Sum of closed awake periods (ns).
    pub awake_ns: u64,
}

/// Distinct waker names kept in `KSWAPD_WAKERS` (LRU).
pub const MAX_WAKERS: u32 = 1024;

impl_add_assign!(KswapdNode {
    wakes,
    sleeps,
    awake_ns
});
