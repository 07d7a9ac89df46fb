//! What a comparison's budgets are computed from (`Basis`).

use serde::Serialize;

use super::{Component, Kind};
use crate::analysis::measures::Measure;
use crate::analysis::readings::reclaims;
use crate::model::report::RunReport;

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
    /// The job's CPU profile (kernel stacks sampled on the CPU clock):
    /// reclaim's cross-CPU calls are taken out of its on-CPU time.
    #[serde(default)]
    pub profile: bool,
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
            profile: all(|r| r.profile.is_some()),
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
            Component::ReclaimCrossCpu => self.reclaim_split && self.profile,
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

    /// The measures component `c` is computed from on this basis: when
    /// a guard marks one (its meaning differs between the groups), the
    /// component is not comparable either and explains nothing.
    pub fn sources(self, c: Component) -> &'static [Measure] {
        use Measure::{
            BlockIoDelay, Compaction, IoWaitTime, MemstallSleepTime, ReclaimCrossCpu, ReclaimOnCpu,
            ReclaimStallTime, RunnableBehindKswapd, RunnableBehindOthers, Steal, SystemCpu,
            UserCpu,
        };
        match c {
            Component::UserCpu => &[UserCpu],
            Component::ReclaimCpu if self.reclaim_split => &[ReclaimOnCpu],
            Component::ReclaimCrossCpu => &[ReclaimOnCpu, ReclaimCrossCpu],
            Component::ReclaimCpu => &[ReclaimStallTime],
            Component::CompactionCpu if self.compaction_split => &[],
            Component::CompactionCpu => &[Compaction],
            // What is left of system time after the two above.
            Component::OtherSystemCpu => match (self.reclaim_split, self.compaction_split) {
                (true, true) => &[SystemCpu, ReclaimOnCpu],
                (true, false) => &[SystemCpu, ReclaimOnCpu, Compaction],
                (false, true) => &[SystemCpu, ReclaimStallTime],
                (false, false) => &[SystemCpu, ReclaimStallTime, Compaction],
            },
            Component::BlockIoWaits if self.io_waits => &[IoWaitTime],
            Component::BlockIoWaits => &[BlockIoDelay],
            Component::MemstallWaits => &[MemstallSleepTime],
            Component::CpuWaits => &[RunnableBehindOthers],
            Component::KswapdWaits => &[RunnableBehindKswapd],
            Component::Steal => &[Steal],
            _ => &[],
        }
    }
}
