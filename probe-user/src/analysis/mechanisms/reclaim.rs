//! The mechanisms of reclaim itself: reclaim (its on-CPU time and
//! sleeps, and the way in that moved), refaults (the part of that
//! reclaim that evicted pages needed again, and filling the page cache
//! with them again) and compaction.

use super::Measure::*;
use super::{Evidence, Mechanism};
use crate::analysis::Hint;
use crate::analysis::attribution::Component;
use crate::model::format::{fmt_count_short, fmt_secs};

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
    let mut text = format!(
        "reclaim: stalls {} ({}), efficiency {}",
        e.pair(ReclaimStallTime, fmt_secs),
        e.pair(ReclaimStalls, fmt_count_short),
        e.pair(ReclaimEfficiency, |v| format!("{v:.0}%"))
    );
    if e.metric(ReclaimOnCpu).is_some() {
        text.push_str(&format!(", on-CPU {}", e.pair(ReclaimOnCpu, fmt_secs)));
    }
    text.push_str(&format!(
        ", velocity {} pages/s",
        e.pair(ScanVelocity, fmt_count_short)
    ));
    if e.real(LowPriorityShrinks) {
        text.push_str(&format!(
            "; shrinks at priority <= 9: {}",
            e.pair(LowPriorityShrinks, |v| format!("{v:.0}%"))
        ));
    }
    if e.real(ReclaimCrossCpu) && !e.cross_cpu_is_contention() {
        text.push_str(&format!(
            "; TLB-flush IPIs {}",
            e.pair(ReclaimCrossCpu, fmt_secs)
        ));
    }
    if let Some(way) = e.way_that_moved_most() {
        text.push_str(&format!("; moved most: {way}"));
    }
    let share = e.refault_share();
    if share > 0.0 {
        text.push_str(&format!(
            "; {:.0}% of the change evicted pages needed again (refaults)",
            100.0 * share
        ));
    }
    if e.real(MemstallSleepTime) {
        text.push_str(&format!(
            "; memory.high sleeps {}",
            e.pair(MemstallSleepTime, fmt_secs)
        ));
    }
    Some(Hint {
        mechanism: Mechanism::Reclaim,
        seconds: (1.0 - share) * e.reclaim_seconds() + e.comp(Component::MemstallWaits),
        text,
    })
}

/// Pages evicted and needed again: named always when they moved; the
/// cause, claiming reclaim's seconds in proportion, when the extra
/// reclaim was mostly evicting them (`Evidence::refault_share`): a
/// kernel that protects the workingset less (refault activations down)
/// reclaims the same pages over and over.
pub(super) fn refaults(e: &Evidence) -> Option<Hint> {
    e.refaults_named().then(|| {
        let mut text = format!(
            "refaults (evicted pages needed again): {}, thrashing waits {}",
            e.pair(Refaults, fmt_count_short),
            e.pair(ThrashingDelay, fmt_secs)
        );
        // Refault detection itself: how many refaulted folios were
        // judged part of the workingset and activated.
        if e.real(RefaultActivations) {
            text.push_str(&format!(
                ", activated on refault {}",
                e.pair(RefaultActivations, fmt_count_short)
            ));
        }
        let share = e.refault_share();
        if share > 0.0 {
            text.push_str(&format!(
                "; pages reclaimed {}: {:.0}% of the extra reclaim evicted \
                 pages needed again",
                e.pair(PagesReclaimed, fmt_count_short),
                100.0 * share
            ));
        }
        // Filling the page cache again with them: the sampled fill CPU.
        let refill = e.refill_sys_share();
        if refill > 0.0 {
            text.push_str(&format!(
                "; page-cache fill CPU {}",
                e.pair(PageCacheFillCpu, fmt_secs)
            ));
        }
        Hint {
            mechanism: Mechanism::Refaults,
            seconds: share * e.reclaim_seconds() + refill * e.comp(Component::OtherSystemCpu),
            text,
        }
    })
}

pub(super) fn compaction(e: &Evidence) -> Option<Hint> {
    e.real(Compaction).then(|| Hint {
        mechanism: Mechanism::Compaction,
        seconds: e.comp(Component::CompactionCpu) + e.comp(Component::CompactionWaits),
        text: format!("compaction: {}", e.pair(Compaction, fmt_secs)),
    })
}
