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
//!
//! A state file is trusted only as far as vmtrace could have written it:
//! it must be a file of root's alone in the checked state directory
//! (host::lock), name only knobs vmtrace sets (delay accounting, BPF
//! stats, zswap's and the multi-gen LRU's switches, and the
//! memory-management sysctls `--sysctl` takes) with values in the syntax
//! read from them; anything else is refused in one line and nothing is
//! restored from it.

use std::{
    io::{Read, Seek, SeekFrom, Write},
    path::{Path, PathBuf},
};

use anyhow::{Context, Result, bail};

// The state files live in STATE_DIR (a tmpfs: a reboot resets sysctls
// anyway).
use crate::host::lock::{Interrupted, Lock, STATE_DIR, StateDir, vmtrace_alive};

/// The multi-gen LRU's switch (`--mglru`; y, n or a capability mask).
pub const MGLRU_SWITCH: &str = "/sys/kernel/mm/lru_gen/enabled";
/// zswap's switch (`--zswap`; Y or N).
pub const ZSWAP_SWITCH: &str = "/sys/module/zswap/parameters/enabled";
/// The sysctls vmtrace sets itself (a traced run; `--bpf-stats`).
const OWN_SYSCTLS: [&str; 2] = ["kernel.task_delayacct", "kernel.bpf_stats_enabled"];
/// A state file is a few lines; one larger than this vmtrace never wrote.
const MAX_STATE_BYTES: u64 = 16 * 1024;

/// The /proc/sys file of a sysctl (`vm.page-cluster` ->
/// /proc/sys/vm/page-cluster).
pub fn path_of(name: &str) -> PathBuf {
    PathBuf::from("/proc/sys").join(name.replace('.', "/"))
}

/// Whether this kernel has the sysctl (its /proc/sys file exists).
pub fn exists(name: &str) -> bool {
    path_of(name).is_file()
}

/// The name `--sysctl` may set, normalized (`vm/page-cluster` ->
/// `vm.page-cluster`): memory-management sysctls only, `vm.*` and
/// kernel.numa_balancing, each part plain (letters, digits, `_`, `-`).
pub fn settable(name: &str) -> Result<String, String> {
    let normal = name.trim().replace('/', ".");
    let parts: Vec<&str> = normal.split('.').collect();
    let plain = parts.iter().all(|p| {
        !p.is_empty()
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
    });
    let memory = (parts.len() == 2 && parts[0] == "vm") || normal == "kernel.numa_balancing";
    if !plain || !memory {
        return Err(format!(
            "`{name}`: --sysctl sets memory-management sysctls only (vm.*, \
             kernel.numa_balancing), like vm.swappiness"
        ));
    }
    Ok(normal)
}

/// How values of a knob vmtrace sets are written.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Syntax {
    /// 0 or 1 (a number).
    Number,
    /// Y or N (a module's bool parameter).
    YesNo,
    /// y, n or 0x and hex digits (lru_gen's capability mask).
    Mask,
    /// Numbers or words, separated by blanks (vm sysctls).
    Words,
}

/// The syntax of a knob vmtrace may write down; None for any other path.
fn knob(path: &Path) -> Option<Syntax> {
    let text = path.to_str()?;
    match text {
        ZSWAP_SWITCH => return Some(Syntax::YesNo),
        MGLRU_SWITCH => return Some(Syntax::Mask),
        _ => {}
    }
    let name = text.strip_prefix("/proc/sys/")?.replace('/', ".");
    if OWN_SYSCTLS.contains(&name.as_str()) {
        return Some(Syntax::Number);
    }
    (settable(&name).ok()? == name).then_some(Syntax::Words)
}

fn value_ok(syntax: Syntax, v: &str) -> bool {
    let hex = |h: &str| (1..=8).contains(&h.len()) && h.bytes().all(|b| b.is_ascii_hexdigit());
    match syntax {
        Syntax::Number => (1..=10).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_digit()),
        Syntax::YesNo => v == "Y" || v == "N",
        Syntax::Mask => v == "y" || v == "n" || v.strip_prefix("0x").is_some_and(hex),
        Syntax::Words => {
            (1..=256).contains(&v.len())
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b" \t._:+-".contains(&b))
        }
    }
}

/// How messages name a knob: vm.page-cluster, or the /sys path.
fn display_name(path: &Path) -> String {
    match path.to_str().and_then(|p| p.strip_prefix("/proc/sys/")) {
        Some(name) => name.replace('/', "."),
        None => path.display().to_string(),
    }
}

/// Text from a file vmtrace did not write, quoted and cut short for a message.
fn quoted(text: &str) -> String {
    let short: String = text.chars().take(40).collect();
    format!("{short:?}")
}

/// Every state file: (pid of the vmtrace that wrote it, file name).
fn state_files(dir: &StateDir) -> Vec<(u32, String)> {
    dir.names()
        .into_iter()
        .filter_map(|name| {
            let pid = name.strip_prefix("sysctl-")?.strip_suffix(".state")?;
            Some((pid.parse().ok()?, name))
        })
        .collect()
}

