//! Workloads bundled with vmtrace. Each is also a standalone binary.
//!
//! - `qsbench`: the 2001 qsbench (rand()-filled int array, quicksort), the
//!   swap benchmark of the seed mails;
//! - `build`: a kernel-build-like `make -jN` of a generated C tree (or of
//!   a real one), the seed mails' other workload;
//! - `memhog`: fills a buffer with random, non-zero data (so pages cannot
//!   be deduplicated or stay zero and must really go to swap), then touches
//!   its pages in random order, pass after pass, to force swap-ins;
//! - `faults`: a storm of first-touch minor faults without memory
//!   pressure (the page-fault path's hot loop, for overhead benchmarks).

pub mod build;
pub mod cli;
pub mod faults;
pub mod memhog;
pub mod qsbench;
