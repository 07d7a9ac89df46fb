//! The metrics `compare` puts side by side: the table of what is
//! measured (name, unit, how to read it from a run), the extractors that
//! need more than one field, and the per-metric rows of group summaries
//! and changes against the baseline.

use super::stats::{Describe, describe, welch};
use super::{Change, MetricRow, Unit};
use crate::model::{
    report::{DelayReport, ReclaimReport, RunReport, SwapCauses},
    sample::Psi,
};

/// Every metric compared: (name, unit, value of a run).
type Extract = fn(&RunReport) -> Option<f64>;
const METRICS: &[(&str, Unit, Extract)] = &[
    ("elapsed", Unit::Seconds, |r| Some(r.usage.wall_s)),
    ("user CPU", Unit::Seconds, |r| Some(r.usage.user_s)),
    ("system CPU", Unit::Seconds, |r| Some(r.usage.sys_s)),
    ("major faults", Unit::Count, |r| {
        Some(r.usage.major_faults as f64)
    }),
    ("minor faults", Unit::Count, |r| {
        Some(r.usage.minor_faults as f64)
    }),
    // The box's own PSI (its cgroup's memory.pressure; None without a
    // box with a memory limit): wall time some / every task of the box
    // stalled on memory. See model::membox::BoxReport.
    ("box pressure some", Unit::Seconds, |r| {
        box_pressure(r).map(|p| p.some_us as f64 / 1e6)
    }),
    ("box pressure full", Unit::Seconds, |r| {
        box_pressure(r).map(|p| p.full_us as f64 / 1e6)
    }),
    ("reclaim stalls", Unit::Count, |r| {
        reclaim_field(r, |s| s.stalls.count as f64)
    }),
    ("reclaim stall time", Unit::Seconds, |r| {
        reclaim_field(r, |s| s.stalls.total_ns as f64 / 1e9)
    }),
    ("memcg stall p99", Unit::Seconds, |r| {
        r.memcg_reclaim
            .as_ref()
            .filter(|m| m.stalls.count > 0)
            .map(|m| m.stalls.p99_ns as f64 / 1e9)
    }),
    ("direct stall p99", Unit::Seconds, |r| {
        r.direct_reclaim
            .as_ref()
            .filter(|m| m.stalls.count > 0)
            .map(|m| m.stalls.p99_ns as f64 / 1e9)
    }),
    ("pages scanned", Unit::Pages, |r| {
        Some(r.vmstat.pgscan as f64)
    }),
    ("pages reclaimed", Unit::Pages, |r| {
        Some(r.vmstat.pgsteal as f64)
    }),
    ("reclaim efficiency", Unit::Percent, |r| {
        (r.vmstat.pgscan > 0).then(|| 100.0 * r.vmstat.pgsteal as f64 / r.vmstat.pgscan as f64)
    }),
    ("scan velocity", Unit::PerSecond, |r| {
        (r.usage.wall_s > 0.0).then(|| r.vmstat.pgscan as f64 / r.usage.wall_s)
    }),
    // Swapped out / in through every backend (the swap device, zswap,
    // the zero map: model::swap_causes), then the device's share: with
    // zswap on, the device's alone reads as "swap-out -> 0". None for
    // recordings without the split (older vmtrace).
    ("pages swapped out", Unit::Pages, |r| {
        causes(r)?.swapout_pages().map(|v| v as f64)
    }),
    ("written to swap device", Unit::Pages, |r| {
        Some(r.vmstat.pswpout as f64)
    }),
    ("pages swapped in", Unit::Pages, |r| {
        causes(r)?.swapin_pages().map(|v| v as f64)
    }),
    ("read from swap device", Unit::Pages, |r| {
        Some(r.vmstat.pswpin as f64)
    }),
    ("pages per swap read", Unit::Pages, |r| {
        let io = r.swap_io.as_ref()?;
        (io.read.count > 0).then(|| io.read_bytes as f64 / 4096.0 / io.read.count as f64)
    }),
    ("swap read p99", Unit::Seconds, |r| {
        let io = r.swap_io.as_ref()?;
        (io.read.count > 0).then(|| io.read.p99_ns as f64 / 1e9)
    }),
    ("swap write p99", Unit::Seconds, |r| {
        let io = r.swap_io.as_ref()?;
        (io.write.count > 0).then(|| io.write.p99_ns as f64 / 1e9)
    }),
    ("refaults", Unit::Pages, |r| Some(r.vmstat.refaults as f64)),
    // Major faults by cause and zswap traffic (/proc/vmstat, every
    // task; see model::report::SwapCauses for what each counts). None
    // where the kernel lacks the counter, so no 0 is compared with it.
    ("swap-in faults", Unit::Count, |r| {
        causes(r)?.swapin_faults().map(|v| v as f64)
    }),
    ("file read faults", Unit::Count, |r| {
        causes(r)?.file_faults().map(|v| v as f64)
    }),
    ("file refaults", Unit::Pages, |r| {
        causes(r)?.refault_file.map(|v| v as f64)
    }),
    ("anon refaults", Unit::Pages, |r| {
        causes(r)?.refault_anon.map(|v| v as f64)
    }),
    ("swap readahead", Unit::Pages, |r| {
        causes(r)?.swap_ra.map(|v| v as f64)
    }),
    ("swap readahead hits", Unit::Pages, |r| {
        causes(r)?.swap_ra_hit.map(|v| v as f64)
    }),
    ("zswap stores", Unit::Pages, |r| {
        causes(r)?.zswpout.map(|v| v as f64)
    }),
    ("zswap loads", Unit::Pages, |r| {
        causes(r)?.zswpin.map(|v| v as f64)
    }),
    ("zswap writebacks", Unit::Pages, |r| {
        causes(r)?.zswpwb.map(|v| v as f64)
    }),
    // THP and compaction events (/proc/vmstat, every task; see
    // model::counters for what each counts). None where the kernel or
    // the recording lacks the counter: `absent` says so, no 0 is shown.
    ("THP faults", Unit::Count, |r| {
        r.thp.as_ref()?.fault_alloc.map(|v| v as f64)
    }),
    ("THP fault fallbacks", Unit::Count, |r| {
        r.thp.as_ref()?.fault_fallback.map(|v| v as f64)
    }),
    ("THP fallbacks, charge", Unit::Count, |r| {
        r.thp.as_ref()?.fault_fallback_charge.map(|v| v as f64)
    }),
    ("THP swapped out whole", Unit::Count, |r| {
        r.thp.as_ref()?.swpout.map(|v| v as f64)
    }),
    ("THP split to swap out", Unit::Count, |r| {
        r.thp.as_ref()?.swpout_fallback.map(|v| v as f64)
    }),
    ("direct compactions", Unit::Count, |r| {
        r.compaction_counters.as_ref()?.stall.map(|v| v as f64)
    }),
    ("compactions failed", Unit::Count, |r| {
        r.compaction_counters.as_ref()?.fail.map(|v| v as f64)
    }),
    ("kcompactd runs", Unit::Count, |r| {
        r.compaction_counters
            .as_ref()?
            .daemon_wake
            .map(|v| v as f64)
    }),
    ("kswapd awake", Unit::Seconds, |r| {
        r.kswapd
            .as_ref()
            .map(|k| k.nodes.iter().map(|n| n.awake_s).sum())
    }),
    ("kswapd CPU", Unit::Seconds, |r| {
        r.kswapd
            .as_ref()
            .map(|k| k.nodes.iter().map(|n| n.cpu_s).sum())
    }),
    ("global direct reclaims", Unit::Count, |r| {
        Some(r.vmstat.allocstall as f64)
    }),
    ("low-priority shrinks", Unit::Percent, low_priority_share),
    ("throttled", Unit::Seconds, |r| {
        r.throttle.as_ref().map(|t| t.delays.total_ns as f64 / 1e9)
    }),
    ("compaction", Unit::Seconds, |r| {
        r.compaction.as_ref().map(|c| c.runs.total_ns as f64 / 1e9)
    }),
    ("swap-in wait (delay)", Unit::Seconds, |r| {
        delays(r).map(|d| d.swapin_ns as f64 / 1e9)
    }),
    ("reclaim (delay acct)", Unit::Seconds, |r| {
        delays(r).map(|d| d.freepages_ns as f64 / 1e9)
    }),
    ("thrashing (delay acct)", Unit::Seconds, |r| {
        delays(r).map(|d| d.thrashing_ns as f64 / 1e9)
    }),
    ("block I/O (delay acct)", Unit::Seconds, |r| {
        delays(r).map(|d| d.blkio_ns as f64 / 1e9)
    }),
    ("waiting for a CPU", Unit::Seconds, |r| {
        delays(r).map(|d| d.cpu_ns as f64 / 1e9)
    }),
];

