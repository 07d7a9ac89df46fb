//! Where swap went and what a major fault was, in the kernel's own
//! counters: the /proc/vmstat deltas that tell a swap-in from a file
//! read, and the swap areas under them. Part of the run report
//! (`report::SwapCauses`).

use serde::{Deserialize, Serialize};

use crate::vmstat::VmStat;

/// The kernel's own counters (/proc/vmstat deltas over the window) that
/// tell a swap-in from a file read and say where swapped pages went.
/// A counter is None when this kernel does not have it (never 0 as if
/// measured). What each counts, as read in the mm sources of 6.1, 6.12
/// and 6.18:
/// - `pgmajfault`: do_swap_page (mm/memory.c) when the folio was not in
///   the swap cache (a read from the device, zswap or the zero map);
///   filemap_fault (mm/filemap.c) when the page was not in the page
///   cache; shmem_swapin_folio (mm/shmem.c). A fault that finds the
///   folio in the swap cache is minor.
/// - `pswpin`/`pswpout`: pages read from / written to the swap device
///   (mm/page_io.c: bio, synchronous bdev incl. zram, swap over a
///   file); not zswap hits, not zero pages. zswap's own writebacks
///   (zswap_writeback_entry -> __swap_writepage) count in pswpout too.
/// - `swap_ra`: pages allocated by swap readahead (mm/swap_state.c,
///   swap_cluster_readahead / swap_vma_readahead), read but not faulted
///   on yet; `swap_ra_hit`: later faults that found such a page in the
///   swap cache (minor faults).
/// - `workingset_refault_*`: a page read back in (fault, read(),
///   readahead or swap-in) whose eviction left a shadow entry
///   (mm/workingset.c workingset_refault); `_activate_*`: of those, the
///   ones close enough to be activated; `_restore_*`: of those, the ones
///   that were in the active working set when evicted.
/// - `zswpout`/`zswpin`/`zswpwb`: pages stored in, loaded from, written
///   back from zswap (mm/zswap.c); zswpwb exists since 6.8. 6.1 has
///   zswpin/zswpout (since 5.19).
/// - `swpin_zero`/`swpout_zero`: zero-filled pages swapped in / out
///   through the swap zero map without I/O (mm/page_io.c, since 6.12).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SwapCauses {
    pub pgmajfault: Option<u64>,
    pub pswpin: Option<u64>,
    pub pswpout: Option<u64>,
    pub swap_ra: Option<u64>,
    pub swap_ra_hit: Option<u64>,
    pub refault_anon: Option<u64>,
    pub refault_file: Option<u64>,
    pub activate_anon: Option<u64>,
    pub activate_file: Option<u64>,
    pub restore_anon: Option<u64>,
    pub restore_file: Option<u64>,
    pub zswpin: Option<u64>,
    pub zswpout: Option<u64>,
    pub zswpwb: Option<u64>,
    pub swpin_zero: Option<u64>,
    pub swpout_zero: Option<u64>,
    /// /sys/module/zswap/parameters/enabled at the end (None: no zswap).
    pub zswap_enabled: Option<bool>,
    /// /proc/meminfo `Zswap:` (compressed pool) and `Zswapped:` (what
    /// it holds, uncompressed) at the end of the window, in bytes.
    pub zswap_pool_bytes: Option<u64>,
    pub zswapped_bytes: Option<u64>,
    /// The active swap areas and what backs them.
    pub swap_areas: Vec<SwapArea>,
    /// Pages that large-folio (mTHP) swap-ins brought beyond one per
    /// folio: per size, `hugepages-<size>kB/stats/swpin` (folios read
    /// in whole, 6.12+: SWP_SYNCHRONOUS_IO devices, mm/memory.c
    /// alloc_swap_folio) times the folio's pages less one. Such a fault
    /// is one pgmajfault but counts every page in pswpin (mm/page_io.c
    /// count_vm_events(PSWPIN, folio_nr_pages)). None: no per-size
    /// swpin stat (before 6.12) or older recordings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub large_swapin_extra_pages: Option<u64>,
}

/// One active swap area (/proc/swaps) and what lies under it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SwapArea {
    pub path: String,
    /// /proc/swaps type: `partition` or `file`.
    pub kind: String,
    /// The block device under it (`sda2`, `zram0`, `dm-1`), when known.
    pub device: Option<String>,
    /// The filesystem a swapfile lives on (`ext4`, `btrfs`), when known.
    pub filesystem: Option<String>,
}

