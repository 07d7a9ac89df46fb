//! Where reclaim was entered (probe-ebpf `entry`), read: the rows of
//! `RECLAIM_ENTRIES`, their stacks from `ENTRY_STACKS` symbolized with
//! /proc/kallsyms, their GFP flags named as this kernel's tracepoint
//! prints them. Stacks that differ only in return addresses inside the
//! same functions read the same and are one row.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use aya::maps::{HashMap as AyaHashMap, StackTraceMap};
use vmtrace_common::{Counter, ENTRY_STACK_LOST, EntryCell, EntryKey, ReclaimContext, names};

use crate::{
    kernel::{
        collect::KernelTotals,
        gfp::GfpNames,
        kallsyms::Kallsyms,
        probes::{MetricId, Probes},
    },
    model::report::{EntryPath, ReclaimEntries},
};

/// The ways in so far; None when the metric is off (`--no-stacks`, or
/// this kernel lacks its tracepoints). `totals` gives the counters.
pub fn read(probes: &Probes, totals: &KernelTotals) -> Result<Option<ReclaimEntries>> {
    if !probes.plan.is_enabled(MetricId::ReclaimEntries) {
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
    // Unreadable symbols leave the frames in hex: never a lost window.
    let symbols = match &probes.kallsyms {
        Some(file) if !cells.is_empty() => Kallsyms::read(file).unwrap_or_else(|e| {
            eprintln!("vmtrace: notice: reclaim entry stacks left in hex: {e:#}");
            Kallsyms::default()
        }),
        _ => Kallsyms::default(),
    };
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
    let rows = cells.into_iter().map(|(key, cell)| {
        let frames = if key.stack_id == ENTRY_STACK_LOST {
            Vec::new()
        } else {
            frames(key.stack_id)
        };
        (key, frames, cell)
    });
    Ok(Some(ReclaimEntries {
        paths: merge(rows, probes.plan.gfp_names.as_ref()),
        stacks_lost: totals.counter(Counter::EntryStacksLost),
        table_full: totals.counter(Counter::EntriesFull),
    }))
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
fn merge(
    rows: impl Iterator<Item = (EntryKey, Vec<String>, EntryCell)>,
    gfp: Option<&GfpNames>,
) -> Vec<EntryPath> {
    let mut merged: BTreeMap<(u32, Vec<String>, u32, u32), EntryCell> = BTreeMap::new();
    for (key, frames, cell) in rows {
        let m = merged
            .entry((key.context, frames, key.gfp, key.order))
            .or_default();
        m.count += cell.count;
        m.stall_ns += cell.stall_ns;
    }
    let mut paths: Vec<EntryPath> = merged
        .into_iter()
        .map(|((context, frames, flags, order), cell)| EntryPath {
            context: context_name(context).into(),
            frames,
            gfp: flags,
            gfp_names: gfp.map_or_else(|| format!("0x{flags:x}"), |g| g.decode(flags.into())),
            order,
            count: cell.count,
            stall_ns: cell.stall_ns,
        })
        .collect();
    paths.sort_by(|a, b| b.stall_ns.cmp(&a.stall_ns).then(b.count.cmp(&a.count)));
    paths
}

fn context_name(context: u32) -> &'static str {
    ReclaimContext::ALL
        .iter()
        .find(|c| **c as u32 == context)
        .map_or("other", |c| c.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(stack_id: i32, context: ReclaimContext, gfp: u32) -> EntryKey {
        EntryKey {
            stack_id,
            context: context as u32,
            gfp,
            order: 0,
        }
    }

    fn cell(count: u64, stall_ns: u64) -> EntryCell {
        EntryCell { count, stall_ns }
    }

    #[test]
    fn stacks_that_read_the_same_are_one_row_most_stall_first() {
        let f = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let anon = f(&["try_to_free_mem_cgroup_pages", "do_anonymous_page"]);
        let file = f(&["try_to_free_mem_cgroup_pages", "filemap_fault"]);
        let rows = vec![
            (
                key(1, ReclaimContext::Memcg, 0xcc0),
                anon.clone(),
                cell(2, 100),
            ),
            (
                key(7, ReclaimContext::Memcg, 0xcc0),
                anon.clone(),
                cell(3, 50),
            ),
            (
                key(2, ReclaimContext::Memcg, 0xcc0),
                file.clone(),
                cell(9, 120),
            ),
            (
                key(3, ReclaimContext::Direct, 0xcc0),
                anon.clone(),
                cell(1, 10),
            ),
        ];
        let paths = merge(rows.into_iter(), None);
        assert_eq!(paths.len(), 3);
        assert_eq!((paths[0].count, paths[0].stall_ns), (5, 150));
        assert_eq!(paths[0].frames, anon);
        assert_eq!(paths[0].context, "memcg");
        assert_eq!(paths[0].gfp_names, "0xcc0");
        assert_eq!((paths[1].count, paths[1].stall_ns), (9, 120));
        assert_eq!(paths[2].context, "direct");
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
        let rows = vec![(
            key(1, ReclaimContext::Memcg, kernel),
            Vec::new(),
            cell(1, 1),
        )];
        let paths = merge(rows.into_iter(), Some(&names));
        assert_eq!(paths[0].gfp_names, "GFP_KERNEL");
        assert_eq!(paths[0].gfp, kernel);
    }
}
