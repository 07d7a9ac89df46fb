//! The plain-text report: ASCII, at most 72 columns, so that it survives
//! a mailing list. Only formatting: every number comes from the model in
//! `report`. One function per section, in the order `write_text` lists
//! them; the sections live by signal family in the submodules. This file
//! holds the sections about the run itself: the lines the mails quote,
//! what ran where, how it ended, and the OOM victims.

use std::fmt::{Result, Write as _};

use crate::{
    model::format::{human, write_wrapped},
    model::report::{BoxReport, CgroupVersion, Exit, RunReport},
};

mod causes;
mod counters;
mod delays;
mod faults;
pub(super) mod hist;
mod kswapd;
mod lru;
mod membox;
mod names;
mod oom;
mod profile;
mod reclaim;
mod swap;
mod timeline;
mod tracer;
mod zones;

use crate::model::report::signal_name;

/// A section of the report: writes its lines (none when it has nothing).
type Section = fn(&mut String, &RunReport) -> Result;

/// The sections of a traced run after its outcome, in print order.
const MEASURED: &[Section] = &[
    reclaim::stalls,
    reclaim::top_stallers,
    reclaim::entries,
    profile::inside_stalls,
    reclaim::orders,
    lru::shrink_inactive,
    lru::priorities,
    lru::shrink_active,
    reclaim::throttle,
    reclaim::compaction,
    counters::compaction_counters,
    counters::thp,
    reclaim::slab_shrink,
    swap::swap_out,
    swap::destinations,
    swap::swap_io,
    kswapd::kswapd,
    oom_victims,
    oom::reaper,
    zones::zones,
    timeline::timeline,
    counters::lru_sizes,
    faults::faults,
    causes::fault_causes,
    delays::delays,
    tracer::program_costs,
    tracer::collector,
    tracer::dropped,
    tracer::notices,
];

/// The whole report, section by section.
pub(super) fn write_text(o: &mut String, report: &RunReport) -> Result {
    quoted_lines(o, report)?;
    identity(o, report)?;
    outcome(o, report)?;
    if report.untraced {
        return untraced(o);
    }
    for section in MEASURED {
        section(o, report)?;
    }
    Ok(())
}

/// The lines the mails quote first: the OOM verdict, csh's `time` line
/// (not when attached) and kswapd's CPU time; then a blank line.
fn quoted_lines(o: &mut String, report: &RunReport) -> Result {
    for line in super::oom_lines(report) {
        writeln!(o, "{line}")?;
    }
    if !report.attached {
        writeln!(o, "{}", super::time_line(report))?;
    }
    if let Some(line) = super::kswapd_line(report) {
        writeln!(o, "{line}")?;
    }
    writeln!(o)
}

/// What ran where: vmtrace and kernel versions, the command, the user
/// it ran as, the memory box and the target; then a blank line.
fn identity(o: &mut String, report: &RunReport) -> Result {
    writeln!(
        o,
        "vmtrace {} on Linux {}",
        report.vmtrace_version, report.kernel_release
    )?;
    write_wrapped(o, &format!("command: {}", report.command.join(" ")))?;
    if let Some(user) = &report.run_as {
        writeln!(o, "run as: {user}, who ran sudo")?;
    }
    if let Some(b) = &report.membox {
        write_wrapped(o, &box_line(b))?;
    }
    write_wrapped(o, &format!("target: {}", report.target))?;
    writeln!(o)
}

/// `box: memory 512 MiB (cgroup v2), swapfile none added`.
fn box_line(b: &BoxReport) -> String {
    let mem = b.mem_limit_bytes.map_or("no limit".to_string(), |m| {
        format!(
            "{} (cgroup {})",
            human(m),
            b.cgroup_version.map_or("?", |v| match v {
                CgroupVersion::V1 => "v1",
                CgroupVersion::V2 => "v2",
            })
        )
    });
    let swap = b.swap_bytes.map_or("none added".to_string(), human);
    format!("box: memory {mem}, swapfile {swap}")
}

