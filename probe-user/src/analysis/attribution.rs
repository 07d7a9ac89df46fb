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
//! change of the host's rate taxes every CPU-second of the job (see
//! `attribute`).
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
pub use basis::Basis;

use super::measures::{Measure, delays};
use super::{AttributionRow, ElapsedSplit, MetricRow};
use crate::model::report::{ReclaimReport, RunReport, StallSplit};

/// The components of a run's time budget, in the order shown.
///
/// The target's components are disjoint for one task at one moment: it
/// is on a CPU (user, or system split into reclaim's and compaction's
/// on-CPU time and the rest), asleep in reclaim or compaction, in an
/// I/O wait elsewhere, runnable (behind a task outside the job, inside
/// a reclaim stall or not; behind its own threads it is CPU time queued) or asleep otherwise (not measured: vmtrace does
/// not record the tasks' lifetimes, so it stays in "unexplained"). The
/// machine's components are the CPU time of every other task: kswapd,
/// the rest, and a guest's steal. Left out on purpose, as they overlap the above: the
/// swap-in delay, the thrashing delay and the reclaim delay of delay
/// accounting (CPU and waits mixed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    UserCpu,
    ReclaimCpu,
    ReclaimCrossCpu,
    CompactionCpu,
    OtherSystemCpu,
    ReclaimWaits,
    CompactionWaits,
    BlockIoWaits,
    MemstallWaits,
    CpuWaits,
    KswapdWaits,
    KswapdCpu,
    OtherTasksCpu,
    Interrupts,
    Steal,
}

/// What a component's seconds are, which decides the rate they convert
/// to elapsed seconds at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// CPU-seconds of the target: `w`.
    TargetCpu,
    /// Task-seconds of the target's waits: `w_io`.
    Wait,
    /// CPU-seconds of other tasks of the machine: `w`.
    MachineCpu,
}

/// The number of components.
const N: usize = 15;

impl Component {
    /// Every component, in the order shown (the budget's order).
    pub const ALL: [Component; N] = [
        Component::UserCpu,
        Component::ReclaimCpu,
        Component::ReclaimCrossCpu,
        Component::CompactionCpu,
        Component::OtherSystemCpu,
        Component::ReclaimWaits,
        Component::CompactionWaits,
        Component::BlockIoWaits,
        Component::MemstallWaits,
        Component::CpuWaits,
        Component::KswapdWaits,
        Component::KswapdCpu,
        Component::OtherTasksCpu,
        Component::Interrupts,
        Component::Steal,
    ];

