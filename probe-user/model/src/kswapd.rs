//! kswapd in a run report (`RunReport::kswapd`): its threads per node,
//! its awake periods, and who woke it.

use serde::{Deserialize, Serialize};

use crate::histogram::Summary;

/// kswapd over the run, system-wide (kswapd works for every task).
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KswapdReport {
    pub nodes: Vec<KswapdNodeReport>,
    /// Completed awake periods (wake to sleep), every node.
    pub awake_periods: Option<Summary>,
    /// `mm_vmscan_wakeup_kswapd` per node and zone.
    pub wakeups: Vec<ZoneCount>,
    /// Wakeups per allocation order (last: that order and above).
    pub wakeup_orders: Vec<u64>,
    /// Task names that woke kswapd most (at most 10).
    pub wakers: Vec<NameCount>,
}

impl KswapdReport {
    /// kswapd's CPU time over every node (a node's negative reading,
    /// which no kernel gives, counts 0).
    pub fn cpu_s(&self) -> f64 {
        self.nodes.iter().map(|n| n.cpu_s.max(0.0)).sum()
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KswapdNodeReport {
    pub node: u32,
    pub wakes: u64,
    /// Awake time, including a period still open at the end (seconds).
    pub awake_s: f64,
    /// CPU time of this node's kswapd thread over the run (/proc stat).
    pub cpu_s: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ZoneCount {
    pub node: u32,
    pub zone: String,
    pub count: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NameCount {
    pub name: String,
    pub count: u64,
}
