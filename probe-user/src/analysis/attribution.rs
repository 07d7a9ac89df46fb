//! Where the time went: each run's time budget in task-seconds (CPU time,
//! reclaim and compaction inside it, I/O and run-queue waits), the job's
//! measured parallelism, and the attribution of a group's elapsed-time
//! difference to the budget's components, bounded so that no part ever
//! exceeds the difference it explains. docs/COMPARE.md has the model and
//! its limits.

use serde::Serialize;

use super::measures::{Measure, delays, reclaim_field};
use super::{AttributionRow, ElapsedSplit, MetricRow};
use crate::model::report::RunReport;

/// The components of a run's time budget (task-seconds: summed over every
/// task of the job), in the order shown.
///
/// A task is on a CPU (user or system time), waiting for one (runnable),
/// in an I/O wait, or asleep otherwise. rusage gives the CPU time of the
/// command and its children; the kernel's delay accounting, read at each
/// task's exit, the waits (`blkio_delay` and `sched_info.run_delay`).
/// These four are disjoint for one task: run_delay counts only while the
/// task is runnable and not running (kernel/sched/stats.h,
/// sched_info_arrive/depart), blkio only from an io_schedule() sleep to
/// its wake-up (kernel/sched/core.c: `in_iowait` in __schedule and
/// try_to_wake_up; 6.1, 6.12 and 6.18 alike). System time is split
/// further by what the eBPF probes timed inside it: reclaim, then
/// compaction, each capped at the system time left, because their
/// off-CPU part (writeback waits, congestion sleeps) is already in the
/// block I/O waits or in other sleep.
///
/// Left out on purpose, as they overlap the columns above: the swap-in
/// delay (mm/page_io.c swap_read_folio: the read's submission, a zswap
/// load's decompression on the CPU, a synchronous device's whole read;
/// the wait for an asynchronous read is the fault's folio lock, a block
/// I/O wait), the thrashing delay (a folio wait, also block I/O) and the
/// reclaim delay ("freepages": CPU and waits). Other sleep (pipes,
/// wait4, timers) is not measured: vmtrace does not record the tasks'
/// lifetimes, so it stays in "unexplained".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    UserCpu,
    ReclaimCpu,
    CompactionCpu,
    OtherSystemCpu,
    BlockIoWaits,
    CpuWait,
}

impl Component {
    /// Every component, in the order shown (the budget's order).
    pub const ALL: [Component; 6] = [
        Component::UserCpu,
        Component::ReclaimCpu,
        Component::CompactionCpu,
        Component::OtherSystemCpu,
        Component::BlockIoWaits,
        Component::CpuWait,
    ];

    /// As printed: for reading only, no decision reads it.
    pub fn label(self) -> &'static str {
        match self {
            Component::UserCpu => "user CPU",
            Component::ReclaimCpu => "reclaim (system CPU)",
            Component::CompactionCpu => "compaction (system CPU)",
            Component::OtherSystemCpu => "other system CPU",
            Component::BlockIoWaits => "block I/O waits",
            Component::CpuWait => "waiting for a CPU",
        }
    }
}

impl Component {
    /// The measures a component is computed from: when a guard marks
    /// one (its meaning differs between the groups), the component is
    /// not comparable either and explains nothing.
    pub fn sources(self) -> &'static [Measure] {
        match self {
            Component::UserCpu => &[],
            Component::ReclaimCpu => &[Measure::ReclaimStallTime],
            Component::CompactionCpu => &[Measure::Compaction],
            // What is left of system time after the two above.
            Component::OtherSystemCpu => &[Measure::ReclaimStallTime, Measure::Compaction],
            Component::BlockIoWaits => &[Measure::BlockIoDelay],
            Component::CpuWait => &[Measure::CpuWait],
        }
    }
}

/// Serialised as its label.
impl Serialize for Component {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.label())
    }
}

/// A run's budget: task-seconds per component, in `Component::ALL`'s
/// order.
pub(super) fn budget(r: &RunReport) -> [f64; 6] {
    let secs = |ns: u64| ns as f64 / 1e9;
    let reclaim_stall = reclaim_field(r, |s| s.stalls.total_ns as f64 / 1e9).unwrap_or(0.0);
    let compaction_wall = r.compaction.as_ref().map_or(0.0, |c| secs(c.runs.total_ns));
    let user = r.usage.user_s.max(0.0);
    let sys = r.usage.sys_s.max(0.0);
    let reclaim = reclaim_stall.clamp(0.0, sys);
    let compaction = compaction_wall.clamp(0.0, sys - reclaim);
    let other_sys = sys - reclaim - compaction;
    let (blkio, cpu_wait) = delays(r).map_or((0.0, 0.0), |d| (secs(d.blkio_ns), secs(d.cpu_ns)));
    [user, reclaim, compaction, other_sys, blkio, cpu_wait]
}

