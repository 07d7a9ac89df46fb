//! Running things: one traced run (`run`, asked for by `run_options`) or
//! attach (`attach`), the tracer both share (`tracer`), the checks
//! before them (`preflight`), the repeats, sweeps and recordings around
//! them (`job`), bundled workloads (`bundled`), Ctrl-C, SIGTERM and
//! SIGHUP (`interrupt`), progress, and the same run on other kernels in
//! QEMU guests (`guests`, the `vmtrace kernels` subcommand).

pub mod attach;
pub mod bundled;
pub mod fleet;
pub mod guests;
pub mod interrupt;
pub mod job;
pub mod preflight;
pub mod progress;
pub mod run;
pub mod run_options;
pub mod serve;
pub mod tracer;
