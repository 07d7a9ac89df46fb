//! The main job: `vmtrace run` on the bundled memory hog in a small memory
//! box with a temporary swapfile, sized to reclaim and swap hard here.

use std::process::Command;

use anyhow::Result;

use crate::{build, util};

/// Box and workload of the main job: a 512 MiB working set in a 256 MiB
/// memory cgroup with 1 GiB of swap (about 10 s on a 2-core machine).
const BOX: [&str; 4] = ["--mem", "256M", "--swap", "1G"];
const WORKLOAD: [&str; 4] = ["--mib", "512", "--passes", "2"];

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
    cmd.arg("run")
        .args(BOX)
        .args(extra)
        .arg("--")
        .arg(bin.join("memhog"))
        .args(WORKLOAD);
    util::run(&mut cmd)
}
