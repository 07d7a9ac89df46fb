//! vmtrace's collector as a library: everything but argument parsing is
//! testable without the binary. Data flows one way: `probes` (kernel
//! programs) and /proc -> `collect` -> `report`.

pub mod attach;
pub mod btf;
pub mod cli;
pub mod collect;
pub mod compare;
pub mod export;
pub mod histogram;
pub mod kernels;
pub mod lock;
pub mod membox;
pub mod privilege;
pub mod probes;
pub mod recording;
pub mod report;
pub mod run;
pub mod sample;
pub mod size;
pub mod swapdev;
pub mod sysctl;
pub mod tracefs;
