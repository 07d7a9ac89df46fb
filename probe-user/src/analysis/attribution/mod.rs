//! Where the time went: each run's time budget (the target's CPU time
//! in CPU-seconds, split by what the eBPF probes measured on the CPU;
//! its waits in task-seconds, runnable behind other tasks among them; the CPU time
//! of every other task of the machine, shown for context), the rates at
//! which those seconds turn into elapsed seconds, and the attribution of
//! a group's elapsed-time difference to the budget's components, bounded
//! so that no part ever exceeds the difference it explains.
//!
//! The rule: a component claims elapsed time only through a quantity
//! measured on the job's own tasks. Each kind of second converts at the
//! rate that bounds what it can cost the job:
//!
//! - a CPU-second of the target costs `w = elapsed / the job's
//!   CPU-seconds`, at most 1: the job's own CPU parallelism, so that
//!   busy CPUs outside the job never discount its work (a -j 8 job
//!   on 2 CPUs keeps both busy: 1/2, not 1/8; one thread on a 64-CPU
//!   runner with 39 unrelated busy CPUs: 1, not 1/40). What the
//!   outside load cost the job is its waits behind it, measured.
//!   Older recordings (no waits per holder) keep the model before:
//!   `elapsed / the machine's busy CPU-seconds`, for every CPU-second,
//!   other tasks' and kswapd's included;
//! - a task-second of waiting (I/O waits, reclaim's and compaction's
//!   sleeps, and time runnable behind a task outside the job: measured
//!   per holder at the scheduler, probe-ebpf `contention`) costs `w_io =
//!   elapsed / (target CPU-seconds + wait task-seconds)`, at most 1: for
//!   one thread that is 1 (elapsed is its CPU time, its runnable time
//!   and its sleeps), for several the job's concurrency.
//!
//! Runnable behind the job's own threads is no component: it is the
//! job's CPU time queueing for too few CPUs (a -j 15 build on 2), which
//! the CPU components hold already. Runnable on an idle CPU (wake-up
//! latency) is in the report, and claims nothing. Other tasks'
//! CPU time (kswapd's, the rest, interrupts) is shown, and claims
//! nothing: it grows with elapsed whatever slowed the job, and what it
//! cost the job is the job's time runnable behind it, which is a
//! component. Steal, the host's, is the one machine-wide part left: a
//! change of the host's rate taxes every CPU-second of the job, the
//! job's own (see `attribute`).
//!
//! Older recordings lack the measured sources; each component then
//! falls back, marked (`AttributionRow::fallback`): reclaim and
//! compaction to their wall time capped at system time, block I/O to
//! delay accounting's blkio; without the waits per holder the
//! machine's other CPU time claims its seconds at `1 / the machine's busy
//! CPUs` (the model before the waits were measured per holder), and without the
//! machine's CPU time every second converts at `w_io` and the machine's
//! components are left out.
//! docs/COMPARE.md has the model and its limits.

mod basis;
mod budget;
mod component;
mod rates;
mod split;

pub use basis::Basis;
pub use component::{Component, Kind};

use super::{AttributionRow, ElapsedSplit, MetricRow};
use crate::model::report::RunReport;
use component::N;
use rates::{GroupBudget, steal_change};
use split::split;

/// The rows (one per component the basis has) and, per later group,
/// the split of its elapsed difference. `ok` holds each group's
/// completed runs (none empty); `metrics` the rows with their guards: a
/// component computed from a guarded measure is marked and takes no
/// part of the split.
pub(super) fn attribute(
    ok: &[Vec<&RunReport>],
    metrics: &[MetricRow],
) -> (Vec<AttributionRow>, Vec<ElapsedSplit>) {
    let basis = Basis::of(ok.iter().flatten().copied());
    let groups: Vec<GroupBudget> = ok.iter().map(|rs| GroupBudget::of(rs, basis)).collect();
    let mut rows: Vec<AttributionRow> = Component::ALL
        .iter()
        .enumerate()
        .filter(|(_, c)| basis.has(**c))
        .map(|(c, &component)| AttributionRow {
            component,
            unit: component.unit(),
            means: groups.iter().map(|b| b.budget[c]).collect(),
            diffs: groups[1..]
                .iter()
                .map(|b| b.budget[c] - groups[0].budget[c])
                .collect(),
            elapsed: Vec::new(),
            shares: Vec::new(),
            offsets: Vec::new(),
            guard: basis.sources(component).iter().find_map(|&m| {
                metrics
                    .iter()
                    .find(|row| row.measure == m)
                    .and_then(|row| row.guard)
            }),
            // Where every group's figure is 0 the sources agree.
            fallback: basis.fallback(component) && groups.iter().any(|b| b.budget[c] != 0.0),
        })
        .collect();
    let mut splits = Vec::new();
    for g in 1..ok.len() {
        let (a, b) = (&groups[0], &groups[g]);
        // The midpoint of the two groups' rates: the split then does
        // not depend on which group is the baseline.
        let w_cpu = (a.w_cpu() + b.w_cpu()) / 2.0;
        let w_io = (a.w_io() + b.w_io()) / 2.0;
        // Steal is a tax on every CPU-second at the host's rate, not
        // work: with r = steal / (busy - steal) and x the CPU-seconds
        // it taxes for the job (the job's own, `steal_change`),
        // steal's change is r' dx + x' dr (r', x': the two groups'
        // means). The first term is the work's own CPU-seconds
        // stolen: each CPU component carries it (its seconds times
        // 1 + r'); only the second, a change of the host's rate, is
        // steal's own part.
        let (rate, steal_own) = steal_change(a, b);
        let equiv: Vec<f64> = rows
            .iter()
            .map(|r| match r.guard {
                Some(_) => 0.0,
                None if !basis.claims(r.component) => 0.0,
                None if r.component.kind() == Kind::Wait => r.diffs[g - 1] * w_io,
                None if r.component == Component::Steal => steal_own * w_cpu,
                None => r.diffs[g - 1] * w_cpu * (1.0 + rate),
            })
            .collect();
        let diff = b.elapsed - a.elapsed;
        let s = split(diff, &equiv);
        for (c, row) in rows.iter_mut().enumerate() {
            row.elapsed.push(s.parts[c]);
            row.shares.push(s.shares[c]);
            row.offsets.push(s.offsets[c]);
        }
        let per_elapsed = |x: f64, e: f64| (e > 0.0 && x.is_finite()).then(|| x / e);
        splits.push(ElapsedSplit {
            difference: diff,
            explained: s.explained,
            unexplained: s.unexplained,
            offsets: s.offsets.iter().sum(),
            scale: s.scale,
            busy_cpus: [a, b].map(|x| x.busy.and_then(|busy| per_elapsed(busy, x.elapsed))),
            job_cpus: [a, b].map(|x| {
                x.own_rate
                    .then(|| per_elapsed(x.target_cpu(), x.elapsed))
                    .flatten()
            }),
            concurrency: [a, b].map(|x| per_elapsed(x.target(), x.elapsed)),
            seconds_per_cpu_second: w_cpu,
            seconds_per_wait_second: w_io,
            waiting_for_cpu: [a.cpu_wait, b.cpu_wait],
        });
    }
    (rows, splits)
}

#[cfg(test)]
mod tests;
