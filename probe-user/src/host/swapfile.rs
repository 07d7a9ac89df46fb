//! The box's temporary swapfile and the sweep of a killed vmtrace's.
//! Swapfiles live in `SWAP_DIR/vmtrace-swap/` (`--swap-dir`, default
//! /var/tmp), a directory vmtrace makes root's with mode 0700 and checks
//! on every use through a descriptor opened O_NOFOLLOW: one that is a
//! link, not root's, or writable by group or others is refused in one
//! line. In it each swapfile is `vmtrace-<pid>-<16 random hex>.swap`,
//! created O_EXCL|O_NOFOLLOW|O_CLOEXEC with mode 0600, so that no name can
//! be taken in advance. The sweep removes only regular, root-owned files
//! of exactly that name, of a dead pid, in such a directory: never a
//! file another user made.

use std::{
    ffi::CString,
    fs, io,
    os::{
        fd::{AsRawFd, FromRawFd, OwnedFd},
        unix::{ffi::OsStrExt, fs::MetadataExt},
    },
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

use crate::model::units::human;

/// Smallest swapfile accepted (mkswap needs 10 pages; be sensible).
pub const MIN_SWAP: u64 = 1 << 20;
/// Free space left on the swap filesystem after the swapfile.
const DISK_MARGIN: u64 = 1 << 30;
/// `--swap-dir` when none is given: the directory every sweep looks in.
pub const DEFAULT_SWAP_DIR: &str = "/var/tmp";
/// The directory in `--swap-dir` that holds vmtrace's swapfiles.
pub const SUBDIR: &str = "vmtrace-swap";

/// A temporary swapfile, swapped off and deleted on drop.
#[derive(Debug)]
pub struct Swapfile {
    pub path: PathBuf,
    pub bytes: u64,
    pub(crate) active: bool,
}

/// `DIR/vmtrace-swap`, made root's 0700 when missing, opened without
/// following a link and refused unless it is a directory of root's that
/// group and others cannot write.
pub fn home(swap_dir: &Path) -> Result<(PathBuf, OwnedFd)> {
    let home = swap_dir.join(SUBDIR);
    let c = CString::new(home.as_os_str().as_bytes())?;
    // SAFETY: a valid NUL-terminated path.
    if unsafe { libc::mkdir(c.as_ptr(), 0o700) } != 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::AlreadyExists {
            return Err(e).with_context(|| {
                format!("creating {}; choose another --swap-dir", home.display())
            });
        }
    }
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: a valid NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), flags) };
    if fd < 0 {
        bail!(
            "{} is a symbolic link or not a directory ({}), so not vmtrace's: \
             remove it, or choose another --swap-dir",
            home.display(),
            io::Error::last_os_error()
        );
    }
    // SAFETY: a descriptor just opened, owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let m = fs::File::from(fd.try_clone()?).metadata()?;
    if m.uid() != 0 || m.mode() & 0o022 != 0 {
        bail!(
            "{} is not vmtrace's (owner uid {}, mode {:o}; it must be root's and \
             writable by root only): remove it, or choose another --swap-dir",
            home.display(),
            m.uid(),
            m.mode() & 0o7777
        );
    }
    Ok((home, fd))
}

/// The pid in a swapfile name vmtrace makes (`vmtrace-<pid>-<16 hex>.swap`).
pub fn name_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("vmtrace-")?.strip_suffix(".swap")?;
    let (pid, hex) = rest.split_once('-')?;
    let ok = hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit());
    let digits = !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit());
    (ok && digits).then(|| pid.parse().ok()).flatten()
}

