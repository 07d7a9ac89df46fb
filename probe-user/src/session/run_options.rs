//! What one traced run is asked to do (`RunOptions`): the command, its
//! memory box, the probes and the progress shown. Its own module so that
//! `bundled` (which rewrites a bundled workload's options) and `run`
//! (which runs them) both use it without importing each other.

use std::{ffi::OsString, time::Duration};

use crate::{host::membox::BoxSpec, session::progress::Progress};

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
    pub fault_latency: bool,
    /// Count page allocations per zone (a hot path).
    pub page_alloc: bool,
    /// `--no-stacks`: no kernel stacks at reclaim begins (no "where
    /// reclaim was entered").
    pub no_stacks: bool,
    /// Report each program's runs and run time (kernel.bpf_stats_enabled).
    pub bpf_stats: bool,
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
