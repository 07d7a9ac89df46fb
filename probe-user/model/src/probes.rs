//! What `vmtrace probes` lists: each metric of the kernel's signal
//! catalogue and whether this kernel can run it. Plain data, filled by
//! `kernel::probes::listing`, printed by `view::report::probes_text` and
//! read back by the benchmark (its signal table is checked against it);
//! and the same catalogue as the docs list it (`Documented`).

use serde::{Deserialize, Serialize};

/// One metric as `vmtrace probes` lists it.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Listed {
    /// The metric's id (`kernel::probes::MetricId::name`).
    pub id: String,
    pub title: String,
    /// The hooks behind it, e.g. `tracepoint vmscan:mm_vmscan_direct_reclaim_end`.
    pub hooks: Vec<String>,
    /// The eBPF program on each hook, in the same order: its name in
    /// probe-ebpf, the name `--bpf-stats` reports its cost under.
    pub programs: Vec<String>,
    /// The flag that turns it on, when it is off by default.
    pub opt_in: Option<String>,
    pub available: bool,
    /// Why not, when not.
    pub reason: Option<String>,
}

/// One metric as the docs list it (the README's metric table): the
/// catalogue's, on no kernel in particular. Filled by
/// `kernel::probes::documented`, written by `view::docs`.
#[derive(Clone, Debug)]
pub struct Documented {
    pub id: &'static str,
    pub title: &'static str,
    /// The hooks behind it, as `vmtrace probes` names them.
    pub hooks: Vec<String>,
    pub opt_in: Option<&'static str>,
    /// What its programs keep in the kernel, in words.
    pub kept: &'static str,
}
