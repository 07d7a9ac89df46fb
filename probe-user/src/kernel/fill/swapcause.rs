//! Fills the report's fault causes and swap destinations: the /proc/vmstat
//! delta's counters (`SwapCauses::from_delta`), zswap's state and pool
//! size (/sys/module/zswap, /proc/meminfo) and what backs each active
//! swap area (/proc/swaps, /sys/dev/block, mountinfo), so that the report
//! can say where swapped pages went and why a swap area's I/O could not
//! be timed.

use std::{fs, os::unix::fs::MetadataExt, path::Path};

use crate::model::{
    recording::environment::{fs_type_of, meminfo_bytes, parse_swaps},
    report::{SwapArea, SwapCauses},
    vmstat::VmStat,
};

/// `swap_causes` from the window's /proc/vmstat delta and the machine's
/// zswap and swap areas as they are now.
pub(super) fn swap_causes(delta: &VmStat) -> SwapCauses {
    let mut c = SwapCauses::from_delta(delta);
    c.zswap_enabled = fs::read_to_string("/sys/module/zswap/parameters/enabled")
        .ok()
        .map(|s| s.trim().starts_with('Y'));
    if let Ok(meminfo) = fs::read_to_string("/proc/meminfo") {
        c.zswap_pool_bytes = meminfo_bytes(&meminfo, "Zswap");
        c.zswapped_bytes = meminfo_bytes(&meminfo, "Zswapped");
    }
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    c.swap_areas = fs::read_to_string("/proc/swaps")
        .map(|t| swap_areas(&t, &mountinfo))
        .unwrap_or_default();
    c
}

/// The active swap areas of /proc/swaps text, with their devices and,
/// for swapfiles, the file system (from /proc/self/mountinfo text).
fn swap_areas(swaps: &str, mountinfo: &str) -> Vec<SwapArea> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_and_swaps_parse() {
        let m = "MemTotal: 100 kB\nZswap:        8 kB\nZswapped:      32 kB\n";
        assert_eq!(meminfo_bytes(m, "Zswap"), Some(8192));
        assert_eq!(meminfo_bytes(m, "Zswapped"), Some(32768));
        assert_eq!(meminfo_bytes("MemTotal: 1 kB\n", "Zswap"), None);
        let swaps = "Filename Type Size Used Priority\n\
                     /nonexistent/swapfile file 1048572 0 -2\n\
                     /dev/zram0 partition 1048572 0 100\n";
        let a = swap_areas(swaps, "");
        assert_eq!(a.len(), 2);
        assert_eq!(
            (a[0].kind.as_str(), a[1].kind.as_str()),
            ("file", "partition")
        );
        assert_eq!(a[0].device, None);
        let zram = SwapArea {
            device: Some("zram0".into()),
            ..Default::default()
        };
        assert!(zram.untimeable().is_some_and(|w| w.starts_with("zram")));
        assert_eq!(SwapArea::default().untimeable(), None);
    }

    #[test]
    fn swap_causes_split_faults_and_say_what_the_kernel_lacks() {
        // 6.1: no zswpwb, no zero map.
        let d = VmStat::parse(
            "pgmajfault 1000\npswpin 300\nswap_ra 100\nzswpin 0\nzswpout 0\n\
             workingset_refault_file 650\npswpout 500\n",
        );
        let c = SwapCauses::from_delta(&d);
        assert_eq!(c.swpin_zero, None);
        assert_eq!(c.zswpwb, None);
        assert_eq!(c.swapin_faults(), Some(200));
        assert_eq!(c.file_faults(), Some(800));
        assert_eq!(c.swapout_destinations(), (Some(500), Some(0), None));
        // zswap took everything; its writebacks are pswpout too.
        let d = VmStat::parse(
            "pgmajfault 50\npswpin 0\nswap_ra 0\nzswpin 900\nzswpout 1000\n\
             zswpwb 10\npswpout 10\nswpin_zero 0\nswpout_zero 5\n",
        );
        let c = SwapCauses::from_delta(&d);
        assert_eq!(c.swapin_faults(), Some(50), "at most pgmajfault");
        assert_eq!(c.file_faults(), Some(0));
        assert_eq!(c.swapout_destinations(), (Some(0), Some(1000), Some(5)));
        assert!(c.zswap_active());
    }
}
