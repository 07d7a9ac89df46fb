//! One run of one configuration, measured: the workload's times from the
//! recording vmtrace writes, the tracer's own CPU time, peak RSS and lost
//! events, and with bpf_stats on, its eBPF programs' run time.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::{Context, Result, bail};
use vmtrace_model::{recording::Recording, report::RunReport};

use super::{
    Measured,
    tools::{self, RunFiles, Tool},
};
use crate::util;

/// One run; a run the box's OOM killer ended (qsbench in 256 MiB, about
/// one in three here) is run again, up to three times in all.
pub(super) fn run_retrying(
    tool: Tool,
    vmtrace: &Path,
    args: &[String],
    scratch: &Path,
    bpf_stats: bool,
) -> Result<Option<Measured>> {
    for attempt in 1..=3 {
        match run_once(tool, vmtrace, args, scratch, bpf_stats)? {
            Ok(m) => return Ok(Some(m)),
            Err(why) => eprintln!("bench: {} attempt {attempt}: {why}", tool.name()),
        }
    }
    Ok(None)
}

/// Runs one configuration: Ok(measured), or Err(why the run does not
/// count) for a run that failed (OOM kill).
fn run_once(
    tool: Tool,
    vmtrace: &Path,
    args: &[String],
    scratch: &Path,
    bpf_stats: bool,
) -> Result<std::result::Result<Measured, String>> {
    let files = RunFiles {
        recording: scratch.join("run.vmtrace.json"),
        trace: scratch.join(format!("{}.trace", tool.name())),
        scratch: scratch.to_path_buf(),
    };
    let _ = std::fs::remove_file(&files.recording);
    let _ = std::fs::remove_file(&files.trace);
    let _bpf_stats = if bpf_stats && !tool.is_vmtrace() {
        Some(Sysctl::set("kernel/bpf_stats_enabled", "1")?)
    } else {
        None
    };
    let mut cmd = tools::command(tool, vmtrace, args, &files, bpf_stats);
    let log = scratch.join("output.txt");
    let log_file = std::fs::File::create(&log)?;
    cmd.stdout(log_file.try_clone()?).stderr(log_file);
    let child = cmd
        .spawn()
        .with_context(|| format!("cannot start `{}`", util::show(&cmd)))?;
    let watched = watch(tool, child.id() as i32, bpf_stats)?;
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    let report = match read_report(tool, &files, watched.status, &output)? {
        Ok(report) => report,
        Err(why) => return Ok(Err(why)),
    };
    let mut m = workload_usage(&report);
    match tool {
        Tool::Bare => {}
        Tool::Vmtrace | Tool::VmtraceNoStacks => vmtrace_costs(&mut m, &report),
        _ => peer_costs(&mut m, tool, &files, &output, watched),
    }
    let _ = std::fs::remove_file(&files.trace);
    Ok(Ok(m))
}

/// What watching a run's process gave.
struct Watched {
    /// Its wait status and resource usage (its whole process tree).
    status: i32,
    ru: libc::rusage,
    /// A peer's peak RSS (tool_rss), sampled every 100 ms.
    peak_rss: u64,
    /// A peer's eBPF programs by id: (runs, run ns), with bpf_stats on.
    programs: BTreeMap<u32, (u64, u64)>,
}

