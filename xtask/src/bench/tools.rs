//! The configurations the bench compares, and how each is run and read.
//!
//! Every configuration runs the same command, `vmtrace run` of a bundled
//! workload in the same box: `--no-probes` (nothing attached) for the bare
//! run and under each peer tracer, with vmtrace's default probes for
//! vmtrace itself. The workload's own times come from the recording
//! vmtrace writes (rusage of the command); the peer's own cost from the
//! outside (its CPU time is the process tree's minus the workload's).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

/// A configuration of one round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    Bare,
    Vmtrace,
    Bpftrace,
    Perf,
    TraceCmd,
    /// Not a tracer: bpftrace with an empty program on each of vmtrace's
    /// hooks, run once with bpf_stats for the floor of the cost table
    /// (what any program costs there). Not in `ALL`: never timed.
    EmptyPrograms,
    /// As `EmptyPrograms`, each program reading the clock once
    /// (bpf_ktime_get_ns, as every timed vmtrace program does): the
    /// floor of a program that times a span there.
    ClockPrograms,
}

impl Tool {
    pub const ALL: [Tool; 5] = [
        Tool::Bare,
        Tool::Vmtrace,
        Tool::Bpftrace,
        Tool::Perf,
        Tool::TraceCmd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Tool::Bare => "bare",
            Tool::Vmtrace => "vmtrace",
            Tool::Bpftrace => "bpftrace",
            Tool::Perf => "perf-record",
            Tool::TraceCmd => "trace-cmd",
            Tool::EmptyPrograms => "empty programs",
            Tool::ClockPrograms => "clock-read programs",
        }
    }

    pub fn parse(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The program that must be installed, and its Debian package.
    pub fn needs(self) -> Option<(&'static str, &'static str)> {
        match self {
            Tool::Bare | Tool::Vmtrace => None,
            Tool::Bpftrace | Tool::EmptyPrograms | Tool::ClockPrograms => {
                Some(("bpftrace", "bpftrace"))
            }
            Tool::Perf => Some(("perf", "linux-perf")),
            Tool::TraceCmd => Some(("trace-cmd", "trace-cmd")),
        }
    }
}

/// The tracepoints every peer records: the reclaim and fault signals
/// vmtrace's default probes give (reclaim stalls and their latency, LRU
/// scanning and isolation, shrinker latency, kswapd, swap-out, swap
/// device I/O latency, faults per process).
pub const TRACEPOINTS: &[&str] = &[
    "vmscan:mm_vmscan_direct_reclaim_begin",
    "vmscan:mm_vmscan_direct_reclaim_end",
    "vmscan:mm_vmscan_memcg_reclaim_begin",
    "vmscan:mm_vmscan_memcg_reclaim_end",
    "vmscan:mm_vmscan_lru_shrink_inactive",
    "vmscan:mm_vmscan_kswapd_wake",
    "vmscan:mm_vmscan_write_folio",
    "block:block_rq_issue",
    "block:block_rq_complete",
    "exceptions:page_fault_user",
    "vmscan:mm_shrink_slab_start",
    "vmscan:mm_shrink_slab_end",
    "vmscan:mm_vmscan_lru_isolate",
];

/// The bpftrace script: the same histograms and counts, the way a
/// bpftrace user would write them (per-process fault counts need a
/// program on every user fault: bpftrace cannot read them at exit).
pub const BPFTRACE_SCRIPT: &str = r#"
tracepoint:vmscan:mm_vmscan_direct_reclaim_begin,
tracepoint:vmscan:mm_vmscan_memcg_reclaim_begin { @start[tid] = nsecs; }
tracepoint:vmscan:mm_vmscan_direct_reclaim_end /@start[tid]/ {
  @direct_reclaim_ns = hist(nsecs - @start[tid]); delete(@start[tid]); }
tracepoint:vmscan:mm_vmscan_memcg_reclaim_end /@start[tid]/ {
  @memcg_reclaim_ns = hist(nsecs - @start[tid]); delete(@start[tid]); }
tracepoint:vmscan:mm_vmscan_lru_shrink_inactive {
  @scanned[args->nid] = sum(args->nr_scanned);
  @reclaimed[args->nid] = sum(args->nr_reclaimed); }
