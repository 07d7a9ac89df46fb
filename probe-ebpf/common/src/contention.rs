//! Who the target waited for: the holders of a CPU and the per-CPU wait table.

use crate::Counter;

/// Who held a CPU while a target task waited for it (the order of the
/// `RunnableBehind*` counters).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    Job = 0,
    Kswapd = 1,
    Kcompactd = 2,
    Kthreads = 3,
    Others = 4,
    Idle = 5,
}

impl Holder {
    pub const COUNT: u32 = 6;
    pub const ALL: [Holder; 6] = [
        Holder::Job,
        Holder::Kswapd,
        Holder::Kcompactd,
        Holder::Kthreads,
        Holder::Others,
        Holder::Idle,
    ];

    /// The counter its time goes to.
    #[inline(always)]
    pub const fn counter(self) -> Counter {
        match self {
            Holder::Job => Counter::RunnableBehindJobNs,
            Holder::Kswapd => Counter::RunnableBehindKswapdNs,
            Holder::Kcompactd => Counter::RunnableBehindKcompactdNs,
            Holder::Kthreads => Counter::RunnableBehindKthreadsNs,
            Holder::Others => Counter::RunnableBehindOthersNs,
            Holder::Idle => Counter::RunnableBehindIdleNs,
        }
    }
}

/// CPUs the per-CPU wait table has room for (`CPU_WAITS`).
pub const MAX_CPUS: u32 = 1024;

/// One CPU's waiting target tasks (`CPU_WAITS`, indexed by CPU): how
/// many are queued on it now, since when that number holds, and the
/// task-ns the current holder of the CPU has kept them waiting so far
/// (booked to its [`Holder`] when it is switched out). Changed only
/// under that CPU's run-queue lock.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct CpuWaiters {
    pub since_ns: u64,
    pub pending_ns: u64,
    pub waiters: u32,
    pub _pad: u32,
}
