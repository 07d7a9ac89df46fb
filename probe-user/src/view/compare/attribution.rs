//! Where the time went: each run's elapsed time split into components
//! (CPU time, reclaim and compaction inside it, I/O and run-queue waits,
//! the rest), and the rows that set the groups' means side by side with
//! each component's share of the elapsed-time difference.

use super::AttributionRow;
use super::metrics::{delays, reclaim_field};
use crate::model::report::RunReport;

/// The components of a run's elapsed time (seconds), in the order shown.
///
/// A task is on a CPU (user or system time), waiting for one, or asleep;
/// for the workloads here, sleeping is mostly waiting for block I/O. The
/// kernel's delay accounting gives the waits; rusage the CPU time. So
/// elapsed = user + system + block I/O waits + run-queue waits + the rest
/// (other sleeps), and system time is split further by what the eBPF
/// probes timed inside it: reclaim, then compaction (each capped at the
/// system time left, as their off-CPU part is already a block I/O wait).
/// With several tasks at once the parts are task-seconds and can exceed
/// elapsed: the rest then goes negative.
pub const COMPONENTS: &[&str] = &[
    "user CPU",
    "reclaim (system CPU)",
    "compaction (system CPU)",
    "other system CPU",
    "block I/O waits",
    "waiting for a CPU",
    "unexplained",
];

fn components(r: &RunReport) -> [f64; 7] {
    let reclaim_stall = reclaim_field(r, |s| s.stalls.total_ns as f64 / 1e9).unwrap_or(0.0);
    let compaction_wall = r
        .compaction
        .as_ref()
        .map_or(0.0, |c| c.runs.total_ns as f64 / 1e9);
    let user = r.usage.user_s;
    let sys = r.usage.sys_s.max(0.0);
    let reclaim = reclaim_stall.min(sys);
    let compaction = compaction_wall.min(sys - reclaim);
    let other_sys = sys - reclaim - compaction;
    let (blkio, cpu_wait) = delays(r).map_or((0.0, 0.0), |d| {
        (d.blkio_ns as f64 / 1e9, d.cpu_ns as f64 / 1e9)
    });
    let unexplained = r.usage.wall_s - user - sys - blkio - cpu_wait;
    [
        user,
        reclaim,
        compaction,
        other_sys,
        blkio,
        cpu_wait,
        unexplained,
    ]
}

/// One row per component: mean seconds per group, and per later group
/// the difference to the baseline and its share of the elapsed
/// difference. `ok` holds each group's completed runs (none empty).
pub(super) fn rows(ok: &[Vec<&RunReport>]) -> Vec<AttributionRow> {
    let comps: Vec<Vec<[f64; 7]>> = ok
        .iter()
        .map(|rs| rs.iter().map(|r| components(r)).collect())
        .collect();
    let mean_of = |g: usize, c: usize| -> f64 {
        let v = &comps[g];
        v.iter().map(|x| x[c]).sum::<f64>() / v.len().max(1) as f64
    };
    let elapsed_mean =
        |g: usize| ok[g].iter().map(|r| r.usage.wall_s).sum::<f64>() / ok[g].len() as f64;
    COMPONENTS
        .iter()
        .enumerate()
        .map(|(c, &component)| {
            let means: Vec<f64> = (0..ok.len()).map(|g| mean_of(g, c)).collect();
            let diffs: Vec<f64> = means[1..].iter().map(|m| m - means[0]).collect();
            let shares = (1..ok.len())
                .map(|g| {
                    let d = elapsed_mean(g) - elapsed_mean(0);
                    (d.abs() > 1e-9).then(|| (means[g] - means[0]) / d)
                })
                .collect();
            AttributionRow {
                component,
                means,
                diffs,
                shares,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::recording::Recording;

    #[test]
    fn components_add_up_to_elapsed() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/corpus/recording/memhog-2runs.vmtrace.json");
        let r = Recording::read(&path).expect("corpus recording");
        for run in &r.runs {
            let c = components(&run.report);
            let sum: f64 = c.iter().sum();
            assert!((sum - run.report.usage.wall_s).abs() < 1e-9, "{c:?}");
        }
    }
}
