//! Sysctls vmtrace changes for a run, restored when the guard drops
//! (errors and Ctrl-C included: the guard lives on the run's stack), and
//! written down in a state file (/run/vmtrace/sysctl-PID.state) so that
//! the next vmtrace restores what one killed with SIGKILL left changed.
//!
//! Two vmtraces at once share a change: the one that ends first leaves a
//! sysctl another live vmtrace still holds, and the last one restores the
//! value from before the first (each state file carries that original
//! value). A vmtrace that wants a different value from the one another
//! live vmtrace holds is refused. Every step runs under a lock file
//! (/run/vmtrace/sysctl.lock).

use std::{
    io::Write,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result, bail};

// The state files live in STATE_DIR (a tmpfs: a reboot resets sysctls
// anyway).
use crate::host::lock::{Lock, STATE_DIR};

/// The multi-gen LRU's switch (`--mglru`; y, n or a capability mask).
pub const MGLRU_SWITCH: &str = "/sys/kernel/mm/lru_gen/enabled";
/// zswap's switch (`--zswap`; Y or N).
pub const ZSWAP_SWITCH: &str = "/sys/module/zswap/parameters/enabled";

/// The /proc/sys file of a sysctl (`vm.page-cluster` ->
/// /proc/sys/vm/page-cluster).
pub fn path_of(name: &str) -> PathBuf {
    PathBuf::from("/proc/sys").join(name.replace('.', "/"))
}

/// Whether this kernel has the sysctl (its /proc/sys file exists).
pub fn exists(name: &str) -> bool {
    path_of(name).is_file()
}

/// Every state file: (pid of the vmtrace that wrote it, path).
fn state_files() -> Vec<(String, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(STATE_DIR) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name.strip_prefix("sysctl-")?.strip_suffix(".state")?;
            Some((pid.to_string(), e.path()))
        })
        .collect()
}

/// Another live vmtrace's hold on `path`: its pid and the value the
/// sysctl had before it (or before whoever it shared it with).
fn held_by_others(path: &Path) -> Vec<(String, String)> {
    let me = std::process::id().to_string();
    let mut held = Vec::new();
    for (pid, file) in state_files() {
        if pid == me || crate::host::membox::owner_is_gone(&format!("vmtrace-{pid}")) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for line in text.lines() {
            if let Some((p, old)) = line.split_once('\t')
                && Path::new(p) == path
            {
                held.push((pid.clone(), old.to_string()));
            }
        }
    }
    held
}

/// A sysctl set for the duration of a run.
#[derive(Debug)]
pub struct SysctlOverride {
    path: PathBuf,
    old: String,
}

fn state_file() -> PathBuf {
    Path::new(STATE_DIR).join(format!("sysctl-{}.state", std::process::id()))
}

fn state_line(path: &Path, old: &str) -> String {
    format!("{}\t{old}\n", path.display())
}

impl SysctlOverride {
    /// Sets `/proc/sys/<name>` (dots or slashes) to `value`; None when it
    /// already has that value and no other vmtrace holds it (nothing to
    /// restore).
    pub fn set(name: &str, value: &str) -> Result<Option<SysctlOverride>> {
        SysctlOverride::set_file(path_of(name), name, value)
    }

    /// Sets a switch file elsewhere (sysfs: /sys/kernel/mm/lru_gen/enabled,
    /// /sys/module/zswap/parameters/enabled) the same way: recorded,
    /// shared, restored. `name` is how errors call it.
    pub fn set_file(path: PathBuf, name: &str, value: &str) -> Result<Option<SysctlOverride>> {
        let _lock = Lock::take("sysctl");
        let current = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?
            .trim()
            .to_string();
        let others = held_by_others(&path);
        let old = match others.first() {
            // Shared: the original value travels on, to be restored by
            // whichever vmtrace ends last.
            Some((pid, original)) => {
                if current != value {
                    bail!(
                        "{name} is {current} for the run of another vmtrace (pid {pid}); \
                         wait for it to end, or ask for the same value"
                    );
                }
                original.clone()
            }
            None if current == value => return Ok(None),
            None => current.clone(),
        };
        // Written down first: a kill -9 right after the write is covered.
        let recorded = std::fs::create_dir_all(STATE_DIR).and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(state_file())?
                .write_all(state_line(&path, &old).as_bytes())
        });
        if let Err(e) = recorded {
            eprintln!(
                "vmtrace: warning: cannot record {} in {STATE_DIR} ({e}); if vmtrace is \
                 killed, restore it to {old} by hand",
                path.display()
            );
        }
        if current != value
            && let Err(e) = std::fs::write(&path, value)
        {
            unrecord(&path, &old);
            bail!("cannot set {name}={value}: {e} (it stays {current}); check the value");
        }
        Ok(Some(SysctlOverride { path, old }))
    }
}

impl Drop for SysctlOverride {
    fn drop(&mut self) {
        let _lock = Lock::take("sysctl");
        // Another live vmtrace still holds it: it restores it at its end.
        let shared = !held_by_others(&self.path).is_empty();
        if !shared && let Err(e) = std::fs::write(&self.path, &self.old) {
            eprintln!(
                "vmtrace: warning: could not restore {} to {}: {e}; restore it by hand",
                self.path.display(),
                self.old
            );
            return;
        }
        unrecord(&self.path, &self.old);
    }
}

/// Takes a change off this process's state file; the file goes with its
/// last line.
fn unrecord(path: &Path, old: &str) {
    let file = state_file();
    let line = state_line(path, old);
    let kept: String = std::fs::read_to_string(&file)
        .unwrap_or_default()
        .split_inclusive('\n')
        .filter(|l| *l != line)
        .collect();
    let _ = if kept.is_empty() {
        std::fs::remove_file(&file)
    } else {
        std::fs::write(&file, kept)
    };
}

/// Restores the sysctls of vmtraces that died without restoring them
/// (their state files); returns what was restored, for a notice.
pub fn restore_stale() -> Vec<String> {
    let _lock = Lock::take("sysctl");
    let mut restored = Vec::new();
    for (pid, file) in state_files() {
        if !crate::host::membox::owner_is_gone(&format!("vmtrace-{pid}")) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        // Last change first, so that a sysctl changed twice ends as it began.
        for line in text.lines().rev() {
            let Some((path, old)) = line.split_once('\t') else {
                continue;
            };
            if !path.starts_with("/proc/sys/") || path.contains("..") {
                continue;
            }
            // A live vmtrace shares it and will restore it.
            if !held_by_others(Path::new(path)).is_empty() {
                continue;
            }
            if std::fs::write(path, old).is_ok() {
                let name = path.trim_start_matches("/proc/sys/").replace('/', ".");
                restored.push(format!("{name} restored to {old}"));
            }
        }
        let _ = std::fs::remove_file(&file);
    }
    restored
}