/// How the run ended: exit status, times, rusage faults and memory (or,
/// attached, only how long), and the swap traffic from /proc/vmstat.
fn outcome(o: &mut String, report: &RunReport) -> Result {
    let (e, u) = (&report.exit, &report.usage);
    if report.attached {
        // Not vmtrace's children: no exit status, no rusage.
        let how = if e.interrupted {
            "stopped by a signal"
        } else {
            "ended"
        };
        writeln!(o, "attached: {:.2} s, {how}", u.wall_s)?;
    } else {
        writeln!(o, "exit:     {}", exit_status(e))?;
        writeln!(
            o,
            "time:     {:.2} s elapsed, {:.2} s user, {:.2} s system",
            u.wall_s, u.user_s, u.sys_s
        )?;
        writeln!(
            o,
            "faults:   {} minor, {} major (rusage)",
            u.minor_faults, u.major_faults
        )?;
        writeln!(o, "{}", memory_line(report))?;
        membox::box_counters(o, report)?;
    }
    let v = &report.vmstat;
    write!(
        o,
        "swap:     {} pages out, {} pages in (/proc/vmstat)",
        v.pswpout, v.pswpin
    )?;
    // Pages zswap took never reach pswpout/pswpin: say so beside them.
    match report.swap_causes.as_ref().filter(|c| c.zswap_active()) {
        Some(c) => writeln!(
            o,
            "\n          zswap {} pages out, {} pages in (zswpout/zswpin)",
            c.zswpout.unwrap_or(0),
            c.zswpin.unwrap_or(0)
        ),
        None => writeln!(o),
    }
}

/// `exited with status 0`, `killed by signal 9 (SIGKILL), OOM-killed...`.
fn exit_status(e: &Exit) -> String {
    let mut status = match (e.code, e.signal) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("killed by signal {s} ({})", signal_name(s)),
        _ => "unknown".into(),
    };
    if e.oom_killed {
        status.push_str(", OOM-killed by the box's memcg");
    }
    if e.interrupted {
        status.push_str(" (vmtrace interrupted)");
    }
    if e.background_killed > 0 {
        let _ = write!(
            status,
            ";\n          {} process(es) it left running were killed \
             (--wait-background)",
            e.background_killed
        );
    }
    status
}

/// `memory:   max RSS ..., box peak ..., N OOM kill(s)`.
fn memory_line(report: &RunReport) -> String {
    let mut mem = format!("memory:   max RSS {}", human(report.usage.max_rss_bytes));
    if let Some(b) = &report.membox {
        if let Some(p) = b.peak_bytes {
            let _ = write!(mem, ", box peak {}", human(p));
        }
        if let Some(k) = b.oom_kills {
            let _ = write!(mem, ", {k} OOM kill(s)");
        }
    }
    mem
}

/// The end of an untraced (--no-probes) run's report.
fn untraced(o: &mut String) -> Result {
    writeln!(o)?;
    writeln!(
        o,
        "untraced (--no-probes): nothing was attached; times, rusage"
    )?;
    writeln!(o, "and /proc/vmstat only (a baseline for overhead).")
}

/// The OOM killer's victims, the command's starred.
fn oom_victims(o: &mut String, report: &RunReport) -> Result {
    let Some(victims) = &report.oom_victims else {
        return Ok(());
    };
    if victims.is_empty() {
        return Ok(());
    }
    writeln!(o)?;
    writeln!(o, "OOM victims (* = a process of the command)")?;
    if victims.iter().any(|v| !v.victim_known) {
        writeln!(
            o,
            "  (whose victim: unknown without the process-exit probe)"
        )?;
    }
    writeln!(
        o,
        "  {:>8} {:>8} {:<16} {:>10} {:>10} {:>10}",
        "time", "pid", "comm", "anon-rss", "file-rss", "total-vm"
    )?;
    for k in victims {
        writeln!(
            o,
            "{} {:>7.2}s {:>8} {:<16} {:>10} {:>10} {:>10}",
            if k.target && k.victim_known { '*' } else { ' ' },
            k.time_s,
            k.pid,
            k.comm,
            human(k.anon_rss_kb * 1024),
            human(k.file_rss_kb * 1024),
            human(k.total_vm_kb * 1024)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_command_left_running_is_said_on_the_exit_line() {
        let mut e = Exit {
            code: Some(0),
            signal: None,
            oom_killed: false,
            interrupted: false,
            background_killed: 0,
        };
        assert_eq!(exit_status(&e), "exited with status 0");
        e.background_killed = 3;
        let line = exit_status(&e);
        assert_eq!(
            line,
            "exited with status 0;\n          3 process(es) it left running \
             were killed (--wait-background)"
        );
        let printed = format!("exit:     {line}");
        assert!(printed.lines().all(|l| l.len() <= 72), "{printed}");
    }
}
