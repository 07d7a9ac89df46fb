//! The probes' options, flattened into `run` and `attach`: one clap
//! struct, so that a probe option is the same flag with the same help on
//! both.

/// The probes' options, the same for `run` and `attach` (flattened into
/// both): what costs the traced tasks or the machine more, off unless
/// asked (and the stacks, on unless refused).
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// Time every user page fault of the traced tasks, minor and major
    #[arg(
        long,
        long_help = "Time every user page fault of the traced tasks (the command, or \
attach's targets; minor and major \
latency histograms). Off by default because it costs the fault path: measured \
here, about +200 ns on a ~2.1 us first-touch minor fault (~10%; up to ~20% on a \
warm fault loop), from a tp_btf program on page_fault_user plus a perf-event \
program on PAGE_FAULTS_MIN. Fault counts need none of this: they come from \
rusage, the kernel's per-task counters and the PAGE_FAULTS_MAJ event. Faults \
taken inside the kernel through get_user_pages (mlock, MAP_POPULATE) are not \
timed: the kernel raises no perf event for them."
    )]
    pub fault_latency: bool,

    /// Count page allocations per node and zone (kmem:mm_page_alloc; a
    /// hot path)
    #[arg(
        long,
        long_help = "Count the pages allocated from each zone of each node, by every \
task (kmem:mm_page_alloc, the node and zone found from the pfn): the zone table's \
allocated column. /proc/vmstat pgalloc_<zone> (always in the report) gives the \
same per zone type but not per node. Which zone an allocation comes from shows \
pressure between zones only under global reclaim (a machine short of memory): \
reclaim in a memory box (--mem) is not limited by zone, and zones, watermarks \
and kswapd take no part in it. Off by default: every page allocation of every \
task runs the probe (see docs/BENCHMARKS.md for its measured cost)."
    )]
    pub page_alloc: bool,

    /// Take no kernel stacks at reclaim ends: no "where reclaim was
    /// entered" section
    #[arg(
        long,
        long_help = "Take no kernel stacks at reclaim ends, so no \"where reclaim \
was entered\" section. By default each direct or memcg reclaim of the traced tasks \
takes its kernel stack once, at its end, after the stall is timed (bpf_get_stackid into a stack-trace \
map), with the allocation's GFP flags and order, and its stall is added to that \
path's row: a reclaim comes every few ms under pressure, and no fault pays \
anything. See docs/BENCHMARKS.md for the reclaim begin's cost with and without."
    )]
    pub no_stacks: bool,

    /// Report each eBPF program's runs and average run time (switches
    /// kernel.bpf_stats_enabled on while tracing: ~20 ns per program
    /// run; attach --serve serves them too)
    #[arg(long)]
    pub bpf_stats: bool,

    /// Log each rare event the probes count (an end without its begin, a
    /// full map, ...) on stderr, with the task it happened on
    #[arg(long, long_help = debug_probes_help())]
    pub debug_probes: bool,
}

/// `--debug-probes`'s long help, with the bound the log keeps.
fn debug_probes_help() -> String {
    use crate::kernel::probes::debug_log::{BURST, PER_SECOND, PREFIX};
    format!(
        "Log each rare event the eBPF programs count, one line on stderr each: \
a reclaim end without its begin (tracing began while the task was in reclaim), \
a task the kernel gave no storage cell, a full map (FAULT_START, IO_WAITS, \
RECLAIM_ENTRIES, TARGET_PIDS, the log of OOM victims, ...), a node id out of \
range, a kernel stack not kept, a swap I/O issue and completion that do not \
pair. A line reads `{PREFIX}COUNTER: COMM pid P tid T (what)`: COUNTER is \
the counter the event was added to (its name in /metrics: \
vmtrace_COUNTER_total), the task is the one on the CPU at the time, and \
`what` names the map, span or value where the program knows it. The report \
has only the counts (its \"dropped\" section); the lines say who and where. \
At most {BURST} lines of one counter at once and {PER_SECOND} a second after that \
(one counter's flood does not hide another's lines): the rest are counted and \
said (\"N more COUNTER lines suppressed\"), and a last line sums up. \
Every event is in its counter whether its line was printed or not (a flood can \
also fill the kernel's 1 MiB log buffer between two reads: lines past it are \
lost there). Off (the \
default), it costs nothing: the switch is a read-only global that the \
kernel's verifier sees as a constant, so it removes the logging code before \
the programs run, and aya-log's ring buffer is one page."
    )
}

impl From<ProbeArgs> for crate::session::run_options::ProbeOptions {
    fn from(a: ProbeArgs) -> Self {
        crate::session::run_options::ProbeOptions {
            fault_latency: a.fault_latency,
            page_alloc: a.page_alloc,
            no_stacks: a.no_stacks,
            bpf_stats: a.bpf_stats,
            debug_probes: a.debug_probes,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use crate::cli::Cli;

    /// `--debug-probes` is one flag of `run` and `attach`, with one help
    /// that says what is logged, where, how much and what it costs off.
    #[test]
    fn debug_probes_is_the_same_flag_on_run_and_attach() {
        let top = Cli::command();
        let help = |sub: &str| -> String {
            let cmd = top.find_subcommand(sub).expect(sub);
            let arg = cmd
                .get_arguments()
                .find(|a| a.get_long() == Some("debug-probes"))
                .unwrap_or_else(|| panic!("{sub} has no --debug-probes"));
            arg.get_long_help().expect("a long help").to_string()
        };
        let run = help("run");
        assert_eq!(run, help("attach"));
        for said in [
            "stderr",
            "vmtrace: probe: COUNTER: COMM pid P tid T",
            "At most 20 lines of one counter at once and 5 a second",
            "costs nothing",
        ] {
            assert!(run.contains(said), "{said}?\n{run}");
        }
        for argv in [
            &["vmtrace", "run", "--debug-probes", "--", "true"][..],
            &["vmtrace", "attach", "--debug-probes"],
        ] {
            assert!(Cli::try_parse_from(argv).is_ok(), "{argv:?}");
        }
        let off = [
            "vmtrace",
            "run",
            "--no-probes",
            "--debug-probes",
            "--",
            "true",
        ];
        let e = Cli::try_parse_from(off).expect_err("--no-probes logs nothing");
        assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict);
    }
}