/// Elapsed seconds one task-second of the budget stands for: 1 / P,
/// where P, the job's parallelism, is the budget's task-seconds over the
/// elapsed time (the average number of tasks on a CPU, waiting for one
/// or in an I/O wait), taken as 1 when it is below 1. A task is in one
/// state at a time, so a task-second can cost at most one second of
/// elapsed time; below 1 the job also sleeps otherwise (unmeasured), and
/// that sleep is not spread over the components.
pub(super) fn seconds_per_task_second(task_s: f64, elapsed: f64) -> f64 {
    if task_s > 0.0 && elapsed > 0.0 && task_s.is_finite() && elapsed.is_finite() {
        (elapsed / task_s).min(1.0)
    } else {
        1.0
    }
}

/// The split of an elapsed-time difference among components.
#[derive(Debug)]
pub(super) struct Split {
    /// Per component: elapsed seconds attributed (the sign of the
    /// difference; 0 for a component that did not move with it).
    pub parts: Vec<f64>,
    /// Per component: its share of what is explained, in [0, 1]; None
    /// when it explains nothing.
    pub shares: Vec<Option<f64>>,
    /// Per component that moved against the difference: the elapsed
    /// seconds netted out of the parts (the sign opposite), else 0.
    pub offsets: Vec<f64>,
    pub explained: f64,
    pub unexplained: f64,
    /// Factor (<= 1) the components were scaled by when, net, they came
    /// to more than the difference.
    pub scale: f64,
}

/// Splits an elapsed difference `diff` (s) among the components'
/// elapsed equivalents `equiv` (s, signed: each one's task-second
/// difference times `seconds_per_task_second`).
///
/// Those that moved with the difference contribute, those that moved
/// against it offset. Explained is the net (contributions less offsets),
/// at least 0 and at most |diff|; where the net is larger every
/// equivalent is scaled down alike. Each contributor's part is its share
/// of the contributions times the explained seconds; unexplained is the
/// rest of the difference. So parts and unexplained have the sign of the
/// difference and add up to it, no part exceeds it, the shares lie in
/// [0, 1] and add up to 1.
pub(super) fn split(diff: f64, equiv: &[f64]) -> Split {
    let n = equiv.len();
    let mut s = Split {
        parts: vec![0.0; n],
        shares: vec![None; n],
        offsets: vec![0.0; n],
        explained: 0.0,
        unexplained: if diff.is_finite() { diff } else { 0.0 },
        scale: 1.0,
    };
    if !diff.is_finite() || diff.abs() < 1e-9 || equiv.iter().any(|e| !e.is_finite()) {
        return s;
    }
    let sign = diff.signum();
    let size = diff.abs();
    let gross: f64 = equiv.iter().map(|e| (sign * e).max(0.0)).sum();
    let against: f64 = equiv.iter().map(|e| (-sign * e).max(0.0)).sum();
    let net = gross - against;
    let explained = net.clamp(0.0, size);
    s.scale = if net > size { size / net } else { 1.0 };
    for (i, &e) in equiv.iter().enumerate() {
        let with = sign * e;
        if with > 0.0 && gross > 0.0 {
            s.parts[i] = sign * with / gross * explained;
            s.shares[i] = (explained > 0.0).then_some(with / gross);
        } else if with < 0.0 {
            s.offsets[i] = e * s.scale;
        }
    }
    s.explained = sign * explained;
    s.unexplained = sign * (size - explained);
    s
}

