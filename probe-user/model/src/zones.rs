//! The zone picture of a run: rows per (node, zone) for what the kernel
//! counts per node and zone (zoneinfo, reclaim retries, --page-alloc), rows per zone type summed over nodes for what
//! /proc/vmstat counts per zone type only (pgalloc_, pgskip_,
//! allocstall_), and what follows from them alone.

use serde::{Deserialize, Serialize};

use crate::{sample::ZoneSample, vmstat::VmStat};

/// One (node, zone): only figures whose source names both the node and
/// the zone. kswapd wakeups are not here: mm_vmscan_wakeup_kswapd's zid
/// is the allocation's highest allowed zone (mm/vmscan.c wakeup_kswapd
/// passes highest_zoneidx, 6.1, 6.12, 6.18), not a zone of the node, so
/// they stay in the kswapd section, per node and highest zone.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ZoneRow {
    pub node: u32,
    pub zone: String,
    /// oom:reclaim_retry_zone checks of this zone (should_reclaim_retry
    /// in mm/page_alloc.c, one per zone of the zonelist and retry).
    pub reclaim_retries: u64,
    /// Pages allocated from this zone (only with --page-alloc): the
    /// zone found from the page's pfn at kmem:mm_page_alloc.
    pub allocated_pages: Option<u64>,
    /// Seconds below the low / min watermark (from the samples).
    pub below_low_s: f64,
    pub below_min_s: f64,
    /// Seconds with a watermark boost in force (zoneinfo "boost" > 0 in
    /// the samples; 0 in older recordings).
    #[serde(default)]
    pub boosted_s: f64,
    /// Free pages and LRU sizes at the end (the last sample's zoneinfo);
    /// None in older recordings.
    #[serde(default)]
    pub end: Option<ZoneEnd>,
}

/// A zone's free pages and LRU lists at the end of the run (pages).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct ZoneEnd {
    pub free: u64,
    pub inactive_anon: u64,
    pub active_anon: u64,
    pub inactive_file: u64,
    pub active_file: u64,
    /// The largest lowmem_reserve (zoneinfo `protection:`): pages kept
    /// back from allocations that could use a higher zone.
    #[serde(default)]
    pub lowmem_reserve: u64,
}

/// One zone type, every node together: the /proc/vmstat per-zone event
/// counters over the run. They have no node: vm_event_states is a
/// per-CPU array summed over CPUs (mm/vmstat.c all_vm_events), indexed
/// by zone type through __count_zid_vm_events (include/linux/vmstat.h).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ZoneTypeCounts {
    /// The zone's name as zoneinfo writes it (DMA, DMA32, Normal, ...).
    pub zone: String,
    /// pgalloc_<zone>: pages allocated from zones of this type, counted
    /// by page_zonenum(page), 1 << order each (mm/page_alloc.c
    /// rmqueue_buddy / rmqueue_pcplist / __alloc_pages_bulk; 6.1, 6.12,
    /// 6.18).
    pub pgalloc: u64,
    /// pgskip_<zone>: pages the LRU scan passed over because their zone
    /// is above the reclaim's highest allowed zone, by the page's zone
    /// (mm/vmscan.c isolate_lru_folios, isolate_lru_pages on 6.1; MGLRU's
    /// scan_folios likewise). Global reclaim only: memcg reclaim allows
    /// every zone.
    pub pgskip: u64,
    /// allocstall_<zone>: direct reclaims entered, by the reclaim's
    /// highest allowed zone (sc->reclaim_idx, from the allocation's gfp
    /// mask), not the zone scanned (mm/vmscan.c do_try_to_free_pages,
    /// counted when !cgroup_reclaim(sc); 6.1, 6.12, 6.18).
    pub allocstall: u64,
}

/// The zone types' vmstat names and zoneinfo names, in zone index order
/// (include/linux/mmzone.h enum zone_type; mm/vmstat.c TEXTS_FOR_ZONES).
const ZONE_TYPES: &[(&str, &str)] = &[
    ("dma", "DMA"),
    ("dma32", "DMA32"),
    ("normal", "Normal"),
    ("high", "HighMem"),
    ("movable", "Movable"),
    ("device", "Device"),
];

