//! Everything that turns the model into something to read: report
//! sections, exports (text, CSV, hlog, SVG, PNG), compare, the doc tables
//! that list signals. Views read the
//! model only; they never touch the kernel.

pub mod compare;
pub mod docs;
pub mod export;
pub mod json;
pub mod plot;
pub mod prometheus;
pub mod report;
