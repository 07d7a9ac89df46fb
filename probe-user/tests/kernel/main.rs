//! Kernel tests: the real `vmtrace` binary loads real eBPF programs, runs
//! a real memory hog in a real memory cgroup with a temporary swapfile,
//! and what it measured is checked against the kernel's own counters
//! (/proc/vmstat, rusage). They need root and change machine-wide state,
//! so they are #[ignore]d for plain `cargo test`; `cargo xtask test` runs
//! them as root, one at a time (/proc/vmstat is machine-wide).
//!
//! One test target (`--test kernel`), a module per family of tests, as
//! ripgrep lays out its tests; `common` holds what they share (running
//! vmtrace, the leftovers guard, vmstat deltas, scratch directories).

#[path = "../support/python.rs"]
mod python;

mod attach;
mod bisect;
mod boxstat;
mod calibration;
mod cleanup;
mod common;
mod compare;
mod concurrent;
mod contention;
mod counters;
mod debug_probes;
mod delays;
mod dropped_privileges;
mod entries;
mod faults;
mod fleet;
mod guards;
mod guest_image;
mod hostile_recordings;
mod identity;
mod kernels;
mod oom;
mod options;
mod overhead;
mod parallel;
mod portability;
mod profile;
mod reclaim;
mod refusals;
mod reports;
mod serve;
mod swapcause;
mod swapio;
mod targets;
mod untrusted_paths;
mod untrusted_state;
mod workloads;
mod zones;
