//! Running things: one traced run or attach, the tracer both share,
//! signals and progress, and the same run on other kernels in guests.

pub mod attach;
pub mod kernels;
pub mod run;
