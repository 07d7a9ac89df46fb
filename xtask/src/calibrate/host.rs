//! Where a calibration keeps things, and who may touch them. Root's
//! directory, kept between runs: the tree unpacked from Debian's tarball,
//! the builder's cache, the patches staged where the builder can read
//! them. `vmtrace kernels` acts as its invoker (nobody here) for its
//! build and its output, so the output directories are nobody's, and
//! the checkout must be one others can traverse.

use std::{
    io::ErrorKind,
    os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt},
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

use super::{BUILDER_ID, Case};
use crate::{setup, util};

/// Root's directory for the tree and the build cache, kept between runs.
const WORK_DIR: &str = "/var/tmp/vmtrace-calibrate";
/// The tree's directory in the tarball, and under WORK_DIR.
const TREE_NAME: &str = "linux-source-6.1";

/// WORK_DIR, made when missing (0755: the builder reads the tree through
/// it); refused when it is a link, not root's, or writable by others.
pub(super) fn work_dir() -> Result<PathBuf> {
    let dir = PathBuf::from(WORK_DIR);
    make_dir(&dir, 0o755)?;
    let meta = real_dir(&dir)?;
    if meta.uid() != 0 {
        bail!(
            "{} belongs to uid {}, not root: remove it (its tree and cache are root's)",
            dir.display(),
            meta.uid()
        );
    }
    if meta.mode() & 0o022 != 0 {
        bail!(
            "{} is writable by others (mode {:o}): chmod 755 it",
            dir.display(),
            meta.mode() & 0o7777
        );
    }
    Ok(dir)
}

/// Refuses a path the builder (nobody) cannot reach: `vmtrace kernels`
/// runs its own binary as the builder, and writes its output as it.
pub(super) fn check_builder_reaches(path: &Path) -> Result<()> {
    for dir in path.ancestors().skip(1) {
        let Ok(meta) = std::fs::metadata(dir) else {
            continue;
        };
        let mode = meta.mode();
        let by_owner = meta.uid() == BUILDER_ID && mode & 0o100 != 0;
        if mode & 0o001 == 0 && !by_owner {
            bail!(
                "the kernel builder (uid {BUILDER_ID}) cannot reach {}: {} is mode {:o}; \
                 calibrate from a checkout others can traverse",
                path.display(),
                dir.display(),
                mode & 0o7777
            );
        }
    }
    Ok(())
}

/// A directory for one `vmtrace kernels` output, made by root and given
/// to the builder (0755), which writes the output as its invoker.
pub(super) fn builder_out_dir(dir: &Path) -> Result<()> {
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    make_dir(dir, 0o755)?;
    real_dir(dir)?;
    std::os::unix::fs::lchown(dir, Some(BUILDER_ID), Some(BUILDER_ID))
        .with_context(|| format!("chown {BUILDER_ID}:{BUILDER_ID} {}", dir.display()))?;
    check_builder_reaches(dir)
}

/// The metadata of a directory that is one, not a link to one.
fn real_dir(dir: &Path) -> Result<std::fs::Metadata> {
    let meta =
        std::fs::symlink_metadata(dir).with_context(|| format!("reading {}", dir.display()))?;
    if !meta.file_type().is_dir() {
        bail!("{} is not a directory (a link?): remove it", dir.display());
    }
    Ok(meta)
}

/// mkdir with a mode; an existing one is left as it is.
fn make_dir(dir: &Path, mode: u32) -> Result<()> {
    match std::fs::DirBuilder::new().mode(mode).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e).with_context(|| format!("creating {}", dir.display())),
    }
}