impl Swapfile {
    pub fn create(swap_dir: &Path, name: &str, bytes: u64) -> Result<Swapfile> {
        if bytes < MIN_SWAP {
            bail!("--swap {} is too small; use at least 1M", human(bytes));
        }
        let free = free_bytes(swap_dir)?;
        if bytes.saturating_add(DISK_MARGIN) > free {
            bail!(
                "--swap {} does not fit in {} ({} free, 1 GiB kept spare); \
                 choose a smaller --swap or a --swap-dir on a larger filesystem",
                human(bytes),
                swap_dir.display(),
                human(free)
            );
        }
        let (home, dirfd) = home(swap_dir)?;
        record_swap_dir(&home)?;
        let file_name = format!("{name}-{}.swap", crate::host::output::random_hex()?);
        let path = home.join(&file_name);
        let c = CString::new(file_name)?;
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: valid descriptor and NUL-terminated name.
        let fd =
            unsafe { libc::openat(dirfd.as_raw_fd(), c.as_ptr(), flags, 0o600 as libc::c_uint) };
        if fd < 0 {
            return Err(io::Error::last_os_error())
                .with_context(|| format!("creating swapfile {}", path.display()));
        }
        // SAFETY: a descriptor just opened, owned by nothing else.
        let file = unsafe { OwnedFd::from_raw_fd(fd) };
        // From here on, Drop removes the file.
        let mut swap = Swapfile {
            path,
            bytes,
            active: false,
        };
        let len = libc::off_t::try_from(bytes).context("swap size")?;
        // SAFETY: fallocate on a file we own, whole range.
        if unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) } != 0 {
            return Err(io::Error::last_os_error()).with_context(|| {
                format!(
                    "allocating {} for {} (swapfiles need a filesystem with fallocate, like ext4 or xfs; try --swap-dir)",
                    human(bytes),
                    swap.path.display()
                )
            });
        }
        drop(file);
        swap.format_and_enable()?;
        Ok(swap)
    }

    fn format_and_enable(&mut self) -> Result<()> {
        let out = Command::new(crate::host::root_program::system("mkswap", "util-linux")?)
            .arg(&self.path)
            .output()
            .context("running mkswap (from util-linux); install util-linux")?;
        if !out.status.success() {
            bail!(
                "mkswap {} failed: {}",
                self.path.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let c = CString::new(self.path.as_os_str().as_bytes())?;
        // SAFETY: a valid path; flags 0 = default priority.
        if unsafe { libc::swapon(c.as_ptr(), 0) } != 0 {
            return Err(io::Error::last_os_error()).with_context(|| {
                format!(
                    "swapon {} failed (the filesystem may not support swapfiles; try --swap-dir)",
                    self.path.display()
                )
            });
        }
        self.active = true;
        Ok(())
    }
}

impl Drop for Swapfile {
    fn drop(&mut self) {
        if self.active
            && let Ok(c) = CString::new(self.path.as_os_str().as_bytes())
            // SAFETY: a valid path of a swapfile we activated.
            && unsafe { libc::swapoff(c.as_ptr()) } != 0
        {
            eprintln!(
                "vmtrace: warning: swapoff {} failed: {}; run `swapoff {}`",
                self.path.display(),
                io::Error::last_os_error(),
                self.path.display()
            );
            return;
        }
        let mine = self
            .path
            .file_name()
            .and_then(|n| name_pid(&n.to_string_lossy()))
            == Some(std::process::id());
        if fs::remove_file(&self.path).is_ok()
            && mine
            && let Ok(dir) = crate::host::lock::StateDir::existing()
        {
            let _ = dir.remove(&swap_dir_state(std::process::id()));
        }
    }
}

fn free_bytes(dir: &Path) -> Result<u64> {
    let c = CString::new(dir.as_os_str().as_bytes())?;
    // SAFETY: statvfs writes into the zeroed struct we pass.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error())
            .with_context(|| format!("--swap-dir {} is not usable", dir.display()));
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Whether `path` is a swapfile a dead vmtrace left: named as vmtrace
/// names them, of a pid that is gone, a regular root-owned file (not a
/// link), in a `vmtrace-swap` directory of root's that only root writes.
fn is_stale(path: &Path) -> bool {
    let Some(pid) = path
        .file_name()
        .and_then(|n| name_pid(&n.to_string_lossy()))
    else {
        return false;
    };
    let Some(dir) = path.parent() else {
        return false;
    };
    let dir_ok = dir.file_name().is_some_and(|n| n == SUBDIR)
        && fs::symlink_metadata(dir)
            .is_ok_and(|m| m.is_dir() && m.uid() == 0 && m.mode() & 0o022 == 0);
    let file_ok = fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.uid() == 0);
    dir_ok && file_ok && crate::host::lock::owner_is_gone(&format!("vmtrace-{pid}"))
}

/// The state file naming the vmtrace-swap directory this vmtrace makes
/// swapfiles in (`/run/vmtrace/swapdir-PID.state`), so that a sweep after
/// a kill -9 finds a swapfile not yet active in any `--swap-dir`.
fn swap_dir_state(pid: u32) -> String {
    format!("swapdir-{pid}.state")
}

/// A recorded directory is one absolute path; more than this is not
/// vmtrace's.
const MAX_SWAP_DIR_STATE: u64 = 4096;

fn record_swap_dir(home: &Path) -> Result<()> {
    use std::io::Write;
    let dir = crate::host::lock::StateDir::open()?;
    if let Some(mut f) = dir.file(&swap_dir_state(std::process::id()), true)? {
        f.set_len(0)?;
        f.write_all(home.as_os_str().as_bytes())?;
    }
    Ok(())
}

/// The vmtrace-swap directories dead vmtraces recorded (their state
/// files removed as they are read): each an absolute path of at most
/// `MAX_SWAP_DIR_STATE` bytes, else ignored.
fn recorded_swap_dirs() -> Vec<PathBuf> {
    use std::{ffi::OsStr, io::Read};
    let Ok(dir) = crate::host::lock::StateDir::existing() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for name in dir.names() {
        let Some(pid) = name
            .strip_prefix("swapdir-")
            .and_then(|r| r.strip_suffix(".state"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if crate::host::lock::vmtrace_alive(pid) {
            continue;
        }
        let mut text = Vec::new();
        if let Ok(Some(f)) = dir.file(&name, false)
            && f.take(MAX_SWAP_DIR_STATE + 1)
                .read_to_end(&mut text)
                .is_ok()
            && text.len() as u64 <= MAX_SWAP_DIR_STATE
            && text.first() == Some(&b'/')
        {
            found.push(PathBuf::from(OsStr::from_bytes(&text)));
        }
        let _ = dir.remove(&name);
    }
    found
}

/// Removes the swapfiles dead vmtraces left in `swap_dir`'s vmtrace-swap
/// directory, in the directories they recorded, or active anywhere
/// (/proc/swaps), swapping them off first; returns what was removed.
pub fn clean_stale(swap_dir: &Path) -> Vec<String> {
    let swaps = crate::host::swapdev::read_proc_swaps().unwrap_or_default();
    let active: Vec<String> = crate::host::swapdev::parse_proc_swaps(&swaps);
    let mut files: Vec<PathBuf> = active.iter().map(PathBuf::from).collect();
    let mut homes = recorded_swap_dirs();
    homes.push(swap_dir.join(SUBDIR));
    for home in homes {
        if let Ok(entries) = fs::read_dir(home) {
            files.extend(entries.flatten().map(|e| e.path()));
        }
    }
    files.sort();
    files.dedup();
    let mut removed = Vec::new();
    for path in files.into_iter().filter(|p| is_stale(p)) {
        drop(Swapfile {
            active: active.iter().any(|a| Path::new(a) == path),
            path: path.clone(),
            bytes: 0,
        });
        if !path.exists() {
            removed.push(path.display().to_string());
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_vmtraces_own_names_are_recognised() {
        assert_eq!(name_pid("vmtrace-42-0123456789abcdef.swap"), Some(42));
        for other in [
            "vmtrace-42.swap",
            "vmtrace-42-0123.swap",
            "vmtrace--0123456789abcdef.swap",
            "vmtrace-4x-0123456789abcdef.swap",
            "vmtrace-42-0123456789abcdeg.swap",
            "vmtrace-42-0123456789abcdef.swap.bak",
            "other-42-0123456789abcdef.swap",
        ] {
            assert_eq!(name_pid(other), None, "{other}");
        }
    }

    #[test]
    fn the_sweep_leaves_files_outside_a_vmtrace_swap_directory() {
        // A dead pid's name, but in a directory that is not vmtrace-swap.
        let dir = crate::host::test_scratch("swapfile");
        let f = dir.join("vmtrace-4294967294-0123456789abcdef.swap");
        fs::write(&f, b"x").expect("write");
        assert!(!is_stale(&f));
        // In a vmtrace-swap directory that group or others can write.
        let home = dir.join(SUBDIR);
        fs::create_dir(&home).expect("mkdir");
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&home, fs::Permissions::from_mode(0o777)).expect("chmod");
        let g = home.join("vmtrace-4294967294-0123456789abcdef.swap");
        fs::write(&g, b"x").expect("write");
        assert!(!is_stale(&g));
        let _ = fs::remove_dir_all(&dir);
    }
}
