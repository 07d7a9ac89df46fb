//! The zones mechanism: pressure that shifted between zones, read
//! from the runs' per-zone counters rather than from the compared
//! metrics.

use super::{Hint, Mechanism};
use crate::analysis::hint::{Fact, ZoneCounted, ZoneShare};
use crate::model::report::{RunReport, ZoneTypeCounts};

/// Pressure shifted between zones (the seed mail's "uneven pressure on
/// normal and DMA zones"): a zone's share of page allocations
/// (pgalloc_<zone>, all nodes), of direct reclaim stalls
/// (allocstall_<zone>, by highest allowed zone) or of --page-alloc's
/// allocations per node and zone moved by 10 points or more.
pub(super) fn zone_shift(a: &[&RunReport], b: &[&RunReport]) -> Option<Hint> {
    let mut evidence = Vec::new();
    let picks: [(ZoneCounted, Pick); 3] = [
        (ZoneCounted::Allocations, |r| per_type(r, |t| t.pgalloc)),
        (ZoneCounted::DirectReclaimStalls, |r| {
            per_type(r, |t| t.allocstall)
        }),
        (ZoneCounted::AllocationsByNode, |r| {
            r.zones
                .iter()
                .filter_map(|z| Some((format!("{}/{}", z.node, z.zone), z.allocated_pages?)))
                .collect()
        }),
    ];
    for (counted, pick) in picks {
        let (sa, sb) = (zone_shares(a, pick), zone_shares(b, pick));
        let zones: Vec<ZoneShare> = sa
            .into_iter()
            .filter_map(|(zone, a_pct)| {
                let b_pct = sb.iter().find(|(m, _)| *m == zone).map_or(0.0, |(_, y)| *y);
                ((b_pct - a_pct).abs() >= 10.0).then_some(ZoneShare { zone, a_pct, b_pct })
            })
            .collect();
        if !zones.is_empty() {
            evidence.push(Fact::ZoneShares { counted, zones });
        }
    }
    (!evidence.is_empty()).then_some(Hint {
        mechanism: Mechanism::Zones,
        seconds: 0.0,
        evidence,
    })
}

/// What is counted of a run, per zone: (zone name, count).
type Pick = fn(&RunReport) -> Vec<(String, u64)>;

/// One /proc/vmstat per-zone counter of a run, per zone type.
fn per_type(r: &RunReport, f: fn(&ZoneTypeCounts) -> u64) -> Vec<(String, u64)> {
    r.zone_vmstat
        .iter()
        .flatten()
        .map(|t| (t.zone.clone(), f(t)))
        .collect()
}

/// Each zone's share in percent of what `pick` counts, summed over the
/// runs, in order of first appearance.
fn zone_shares(runs: &[&RunReport], pick: Pick) -> Vec<(String, f64)> {
    let mut per: Vec<(String, u64)> = Vec::new();
    for r in runs {
        for (name, v) in pick(r) {
            match per.iter_mut().find(|(n, _)| *n == name) {
                Some((_, x)) => *x += v,
                None => per.push((name, v)),
            }
        }
    }
    let total: u64 = per.iter().map(|(_, v)| v).sum();
    per.into_iter()
        .map(|(n, v)| {
            (
                n,
                if total > 0 {
                    100.0 * v as f64 / total as f64
                } else {
                    0.0
                },
            )
        })
        .collect()
}