/// Waits for the run's process, sampling a peer's RSS (and with
/// bpf_stats, its programs' counters) every 100 ms until it exits.
fn watch(tool: Tool, pid: i32, bpf_stats: bool) -> Result<Watched> {
    let mut peak_rss = 0u64;
    let mut programs: BTreeMap<u32, (u64, u64)> = Default::default();
    let (status, ru) = loop {
        // SAFETY: zeroed rusage is a valid out-parameter.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let mut status = 0;
        // SAFETY: our own child, valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            break (status, ru);
        }
        if r < 0 {
            bail!(
                "waiting for {}: {}",
                tool.name(),
                std::io::Error::last_os_error()
            );
        }
        if tool != Tool::Bare && !tool.is_vmtrace() {
            peak_rss = peak_rss.max(tool_rss(pid));
            if bpf_stats {
                for (id, runs, ns) in bpf_programs(pid) {
                    programs.insert(id, (runs, ns));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Ok(Watched {
        status,
        ru,
        peak_rss,
        programs,
    })
}

/// The report of the run's recording: Ok(report), Err(why the run does
/// not count) when the box OOM-killed the workload; an error when there
/// is no recording, it does not read as one, or the workload failed
/// otherwise.
fn read_report(
    tool: Tool,
    files: &RunFiles,
    status: i32,
    output: &str,
) -> Result<std::result::Result<RunReport, String>> {
    let recording = match std::fs::read(&files.recording) {
        Ok(b) => Recording::from_bytes(&b).context("reading the run's recording")?,
        Err(_) => bail!(
            "{} produced no recording (exit status {status}); its output:\n{output}",
            tool.name()
        ),
    };
    let Some(run) = recording.runs.into_iter().next() else {
        bail!(
            "{}: the recording holds no run; output:\n{output}",
            tool.name()
        );
    };
    let report = run.report;
    if report.exit.oom_killed {
        return Ok(Err("OOM-killed by the box; running it again".into()));
    }
    if report.exit.code != Some(0) {
        bail!(
            "{}: the workload failed ({:?}); output:\n{output}",
            tool.name(),
            report.exit
        );
    }
    Ok(Ok(report))
}

/// The workload's own times and faults (rusage of the command).
fn workload_usage(report: &RunReport) -> Measured {
    let usage = &report.usage;
    Measured {
        wall_s: usage.wall_s,
        user_s: usage.user_s,
        sys_s: usage.sys_s,
        minor_faults: usage.minor_faults,
        ..Default::default()
    }
}

/// vmtrace's own cost, from its report: the collector's CPU, RSS and
/// attach time, the events it dropped, and its programs' run time.
fn vmtrace_costs(m: &mut Measured, report: &RunReport) {
    if let Some(c) = &report.collector {
        m.tool_cpu_s = Some(c.user_s + c.sys_s);
        m.tool_rss = Some(c.max_rss_bytes);
        m.attach_s = Some(c.attach_s);
    }
    let d = &report.dropped;
    let lost: u64 = d
        .program_misses
        .iter()
        .chain(&d.evicted)
        .map(|(_, n)| n)
        .sum();
    m.lost = Some(lost);
    for p in report.program_costs.iter().flatten() {
        m.programs.push((p.program.clone(), p.runs, p.run_ns));
    }
}

/// A peer's own cost, from the outside: the process tree's CPU minus the
/// workload's, its peak RSS, what it lost and recorded, and its programs
/// (numbered in load order, each named by its probe).
fn peer_costs(m: &mut Measured, tool: Tool, files: &RunFiles, output: &str, w: Watched) {
    // The tree's CPU minus the workload's; the bare vmtrace around
    // it costs a few ms (creating the box aside, which is sys
    // time of its own and the same in every configuration).
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let total = tv(w.ru.ru_utime) + tv(w.ru.ru_stime);
    m.tool_cpu_s = Some((total - m.user_s - m.sys_s).max(0.0));
    m.tool_rss = Some(w.peak_rss);
    let (lost, recorded) = tools::lost_and_recorded(tool, &files.trace, output);
    m.lost = lost;
    m.recorded = recorded;
    let names = tools::program_names(tool);
    m.programs = w
        .programs
        .into_iter()
        .enumerate()
        .map(|(i, (_, (runs, ns)))| {
            let probe = names.get(i).copied().unwrap_or("?");
            (format!("{} ({probe})", i + 1), runs, ns)
        })
        .collect();
}

/// Peak RSS of a tracer: its own process and its children that are not
/// the traced command (trace-cmd forks a recorder per CPU).
fn tool_rss(pid: i32) -> u64 {
    let hwm = |p: &str| -> u64 {
        std::fs::read_to_string(format!("/proc/{p}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            })
            .map_or(0, |kib| kib * 1024)
    };
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    let mut total = hwm(&pid.to_string());
    for c in children.split_whitespace() {
        let comm = std::fs::read_to_string(format!("/proc/{c}/comm")).unwrap_or_default();
        if comm.trim() != "vmtrace" {
            total += hwm(c);
        }
    }
    total
}

/// A process's eBPF programs: (id, runs, run ns) from its fds' fdinfo.
fn bpf_programs(pid: i32) -> Vec<(u32, u64, u64)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let Ok(info) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        let field = |name: &str| -> Option<u64> {
            info.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse().ok())
        };
        if let (Some(id), Some(runs), Some(ns)) =
            (field("prog_id:"), field("run_cnt:"), field("run_time_ns:"))
        {
            out.push((id as u32, runs, ns));
        }
    }
    out
}

/// A sysctl set for a while, restored when dropped.
struct Sysctl {
    path: PathBuf,
    old: String,
}

impl Sysctl {
    fn set(name: &str, value: &str) -> Result<Sysctl> {
        let path = Path::new("/proc/sys").join(name);
        let old = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        std::fs::write(&path, value).with_context(|| format!("setting {}", path.display()))?;
        Ok(Sysctl { path, old })
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.path, self.old.trim());
    }
}
