//! The kernel's THP, mTHP and compaction event counters over a run
//! (/proc/vmstat deltas and the per-size mTHP stats in sysfs, both
//! machine-wide: every task counts, not only the command's), and the
//! sizes of the four LRU lists at each sample (/proc/vmstat gauges). A
//! counter the running kernel does not print is None, never 0: a kernel
//! built without CONFIG_TRANSPARENT_HUGEPAGE has no thp_*, one without
//! CONFIG_COMPACTION no compact_*, and only 6.10 and later have the
//! per-size stats. The 6.1, 6.12 and 6.18 kernels vmtrace is tested on
//! print every /proc/vmstat counter here (tests/kernel-formats).
//!
//! What each counts, as read in the sources of 6.1 and 6.12 (Debian's
//! linux-source) and mainline's huge_memory.c for 6.18:
//! - `thp_fault_alloc`: an anonymous fault mapped a new PMD-size THP
//!   (mm/huge_memory.c __do_huge_pmd_anonymous_page, after set_pmd_at;
//!   from 6.13 also a write fault on the huge zero page that replaced it
//!   with a THP, do_huge_zero_wp_pmd; mainline counts both in
//!   map_anon_folio_pmd, the fallbacks in vma_alloc_anon_folio_pmd).
//!   One count per 2 MiB folio.
//! - `thp_fault_fallback`: such a fault got no THP and fell back to
//!   small pages: the allocation failed (do_huge_pmd_anonymous_page), the
//!   memcg charge failed, or the huge zero page could not be had.
//!   `thp_fault_fallback_charge`: of those, the memcg charge failures
//!   (mem_cgroup_charge in __do_huge_pmd_anonymous_page): the box's
//!   limit, not fragmentation, denied the THP.
//! - `thp_collapse_alloc`: a THP allocated to collapse small pages into
//!   (mm/khugepaged.c hpage_collapse_alloc_page / alloc_charge_folio:
//!   khugepaged and MADV_COLLAPSE).
//! - `thp_split_page`: a large folio split successfully
//!   (mm/huge_memory.c split_huge_page_to_list; any order on 6.1, only
//!   PMD-size folios from 6.12, __split_huge_page_to_list_to_order).
//! - `thp_swpout`: a PMD-size THP written to swap whole (mm/page_io.c
//!   count_swpout_vm_event, from __swap_writepage: device I/O, not a
//!   zswap store). `thp_swpout_fallback`: reclaim could not get swap
//!   space for a THP in one piece, split it and swapped the pieces
//!   (mm/vmscan.c shrink_folio_list, after add_to_swap failed).
//! - mTHP per size (hugepages-<size>kB/stats, mm/huge_memory.c
//!   DEFINE_MTHP_STAT_ATTR, 6.10+): `anon_fault_alloc`/`_fallback` the
//!   same as above for each folio order (mm/memory.c alloc_anon_folio
//!   for the small sizes, the PMD path for 2048kB); `swpout`/
//!   `swpout_fallback` the same as thp_swpout/_fallback per order.
//! - `compact_stall`: a direct compaction by an allocating task that was
//!   not skipped in every zone (mm/page_alloc.c
//!   __alloc_pages_direct_compact); `compact_success`: of those, the
//!   ones after which the allocation got its page; `compact_fail`: the
//!   rest. kcompactd's and proactive compaction are not in these three.
//! - `compact_migrate_scanned`/`compact_free_scanned`: pages the
//!   migration and free scanners looked at, every compaction (direct,
//!   kcompactd, proactive; mm/compaction.c compact_zone, at its end).
//! - `compact_daemon_wake`: kcompactd runs for a requested order
//!   (mm/compaction.c kcompactd_do_work, woken by kswapd; proactive
//!   compaction rounds are not counted).
//! - LRU sizes `nr_inactive_anon` ... `nr_active_file`: pages on each
//!   list now, summed over nodes and memory cgroups (node_page_state;
//!   with MGLRU on, include/linux/mm_inline.h lru_gen_update_size books
//!   the two youngest generations as active, the older ones as
//!   inactive: lru_gen_is_active).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::vmstat::VmStat;

