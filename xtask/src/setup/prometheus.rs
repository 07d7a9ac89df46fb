//! Prometheus for the exporter's test (`attach --serve` scraped by a real
//! server), unpacked, never installed.
//!
//! Debian's `prometheus` package registers a system service that its
//! install script starts (a server listening on :9090 on every machine
//! that runs the tests, and a user account); the test only needs the
//! binary, which is static (Go). So setup downloads the package with
//! `apt-get download`, unpacks it under `$CARGO_HOME/vmtrace-prometheus`
//! with `dpkg-deb -x` (no maintainer script runs, dpkg does not know of
//! it) and the test is given that binary (`VMTRACE_PROMETHEUS`). A
//! Prometheus the user installed is left alone and not used.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

use super::cargo_home;
use crate::util;

const PACKAGE: &str = "prometheus";

/// The unpacked binary the exporter test runs.
pub fn binary() -> PathBuf {
    private_dir().join("usr/bin/prometheus")
}

fn private_dir() -> PathBuf {
    cargo_home().join("vmtrace-prometheus")
}

/// Whether the private copy is there and runs.
pub fn installed() -> bool {
    runs(&binary()).is_ok()
}

/// Downloads and unpacks the package (no service, no account, no dpkg
/// entry), then checks that the binary runs.
pub fn install() -> Result<()> {
    let dir = private_dir();
    let debs = dir.join("debs");
    std::fs::create_dir_all(&debs).with_context(|| format!("creating {}", debs.display()))?;
    let download = || {
        util::run(
            Command::new("apt-get")
                .args(["download", PACKAGE])
                .current_dir(&debs),
        )
    };
    if download().is_err() {
        util::run(Command::new("apt-get").arg("update"))?;
        download()?;
    }
    for entry in std::fs::read_dir(&debs).with_context(|| format!("reading {}", debs.display()))? {
        let deb = entry?.path();
        if deb.extension().is_some_and(|e| e == "deb") {
            util::run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&dir))?;
        }
    }
    let _ = std::fs::remove_dir_all(&debs);
    runs(&binary())
}

fn runs(binary: &Path) -> Result<()> {
    let out = Command::new(binary)
        .arg("--version")
        .output()
        .with_context(|| format!("running {}", binary.display()))?;
    if !out.status.success() {
        bail!(
            "{} --version failed: {}",
            binary.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
