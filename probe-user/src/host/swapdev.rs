//! Where the swap areas lie on disk, so that the block probes can tell swap
//! I/O from other I/O on the same disk: a swap partition is one range; a
//! swapfile is its extents (FIEMAP), shifted by its partition's start.
//! Ranges are in 512-byte sectors of the whole disk, the way the block
//! tracepoints report requests. And what backs each active swap area
//! (its block device, a swapfile's file system) for the report.

use std::{
    fs,
    os::unix::fs::{FileTypeExt, MetadataExt},
    path::Path,
};

use anyhow::{Context, Result, bail};
use vmtrace_common::{MAX_SWAP_EXTENTS, SwapExtent, SwapExtents};

use crate::model::{
    recording::environment::{fs_type_of, parse_swaps},
    report::SwapArea,
};

/// /proc/swaps as it is now: the one reader of the file.
pub fn read_proc_swaps() -> std::io::Result<String> {
    fs::read_to_string("/proc/swaps")
}

/// The active swap areas (paths) of /proc/swaps text (`parse_swaps`'s
/// names, /proc/swaps's \040 escapes undone).
pub fn parse_proc_swaps(text: &str) -> Vec<String> {
    parse_swaps(text)
        .into_iter()
        .map(|d| d.name.replace("\\040", " "))
        .collect()
}

/// The active swap areas as they are now, with their devices and, for
/// swapfiles, the file system (the report's swap destinations).
pub fn swap_areas() -> Vec<SwapArea> {
    let mountinfo = crate::host::proc::read_mountinfo().unwrap_or_default();
    read_proc_swaps()
        .map(|t| swap_areas_of(&t, &mountinfo))
        .unwrap_or_default()
}

/// The active swap areas of /proc/swaps text, with their devices and,
/// for swapfiles, the file system (from /proc/self/mountinfo text).
fn swap_areas_of(swaps: &str, mountinfo: &str) -> Vec<SwapArea> {
    parse_swaps(swaps)
        .into_iter()
        .map(|d| {
            // /proc/swaps escapes spaces as \040.
            let path = d.name.replace("\\040", " ");
            let file = d.kind == "file";
            let dev = fs::metadata(&path)
                .ok()
                .map(|m| if file { m.dev() } else { m.rdev() });
            SwapArea {
                device: dev.and_then(block_name),
                filesystem: if file {
                    fs_type_of(mountinfo, Path::new(&path))
                } else {
                    None
                },
                path,
                kind: d.kind,
            }
        })
        .collect()
}

