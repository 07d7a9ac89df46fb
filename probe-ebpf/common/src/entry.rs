//! Where reclaim was entered: the `RECLAIM_ENTRIES` keys and cells.

use crate::ReclaimContext;

/// Distinct kernel stacks kept for "where reclaim was entered"
/// (`ENTRY_STACKS`, a stack-trace map: 127 frames, ~1 KiB each, all
/// preallocated). A stack whose hash bucket holds another stack is not
/// kept (`Counter::EntryStacksLost`): with the few dozen distinct entry
/// paths a job has, a collision is rare at this size.
pub const MAX_ENTRY_STACKS: u32 = 4096;

/// (context, stack, GFP flags, order) cells of `RECLAIM_ENTRIES`.
pub const MAX_ENTRIES: u32 = 4096;

/// The stack id of an entry whose stack was not kept.
pub const ENTRY_STACK_LOST: i32 = -1;

/// What a `RECLAIM_ENTRIES` row is the way into: a direct or memcg
/// reclaim (the `ReclaimContext`'s value), a direct compaction's runs,
/// or a kswapd wake-up (counted, no stall: the waker goes on).
/// In JSON it is its name, as a reclaim context is.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "user",
    derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema),
    serde(rename_all = "snake_case")
)]
pub enum EntryWay {
    Direct = ReclaimContext::Direct as u32,
    Memcg = ReclaimContext::Memcg as u32,
    Compaction = 8,
    KswapdWake = 9,
}

impl EntryWay {
    pub const ALL: [EntryWay; 4] = [
        EntryWay::Direct,
        EntryWay::Memcg,
        EntryWay::Compaction,
        EntryWay::KswapdWake,
    ];

    /// As reports and recordings name it.
    pub const fn name(self) -> &'static str {
        match self {
            EntryWay::Direct => "direct",
            EntryWay::Memcg => "memcg",
            EntryWay::Compaction => "compaction",
            EntryWay::KswapdWake => "kswapd_wake",
        }
    }

    /// Whether the row's order is the allocation's: memcg reclaim's
    /// tracepoint gives 0 whatever the charge (mm/vmscan.c,
    /// try_to_free_mem_cgroup_pages: `.order = 0`, 6.1 to 6.18).
    pub const fn order_known(self) -> bool {
        match self {
            EntryWay::Memcg => false,
            EntryWay::Direct | EntryWay::Compaction | EntryWay::KswapdWake => true,
        }
    }

    /// The way an `EntryKey::context` holds; None for a value no program
    /// writes.
    pub fn of(context: u32) -> Option<EntryWay> {
        Self::ALL.into_iter().find(|w| *w as u32 == context)
    }
}

/// A key of `RECLAIM_ENTRIES`: how a target reclaim was entered.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EntryKey {
    /// Id in `ENTRY_STACKS`, or `ENTRY_STACK_LOST`.
    pub stack_id: i32,
    /// An `EntryWay`.
    pub context: u32,
    /// The allocation's GFP flags (the tracepoint's `gfp_flags`; gfp_t
    /// is 32 bits on every kernel vmtrace supports).
    pub gfp: u32,
    pub order: u32,
    /// A kswapd wake-up's (node, zone), `zone_cell`; 0 for the others.
    pub zone: u32,
}

/// A cell of `RECLAIM_ENTRIES`: the reclaims entered that way and their
/// stall time, added to atomically.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EntryCell {
    pub count: u64,
    pub stall_ns: u64,
    /// The stalls' time at the scheduler (the task's `SplitTotals`
    /// across each; 0 where the split is off): on a CPU, runnable,
    /// blocked.
    pub on_cpu_ns: u64,
    pub runnable_ns: u64,
    pub blocked_ns: u64,
}
