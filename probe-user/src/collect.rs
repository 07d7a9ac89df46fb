//! Reading what the probes gathered (per-CPU maps, summed) and the
//! kernel's own counters (/proc/vmstat), which the report sets side by
//! side.

use std::collections::BTreeMap;

use anyhow::{Context, Result, anyhow};
use aya::maps::PerCpuArray;
use vmtrace_common::{
    Counter, Hist, LruShrinkInactive, MAX_NODES, ReclaimContext, hist::Buckets, lru_cell, names,
};

use crate::probes::Probes;

/// Everything the eBPF maps hold, summed over CPUs.
#[derive(Clone, Debug)]
pub struct KernelTotals {
    /// Bucket counts per [`Hist`], indexed by `Hist as usize`.
    pub hists: Vec<Vec<u64>>,
    /// Per [`Counter`], indexed by `Counter as usize`.
    pub counters: Vec<u64>,
    /// Non-empty (node, context) cells of the LRU table.
    pub lru: Vec<LruRow>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LruRow {
    pub node: u32,
    pub context: ReclaimContext,
    pub totals: LruShrinkInactive,
}

impl KernelTotals {
    pub fn counter(&self, c: Counter) -> u64 {
        self.counters.get(c as usize).copied().unwrap_or(0)
    }

    pub fn hist(&self, h: Hist) -> &[u64] {
        self.hists.get(h as usize).map_or(&[], Vec::as_slice)
    }
}

fn per_cpu_array<'a, V: aya::Pod>(
    probes: &'a Probes,
    name: &str,
) -> Result<PerCpuArray<&'a aya::maps::MapData, V>> {
    let map = probes
        .ebpf
        .map(name)
        .ok_or_else(|| anyhow!("map {name} is not in the eBPF object"))?;
    PerCpuArray::try_from(map).with_context(|| format!("map {name}"))
}

/// Reads every map. Cheap enough to call once per progress interval.
pub fn read(probes: &Probes) -> Result<KernelTotals> {
    let hist_map = per_cpu_array::<Buckets>(probes, names::HISTOGRAMS)?;
    let mut hists = Vec::new();
    for h in Hist::ALL {
        let per_cpu = hist_map.get(&(h as u32), 0)?;
        let mut sum = vec![0u64; vmtrace_common::hist::BUCKETS];
        for cpu in per_cpu.iter() {
            for (s, c) in sum.iter_mut().zip(cpu.counts.iter()) {
                *s += c;
            }
        }
        hists.push(sum);
    }

    let counter_map = per_cpu_array::<u64>(probes, names::COUNTERS)?;
    let mut counters = Vec::new();
    for i in 0..Counter::COUNT {
        counters.push(counter_map.get(&i, 0)?.iter().sum());
    }

    let lru_map = per_cpu_array::<LruShrinkInactive>(probes, names::LRU_SHRINK_INACTIVE)?;
    let mut lru = Vec::new();
    for node in 0..online_node_limit() {
        for context in ReclaimContext::ALL {
            let mut totals = LruShrinkInactive::default();
            for cell in lru_map.get(&lru_cell(node, context), 0)?.iter() {
                totals.events += cell.events;
                totals.nr_scanned += cell.nr_scanned;
                totals.nr_reclaimed += cell.nr_reclaimed;
            }
            if totals.events > 0 {
                lru.push(LruRow {
                    node,
                    context,
                    totals,
                });
            }
        }
    }
    Ok(KernelTotals {
        hists,
        counters,
        lru,
    })
}

/// Number of node ids worth reading: highest possible node + 1, capped.
fn online_node_limit() -> u32 {
    std::fs::read_to_string("/sys/devices/system/node/possible")
        .ok()
        .and_then(|s| parse_cpu_list_max(s.trim()))
        .map_or(MAX_NODES, |max| (max + 1).min(MAX_NODES))
}

/// The largest id in a kernel list like `0-3,8`.
fn parse_cpu_list_max(list: &str) -> Option<u32> {
    list.split(',')
        .filter_map(|part| part.rsplit('-').next()?.trim().parse().ok())
        .max()
}

/// A snapshot of /proc/vmstat.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VmStat(pub BTreeMap<String, u64>);

impl VmStat {
    pub fn parse(text: &str) -> VmStat {
        VmStat(
            text.lines()
                .filter_map(|l| {
                    let (k, v) = l.split_once(' ')?;
                    Some((k.to_string(), v.trim().parse().ok()?))
                })
                .collect(),
        )
    }

    pub fn read() -> Result<VmStat> {
        let text = std::fs::read_to_string("/proc/vmstat").context("reading /proc/vmstat")?;
        Ok(VmStat::parse(&text))
    }

    pub fn get(&self, key: &str) -> u64 {
        self.0.get(key).copied().unwrap_or(0)
    }

    /// Sum of several keys (e.g. pgscan_anon + pgscan_file).
    pub fn sum(&self, keys: &[&str]) -> u64 {
        keys.iter().map(|k| self.get(k)).sum()
    }

    /// `after - before` for every key of `after` (counters only grow;
    /// gauges that shrank give 0).
    pub fn delta(before: &VmStat, after: &VmStat) -> VmStat {
        VmStat(
            after
                .0
                .iter()
                .map(|(k, &v)| (k.clone(), v.saturating_sub(before.get(k))))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vmstat_parses_real_snapshots_and_deltas() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernel-formats");
        for release in ["6.1.0-57-amd64", "6.12.117+deb12-amd64", "6.18.44-fc-v669"] {
            let text = std::fs::read_to_string(dir.join(release).join("vmstat.txt")).expect("read");
            let v = VmStat::parse(&text);
            assert!(v.0.contains_key("pgmajfault"), "{release}");
            assert!(v.0.contains_key("pswpout"), "{release}");
            assert!(v.0.len() > 100, "{release}: {}", v.0.len());
        }
        let a = VmStat::parse("pgscan_anon 10\npgscan_file 5\nnr_free_pages 100\n");
        let b = VmStat::parse("pgscan_anon 25\npgscan_file 5\nnr_free_pages 90\n");
        let d = VmStat::delta(&a, &b);
        assert_eq!(d.sum(&["pgscan_anon", "pgscan_file"]), 15);
        assert_eq!(d.get("nr_free_pages"), 0);
        assert_eq!(d.get("absent"), 0);
    }

    #[test]
    fn node_list_max() {
        assert_eq!(parse_cpu_list_max("0"), Some(0));
        assert_eq!(parse_cpu_list_max("0-3,8"), Some(8));
        assert_eq!(parse_cpu_list_max("0-1"), Some(1));
        assert_eq!(parse_cpu_list_max(""), None);
    }
}