/// The rows (one per component) and, per later group, the split of its
/// elapsed difference. `ok` holds each group's completed runs (none
/// empty); `metrics` the rows with their guards: a component computed
/// from a guarded measure is marked and takes no part of the split.
pub(super) fn attribute(
    ok: &[Vec<&RunReport>],
    metrics: &[MetricRow],
) -> (Vec<AttributionRow>, Vec<ElapsedSplit>) {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    // Per group: mean budget and mean elapsed.
    let budgets: Vec<[f64; 6]> = ok
        .iter()
        .map(|rs| {
            let b: Vec<[f64; 6]> = rs.iter().map(|r| budget(r)).collect();
            std::array::from_fn(|c| mean(&b.iter().map(|x| x[c]).collect::<Vec<_>>()))
        })
        .collect();
    let elapsed: Vec<f64> = ok
        .iter()
        .map(|rs| mean(&rs.iter().map(|r| r.usage.wall_s).collect::<Vec<_>>()))
        .collect();
    let task_s: Vec<f64> = budgets.iter().map(|b| b.iter().sum()).collect();
    let per: Vec<f64> = (0..ok.len())
        .map(|g| seconds_per_task_second(task_s[g], elapsed[g]))
        .collect();
    let mut rows: Vec<AttributionRow> = Component::ALL
        .iter()
        .enumerate()
        .map(|(c, &component)| AttributionRow {
            component,
            unit: "task-s",
            means: budgets.iter().map(|b| b[c]).collect(),
            diffs: budgets[1..].iter().map(|b| b[c] - budgets[0][c]).collect(),
            elapsed: Vec::new(),
            shares: Vec::new(),
            offsets: Vec::new(),
            guard: component.sources().iter().find_map(|&m| {
                metrics
                    .iter()
                    .find(|row| row.measure == m)
                    .and_then(|row| row.guard)
            }),
        })
        .collect();
    let mut splits = Vec::new();
    for g in 1..ok.len() {
        // The midpoint of the two groups' rates: the split then does
        // not depend on which group is the baseline.
        let rate = (per[0] + per[g]) / 2.0;
        let equiv: Vec<f64> = rows
            .iter()
            .map(|r| {
                if r.guard.is_some() {
                    0.0
                } else {
                    r.diffs[g - 1] * rate
                }
            })
            .collect();
        let diff = elapsed[g] - elapsed[0];
        let s = split(diff, &equiv);
        for (c, row) in rows.iter_mut().enumerate() {
            row.elapsed.push(s.parts[c]);
            row.shares.push(s.shares[c]);
            row.offsets.push(s.offsets[c]);
        }
        splits.push(ElapsedSplit {
            difference: diff,
            explained: s.explained,
            unexplained: s.unexplained,
            offsets: s.offsets.iter().sum(),
            scale: s.scale,
            parallelism: [
                parallelism(task_s[0], elapsed[0]),
                parallelism(task_s[g], elapsed[g]),
            ],
            seconds_per_task_second: rate,
        });
    }
    (rows, splits)
}

