//! What one traced run is asked to do (`RunOptions`): the command, its
//! memory box, the probes and the progress shown. Its own module so that
//! `bundled` (which rewrites a bundled workload's options) and `run`
//! (which runs them) both use it without importing each other.

use std::{ffi::OsString, time::Duration};

use crate::{host::membox::BoxSpec, session::progress::Progress};

/// The probes' options, the same for `run` and `attach`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProbeOptions {
    /// Time every user page fault of the traced tasks.
    pub fault_latency: bool,
    /// Count page allocations per zone (a hot path).
    pub page_alloc: bool,
    /// `--no-stacks`: no kernel stacks at reclaim ends (no "where
    /// reclaim was entered").
    pub no_stacks: bool,
    /// Report each program's runs and run time (kernel.bpf_stats_enabled).
    pub bpf_stats: bool,
    /// `--debug-probes`: the programs log their rare events (stderr).
    pub debug_probes: bool,
}

impl ProbeOptions {
    /// The costly metrics they ask for.
    pub fn opted_in(&self) -> Vec<crate::kernel::probes::OptIn> {
        use crate::kernel::probes::OptIn;
        let mut opted_in = Vec::new();
        if self.fault_latency {
            opted_in.push(OptIn::FaultLatency);
        }
        if self.page_alloc {
            opted_in.push(OptIn::PageAlloc);
        }
        if !self.no_stacks {
            opted_in.push(OptIn::ReclaimStacks);
        }
        opted_in
    }
}

#[derive(Clone, Debug)]
pub struct RunOptions {
    pub command: Vec<OsString>,
    /// How reports name the command when it is not `command` itself (a
    /// bundled workload: `qsbench -m 350`, not `vmtrace workload ...`).
    pub label: Option<Vec<String>>,
    pub spec: BoxSpec,
    /// `--no-box`: no memory cgroup even for a bundled workload (whose
    /// default box applies otherwise); the machine is the pressure.
    pub no_box: bool,
    pub probes: ProbeOptions,
    /// Attach nothing: the same box and command, untraced (the baseline
    /// that vmtrace's own cost, or another tracer's, is measured against).
    pub no_probes: bool,
    /// Run the command as root under sudo (otherwise it runs as the user
    /// who ran sudo).
    pub as_root: bool,
    /// When the command exits, wait for what it left in the box to end
    /// (otherwise it is killed, and counted).
    pub wait_background: bool,
    /// How to show progress on stderr while the command runs.
    pub progress: Progress,
    /// Time-series sampling interval.
    pub interval: Duration,
}