impl SwapArea {
    /// Why block requests to this area cannot be timed by sector range,
    /// if they cannot: zram takes bios without requests, device-mapper
    /// and md remap sectors to other disks, btrfs's extent addresses are
    /// not disk sectors.
    pub fn untimeable(&self) -> Option<&'static str> {
        let dev = self.device.as_deref().unwrap_or("");
        if dev.starts_with("zram") {
            Some("zram: compressed in memory, no block requests")
        } else if dev.starts_with("dm-") {
            Some("device-mapper (LVM, crypt): sectors remapped")
        } else if dev.starts_with("md") {
            Some("md RAID: sectors remapped")
        } else if self.filesystem.as_deref() == Some("btrfs") {
            Some("btrfs swapfile: extents are not disk sectors")
        } else {
            None
        }
    }
}

/// `large_swapin_extra_pages` from a delta's `mthp/<size>/swpin` keys
/// (x86: 4 KiB pages); None when no size has the stat.
fn large_swapin_extra_pages(d: &VmStat) -> Option<u64> {
    let mut any = false;
    let mut extra = 0u64;
    for (key, &folios) in &d.0 {
        let Some(size) = key
            .strip_prefix(crate::counters::MTHP_KEY)
            .and_then(|k| k.strip_suffix("/swpin"))
        else {
            continue;
        };
        any = true;
        let pages = size.trim_end_matches("kB").parse::<u64>().unwrap_or(4) / 4;
        extra = extra.saturating_add(folios.saturating_mul(pages.saturating_sub(1)));
    }
    any.then_some(extra)
}

/// Sums of counters where some exist; None when none of them do.
fn sum_some(xs: &[Option<u64>]) -> Option<u64> {
    xs.iter().flatten().copied().reduce(|a, b| a + b)
}

impl SwapCauses {
    /// Reads the counters out of a /proc/vmstat delta (which holds every
    /// key the kernel printed: a key missing is a counter this kernel
    /// lacks).
    pub fn from_delta(d: &VmStat) -> SwapCauses {
        let g = |k: &str| d.0.get(k).copied();
        SwapCauses {
            pgmajfault: g("pgmajfault"),
            pswpin: g("pswpin"),
            pswpout: g("pswpout"),
            swap_ra: g("swap_ra"),
            swap_ra_hit: g("swap_ra_hit"),
            refault_anon: g("workingset_refault_anon"),
            refault_file: g("workingset_refault_file"),
            activate_anon: g("workingset_activate_anon"),
            activate_file: g("workingset_activate_file"),
            restore_anon: g("workingset_restore_anon"),
            restore_file: g("workingset_restore_file"),
            zswpin: g("zswpin"),
            zswpout: g("zswpout"),
            zswpwb: g("zswpwb"),
            swpin_zero: g("swpin_zero"),
            swpout_zero: g("swpout_zero"),
            large_swapin_extra_pages: large_swapin_extra_pages(d),
            ..Default::default()
        }
    }

    /// Pages brought in by swap-ins, every source (device, zswap, zero
    /// map), readahead included.
    pub fn swapin_pages(&self) -> Option<u64> {
        sum_some(&[self.pswpin, self.zswpin, self.swpin_zero])
    }

    /// Major faults that were swap-ins (estimated): pages swapped in
    /// minus those read ahead (a readahead page is read without a fault
    /// of its own, and a later fault on it is minor) and minus the pages
    /// a large-folio swap-in brought beyond its first (one fault), at
    /// most pgmajfault.
    pub fn swapin_faults(&self) -> Option<u64> {
        let read = self.swapin_pages()?;
        let faults = read
            .saturating_sub(self.swap_ra.unwrap_or(0))
            .saturating_sub(self.large_swapin_extra_pages.unwrap_or(0));
        Some(self.pgmajfault.map_or(faults, |m| faults.min(m)))
    }

    /// Major faults that were file (page cache) reads: pgmajfault less
    /// the swap-ins. shmem swap-ins count as swap-ins.
    pub fn file_faults(&self) -> Option<u64> {
        Some(
            self.pgmajfault?
                .saturating_sub(self.swapin_faults().unwrap_or(0)),
        )
    }

    /// Anon pages reclaim sent to swap, by destination: (the swap device,
    /// zswap, the zero map). The device's share leaves out zswap's own
    /// writebacks (zswpwb), which pswpout counts too.
    pub fn swapout_destinations(&self) -> (Option<u64>, Option<u64>, Option<u64>) {
        let device = self
            .pswpout
            .map(|p| p.saturating_sub(self.zswpwb.unwrap_or(0)));
        (device, self.zswpout, self.swpout_zero)
    }

    /// Anon pages sent to swap, every destination (the device less
    /// zswap's writebacks, zswap, the zero map): with zswap on, the
    /// device's pswpout alone falls to ~0 while as much is swapped out.
    pub fn swapout_pages(&self) -> Option<u64> {
        let (device, zswap, zero) = self.swapout_destinations();
        sum_some(&[device, zswap, zero])
    }

    /// zswap took part in the window (stored or loaded pages).
    pub fn zswap_active(&self) -> bool {
        self.zswpout.unwrap_or(0) + self.zswpin.unwrap_or(0) > 0
    }
}
