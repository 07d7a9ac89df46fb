//! The mechanisms that claim the job's waits for a CPU: kswapd (the job
//! runnable behind it, or in older recordings its CPU time) and CPU
//! contention (runnable behind other tasks, steal).

use super::Measure::*;
use super::{Evidence, Mechanism};
use crate::analysis::Hint;
use crate::analysis::attribution::Component;
use crate::model::format::fmt_secs;

/// kswapd worked more (or less): the job waited behind it on a CPU
/// (measured), or in older recordings its CPU time taken from the
/// machine's CPUs the job runs on.
pub(super) fn kswapd(e: &Evidence) -> Option<Hint> {
    if !(e.real(KswapdCpu) || e.real(KswapdAwake) || e.real(RunnableBehindKswapd)) {
        return None;
    }
    let mut text = format!(
        "kswapd: awake {}, CPU {}",
        e.pair(KswapdAwake, fmt_secs),
        e.pair(KswapdCpu, fmt_secs)
    );
    if e.metric(RunnableBehindKswapd).is_some() {
        text.push_str(&format!(
            ", the job runnable behind it {}",
            e.pair(RunnableBehindKswapd, fmt_secs)
        ));
    }
    Some(Hint {
        mechanism: Mechanism::Kswapd,
        seconds: e.comp(Component::KswapdCpu) + e.comp(Component::KswapdWaits),
        text,
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
    let mut parts = Vec::new();
    if e.metric(RunnableBehindOthers).is_some() {
        parts.push(format!(
            "runnable behind other tasks {}",
            e.pair(RunnableBehindOthers, fmt_secs)
        ));
    }
    if e.metric(CpuWait).is_some() {
        parts.push(format!("waiting for a CPU {}", e.pair(CpuWait, fmt_secs)));
    }
    if e.metric(OtherTasksCpu).is_some() {
        parts.push(format!(
            "other tasks' CPU {}",
            e.pair(OtherTasksCpu, fmt_secs)
        ));
    }
    if e.real(Steal) {
        parts.push(format!("steal {}", e.pair(Steal, fmt_secs)));
    }
    let cross = if e.cross_cpu_is_contention() {
        parts.push(format!(
            "reclaim's TLB-flush IPIs waiting on those CPUs {}",
            e.pair(ReclaimCrossCpu, fmt_secs)
        ));
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
        text: format!("CPU contention: {}", parts.join(", ")),
    })
}
