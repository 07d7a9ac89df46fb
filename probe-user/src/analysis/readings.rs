//! One run's readings that more than one analysis needs, each from
//! several fields of its report: reclaim's split summed over direct and
//! memcg reclaim, reclaim's cross-CPU share, the machine's CPU time
//! other than the target's, its busy time. `measures` compares them,
//! `attribution` budgets with them: both use this module, it neither.

use crate::model::report::{ReclaimReport, RunReport, StallSplit};

/// The direct and memcg reclaim reports a run has.
pub(super) fn reclaims(r: &RunReport) -> impl Iterator<Item = &ReclaimReport> {
    r.direct_reclaim.iter().chain(r.memcg_reclaim.iter())
}

/// The reclaim stalls' split, summed over direct and memcg reclaim
/// (None when a report lacks it, or there is none).
pub(super) fn reclaim_split(r: &RunReport) -> Option<StallSplit> {
    let mut sum: Option<StallSplit> = None;
    for s in reclaims(r) {
        let x = s.split.as_ref()?;
        let t = sum.get_or_insert_with(StallSplit::default);
        t.on_cpu_ns += x.on_cpu_ns;
        t.runnable_ns += x.runnable_ns;
        t.blocked_ns += x.blocked_ns;
        t.iowait_ns += x.iowait_ns;
        t.wall_ns += x.wall_ns;
        t.run_delay_ns += x.run_delay_ns;
        t.preempt_wake_ns += x.preempt_wake_ns;
    }
    sum
}

/// Reclaim's on-CPU seconds in cross-CPU calls (TLB-flush IPIs): the
/// profile's share of reclaim samples in them times the measured
/// on-CPU time (None without either).
pub(super) fn reclaim_cross_cpu_s(r: &RunReport) -> Option<f64> {
    let share = r.profile.as_ref()?.reclaim_cross_cpu_share().unwrap_or(0.0);
    Some(share * reclaim_split(r)?.on_cpu_ns as f64 / 1e9)
}

/// The machine's CPU time other than the target's, in CPU-seconds:
/// kswapd's (every node's thread); other tasks' (the machine's task
/// time, /proc/stat user + nice + system, less the target's and
/// kswapd's, at least 0); interrupts (the rest of the busy time but
/// steal: irq and softirq time beyond what the target's rusage already
/// holds; rusage scales the task's sum_exec_runtime, /proc/stat samples
/// ticks, and here the target's system time read above the machine's,
/// 4.57 s against 3.86 s, so which of the two holds which softirq time
/// is not settled: block I/O completions, mostly); and steal (a guest's
/// vCPUs ready while the host ran something else). Together with the
/// target's CPU they are the machine's busy time. None without the
/// machine's CPU time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MachineParts {
    pub kswapd: f64,
    pub other_tasks: f64,
    pub interrupts: f64,
    pub steal: f64,
}

pub fn machine_parts(r: &RunReport) -> Option<MachineParts> {
    let m = r.machine_cpu.as_ref()?;
    let kswapd = r.kswapd.as_ref().map_or(0.0, |k| k.cpu_s());
    let steal = m.steal_s.max(0.0);
    let target = r.usage.user_s.max(0.0) + r.usage.sys_s.max(0.0);
    let tasks = m.user_s + m.nice_s + m.system_s;
    let other_tasks = (tasks - target - kswapd).max(0.0);
    Some(MachineParts {
        kswapd,
        other_tasks,
        interrupts: (m.busy_s() - steal - target - kswapd - other_tasks).max(0.0),
        steal,
    })
}

/// The machine's busy CPU-seconds over a run: /proc/stat's, but at
/// least the CPU time its tasks are known to have used (the target's
/// rusage and kswapd's). /proc/stat samples ticks, and a guest under
/// emulation (TCG) gets its timer interrupts late when the host is busy:
/// a 6.1 guest's -j5 build read 0.94 busy CPUs there while the target
/// alone used 1.8 CPU-seconds a second by rusage (sum_exec_runtime,
/// which the sched clock keeps), and a CPU-second would have cost a whole
/// elapsed second. None without the machine's CPU time.
pub(super) fn busy_s(r: &RunReport) -> Option<f64> {
    let m = r.machine_cpu.as_ref()?;
    let kswapd = r.kswapd.as_ref().map_or(0.0, |k| k.cpu_s());
    let known = r.usage.user_s.max(0.0) + r.usage.sys_s.max(0.0) + kswapd;
    Some(m.busy_s().max(known))
}
