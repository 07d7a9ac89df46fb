//! What `vmtrace probes` lists: each metric of the kernel's signal
//! catalogue and whether this kernel can run it. Plain data, filled by
//! `kernel::probes::listing` and printed by `view::report::probes_text`.

use serde::Serialize;

/// One metric as `vmtrace probes` lists it.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Listed {
    /// The metric's id (`kernel::probes::MetricId::name`).
    pub id: &'static str,
    pub title: &'static str,
    /// The hooks behind it, e.g. `tracepoint vmscan:mm_vmscan_direct_reclaim_end`.
    pub hooks: Vec<String>,
    /// The flag that turns it on, when it is off by default.
    pub opt_in: Option<&'static str>,
    pub available: bool,
    /// Why not, when not.
    pub reason: Option<String>,
}
