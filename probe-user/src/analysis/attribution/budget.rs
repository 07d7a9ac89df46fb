//! One run's budget: its seconds per component on a basis.

use super::{Basis, Component, N};
use crate::analysis::measures::delays;
use crate::analysis::readings::{machine_parts, reclaim_cross_cpu_s, reclaim_split, reclaims};
use crate::model::report::{RunReport, StallSplit};

/// A run's budget on `basis`: seconds per component, in
/// `Component::ALL`'s order (0 for one the basis leaves out).
pub(super) fn budget(r: &RunReport, basis: Basis) -> [f64; N] {
    let secs = |ns: u64| ns as f64 / 1e9;
    let user = r.usage.user_s.max(0.0);
    let sys = r.usage.sys_s.max(0.0);
    let rsplit = reclaim_split(r).filter(|_| basis.reclaim_split);
    let csplit = r
        .compaction
        .as_ref()
        .and_then(|c| c.split.clone())
        .filter(|_| basis.compaction_split);
    let reclaim = match &rsplit {
        Some(s) => secs(s.on_cpu_ns),
        None => reclaims(r).map(|s| secs(s.stalls.total_ns)).sum(),
    }
    .clamp(0.0, sys);
    let compaction = match &csplit {
        Some(s) => secs(s.on_cpu_ns),
        None => r.compaction.as_ref().map_or(0.0, |c| secs(c.runs.total_ns)),
    }
    .clamp(0.0, sys - reclaim);
    let other_sys = sys - reclaim - compaction;
    // Reclaim's cross-CPU calls, out of its on-CPU time.
    let cross = reclaim_cross_cpu_s(r)
        .filter(|_| basis.has(Component::ReclaimCrossCpu))
        .map_or(0.0, |c| c.clamp(0.0, reclaim));
    let blocked = |s: &Option<StallSplit>| s.as_ref().map_or(0.0, |s| secs(s.blocked_ns));
    let iowait = |s: &Option<StallSplit>| s.as_ref().map_or(0.0, |s| secs(s.iowait_ns));
    // Reclaim's and compaction's I/O waits are theirs: out of block I/O.
    let io = match (&r.io_waits, delays(r)) {
        (Some(w), _) if basis.io_waits => secs(w.total_ns),
        (_, Some(d)) if !basis.io_waits => secs(d.blkio_ns),
        _ => 0.0,
    };
    let block_io = (io - iowait(&rsplit) - iowait(&csplit)).max(0.0);
    let m = machine_parts(r).filter(|_| basis.machine_cpu);
    let (kswapd, others, interrupts, steal) = m.map_or((0.0, 0.0, 0.0, 0.0), |m| {
        (m.kswapd, m.other_tasks, m.interrupts, m.steal)
    });
    [
        user,
        reclaim - cross,
        cross,
        compaction,
        other_sys,
        blocked(&rsplit),
        blocked(&csplit),
        block_io,
        r.memstall_sleeps
            .as_ref()
            .filter(|_| basis.memstall)
            .map_or(0.0, |m| secs(m.total_ns)),
        r.runnable
            .as_ref()
            .filter(|_| basis.cpu_waits)
            .map_or(0.0, |x| secs(x.outside_ns() - x.behind_kswapd_ns)),
        r.runnable
            .as_ref()
            .filter(|_| basis.cpu_waits)
            .map_or(0.0, |x| secs(x.behind_kswapd_ns)),
        kswapd,
        others,
        interrupts,
        steal,
    ]
}
