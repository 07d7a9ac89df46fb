//! The guests' files on a block device: one read-only ext4 image, built
//! once per `vmtrace kernels` from the host's own files and attached to
//! every guest of the comparison, so that the tools the job runs (the
//! compiler, make, the shell, their libraries, this vmtrace and the
//! workloads in it) are read through the guest's block layer and ext4,
//! the same bytes for every kernel.
//!
//! Why: over 9p every page the job faults in from a file is a round trip
//! through the guest kernel's 9p client (rewritten on netfs between 6.1
//! and 6.12); under memory pressure the page cache is evicted and those
//! re-reads sit on the measured path, so the guest setup rather than the
//! kernel under test could decide a comparison (docs/KERNELS.md has the
//! measured difference).
//!
//! The image holds [`IMAGE_DIRS`] (whatever of them exists on the host),
//! of /etc only [`ETC_ALLOWED`] (never shadow, gshadow, SSH or TLS keys,
//! sudoers: the image is a file on the host's disk, and it outlives a
//! killed vmtrace until the next one sweeps it), the host's usrmerge
//! links (`/bin -> usr/bin`) and vmtrace at [`GUEST_EXE`]. It is made
//! mode 0600 in root's private directory (`host::private_dir`). In the guest it is the upper layer of a read-only
//! overlay on the host root (9p): a file outside the image is still
//! found, over 9p. The directories are bind-mounted into a staging
//! directory inside a private mount namespace (`unshare --mount`), so no
//! mount outlives the build, whatever happens to vmtrace.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

use crate::host::private_dir::PrivateDir;

/// Host directories copied into the image: executables, libraries, the
/// C compiler and its headers.
pub const IMAGE_DIRS: &[&str] = &[
    "/usr/bin",
    "/usr/sbin",
    "/usr/libexec",
    "/usr/include",
    "/usr/lib/gcc",
    "/usr/lib64",
];

/// What of /etc goes into the image (those the host has): what the
/// loader, the C compiler's driver (through Debian's alternatives) and
/// user and group lookups read. Anything else of /etc the guest still
/// finds over 9p (the lower layer), but no copy of it lies on disk.
pub const ETC_ALLOWED: &[&str] = &[
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "host.conf",
    "localtime",
    "timezone",
    "os-release",
    "debian_version",
];

/// Top-level links copied as links when the host has them (usrmerge).
const MERGED_LINKS: &[&str] = &["/bin", "/sbin", "/lib", "/lib64"];

/// Where vmtrace is in the image (and in the guest).
pub const GUEST_EXE: &str = "/opt/vmtrace/vmtrace";

/// The image file, removed on drop.
pub struct RootImage {
    pub path: PathBuf,
    /// What the guest's files are on, one line: the recording's
    /// `guest_storage`.
    pub description: String,
}

impl Drop for RootImage {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The host directories that go into the image: [`IMAGE_DIRS`] and the
/// multiarch library directories (`/usr/lib/x86_64-linux-gnu`), those
/// that exist.
pub fn image_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = IMAGE_DIRS
        .iter()
        .map(PathBuf::from)
        .filter(|p| is_real_dir(p))
        .collect();
    if let Ok(rd) = std::fs::read_dir("/usr/lib") {
        let mut arch: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().ends_with("-linux-gnu") && is_real_dir(p))
            .collect();
        arch.sort();
        dirs.extend(arch);
    }
    dirs
}

fn is_real_dir(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
}

/// Bytes and entries under `dir`, on one file system, links not followed.
fn usage(dir: &Path, depth: u32) -> (u64, u64) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    let (mut bytes, mut entries) = (4096, 1);
    for e in rd.flatten() {
        let Ok(m) = e.path().symlink_metadata() else {
            continue;
        };
        if m.is_dir() && depth < 64 {
            let (b, n) = usage(&e.path(), depth + 1);
            bytes += b;
            entries += n;
        } else {
            bytes += m.len().div_ceil(4096) * 4096;
            entries += 1;
        }
    }
    (bytes, entries)
}