/// The counter rows that a kernel (or an older recording) may lack.
const MAYBE_ABSENT: &[&str] = &[
    "THP faults",
    "THP fault fallbacks",
    "THP fallbacks, charge",
    "THP swapped out whole",
    "THP split to swap out",
    "direct compactions",
    "compactions failed",
    "kcompactd runs",
    "swap readahead",
    "swap readahead hits",
    "zswap writebacks",
];

/// One warning per group whose runs lack a counter that another group
/// has (its kernel does not count it, or vmtrace did not record it
/// then): its cell reads `-`, which is not 0.
pub(super) fn absent(rows: &[MetricRow]) -> Vec<String> {
    let groups = rows.first().map_or(0, |r| r.groups.len());
    (0..groups)
        .filter_map(|g| {
            let names: Vec<&str> = rows
                .iter()
                .filter(|r| MAYBE_ABSENT.contains(&r.name) && r.groups[g].is_none())
                .map(|r| r.name)
                .collect();
            (!names.is_empty()).then(|| {
                format!(
                    "group {} has no {} (its kernel lacks the counter, or the \
                     recording predates it): shown as -, not 0",
                    char::from(b'A' + (g % 26) as u8),
                    names.join(", ")
                )
            })
        })
        .collect()
}

pub(super) fn reclaim_field(r: &RunReport, f: fn(&ReclaimReport) -> f64) -> Option<f64> {
    if r.direct_reclaim.is_none() && r.memcg_reclaim.is_none() {
        return None;
    }
    Some(r.direct_reclaim.as_ref().map_or(0.0, f) + r.memcg_reclaim.as_ref().map_or(0.0, f))
}