/// Task-seconds of the budget per second of elapsed time (None without
/// an elapsed time).
fn parallelism(task_s: f64, elapsed: f64) -> Option<f64> {
    (elapsed > 0.0 && task_s.is_finite()).then(|| task_s / elapsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::report::{DelayReport, Usage};

    /// The invariants of a split, whatever the components did.
    fn check(diff: f64, s: &Split) {
        let parts: f64 = s.parts.iter().sum();
        assert!((parts + s.unexplained - diff).abs() < 1e-9, "{s:?}");
        assert!((parts - s.explained).abs() < 1e-9, "{s:?}");
        for p in &s.parts {
            assert!(p * diff >= 0.0 && p.abs() <= diff.abs() + 1e-12, "{s:?}");
        }
        assert!(s.unexplained * diff >= 0.0 && s.unexplained.abs() <= diff.abs() + 1e-12);
        let shares: Vec<f64> = s.shares.iter().flatten().copied().collect();
        assert!(shares.iter().all(|x| (0.0..=1.0).contains(x)), "{s:?}");
        if s.explained != 0.0 {
            assert!((shares.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{s:?}");
        }
        for o in &s.offsets {
            assert!(o * diff <= 0.0, "{s:?}");
        }
    }

    #[test]
    fn splits_keep_their_bounds() {
        let cases: &[(f64, &[f64])] = &[
            (2.7, &[417.0, -200.0, 10.0]),
            (2.7, &[1.0, 0.5]),
            (2.7, &[1.0, -3.0]),
            (-0.76, &[-0.01, -0.1, 0.0, -0.2, 0.0, 0.0]),
            (-0.76, &[5.0, 6.0]),
            (1.0, &[0.0, 0.0]),
            (0.0, &[1.0, -1.0]),
        ];
        for &(diff, equiv) in cases {
            check(diff, &split(diff, equiv));
        }
        // Over-explained: scaled down to the difference, nothing left.
        let s = split(2.7, &[417.0, -200.0, 10.0]);
        assert!((s.explained - 2.7).abs() < 1e-9 && s.unexplained.abs() < 1e-9);
        assert!(s.scale < 0.02 && s.offsets[1] < 0.0);
        // Under-explained: the rest is unexplained, offsets netted.
        let s = split(2.7, &[1.0, 0.5, -0.5]);
        assert!((s.explained - 1.0).abs() < 1e-9 && (s.unexplained - 1.7).abs() < 1e-9);
        assert!((s.shares[0].unwrap_or(0.0) - 2.0 / 3.0).abs() < 1e-9);
        // Against the difference on balance: nothing explained.
        let s = split(2.7, &[1.0, -3.0]);
        assert_eq!(s.explained, 0.0);
        assert!(s.shares.iter().all(Option::is_none));
    }

    fn job(wall: f64, user: f64, sys: f64, blkio: f64, cpu: f64) -> RunReport {
        RunReport {
            usage: Usage {
                wall_s: wall,
                user_s: user,
                sys_s: sys,
                ..Default::default()
            },
            delays: Some(DelayReport {
                accounting_on: true,
                blkio_ns: (blkio * 1e9) as u64,
                cpu_ns: (cpu * 1e9) as u64,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// A parallel job: 4 tasks, task-seconds far above elapsed (the
    /// issue's compile at -j 4). The difference is +2.7 s; the budgets
    /// move by hundreds of task-seconds, some against it.
    #[test]
    fn a_parallel_job_is_attributed_within_its_difference() {
        let a: Vec<RunReport> = (0..3)
            .map(|k| job(190.0 + k as f64 * 0.1, 600.0, 80.0, 40.0, 30.0))
            .collect();
        let b: Vec<RunReport> = (0..3)
            .map(|k| job(192.7 + k as f64 * 0.1, 590.0, 95.0, 447.0, 20.0))
            .collect();
        let ok = vec![a.iter().collect::<Vec<_>>(), b.iter().collect()];
        let (rows, splits) = attribute(&ok, &[]);
        let s = &splits[0];
        assert!((s.difference - 2.7).abs() < 1e-6);
        let pa = s.parallelism[0].unwrap_or(0.0);
        assert!((3.9..4.0).contains(&pa), "{s:?}");
        let parts: f64 = rows.iter().map(|r| r.elapsed[0]).sum();
        assert!((parts + s.unexplained - s.difference).abs() < 1e-9, "{s:?}");
        for r in &rows {
            assert!(
                r.elapsed[0] >= 0.0 && r.elapsed[0] <= s.difference + 1e-9,
                "{r:?}"
            );
            assert!(
                r.shares[0].is_none_or(|x| (0.0..=1.0).contains(&x)),
                "{r:?}"
            );
        }
        let shares: f64 = rows.iter().filter_map(|r| r.shares[0]).sum();
        assert!((shares - 1.0).abs() < 1e-9);
        // user CPU and run-queue waits moved against it: offsets.
        assert!(rows[0].offsets[0] < 0.0 && rows[0].shares[0].is_none());
        assert!(rows[5].offsets[0] < 0.0);
        // Block I/O waits are by far the largest contributor.
        assert!(rows[4].shares[0].unwrap_or(0.0) > 0.9, "{rows:?}");
    }

    /// One task that sleeps half the time: a task-second is a second.
    #[test]
    fn a_single_task_converts_one_to_one() {
        assert_eq!(seconds_per_task_second(1.0, 2.0), 1.0);
        assert_eq!(seconds_per_task_second(8.0, 2.0), 0.25);
        assert_eq!(seconds_per_task_second(0.0, 2.0), 1.0);
        let a = [job(2.0, 0.5, 0.5, 0.0, 0.0)];
        let b = [job(2.5, 0.5, 0.9, 0.0, 0.0)];
        let ok = vec![a.iter().collect::<Vec<_>>(), b.iter().collect()];
        let (rows, splits) = attribute(&ok, &[]);
        assert!((rows[3].elapsed[0] - 0.4).abs() < 1e-9, "{rows:?}");
        assert!((splits[0].unexplained - 0.1).abs() < 1e-9);
    }
}
