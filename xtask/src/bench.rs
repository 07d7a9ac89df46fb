//! `cargo xtask bench`: builds the benchmark (xtask/bench, a crate of its
//! own) and runs it with the arguments given, `--help` included. The
//! bench asks this xtask back for the release build of vmtrace
//! (`VMTRACE_XTASK build`), and finds promtool beside the Prometheus
//! setup unpacks (`VMTRACE_PROMETHEUS`, as the exporter's test does).

use std::process::Command;

use anyhow::{Context, Result};

use crate::{setup, util};

pub fn bench(args: &[String]) -> Result<()> {
    util::run(util::cargo().args(["build", "--release", "--quiet", "-p", "vmtrace-bench"]))?;
    let bin = util::root().join("target/release/vmtrace-bench");
    let xtask = std::env::current_exe().context("finding xtask's own binary")?;
    let status = Command::new(&bin)
        .args(args)
        .env("VMTRACE_XTASK", xtask)
        .env("VMTRACE_PROMETHEUS", setup::prometheus::binary())
        .status()
        .with_context(|| format!("cannot start {}", bin.display()))?;
    if !status.success() {
        // The bench said why; its status is ours.
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}
