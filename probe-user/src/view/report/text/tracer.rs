//! vmtrace's own side of the text report: what its eBPF programs cost,
//! its own CPU time and memory, the events it could not account for,
//! and the metrics it could not measure (or measured only in part).

use crate::model::format::{fmt_ns, write_wrapped};
use std::fmt::{Result, Write as _};

use crate::{model::format::human, model::report::RunReport};

/// eBPF program cost (--bpf-stats), costliest program first.
pub(super) fn program_costs(o: &mut String, report: &RunReport) -> Result {
    let Some(costs) = &report.program_costs else {
        return Ok(());
    };
    writeln!(o)?;
    writeln!(
        o,
        "eBPF program cost (--bpf-stats; kernel.bpf_stats_enabled)"
    )?;
    writeln!(
        o,
        "  {:<28} {:>12} {:>10} {:>10}",
        "program", "runs", "total", "per run"
    )?;
    let mut rows: Vec<_> = costs.iter().filter(|c| c.runs > 0).collect();
    rows.sort_by_key(|c| std::cmp::Reverse(c.run_ns));
    for c in rows {
        writeln!(
            o,
            "  {:<28} {:>12} {:>10} {:>10}",
            c.program,
            c.runs,
            fmt_ns(c.run_ns),
            format!("{}ns", c.run_ns / c.runs.max(1))
        )?;
    }
    Ok(())
}

/// vmtrace's attach time, CPU time and peak RSS.
pub(super) fn collector(o: &mut String, report: &RunReport) -> Result {
    let Some(c) = &report.collector else {
        return Ok(());
    };
    writeln!(o)?;
    writeln!(
        o,
        "vmtrace itself: attach {:.2} s, CPU {:.2} s user + {:.2} s sys,",
        c.attach_s, c.user_s, c.sys_s
    )?;
    writeln!(o, "  peak RSS {}", human(c.max_rss_bytes))
}

/// Warnings: rows evicted from full tables, events the kernel skipped
/// (nested BPF programs), and events not accounted for.
pub(super) fn dropped(o: &mut String, report: &RunReport) -> Result {
    let d = &report.dropped;
    if !d.evicted.is_empty() {
        writeln!(o)?;
        let list: Vec<String> = d.evicted.iter().map(|(m, n)| format!("{m} {n}")).collect();
        let text = format!(
            "warning: rows evicted from full tables (their totals are short): {}",
            list.join(", ")
        );
        write_wrapped(o, &text)?;
    }
    if !d.program_misses.is_empty() {
        writeln!(o)?;
        let list: Vec<String> = d
            .program_misses
            .iter()
            .map(|(p, n)| format!("{p} {n}"))
            .collect();
        let text = format!(
            "warning: events skipped by the kernel (program would have nested \
             in another BPF program on its CPU): {}",
            list.join(", ")
        );
        write_wrapped(o, &text)?;
    }
    not_accounted(o, report)
}

/// `warning: events not accounted: ...`: map-full and mismatched events.
fn not_accounted(o: &mut String, report: &RunReport) -> Result {
    let d = &report.dropped;
    let lost = d.reclaim_start_map_full
        + d.fault_start_map_full
        + d.node_out_of_range
        + d.oom_records_lost
        + d.swap_io_map_full
        + d.swap_io_unpaired;
    if lost == 0 && d.reclaim_end_without_begin == 0 {
        return Ok(());
    }
    writeln!(o)?;
    writeln!(
        o,
        "warning: events not accounted: {} reclaim starts (no task storage),",
        d.reclaim_start_map_full
    )?;
    writeln!(
        o,
        "  {} fault starts (map full), {} bad node ids, {} reclaim ends",
        d.fault_start_map_full, d.node_out_of_range, d.reclaim_end_without_begin
    )?;
    writeln!(o, "  without a begin (reclaims already running at attach),")?;
    writeln!(
        o,
        "  {} OOM victim records (ring buffer full), {} swap I/Os (queue",
        d.oom_records_lost, d.swap_io_map_full
    )?;
    writeln!(
        o,
        "  or tag past the table), {} swap I/O issues and completions",
        d.swap_io_unpaired
    )?;
    writeln!(o, "  that did not pair (not timed)")
}

/// `notice: <metric> unavailable|incomplete: <reason>` per metric.
pub(super) fn notices(o: &mut String, report: &RunReport) -> Result {
    if report.unavailable.is_empty() && report.partial.is_empty() {
        return Ok(());
    }
    writeln!(o)?;
    let notices = report
        .unavailable
        .iter()
        .map(|u| (u, "unavailable"))
        .chain(report.partial.iter().map(|u| (u, "incomplete")));
    for (u, what) in notices {
        write_wrapped(o, &format!("notice: {} {what}: {}", u.metric, u.reason))?;
    }
    Ok(())
}