pub(super) fn causes(r: &RunReport) -> Option<&SwapCauses> {
    r.swap_causes.as_ref()
}

/// The box's PSI totals over the run, when it had a box.
fn box_pressure(r: &RunReport) -> Option<Psi> {
    r.membox.as_ref()?.pressure
}

pub(super) fn delays(r: &RunReport) -> Option<&DelayReport> {
    r.delays.as_ref().filter(|d| d.accounting_on)
}

/// Share of inactive-list shrinks at priority 9 or below (12 is the
/// mildest): how hard reclaim had to dig.
fn low_priority_share(r: &RunReport) -> Option<f64> {
    let (mut low, mut all) = (0u64, 0u64);
    for row in &r.reclaim_priority {
        for (prio, &n) in row.counts.iter().enumerate() {
            all += n;
            if prio <= 9 {
                low += n;
            }
        }
    }
    (all > 0).then(|| 100.0 * low as f64 / all as f64)
}

/// One row per metric that some run has (not zero everywhere): each
/// group's summary and each later group's change against the baseline.
/// `ok` holds each group's completed runs.
pub(super) fn rows(ok: &[Vec<&RunReport>]) -> Vec<MetricRow> {
    METRICS
        .iter()
        .filter_map(|&(name, unit, f)| {
            let values: Vec<Vec<f64>> = ok
                .iter()
                .map(|rs| rs.iter().filter_map(|r| f(r)).collect())
                .collect();
            if values.iter().all(|v| v.iter().all(|&x| x == 0.0)) {
                return None;
            }
            let groups: Vec<Option<Describe>> = values.iter().map(|v| describe(v)).collect();
            let changes = values[1..]
                .iter()
                .zip(&groups[1..])
                .map(|(v, d)| change(&values[0], groups[0], v, *d))
                .collect();
            Some(MetricRow {
                name,
                unit,
                groups,
                changes,
                guard: None,
            })
        })
        .collect()
}

fn change(
    base: &[f64],
    bd: Option<Describe>,
    other: &[f64],
    od: Option<Describe>,
) -> Option<Change> {
    let (b, o) = (bd?, od?);
    let diff = o.mean - b.mean;
    Some(Change {
        diff,
        pct: (b.mean.abs() > 1e-12).then(|| 100.0 * diff / b.mean),
        welch: welch(base, other),
    })
}
