//! `vmtrace compare` printed: the analysis layer (`crate::analysis`)
//! computes the comparison as typed results; this module only turns
//! them into text (`text`, ASCII within 72 columns), a sweep's columns
//! and JSON (`columns`) and the overlaid latency plot (`plot`).

mod cells;
pub mod columns;
pub mod fleet;
pub mod hints;
mod inside;
mod plot;
pub mod text;

pub use plot::{stack, svg};
