//! The delay-accounting section of the text report: where the target's
//! threads waited, by the kernel's own task delay accounting, with the
//! eBPF reclaim stall time beside its reclaim delay.

use crate::model::format::fmt_ns;
use std::fmt::{Result, Write as _};

use crate::model::report::{DelayReport, RunReport};

/// `delay accounting (...)`: reclaim, swap-in, thrashing, compaction,
/// block I/O and run-queue delays, or why they are off.
pub(super) fn delays(o: &mut String, report: &RunReport) -> Result {
    let Some(d) = &report.delays else {
        return Ok(());
    };
    writeln!(o)?;
    writeln!(
        o,
        "delay accounting (the kernel's, summed over target threads at exit)"
    )?;
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
    if d.wpcopy_ns > 0 || d.irq_ns > 0 {
        writeln!(
            o,
            "  write-protect copy {:>8}  interrupted (IRQ) {:>8}",
            fmt_ns(d.wpcopy_ns),
            fmt_ns(d.irq_ns)
        )?;
    }
    if let Some(w) = &report.io_waits {
        writeln!(
            o,
            "  (I/O waits at the scheduler: {} in {} sleeps)",
            fmt_ns(w.total_ns),
            w.waits
        )?;
    }
    if let Some(m) = report.memstall_sleeps.as_ref().filter(|m| m.waits > 0) {
        writeln!(
            o,
            "  (memory-stall sleeps outside reclaim: {} in {})",
            fmt_ns(m.total_ns),
            m.waits
        )?;
    }
    if let Some(r) = &report.runnable {
        writeln!(
            o,
            "  (runnable behind: the job {}, kswapd {}, kcompactd {},",
            fmt_ns(r.behind_job_ns),
            fmt_ns(r.behind_kswapd_ns),
            fmt_ns(r.behind_kcompactd_ns)
        )?;
        writeln!(
            o,
            "   kernel threads {}, other tasks {}, idle CPU {})",
            fmt_ns(r.behind_kthreads_ns),
            fmt_ns(r.behind_others_ns),
            fmt_ns(r.behind_idle_ns)
        )?;
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_values_and_untracked_threads_are_said_in_one_line_each() {
        let mut report = RunReport {
            delays: Some(DelayReport {
                accounting_on: true,
                blkio_ns: 1_500_000_000,
                implausible: 12345,
                implausible_ns: 188_234_000_000_000,
                untracked_threads: 99999,
                already_on: true,
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut o = String::new();
        delays(&mut o, &report).expect("write");
        assert!(
            o.contains("  dropped 12345 delays > task's life (188234s): no wait start stamp"),
            "{o}"
        );
        assert!(o.contains("99999 threads forked while it was off"), "{o}");
        assert!(o.contains("on before vmtrace"), "{o}");
        assert!(o.lines().all(|l| l.len() <= 72 && l.is_ascii()), "{o}");
        // Nothing dropped: no line about it.
        report.delays = Some(DelayReport {
            accounting_on: true,
            ..Default::default()
        });
        let mut o = String::new();
        delays(&mut o, &report).expect("write");
        assert!(!o.contains("dropped") && !o.contains("forked"), "{o}");
    }
}
