//! QEMU for the tests that boot other kernels (`vmtrace kernels`).
//!
//! Debian's qemu-system-x86 when apt installs it without removing
//! anything. On a machine with a newer qemu-utils (bookworm-backports'
//! 10.x), that qemu-utils breaks bookworm's qemu-system-common, and apt
//! would remove the user's package to make room: we never do that.
//! Instead setup installs qemu-system-x86's dependencies (none of them
//! conflicts), unpacks the package itself under
//! `$CARGO_HOME/vmtrace-qemu` without registering it with dpkg, and links
//! its `qemu-system-x86_64` into `$CARGO_HOME/bin`. Its firmware comes
//! from the installed qemu-system-data and seabios; nothing else of
//! qemu-system-common is needed to boot a kernel with -nographic.

use std::{path::Path, process::Command};

use anyhow::{Context, Result, bail};

use super::{cargo_home, install_debian, link};
use crate::util;

const PACKAGE: &str = "qemu-system-x86";
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
            .args(["download", PACKAGE])
            .current_dir(&debs),
    )?;
    for entry in std::fs::read_dir(&debs).with_context(|| format!("reading {}", debs.display()))? {
        let deb = entry?.path();
        if deb.extension().is_some_and(|e| e == "deb") {
            util::run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&dir))?;
        }
    }
    let _ = std::fs::remove_dir_all(&debs);
    let binary = dir.join("usr/bin").join(BINARY);
    let bin = cargo_home().join("bin");
    std::fs::create_dir_all(&bin).with_context(|| format!("creating {}", bin.display()))?;
    link(&binary, &bin.join(BINARY))?;
    runs(&binary)
}

/// What qemu-system-x86 depends on, less qemu-system-common (the package
/// the newer qemu-utils breaks; the binary does not need it).
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
        .filter(|p| p != "qemu-system-common" && p != PACKAGE)
        .collect();
    deps.sort();
    deps.dedup();
    deps
}

fn installed(package: &str) -> bool {
    util::output(Command::new("dpkg-query").args(["-W", "-f", "${Status}", package]))
        .is_ok_and(|s| s.trim() == "install ok installed")
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
