//! The mechanisms that claim the job's waits for a CPU: kswapd (the job
//! runnable behind it, or in older recordings its CPU time) and CPU
//! contention (runnable behind other tasks, steal).

use super::Measure::*;
use super::{Evidence, Mechanism};
use crate::analysis::Hint;
use crate::analysis::attribution::Component;

/// kswapd worked more (or less): the job waited behind it on a CPU
/// (measured), or in older recordings its CPU time taken from the
/// machine's CPUs the job runs on.
pub(super) fn kswapd(e: &Evidence) -> Option<Hint> {
    if !(e.real(KswapdCpu) || e.real(KswapdAwake) || e.real(RunnableBehindKswapd)) {
        return None;
    }
    let mut evidence = vec![e.fact(KswapdAwake), e.fact(KswapdCpu)];
    if e.metric(RunnableBehindKswapd).is_some() {
        evidence.push(e.fact(RunnableBehindKswapd));
    }
    Some(Hint {
        mechanism: Mechanism::Kswapd,
        seconds: e.comp(Component::KswapdCpu) + e.comp(Component::KswapdWaits),
        evidence,
    })
}

/// The job's tasks waited longer (or shorter) for a CPU held by a task
/// outside the job, measured on them at the scheduler, or the host took
/// more of the CPUs (steal). Other tasks' CPU time and the job's
/// run_delay are named beside it as witnesses; where the waits per
/// holder are measured other tasks' CPU claims nothing: it costs the job
/// only the time the job waited behind it.
pub(super) fn cpu_contention(e: &Evidence) -> Option<Hint> {
    if !(e.real(OtherTasksCpu)
        || e.real(Steal)
        || e.real(CpuWait)
        || e.real(RunnableBehindOthers)
        || e.cross_cpu_is_contention())
    {
        return None;
    }
    // Measured where the runs have them; steal only when it moved.
    let mut evidence: Vec<_> = [RunnableBehindOthers, CpuWait, OtherTasksCpu]
        .into_iter()
        .filter(|&key| e.metric(key).is_some())
        .map(|key| e.fact(key))
        .collect();
    if e.real(Steal) {
        evidence.push(e.fact(Steal));
    }
    let cross = if e.cross_cpu_is_contention() {
        evidence.push(e.fact(ReclaimCrossCpu));
        e.comp(Component::ReclaimCrossCpu)
    } else {
        0.0
    };
    Some(Hint {
        mechanism: Mechanism::CpuContention,
        seconds: e.comp(Component::CpuWaits)
            + e.comp(Component::OtherTasksCpu)
            + e.comp(Component::Steal)
            + cross,
        evidence,
    })
}
