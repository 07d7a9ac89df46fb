//! The kinds of cause a hint names (`Mechanism`): their names and the
//! time-budget components each may claim. The detectors that look for
//! them are in `mechanisms`; a hint (`hint`) carries one.

use super::attribution::Component;

/// The mechanisms, each once: the enum, `ALL` (the order hints are
/// looked for in, which ties keep) and the names come from this one list,
/// so a mechanism cannot be left out of one of them.
macro_rules! mechanisms {
    ($($variant:ident => $name:literal,)*) => {
        /// A kind of cause a hint names.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Mechanism {
            $($variant,)*
        }

        impl Mechanism {
            /// Every mechanism, in the order of the enum.
            pub const ALL: [Mechanism; [$(Mechanism::$variant,)*].len()] =
                [$(Mechanism::$variant,)*];

            /// As printed and serialised: for reading only.
            pub fn name(self) -> &'static str {
                match self {
                    $(Mechanism::$variant => $name,)*
                }
            }
        }
    };
}

mechanisms! {
    OomKills => "OOM kills",
    Zswap => "zswap",
    FileReads => "file reads",
    Writeback => "writeback",
    SwapIn => "swap-in",
    Reclaim => "reclaim",
    Kswapd => "kswapd",
    CpuContention => "CPU contention",
    Refaults => "refaults",
    SwapOut => "swap-out",
    Compaction => "compaction",
    SystemCpu => "system CPU",
    Zones => "zones",
}

impl Mechanism {
    /// The time-budget components whose parts this mechanism's seconds
    /// are fractions of (each fraction what its evidence supports, see
    /// the detectors): the one statement of who may claim what, read by
    /// the claims test and checked against docs/COMPARE.md's table. OOM
    /// kills, swap-out and zones claim no seconds.
    pub fn claims(self) -> &'static [Component] {
        use Component::*;
        match self {
            Mechanism::OomKills | Mechanism::SwapOut | Mechanism::Zones => &[],
            Mechanism::Zswap | Mechanism::SwapIn => &[BlockIoWaits, Interrupts, OtherSystemCpu],
            Mechanism::FileReads | Mechanism::Writeback => &[BlockIoWaits, Interrupts],
            Mechanism::Reclaim => &[ReclaimCpu, ReclaimCrossCpu, ReclaimWaits, MemstallWaits],
            Mechanism::Refaults => &[ReclaimCpu, ReclaimCrossCpu, ReclaimWaits, OtherSystemCpu],
            Mechanism::Kswapd => &[KswapdCpu, KswapdWaits],
            Mechanism::CpuContention => &[CpuWaits, OtherTasksCpu, Steal, ReclaimCrossCpu],
            Mechanism::Compaction => &[CompactionCpu, CompactionWaits],
            Mechanism::SystemCpu => &[OtherSystemCpu],
        }
    }
}

// Serialised as its id and the name the text prints.
vmtrace_model::keyed!(Mechanism, Mechanism::ALL.into_iter(), Mechanism::name);
