//! The budget's components (`Component`): what each is, what kind of
//! seconds it holds (`Kind`, which decides its rate) and how it is
//! printed. Which measures it is computed from depends on the basis
//! (`Basis::sources`).

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
pub(super) const N: usize = 15;

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
}

// Serialised as its id and the label the text prints.
vmtrace_model::keyed!(Component, Component::ALL.into_iter(), Component::label);
