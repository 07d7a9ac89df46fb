//! The zones mechanism: pressure that shifted between zones, read
//! from the runs' per-zone counters rather than from the compared
//! metrics.

use super::{Hint, Mechanism};
use crate::model::report::{RunReport, ZoneTypeCounts};

/// Pressure shifted between zones (the seed mail's "uneven pressure on
/// normal and DMA zones"): a zone's share of page allocations
/// (pgalloc_<zone>, all nodes), of direct reclaim stalls
/// (allocstall_<zone>, by highest allowed zone) or of --page-alloc's
/// allocations per node and zone moved by 10 points or more.
pub(super) fn zone_shift(a: &[&RunReport], b: &[&RunReport]) -> Option<Hint> {
    let mut parts = Vec::new();
    let picks: [(&str, Pick); 3] = [
        ("allocations", |r| per_type(r, |t| t.pgalloc)),
        ("direct reclaim stalls", |r| per_type(r, |t| t.allocstall)),
        ("allocations by node", |r| {
            r.zones
                .iter()
                .filter_map(|z| Some((format!("{}/{}", z.node, z.zone), z.allocated_pages?)))
                .collect()
        }),
    ];
    for (what, pick) in picks {
        let (sa, sb) = (zone_shares(a, pick), zone_shares(b, pick));
        let moved: Vec<String> = sa
            .iter()
            .filter_map(|(n, x)| {
                let y = sb.iter().find(|(m, _)| m == n).map_or(0.0, |(_, y)| *y);
                ((y - x).abs() >= 10.0).then(|| format!("{n} {x:.0}% -> {y:.0}%"))
            })
            .collect();
        if !moved.is_empty() {
            parts.push(format!("{what} {}", moved.join(", ")));
        }
    }
    (!parts.is_empty()).then(|| Hint {
        mechanism: Mechanism::Zones,
        seconds: 0.0,
        text: format!("pressure shifted between zones: {}", parts.join("; ")),
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