/// The kernel's name of a block device (`sda2`, `zram0`, `dm-1`).
fn block_name(dev: u64) -> Option<String> {
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let link = fs::read_link(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

/// The disk ranges of every active swap area; `truncated` when there were
/// more than the probes can hold.
#[derive(Clone, Debug, Default)]
pub struct SwapLayout {
    pub areas: Vec<String>,
    pub extents: Vec<SwapExtent>,
    pub truncated: bool,
}

impl SwapLayout {
    pub fn read() -> Result<SwapLayout> {
        let text = read_proc_swaps().context("reading /proc/swaps")?;
        let mut layout = SwapLayout::default();
        for area in parse_proc_swaps(&text) {
            match area_extents(Path::new(&area)) {
                Ok(mut e) => {
                    layout.extents.append(&mut e);
                    layout.areas.push(area);
                }
                Err(e) => log::warn!("swap area {area}: {e:#}"),
            }
        }
        layout.extents = merge(layout.extents);
        if layout.extents.len() > MAX_SWAP_EXTENTS {
            layout.extents.truncate(MAX_SWAP_EXTENTS);
            layout.truncated = true;
        }
        Ok(layout)
    }

    /// Waits (at most `limit`) until the swap disks have no request in
    /// flight, queued ones included (/sys/dev/block/*/inflight), so that
    /// the write-back of a command that just exited is counted before the
    /// probes detach.
    pub fn wait_idle(&self, limit: std::time::Duration) {
        let deadline = std::time::Instant::now() + limit;
        let mut disks: Vec<u32> = self.extents.iter().map(|e| e.dev).collect();
        disks.dedup();
        let busy = |kdev: &u32| {
            let path = format!("/sys/dev/block/{}:{}/inflight", kdev >> 20, kdev & 0xfffff);
            fs::read_to_string(path).is_ok_and(|s| s.split_whitespace().any(|n| n != "0"))
        };
        while disks.iter().any(busy) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// The global the eBPF programs read.
    pub fn to_global(&self) -> SwapExtents {
        let mut g = SwapExtents::EMPTY;
        for (slot, e) in g.extents.iter_mut().zip(&self.extents) {
            *slot = *e;
        }
        g.count = self.extents.len().min(MAX_SWAP_EXTENTS) as u32;
        g
    }
}

/// Sorts and joins touching ranges of the same disk.
pub fn merge(mut v: Vec<SwapExtent>) -> Vec<SwapExtent> {
    v.sort_by_key(|e| (e.dev, e.start));
    let mut out: Vec<SwapExtent> = Vec::new();
    for e in v {
        match out.last_mut() {
            Some(last) if last.dev == e.dev && e.start <= last.end => {
                last.end = last.end.max(e.end)
            }
            _ => out.push(e),
        }
    }
    out
}

/// (whole-disk kernel dev_t, first sector of this block device on it).
fn disk_of(major: u32, minor: u32) -> Result<(u32, u64)> {
    let sys = format!("/sys/dev/block/{major}:{minor}");
    let read = |f: &str| fs::read_to_string(format!("{sys}/{f}"));
    if Path::new(&sys).join("partition").exists() {
        let start: u64 = read("start")?.trim().parse().context("partition start")?;
        let parent = fs::read_to_string(format!("{sys}/../dev"))?;
        let (maj, min) = parent.trim().split_once(':').context("parent dev")?;
        Ok((kdev(maj.parse()?, min.parse()?), start))
    } else {
        Ok((kdev(major, minor), 0))
    }
}

/// The kernel's dev_t encoding, as tracepoints print it.
fn kdev(major: u32, minor: u32) -> u32 {
    (major << 20) | minor
}

fn area_extents(path: &Path) -> Result<Vec<SwapExtent>> {
    let meta = fs::metadata(path).with_context(|| format!("stat {}", path.display()))?;
    if meta.file_type().is_block_device() {
        let rdev = meta.rdev();
        let (major, minor) = (libc::major(rdev), libc::minor(rdev));
        let (dev, start) = disk_of(major, minor)?;
        let size: u64 = fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/size"))?
            .trim()
            .parse()?;
        return Ok(vec![SwapExtent {
            dev,
            _pad: 0,
            start,
            end: start + size,
        }]);
    }
    let (dev, start) = disk_of(libc::major(meta.dev()), libc::minor(meta.dev()))?;
    Ok(fiemap(path)?
        .into_iter()
        .map(|(physical, length)| SwapExtent {
            dev,
            _pad: 0,
            start: start + physical / 512,
            end: start + (physical + length).div_ceil(512),
        })
        .collect())
}

#[repr(C)]
struct Fiemap {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
const FIEMAP_FLAG_SYNC: u32 = 1;
const FIEMAP_EXTENT_LAST: u32 = 1;
const BATCH: usize = 256;

#[repr(C)]
struct FiemapBuf {
    head: Fiemap,
    extents: [FiemapExtent; BATCH],
}

/// A file's extents as (physical byte offset, length) on its device.
fn fiemap(path: &Path) -> Result<Vec<(u64, u64)>> {
    use std::os::fd::AsRawFd;
    let file = fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut out = Vec::new();
    let mut logical = 0u64;
    loop {
        let mut buf = FiemapBuf {
            head: Fiemap {
                fm_start: logical,
                fm_length: u64::MAX - logical,
                fm_flags: FIEMAP_FLAG_SYNC,
                fm_mapped_extents: 0,
                fm_extent_count: BATCH as u32,
                fm_reserved: 0,
            },
            extents: [FiemapExtent::default(); BATCH],
        };
        // SAFETY: FS_IOC_FIEMAP reads the header and fills at most
        // fm_extent_count extents of the buffer that follows it.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FIEMAP, &mut buf) };
        if rc != 0 {
            bail!(
                "FIEMAP on {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
        let n = (buf.head.fm_mapped_extents as usize).min(BATCH);
        if n == 0 {
            break;
        }
        let mut last = false;
        for e in &buf.extents[..n] {
            out.push((e.fe_physical, e.fe_length));
            logical = e.fe_logical + e.fe_length;
            last |= e.fe_flags & FIEMAP_EXTENT_LAST != 0;
        }
        if last || n < BATCH {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_swaps_paths() {
        let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                    /var/tmp/vmtrace-1.swap                   file\t\t1048572\t\t0\t\t-2\n\
                    /dev/sda2                               partition\t8388604\t\t0\t\t-3\n";
        assert_eq!(
            parse_proc_swaps(text),
            ["/var/tmp/vmtrace-1.swap", "/dev/sda2"]
        );
        assert!(parse_proc_swaps("Filename Type Size Used Priority\n").is_empty());
        let swaps = "Filename Type Size Used Priority\n\
                     /nonexistent/swapfile file 1048572 0 -2\n\
                     /dev/zram0 partition 1048572 0 100\n";
        let a = swap_areas_of(swaps, "");
        assert_eq!(a.len(), 2);
        assert_eq!(
            (a[0].kind.as_str(), a[1].kind.as_str()),
            ("file", "partition")
        );
        assert_eq!(a[0].device, None);
    }

    #[test]
    fn merges_touching_ranges_per_disk() {
        let e = |dev, start, end| SwapExtent {
            dev,
            _pad: 0,
            start,
            end,
        };
        let merged = merge(vec![
            e(1, 100, 200),
            e(1, 0, 100),
            e(2, 0, 10),
            e(1, 300, 400),
        ]);
        assert_eq!(merged, vec![e(1, 0, 200), e(1, 300, 400), e(2, 0, 10)]);
    }

    #[test]
    fn a_files_extents_cover_its_size() {
        // A real file on the test machine's filesystem (no root needed).
        let path = std::env::temp_dir().join(format!("vmtrace-fiemap-{}", std::process::id()));
        fs::write(&path, vec![7u8; 3 << 20]).expect("write");
        let ext = fiemap(&path);
        fs::remove_file(&path).ok();
        match ext {
            Ok(ext) => {
                let total: u64 = ext.iter().map(|e| e.1).sum();
                assert!(total >= 3 << 20, "{ext:?}");
            }
            // tmpfs and some others have no FIEMAP; swapfiles cannot live there.
            Err(e) => assert!(e.to_string().contains("FIEMAP"), "{e:#}"),
        }
    }
}
