//! Building and linting. The eBPF object is built by probe-user/build.rs
//! (aya-build), so a plain `cargo build` is all it takes after setup.

use anyhow::Result;

use crate::{setup, util};

/// The binaries the run and tests use, release profile.
pub fn build() -> Result<()> {
    setup::setup(setup::Verbosity::Quiet, setup::Need::Build)?;
    util::run(util::cargo().args([
        "build",
        "--release",
        "-p",
        "vmtrace",
        "-p",
        "vmtrace-workloads",
    ]))
}

pub fn lint() -> Result<()> {
    setup::setup(setup::Verbosity::Quiet, setup::Need::Build)?;
    util::run(util::cargo().args(["fmt", "--all", "--check"]))?;
    util::run(util::cargo().args([
        "clippy",
        "--release",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))
}