/// A state file's changes (path, value before), each checked against
/// what vmtrace writes; anything else refuses the whole file.
fn read_state(dir: &StateDir, name: &str) -> Result<Vec<(PathBuf, String)>> {
    let Some(file) = dir.file(name, false)? else {
        return Ok(Vec::new());
    };
    let mut text = String::new();
    file.take(MAX_STATE_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("remove {STATE_DIR}/{name}: it is not text vmtrace wrote"))?;
    let refuse = |why: String| {
        anyhow::anyhow!("remove {STATE_DIR}/{name}: {why}; nothing was restored from it")
    };
    if text.len() as u64 > MAX_STATE_BYTES {
        return Err(refuse(format!("larger than {MAX_STATE_BYTES} bytes")));
    }
    let mut changes = Vec::new();
    for line in text.lines() {
        let Some((path, old)) = line.split_once('\t') else {
            return Err(refuse(format!(
                "line {} is not PATH<tab>VALUE",
                quoted(line)
            )));
        };
        let path = PathBuf::from(path);
        let Some(syntax) = knob(&path) else {
            return Err(refuse(format!(
                "it names {}, which vmtrace never sets",
                quoted(&path.display().to_string())
            )));
        };
        if !value_ok(syntax, old) {
            return Err(refuse(format!(
                "value {} for {} is not one vmtrace writes",
                quoted(old),
                path.display()
            )));
        }
        changes.push((path, old.to_string()));
    }
    Ok(changes)
}

/// Another live vmtrace's hold on `path`: its pid and the value the
/// sysctl had before it (or before whoever it shared it with).
fn held_by_others(dir: &StateDir, path: &Path) -> Result<Vec<(u32, String)>> {
    let me = std::process::id();
    let mut held = Vec::new();
    for (pid, name) in state_files(dir) {
        if pid == me || !vmtrace_alive(pid) {
            continue;
        }
        for (p, old) in read_state(dir, &name)? {
            if p == path {
                held.push((pid, old));
            }
        }
    }
    Ok(held)
}

/// A sysctl set for the duration of a run.
#[derive(Debug)]
pub struct SysctlOverride {
    path: PathBuf,
    old: String,
}

fn state_name() -> String {
    format!("sysctl-{}.state", std::process::id())
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
        let Some(syntax) = knob(&path) else {
            bail!("{name}: vmtrace does not set {}", path.display());
        };
        let dir = StateDir::open()?;
        let _lock = Lock::take("sysctl")?;
        let current = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?
            .trim()
            .to_string();
        if !value_ok(syntax, &current) {
            bail!(
                "{name} reads {}, which vmtrace cannot write down to restore; set it by hand",
                quoted(&current)
            );
        }
        let others = held_by_others(&dir, &path)?;
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
        record(&dir, &state_line(&path, &old)).with_context(|| {
            format!(
                "cannot record {} in {STATE_DIR}; nothing was changed",
                path.display()
            )
        })?;
        if current != value
            && let Err(e) = std::fs::write(&path, value)
        {
            unrecord(&dir, &path, &old);
            bail!("cannot set {name}={value}: {e} (it stays {current}); check the value");
        }
        Ok(Some(SysctlOverride { path, old }))
    }
}

impl Drop for SysctlOverride {
    fn drop(&mut self) {
        let shared = StateDir::open().and_then(|dir| {
            let lock = Lock::take_uninterrupted("sysctl")?;
            // Another live vmtrace still holds it: it restores it at its end.
            let alone = held_by_others(&dir, &self.path)?.is_empty();
            Ok((dir, lock, alone))
        });
        let (dir, _lock, alone) = match shared {
            Ok(s) => s,
            Err(e) => {
                eprintln!(
                    "vmtrace: warning: {} not restored to {} ({e:#}); the next vmtrace \
                     restores it",
                    self.path.display(),
                    self.old
                );
                return;
            }
        };
        if alone && let Err(e) = std::fs::write(&self.path, &self.old) {
            eprintln!(
                "vmtrace: warning: could not restore {} to {}: {e}; restore it by hand",
                self.path.display(),
                self.old
            );
            return;
        }
        unrecord(&dir, &self.path, &self.old);
    }
}

/// Adds a line to this process's state file (under the sysctl lock).
fn record(dir: &StateDir, line: &str) -> Result<()> {
    let Some(mut file) = dir.file(&state_name(), true)? else {
        bail!("cannot create {STATE_DIR}/{}", state_name());
    };
    file.seek(SeekFrom::End(0))?;
    file.write_all(line.as_bytes())?;
    Ok(())
}

