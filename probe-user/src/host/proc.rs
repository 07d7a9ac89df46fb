//! Readers of the kernel's own counters in /proc and /sys: vmstat, PSI,
//! zone names, kswapd's CPU time, the kernel release. What they parse
//! into lives in the model.

use std::path::Path;

use anyhow::{Context, Result};

use crate::model::{
    counters::MTHP_KEY,
    sample::{Psi, parse_psi},
    vmstat::VmStat,
};

impl VmStat {
    pub fn read() -> Result<VmStat> {
        let text = std::fs::read_to_string("/proc/vmstat").context("reading /proc/vmstat")?;
        Ok(VmStat::parse(&text))
    }

    /// A run window's snapshot: /proc/vmstat, its per-CPU parts folded
    /// in first (`fold_cpu_differentials`), and, where the kernel has
    /// them (6.10+), the per-size mTHP counters of
    /// /sys/kernel/mm/transparent_hugepage/hugepages-<size>/stats under
    /// `mthp/<size>/<name>` keys (see `model::counters`).
    pub fn read_window() -> Result<VmStat> {
        fold_cpu_differentials();
        let mut v = VmStat::read()?;
        add_mthp_stats(&mut v, Path::new("/sys/kernel/mm/transparent_hugepage"));
        Ok(v)
    }
}

/// Folds every CPU's pending node and zone counter updates into the
/// totals /proc/vmstat shows (a write to /proc/sys/vm/stat_refresh:
/// mm/vmstat.c vmstat_refresh runs refresh_cpu_vm_stats on each CPU;
/// 4.4+, root only). Without it a node counter such as
/// workingset_refault_anon reaches /proc/vmstat only when a CPU's
/// pending delta passes its stat_threshold (tens of pages per CPU) or
/// that CPU's vmstat_update runs, about once a second and not at all
/// while it idles, so a window's delta could be short by up to that
/// much per CPU at each end: the machine's refaults read fewer than the
/// box's own. Event counters (pgscan, pswpin, pgmajfault) are summed
/// over CPUs on every read and need no fold. A kernel that refuses the
/// write (not root, a read-only /proc/sys) is said once on stderr.
fn fold_cpu_differentials() {
    static SAID: std::sync::Once = std::sync::Once::new();
    if let Err(e) = std::fs::write("/proc/sys/vm/stat_refresh", "1") {
        SAID.call_once(|| {
            eprintln!(
                "vmtrace: notice: /proc/sys/vm/stat_refresh: {e}; node \
                 counters of /proc/vmstat (workingset_*, nr_*) may lag by \
                 up to vm stat_threshold pages per CPU"
            )
        });
    }
}

/// The per-size mTHP event counters vmtrace reports (older names too).
const MTHP_STATS: &[&str] = &[
    "anon_fault_alloc",
    "anon_fault_fallback",
    "swpout",
    "swpout_fallback",
    "anon_swpout",
    "anon_swpout_fallback",
];

fn add_mthp_stats(v: &mut VmStat, dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(size) = name.strip_prefix("hugepages-") else {
            continue;
        };
        for stat in MTHP_STATS {
            let path = entry.path().join("stats").join(stat);
            if let Some(n) = std::fs::read_to_string(path)
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                v.0.insert(format!("{MTHP_KEY}{size}/{stat}"), n);
            }
        }
    }
}

/// The memory pressure totals of /proc/pressure/memory; None when PSI is
/// off.
pub fn read_psi() -> Option<Psi> {
    parse_psi(&std::fs::read_to_string("/proc/pressure/memory").ok()?)
}

/// The running kernel's release (`uname -r`).
pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Zone names per node, in the kernel's zone index order, from
/// /proc/zoneinfo (which lists empty zones too, so positions are ids).
pub fn zone_names(zoneinfo: &str) -> Vec<(u32, Vec<String>)> {
    let mut out: Vec<(u32, Vec<String>)> = Vec::new();
    for line in zoneinfo.lines() {
        let Some(rest) = line.strip_prefix("Node ") else {
            continue;
        };
        let Some((node, zone)) = rest.split_once(", zone") else {
            continue;
        };
        let Ok(node) = node.trim().parse::<u32>() else {
            continue;
        };
        let zone = zone.trim().to_string();
        match out.iter_mut().find(|(n, _)| *n == node) {
            Some((_, zones)) => zones.push(zone),
            None => out.push((node, vec![zone])),
        }
    }
    out
}

/// CPU time (user + system, seconds) of every kswapd thread, by node.
pub fn kswapd_cpu() -> Vec<(u32, f64)> {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may hold spaces; split at ')'.
        let Some((head, tail)) = stat.rsplit_once(')') else {
            continue;
        };
        let Some(node) = head
            .split_once('(')
            .and_then(|(_, comm)| comm.strip_prefix("kswapd"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let f: Vec<&str> = tail.split_whitespace().collect();
        // After ')': state is field 3, utime 14, stime 15 (1-based).
        let ticks = |i: usize| {
            f.get(i - 3)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        out.push((node, (ticks(14) + ticks(15)) as f64 / hz));
    }
    out.sort_by_key(|(n, _)| *n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zone_names_follow_zoneinfo_order() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernel-formats");
        for release in ["6.1.0-57-amd64", "6.12.117+deb12-amd64", "6.18.44-fc-v669"] {
            let text =
                std::fs::read_to_string(dir.join(release).join("zoneinfo.txt")).expect("read");
            let zones = zone_names(&text);
            assert_eq!(zones.len(), 1, "{release}: {zones:?}");
            let (node, names) = &zones[0];
            assert_eq!(*node, 0);
            assert_eq!(&names[..3], ["DMA", "DMA32", "Normal"], "{release}");
        }
        let two =
            "Node 0, zone   Normal\n  pages free 1\nNode 1, zone      DMA\nNode 1, zone   Normal\n";
        assert_eq!(
            zone_names(two),
            vec![
                (0, vec!["Normal".to_string()]),
                (1, vec!["DMA".into(), "Normal".into()])
            ]
        );
    }

    #[test]
    fn kswapd_threads_are_found() {
        // Every Linux machine with memory has a kswapd per node.
        let cpu = kswapd_cpu();
        assert!(!cpu.is_empty());
        assert!(cpu.iter().all(|(_, s)| *s >= 0.0));
    }
}
