//! Fills the report's fault causes and swap destinations: the /proc/vmstat
//! delta's counters (`SwapCauses::from_delta`), zswap's state and pool
//! size (/sys/module/zswap, /proc/meminfo, read by `host::proc`) and what
//! backs each active swap area (`host::swapdev::swap_areas`), so that the
//! report can say where swapped pages went and why a swap area's I/O
//! could not be timed.

use crate::{
    host::{proc, swapdev},
    model::{recording::environment::meminfo_bytes, report::SwapCauses, vmstat::VmStat},
};

/// `swap_causes` from the window's /proc/vmstat delta and the machine's
/// zswap and swap areas as they are now.
pub(super) fn swap_causes(delta: &VmStat) -> SwapCauses {
    let mut c = SwapCauses::from_delta(delta);
    c.zswap_enabled = proc::zswap_enabled();
    if let Some(meminfo) = proc::read_meminfo() {
        c.zswap_pool_bytes = meminfo_bytes(&meminfo, "Zswap");
        c.zswapped_bytes = meminfo_bytes(&meminfo, "Zswapped");
    }
    c.swap_areas = swapdev::swap_areas();
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_parses_and_zram_is_untimeable() {
        use crate::model::report::SwapArea;
        let m = "MemTotal: 100 kB\nZswap:        8 kB\nZswapped:      32 kB\n";
        assert_eq!(meminfo_bytes(m, "Zswap"), Some(8192));
        assert_eq!(meminfo_bytes(m, "Zswapped"), Some(32768));
        assert_eq!(meminfo_bytes("MemTotal: 1 kB\n", "Zswap"), None);
        let zram = SwapArea {
            device: Some("zram0".into()),
            ..Default::default()
        };
        assert!(zram.untimeable().is_some_and(|w| w.starts_with("zram")));
        assert_eq!(SwapArea::default().untimeable(), None);
    }

    /// mTHP swap-in (6.12+): one fault brings a 64 kB folio, 16 pages
    /// in pswpin. 40 such faults and 100 single-page ones: 740 pages,
    /// 140 swap-in faults, and the file reads are what is left of
    /// pgmajfault, not 0.
    #[test]
    fn large_folio_swap_ins_count_one_fault_each() {
        let d = VmStat::parse(
            "pgmajfault 300\npswpin 740\nswap_ra 0\nmthp/64kB/swpin 40\n\
             mthp/2048kB/swpin 0\n",
        );
        let c = SwapCauses::from_delta(&d);
        assert_eq!(c.large_swapin_extra_pages, Some(40 * 15));
        assert_eq!(c.swapin_faults(), Some(140));
        assert_eq!(c.file_faults(), Some(160));
        // No per-size stat (6.1): as before.
        let old = SwapCauses::from_delta(&VmStat::parse("pgmajfault 300\npswpin 740\n"));
        assert_eq!(old.large_swapin_extra_pages, None);
        assert_eq!(old.swapin_faults(), Some(300));
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
