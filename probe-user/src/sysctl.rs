//! Sysctls vmtrace changes for a run, restored when the guard drops
//! (errors and Ctrl-C included: the guard lives on the run's stack).

use std::path::PathBuf;

use anyhow::{Context, Result};

/// A sysctl set for the duration of a run.
#[derive(Debug)]
pub struct SysctlOverride {
    path: PathBuf,
    old: String,
}

impl SysctlOverride {
    /// Sets `/proc/sys/<name>` (dots or slashes) to `value`; None when it
    /// already has that value (nothing to restore).
    pub fn set(name: &str, value: &str) -> Result<Option<SysctlOverride>> {
        let path = PathBuf::from("/proc/sys").join(name.replace('.', "/"));
        let old = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?
            .trim()
            .to_string();
        if old == value {
            return Ok(None);
        }
        std::fs::write(&path, value).map_err(|e| {
            anyhow::anyhow!("cannot set {name}={value}: {e} (it stays {old}); check the value")
        })?;
        Ok(Some(SysctlOverride { path, old }))
    }
}

impl Drop for SysctlOverride {
    fn drop(&mut self) {
        if let Err(e) = std::fs::write(&self.path, &self.old) {
            eprintln!(
                "vmtrace: warning: could not restore {} to {}: {e}; restore it by hand",
                self.path.display(),
                self.old
            );
        }
    }
}