/// Prefix of the per-size mTHP counters in a window's snapshot
/// (`mthp/64kB/anon_fault_alloc`): a key /proc/vmstat cannot have.
pub const MTHP_KEY: &str = "mthp/";

/// THP events over the run, machine-wide (see the module comment).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThpCounters {
    pub fault_alloc: Option<u64>,
    pub fault_fallback: Option<u64>,
    pub fault_fallback_charge: Option<u64>,
    pub swpout: Option<u64>,
    pub swpout_fallback: Option<u64>,
    pub collapse_alloc: Option<u64>,
    pub split_page: Option<u64>,
    /// Per mTHP size, smallest first (empty: the kernel has no per-size
    /// stats, before 6.10).
    #[serde(default)]
    pub sizes: Vec<MthpSizeCounters>,
}

/// One mTHP size's counters (hugepages-<size>/stats).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MthpSizeCounters {
    /// As sysfs names it: `64kB`, `2048kB`.
    pub size: String,
    pub anon_fault_alloc: Option<u64>,
    pub anon_fault_fallback: Option<u64>,
    pub swpout: Option<u64>,
    pub swpout_fallback: Option<u64>,
}

/// Compaction events over the run, machine-wide.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CompactionCounters {
    pub stall: Option<u64>,
    pub fail: Option<u64>,
    pub success: Option<u64>,
    pub migrate_scanned: Option<u64>,
    pub free_scanned: Option<u64>,
    pub daemon_wake: Option<u64>,
}

/// Pages on each LRU list at one sample (the machine's).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct LruSizes {
    pub inactive_anon: u64,
    pub active_anon: u64,
    pub inactive_file: u64,
    pub active_file: u64,
}

impl LruSizes {
    /// From a /proc/vmstat snapshot (not a delta); None where the
    /// kernel prints none of the four.
    pub fn from_snapshot(v: &VmStat) -> Option<LruSizes> {
        let g = |k: &str| v.0.get(k).copied();
        let lists = [
            g("nr_inactive_anon"),
            g("nr_active_anon"),
            g("nr_inactive_file"),
            g("nr_active_file"),
        ];
        lists.iter().any(Option::is_some).then(|| LruSizes {
            inactive_anon: lists[0].unwrap_or(0),
            active_anon: lists[1].unwrap_or(0),
            inactive_file: lists[2].unwrap_or(0),
            active_file: lists[3].unwrap_or(0),
        })
    }

    /// The four lists with their /proc/vmstat names, in the kernel's
    /// enum lru_list order.
    pub fn lists(&self) -> [(&'static str, u64); 4] {
        [
            ("nr_inactive_anon", self.inactive_anon),
            ("nr_active_anon", self.active_anon),
            ("nr_inactive_file", self.inactive_file),
            ("nr_active_file", self.active_file),
        ]
    }
}

impl ThpCounters {
    /// From a window's delta; None when the kernel has no THP counters
    /// at all (built without CONFIG_TRANSPARENT_HUGEPAGE).
    pub fn from_delta(d: &VmStat) -> Option<ThpCounters> {
        let g = |k: &str| d.0.get(k).copied();
        let c = ThpCounters {
            fault_alloc: g("thp_fault_alloc"),
            fault_fallback: g("thp_fault_fallback"),
            fault_fallback_charge: g("thp_fault_fallback_charge"),
            swpout: g("thp_swpout"),
            swpout_fallback: g("thp_swpout_fallback"),
            collapse_alloc: g("thp_collapse_alloc"),
            split_page: g("thp_split_page"),
            sizes: mthp_sizes(d),
        };
        (c != ThpCounters::default()).then_some(c)
    }