/// Builds the image `guest-root.img` in `private` (mode 0600) from
/// [`image_dirs`], [`ETC_ALLOWED`] and the vmtrace binary `exe`.
pub fn build(exe: &Path, private: &PrivateDir) -> Result<RootImage> {
    let dirs = image_dirs();
    if !dirs.iter().any(|d| d.ends_with("bin")) {
        bail!("no /usr/bin on this host: use --storage 9p");
    }
    let (path, file) = private.create_file("guest-root.img")?;
    let stage = private.path().join("stage");
    let made = stage_etc(&stage)
        .and_then(|etc| stage_and_format(exe, &dirs, &stage, &path, file).map(|b| b + etc));
    let _ = std::fs::remove_dir_all(&stage);
    if made.is_err() {
        let _ = std::fs::remove_file(&path);
    }
    let bytes = made?;
    let mut names: Vec<String> = vec!["/etc (the loader's, users' and alternatives' files)".into()];
    names.extend(dirs.iter().map(|d| d.display().to_string()));
    Ok(RootImage {
        path: path.to_path_buf(),
        description: format!(
            "block device: read-only ext4 image ({}) of the host's {} and vmtrace, \
             over the host root (9p) for anything else",
            crate::model::units::human(bytes),
            names.join(" ")
        ),
    })
}

/// Copies [`ETC_ALLOWED`] into `stage/etc`: files with their mode,
/// links as links, directories one level deep (alternatives: links;
/// ld.so.conf.d: files). Returns the bytes copied.
fn stage_etc(stage: &Path) -> Result<u64> {
    let etc = stage.join("etc");
    std::fs::create_dir_all(&etc)?;
    let mut bytes = 0;
    for name in ETC_ALLOWED {
        let from = Path::new("/etc").join(name);
        let Ok(m) = from.symlink_metadata() else {
            continue;
        };
        if m.is_dir() {
            std::fs::create_dir_all(etc.join(name))?;
            for e in std::fs::read_dir(&from)?.flatten() {
                let to = etc.join(name).join(e.file_name());
                bytes += copy_entry(&e.path(), &to)?;
            }
        } else {
            bytes += copy_entry(&from, &etc.join(name))?;
        }
    }
    Ok(bytes)
}

/// A link as a link, a regular file as a copy; anything else skipped.
fn copy_entry(from: &Path, to: &Path) -> Result<u64> {
    let m = from.symlink_metadata()?;
    if m.file_type().is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(from)?, to)?;
        Ok(0)
    } else if m.is_file() {
        std::fs::copy(from, to).with_context(|| format!("copying {}", from.display()))
    } else {
        Ok(0)
    }
}

/// The staging tree (mount points, links, vmtrace), then mkfs.ext4 -d
/// with the directories bind-mounted in a private mount namespace.
/// Returns the bytes of files copied.
fn stage_and_format(
    exe: &Path,
    dirs: &[PathBuf],
    stage: &Path,
    image: &Path,
    file: std::fs::File,
) -> Result<u64> {
    let opt = stage.join(GUEST_EXE.trim_start_matches('/'));
    if let Some(parent) = opt.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::copy(exe, &opt).context("copying vmtrace into the guest image")?;
    for l in MERGED_LINKS {
        if let Ok(target) = std::fs::read_link(l) {
            std::os::unix::fs::symlink(&target, stage.join(l.trim_start_matches('/')))?;
        }
    }
    let mut script = String::from("set -e\n");
    let (mut bytes, mut entries) = (std::fs::metadata(exe)?.len(), 64u64);
    for d in dirs {
        let point = stage.join(d.strip_prefix("/").unwrap_or(d));
        std::fs::create_dir_all(&point)?;
        script.push_str(&format!(
            "mount --bind -o ro '{}' '{}'\n",
            d.display(),
            point.display()
        ));
        let (b, n) = usage(d, 0);
        bytes += b;
        entries += n;
    }
    // Room for ext4's own metadata; no journal (read-only).
    let size = bytes + bytes / 8 + (64 << 20);
    let inodes = entries + entries / 8 + 1024;
    file.set_len(size)?;
    drop(file);
    script.push_str(&format!(
        "mkfs.ext4 -q -F -O ^has_journal -N {inodes} -E lazy_itable_init=1 -d '{}' '{}'\n",
        stage.display(),
        image.display()
    ));
    let out = Command::new(crate::host::root_program::system("unshare", "util-linux")?)
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .output()
        .context("running unshare (util-linux) to build the guest image")?;
    if !out.status.success() {
        bail!(
            "building the guest image failed: {} (--storage 9p runs without it)",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_dirs_exist_and_hold_no_link() {
        for d in image_dirs() {
            assert!(is_real_dir(&d), "{}", d.display());
        }
    }

    #[test]
    fn usage_counts_files_in_pages() {
        let dir = std::env::temp_dir().join(format!("vmtrace-usage-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("a"), [0u8; 10]).unwrap();
        std::fs::write(dir.join("sub/b"), [0u8; 5000]).unwrap();
        // Two directories (a page each), a (one page), b (two pages).
        assert_eq!(usage(&dir, 0), (5 * 4096, 4));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