/// Takes a change off this process's state file; the file goes with its
/// last line.
fn unrecord(dir: &StateDir, path: &Path, old: &str) {
    let name = state_name();
    let Ok(Some(mut file)) = dir.file(&name, false) else {
        return;
    };
    let line = state_line(path, old);
    let mut text = String::new();
    let _ = (&mut file).take(MAX_STATE_BYTES).read_to_string(&mut text);
    let kept: String = text.split_inclusive('\n').filter(|l| *l != line).collect();
    if kept.is_empty() {
        let _ = dir.remove(&name);
    } else {
        let _ = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(kept.as_bytes()));
    }
}

/// Restores what vmtraces that died left changed (their state files),
/// last change first; a file goes only once all of it is restored.
/// Returns what was restored, for a notice; a state file vmtrace did not
/// write is refused in one line, with nothing restored from it.
pub fn restore_stale() -> Result<Vec<String>> {
    let dir = StateDir::open()?;
    let _lock = Lock::take("sysctl")?;
    let mut restored = Vec::new();
    for (pid, name) in state_files(&dir) {
        if pid == std::process::id() || vmtrace_alive(pid) {
            continue;
        }
        let changes = read_state(&dir, &name)?;
        let mut failed = Vec::new();
        // Last change first, so that a sysctl changed twice ends as it began.
        for (path, old) in changes.iter().rev() {
            // A live vmtrace shares it and will restore it.
            if !held_by_others(&dir, path)?.is_empty() {
                continue;
            }
            match std::fs::write(path, old) {
                Ok(()) => restored.push(format!("{} restored to {old}", display_name(path))),
                Err(e) => failed.push(format!("{} to {old} ({e})", display_name(path))),
            }
        }
        if failed.is_empty() {
            let _ = dir.remove(&name);
        } else {
            eprintln!(
                "vmtrace: warning: could not restore {}; restore it by hand, then remove \
                 {STATE_DIR}/{name}",
                failed.join(", ")
            );
        }
    }
    Ok(restored)
}

/// Whether `e` is a stop signal that ended a lock wait (not a failure to
/// set something, which a caller may go on without).
pub fn is_interrupted(e: &anyhow::Error) -> bool {
    e.downcast_ref::<Interrupted>().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_knobs_vmtrace_sets_in_its_syntax() {
        let ok = |p: &str, v: &str| knob(Path::new(p)).is_some_and(|s| value_ok(s, v));
        assert!(ok("/proc/sys/kernel/task_delayacct", "0"));
        assert!(ok("/proc/sys/kernel/bpf_stats_enabled", "1"));
        assert!(ok(ZSWAP_SWITCH, "N") && ok(ZSWAP_SWITCH, "Y"));
        assert!(ok(MGLRU_SWITCH, "0x0007") && ok(MGLRU_SWITCH, "n"));
        assert!(ok("/proc/sys/vm/page-cluster", "3"));
        assert!(ok(
            "/proc/sys/vm/lowmem_reserve_ratio",
            "256\t256\t32\t0\t0"
        ));
        assert!(ok("/proc/sys/kernel/numa_balancing", "1"));
        // Not vmtrace's knobs.
        for p in [
            "/proc/sys/kernel/hostname",
            "/proc/sys/kernel/core_pattern",
            "/proc/sys/vm/../kernel/core_pattern",
            "/proc/sys/vm/x/y",
            "/proc/sys/vm/",
            "/sys/kernel/mm/transparent_hugepage/enabled",
            "/etc/passwd",
        ] {
            assert!(knob(Path::new(p)).is_none(), "{p}");
        }
        // Not vmtrace's syntax.
        assert!(!ok("/proc/sys/kernel/task_delayacct", "|sh"));
        assert!(!ok(ZSWAP_SWITCH, "yes"));
        assert!(!ok(MGLRU_SWITCH, "0x"));
        assert!(!ok("/proc/sys/vm/page-cluster", ""));
        assert!(!ok("/proc/sys/vm/page-cluster", "1;reboot"));
        assert!(!ok("/proc/sys/vm/page-cluster", &"1".repeat(257)));
    }

    #[test]
    fn sysctl_names_are_memory_ones_normalized() {
        assert_eq!(
            settable("vm.page-cluster").as_deref(),
            Ok("vm.page-cluster")
        );
        assert_eq!(settable("vm/swappiness").as_deref(), Ok("vm.swappiness"));
        assert_eq!(
            settable("kernel.numa_balancing").as_deref(),
            Ok("kernel.numa_balancing")
        );
        for bad in [
            "kernel.hostname",
            "kernel.core_pattern",
            "vm..swappiness",
            "vm/../kernel/core_pattern",
            "vm.",
            "vm.a.b",
            "/vm/swappiness",
            "VM.swappiness",
        ] {
            let e = settable(bad).expect_err(bad);
            assert!(e.contains("memory-management") && !e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn planted_values_are_quoted_short() {
        let q = quoted("\x1b[2Jx".repeat(20).as_str());
        assert!(
            q.starts_with('"') && !q.contains('\x1b') && q.len() < 120,
            "{q}"
        );
    }
}
