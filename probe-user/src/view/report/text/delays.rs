//! The delay-accounting section of the text report: where the target's
//! threads waited, by the kernel's own task delay accounting, with the
//! eBPF reclaim stall time beside its reclaim delay.

use crate::view::format::fmt_ns;
use std::fmt::{Result, Write as _};

use crate::model::report::{DelayReport, RunReport};

/// `delay accounting (...)`: reclaim, swap-in, thrashing, compaction,
/// block I/O and run-queue delays, or why they are off.
pub(super) fn delays(o: &mut String, report: &RunReport) -> Result {
    let Some(d) = &report.delays else {
        return Ok(());
    };
    writeln!(o)?;
    writeln!(o, "delay accounting (the kernel's, target threads at exit)")?;
    if !d.accounting_on {
        return writeln!(o, "  off: kernel.task_delayacct could not be turned on");
    }
    let stalls = report
        .direct_reclaim
        .as_ref()
        .map_or(0, |r| r.stalls.total_ns)
        + report
            .memcg_reclaim
            .as_ref()
            .map_or(0, |r| r.stalls.total_ns);
    writeln!(
        o,
        "  reclaim {:>8}  (eBPF reclaim stalls {})",
        fmt_ns(d.freepages_ns),
        fmt_ns(stalls)
    )?;
    writeln!(
        o,
        "  swap-in {:>8}  thrashing {:>8}  compaction {:>8}",
        fmt_ns(d.swapin_ns),
        fmt_ns(d.thrashing_ns),
        fmt_ns(d.compact_ns)
    )?;
    writeln!(
        o,
        "  block I/O {:>6}  waiting for a CPU {:>8}",
        fmt_ns(d.blkio_ns),
        fmt_ns(d.cpu_ns)
    )?;
    caveats(o, d)
}

/// What the figures leave out, each only when it happened: per-task
/// values dropped as longer than their task lived (never summed), threads
/// the kernel kept no record for, accounting already on before.
fn caveats(o: &mut String, d: &DelayReport) -> Result {
    if d.implausible > 0 {
        writeln!(
            o,
            "  dropped {} delays > task's life ({}): no wait start stamp",
            d.implausible,
            fmt_ns(d.implausible_ns)
        )?;
    }
    if d.untracked_threads > 0 {
        writeln!(
            o,
            "  {} threads forked while it was off: no delays kept for them",
            d.untracked_threads
        )?;
    }
    if d.already_on {
        writeln!(
            o,
            "  on before vmtrace: older tasks carry waits from before"
        )?;
    }
    Ok(())
}
