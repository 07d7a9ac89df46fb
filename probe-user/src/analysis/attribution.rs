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
//! - a CPU-second (the target's; in older recordings also kswapd's,
//!   other tasks', steal) costs `w = elapsed / machine busy
//!   CPU-seconds`, at most 1: with B busy CPUs on average, one more
//!   CPU-second of work delays the machine's work by about 1/B seconds
//!   (a -j 8 job on 2 CPUs: 1/2, not 1/8). The job's own parallelism
//!   (elapsed / its CPU-seconds) would not let unrelated busy CPUs
//!   discount its work, but a hog sharing the job's CPUs also made the
//!   job's reclaim 1.3 CPU-s slower per run (calibration.rs: 1.1 -> 2.4
//!   s on a CPU), which that rate books to reclaim: not yet used;
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

use serde::Serialize;

use super::measures::{Measure, delays};
use super::{AttributionRow, ElapsedSplit, MetricRow};
use crate::model::report::{ReclaimReport, RunReport, StallSplit};
use crate::model::schema::names_schema;

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
const N: usize = 14;

impl Component {
    /// Every component, in the order shown (the budget's order).
    pub const ALL: [Component; N] = [
        Component::UserCpu,
        Component::ReclaimCpu,
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
            BlockIoDelay, Compaction, IoWaitTime, MemstallSleepTime, ReclaimOnCpu,
            ReclaimStallTime, RunnableBehindKswapd, RunnableBehindOthers,
        };
        match self {
            Component::ReclaimCpu if basis.reclaim_split => &[ReclaimOnCpu],
            Component::ReclaimCpu => &[ReclaimStallTime],
            Component::CompactionCpu if basis.compaction_split => &[],
            Component::CompactionCpu => &[Compaction],
            // What is left of system time after the two above.
            Component::OtherSystemCpu => match (basis.reclaim_split, basis.compaction_split) {
                (true, true) => &[ReclaimOnCpu],
                (true, false) => &[ReclaimOnCpu, Compaction],
                (false, true) => &[ReclaimStallTime],
                (false, false) => &[ReclaimStallTime, Compaction],
            },
            Component::BlockIoWaits if basis.io_waits => &[IoWaitTime],
            Component::BlockIoWaits => &[BlockIoDelay],
            Component::MemstallWaits => &[MemstallSleepTime],
            Component::CpuWaits => &[RunnableBehindOthers],
            Component::KswapdWaits => &[RunnableBehindKswapd],
            _ => &[],
        }
    }
}

/// Serialised as its label.
impl Serialize for Component {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.label())
    }
}
names_schema!(Component, Component::ALL.map(Component::label));

/// What a comparison's budgets are computed from: a measured source
/// only where every run has it, so that both groups' figures mean the
/// same thing; else the older source, marked, for every run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Basis {
    /// Reclaim stalls split at the scheduler (on-CPU, asleep).
    pub reclaim_split: bool,
    /// Compaction runs split likewise.
    pub compaction_split: bool,
    /// The target's I/O-wait sleeps timed at the scheduler.
    pub io_waits: bool,
    /// The machine's CPU time (/proc/stat).
    pub machine_cpu: bool,
    /// The target's waits for a CPU by who held it (probe-ebpf
    /// contention): the waits behind tasks outside the job are
    /// components, and the machine's other CPU time only context.
    #[serde(default)]
    pub cpu_waits: bool,
    /// The target's memory-stall sleeps outside reclaim (memory.high's
    /// penalty), timed at the scheduler.
    #[serde(default)]
    pub memstall: bool,
}

