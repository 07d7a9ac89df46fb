//! The signals vmtrace measures and the eBPF programs behind them:
//! `catalogue` (what each metric needs), `plan` (what this kernel can
//! run, pure), `load` (loading and attaching, and the running programs),
//! `documented` (the catalogue as the docs list it), `debug_log` (the
//! programs' rare events as lines, `--debug-probes`).

mod catalogue;
pub mod debug_log;
mod documented;
mod hook;
mod load;
mod plan;

pub use crate::model::probes::Listed;
pub use catalogue::{
    CATALOGUE, FieldUse, Hook, KernelTypes, MemberUse, Metric, MetricId, OptIn, PROFILE_HZ, Program,
};
pub use documented::{documented, kept};
pub use load::{Layout, Probes, ProgramStats, attach};
pub use plan::{Plan, listing, plan};
