//! Every test. Unit tests run in parallel; the kernel tests (real eBPF,
//! real cgroups and swap, checked against /proc/vmstat) run one at a time,
//! since /proc/vmstat is machine-wide, and only as root: otherwise they are
//! reported as skipped, with the reason.

use anyhow::Result;

use crate::{build, util};

pub fn test() -> Result<()> {
    crate::setup::setup(crate::setup::Verbosity::Quiet, crate::setup::Need::Test)?;
    build::build()?;
    // Unit and doc tests of every default member; the kernel tests are
    // #[ignore]d there, so they show up as ignored, never as passed.
    // The hlog export is checked by the PyPI decoder setup installed.
    let python = crate::setup::python_dir();
    // The fuzz targets (tests/fuzz.rs) get a short run of their own.
    util::run(
        util::cargo()
            .args(["test", "--release"])
            .env("VMTRACE_PYTHONPATH", &python)
            .env("VMTRACE_FUZZ_SECS", "20"),
    )?;
    if !util::is_root() {
        eprintln!(
            "xtask: kernel tests SKIPPED: not root. They load eBPF programs, create \
             memory cgroups and swapfiles; run `sudo -E cargo xtask test` (CI runs as root)."
        );
        return Ok(());
    }
    util::run(
        util::cargo()
            .env("VMTRACE_PYTHONPATH", &python)
            .env("VMTRACE_PROMETHEUS", crate::setup::prometheus::binary())
            .args([
                "test",
                "--release",
                "-p",
                "vmtrace",
                "--test",
                "kernel",
                "--",
                "--ignored",
                "--test-threads=1",
            ]),
    )
}
