//! Fills the report's fault causes and swap destinations: the /proc/vmstat
//! delta's counters (`SwapCauses::from_delta`), zswap's state and pool
//! size (/sys/module/zswap, /proc/meminfo) and what backs each active
//! swap area (/proc/swaps, /sys/dev/block, statfs), so that the report
//! can say where swapped pages went and why a swap area's I/O could not
//! be timed.

use std::{fs, os::unix::fs::MetadataExt, path::Path};

use crate::{
    host::swapdev::parse_proc_swaps,
    model::{
        report::{RunReport, SwapArea, SwapCauses},
        vmstat::VmStat,
    },
};

impl RunReport {
    /// `swap_causes` from the window's /proc/vmstat delta and the
    /// machine's zswap and swap areas as they are now.
    pub fn add_swap_causes(&mut self, delta: &VmStat) {
        let mut c = SwapCauses::from_delta(delta);
        c.zswap_enabled = fs::read_to_string("/sys/module/zswap/parameters/enabled")
            .ok()
            .map(|s| s.trim().starts_with('Y'));
        if let Ok(meminfo) = fs::read_to_string("/proc/meminfo") {
            c.zswap_pool_bytes = meminfo_bytes(&meminfo, "Zswap:");
            c.zswapped_bytes = meminfo_bytes(&meminfo, "Zswapped:");
        }
        c.swap_areas = fs::read_to_string("/proc/swaps")
            .map(|t| swap_areas(&t))
            .unwrap_or_default();
        self.swap_causes = Some(c);
    }
}

/// A /proc/meminfo line's value (`Zswap:   1234 kB`) in bytes.
fn meminfo_bytes(meminfo: &str, key: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line[key.len()..].split_whitespace().next()?.parse().ok()?;
    Some(kb * 1024)
}

/// The active swap areas of /proc/swaps text, with their devices.
fn swap_areas(text: &str) -> Vec<SwapArea> {
    let kinds: Vec<String> = text
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().nth(1).unwrap_or("").to_string())
        .collect();
    parse_proc_swaps(text)
        .into_iter()
        .zip(kinds)
        .map(|(path, kind)| {
            let meta = fs::metadata(&path).ok();
            let file = kind == "file";
            let dev = meta.as_ref().map(|m| if file { m.dev() } else { m.rdev() });
            SwapArea {
                device: dev.and_then(block_name),
                filesystem: if file { filesystem(&path) } else { None },
                path,
                kind,
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

/// The filesystem type of the file at `path` (statfs f_type).
fn filesystem(path: &str) -> Option<String> {
    let c = std::ffi::CString::new(Path::new(path).as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statfs writes into the zeroed struct we own; c is a valid
    // NUL-terminated path.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(fs_name(st.f_type as u64))
}

/// A statfs magic number's filesystem (linux/magic.h).
fn fs_name(magic: u64) -> String {
    match magic {
        0xEF53 => "ext4".into(),
        0x9123_683E => "btrfs".into(),
        0x5846_5342 => "xfs".into(),
        0x0102_1994 => "tmpfs".into(),
        0xF2F5_2010 => "f2fs".into(),
        m => format!("0x{m:x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_and_swaps_parse() {
        let m = "MemTotal: 100 kB\nZswap:        8 kB\nZswapped:      32 kB\n";
        assert_eq!(meminfo_bytes(m, "Zswap:"), Some(8192));
        assert_eq!(meminfo_bytes(m, "Zswapped:"), Some(32768));
        assert_eq!(meminfo_bytes("MemTotal: 1 kB\n", "Zswap:"), None);
        let swaps = "Filename Type Size Used Priority\n\
                     /nonexistent/swapfile file 1048572 0 -2\n\
                     /dev/zram0 partition 1048572 0 100\n";
        let a = swap_areas(swaps);
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
