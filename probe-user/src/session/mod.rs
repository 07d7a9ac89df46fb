//! Running things: one traced run (`run`) or attach (`attach`), the
//! tracer both share (`tracer`), the checks before them (`preflight`),
//! the repeats, sweeps and recordings around them (`job`), bundled
//! workloads (`bundled`), signals and progress, and the same run on
//! other kernels in guests (`kernels`).

pub mod attach;
pub mod bundled;
pub mod job;
pub mod kernels;
pub mod preflight;
pub mod progress;
pub mod run;
pub mod serve;
pub mod signals;
pub mod tracer;
