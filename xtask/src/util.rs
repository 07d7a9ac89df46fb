//! Small helpers shared by the tasks.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

#[path = "process.rs"]
mod process;
pub use process::{apt_install, cargo, is_root, on_path, run, show, utc_stamp};

/// The echo's prefix (`process::run`).
const TOOL: &str = "xtask";

/// The workspace root (xtask lives one level below it).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Output of a command that must succeed, trimmed.
pub fn output(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot start `{}`", show(cmd)))?;
    if !out.status.success() {
        bail!(
            "`{}` failed: {}",
            show(cmd),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}
