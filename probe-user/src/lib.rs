//! vmtrace's collector as a library: everything but argument parsing is
//! testable without the binary. Layers, each importing only those below
//! it (tests/architecture.rs checks it; docs/ARCHITECTURE.md walks one signal
//! through them):
//!
//! - `cli`: clap definitions, argv handling derived from them, dispatch
//! - `session`: one run or attach, repeats and sweeps, guests, signals
//! - `view`: report sections, exports, the printing of compare, plots
//! - `analysis`: compare's explanation as typed results (groups,
//!   measures, statistics, attribution, guards, mechanisms)
//! - `kernel`: signal catalogue, plan, eBPF load/attach, map reads
//! - `host`: /proc readers, memory box, swap, sysctl, privilege, locks
//! - `model`: recording, run report, samples, histograms, units

pub mod analysis;
pub mod cli;
pub mod host;
pub mod kernel;
/// The saved model, a crate of its own (probe-user/model) that imports
/// nothing of the collector; re-exported under its layer's name.
pub use vmtrace_model as model;
pub mod session;
pub mod view;
