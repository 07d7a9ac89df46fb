//! Root's private scratch directories: `/var/tmp/vmtrace-WHAT-PID-RANDOM`,
//! for large files no other user may read or plant (the guests' disk
//! images and initramfs, which hold copies of the host's files).
//!
//! /var/tmp is writable by everyone (sticky), so a name there can be
//! planted in advance. `mkdir` never follows a link and fails on any
//! existing entry: a planted name only makes vmtrace try another random
//! one. The directory is made with mode 0700 and checked after (owner 0,
//! no group or other bits, a directory, not a link) through the open
//! descriptor's metadata; files in it are created O_EXCL|O_NOFOLLOW, mode
//! 0600. It is removed on drop; one left by a vmtrace that was killed is
//! removed by the next one to make its own (`sweep`): root-owned
//! directories of that pattern whose pid no longer runs, and nothing else.

use std::{
    fs::{DirBuilder, File, OpenOptions},
    os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt},
    path::{Path, PathBuf},
};

use anyhow::{Context, Result, bail};

/// Where the directories are made.
pub const PARENT: &str = "/var/tmp";

/// A private directory, removed (with what is in it) on drop.
pub struct PrivateDir {
    path: PathBuf,
}

impl PrivateDir {
    /// Makes `PARENT/vmtrace-WHAT-PID-RANDOM` (after removing stale ones
    /// of `what`).
    pub fn create(what: &str) -> Result<Self> {
        Self::create_in(Path::new(PARENT), what)
    }

    /// As `create`, under `parent` (the tests' own directory).
    pub fn create_in(parent: &Path, what: &str) -> Result<Self> {
        sweep(parent, what);
        let pid = std::process::id();
        for _ in 0..16 {
            let path = parent.join(format!("vmtrace-{what}-{pid}-{:016x}", random_u64()?));
            match DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    let dir = PrivateDir { path };
                    dir.check()?;
                    return Ok(dir);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!(
                            "creating {}: vmtrace needs a private directory there",
                            path.display()
                        )
                    });
                }
            }
        }
        bail!(
            "could not make a private directory in {}: every name tried existed; \
             look for entries named vmtrace-{what}-* there",
            parent.display()
        )
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates `name` in the directory: O_EXCL|O_NOFOLLOW, mode 0600.
    pub fn create_file(&self, name: &str) -> Result<(PathBuf, File)> {
        let path = self.path.join(name);
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        Ok((path, f))
    }

    /// Owner root (or this process's uid, in unprivileged unit tests),
    /// mode 0700, a real directory: what `mkdir` made, before anything
    /// is put in it.
    fn check(&self) -> Result<()> {
        let dir =
            File::open(&self.path).with_context(|| format!("opening {}", self.path.display()))?;
        let m = dir.metadata()?;
        // SAFETY: geteuid cannot fail.
        let me = unsafe { libc::geteuid() };
        if !m.is_dir() || m.uid() != me || m.mode() & 0o077 != 0 {
            bail!(
                "{} is not a private directory of uid {me} (uid {}, mode {:o}): remove it",
                self.path.display(),
                m.uid(),
                m.mode() & 0o7777
            );
        }
        Ok(())
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        // remove_dir_all does not follow links inside the directory.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// 64 random bits from the kernel (getrandom).
fn random_u64() -> Result<u64> {
    let mut b = [0u8; 8];
    // SAFETY: the buffer is valid for its length.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != b.len() as isize {
        bail!("getrandom failed: {}", std::io::Error::last_os_error());
    }
    Ok(u64::from_ne_bytes(b))
}

/// Removes `parent/vmtrace-WHAT-PID-*` directories owned by this uid
/// whose pid is gone, and returns them. Entries owned by anyone else,
/// links and files are left alone.
pub fn sweep(parent: &Path, what: &str) -> Vec<PathBuf> {
    let prefix = format!("vmtrace-{what}-");
    let Ok(rd) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let mut removed = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(&prefix)
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(m) = e.path().symlink_metadata() else {
            continue;
        };
        if !m.is_dir() || m.uid() != me || crate::host::proc::pid_exists(pid) {
            continue;
        }
        if std::fs::remove_dir_all(e.path()).is_ok() {
            removed.push(e.path());
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        crate::host::test_scratch(name)
    }

    #[test]
    fn the_directory_is_0700_its_files_0600_and_it_goes_on_drop() {
        let parent = scratch("private-dir-mode");
        let dir = PrivateDir::create_in(&parent, "t").expect("create");
        let m = std::fs::metadata(dir.path()).expect("stat");
        assert_eq!(m.mode() & 0o777, 0o700);
        let (p, _f) = dir.create_file("disk.img").expect("file");
        assert_eq!(std::fs::metadata(&p).expect("stat").mode() & 0o777, 0o600);
        // A second create of the same name is refused (O_EXCL).
        assert!(dir.create_file("disk.img").is_err());
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(!path.exists());
    }

    #[test]
    fn a_planted_link_is_not_followed() {
        let parent = scratch("private-dir-link");
        let dir = PrivateDir::create_in(&parent, "t").expect("create");
        let victim = parent.join("victim");
        std::fs::write(&victim, "keep").expect("write");
        std::os::unix::fs::symlink(&victim, dir.path().join("disk.img")).expect("link");
        assert!(dir.create_file("disk.img").is_err());
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "keep");
    }

    #[test]
    fn sweep_removes_only_dead_pids_directories() {
        let parent = scratch("private-dir-sweep");
        // pid_max is at most 2^22: this pid cannot run.
        let dead = parent.join("vmtrace-t-4194999-00");
        let live = parent.join(format!("vmtrace-t-{}-00", std::process::id()));
        let other = parent.join("vmtrace-u-4194999-00");
        let file = parent.join("vmtrace-t-4194998-00");
        for d in [&dead, &live, &other] {
            std::fs::create_dir_all(d.join("sub")).expect("mkdir");
        }
        std::fs::write(&file, "").expect("write");
        assert_eq!(sweep(&parent, "t"), vec![dead.clone()]);
        assert!(!dead.exists() && live.exists() && other.exists() && file.exists());
    }
}