    /// As printed: for reading only, no decision reads it.
    pub fn label(self) -> &'static str {
        match self {
            Component::UserCpu => "user CPU",
            Component::ReclaimCpu => "reclaim on-CPU",
            Component::ReclaimCrossCpu => "reclaim TLB-flush IPIs",
            Component::CompactionCpu => "compaction on-CPU",
            Component::OtherSystemCpu => "other system CPU",
            Component::ReclaimWaits => "reclaim waits",
            Component::CompactionWaits => "compaction waits",
            Component::BlockIoWaits => "block I/O waits",
            Component::MemstallWaits => "memory.high sleeps",
            Component::CpuWaits => "runnable behind others",
            Component::KswapdWaits => "runnable behind kswapd",
            Component::KswapdCpu => "kswapd CPU",
            Component::OtherTasksCpu => "other tasks' CPU",
            Component::Interrupts => "interrupts (irq, softirq)",
            Component::Steal => "steal",
        }
    }

    pub fn kind(self) -> Kind {
        match self {
            Component::UserCpu
            | Component::ReclaimCpu
            | Component::ReclaimCrossCpu
            | Component::CompactionCpu
            | Component::OtherSystemCpu => Kind::TargetCpu,
            Component::ReclaimWaits
            | Component::CompactionWaits
            | Component::BlockIoWaits
            | Component::MemstallWaits
            | Component::CpuWaits
            | Component::KswapdWaits => Kind::Wait,
            Component::KswapdCpu
            | Component::OtherTasksCpu
            | Component::Interrupts
            | Component::Steal => Kind::MachineCpu,
        }
    }

    /// The unit of its seconds: "CPU-s" or "task-s" (waits summed over
    /// the job's tasks).
    pub fn unit(self) -> &'static str {
        match self.kind() {
            Kind::Wait => "task-s",
            Kind::TargetCpu | Kind::MachineCpu => "CPU-s",
        }
    }

    /// What a fallback row holds instead of the measured source, as
    /// printed (None: the component has no fallback).
    pub fn fallback_note(self) -> Option<&'static str> {
        match self {
            Component::ReclaimCpu => Some(
                "reclaim wall time, not measured on-CPU (capped at system \
                 time: the recording predates the scheduler split)",
            ),
            Component::CompactionCpu => Some(
                "compaction wall time, not measured on-CPU (capped at the \
                 system time left: the recording predates the split)",
            ),
            Component::BlockIoWaits => Some(
                "delay accounting's blkio, not I/O waits timed at the \
                 scheduler (the recording predates them)",
            ),
            Component::KswapdCpu | Component::OtherTasksCpu | Component::Interrupts => Some(
                "claims elapsed time by the machine's busy CPUs, not by the \
                 job's waits behind it (a run predates their measure)",
            ),
            _ => None,
        }
    }

    /// The measures a component is computed from on `basis`: when a
    /// guard marks one (its meaning differs between the groups), the
    /// component is not comparable either and explains nothing.
    pub fn sources(self, basis: Basis) -> &'static [Measure] {
        use Measure::{
            BlockIoDelay, Compaction, IoWaitTime, MemstallSleepTime, ReclaimCrossCpu, ReclaimOnCpu,
            ReclaimStallTime, RunnableBehindKswapd, RunnableBehindOthers, Steal, SystemCpu,
            UserCpu,
        };
        match self {
            Component::UserCpu => &[UserCpu],
            Component::ReclaimCpu if basis.reclaim_split => &[ReclaimOnCpu],
            Component::ReclaimCrossCpu => &[ReclaimOnCpu, ReclaimCrossCpu],
            Component::ReclaimCpu => &[ReclaimStallTime],
            Component::CompactionCpu if basis.compaction_split => &[],
            Component::CompactionCpu => &[Compaction],
            // What is left of system time after the two above.
            Component::OtherSystemCpu => match (basis.reclaim_split, basis.compaction_split) {
                (true, true) => &[SystemCpu, ReclaimOnCpu],
                (true, false) => &[SystemCpu, ReclaimOnCpu, Compaction],
                (false, true) => &[SystemCpu, ReclaimStallTime],
                (false, false) => &[SystemCpu, ReclaimStallTime, Compaction],
            },
            Component::BlockIoWaits if basis.io_waits => &[IoWaitTime],
            Component::BlockIoWaits => &[BlockIoDelay],
            Component::MemstallWaits => &[MemstallSleepTime],
            Component::CpuWaits => &[RunnableBehindOthers],
            Component::KswapdWaits => &[RunnableBehindKswapd],
            Component::Steal => &[Steal],
            _ => &[],
        }
    }
}

// Serialised as its id and the label the text prints.
crate::model::schema::keyed!(Component, Component::ALL.into_iter(), Component::label);