/// The tree, unpacked from Debian's tarball when its Makefile is missing:
/// into a directory of its own, then renamed into place.
pub(super) fn unpacked_tree(work: &Path) -> Result<PathBuf> {
    let tree = work.join(TREE_NAME);
    if tree.join("Makefile").is_file() {
        return Ok(tree);
    }
    let tarball = setup::LINUX_SOURCE_TARBALL;
    if !Path::new(tarball).is_file() {
        bail!("{tarball} is missing: `cargo xtask setup --kernel-build` installs it");
    }
    remove_stale_unpacks(work);
    let tmp = work.join(format!("unpack-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::DirBuilder::new()
        .mode(0o755)
        .create(&tmp)
        .with_context(|| format!("creating {}", tmp.display()))?;
    eprintln!(
        "calibrate: unpacking {tarball} into {} (about a minute)",
        work.display()
    );
    util::run(
        Command::new("tar")
            .args(["--no-same-owner", "-xJf", tarball, "-C"])
            .arg(&tmp),
    )?;
    let unpacked = tmp.join(TREE_NAME);
    if !unpacked.join("Makefile").is_file() {
        bail!("{tarball} has no {TREE_NAME}/Makefile");
    }
    // A tree without its Makefile: an unpack of an older xtask, or a
    // hand's; a link is removed, not followed.
    if let Ok(meta) = std::fs::symlink_metadata(&tree) {
        if meta.is_dir() {
            std::fs::remove_dir_all(&tree)
        } else {
            std::fs::remove_file(&tree)
        }
        .with_context(|| format!("removing the incomplete {}", tree.display()))?;
    }
    std::fs::rename(&unpacked, &tree)
        .with_context(|| format!("moving the tree to {}", tree.display()))?;
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(tree)
}

/// `unpack-PID` directories of calibrations that are gone.
fn remove_stale_unpacks(work: &Path) {
    let Ok(entries) = std::fs::read_dir(work) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name.to_str().and_then(|n| n.strip_prefix("unpack-"));
        if let Some(pid) = pid.filter(|p| p.parse::<u32>().is_ok())
            && !Path::new("/proc").join(pid).exists()
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// WORK_DIR/cache, the builder's (nobody's, 0700): where `vmtrace
/// kernels` keeps what it built.
pub(super) fn builder_cache(work: &Path) -> Result<PathBuf> {
    let cache = work.join("cache");
    make_dir(&cache, 0o700)?;
    real_dir(&cache)?;
    std::os::unix::fs::lchown(&cache, Some(BUILDER_ID), Some(BUILDER_ID))
        .with_context(|| format!("chown {BUILDER_ID}:{BUILDER_ID} {}", cache.display()))?;
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("chmod 700 {}", cache.display()))?;
    Ok(cache)
}

/// Copies of the cases' patches in WORK_DIR/patches (root's, readable by
/// all): the builder reads them, and a checkout's files may be closed
/// to it (a umask of 077).
pub(super) fn staged_patches(work: &Path, cases: &[&Case]) -> Result<PathBuf> {
    let dir = work.join("patches");
    make_dir(&dir, 0o755)?;
    real_dir(&dir)?;
    let source = util::root().join("xtask/calibrate/patches");
    for case in cases {
        let from = source.join(case.patch);
        let text = std::fs::read(&from).with_context(|| format!("reading {}", from.display()))?;
        let to = dir.join(case.patch);
        match std::fs::remove_file(&to) {
            Err(e) if e.kind() != ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("removing {}", to.display()));
            }
            _ => {}
        }
        // create_new: a link put there since is not followed.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&to)
            .with_context(|| format!("creating {}", to.display()))?;
        std::io::Write::write_all(&mut file, &text)
            .with_context(|| format!("writing {}", to.display()))?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_directory_or_a_link_is_refused() {
        let base =
            std::env::temp_dir().join(format!("xtask-calibrate-host-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let open = base.join("open");
        let closed = base.join("closed");
        make_dir(&base, 0o755).unwrap();
        make_dir(&open, 0o755).unwrap();
        make_dir(&closed, 0o700).unwrap();
        // umask may have narrowed them: set the modes the test means.
        for (d, m) in [(&base, 0o755), (&open, 0o755), (&closed, 0o700)] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(m)).unwrap();
        }
        std::os::unix::fs::symlink(&open, base.join("link")).unwrap();
        let reach_open = check_builder_reaches(&open.join("run.vmtrace.json"));
        let reach_closed = check_builder_reaches(&closed.join("run.vmtrace.json"));
        let link = real_dir(&base.join("link"));
        let dir = real_dir(&open);
        let again = make_dir(&open, 0o755);
        let _ = std::fs::remove_dir_all(&base);
        assert!(reach_open.is_ok(), "{reach_open:?}");
        let err = format!("{:#}", reach_closed.unwrap_err());
        assert!(err.contains("is mode 700"), "{err}");
        assert!(format!("{:#}", link.unwrap_err()).contains("not a directory"));
        assert!(dir.is_ok() && again.is_ok());
    }
}
