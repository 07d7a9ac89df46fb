//! QEMU for the tests that boot other kernels (`vmtrace kernels`).
//!
//! Debian's qemu-system-x86 when apt installs it without removing
//! anything. On a machine with a newer qemu-utils (bookworm-backports'
//! 10.x), that qemu-utils breaks bookworm's qemu-system-common, and apt
//! would remove the user's package to make room: we never do that.
//! Instead setup installs the dependencies of qemu-system-x86 and
//! qemu-system-common (none of them conflicts), unpacks those two
//! packages under `$CARGO_HOME/vmtrace-qemu` without registering them
//! with dpkg, and links `qemu-system-x86_64` into `$CARGO_HOME/bin`.
//! Debian's QEMU finds its modules (TCG itself is one, in
//! qemu-system-common) and firmware relative to its binary, so the
//! private tree also gets links to the installed firmware: the entries of
//! /usr/share/qemu (qemu-system-data), /usr/share/seabios and
//! /usr/lib/ipxe.

use std::{path::Path, process::Command};

use anyhow::{Context, Result, bail};

use super::{cargo_home, install_debian, link};
use crate::util;

const PACKAGE: &str = "qemu-system-x86";
/// Unpacked beside it: its modules (accel-tcg-x86_64.so among them).
const COMMON: &str = "qemu-system-common";
const BINARY: &str = "qemu-system-x86_64";

/// Installs QEMU when `qemu-system-x86_64` is not on PATH.
pub fn install() -> Result<()> {
    if install_debian(&[PACKAGE]).is_ok() {
        return Ok(());
    }
    println!(
        "setup: apt cannot install {PACKAGE} without removing a package; unpacking a private \
         copy under {}",
        private_dir().display()
    );
    install_private()
}

fn private_dir() -> std::path::PathBuf {
    cargo_home().join("vmtrace-qemu")
}

fn install_private() -> Result<()> {
    let deps = dependencies()?;
    // Only the missing ones: naming an installed library to apt-get
    // install would upgrade it (and systemd with it).
    let deps: Vec<&str> = deps
        .iter()
        .map(String::as_str)
        .filter(|p| !installed(p))
        .collect();
    if !deps.is_empty() {
        install_debian(&deps)?;
    }
    let dir = private_dir();
    let debs = dir.join("debs");
    std::fs::create_dir_all(&debs).with_context(|| format!("creating {}", debs.display()))?;
    util::run(
        Command::new("apt-get")
            .args(["download", PACKAGE, COMMON])
            .current_dir(&debs),
    )?;
    for entry in std::fs::read_dir(&debs).with_context(|| format!("reading {}", debs.display()))? {
        let deb = entry?.path();
        if deb.extension().is_some_and(|e| e == "deb") {
            util::run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&dir))?;
        }
    }
    let _ = std::fs::remove_dir_all(&debs);
    link_firmware(&dir)?;
    let binary = dir.join("usr/bin").join(BINARY);
    let bin = cargo_home().join("bin");
    std::fs::create_dir_all(&bin).with_context(|| format!("creating {}", bin.display()))?;
    link(&binary, &bin.join(BINARY))?;
    runs(&binary)
}

/// Links the installed firmware where the private binary looks for it.
fn link_firmware(dir: &Path) -> Result<()> {
    let share = dir.join("usr/share/qemu");
    std::fs::create_dir_all(&share).with_context(|| format!("creating {}", share.display()))?;
    // File by file: qemu-system-common has a usr/share/qemu of its own.
    let installed = Path::new("/usr/share/qemu");
    for entry in std::fs::read_dir(installed).context("reading /usr/share/qemu")? {
        let entry = entry?;
        let at = share.join(entry.file_name());
        if !at.exists() {
            link(&entry.path(), &at)?;
        }
    }
    for (target, at) in [
        ("/usr/share/seabios", "usr/share/seabios"),
        ("/usr/lib/ipxe", "usr/lib/ipxe"),
    ] {
        let at = dir.join(at);
        if let Some(parent) = at.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        link(Path::new(target), &at)?;
    }
    Ok(())
}

/// What the two packages depend on, less themselves (qemu-system-common
/// is the package the newer qemu-utils breaks).
fn dependencies() -> Result<Vec<String>> {
    let out = util::output(Command::new("apt-cache").args([
        "depends",
        "--no-recommends",
        "--no-suggests",
        "--no-conflicts",
        "--no-breaks",
        "--no-replaces",
        "--no-enhances",
        PACKAGE,
        COMMON,
    ]))?;
    Ok(parse_depends(&out))
}

fn parse_depends(apt_cache: &str) -> Vec<String> {
    let mut deps: Vec<String> = apt_cache
        .lines()
        .filter_map(|l| l.trim().trim_start_matches('|').strip_prefix("Depends:"))
        .map(|p| p.trim().to_string())
        // <virtual> names cannot be installed; a real alternative follows.
        .filter(|p| !p.is_empty() && !p.starts_with('<'))
        .filter(|p| p != COMMON && p != PACKAGE)
        .collect();
    deps.sort();
    deps.dedup();
    deps
}

fn installed(package: &str) -> bool {
    util::output(Command::new("dpkg-query").args(["-W", "-f", "${Status}", package]))
        .is_ok_and(|s| s.trim() == "install ok installed")
}

/// Starts the binary with TCG (a module here) and its firmware, and
/// quits it from its monitor.
fn runs(binary: &Path) -> Result<()> {
    use std::io::Write;
    let mut child = Command::new(binary)
        .args([
            "-accel", "tcg", "-display", "none", "-monitor", "stdio", "-S",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("running {}", binary.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(b"quit\n");
    }
    let out = child.wait_with_output()?;
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || !err.trim().is_empty() {
        bail!("{} does not start: {}", binary.display(), err.trim());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depends_lists_packages_but_not_the_broken_one() {
        let out = "qemu-system-x86\n  Depends: libaio1\n  Depends: qemu-system-common\n  \
                   Depends: seabios\n |Depends: <libfoo>\n  Depends: libbar\n  \
                   Depends: libaio1\n";
        assert_eq!(parse_depends(out), ["libaio1", "libbar", "seabios"]);
    }
}