tracepoint:vmscan:mm_vmscan_kswapd_wake { @kswapd_wakes = count(); }
tracepoint:vmscan:mm_vmscan_write_folio { @swap_outs = count(); }
tracepoint:block:block_rq_issue { @io[args->dev, args->sector] = nsecs; }
tracepoint:block:block_rq_complete /@io[args->dev, args->sector]/ {
  @io_ns = hist(nsecs - @io[args->dev, args->sector]);
  delete(@io[args->dev, args->sector]); }
tracepoint:exceptions:page_fault_user { @faults[comm] = count(); }
tracepoint:vmscan:mm_shrink_slab_start { @slab_start[tid] = nsecs; }
tracepoint:vmscan:mm_shrink_slab_end /@slab_start[tid]/ {
  @slab_ns = hist(nsecs - @slab_start[tid]); delete(@slab_start[tid]);
  @slab_freed = sum(args->retval); }
tracepoint:vmscan:mm_vmscan_lru_isolate {
  @isolate_scanned[args->highest_zoneidx, args->lru] = sum(args->nr_scanned);
  @isolate_skipped[args->highest_zoneidx, args->lru] = sum(args->nr_skipped);
  @isolate_taken[args->highest_zoneidx, args->lru] = sum(args->nr_taken); }
software:major-faults:1 { @major_faults[comm] = count(); }
"#;

/// The attach points of BPFTRACE_SCRIPT in script order: bpftrace 0.17
/// loads one program per attach point in this order (their run counts
/// match the events: checked against vmtrace's and perf's counts), and
/// the kernel only keeps 15 characters of their names. It loads a
/// software event after every tracepoint, wherever it stands in the
/// script: keep major-faults last.
pub const BPFTRACE_PROBES: &[&str] = &[
    "direct_reclaim_begin",
    "memcg_reclaim_begin",
    "direct_reclaim_end",
    "memcg_reclaim_end",
    "lru_shrink_inactive",
    "kswapd_wake",
    "write_folio",
    "block_rq_issue",
    "block_rq_complete",
    "page_fault_user",
    "shrink_slab_start",
    "shrink_slab_end",
    "lru_isolate",
    "major-faults",
];

/// vmtrace's default programs and the same hook as bpftrace names it, for
/// the empty programs of `Tool::EmptyPrograms`, in script order (bpftrace
/// 0.17 loads one program per probe in this order). Classic tracepoints
/// throughout: bpftrace 0.17 has no BTF tracepoints, which vmtrace uses
/// for block_rq_issue/complete and page_fault_kernel (a BTF tracepoint
/// skips the record copy, which bpf_stats does not time anyway).
pub const EMPTY_PROBES: &[(&str, &str)] = &[
    (
        "direct_reclaim_begin",
        "tracepoint:vmscan:mm_vmscan_direct_reclaim_begin",
    ),
    (
        "direct_reclaim_end",
        "tracepoint:vmscan:mm_vmscan_direct_reclaim_end",
    ),
    (
        "memcg_reclaim_begin",
        "tracepoint:vmscan:mm_vmscan_memcg_reclaim_begin",
    ),
    (
        "memcg_reclaim_end",
        "tracepoint:vmscan:mm_vmscan_memcg_reclaim_end",
    ),
    (
        "lru_shrink_inactive",
        "tracepoint:vmscan:mm_vmscan_lru_shrink_inactive",
    ),
    ("lru_isolate", "tracepoint:vmscan:mm_vmscan_lru_isolate"),
    (
        "lru_shrink_active",
        "tracepoint:vmscan:mm_vmscan_lru_shrink_active",
    ),
    ("kswapd_wake", "tracepoint:vmscan:mm_vmscan_kswapd_wake"),
    ("kswapd_sleep", "tracepoint:vmscan:mm_vmscan_kswapd_sleep"),
    ("wakeup_kswapd", "tracepoint:vmscan:mm_vmscan_wakeup_kswapd"),
    (
        "shrink_slab_start",
        "tracepoint:vmscan:mm_shrink_slab_start",
    ),
    ("shrink_slab_end", "tracepoint:vmscan:mm_shrink_slab_end"),
    ("write_folio", "tracepoint:vmscan:mm_vmscan_write_folio"),
    ("block_rq_issue", "tracepoint:block:block_rq_issue"),
    ("block_rq_complete", "tracepoint:block:block_rq_complete"),
    ("major_fault", "software:major-faults:1"),
];