impl Basis {
    pub fn of<'a>(runs: impl Iterator<Item = &'a RunReport> + Clone) -> Basis {
        let all = |f: fn(&RunReport) -> bool| runs.clone().all(f);
        Basis {
            reclaim_split: all(|r| reclaims(r).all(|s| s.split.is_some())),
            compaction_split: all(|r| r.compaction.as_ref().is_none_or(|c| c.split.is_some())),
            io_waits: all(|r| r.io_waits.is_some()),
            machine_cpu: all(|r| r.machine_cpu.is_some()),
            cpu_waits: all(|r| r.runnable.is_some()),
            memstall: all(|r| r.memstall_sleeps.is_some()),
        }
    }

    /// Whether the component is in the budget at all (reclaim's and
    /// compaction's sleeps need their split, the machine's components
    /// the machine's CPU time).
    pub fn has(self, c: Component) -> bool {
        match c {
            Component::ReclaimWaits => self.reclaim_split,
            Component::CompactionWaits => self.compaction_split,
            Component::CpuWaits | Component::KswapdWaits => self.cpu_waits,
            Component::MemstallWaits => self.memstall,
            _ if c.kind() == Kind::MachineCpu => self.machine_cpu,
            _ => true,
        }
    }

    /// Whether the component's seconds claim elapsed time: the machine's
    /// other CPU time only where the job's waits for a CPU are not
    /// measured (steal, the host's rate, always: see `attribute`).
    pub fn claims(self, c: Component) -> bool {
        c.kind() != Kind::MachineCpu || c == Component::Steal || !self.cpu_waits
    }

    /// Whether the component is computed from its older source.
    pub fn fallback(self, c: Component) -> bool {
        match c {
            Component::ReclaimCpu => !self.reclaim_split,
            Component::CompactionCpu => !self.compaction_split,
            Component::BlockIoWaits => !self.io_waits,
            Component::KswapdCpu | Component::OtherTasksCpu | Component::Interrupts => {
                !self.cpu_waits
            }
            _ => false,
        }
    }
}

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
    let kswapd: f64 = r
        .kswapd
        .as_ref()
        .map_or(0.0, |k| k.nodes.iter().map(|n| n.cpu_s.max(0.0)).sum());
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
        reclaim,
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
    let kswapd: f64 = r
        .kswapd
        .as_ref()
        .map_or(0.0, |k| k.nodes.iter().map(|n| n.cpu_s.max(0.0)).sum());
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
        }
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

    /// Elapsed seconds per CPU-second: 1 / the machine's busy CPUs, or
    /// without them 1 / the job's concurrency.
    fn w_cpu(&self) -> f64 {
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
            concurrency: [a, b].map(|x| per_elapsed(x.target(), x.elapsed)),
            seconds_per_cpu_second: w_cpu,
            seconds_per_wait_second: w_io,
            waiting_for_cpu: [a.cpu_wait, b.cpu_wait],
        });
    }
    (rows, splits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::histogram::summarize;
    use crate::model::report::{DelayReport, IoWaitReport, MachineCpu, Usage};

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

    /// /proc/stat's busy time below what the target alone used (a TCG
    /// guest's late ticks) is raised to the known CPU time: 36 CPU-s of
    /// the target in 20 s are 1.8 busy CPUs, not the 0.9 the ticks said.
    #[test]
    fn busy_time_is_at_least_the_cpu_time_tasks_used() {
        let r = on_machine(job(20.0, 30.0, 6.0, 0.0, 0.0), 18.0);
        assert_eq!(r.machine_cpu.as_ref().map(MachineCpu::busy_s), Some(18.0));
        assert_eq!(busy_s(&r), Some(36.0));
        let honest = on_machine(job(20.0, 10.0, 2.0, 0.0, 0.0), 30.0);
        assert_eq!(busy_s(&honest), Some(30.0));
        assert_eq!(busy_s(&job(20.0, 10.0, 2.0, 0.0, 0.0)), None);
    }

    /// `job` on a machine whose CPUs were busy `busy` CPU-seconds (2
    /// CPUs, no steal), with its I/O waits timed at the scheduler.
    fn on_machine(mut r: RunReport, busy: f64) -> RunReport {
        let wall = r.usage.wall_s;
        r.machine_cpu = Some(MachineCpu {
            cpus: 2,
            user_s: busy,
            idle_s: (2.0 * wall - busy).max(0.0),
            ..Default::default()
        });
        let blkio = r.delays.as_ref().map_or(0, |d| d.blkio_ns);
        r.io_waits = Some(IoWaitReport {
            waits: 1,
            total_ns: blkio,
        });
        r
    }

    /// memcg reclaim stalls of `wall` seconds, `on_cpu` of them on a
    /// CPU and `blocked` asleep (half of it in I/O waits).
    fn stalls(r: &mut RunReport, wall: f64, on_cpu: f64, blocked: f64) {
        let ns = |s: f64| (s * 1e9) as u64;
        let mut stalls = summarize(&[]);
        stalls.total_ns = ns(wall);
        r.memcg_reclaim = Some(ReclaimReport {
            stalls,
            pages_reclaimed: 1,
            split: Some(StallSplit {
                on_cpu_ns: ns(on_cpu),
                runnable_ns: ns(wall - on_cpu - blocked),
                blocked_ns: ns(blocked),
                iowait_ns: ns(blocked / 2.0),
                wall_ns: ns(wall),
                run_delay_ns: ns(wall - on_cpu - blocked),
            }),
        });
    }

    /// The machine's parts of a run recorded here (calibration base-0:
    /// memhog in a box, 2 CPUs, a guest with steal): the target's
    /// rusage system time reads above the machine's (4.57 s against
    /// 3.86 s: rusage and /proc/stat account differently), so other
    /// tasks' CPU is 0 and
    /// the interrupts are what the busy time holds beyond the target.
    #[test]
    fn interrupts_are_the_busy_time_beyond_every_tasks() {
        let mut r = job(8.6, 0.76, 4.57, 2.15, 0.07);
        r.machine_cpu = Some(MachineCpu {
            cpus: 2,
            user_s: 0.75,
            system_s: 3.86,
            softirq_s: 1.25,
            steal_s: 0.38,
            idle_s: 8.48,
            iowait_s: 2.15,
            ..Default::default()
        });
        let m = machine_parts(&r).expect("parts");
        assert_eq!(m.other_tasks, 0.0);
        assert!((m.interrupts - 0.53).abs() < 1e-9, "{m:?}");
        assert_eq!(m.steal, 0.38);
        // Busy time = the target's + kswapd's + others' + interrupts +
        // steal, whenever other tasks ran at all.
        let mut hogged = r.clone();
        if let Some(mc) = hogged.machine_cpu.as_mut() {
            mc.user_s += 30.0;
        }
        let m = machine_parts(&hogged).expect("parts");
        let busy = hogged.machine_cpu.as_ref().map_or(0.0, MachineCpu::busy_s);
        let sum = 0.76 + 4.57 + m.kswapd + m.other_tasks + m.interrupts + m.steal;
        assert!((sum - busy).abs() < 1e-9, "{m:?}");
    }

    /// Steal that grows only because the job's CPU time grew (the host
    /// takes the same share of every CPU-second) is not a cause: the
    /// extra system time carries it, steal's own part is 0. A change of
    /// the host's rate is steal's.
    #[test]
    fn steal_at_the_same_rate_rides_on_the_work() {
        let run = |wall: f64, sys: f64, steal: f64| {
            let mut r = job(wall, 1.0, sys, 0.0, 0.0);
            let busy_tasks = 1.0 + sys;
            r.machine_cpu = Some(MachineCpu {
                cpus: 2,
                user_s: 1.0,
                system_s: sys,
                steal_s: steal,
                idle_s: (2.0 * wall - busy_tasks - steal).max(0.0),
                ..Default::default()
            });
            r
        };
        // 10% of the busy time stolen in both groups; B has 4 s more
        // system time and is 4.4 s slower.
        let a: Vec<RunReport> = (0..3)
            .map(|k| run(10.0 + 0.01 * k as f64, 8.0, 0.9))
            .collect();
        let b: Vec<RunReport> = (0..3)
            .map(|k| run(14.4 + 0.01 * k as f64, 12.0, 1.3))
            .collect();
        let (rows, splits) = compared(&a, &b);
        let steal = row(&rows, Component::Steal);
        assert!(steal.elapsed[0].abs() < 1e-6, "{steal:?}");
        let sys = row(&rows, Component::OtherSystemCpu);
        assert!(sys.shares[0].unwrap_or(0.0) > 0.99, "{rows:?} {splits:?}");
        // The host's rate doubles in B with the same work: steal's.
        let c: Vec<RunReport> = (0..3)
            .map(|k| run(11.0 + 0.01 * k as f64, 8.0, 1.8))
            .collect();
        let (rows, _) = compared(&a, &c);
        let steal = row(&rows, Component::Steal);
        assert!(steal.shares[0].unwrap_or(0.0) > 0.99, "{rows:?}");
    }

    fn row(rows: &[AttributionRow], c: Component) -> &AttributionRow {
        rows.iter().find(|r| r.component == c).expect("a row")
    }

    fn compared(a: &[RunReport], b: &[RunReport]) -> (Vec<AttributionRow>, Vec<ElapsedSplit>) {
        attribute(&[a.iter().collect(), b.iter().collect()], &[])
    }

    /// A parallel job: 4 tasks, task-seconds far above elapsed (the
    /// issue's compile at -j 4), recorded before the machine's CPU time
    /// was: everything converts at the job's concurrency. The
    /// difference is +2.7 s; the budgets move by hundreds of
    /// task-seconds, some against it.
    #[test]
    fn a_parallel_job_is_attributed_within_its_difference() {
        let a: Vec<RunReport> = (0..3)
            .map(|k| job(190.0 + k as f64 * 0.1, 600.0, 80.0, 40.0, 30.0))
            .collect();
        let b: Vec<RunReport> = (0..3)
            .map(|k| job(192.7 + k as f64 * 0.1, 590.0, 95.0, 447.0, 20.0))
            .collect();
        let (rows, splits) = compared(&a, &b);
        let s = &splits[0];
        assert!((s.difference - 2.7).abs() < 1e-6);
        let pa = s.concurrency[0].unwrap_or(0.0);
        assert!((3.7..3.8).contains(&pa), "{s:?}");
        assert_eq!(s.busy_cpus, [None, None]);
        assert_eq!(s.seconds_per_cpu_second, s.seconds_per_wait_second);
        // Without the machine's CPU time its components are left out,
        // and the run-queue waits are a symptom beside the budget.
        assert!(rows.iter().all(|r| r.component.kind() != Kind::MachineCpu));
        assert_eq!(s.waiting_for_cpu, [Some(30.0), Some(20.0)]);
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
        // user CPU moved against it: an offset.
        let user = row(&rows, Component::UserCpu);
        assert!(user.offsets[0] < 0.0 && user.shares[0].is_none());
        // Block I/O waits are by far the largest contributor, and from
        // delay accounting: marked as the older source.
        let io = row(&rows, Component::BlockIoWaits);
        assert!(io.shares[0].unwrap_or(0.0) > 0.9, "{rows:?}");
        assert!(io.fallback && io.unit == "task-s");
    }

    /// One task on an idle 2-CPU machine: a CPU-second is a second (the
    /// machine was busy one CPU's worth, the task's).
    #[test]
    fn a_single_task_converts_one_to_one() {
        assert_eq!(elapsed_per_second(1.0, 2.0), 1.0);
        assert_eq!(elapsed_per_second(8.0, 2.0), 0.25);
        assert_eq!(elapsed_per_second(0.0, 2.0), 1.0);
        let a = [on_machine(job(10.0, 9.0, 1.0, 0.0, 0.0), 10.0)];
        let b = [on_machine(job(12.0, 9.0, 3.0, 0.0, 0.0), 12.0)];
        let (rows, splits) = compared(&a, &b);
        let s = &splits[0];
        assert_eq!(s.busy_cpus, [Some(1.0), Some(1.0)]);
        assert_eq!(s.seconds_per_cpu_second, 1.0);
        let sys = row(&rows, Component::OtherSystemCpu);
        assert!((sys.elapsed[0] - 2.0).abs() < 1e-9, "{rows:?}");
        assert!(s.unexplained.abs() < 1e-9, "{s:?}");
        // Half asleep: one task, idle CPUs, still 1:1.
        let a = [on_machine(job(2.0, 0.5, 0.5, 0.0, 0.0), 1.0)];
        let b = [on_machine(job(2.5, 0.5, 0.9, 0.0, 0.0), 1.4)];
        let (rows, splits) = compared(&a, &b);
        let sys = row(&rows, Component::OtherSystemCpu);
        assert!((sys.elapsed[0] - 0.4).abs() < 1e-9, "{rows:?}");
        assert!((splits[0].unexplained - 0.1).abs() < 1e-9);
    }

    /// The case: a -j 8 job on 2 CPUs (8 runnable tasks, the
    /// machine busy 2 CPUs' worth) loses X = 10 s of reclaim on-CPU time
    /// and is ~X/2 faster. One CPU-second costs 1/2 elapsed second
    /// there, not 1/8 (the old model's 1/P over all 8 tasks, run-queue
    /// waits included): reclaim is ~X/2 and first.
    #[test]
    fn a_j8_job_on_2_cpus_gets_half_its_reclaim_cpu_seconds() {
        let group = |wall: f64, sys: f64, on_cpu: f64, run_delay: f64| -> Vec<RunReport> {
            (0..3)
                .map(|k| {
                    let wall = wall + 0.05 * k as f64;
                    let mut r = on_machine(job(wall, 150.0, sys, 6.0, run_delay), 2.0 * wall);
                    stalls(&mut r, on_cpu + 6.0, on_cpu, 2.0);
                    r
                })
                .collect()
        };
        let x = 10.0;
        let a = group(100.0, 50.0, 20.0, 600.0);
        let b = group(100.0 - x / 2.0, 50.0 - x, 20.0 - x, 570.0);
        let (rows, splits) = compared(&a, &b);
        let s = &splits[0];
        assert!((s.difference + x / 2.0).abs() < 1e-9, "{s:?}");
        assert!((s.seconds_per_cpu_second - 0.5).abs() < 1e-3, "{s:?}");
        let reclaim = row(&rows, Component::ReclaimCpu);
        assert!(!reclaim.fallback && reclaim.unit == "CPU-s");
        assert!(
            (reclaim.elapsed[0] + x / 2.0).abs() < 0.05 * x,
            "reclaim {} of {}: {rows:#?}",
            reclaim.elapsed[0],
            s.difference
        );
        let first = rows
            .iter()
            .max_by(|p, q| p.elapsed[0].abs().total_cmp(&q.elapsed[0].abs()))
            .expect("rows");
        assert_eq!(first.component, Component::ReclaimCpu);
        assert!(reclaim.shares[0].unwrap_or(0.0) >= 0.9, "{rows:#?}");
        // The reclaim stalls' I/O waits are theirs, not block I/O's.
        assert!((row(&rows, Component::BlockIoWaits).means[0] - 5.0).abs() < 1e-6);
        assert!((row(&rows, Component::ReclaimWaits).means[0] - 2.0).abs() < 1e-6);
    }

    /// A CPU hog beside a -j 8 job on a saturated 2-CPU box: other
    /// tasks' CPU grows by 2 x the elapsed difference, and the job's
    /// run-queue waits balloon. Other tasks' CPU explains it; the waits
    /// are the symptom and no component.
    #[test]
    fn a_cpu_hog_is_other_tasks_cpu_and_run_delay_no_component() {
        let group = |wall: f64, busy: f64, run_delay: f64| -> Vec<RunReport> {
            (0..3)
                .map(|k| {
                    let wall = wall + 0.05 * k as f64;
                    on_machine(job(wall, 18.0, 2.0, 0.0, run_delay), busy + 0.1 * k as f64)
                })
                .collect()
        };
        let a = group(10.0, 20.0, 60.0);
        let b = group(15.0, 30.0, 160.0);
        let (rows, splits) = compared(&a, &b);
        let s = &splits[0];
        assert!((s.difference - 5.0).abs() < 1e-9, "{s:?}");
        let others = row(&rows, Component::OtherTasksCpu);
        assert!((others.diffs[0] - 10.0).abs() < 1e-6, "{others:?}");
        assert!((others.elapsed[0] - 5.0).abs() < 0.05, "{rows:#?}");
        assert!(others.shares[0].unwrap_or(0.0) > 0.99, "{rows:#?}");
        assert_eq!(s.waiting_for_cpu, [Some(60.0), Some(160.0)]);
        let labels: Vec<&str> = rows.iter().map(|r| r.component.label()).collect();
        assert!(!labels.contains(&"waiting for a CPU"), "{labels:?}");
        // The run-queue waits alone moving changes nothing.
        let c = group(10.0, 20.0, 300.0);
        let (rows, splits) = compared(&a, &c);
        assert!(rows.iter().all(|r| r.elapsed[0].abs() < 0.06), "{rows:#?}");
        assert_eq!(splits[0].waiting_for_cpu[1], Some(300.0));
    }

    /// Recordings without the scheduler's split: reclaim is its wall
    /// time capped at system time, marked; with it in only one group,
    /// both groups fall back, so that the two mean the same.
    #[test]
    fn reclaim_without_a_split_falls_back_to_its_wall_time_marked() {
        let mut a = on_machine(job(10.0, 5.0, 3.0, 0.0, 0.0), 8.0);
        stalls(&mut a, 2.0, 1.0, 0.5);
        let mut b = a.clone();
        let basis = Basis::of([&a, &b].into_iter());
        assert!(basis.reclaim_split && !basis.fallback(Component::ReclaimCpu));
        assert!((budget(&a, basis)[1] - 1.0).abs() < 1e-9);
        if let Some(m) = b.memcg_reclaim.as_mut() {
            m.split = None;
        }
        let basis = Basis::of([&a, &b].into_iter());
        assert!(basis.fallback(Component::ReclaimCpu) && !basis.has(Component::ReclaimWaits));
        assert!((budget(&a, basis)[1] - 2.0).abs() < 1e-9);
        let (rows, _) = compared(&[a], &[b]);
        assert!(row(&rows, Component::ReclaimCpu).fallback);
        assert!(rows.iter().all(|r| r.component != Component::ReclaimWaits));
        let note = Component::ReclaimCpu.fallback_note().unwrap_or("");
        assert!(note.starts_with("reclaim wall time, not measured on-CPU"));
    }

    /// `r` with its runnable time measured per holder: `others` behind
    /// tasks outside the job, `own` behind its own threads (seconds).
    fn waits_measured(mut r: RunReport, others: f64, own: f64) -> RunReport {
        use crate::model::report::RunnableReport;
        r.runnable = Some(RunnableReport {
            behind_others_ns: (others * 1e9) as u64,
            behind_job_ns: (own * 1e9) as u64,
            waits: 100,
            ..Default::default()
        });
        if let Some(d) = r.delays.as_mut() {
            d.cpu_ns = ((others + own) * 1e9) as u64;
        }
        r
    }

    /// One sorter's runs (40 s: 30 user, 8 system of which `reclaim` on
    /// a CPU, 2 of I/O waits, `behind` runnable behind other tasks), on
    /// a machine busy `others_busy` CPU-seconds a second besides it.
    fn sorter(k: usize, extra: f64, reclaim: f64, behind: f64, others_busy: f64) -> RunReport {
        let wall = 40.0 + extra + 0.05 * k as f64;
        let sys = 8.0 + reclaim - 5.0;
        let r = job(wall, 30.0, sys, 2.0, behind);
        let mut r = on_machine(r, 30.0 + sys + others_busy * wall);
        stalls(&mut r, reclaim, reclaim, 0.0);
        waits_measured(r, behind, 0.0)
    }

    fn share(rows: &[AttributionRow], c: Component) -> f64 {
        row(rows, c).shares[0].unwrap_or(0.0)
    }

    /// The first case: a CPU hog on the other CPU in both groups,
    /// B reclaims 3 s more on a CPU. The hog's CPU grows with elapsed
    /// (it runs as long as the job) and claims nothing: reclaim ~100%.
    #[test]
    fn a_hog_in_both_groups_claims_nothing() {
        let a: Vec<RunReport> = (0..3).map(|k| sorter(k, 0.0, 5.0, 0.1, 1.0)).collect();
        let b: Vec<RunReport> = (0..3).map(|k| sorter(k, 3.0, 8.0, 0.1, 1.0)).collect();
        let (rows, splits) = compared(&a, &b);
        assert!((splits[0].difference - 3.0).abs() < 1e-9);
        assert!(share(&rows, Component::ReclaimCpu) > 0.95, "{rows:#?}");
        let others = row(&rows, Component::OtherTasksCpu);
        assert!(
            others.diffs[0] > 2.9 && others.elapsed[0] == 0.0,
            "{others:?}"
        );
        assert!(!others.fallback);
    }

    /// The second: the hog moves onto the job's CPU in B, which waits 5 s
    /// more behind it: CPU contention (runnable behind others) ~100%.
    #[test]
    fn a_hog_moved_onto_the_jobs_cpu_is_contention() {
        let a: Vec<RunReport> = (0..3).map(|k| sorter(k, 0.0, 5.0, 0.1, 1.0)).collect();
        let b: Vec<RunReport> = (0..3).map(|k| sorter(k, 5.0, 5.0, 5.1, 1.0)).collect();
        let (rows, splits) = compared(&a, &b);
        assert!(share(&rows, Component::CpuWaits) > 0.95, "{rows:#?}");
        assert!(splits[0].unexplained.abs() < 0.25, "{:?}", splits[0]);
    }

    /// A -j 8 job on 2 CPUs with the waits measured: its threads queue
    /// behind each other (runnable behind the job, 600 -> 570 task-s),
    /// which is its CPU time waiting, no component; reclaim's 10 s less
    /// on a CPU at 1/2 is the whole difference.
    #[test]
    fn self_contention_is_no_component() {
        let group = |wall: f64, sys: f64, on_cpu: f64, queued: f64| -> Vec<RunReport> {
            (0..3)
                .map(|k| {
                    let wall = wall + 0.05 * k as f64;
                    let r = on_machine(job(wall, 150.0, sys, 6.0, 0.0), 2.0 * wall);
                    let mut r = waits_measured(r, 0.5, queued);
                    stalls(&mut r, on_cpu + 6.0, on_cpu, 2.0);
                    r
                })
                .collect()
        };
        let a = group(100.0, 50.0, 20.0, 600.0);
        let b = group(95.0, 40.0, 10.0, 570.0);
        let (rows, splits) = compared(&a, &b);
        assert!(
            (splits[0].seconds_per_cpu_second - 0.5).abs() < 0.01,
            "{:?}",
            splits[0]
        );
        assert!(share(&rows, Component::ReclaimCpu) > 0.9, "{rows:#?}");
        assert!(row(&rows, Component::CpuWaits).elapsed[0].abs() < 1e-9);
    }
}
