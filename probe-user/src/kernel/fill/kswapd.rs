//! kswapd and the zones in the report: kswapd per node (wakes, time
//! awake, CPU), its awake periods and wakeups; and the rows per (node,
//! zone), where the map totals per node and zone meet the samples'
//! watermark times and the zones' LRU sizes at the end.

use vmtrace_common::Hist;

use crate::{
    kernel::totals::KernelTotals,
    model::{
        histogram::summarize,
        report::*,
        sample::{Sample, ZoneSample, time_below, time_boosted},
    },
};

/// The kswapd section. `cpu` is (node, seconds before, after);
/// `zones` names zone indices per node (from /proc/zoneinfo).
pub(super) fn kswapd(
    totals: &KernelTotals,
    cpu: &[(u32, f64, f64)],
    zones: &[(u32, Vec<String>)],
) -> KswapdReport {
    let mut k = KswapdReport {
        nodes: node_rows(totals, cpu),
        ..Default::default()
    };
    let periods = totals.hist(Hist::KswapdAwake);
    if periods.iter().any(|&n| n > 0) {
        k.awake_periods = Some(summarize(periods));
    }
    k.wakeups = wakeups(totals, zones);
    k.wakeup_orders = totals.kswapd_wakeup_order.clone();
    k.wakers = totals
        .kswapd_wakers
        .iter()
        .take(10)
        .map(|(name, count)| NameCount {
            name: name.clone(),
            count: *count,
        })
        .collect();
    k
}

/// Each kswapd's CPU seconds (node, at the opening, at the close), from
/// (node, seconds) at each; a node new at the close counts from then.
pub(super) fn cpu(before: &[(u32, f64)], after: &[(u32, f64)]) -> Vec<(u32, f64, f64)> {
    after
        .iter()
        .map(|&(node, after)| {
            let before = before
                .iter()
                .find(|(n, _)| *n == node)
                .map_or(after, |(_, b)| *b);
            (node, before, after)
        })
        .collect()
}

/// The per-(node, zone) rows from the kernel totals and the samples:
/// populated zones, and empty ones a per-zone probe named.
pub(super) fn zones(totals: &KernelTotals, samples: &[Sample], page_alloc: bool) -> Vec<ZoneRow> {
    let mut rows = Vec::new();
    let Some(last) = samples.last() else {
        return rows;
    };
    let below = time_below(samples);
    let boosted = time_boosted(samples);
    for (idx, z) in last.zones.iter().enumerate() {
        // Zone index within its node = position among the node's zones.
        let zid = last.zones[..idx]
            .iter()
            .filter(|o| o.node == z.node)
            .count() as u32;
        let (below_low_s, below_min_s) = below
            .iter()
            .find(|b| b.0 == z.node && b.1 == z.zone)
            .map_or((0.0, 0.0), |b| (b.2, b.3));
        let boosted_s = boosted
            .iter()
            .find(|b| b.0 == z.node && b.1 == z.zone)
            .map_or(0.0, |b| b.2);
        let row = ZoneRow {
            below_low_s,
            below_min_s,
            boosted_s,
            ..zone_row(totals, z, zid, page_alloc)
        };
        let busy = row.reclaim_retries + row.allocated_pages.unwrap_or(0);
        if z.managed > 0 || busy > 0 {
            rows.push(row);
        }
    }
    rows
}

/// Per node: wakes and time awake (counting a period still open), and
/// kswapd's CPU time over the run.
fn node_rows(totals: &KernelTotals, cpu: &[(u32, f64, f64)]) -> Vec<KswapdNodeReport> {
    cpu.iter()
        .map(|&(node, before, after)| {
            let (wakes, awake_ns) = totals
                .kswapd
                .iter()
                .find(|(n, _, _)| *n == node)
                .map_or((0, 0), |(_, t, open)| {
                    (t.wakes, t.awake_ns + open.unwrap_or(0))
                });
            KswapdNodeReport {
                node,
                wakes,
                awake_s: awake_ns as f64 / 1e9,
                cpu_s: (after - before).max(0.0),
            }
        })
        .collect()
}

/// kswapd wakeups per (node, highest zone), the zone named when known.
fn wakeups(totals: &KernelTotals, zones: &[(u32, Vec<String>)]) -> Vec<ZoneCount> {
    totals
        .kswapd_wakeups
        .iter()
        .map(|&(node, zid, count)| ZoneCount {
            node,
            zone: zone_name(zones, node, zid),
            count,
        })
        .collect()
}

/// The name of zone `zid` of `node` (zoneinfo's order), else `zone<zid>`.
pub(super) fn zone_name(zones: &[(u32, Vec<String>)], node: u32, zid: u32) -> String {
    zones
        .iter()
        .find(|(n, _)| *n == node)
        .and_then(|(_, z)| z.get(zid as usize).cloned())
        .unwrap_or_else(|| format!("zone{zid}"))
}

/// One zone's row from the map totals (`zid`: its index in its node)
/// and its zoneinfo at the end; the watermark times are the caller's.
/// mm_vmscan_lru_isolate is not here: it has no node, and its zone is
/// the reclaim's highest allowed one (report.lru_isolate, shown apart).
fn zone_row(totals: &KernelTotals, z: &ZoneSample, zid: u32, page_alloc: bool) -> ZoneRow {
    let in_zone = |cells: &[(u32, u32, u64)]| -> u64 {
        cells
            .iter()
            .filter(|c| c.0 == z.node && c.1 == zid)
            .map(|c| c.2)
            .sum()
    };
    ZoneRow {
        node: z.node,
        zone: z.zone.clone(),
        reclaim_retries: in_zone(&totals.retry_zone),
        allocated_pages: page_alloc.then(|| in_zone(&totals.page_alloc)),
        end: Some(ZoneEnd {
            free: z.free,
            inactive_anon: z.inactive_anon,
            active_anon: z.active_anon,
            inactive_file: z.inactive_file,
            active_file: z.active_file,
            lowmem_reserve: z.lowmem_reserve,
        }),
        ..Default::default()
    }
}
