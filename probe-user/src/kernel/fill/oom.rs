//! The OOM reaper's section from the map totals: the victims it was
//! woken for, its attempts that reaped and skipped, and how long each
//! reaping pass took.

use vmtrace_common::{Counter, Hist};

use crate::{
    kernel::totals::KernelTotals,
    model::{histogram::summarize, report::OomReaperReport},
};

/// The reaper's counts and reap times.
pub(super) fn reaper(totals: &KernelTotals) -> OomReaperReport {
    OomReaperReport {
        wakeups: totals.counter(Counter::OomReaperWakeups),
        reaps: totals.counter(Counter::OomReapStarts),
        skips: totals.counter(Counter::OomReapSkips),
        reap_time: summarize(totals.hist(Hist::OomReap)),
    }
}
