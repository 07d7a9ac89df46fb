//! The page-fault sections of the text report: fault counts (eBPF beside
//! rusage and /proc/vmstat), faults per process at exit, fault time per
//! process and the fault latency histograms (--fault-latency).

use crate::model::format::fmt_ns;
use std::fmt::{Result, Write as _};

use super::hist::write_hist;
use crate::model::report::{FaultReport, ProcessFaultTotals, RunReport};

/// `page faults` and everything under it, when any fault metric ran.
pub(super) fn faults(o: &mut String, report: &RunReport) -> Result {
    let f = &report.faults;
    if f.major_all.is_none() && f.minor_latency.is_none() && f.processes.is_none() {
        return Ok(());
    }
    writeln!(o)?;
    writeln!(o, "page faults")?;
    let u = &report.usage;
    // An attach's processes are not vmtrace's children: no rusage to
    // set beside them (usage holds 0s, not counts).
    let rusage = |n: u64| {
        if report.attached {
            "   (attached: no rusage)".to_string()
        } else {
            format!("   rusage {n:>12}")
        }
    };
    if let (Some(all), Some(t)) = (f.major_all, f.major_target) {
        writeln!(
            o,
            "  major, target tasks   {t:>12}{}",
            rusage(u.major_faults)
        )?;
        writeln!(
            o,
            "  major, all tasks      {all:>12}   vmstat {:>12}",
            report.vmstat.pgmajfault
        )?;
    }
    if let Some(k) = f.kernel_mode_target {
        writeln!(o, "  kernel-mode, target   {k:>12}")?;
    }
    if let Some(p) = &f.processes {
        by_process(o, p)?;
    }
    if let Some(m) = f.minor_target {
        writeln!(
            o,
            "  minor, target tasks   {m:>12}{}",
            rusage(u.minor_faults)
        )?;
    }
    time_by_process(o, f)?;
    latencies(o, f)
}

/// Faults per process at exit: totals, then the busiest processes.
fn by_process(o: &mut String, p: &ProcessFaultTotals) -> Result {
    writeln!(
        o,
        "  by process, at exit   {:>12} minor {:>12} major",
        p.minor, p.major
    )?;
    writeln!(
        o,
        "  ({} processes, {} threads; includes get_user_pages faults)",
        p.processes, p.threads
    )?;
    writeln!(
        o,
        "  {:>8} {:<16} {:>7} {:>12} {:>12}",
        "pid", "comm", "threads", "minor", "major"
    )?;
    for t in &p.top {
        writeln!(
            o,
            "  {:>8} {:<16} {:>7} {:>12} {:>12}",
            t.pid, t.comm, t.threads, t.minor, t.major
        )?;
    }
    Ok(())
}

/// Fault time by process (--fault-latency), when any process faulted.
fn time_by_process(o: &mut String, f: &FaultReport) -> Result {
    let Some(times) = &f.process_time else {
        return Ok(());
    };
    if times.is_empty() {
        return Ok(());
    }
    writeln!(o)?;
    writeln!(o, "fault time by process (--fault-latency)")?;
    writeln!(
        o,
        "  {:>8} {:<16} {:>9} {:>7} {:>8} {:>7} {:>7}",
        "pid", "comm", "minor", "time", "major", "time", "max"
    )?;
    for t in times {
        writeln!(
            o,
            "  {:>8} {:<16} {:>9} {:>7} {:>8} {:>7} {:>7}",
            t.pid,
            t.comm,
            t.minor,
            fmt_ns(t.minor_ns),
            t.major,
            fmt_ns(t.major_ns),
            fmt_ns(t.max_ns)
        )?;
    }
    Ok(())
}

/// Minor and major fault latency histograms.
fn latencies(o: &mut String, f: &FaultReport) -> Result {
    for (title, s) in [
        ("minor fault latency", &f.minor_latency),
        ("major fault latency", &f.major_latency),
    ] {
        let Some(s) = s else { continue };
        writeln!(o)?;
        writeln!(
            o,
            "{title}: {} faults, {} in all",
            s.count,
            fmt_ns(s.total_ns)
        )?;
        writeln!(o, "  (faults taken through get_user_pages are not timed)")?;
        write_hist(o, s)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(attached: bool) -> String {
        let report = RunReport {
            attached,
            faults: FaultReport {
                major_all: Some(40),
                major_target: Some(25),
                minor_target: Some(900),
                ..Default::default()
            },
            ..RunReport::default()
        };
        let mut o = String::new();
        faults(&mut o, &report).expect("write");
        o
    }

    /// An attach has no rusage of its processes: the fault rows say so
    /// instead of setting a 0 beside the probes' counts.
    #[test]
    fn attached_fault_rows_have_no_rusage_zero() {
        let attached = counted(true);
        assert!(!attached.contains("   rusage "), "{attached}");
        assert_eq!(attached.matches("(attached: no rusage)").count(), 2);
        let run = counted(false);
        assert!(run.contains("major, target tasks             25   rusage"));
    }
}