/// The floor programs' script: `probe { }` per line, or with
/// `clock`, a program that reads the clock once and compares it with a
/// value it never has (so that the read cannot be optimised away).
pub fn floor_script(clock: bool) -> String {
    let body = if clock {
        "{ if (nsecs == 0) { exit(); } }"
    } else {
        "{ }"
    };
    EMPTY_PROBES
        .iter()
        .map(|(_, probe)| format!("{probe} {body}\n"))
        .collect()
}

/// Files under /proc and tracefs that trace-cmd 3.1 writes or reads
/// although no function tracing is asked for, and that kernel lockdown
/// ("integrity", as on these machines) refuses even to root: it then
/// exits ("Can't enable ftrace") or crashes. trace-cmd runs in a private
/// mount namespace with a dummy file over each (ftrace_enabled already
/// reads 1; the events it records are unaffected).
const TRACE_CMD_LOCKED: &[&str] = &[
    "/proc/sys/kernel/ftrace_enabled",
    "/sys/kernel/tracing/set_ftrace_pid",
    "/sys/kernel/tracing/set_ftrace_notrace_pid",
    "/sys/kernel/tracing/set_graph_function",
    "/sys/kernel/tracing/set_graph_notrace",
];

/// Where one run keeps its files.
pub struct RunFiles {
    pub recording: PathBuf,
    /// The peer's trace (perf.data, trace.dat) or output (bpftrace).
    pub trace: PathBuf,
    /// Directory of the dummy files for trace-cmd.
    pub scratch: PathBuf,
}

/// The command line of one run of `tool` on `workload` (a bundled
/// workload with its arguments).
pub fn command(
    tool: Tool,
    vmtrace: &Path,
    workload: &[String],
    files: &RunFiles,
    bpf_stats: bool,
) -> Command {
    let mut inner: Vec<String> = vec![
        vmtrace.display().to_string(),
        "run".into(),
        "-q".into(),
        "-o".into(),
        files.recording.display().to_string(),
    ];
    if tool == Tool::Vmtrace {
        if bpf_stats {
            inner.push("--bpf-stats".into());
        }
    } else {
        inner.push("--no-probes".into());
    }
    inner.extend(workload.iter().cloned());
    match tool {
        Tool::Bare | Tool::Vmtrace => {
            let mut c = Command::new(&inner[0]);
            c.args(&inner[1..]);
            c
        }
        Tool::Bpftrace | Tool::EmptyPrograms | Tool::ClockPrograms => {
            let script = match tool {
                Tool::Bpftrace => BPFTRACE_SCRIPT.to_string(),
                _ => floor_script(tool == Tool::ClockPrograms),
            };
            let mut c = Command::new("bpftrace");
            c.arg("-o")
                .arg(&files.trace)
                .arg("-e")
                .arg(script)
                .arg("-c")
                .arg(inner.join(" "));
            c
        }
        Tool::Perf => {
            let mut c = Command::new("perf");
            c.args(["record", "-a", "-o"]).arg(&files.trace);
            for tp in TRACEPOINTS {
                c.args(["-e", tp]);
            }
            c.args(["-e", "major-faults", "--"]).args(&inner);
            c
        }
        Tool::TraceCmd => {
            let mut script = String::from("set -e; ");
            for (i, path) in TRACE_CMD_LOCKED.iter().enumerate() {
                let dummy = files.scratch.join(format!("locked-{i}"));
                script.push_str(&format!(
                    "if [ -e {path} ]; then cat {path} > {d} 2>/dev/null || : > {d}; \
                     mount --bind {d} {path}; fi; ",
                    d = dummy.display()
                ));
            }
            script.push_str(&format!(
                "exec trace-cmd record -q -o {}",
                files.trace.display()
            ));
            for tp in TRACEPOINTS {
                script.push_str(&format!(" -e {tp}"));
            }
            script.push(' ');
            script.push_str(&inner.join(" "));
            let mut c = Command::new("unshare");
            c.args(["-m", "--propagation", "private", "sh", "-c", &script]);
            c
        }
    }
}