    /// Something happened: a THP fault, fallback, swap-out or split.
    pub fn any(&self) -> bool {
        self.sizes.iter().any(MthpSizeCounters::any)
            || [
                self.fault_alloc,
                self.fault_fallback,
                self.swpout,
                self.swpout_fallback,
                self.collapse_alloc,
                self.split_page,
            ]
            .iter()
            .any(|v| v.unwrap_or(0) > 0)
    }
}

impl MthpSizeCounters {
    /// Something happened at this size: a fault, fallback or swap-out.
    pub fn any(&self) -> bool {
        [
            self.anon_fault_alloc,
            self.anon_fault_fallback,
            self.swpout,
            self.swpout_fallback,
        ]
        .iter()
        .any(|v| v.unwrap_or(0) > 0)
    }
}

/// The per-size counters of a delta's `mthp/<size>/<name>` keys,
/// ordered by size (`8kB` before `64kB`).
fn mthp_sizes(d: &VmStat) -> Vec<MthpSizeCounters> {
    let mut sizes: BTreeMap<u64, MthpSizeCounters> = BTreeMap::new();
    for (key, &v) in &d.0 {
        let Some((size, name)) = key.strip_prefix(MTHP_KEY).and_then(|k| k.split_once('/')) else {
            continue;
        };
        let kb = size.trim_end_matches("kB").parse().unwrap_or(u64::MAX);
        let s = sizes.entry(kb).or_insert_with(|| MthpSizeCounters {
            size: size.to_string(),
            ..Default::default()
        });
        match name {
            "anon_fault_alloc" => s.anon_fault_alloc = Some(v),
            "anon_fault_fallback" => s.anon_fault_fallback = Some(v),
            // 6.10 named it anon_swpout; 6.11 renamed it swpout.
            "swpout" | "anon_swpout" => s.swpout = Some(v),
            "swpout_fallback" | "anon_swpout_fallback" => s.swpout_fallback = Some(v),
            _ => {}
        }
    }
    sizes.into_values().collect()
}

impl CompactionCounters {
    /// From a window's delta; None when the kernel has no compaction
    /// counters (built without CONFIG_COMPACTION).
    pub fn from_delta(d: &VmStat) -> Option<CompactionCounters> {
        let g = |k: &str| d.0.get(k).copied();
        let c = CompactionCounters {
            stall: g("compact_stall"),
            fail: g("compact_fail"),
            success: g("compact_success"),
            migrate_scanned: g("compact_migrate_scanned"),
            free_scanned: g("compact_free_scanned"),
            daemon_wake: g("compact_daemon_wake"),
        };
        (c != CompactionCounters::default()).then_some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_of_three_kernels_and_of_one_without_them() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/kernel-formats");
        for release in ["6.1.0-57-amd64", "6.12.117+deb12-amd64", "6.18.44-fc-v669"] {
            let text = std::fs::read_to_string(dir.join(release).join("vmstat.txt")).expect("read");
            let v = VmStat::parse(&text);
            let t = ThpCounters::from_delta(&v).expect("thp");
            assert!(
                t.fault_alloc.is_some() && t.swpout_fallback.is_some(),
                "{release}"
            );
            assert!(t.fault_fallback_charge.is_some() && t.split_page.is_some());
            let c = CompactionCounters::from_delta(&v).expect("compaction");
            assert!(c.stall.is_some() && c.daemon_wake.is_some(), "{release}");
            let l = LruSizes::from_snapshot(&v).expect("lru");
            assert!(l.inactive_file + l.active_file > 0, "{release}");
        }
        let bare = VmStat::parse("pgfault 10\ncompact_stall 2\n");
        assert_eq!(ThpCounters::from_delta(&bare), None);
        let c = CompactionCounters::from_delta(&bare).expect("some");
        assert_eq!((c.stall, c.fail), (Some(2), None));
        assert_eq!(LruSizes::from_snapshot(&bare), None);
    }

    #[test]
    fn mthp_keys_become_sizes_in_size_order() {
        let d = VmStat::parse(
            "thp_fault_alloc 3\nmthp/2048kB/anon_fault_alloc 3\n\
             mthp/64kB/anon_fault_alloc 7\nmthp/64kB/anon_swpout 2\n\
             mthp/8kB/swpout_fallback 1\nmthp/8kB/nr_anon 5\n",
        );
        let t = ThpCounters::from_delta(&d).expect("thp");
        let sizes: Vec<&str> = t.sizes.iter().map(|s| s.size.as_str()).collect();
        assert_eq!(sizes, ["8kB", "64kB", "2048kB"]);
        assert_eq!(t.sizes[1].anon_fault_alloc, Some(7));
        assert_eq!(t.sizes[1].swpout, Some(2));
        assert_eq!(t.sizes[1].anon_fault_fallback, None);
        assert_eq!(t.sizes[0].swpout_fallback, Some(1));
        assert!(t.any());
    }
}
