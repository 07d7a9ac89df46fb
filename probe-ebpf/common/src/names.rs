//! Map and global names, shared so that a rename cannot break loading.

pub const HISTOGRAMS: &str = "HISTOGRAMS";
pub const COUNTERS: &str = "COUNTERS";
pub const LRU_SHRINK_INACTIVE: &str = "LRU_SHRINK_INACTIVE";
pub const LRU_SHRINK_ACTIVE: &str = "LRU_SHRINK_ACTIVE";
pub const RECLAIM_PRIORITY: &str = "RECLAIM_PRIORITY";
pub const RECLAIM_STALLERS: &str = "RECLAIM_STALLERS";
pub const OOM_VICTIMS: &str = "OOM_VICTIMS";
pub const KSWAPD_NODES: &str = "KSWAPD_NODES";
pub const KSWAPD_AWAKE_SINCE: &str = "KSWAPD_AWAKE_SINCE";
pub const KSWAPD_WAKEUPS: &str = "KSWAPD_WAKEUPS";
pub const KSWAPD_WAKERS: &str = "KSWAPD_WAKERS";
pub const KSWAPD_WAKEUP_ORDER: &str = "KSWAPD_WAKEUP_ORDER";
pub const THROTTLE_REASON: &str = "THROTTLE_REASON";
pub const PROCESS_FAULTS: &str = "PROCESS_FAULTS";
pub const PROCESS_FAULT_TIME: &str = "PROCESS_FAULT_TIME";
pub const LRU_ISOLATE: &str = "LRU_ISOLATE";
pub const SWAP_EXTENTS: &str = "SWAP_EXTENTS";
pub const ZONE_SPANS: &str = "ZONE_SPANS";
pub const PAGE_ALLOC: &str = "PAGE_ALLOC";
pub const RECLAIM_RETRY_ZONE: &str = "RECLAIM_RETRY_ZONE";
pub const TASK_SPANS: &str = "TASK_SPANS";
pub const SWAP_IO: &str = "SWAP_IO";
pub const FAULT_START: &str = "FAULT_START";
pub const FIELDS: &str = "FIELDS";
pub const TARGET: &str = "TARGET";
pub const TARGET_PIDS: &str = "TARGET_PIDS";
pub const FAULT_LATENCY: &str = "FAULT_LATENCY";
pub const CGROUP_STALLS: &str = "CGROUP_STALLS";
pub const RECLAIM_ENTRIES: &str = "RECLAIM_ENTRIES";
pub const ENTRY_STACKS: &str = "ENTRY_STACKS";
pub const SPLIT_LIVE: &str = "SPLIT_LIVE";
pub const CGROUP_ZERO: &str = "CGROUP_ZERO";
pub const PER_CGROUP: &str = "PER_CGROUP";
pub const DEBUG_PROBES: &str = "DEBUG_PROBES";
pub const PROFILE: &str = "PROFILE";
pub const PROFILE_STACKS: &str = "PROFILE_STACKS";

/// The maps userspace opens by name.
pub const MAPS: &[&str] = &[
    HISTOGRAMS,
    COUNTERS,
    LRU_SHRINK_INACTIVE,
    LRU_SHRINK_ACTIVE,
    RECLAIM_PRIORITY,
    RECLAIM_STALLERS,
    OOM_VICTIMS,
    KSWAPD_NODES,
    KSWAPD_AWAKE_SINCE,
    KSWAPD_WAKEUPS,
    KSWAPD_WAKERS,
    KSWAPD_WAKEUP_ORDER,
    THROTTLE_REASON,
    PROCESS_FAULTS,
    PROCESS_FAULT_TIME,
    LRU_ISOLATE,
    PAGE_ALLOC,
    RECLAIM_RETRY_ZONE,
    TASK_SPANS,
    SWAP_IO,
    FAULT_START,
    TARGET_PIDS,
    CGROUP_STALLS,
    CGROUP_ZERO,
    RECLAIM_ENTRIES,
    ENTRY_STACKS,
    SPLIT_LIVE,
    PROFILE,
    PROFILE_STACKS,
];

/// The globals userspace sets at load time (not maps).
pub const GLOBALS: &[&str] = &[
    FIELDS,
    TARGET,
    SWAP_EXTENTS,
    ZONE_SPANS,
    FAULT_LATENCY,
    PER_CGROUP,
    DEBUG_PROBES,
];
