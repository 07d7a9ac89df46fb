//! The main job: `vmtrace run qsbench`, the seed mails' benchmark in a
//! small memory box with a temporary swapfile (vmtrace's defaults for it).

use std::process::Command;

use anyhow::Result;

use crate::{build, util};

/// The main job: the bundled qsbench with its defaults (350 MiB of ints
/// in a 256 MiB memory cgroup with 2 GiB of swap, about 20 s here).
pub fn run(extra: &[String]) -> Result<()> {
    build::build()?;
    let bin = util::root().join("target/release");
    let mut cmd = if util::is_root() {
        Command::new(bin.join("vmtrace"))
    } else {
        eprintln!("xtask: vmtrace needs root; running it with sudo");
        let mut c = Command::new("sudo");
        c.arg(bin.join("vmtrace"));
        c
    };
    cmd.arg("run").args(extra).arg("qsbench");
    util::run(&mut cmd)
}
