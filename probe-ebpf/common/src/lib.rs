//! Types shared by vmtrace's eBPF programs (`probe-ebpf`) and its collector
//! (`probe-user`): map names and layouts, the histogram bucket scheme, the
//! indices of counters and the field-offset tables that userspace fills in
//! at load time. Both sides compile this one file, so they cannot disagree.
#![no_std]

pub mod hist;

/// Most NUMA nodes a per-node table has room for. Events from a node id at
/// or above this are counted in [`Counter::NodeOutOfRange`].
pub const MAX_NODES: u32 = 64;

/// Entries in the per-task "reclaim in progress" map. A task is in at most
/// one reclaim at a time, so this bounds the number of tasks stalled in
/// reclaim at the same moment; inserts beyond it are counted in
/// [`Counter::ReclaimStartDropped`], never lost silently.
pub const MAX_TASKS_IN_RECLAIM: u32 = 16384;

/// Entries in the per-task "fault in progress" map (fault latency only).
pub const MAX_TASKS_IN_FAULT: u32 = 65536;

/// A latency histogram kept in the kernel (index into `HISTOGRAMS`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hist {
    /// Time a target task spent in one direct reclaim (ns).
    DirectReclaim = 0,
    /// Time a target task spent in one memcg reclaim (ns).
    MemcgReclaim = 1,
    /// Duration of a minor page fault of a target task (ns; --fault-latency).
    MinorFault = 2,
    /// Duration of a major page fault of a target task (ns; --fault-latency).
    MajorFault = 3,
}

impl Hist {
    pub const ALL: [Hist; 4] = [
        Hist::DirectReclaim,
        Hist::MemcgReclaim,
        Hist::MinorFault,
        Hist::MajorFault,
    ];
    pub const COUNT: u32 = Self::ALL.len() as u32;
}

/// A scalar event counter kept in the kernel (index into `COUNTERS`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// Direct reclaims of target tasks (begin..end pairs).
    DirectReclaims = 0,
    /// Pages reclaimed by those direct reclaims (from `..._end`).
    DirectReclaimPages = 1,
    /// Memcg reclaims of target tasks (begin..end pairs).
    MemcgReclaims = 2,
    /// Pages reclaimed by those memcg reclaims.
    MemcgReclaimPages = 3,
    /// Major faults of every task on the machine.
    MajorFaultsAll = 4,
    /// Major faults of target tasks.
    MajorFaultsTarget = 5,
    /// Minor faults of target tasks (only counted with --fault-latency).
    MinorFaultsTarget = 6,
    /// Reclaim begins not recorded because the per-task map was full.
    ReclaimStartDropped = 7,
    /// Reclaim ends seen without a begin (tracing started mid-reclaim).
    ReclaimEndUnmatched = 8,
    /// Fault starts not recorded because the per-task map was full.
    FaultStartDropped = 9,
    /// Events whose node id was >= MAX_NODES.
    NodeOutOfRange = 10,
}

impl Counter {
    pub const COUNT: u32 = 11;
}

/// Who was reclaiming when the LRU was shrunk. Decided in the kernel from
/// the per-task reclaim map (direct/memcg) and the task name (kswapd).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReclaimContext {
    Kswapd = 0,
    Direct = 1,
    Memcg = 2,
    /// Anything else: proactive reclaim, node reclaim, khugepaged, ...
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
}

/// Index of a (node, context) cell in `LRU_SHRINK_INACTIVE`.
pub const fn lru_cell(node: u32, ctx: ReclaimContext) -> u32 {
    node * ReclaimContext::COUNT + ctx as u32
}

/// One cell of `LRU_SHRINK_INACTIVE`: totals of the
/// `vmscan:mm_vmscan_lru_shrink_inactive` events of one node and context.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LruShrinkInactive {
    pub events: u64,
    pub nr_scanned: u64,
    pub nr_reclaimed: u64,
}

/// The value stored per task while it is inside a direct or memcg reclaim.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ReclaimStart {
    pub start_ns: u64,
    /// [`ReclaimContext::Direct`] or [`ReclaimContext::Memcg`].
    pub context: u32,
    /// 1 when the task belongs to the target (its stall is histogrammed).
    pub target: u32,
}

/// Where a field of a classic tracepoint's record lies, as read from the
/// running kernel's tracefs `format` file. `size == 0` means "absent".
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Field {
    pub offset: u16,
    pub size: u16,
}

impl Field {
    pub const ABSENT: Field = Field { offset: 0, size: 0 };
}

/// Field offsets of every classic tracepoint vmtrace reads, filled in by the
/// collector from tracefs before the programs are loaded (global `FIELDS`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fields {
    /// `mm_vmscan_direct_reclaim_end.nr_reclaimed`
    pub direct_reclaim_end_nr_reclaimed: Field,
    /// `mm_vmscan_memcg_reclaim_end.nr_reclaimed`
    pub memcg_reclaim_end_nr_reclaimed: Field,
    /// `mm_vmscan_lru_shrink_inactive.nid`
    pub lru_shrink_inactive_nid: Field,
    /// `mm_vmscan_lru_shrink_inactive.nr_scanned`
    pub lru_shrink_inactive_nr_scanned: Field,
    /// `mm_vmscan_lru_shrink_inactive.nr_reclaimed`
    pub lru_shrink_inactive_nr_reclaimed: Field,
}

/// Which tasks are the target. Global `TARGET`, set at load time.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Target {
    /// cgroup v2 id whose tasks are the target; 0 = every task.
    pub cgroup_id: u64,
}

/// Map and global names, shared so that a rename cannot break loading.
pub mod names {
    pub const HISTOGRAMS: &str = "HISTOGRAMS";
    pub const COUNTERS: &str = "COUNTERS";
    pub const LRU_SHRINK_INACTIVE: &str = "LRU_SHRINK_INACTIVE";
    pub const RECLAIM_START: &str = "RECLAIM_START";
    pub const FAULT_START: &str = "FAULT_START";
    pub const FIELDS: &str = "FIELDS";
    pub const TARGET: &str = "TARGET";
}

#[cfg(feature = "user")]
mod pod {
    // SAFETY: all of these are repr(C), Copy, made of integers, without
    // padding that the kernel could leave uninitialised in a way that
    // matters (values are only ever summed or compared).
    unsafe impl aya::Pod for super::LruShrinkInactive {}
    unsafe impl aya::Pod for super::ReclaimStart {}
    unsafe impl aya::Pod for super::Fields {}
    unsafe impl aya::Pod for super::Field {}
    unsafe impl aya::Pod for super::Target {}
    unsafe impl aya::Pod for super::hist::Buckets {}
}
