//! Running commands, for xtask and for the bench (xtask/bench includes
//! this file by path, so both run, echo and find programs one way):
//! the including module names the echo's prefix (`TOOL`) and the
//! workspace (`root`).

use std::process::Command;

use anyhow::{Context, Result, bail};

/// Runs a command, echoing it; fails with its exit status.
pub fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("{}: $ {}", super::TOOL, show(cmd));
    let status = cmd
        .status()
        .with_context(|| format!("cannot start `{}`", show(cmd)))?;
    if !status.success() {
        bail!("`{}` failed ({status})", show(cmd));
    }
    Ok(())
}

pub fn show(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|u| u.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

/// Installs Debian packages with apt-get, asking for nothing else:
/// `--no-remove` (apt-get aborts rather than remove an installed package
/// to make room: Debian's qemu-system-x86 conflicts with a newer
/// qemu-utils from backports, and apt would remove the user's) and
/// `--no-upgrade`; the package lists are updated once if the install
/// fails.
pub fn apt_install(packages: &[&str]) -> Result<()> {
    let install = || {
        run(Command::new("apt-get")
            .args([
                "install",
                "-y",
                "--no-install-recommends",
                "--no-remove",
                "--no-upgrade",
            ])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive"))
    };
    if install().is_err() {
        run(Command::new("apt-get").arg("update"))?;
        install()?;
    }
    Ok(())
}

/// The time now, UTC, as a directory name: 20261205T143000Z.
pub fn utc_stamp() -> String {
    Command::new("date")
        .args(["-u", "+%Y%m%dT%H%M%SZ"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|_| "run".into())
}

/// `cargo`, as the one running us.
pub fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.current_dir(super::root());
    c
}
