//! The process helpers the bench shares, and what it asks of xtask.
//!
//! Building vmtrace is xtask's (`cargo xtask build`: setup, then the
//! release build); the bench asks it through the xtask binary that started
//! it (`VMTRACE_XTASK`), so that there is one way to build. Run by hand,
//! it falls back to `cargo xtask`.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::Result;

#[path = "../../src/process.rs"]
mod process;
pub use process::{apt_install, cargo, is_root, on_path, run, show, utc_stamp};

/// The echo's prefix (`process::run`).
const TOOL: &str = "bench";

/// The workspace root (the bench lives in xtask/bench).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The release binaries the bench runs, built by `xtask build` (vmtrace
/// with its eBPF programs, and the workloads).
pub fn build() -> Result<PathBuf> {
    let mut xtask = match std::env::var_os("VMTRACE_XTASK") {
        Some(exe) => Command::new(exe),
        None => {
            let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
            c.arg("xtask");
            c
        }
    };
    run(xtask.current_dir(root()).arg("build"))?;
    Ok(root().join("target/release"))
}

/// Installs the peer tracers' Debian packages. Those are the bench's
/// alone (xtask's setup installs what building and the tests need), so
/// the bench asks apt itself, as setup does: nothing upgraded or removed.
pub fn install_debian(packages: &[&str]) -> Result<()> {
    eprintln!("bench: installing Debian packages {}", packages.join(" "));
    apt_install(packages)
}
