//! Fills the report's THP, mTHP and compaction event counters from the
//! window's snapshot delta (/proc/vmstat and the per-size mTHP stats:
//! `model::counters` says what each counts).

use crate::model::{
    counters::{CompactionCounters, ThpCounters},
    report::RunReport,
    vmstat::VmStat,
};

impl RunReport {
    /// `thp` and `compaction_counters` from the window's delta; None
    /// where the kernel has none of a family's counters.
    pub fn add_event_counters(&mut self, delta: &VmStat) {
        self.thp = ThpCounters::from_delta(delta);
        self.compaction_counters = CompactionCounters::from_delta(delta);
    }
}
