//! Where reclaim was entered (probe-ebpf `entry`), read: the rows of
//! `RECLAIM_ENTRIES`, their stacks from `ENTRY_STACKS` symbolized with
//! /proc/kallsyms, their GFP flags named as this kernel's tracepoint
//! prints them. Stacks that differ only in return addresses inside the
//! same functions read the same and are one row.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use aya::maps::{HashMap as AyaHashMap, StackTraceMap};
use vmtrace_common::{Counter, ENTRY_STACK_LOST, EntryCell, EntryKey, EntryWay, MAX_ZONES, names};

use crate::{
    kernel::{
        gfp::GfpNames,
        kallsyms::Kallsyms,
        probes::{MetricId, Probes},
        totals::KernelTotals,
    },
    model::report::{EntryPath, EntrySplit, KswapdWakePath, ReclaimEntries},
};

/// The ways in so far (reclaim, direct compaction, kswapd wake-ups);
/// None when all three are off (`--no-stacks`, or this kernel lacks
/// their tracepoints). `totals` gives the counters.
pub fn read(probes: &Probes, totals: &KernelTotals) -> Result<Option<ReclaimEntries>> {
    if !probes.plan.takes_entry_stacks() {
        return Ok(None);
    }
    let map = |name: &str| {
        probes
            .ebpf
            .map(name)
            .with_context(|| format!("map {name} is not in the eBPF object"))
    };
    let cells: AyaHashMap<_, EntryKey, EntryCell> =
        AyaHashMap::try_from(map(names::RECLAIM_ENTRIES)?)?;
    let cells: Vec<(EntryKey, EntryCell)> = cells.iter().flatten().collect();
    let stacks = StackTraceMap::try_from(map(names::ENTRY_STACKS)?)?;
    let symbols = Kallsyms::for_stacks(
        probes.kallsyms.as_ref(),
        !cells.is_empty(),
        "reclaim entry stacks",
    );
    let frames = |id: i32| -> Vec<String> {
        let Ok(id) = u32::try_from(id) else {
            return Vec::new();
        };
        match stacks.get(&id, 0) {
            Ok(trace) => {
                let names = trace.frames().iter().map(|f| symbols.name(f.ip));
                names.skip_while(|n| is_tracing_frame(n)).collect()
            }
            Err(_) => Vec::new(),
        }
    };
    let (wakes, ways): (Vec<_>, Vec<_>) = cells
        .into_iter()
        .map(|(key, cell)| {
            let frames = if key.stack_id == ENTRY_STACK_LOST {
                Vec::new()
            } else {
                frames(key.stack_id)
            };
            (key, frames, cell)
        })
        .partition(|(key, _, _)| key.context == EntryWay::KswapdWake as u32);
    let gfp = probes.plan.gfp_names.as_ref();
    Ok(Some(ReclaimEntries {
        paths: merge(
            ways.into_iter(),
            gfp,
            probes.plan.is_enabled(MetricId::SchedSplit),
        ),
        stacks_lost: totals.counter(Counter::EntryStacksLost),
        table_full: totals.counter(Counter::EntriesFull),
        kswapd_wakers: wake_paths(wakes.into_iter(), gfp),
    }))
}

/// One row per (zone, frames, GFP, order), most wake-ups first; zones
/// are named `zone<zid>` until the report names them from zoneinfo.
fn wake_paths(
    rows: impl Iterator<Item = (EntryKey, Vec<String>, EntryCell)>,
    gfp: Option<&GfpNames>,
) -> Vec<KswapdWakePath> {
    let mut merged: BTreeMap<(u32, Vec<String>, u32, u32), u64> = BTreeMap::new();
    for (key, frames, cell) in rows {
        *merged
            .entry((key.zone, frames, key.gfp, key.order))
            .or_default() += cell.count;
    }
    let mut paths: Vec<KswapdWakePath> = merged
        .into_iter()
        .map(|((cell, frames, flags, order), count)| KswapdWakePath {
            node: cell / MAX_ZONES,
            zid: cell % MAX_ZONES,
            zone: format!("zone{}", cell % MAX_ZONES),
            frames,
            gfp: flags,
            gfp_names: gfp_name(gfp, flags),
            order,
            count,
        })
        .collect();
    paths.sort_by_key(|p| std::cmp::Reverse(p.count));
    paths
}

fn gfp_name(gfp: Option<&GfpNames>, flags: u32) -> String {
    gfp.map_or_else(|| format!("0x{flags:x}"), |g| g.decode(flags.into()))
}