/// The direct and memcg reclaim reports a run has.
fn reclaims(r: &RunReport) -> impl Iterator<Item = &ReclaimReport> {
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

/// Elapsed seconds one second of `load_s` (CPU-seconds or task-seconds
/// over `elapsed`) stands for: elapsed / load, at most 1. A task is in
/// one state at a time, so one more second of it can cost at most one
/// elapsed second; a load below 1 (idle CPUs, a job that also sleeps
/// otherwise) does not make a second cost more than that.
pub(super) fn elapsed_per_second(load_s: f64, elapsed: f64) -> f64 {
    if load_s > 0.0 && elapsed > 0.0 && load_s.is_finite() && elapsed.is_finite() {
        (elapsed / load_s).min(1.0)
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
/// elapsed equivalents `equiv` (s, signed: each one's difference times
/// its rate, `w` for CPU-seconds, `w_io` for task-seconds of waiting).
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

/// The machine's busy CPU-seconds over a run: /proc/stat's, but at
/// least the CPU time its tasks are known to have used (the target's
/// rusage and kswapd's). /proc/stat samples ticks, and a guest under
/// emulation (TCG) gets its timer interrupts late when the host is busy:
/// a 6.1 guest's -j5 build read 0.94 busy CPUs there while the target
/// alone used 1.8 CPU-seconds a second by rusage (sum_exec_runtime,
/// which the sched clock keeps), and a CPU-second would have cost a whole
/// elapsed second. None without the machine's CPU time.
fn busy_s(r: &RunReport) -> Option<f64> {
    let m = r.machine_cpu.as_ref()?;
    let kswapd = r.kswapd.as_ref().map_or(0.0, |k| k.cpu_s());
    let known = r.usage.user_s.max(0.0) + r.usage.sys_s.max(0.0) + kswapd;
    Some(m.busy_s().max(known))
}

/// One group's mean figures: its budget, elapsed time, the machine's
/// busy CPU-seconds and the run-queue waits (the symptom).
struct GroupBudget {
    budget: [f64; N],
    elapsed: f64,
    busy: Option<f64>,
    cpu_wait: Option<f64>,
    /// CPU-seconds convert at the job's own rate (its waits per holder
    /// are measured), not the machine's.
    own_rate: bool,
}

impl GroupBudget {
    fn of(runs: &[&RunReport], basis: Basis) -> GroupBudget {
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let some_mean = |v: Vec<f64>| (!v.is_empty()).then(|| mean(&v));
        let b: Vec<[f64; N]> = runs.iter().map(|r| budget(r, basis)).collect();
        GroupBudget {
            budget: std::array::from_fn(|c| mean(&b.iter().map(|x| x[c]).collect::<Vec<_>>())),
            elapsed: mean(&runs.iter().map(|r| r.usage.wall_s).collect::<Vec<_>>()),
            busy: some_mean(runs.iter().filter_map(|r| busy_s(r)).collect())
                .filter(|_| basis.machine_cpu),
            cpu_wait: some_mean(
                runs.iter()
                    .filter_map(|r| delays(r))
                    .map(|d| d.cpu_ns as f64 / 1e9)
                    .collect(),
            ),
            own_rate: basis.cpu_waits,
        }
    }

    /// The target's CPU-seconds.
    fn target_cpu(&self) -> f64 {
        Component::ALL
            .iter()
            .zip(&self.budget)
            .filter(|(c, _)| c.kind() == Kind::TargetCpu)
            .map(|(_, s)| s)
            .sum()
    }

    /// The target's CPU-seconds and wait task-seconds together.
    fn target(&self) -> f64 {
        Component::ALL
            .iter()
            .zip(&self.budget)
            .filter(|(c, _)| c.kind() != Kind::MachineCpu)
            .map(|(_, s)| s)
            .sum()
    }

    /// Elapsed seconds per wait task-second: 1 / the job's concurrency.
    fn w_io(&self) -> f64 {
        elapsed_per_second(self.target(), self.elapsed)
    }

    /// Elapsed seconds per CPU-second: 1 / the job's CPU parallelism
    /// where its waits behind others are measured; else (older
    /// recordings) 1 / the machine's busy CPUs, or without them 1 / the
    /// job's concurrency.
    fn w_cpu(&self) -> f64 {
        if self.own_rate {
            return elapsed_per_second(self.target_cpu(), self.elapsed);
        }
        self.busy
            .map_or_else(|| self.w_io(), |b| elapsed_per_second(b, self.elapsed))
    }
}

/// The host's steal rate over the two groups, `r' = (r_a + r_b) / 2`
/// with r = steal / (busy - steal), and steal's own change, `x' dr`
/// with x = busy - steal (see `attribute`); (0, 0) without the
/// machine's CPU time.
fn steal_change(a: &GroupBudget, b: &GroupBudget) -> (f64, f64) {
    let steal = |g: &GroupBudget| g.budget[Component::Steal as usize];
    let (Some(busy_a), Some(busy_b)) = (a.busy, b.busy) else {
        return (0.0, 0.0);
    };
    let (xa, xb) = (busy_a - steal(a), busy_b - steal(b));
    if xa <= 0.0 || xb <= 0.0 {
        return (0.0, 0.0);
    }
    let (ra, rb) = (steal(a) / xa, steal(b) / xb);
    ((ra + rb) / 2.0, (xa + xb) / 2.0 * (rb - ra))
}

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
            guard: component.sources(basis).iter().find_map(|&m| {
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
        // work: with r = steal / (busy - steal) and x = busy - steal,
        // steal's change is r' dx + x' dr exactly (r', x': the two
        // groups' means). The first term is the work's own CPU-seconds
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
