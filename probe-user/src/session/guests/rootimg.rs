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
//! The image holds [`IMAGE_DIRS`] (whatever of them exists on the host)
//! with the host's usrmerge links (`/bin -> usr/bin`) and vmtrace at
//! [`GUEST_EXE`]. In the guest it is the upper layer of a read-only
//! overlay on the host root (9p): a file outside the image is still
//! found, over 9p. The directories are bind-mounted into a staging
//! directory inside a private mount namespace (`unshare --mount`), so no
//! mount outlives the build, whatever happens to vmtrace.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

/// Host directories copied into the image: executables, libraries, the
/// C compiler and its headers, and /etc (the loader's cache, passwd).
pub const IMAGE_DIRS: &[&str] = &[
    "/etc",
    "/usr/bin",
    "/usr/sbin",
    "/usr/libexec",
    "/usr/include",
    "/usr/lib/gcc",
    "/usr/lib64",
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

/// Builds the image at `path` from [`image_dirs`] and the vmtrace binary
/// `exe`.
pub fn build(exe: &Path, path: &Path) -> Result<RootImage> {
    let dirs = image_dirs();
    if !dirs.iter().any(|d| d.ends_with("bin")) {
        bail!("no /usr/bin on this host: use --storage 9p");
    }
    let stage = path.with_extension("stage");
    let _ = std::fs::remove_dir_all(&stage);
    let made = stage_and_format(exe, &dirs, &stage, path);
    let _ = std::fs::remove_dir_all(&stage);
    let bytes = made?;
    let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
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

/// The staging tree (mount points, links, vmtrace), then mkfs.ext4 -d
/// with the directories bind-mounted in a private mount namespace.
/// Returns the bytes of files copied.
fn stage_and_format(exe: &Path, dirs: &[PathBuf], stage: &Path, image: &Path) -> Result<u64> {
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
    let f =
        std::fs::File::create(image).with_context(|| format!("creating {}", image.display()))?;
    f.set_len(size)?;
    drop(f);
    script.push_str(&format!(
        "mkfs.ext4 -q -F -O ^has_journal -N {inodes} -E lazy_itable_init=1 -d '{}' '{}'\n",
        stage.display(),
        image.display()
    ));
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .output()
        .context("running unshare (util-linux) to build the guest image")?;
    if !out.status.success() {
        let _ = std::fs::remove_file(image);
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
