//! Shared by the test targets that run Python checkers (recordings,
//! kernel): where the packages `cargo xtask setup` installs live.

use std::path::PathBuf;

/// Where `cargo xtask setup` put the Python packages the tests use
/// (VMTRACE_PYTHONPATH overrides).
pub fn python_path() -> PathBuf {
    std::env::var_os("VMTRACE_PYTHONPATH").map_or_else(
        || {
            std::env::var_os("CARGO_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo")
                })
                .join("vmtrace-python")
        },
        PathBuf::from,
    )
}
