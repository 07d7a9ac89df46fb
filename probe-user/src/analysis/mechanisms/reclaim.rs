//! The mechanisms of reclaim itself: reclaim (its on-CPU time and
//! sleeps, and the way in that moved), refaults (the part of that
//! reclaim that evicted pages needed again, and filling the page cache
//! with them again) and compaction.

use super::Measure::*;
use super::{Evidence, Mechanism};
use crate::analysis::attribution::Component;
use crate::analysis::{
    Hint,
    hint::{Fact, ShareOf},
};

/// Reclaim in the target's tasks: its time on the CPU and its sleeps
/// (writeback and I/O waits, throttling) inside the stalls. kswapd's
/// work is its own mechanism: other CPUs do it, the job waits for it
/// only through them.
pub(super) fn reclaim(e: &Evidence) -> Option<Hint> {
    let moved = [
        ReclaimStallTime,
        ReclaimOnCpu,
        ReclaimEfficiency,
        PagesScanned,
        MemstallSleepTime,
    ];
    if !moved.iter().any(|&m| e.real(m)) {
        return None;
    }
    let mut evidence = vec![
        e.fact(ReclaimStallTime),
        e.fact(ReclaimStalls),
        e.fact(ReclaimEfficiency),
    ];
    if e.metric(ReclaimOnCpu).is_some() {
        evidence.push(e.fact(ReclaimOnCpu));
    }
    evidence.push(e.fact(ScanVelocity));
    if e.real(LowPriorityShrinks) {
        evidence.push(e.fact(LowPriorityShrinks));
    }
    // The IPIs are CPU contention's where they waited on other tasks.
    if e.real(ReclaimCrossCpu) && !e.cross_cpu_is_contention() {
        evidence.push(e.fact(ReclaimCrossCpu));
    }
    if let Some(way) = e.way_that_moved_most() {
        evidence.push(Fact::WayMoved { way });
    }
    evidence.extend(e.functions_that_moved());
    let share = e.refault_share();
    if share > 0.0 {
        evidence.push(Fact::Share {
            of: ShareOf::RefaultedReclaim,
            value: share,
        });
    }
    if e.real(MemstallSleepTime) {
        evidence.push(e.fact(MemstallSleepTime));
    }
    Some(Hint {
        mechanism: Mechanism::Reclaim,
        seconds: (1.0 - share) * e.reclaim_seconds() + e.comp(Component::MemstallWaits),
        evidence,
    })
}

/// Pages evicted and needed again: named always when they moved; the
/// cause, claiming reclaim's seconds in proportion, when the extra
/// reclaim was mostly evicting them (`Evidence::refault_share`): a
/// kernel that protects the workingset less (refault activations down)
/// reclaims the same pages over and over.
pub(super) fn refaults(e: &Evidence) -> Option<Hint> {
    e.refaults_named().then(|| {
        let mut evidence = vec![e.fact(Refaults), e.fact(ThrashingDelay)];
        // Refault detection itself: how many refaulted folios were
        // judged part of the workingset and activated.
        if e.real(RefaultActivations) {
            evidence.push(e.fact(RefaultActivations));
        }
        let share = e.refault_share();
        if share > 0.0 {
            evidence.push(e.fact(PagesReclaimed));
            evidence.push(Fact::Share {
                of: ShareOf::RefaultedReclaim,
                value: share,
            });
        }
        // Filling the page cache again with them: the sampled fill CPU.
        let refill = e.refill_sys_share();
        if refill > 0.0 {
            evidence.push(e.fact(PageCacheFillCpu));
        }
        Hint {
            mechanism: Mechanism::Refaults,
            seconds: share * e.reclaim_seconds() + refill * e.comp(Component::OtherSystemCpu),
            evidence,
        }
    })
}

pub(super) fn compaction(e: &Evidence) -> Option<Hint> {
    e.real(Compaction).then(|| Hint {
        mechanism: Mechanism::Compaction,
        seconds: e.comp(Component::CompactionCpu) + e.comp(Component::CompactionWaits),
        evidence: vec![e.fact(Compaction)],
    })
}