/// Events the peer says it lost (None: it does not say), and events it
/// recorded (None: not counted), read after the run.
pub fn lost_and_recorded(tool: Tool, trace: &Path, output: &str) -> (Option<u64>, Option<u64>) {
    match tool {
        Tool::Bare | Tool::Vmtrace => (None, None),
        // bpftrace aggregates in maps; it reports lost perf-buffer events
        // ("Lost N events") only when it prints through one.
        Tool::Bpftrace | Tool::EmptyPrograms | Tool::ClockPrograms => {
            (Some(numbers_after(output, "Lost ").iter().sum()), None)
        }
        Tool::Perf => {
            // "[ perf record: Captured and wrote 15 MB F (163924 samples) ]"
            let recorded = output
                .lines()
                .filter(|l| l.contains("perf record: Captured"))
                .find_map(|l| l.split('(').nth(1)?.split_whitespace().next()?.parse().ok());
            let stats = stdout_of(
                Command::new("perf")
                    .args(["report", "--stats", "-i"])
                    .arg(trace),
            );
            let lost: u64 = stats
                .lines()
                .filter(|l| l.contains("LOST"))
                .filter_map(|l| {
                    l.split(':')
                        .nth(1)?
                        .split_whitespace()
                        .next()?
                        .parse::<u64>()
                        .ok()
                })
                .sum::<u64>();
            (Some(lost), recorded)
        }
        Tool::TraceCmd => {
            let stats = stdout_of(
                Command::new("trace-cmd")
                    .args(["report", "--stat", "-i"])
                    .arg(trace),
            );
            let field = |name: &str| -> u64 {
                stats
                    .lines()
                    .filter_map(|l| l.trim().strip_prefix(name))
                    .filter_map(|v| v.trim().parse::<u64>().ok())
                    .sum()
            };
            // What the kernel's ring buffer says it lost (overwritten or
            // dropped); events it recorded are counted from the trace.
            let lost = field("overrun:") + field("commit overrun:") + field("dropped events:");
            (Some(lost), trace_cmd_events(trace))
        }
    }
}

/// What a command printed on stdout (empty when it could not run).
fn stdout_of(cmd: &mut Command) -> String {
    cmd.output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Events in a trace-cmd trace (one line each in `trace-cmd report`).
fn trace_cmd_events(trace: &Path) -> Option<u64> {
    let mut child = Command::new("trace-cmd")
        .args(["report", "-q", "-i"])
        .arg(trace)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let out = child.stdout.take()?;
    let mut n = 0u64;
    for line in std::io::BufRead::lines(std::io::BufReader::new(out)) {
        match line {
            // "comm-pid [cpu] time: event: fields"; headers have no "] ".
            Ok(l) if l.contains("] ") && l.contains(": ") => n += 1,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    child.wait().ok()?.success().then_some(n)
}

/// Every number that follows `prefix` in `text` ("Lost 12 events").
fn numbers_after(text: &str, prefix: &str) -> Vec<u64> {
    text.match_indices(prefix)
        .filter_map(|(i, _)| {
            text[i + prefix.len()..]
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_round_trip() {
        for t in Tool::ALL {
            assert_eq!(Tool::parse(t.name()), Some(t));
        }
        assert_eq!(Tool::parse("strace"), None);
    }

    #[test]
    fn lost_events_are_read_from_bpftrace_output() {
        assert_eq!(
            numbers_after("Lost 12 events\nx Lost 3 events", "Lost "),
            [12, 3]
        );
        assert!(numbers_after("Attaching 12 probes...", "Lost ").is_empty());
    }

    #[test]
    fn every_configuration_runs_the_same_vmtrace_command() {
        let files = RunFiles {
            recording: "/r.json".into(),
            trace: "/t".into(),
            scratch: "/s".into(),
        };
        let w = vec!["faults".to_string()];
        for t in Tool::ALL {
            let c = command(t, Path::new("/v"), &w, &files, false);
            let line = crate::util::show(&c);
            assert!(line.contains("/v run -q -o /r.json"), "{line}");
            assert_eq!(line.contains("--no-probes"), t != Tool::Vmtrace, "{line}");
            assert!(line.ends_with("faults"), "{line}");
        }
    }
}
