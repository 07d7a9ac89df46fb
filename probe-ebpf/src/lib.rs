//! Host-side stub of the eBPF crate. The programs live in `main.rs` and are
//! built for `bpfel-unknown-none` by `probe-user/build.rs`; this library
//! target only exists so that `probe-user` can list the crate as a build
//! dependency and be rebuilt when it changes.
#![no_std]