/// Per zone type, the pgalloc_/pgskip_/allocstall_ deltas; a zone type
/// this kernel does not have (no pgalloc_<zone> key) is left out.
pub fn zone_type_counts(delta: &VmStat) -> Vec<ZoneTypeCounts> {
    ZONE_TYPES
        .iter()
        .filter(|(v, _)| delta.0.contains_key(&format!("pgalloc_{v}")))
        .map(|(v, name)| ZoneTypeCounts {
            zone: (*name).to_string(),
            pgalloc: delta.get(&format!("pgalloc_{v}")),
            pgskip: delta.get(&format!("pgskip_{v}")),
            allocstall: delta.get(&format!("allocstall_{v}")),
        })
        .collect()
}

/// Zone names per node, in the kernel's zone index order, nodes in
/// zoneinfo order: /proc/zoneinfo lists every zone type, populated or
/// not, on every node, so a name's position is its zone id. The one
/// place zone names are taken from zoneinfo (`parse_zoneinfo`'s zones).
pub fn zone_names(zones: &[ZoneSample]) -> Vec<(u32, Vec<String>)> {
    let mut out: Vec<(u32, Vec<String>)> = Vec::new();
    for z in zones {
        match out.iter_mut().find(|(n, _)| *n == z.node) {
            Some((_, names)) => names.push(z.zone.clone()),
            None => out.push((z.node, vec![z.zone.clone()])),
        }
    }
    out
}

/// The name of a reclaim's highest allowed zone index. The last zone
/// index (MAX_NR_ZONES - 1, ZONE_DEVICE where the kernel has it) is no
/// allocation's zone: memcg reclaim (mm/vmscan.c
/// try_to_free_mem_cgroup_pages) and node reclaim set it to mean "no
/// zone limit".
pub fn highest_zone_name(idx: u32, names: &[String]) -> String {
    let last = names.len().saturating_sub(1);
    match names.get(idx as usize) {
        Some(n) if idx as usize == last && n == "Device" => "any (no zone limit)".into(),
        Some(n) if idx as usize == last => format!("{n} or any"),
        Some(n) => n.clone(),
        None => format!("zone {idx}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zone_type_counts_of_a_real_snapshot() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/kernel-formats");
        let text = std::fs::read_to_string(dir.join("6.1.0-57-amd64/vmstat.txt")).expect("read");
        let after = VmStat::parse(&text);
        let rows = zone_type_counts(&VmStat::delta(&VmStat::default(), &after));
        let names: Vec<&str> = rows.iter().map(|r| r.zone.as_str()).collect();
        assert_eq!(names, ["DMA", "DMA32", "Normal", "Movable", "Device"]);
        let sum: u64 = rows.iter().map(|r| r.pgalloc).sum();
        assert_eq!(sum, after.sum_prefixed("pgalloc_"));
        let d = VmStat::parse(
            "pgalloc_dma32 5\npgskip_dma32 2\nallocstall_normal 3\npgalloc_normal 9\n",
        );
        let rows = zone_type_counts(&d);
        assert_eq!(rows[0].zone, "DMA32");
        assert_eq!(
            (rows[0].pgalloc, rows[0].pgskip, rows[0].allocstall),
            (5, 2, 0)
        );
        assert_eq!((rows[1].pgalloc, rows[1].allocstall), (9, 3));
    }

    #[test]
    fn zone_names_follow_zoneinfo_order() {
        use crate::sample::parse_zoneinfo;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/kernel-formats");
        for release in ["6.1.0-57-amd64", "6.12.117+deb12-amd64", "6.18.44-fc-v669"] {
            let text =
                std::fs::read_to_string(dir.join(release).join("zoneinfo.txt")).expect("read");
            let zones = zone_names(&parse_zoneinfo(&text));
            assert_eq!(zones.len(), 1, "{release}: {zones:?}");
            let (node, names) = &zones[0];
            assert_eq!(*node, 0);
            assert_eq!(&names[..3], ["DMA", "DMA32", "Normal"], "{release}");
        }
        let two =
            "Node 0, zone   Normal\n  pages free 1\nNode 1, zone      DMA\nNode 1, zone   Normal\n";
        assert_eq!(
            zone_names(&parse_zoneinfo(two)),
            vec![
                (0, vec!["Normal".to_string()]),
                (1, vec!["DMA".into(), "Normal".into()])
            ]
        );
    }

    #[test]
    fn the_last_zone_index_is_no_zone_limit() {
        let names: Vec<String> = ["DMA", "DMA32", "Normal", "Movable", "Device"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(highest_zone_name(4, &names), "any (no zone limit)");
        assert_eq!(highest_zone_name(3, &names), "Movable");
        assert_eq!(highest_zone_name(3, &names[..4]), "Movable or any");
        assert_eq!(highest_zone_name(9, &names), "zone 9");
    }
}
