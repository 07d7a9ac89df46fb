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

use crate::signals::SIGNALS;

/// A configuration of one round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    Bare,
    Vmtrace,
    /// vmtrace with `--no-stacks`: what the stacks of "where reclaim was
    /// entered" cost, against `Vmtrace` in the same bench.
    VmtraceNoStacks,
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
    pub const ALL: [Tool; 6] = [
        Tool::Bare,
        Tool::Vmtrace,
        Tool::VmtraceNoStacks,
        Tool::Bpftrace,
        Tool::Perf,
        Tool::TraceCmd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Tool::Bare => "bare",
            Tool::Vmtrace => "vmtrace",
            Tool::VmtraceNoStacks => "vmtrace-no-stacks",
            Tool::Bpftrace => "bpftrace",
            Tool::Perf => "perf-record",
            Tool::TraceCmd => "trace-cmd",
            Tool::EmptyPrograms => "empty programs",
            Tool::ClockPrograms => "clock-read programs",
        }
    }

    /// vmtrace itself (with its probes), in either configuration.
    pub fn is_vmtrace(self) -> bool {
        matches!(self, Tool::Vmtrace | Tool::VmtraceNoStacks)
    }

    pub fn parse(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The program that must be installed, and its Debian package.
    pub fn needs(self) -> Option<(&'static str, &'static str)> {
        match self {
            Tool::Bare | Tool::Vmtrace | Tool::VmtraceNoStacks => None,
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
/// Each attach point starts a line and is a signal of SIGNALS, which
/// names its program (a unit test holds the two together).
///
/// Where a reclaim stall's time went, as vmtrace's `sched_split` splits
/// it (probe-ebpf/src/sched.rs): a task is in a stall from its reclaim
/// begin to its end (`@in_stall[tid]`: 1 direct, 2 memcg, vmtrace's
/// split families), and `@state[tid]` says where it is since
/// `@since[tid]` (0 on a CPU, 1 runnable, 2 blocked). sched_switch ends
/// prev's stretch on the CPU: runnable when preempted or TASK_RUNNING
/// (the classic tracepoint's prev_state has no state bit below
/// TASK_REPORT_MAX, 0x100, which marks a preemption: "R+"), else
/// blocked; and next's wait, runnable (or blocked: a wake-up missed).
/// sched_wakeup turns blocked into runnable; the reclaim end adds the
/// last stretch on the CPU. Each stretch goes to `@split[kind, state]`
/// as it ends. vmtrace hooks no sched_wakeup_new (a new task is in no
/// stall), nor does this. What vmtrace has beyond it: the blocked
/// part's I/O waits, the run_delay cross-check, the split per way in
/// (stack, GFP), the target's I/O-wait and memory-stall sleeps outside
/// the stalls and who held the CPU (probe-ebpf contention): the
/// script's sched programs do less than vmtrace's, not more.
///
/// The stack is taken at the reclaim's end, after the stall is timed,
/// as vmtrace does since issue 44 (probe-ebpf/src/entry.rs): the begin
/// and end tracepoints sit in the same function, so the callers are the
/// begin's, and the walk (microseconds) lies outside the stall the
/// histograms and the split time, in both tools.
///
/// The profile samples the CPU clock at vmtrace's PROFILE_HZ on every
/// CPU and keeps the kernel stack of a task inside a stall.
pub const BPFTRACE_SCRIPT: &str = r#"
tracepoint:vmscan:mm_vmscan_direct_reclaim_begin {
  @start[tid] = nsecs; @gfp[tid] = args->gfp_flags;
  @in_stall[tid] = 1; @since[tid] = nsecs; }
tracepoint:vmscan:mm_vmscan_memcg_reclaim_begin {
  @start[tid] = nsecs; @gfp[tid] = args->gfp_flags;
  @in_stall[tid] = 2; @since[tid] = nsecs; }
tracepoint:vmscan:mm_vmscan_direct_reclaim_end /@start[tid]/ {
  $now = nsecs; $ns = $now - @start[tid];
  @direct_reclaim_ns = hist($ns);
  @split[1, 0] = sum($now - @since[tid]);
  @entries[kstack, @gfp[tid]] = sum($ns);
  delete(@start[tid]); delete(@gfp[tid]);
  delete(@in_stall[tid]); delete(@since[tid]); delete(@state[tid]); }
tracepoint:vmscan:mm_vmscan_memcg_reclaim_end /@start[tid]/ {
  $now = nsecs; $ns = $now - @start[tid];
  @memcg_reclaim_ns = hist($ns);
  @split[2, 0] = sum($now - @since[tid]);
  @entries[kstack, @gfp[tid]] = sum($ns);
  delete(@start[tid]); delete(@gfp[tid]);
  delete(@in_stall[tid]); delete(@since[tid]); delete(@state[tid]); }
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
tracepoint:sched:sched_switch {
  $p = (uint64)args->prev_pid; $n = (uint64)args->next_pid;
  $kp = @in_stall[$p]; $kn = @in_stall[$n];
  if ($kp) {
    @split[$kp, 0] = sum(nsecs - @since[$p]);
    @state[$p] = (args->prev_state & 0xff) ? 2 : 1; @since[$p] = nsecs; }
  if ($kn) {
    @split[$kn, @state[$n]] = sum(nsecs - @since[$n]);
    @state[$n] = 0; @since[$n] = nsecs; } }
tracepoint:sched:sched_wakeup {
  $t = (uint64)args->pid;
  if (@state[$t] == 2) {
    @split[@in_stall[$t], 2] = sum(nsecs - @since[$t]);
    @state[$t] = 1; @since[$t] = nsecs; } }
profile:hz:499 /@in_stall[tid]/ { @prof[kstack] = count(); }
software:major-faults:1 { @major_faults[comm] = count(); }
"#;

/// The kinds of attach point the bench's scripts use.
const PROBE_KINDS: [&str; 3] = ["tracepoint:", "profile:", "software:"];

/// The attach points of a bpftrace script (one at the start of a line)
/// in the order bpftrace 0.17 loads their programs, one per attach
/// point: script order, but software events after every tracepoint and
/// profile, in reverse script order. bpftrace 0.17 loads
/// each program as it attaches it (src/attached_probe.cpp, in
/// AttachedProbe's constructor), and BPFtrace::run attaches in two
/// passes (src/bpftrace.cpp, attach_reverse): first, in script order,
/// tracepoints, profile, interval, hardware probes (among others);
/// then, in reverse script order, software events, kprobes, uprobes.
/// A profile probe is one program on every CPU's perf event. Checked
/// against vmtrace's and perf's counts: the programs' run counts match
/// their events.
fn load_order(script: &str) -> Vec<&str> {
    let points: Vec<&str> = script
        .lines()
        .filter(|l| PROBE_KINDS.iter().any(|k| l.starts_with(k)))
        .filter_map(|l| l.split([',', ' ', '/', '{']).next())
        .collect();
    let reverse = |p: &&str| p.starts_with("software:");
    let first = points.iter().filter(|p| !reverse(p));
    let then = points.iter().rev().filter(|p| reverse(p));
    first.chain(then).copied().collect()
}

/// The names of the programs a configuration's bpftrace loads, in load
/// order: bpftrace's names for its script, vmtrace's for the floor
/// programs ("?" for a hook with no signal).
pub fn program_names(tool: Tool) -> Vec<&'static str> {
    let floor = matches!(tool, Tool::EmptyPrograms | Tool::ClockPrograms);
    let script = if floor {
        floor_script(tool == Tool::ClockPrograms)
    } else {
        BPFTRACE_SCRIPT.to_string()
    };
    load_order(&script)
        .into_iter()
        .map(|hook| {
            let s = SIGNALS.iter().find(|s| s.hook == hook);
            let name = if floor {
                s.and_then(|s| s.vmtrace)
            } else {
                s.and_then(|s| s.bpftrace)
            };
            name.unwrap_or("?")
        })
        .collect()
}

/// The floor programs' script: one on each of vmtrace's hooks (in load
/// order), `probe { }`, or with `clock`, a program that reads the clock
/// once and compares it with a value it never has (so that the read
/// cannot be optimised away).
pub fn floor_script(clock: bool) -> String {
    let body = if clock {
        "{ if (nsecs == 0) { exit(); } }"
    } else {
        "{ }"
    };
    let mut hooks: Vec<&str> = SIGNALS
        .iter()
        .filter(|s| s.vmtrace.is_some())
        .map(|s| s.hook)
        .collect();
    hooks.sort_by_key(|h| h.starts_with("software:"));
    hooks.iter().map(|h| format!("{h} {body}\n")).collect()
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
    if tool.is_vmtrace() {
        if bpf_stats {
            inner.push("--bpf-stats".into());
        }
        if tool == Tool::VmtraceNoStacks {
            inner.push("--no-stacks".into());
        }
    } else {
        inner.push("--no-probes".into());
    }
    inner.extend(workload.iter().cloned());
    match tool {
        Tool::Bare | Tool::Vmtrace | Tool::VmtraceNoStacks => {
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
        Tool::Bare | Tool::Vmtrace | Tool::VmtraceNoStacks => (None, None),
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
    fn bpftraces_programs_are_the_signals_it_records_in_load_order() {
        // Each attach point of the script is a signal's, and each signal
        // bpftrace records is in the script: no program goes unnamed.
        let mut hooks = load_order(BPFTRACE_SCRIPT);
        hooks.sort();
        let mut recorded: Vec<&str> = SIGNALS
            .iter()
            .filter(|s| s.bpftrace.is_some())
            .map(|s| s.hook)
            .collect();
        recorded.sort();
        assert_eq!(hooks, recorded);
        assert_eq!(
            program_names(Tool::Bpftrace),
            [
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
                "sched_switch",
                "sched_wakeup",
                "profile",
                "major-faults",
            ]
        );
    }

    #[test]
    fn software_events_load_last_in_reverse_and_profiles_in_place() {
        let script = "software:a:1 { }\ntracepoint:x:y,\ntracepoint:x:z { }\n\
                      profile:hz:99 { }\nsoftware:b:1 { }\n";
        assert_eq!(
            load_order(script),
            [
                "tracepoint:x:y",
                "tracepoint:x:z",
                "profile:hz:99",
                "software:b:1",
                "software:a:1"
            ]
        );
    }

    #[test]
    fn the_floor_has_a_program_on_each_of_vmtraces_hooks() {
        for tool in [Tool::EmptyPrograms, Tool::ClockPrograms] {
            let names = program_names(tool);
            let vmtrace: Vec<&str> = SIGNALS.iter().filter_map(|s| s.vmtrace).collect();
            assert_eq!(names.len(), vmtrace.len());
            assert!(names.iter().all(|n| vmtrace.contains(n)), "{names:?}");
            assert_eq!(names.last(), Some(&"major_fault"));
        }
        assert!(floor_script(true).starts_with(
            "tracepoint:vmscan:mm_vmscan_direct_reclaim_begin { if (nsecs == 0) { exit(); } }\n"
        ));
    }

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
            assert_eq!(line.contains("--no-probes"), !t.is_vmtrace(), "{line}");
            assert!(line.ends_with("faults"), "{line}");
        }
    }
}
