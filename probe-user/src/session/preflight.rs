//! The checks made before anything is set up, written once for `run`,
//! `attach`, `kernels` and `probes`: root (or the capabilities), what a
//! vmtrace that died left behind, the output path, the command and the
//! tools a subcommand needs. Each says what to do in one line.

use std::{ffi::OsString, path::Path};

use anyhow::{Result, bail};

use crate::host::membox::{self, BoxSpec};

/// Not root says so first: nothing else can work without it.
pub fn require_root() -> Result<()> {
    crate::host::privilege::require()
}

/// Restores the sysctls a vmtrace that died left changed, saying so;
/// before the environment is captured, so that recordings show them. A
/// state file vmtrace did not write refuses the run.
pub fn restore_stale_sysctls() -> Result<()> {
    let mut restored = crate::host::sysctl::restore_stale()?;
    // Several dead vmtraces may have left the same switch: once.
    restored.sort();
    restored.dedup();
    if !restored.is_empty() {
        eprintln!(
            "vmtrace: a vmtrace that died left sysctls changed: {}",
            restored.join(", ")
        );
    }
    Ok(())
}

/// Before a run's box is made: removes the sysctls, cgroups and
/// swapfiles a vmtrace that died left behind, saying so, then the live
/// locks of the dead.
pub fn clean_stale_box(swap_dir: &Path) -> Result<()> {
    let mut stale = crate::host::sysctl::restore_stale()?;
    stale.extend(membox::clean_stale(swap_dir));
    crate::host::lock::remove_dead_live_locks();
    if !stale.is_empty() {
        eprintln!(
            "vmtrace: removed what a vmtrace that died left behind: {}",
            stale.join(", ")
        );
    }
    Ok(())
}

/// Refuses, before anything runs, an output path vmtrace could not
/// write: its directory missing, not a directory, or not writable by
/// whom the file is for (sudo's invoker, checked as that user, not by
/// root's rights), or the path a symbolic link.
pub fn check_writable(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if path.is_dir() {
        bail!(
            "-o {}: that is a directory; give a file name, like {}/run.{}",
            path.display(),
            path.display(),
            crate::model::recording::EXTENSION
        );
    }
    if !dir.is_dir() {
        bail!(
            "cannot write the recording to {}: directory {} does not exist; create it or choose another path with -o",
            path.display(),
            dir.display()
        );
    }
    let who = crate::host::output::invoker()?;
    match crate::host::output::check(path, who.as_ref()) {
        Ok(()) => Ok(()),
        Err(crate::host::output::Unwritable::Link) => bail!(
            "{} is a symbolic link; vmtrace does not write through links (another user \
             may have planted it): remove it or choose another path",
            path.display()
        ),
        Err(crate::host::output::Unwritable::Denied { who, why }) => bail!(
            "cannot write to {}: directory {} is not writable by {who} ({why}); \
             choose another path",
            path.display(),
            dir.display()
        ),
    }
}

/// Whether a program of that name is in a directory of $PATH.
pub(crate) fn on_path(program: &Path) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

/// The command could not be started: not found (127) or not
/// executable (126), the codes a shell gives (`cli::exit`).
#[derive(Debug)]
pub struct CannotStart {
    pub code: i32,
    message: String,
}

impl CannotStart {
    pub fn not_found(message: String) -> CannotStart {
        CannotStart { code: 127, message }
    }

    pub fn not_executable(message: String) -> CannotStart {
        CannotStart { code: 126, message }
    }
}

impl std::fmt::Display for CannotStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CannotStart {}

/// A missing command is reported before anything is set up.
pub fn check_command_exists(program: &OsString) -> Result<()> {
    let p = Path::new(program);
    let found = if p.components().count() > 1 {
        p.is_file()
    } else {
        on_path(p)
    };
    if !found && p.components().count() > 1 {
        bail!(CannotStart::not_found(format!(
            "command `{}` not found; check the name, or give its path",
            p.display()
        )));
    }
    if !found {
        let bundled: Vec<&str> = vmtrace_workloads::cli::BUNDLED
            .iter()
            .map(|b| b.name)
            .collect();
        bail!(CannotStart::not_found(format!(
            "`{}` is neither a bundled workload ({}) nor a command on PATH; \
             check the name, or give its path",
            p.display(),
            bundled.join(", ")
        )));
    }
    Ok(())
}

/// Each (tool, package) must be on PATH; the first missing one is named
/// with the package that has it.
pub fn require_tools(tools: &[(&str, &str)]) -> Result<()> {
    for (tool, package) in tools {
        crate::host::root_program::system(tool, package)?;
    }
    Ok(())
}

/// A box with a limit but no swap anywhere: the command will be
/// OOM-killed rather than swap, which is said before it starts.
pub fn note_without_swap(spec: &BoxSpec) {
    if let Some(mem) = spec.mem_limit
        && spec.swap.is_none()
        && crate::host::swapdev::SwapLayout::read().is_ok_and(|l| l.areas.is_empty())
    {
        eprintln!(
            "vmtrace: note: no swap is active: the command will be OOM-killed rather \
             than swap if it outgrows --mem {} (add --swap SIZE to swap)",
            crate::model::units::human(mem)
        );
    }
}