/// The tracepoint's own machinery above the function that holds it:
/// with one probe on the tracepoint a static call reaches the probe
/// directly, with more (another tracer, or ftrace) `__traceiter_*`
/// loops over them, so the same way in would read two ways.
fn is_tracing_frame(name: &str) -> bool {
    [
        "__traceiter_",
        "perf_trace_",
        "trace_event_raw_event_",
        "__bpf_trace_",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// One row per (context, frames, GFP, order), most stall time first.
/// `split`: whether the stalls' split was measured (the sched split
/// metric ran).
fn merge(
    rows: impl Iterator<Item = (EntryKey, Vec<String>, EntryCell)>,
    gfp: Option<&GfpNames>,
    split: bool,
) -> Vec<EntryPath> {
    let mut merged: BTreeMap<(u32, Vec<String>, u32, u32), EntryCell> = BTreeMap::new();
    for (key, frames, cell) in rows {
        let m = merged
            .entry((key.context, frames, key.gfp, key.order))
            .or_default();
        m.count += cell.count;
        m.stall_ns += cell.stall_ns;
        m.on_cpu_ns += cell.on_cpu_ns;
        m.runnable_ns += cell.runnable_ns;
        m.blocked_ns += cell.blocked_ns;
    }
    // A context no program writes (none does) has no row: it is no way
    // in vmtrace knows of.
    let mut paths: Vec<EntryPath> = merged
        .into_iter()
        .filter_map(|((context, frames, flags, order), cell)| {
            Some((EntryWay::of(context)?, frames, flags, order, cell))
        })
        .map(|(context, frames, flags, order, cell)| EntryPath {
            context,
            frames,
            gfp: flags,
            gfp_names: gfp_name(gfp, flags),
            order,
            count: cell.count,
            stall_ns: cell.stall_ns,
            split: split.then_some(EntrySplit {
                on_cpu_ns: cell.on_cpu_ns,
                runnable_ns: cell.runnable_ns,
                blocked_ns: cell.blocked_ns,
            }),
        })
        .collect();
    paths.sort_by(|a, b| b.stall_ns.cmp(&a.stall_ns).then(b.count.cmp(&a.count)));
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(stack_id: i32, context: EntryWay, gfp: u32) -> EntryKey {
        EntryKey {
            stack_id,
            context: context as u32,
            gfp,
            order: 0,
            zone: 0,
        }
    }

    fn cell(count: u64, stall_ns: u64) -> EntryCell {
        EntryCell {
            count,
            stall_ns,
            on_cpu_ns: stall_ns / 2,
            runnable_ns: stall_ns / 4,
            blocked_ns: stall_ns / 4,
        }
    }

    #[test]
    fn stacks_that_read_the_same_are_one_row_most_stall_first() {
        let f = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let anon = f(&["try_to_free_mem_cgroup_pages", "do_anonymous_page"]);
        let file = f(&["try_to_free_mem_cgroup_pages", "filemap_fault"]);
        let rows = vec![
            (key(1, EntryWay::Memcg, 0xcc0), anon.clone(), cell(2, 100)),
            (key(7, EntryWay::Memcg, 0xcc0), anon.clone(), cell(3, 50)),
            (key(2, EntryWay::Memcg, 0xcc0), file.clone(), cell(9, 120)),
            (key(3, EntryWay::Direct, 0xcc0), anon.clone(), cell(1, 10)),
        ];
        let paths = merge(rows.into_iter(), None, true);
        assert_eq!(paths.len(), 3);
        assert_eq!((paths[0].count, paths[0].stall_ns), (5, 150));
        let split = paths[0].split.as_ref().expect("split measured");
        assert_eq!(
            (split.on_cpu_ns, split.runnable_ns, split.blocked_ns),
            (75, 37, 37)
        );
        assert_eq!(paths[0].frames, anon);
        assert_eq!(paths[0].context, EntryWay::Memcg);
        assert_eq!(paths[0].gfp_names, "0xcc0");
        assert_eq!((paths[1].count, paths[1].stall_ns), (9, 120));
        assert_eq!(paths[2].context, EntryWay::Direct);
    }

    #[test]
    fn the_tracepoints_own_frames_are_not_a_way_in() {
        assert!(is_tracing_frame(
            "__traceiter_mm_vmscan_memcg_reclaim_begin"
        ));
        assert!(is_tracing_frame(
            "perf_trace_mm_vmscan_direct_reclaim_begin_template"
        ));
        assert!(!is_tracing_frame("try_to_free_mem_cgroup_pages"));
    }

    #[test]
    fn gfp_flags_are_named_by_the_kernels_table() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/kernel-formats/6.12.117+deb12-amd64/vmscan/",
            "mm_vmscan_memcg_reclaim_begin/format"
        );
        let text = std::fs::read_to_string(dir).expect("format file");
        let names = GfpNames::from_format(&text, "gfp_flags").expect("table");
        let kernel = names.value("GFP_KERNEL").expect("GFP_KERNEL") as u32;
        let rows = vec![(key(1, EntryWay::Memcg, kernel), Vec::new(), cell(1, 1))];
        let paths = merge(rows.into_iter(), Some(&names), false);
        assert_eq!(paths[0].gfp_names, "GFP_KERNEL");
        assert_eq!(paths[0].gfp, kernel);
    }
}
