//! OOM kills: the victim record sent through the `OOM_VICTIMS` ring buffer.

/// One `oom:mark_victim` event, sent through the `OOM_VICTIMS` ring
/// buffer (rare: per-event records are fine here).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OomVictim {
    /// bpf_ktime_get_ns() (CLOCK_MONOTONIC) when the victim was marked.
    pub time_ns: u64,
    pub total_vm_kb: u64,
    pub anon_rss_kb: u64,
    pub file_rss_kb: u64,
    pub shmem_rss_kb: u64,
    pub pid: u32,
    /// 1 when the task that ran into the OOM belongs to the target.
    pub target: u32,
    pub comm: [u8; 16],
}
