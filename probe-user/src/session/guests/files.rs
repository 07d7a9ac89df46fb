//! A guest's files: those made for it in root's private directory (its
//! initramfs, scratch and swap disks; removed after it however it ended)
//! and those it left in its job directory, the invoker's, which are
//! brought home as the invoker's own files, and what is read back from
//! there through its held descriptor (`host::held_dir`).

use std::{
    os::unix::fs::OpenOptionsExt,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result};

use super::{GuestSetup, KernelsOptions, image, initramfs, qemu};
use crate::{host::held_dir::HeldDir, model::recording::Recording};

/// The files the guest left in its job directory, made QEMU's (root's)
/// with mode 0600 by the mapped share, rewritten as the invoker's
/// (`host::output`: a new file, never through a link), so that the user
/// reads their results; `.virtfs_metadata` (mapped-file) goes. A file
/// over the recording cap stays as it is, said once.
pub(super) fn bring_home(dir: &HeldDir) {
    use std::io::Read;
    // Through the held descriptor: the directory's name may be a link by now.
    let _ = std::fs::remove_dir_all(dir.proc_path().join(".virtfs_metadata"));
    let Ok(names) = dir.names() else {
        return;
    };
    for name in names {
        let Some(name) = name.to_str() else {
            continue;
        };
        let path = dir.path().join(name);
        // Opened through the directory's descriptor without following a
        // link and checked on the descriptor (a regular file, one link):
        // the directory is the invoker's, who could swap a file for a
        // link to one of root's between a check by path and the read.
        let Ok(f) = dir.open_file(name) else {
            continue;
        };
        let Ok(m) = f.metadata() else {
            continue;
        };
        let cap = crate::host::recording_file::MAX_RECORDING_BYTES;
        if m.len() > cap {
            eprintln!(
                "vmtrace: {} left as the guest wrote it (too large)",
                path.display()
            );
            continue;
        }
        let mut bytes = Vec::new();
        if f.take(cap).read_to_end(&mut bytes).is_ok()
            && let Err(e) = crate::host::output::write_atomic(&path, &bytes)
        {
            eprintln!(
                "vmtrace: cannot give {} to the invoker: {e}",
                path.display()
            );
        }
    }
}

/// A recording in a job directory (the invoker's), read through the
/// directory's descriptor; None when it cannot be read.
pub(super) fn read_job_recording(path: &Path) -> Option<Recording> {
    let dir = HeldDir::open(path.parent()?).ok()?;
    crate::host::recording_file::read_held(&dir, path.file_name()?.to_str()?).ok()
}

/// Whether the guest powered off after a kernel panic before its job
/// wrote its first file (diskstats.before).
pub(super) fn panicked_before_the_job(ended: &qemu::Ended, console: &Path, dir: &HeldDir) -> bool {
    let text = std::fs::read(console)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    matches!(ended, qemu::Ended::PoweredOff)
        && !dir.has("diskstats.before")
        && !dir.has("status")
        && text.contains("Kernel panic")
}

/// Bytes the guest read from its image (vdb) between the job's two
/// /proc/diskstats snapshots (diskstats.before, diskstats.after).
pub(super) fn image_reads(dir: &HeldDir) -> Option<u64> {
    let sectors = |name: &str| -> Option<u64> {
        let text = dir.text(name)?;
        text.lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&"vdb")).then(|| f.get(5)?.parse().ok())?
        })
    };
    Some((sectors("diskstats.after")? - sectors("diskstats.before")?) * 512)
}

/// Copies the guest's console log into its job directory (as the
/// invoker, never through a link: `host::output`).
pub(super) fn keep_console(console: &Path, to: &Path) {
    if let Ok(bytes) = std::fs::read(console)
        && let Err(e) = crate::host::output::write_atomic(to, &bytes)
    {
        eprintln!(
            "vmtrace: cannot keep the console log as {}: {e:#}",
            to.display()
        );
    }
}

/// The large files a guest needs, made in its job directory and removed
/// after it (they are rebuilt every time).
pub(super) struct GuestFiles {
    exe: Option<PathBuf>,
    pub(super) initrd: PathBuf,
    pub(super) scratch: PathBuf,
    pub(super) swap: Option<PathBuf>,
}

impl GuestFiles {
    pub(super) fn make(
        exe: &Path,
        opts: &KernelsOptions,
        setup: &GuestSetup,
        k: &image::Kernel,
        dir: &Path,
    ) -> Result<Self> {
        // Without the image, vmtrace reaches the guest in its job directory.
        let guest_exe = match setup.root_image {
            Some(_) => None,
            None => {
                // The job directory is the user's: never through a link.
                let p = dir.join("vmtrace");
                let mut to = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o755)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&p)
                    .with_context(|| format!("creating {}: remove it first", p.display()))?;
                std::io::copy(&mut std::fs::File::open(exe)?, &mut to)
                    .context("copying vmtrace into the job directory")?;
                Some(p)
            }
        };
        let private = setup.private;
        let initrd = private.path().join("initramfs.cpio");
        initramfs::build(k.modules.as_deref(), &initrd)?;
        let scratch = private.path().join("scratch.img");
        qemu::make_disk(&scratch, opts.disk, false)?;
        let swap = match opts.swap {
            Some(bytes) => {
                let p = private.path().join("swap.img");
                qemu::make_disk(&p, bytes, true)?;
                Some(p)
            }
            None => None,
        };
        Ok(GuestFiles {
            exe: guest_exe,
            initrd,
            scratch,
            swap,
        })
    }
}

/// Removed however the guest ended (an error included).
impl Drop for GuestFiles {
    fn drop(&mut self) {
        for p in [Some(&self.scratch), Some(&self.initrd), self.exe.as_ref()]
            .into_iter()
            .flatten()
        {
            let _ = std::fs::remove_file(p);
        }
        if let Some(p) = &self.swap {
            let _ = std::fs::remove_file(p);
        }
    }
}
