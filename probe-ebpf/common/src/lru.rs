//! LRU shrinking and isolation: the per-(node, context, LRU type) and
//! priority tables and their cells.

use crate::{MAX_NODES, ReclaimContext};

/// LRU lists as `mm_vmscan_lru_isolate.lru` numbers them (enum lru_list).
pub const LRU_LISTS: u32 = 5;

/// One cell of `LRU_ISOLATE`: isolation totals for one (highest zone
/// index the reclaim may take pages from, LRU list).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    feature = "user",
    derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)
)]
pub struct LruIsolate {
    pub events: u64,
    pub nr_requested: u64,
    pub nr_scanned: u64,
    pub nr_skipped: u64,
    pub nr_taken: u64,
}

/// Index of a (highest zone index, LRU list) cell in `LRU_ISOLATE`.
pub const fn isolate_cell(zone: u32, lru: u32) -> u32 {
    zone * LRU_LISTS + lru
}

/// Which LRU list pair a shrink worked on.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LruType {
    Anon = 0,
    File = 1,
}

impl LruType {
    pub const ALL: [LruType; 2] = [LruType::Anon, LruType::File];
    pub const COUNT: u32 = 2;

    pub fn name(self) -> &'static str {
        match self {
            LruType::Anon => "anon",
            LruType::File => "file",
        }
    }
}

/// `reclaim_flags` bit of the lru_shrink and write_folio tracepoints that
/// says the pages were file pages (include/trace/events/vmscan.h).
pub const RECLAIM_WB_FILE: u64 = 0x0002;
/// ... and that they were anon pages.
pub const RECLAIM_WB_ANON: u64 = 0x0001;

/// Reclaim priorities run from DEF_PRIORITY (12) down to 0.
pub const PRIORITIES: u32 = 13;

/// Index of a (node, context, lru type) cell in the LRU tables.
pub const fn lru_cell(node: u32, ctx: ReclaimContext, lru: LruType) -> u32 {
    (node * ReclaimContext::COUNT + ctx as u32) * LruType::COUNT + lru as u32
}

/// Cells in each LRU table.
pub const LRU_CELLS: u32 = MAX_NODES * ReclaimContext::COUNT * LruType::COUNT;

/// Index of a (context, priority) cell in `RECLAIM_PRIORITY`.
pub const fn priority_cell(ctx: ReclaimContext, priority: u32) -> u32 {
    ctx as u32 * PRIORITIES + priority
}

/// One cell of `LRU_SHRINK_INACTIVE`: totals of the
/// `vmscan:mm_vmscan_lru_shrink_inactive` events of one node, context and
/// LRU type. Names are the tracepoint's own.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    feature = "user",
    derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)
)]
pub struct LruShrinkInactive {
    pub events: u64,
    pub nr_scanned: u64,
    pub nr_reclaimed: u64,
    pub nr_dirty: u64,
    pub nr_writeback: u64,
    pub nr_congested: u64,
    pub nr_immediate: u64,
    pub nr_activate_anon: u64,
    pub nr_activate_file: u64,
    pub nr_ref_keep: u64,
    pub nr_unmap_fail: u64,
}

/// One cell of `LRU_SHRINK_ACTIVE` (`mm_vmscan_lru_shrink_active`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    feature = "user",
    derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)
)]
pub struct LruShrinkActive {
    pub events: u64,
    pub nr_taken: u64,
    pub nr_active: u64,
    pub nr_deactivated: u64,
    pub nr_referenced: u64,
}

impl_add_assign!(LruShrinkInactive {
    events,
    nr_scanned,
    nr_reclaimed,
    nr_dirty,
    nr_writeback,
    nr_congested,
    nr_immediate,
    nr_activate_anon,
    nr_activate_file,
    nr_ref_keep,
    nr_unmap_fail,
});
impl_add_assign!(LruShrinkActive {
    events,
    nr_taken,
    nr_active,
    nr_deactivated,
    nr_referenced
});
impl_add_assign!(LruIsolate {
    events,
    nr_requested,
    nr_scanned,
    nr_skipped,
    nr_taken
});
