//! The command line: clap's definitions of every subcommand and their
//! value parsers (`mod.rs`), the rewriting of argv before clap parses it
//! (`argv`: vmtrace's options after a bundled workload's name, compare's
//! options among the recordings), and the thin dispatch of parsed
//! arguments to the session and view layers (`dispatch`, and `views` for
//! the subcommands that only read recordings).

mod argv;
mod dispatch;
pub mod exit;
mod generate;
mod parse;
mod probe_args;
mod views;

pub use argv::hoist_bundled_options;
pub use dispatch::{dispatch, one_line_usage_error};
pub use probe_args::ProbeArgs;

use std::{ffi::OsString, path::PathBuf};

use clap::{Parser, Subcommand};

use crate::model::units::{parse_rate, parse_size};
use crate::view::export::ExportFormat;
use parse::{parse_fail_if, parse_interval, parse_on_off, parse_sysctl};

/// `--format` of `export`: the view's one list of formats.
impl clap::ValueEnum for ExportFormat {
    fn value_variants<'a>() -> &'a [Self] {
        &ExportFormat::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}

/// `--format` of `compare`: the text's form (JSON is `--json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TextForm {
    /// Mail-ready, with bold headings on a terminal (NO_COLOR: none).
    Auto,
    /// Mail-ready: ASCII, <= 72 columns, no colour.
    Text,
}

#[derive(Debug, Parser)]
#[command(
    name = "vmtrace",
    version,
    about = "Trace reclaim, page faults and swap of a workload with eBPF",
    long_about = "vmtrace runs a command under eBPF probes on the kernel's reclaim, \
page-fault and swap paths, optionally in a small memory box (a memory cgroup plus a \
temporary swapfile), and reports where the command's time and memory went: reclaim \
stall histograms, LRU scan/reclaim totals per node, fault counts, swap traffic, each \
next to the kernel's own counters. Needs root (eBPF, cgroups, swapon).",
    after_help = "Examples:\n  \
sudo vmtrace run --mem 256M --swap 1G -- ./qsbench -m 350\n  \
sudo vmtrace run --json -- make -j4 > report.json"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Commands,
}

#[derive(Debug, Subcommand)]
pub enum Commands {
    /// Run a command under the probes and print what happened to its memory
    #[command(
        long_about = "Runs COMMAND under vmtrace's probes and prints a report: exit \
status, wall/user/system time, faults, reclaim stall histograms (count, p50, p90, \
p99, p99.9, max and a bar chart), LRU scanned/reclaimed per node and reclaim \
context, and swap traffic, each beside the matching /proc/vmstat delta.\n\n\
With --mem the command runs in a fresh memory cgroup (cgroup v2 memory.max, or v1 \
memory.limit_in_bytes where the memory controller is on v1); with --swap a \
temporary swapfile is added for the run. Both are removed afterwards, also on \
errors and Ctrl-C.\n\n\
Bundled workloads run by bare name, from vmtrace itself: `qsbench` (the 2001 \
qsbench; default -m 350 in a 256 MiB box with 2 GiB of swap), `build` (make -jN of \
a generated C tree; default -j 5 in 64 MiB with 1 GiB of swap; -j takes a comma \
list to sweep, e.g. -j 5,10,15), `memhog` (default --mib 512 --passes 2 in 256 \
MiB with 1 GiB) and `faults` (first-touch minor faults without memory pressure, \
no box: default --mib 32 --passes 320, the fault path's hot loop). The default box applies when neither --mem nor --swap is given; \
vmtrace's own options may also follow the workload's name. --repeat N runs each \
configuration N times and ends with the seed mails' table (elapsed per run, mean, \
stddev, min, max).\n\n\
Ctrl-C (or SIGTERM/SIGHUP) is passed to the command and the report is still \
printed; a second one kills the command. vmtrace exits with the command's exit \
status (128+N if signal N killed it); its own failures exit 125, a command that \
cannot be started 126, one not found 127 (as GNU env; `git bisect run` skips \
125).",
        after_help = "Examples:\n  \
sudo vmtrace run qsbench\n  \
sudo vmtrace run qsbench -n 90000000 -p 1 -s 140175100 --mem 256M --swap 400M --repeat 3\n  \
sudo vmtrace run build -j 5,10,15 --mem 64M --swap 1G --repeat 3\n  \
sudo vmtrace run --mem 256M --swap 1G -- ./my-benchmark\n  \
sudo vmtrace run --json -- make -j4 > report.json"
    )]
    Run(RunArgs),
    /// List every metric, the kernel hooks behind it, and whether this
    /// kernel has them
    #[command(
        long_about = "Lists every metric vmtrace can measure, the tracepoints and \
perf events behind it, and whether the running kernel offers them (resolving \
tracepoint fields from tracefs exactly as `run` does). A metric shown as UNAVAILABLE \
says why; `run` skips it with a notice and measures the rest. Needs root to read \
tracefs."
    )]
    Probes {
        /// Print JSON instead of text: a `vmtrace-probes` document
        /// (`vmtrace generate schema probes`)
        #[arg(long)]
        json: bool,
    },
    /// Trace processes that are already running (a build someone else
    /// started), until Ctrl-C, --duration, or they all exit
    #[command(
        long_about = "Attaches vmtrace's probes to processes already running and \
reports on them as `run` does, then writes a recording. Targets: --pid PID (that \
process and all its descendants, also those forked after attaching: followed in the \
kernel from their first instruction), --cgroup PATH (every task in a cgroup v2 \
directory or any cgroup below it, e.g. a slice whose services hold the tasks; for a \
v1 cgroup, its processes now and what they fork), \
--comm NAME (processes with that name and their descendants). Targets combine; with \
none, every task is traced. Stops on Ctrl-C, SIGTERM or SIGHUP, after --duration, \
or when every target has exited. Processes attached to were not started by vmtrace: \
the report has no exit status or rusage, the delay accounting covers threads that \
exit while attached.",
        after_help = "Examples:\n  \
sudo vmtrace attach --pid $(pgrep -o make) --interval 1\n  \
sudo vmtrace attach --cgroup /sys/fs/cgroup/system.slice/build.service --duration 60\n  \
sudo vmtrace attach --comm cc1 -o cc1.vmtrace.json\n  \
sudo vmtrace attach --serve 127.0.0.1:9911 --max-cgroups 512"
    )]
    Attach(AttachArgs),
    /// Run the same job on other kernels, each booted in a QEMU guest
    /// with a small memory size, and compare them
    #[command(
        long_about = "Boots each --kernel in a QEMU guest (KVM where it runs stock \
kernels, else TCG) with --mem of memory (the modern mem=64M; a list boots each kernel \
at each size), the job's tools on a read-only disk image built once from the host's \
files and identical for every kernel (--storage), the host's root shared read-only \
under it, a scratch disk for /var/tmp and, with --swap, a swap disk; runs \
this very vmtrace binary inside with the `run ...` given after --, brings the \
recording home (labelled with the guest's kernel release), and ends with the seed \
mails' table (kernels as rows, sweep values and sizes as columns) and `vmtrace \
compare` of the kernels, column by column. `--kernel host` runs the same command on the host, for \
reference. Each kernel's directory keeps its recording, vmtrace's output and the \
guest's console log; a guest that panics, hangs (--timeout) or does not boot is \
reported with its last console lines, and the other kernels still run. Under TCG \
guest wall times are several times the host's and only comparable between guests; \
counters are real. Debian kernels are downloaded with apt-get download and unpacked \
into /var/cache/vmtrace/kernels, never installed.",
        after_help = "Examples:\n  \
sudo vmtrace kernels --kernel debian:6.1 --kernel debian:6.12 \\\n      \
--mem 512M -- run qsbench -m 200 --mem 128M --swap 1G\n  \
sudo vmtrace kernels --kernel /boot/vmlinuz-6.1.0-57-amd64 \\\n      \
--kernel host -- run build -j 4\n  \
sudo vmtrace kernels --kernel debian:6.1 --kernel debian:6.12 \\\n      \
--mem 256M --repeat 3 -- run build --no-box -j 5,10,15\n  \
sudo vmtrace kernels --kernel ./bzImage:./modules/6.13.0 --swap 1G \\\n      \
-- run memhog"
    )]
    Kernels(KernelsArgs),
    /// Print the report of one or more recordings
    #[command(
        long_about = "Prints what `run` printed, from recordings: the machine and \
settings the recording was made with, then each run's report (the time line, \
histograms as text bars with count, p50, p90, p99, p99.9 and max, LRU and zone \
tables, the processes that stalled most, OOM events) and the table of the runs. \
Colour on a terminal only; NO_COLOR turns it off.",
        after_help = "Examples:\n  \
vmtrace report vmtrace-qsbench-6.18.44-20261130T030405Z.vmtrace.json\n  \
vmtrace report --json run.vmtrace.json | jq .runs[0].report.usage"
    )]
    Report {
        /// Recordings written by `vmtrace run` or `vmtrace attach`
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Print the recordings as JSON instead of text: one
        /// `vmtrace-report` document holding them all (`vmtrace generate
        /// schema report`)
        #[arg(long)]
        json: bool,
    },
    /// Compare groups of recordings: is B really slower than A, and why
    #[command(
        long_about = "Compares groups of recordings: the files before the first --vs \
are group A, the baseline (repeated runs of one kernel or setting); each --vs starts \
another group. For every metric: each group's mean, the change against A and its \
significance by Welch's t-test (* p < 0.05, ** p < 0.01, ~ within noise; with one \
run in a group significance cannot be judged). Then where the elapsed time went: \
the job's time budget (its CPU time split into user, reclaim, compaction and the \
rest; its waits: reclaim's and compaction's sleeps, I/O waits, memory.high sleeps, \
and its time runnable behind tasks outside it, kswapd's apart), each part of the \
difference measured on the job's own tasks, the rest unexplained; other tasks' CPU \
time is shown and claims nothing (what it cost the job is the time the job waited \
behind it). Then the mechanisms behind the difference, strongest first, each with \
its numbers. A difference that is not significant is called within noise, and no \
cause is named. docs/COMPARE.md has the model.\n\n\
Groups are labelled by kernel release, or on one kernel by the vm sysctl that \
differs; --label names them. Recordings of different workloads are refused \
(--force compares them anyway); different machines or memory limits are warned \
about.",
        after_help = "Examples:\n  \
vmtrace compare old-*.vmtrace.json --vs new-*.vmtrace.json\n  \
vmtrace compare a.vmtrace.json --vs b.vmtrace.json --label 6.1 --label 6.12 --detail\n  \
vmtrace compare a*.json --vs b*.json --svg latency.svg --json > cmp.json\n  \
vmtrace compare good*.json --vs new*.json --fail-if slower:5 || echo slower"
    )]
    Compare {
        /// Recordings: group A (the baseline), then `--vs` and the
        /// recordings of group B, and so on
        #[arg(required_unless_present = "prometheus", value_name = "FILE... --vs FILE...", allow_hyphen_values = true, num_args = 1..)]
        files: Vec<String>,
        /// Compare two groups of hosts instead, read from this
        /// Prometheus-compatible query API (http://HOST:PORT): A is
        /// --group, B the matchers after --vs (docs/PROMETHEUS.md)
        #[arg(long, value_name = "URL")]
        prometheus: Option<String>,
        /// With --prometheus: group A's label matcher on
        /// vmtrace_build_info (`kernel=~"6.1.*"`, `rollout="canary"`);
        /// repeat to AND several
        #[arg(long, value_name = "MATCHER", requires = "prometheus")]
        group: Vec<String>,
        /// With --prometheus: the window each host's rates are over
        #[arg(
            long,
            value_name = "DURATION",
            default_value = "1h",
            requires = "prometheus"
        )]
        range: String,
        /// With --prometheus: the window's end (RFC 3339 or Unix time;
        /// default now)
        #[arg(long, value_name = "TIME", requires = "prometheus")]
        at: Option<String>,
        /// With --prometheus: only the cgroups matching this regex (a
        /// service, a slice), from the exporters' per-cgroup series
        #[arg(long, value_name = "REGEX", requires = "prometheus")]
        cgroup: Option<String>,
        /// With --prometheus: the most series one query may return
        #[arg(long, value_name = "N", default_value_t = crate::host::prometheus_api::MAX_SERIES, requires = "prometheus")]
        max_series: usize,
        /// Name a group (once per group, in order: A, B, ...)
        #[arg(long, value_name = "NAME")]
        label: Vec<String>,
        /// Also show each metric's stddev, min and max
        #[arg(long)]
        detail: bool,
        /// Print JSON instead of text: a `vmtrace-compare` document, one
        /// column per sweep value (`vmtrace generate schema compare`)
        #[arg(long, conflicts_with = "format")]
        json: bool,
        /// The text's form: text, mail-ready (ASCII, <= 72 columns, no
        /// colour); auto, the same with bold headings on a terminal
        /// (NO_COLOR turns that off). JSON is --json
        #[arg(long, value_name = "FORMAT", value_enum, default_value = "auto")]
        format: TextForm,
        /// Also write the groups' latency distributions, overlaid, as SVG
        /// (or PNG, when PATH ends in .png)
        #[arg(long, value_name = "PATH")]
        svg: Option<PathBuf>,
        /// Also write where reclaim was entered, B against A, as a
        /// differential flame graph (SVG: widths B's, red more stall
        /// time than A, blue less)
        #[arg(long, value_name = "PATH")]
        flamegraph: Option<PathBuf>,
        /// Also write the job's CPU inside reclaim and compaction, B
        /// against A, by kernel stack: a differential flame graph (SVG:
        /// widths B's share, red a function whose share grew beyond
        /// noise, blue shrank, others uncoloured), or with PATH ending in
        /// .folded the `stack A B` lines of difffolded.pl /
        /// inferno-diff-folded (shares in ppm)
        #[arg(long, value_name = "PATH")]
        cpu_flamegraph: Option<PathBuf>,
        /// Compare recordings of different workloads anyway
        #[arg(long)]
        force: bool,
        /// Exit 1 when a group is significantly slower than A (by at
        /// least PCT% of A's elapsed time, when given), else 0: a CI gate,
        /// or a `git bisect run` step (vmtrace's own failures exit 125,
        /// which bisect skips)
        #[arg(long, value_name = "slower[:PCT]", value_parser = parse_fail_if)]
        fail_if: Option<f64>,
    },
    /// Convert a recording for mail, plots, spreadsheets or HdrHistogram tools
    #[command(
        long_about = "Writes a recording in another format, on stdout or to -o PATH:\n\n  \
text        mail-ready report: ASCII, <= 72 columns, no tabs (paste under \"Results:\")\n  \
json        the recording itself\n  \
csv         tidy metrics: run,label,kernel,metric,value (one row per number)\n  \
series-csv  the time series: one row per run and step, counters cumulative\n  \
hlog        HdrHistogram interval log (format 1.3): one tag per histogram, one\n              \
interval per time-series step, plus <tag>.whole_run for the whole run\n  \
folded      where reclaim was entered, as folded stacks weighted by stall\n              \
microseconds (flamegraph.pl, inferno-flamegraph, speedscope)\n  \
flamegraph  the same ways in drawn as a flame graph (SVG)\n  \
svg         plots: latency percentiles (every run of every FILE overlaid) and\n              \
pressure over time (scan/reclaim, swap, free pages vs watermarks)\n  \
png         the same plots as a PNG image (-o FILE.png)\n\n\
Several FILEs are allowed for svg and png (overlaid); the other formats take one.",
        after_help = "Examples:\n  \
vmtrace export run.vmtrace.json --format text > results.txt\n  \
vmtrace export run.vmtrace.json --format hlog -o run.hlog\n  \
vmtrace export run.vmtrace.json --format folded | flamegraph.pl > r.svg\n  \
vmtrace export a.vmtrace.json b.vmtrace.json --format svg -o latency.svg"
    )]
    Export {
        /// Recordings written by `vmtrace run` or `vmtrace attach`
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Output format
        #[arg(long, short, value_name = "FORMAT", value_enum)]
        format: ExportFormat,
        /// Write to PATH instead of stdout
        #[arg(short, long, value_name = "PATH")]
        output: Option<PathBuf>,
        /// For a mailing list: leave out the host name and every boot
        /// parameter but those of memory management (mem=,
        /// transparent_hugepage=, zswap.*, numa=, ...)
        #[arg(long)]
        redact: bool,
    },
    /// Print a man page, a shell's completion script, a JSON Schema or
    /// a doc table, generated from vmtrace itself
    #[command(
        long_about = "Prints, on standard output, a man page (roff) for vmtrace or \
one of its commands, the completion script of a shell, the JSON Schema \
(draft 2020-12) of what a command prints with --json (run, attach, report, \
compare, probes) or of a recording file (recording), or a doc table that \
lists signals (docs: metrics, prometheus-histograms, prometheus-counters, \
recording-histograms), in Markdown, as the README and docs/ hold it \
between `<!-- generated: vmtrace generate docs TABLE -->` and \
`<!-- end generated -->`. Nothing is installed: redirect it where you need it.",
        after_help = "Examples:\n  \
vmtrace generate man > vmtrace.1 && man -l vmtrace.1\n  \
vmtrace generate man run > vmtrace-run.1\n  \
vmtrace generate schema compare > vmtrace-compare.schema.json\n  \
vmtrace generate docs metrics\n  \
vmtrace generate complete-bash > /etc/bash_completion.d/vmtrace\n  \
vmtrace generate complete-zsh > ~/.zfunc/_vmtrace\n  \
vmtrace generate complete-fish > ~/.config/fish/completions/vmtrace.fish"
    )]
    Generate {
        /// What to print
        #[arg(value_parser = ["man", "schema", "docs", "complete-bash", "complete-zsh", "complete-fish"])]
        kind: String,
        /// With `man`: the command whose page to print (run, attach,
        /// kernels, ...); vmtrace's own page without it. With `schema`
        /// or `docs`: which (see above)
        #[arg(value_name = "COMMAND")]
        command: Option<String>,
    },
    /// Run a bundled workload in this process (what `vmtrace run qsbench`
    /// starts inside the box)
    #[command(hide = true)]
    Workload {
        name: String,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Build a guest kernel from a tree and patches, as the user this
    /// runs as (what `vmtrace kernels --kernel TREE` starts as sudo's
    /// invoker); prints one JSON line saying where the image is
    #[command(hide = true)]
    BuildKernel {
        /// The build cache (the invoker's)
        #[arg(long, value_name = "DIR")]
        cache: PathBuf,
        /// The kernel source tree
        tree: PathBuf,
        /// Patches to apply, in order (patch -p1)
        patches: Vec<PathBuf>,
    },
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Memory limit of the box, e.g. 256M or 1G (a fresh memory cgroup)
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    pub mem: Option<u64>,

    /// No memory box: the whole machine's memory is the pressure
    #[arg(
        long,
        conflicts_with = "mem",
        long_help = "Run without a memory box: no memory cgroup, so reclaim is the \
whole machine's (global reclaim, kswapd, zones and watermarks), as in the seed mails \
booted with mem=64M. Meant for a small machine or guest (`vmtrace kernels --mem 256M \
-- run --no-box build -j 4`). A bundled workload's default box is not applied; \
--swap still adds a swapfile."
    )]
    pub no_box: bool,

    /// Add a temporary swapfile of SIZE for the run, e.g. 1G
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    pub swap: Option<u64>,

    /// Directory for the swapfile (a filesystem that supports swapfiles);
    /// vmtrace keeps it in DIR/vmtrace-swap, a directory only root can write
    #[arg(long, value_name = "DIR", default_value = crate::host::swapfile::DEFAULT_SWAP_DIR)]
    pub swap_dir: PathBuf,

    #[command(flatten)]
    pub probes: ProbeArgs,

    /// Run the command as root under sudo. By default it runs as the
    /// user who ran sudo (SUDO_UID/SUDO_GID), so that it creates no
    /// root-owned files in that user's tree
    #[arg(long)]
    pub as_root: bool,

    /// When the command exits, wait for what it left running in the box
    /// (daemons, `cmd &`) to end too. By default they are killed, and
    /// the report says how many
    #[arg(long)]
    pub wait_background: bool,

    /// Attach nothing: run the command in the same box, untraced (the
    /// baseline for measuring what tracing costs)
    #[arg(
        long,
        conflicts_with_all = ["fault_latency", "page_alloc", "bpf_stats", "no_stacks", "debug_probes"]
    )]
    pub no_probes: bool,

    /// Print JSON on stdout instead of text: a `vmtrace-run` document,
    /// every run's report and the summary, for one run or many
    /// (`vmtrace generate schema run`)
    #[arg(long)]
    pub json: bool,

    /// Seconds between time-series snapshots (counters, /proc/vmstat, PSI,
    /// zone watermarks); fractions allowed
    #[arg(long, value_name = "SECS", default_value_t = 1.0, value_parser = parse_interval)]
    pub interval: f64,

    /// Run the command N times (a fresh box each time), then print the
    /// table of the runs: elapsed time, mean, stddev, min, max
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,

    /// Write the recording to PATH [default:
    /// ./vmtrace-WORKLOAD-KERNEL-UTCTIME.vmtrace.json]
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,

    /// Progress on stderr: a status line rewritten in place (tty), a line
    /// every 10 s (plain), or none; auto picks tty on a terminal
    #[arg(long, value_name = "MODE", default_value = "auto",
          value_parser = ["auto", "tty", "plain", "none"])]
    pub progress: String,

    /// Switch the multi-gen LRU on or off for the runs (restored after)
    #[arg(
        long,
        value_name = "on|off",
        value_parser = parse_on_off,
        long_help = "Switch the multi-gen LRU on or off for the runs through \
/sys/kernel/mm/lru_gen/enabled (y/n), restored after, so that one kernel can be \
compared with itself. MGLRU changes what the LRU tracepoints mean (6.1 with it on \
emits none; from 6.7 its retries are traced again): compare marks those rows."
    )]
    pub mglru: Option<bool>,

    /// Switch zswap on or off for the runs (restored after)
    #[arg(
        long,
        value_name = "on|off",
        value_parser = parse_on_off,
        long_help = "Switch zswap on or off for the runs through \
/sys/module/zswap/parameters/enabled, restored after. With zswap on, anon folios \
reclaim writes go to the compressed pool (zswpout) instead of the swap device \
(pswpout); the report's 'where swap went' table tells them apart."
    )]
    pub zswap: Option<bool>,

    /// Set a memory-management sysctl (vm.*, kernel.numa_balancing) for
    /// the runs, e.g. vm.page-cluster=0 (repeatable); restored
    /// afterwards, also on errors, Ctrl-C and after a kill -9
    #[arg(long, value_name = "NAME=VALUE", value_parser = parse_sysctl)]
    pub sysctl: Vec<(String, String)>,

    /// No progress output (the same as --progress none)
    #[arg(short, long)]
    pub quiet: bool,

    /// The command to trace, and its arguments (after --)
    #[arg(required = true, trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

#[derive(Debug, clap::Args)]
pub struct KernelsArgs {
    /// A kernel to boot (repeatable): an image path (bzImage or vmlinuz;
    /// IMAGE:MODULES_DIR for its modules), debian:6.1 or debian:6.12 (the
    /// newest Debian package of that line), a Debian package name, a
    /// kernel source tree (TREE, or TREE:PATCH[:PATCH...] with patches
    /// applied to a copy: vmtrace builds it, as you), or `host` (no
    /// guest: this machine)
    #[arg(long = "kernel", value_name = "K", required = true)]
    pub kernels: Vec<String>,
    /// Where kernels built from trees are kept, by what decides them
    /// (tree content, patches, configuration, compiler): a second
    /// request for the same is taken from here. The sudo invoker's
    /// directory; made 0700 when missing [default: ~/.cache/vmtrace/kernels]
    #[arg(long, value_name = "DIR")]
    pub build_cache: Option<PathBuf>,
    /// Guest memory (the modern mem=...); a comma list (512M,384M,256M)
    /// boots each kernel once per size, a table column each: the same
    /// job at shrinking memory until it thrashes or is OOM-killed
    #[arg(long, value_name = "SIZE[,SIZE...]", default_value = "1G", value_delimiter = ',', value_parser = parse_size)]
    pub mem: Vec<u64>,
    /// Give the guest a swap disk of SIZE, active before the run
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub swap: Option<u64>,
    /// Cap the swap disk at RATE bytes a second, reads and writes
    /// together (4M: an old laptop disk): swap-out then takes time, and
    /// reclaim meets folios still under writeback. Needs --swap
    #[arg(long, value_name = "RATE", requires = "swap", value_parser = parse_rate)]
    pub swap_rate: Option<u64>,
    /// Size of the guest's /var/tmp disk (ext4, sparse on the host): room
    /// for the swapfile `run --swap` makes, plus the 1 GiB it keeps spare
    #[arg(long, value_name = "SIZE", default_value = "4G", value_parser = parse_size)]
    pub disk: u64,
    /// Guest CPUs
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub cpus: u32,
    /// Give the guest N NUMA nodes, --mem split evenly between them and
    /// the CPUs dealt round-robin (a node may have none)
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub numa_nodes: u32,
    /// Runs of the command in each guest (`run --repeat`): three by
    /// default, the fewest from which the closing compare judges a
    /// difference (with one, it names no cause)
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Seconds a guest may take, boot to power-off, before it is killed
    #[arg(long, value_name = "SECS", default_value_t = 1800)]
    pub timeout: u64,
    /// auto: KVM where it runs stock kernels (/dev/kvm and vmx or svm in
    /// the CPU flags; a PVM host has neither flag), else TCG
    #[arg(long, value_name = "ACCEL", default_value = "auto", value_parser = ["auto", "kvm", "tcg"])]
    pub accel: String,
    /// image: the job's tools (the host's /usr/bin, libraries, compiler,
    /// /etc, vmtrace) on a read-only ext4 disk built once and given to
    /// every guest, the host root (9p) under it for anything else; 9p:
    /// every file over 9p, whose client differs between kernels
    #[arg(long, value_name = "STORAGE", default_value = "image", value_parser = ["image", "9p"])]
    pub storage: String,
    /// Directory for the results [default: ./vmtrace-kernels-UTCTIME]
    #[arg(short, long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// `run` and its arguments, as for `vmtrace run` (after --)
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "run ARGS"
    )]
    pub command: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct AttachArgs {
    /// A process to trace, with its descendants (repeatable)
    #[arg(long, value_name = "PID")]
    pub pid: Vec<u32>,
    /// A cgroup directory whose tasks to trace (repeatable)
    #[arg(long, value_name = "PATH")]
    pub cgroup: Vec<PathBuf>,
    /// Processes with this name (comm), with their descendants (repeatable)
    #[arg(long, value_name = "NAME")]
    pub comm: Vec<String>,
    /// Stop after SECS seconds
    #[arg(long, value_name = "SECS", value_parser = parse_interval)]
    pub duration: Option<f64>,
    /// Print a compact line every SECS seconds while attached, like
    /// `vmstat 1` (and take the time-series snapshots that often; 1 s
    /// without it)
    #[arg(long, value_name = "SECS", value_parser = parse_interval)]
    pub interval: Option<f64>,
    #[command(flatten)]
    pub probes: ProbeArgs,
    /// Write the recording to PATH [default:
    /// ./vmtrace-attach-KERNEL-UTCTIME.vmtrace.json]
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Print the window's report as JSON on stdout instead of text: a
    /// `vmtrace-attach` document (`vmtrace generate schema attach`)
    #[arg(long)]
    pub json: bool,
    /// Serve Prometheus metrics at http://ADDR/metrics until stopped
    /// (SIGTERM, SIGHUP, Ctrl-C or --duration), e.g. 127.0.0.1:9911
    #[arg(
        long,
        value_name = "ADDR",
        long_help = "Serve Prometheus metrics at http://ADDR/metrics until stopped (SIGTERM, SIGHUP, Ctrl-C or --duration; the targets exiting does not stop it), then write the recording as attach does. Per-cgroup reclaim stall histograms (vmtrace_cgroup_{direct,memcg}_reclaim_seconds), the target's latency histograms, every counter of the recording, /proc/vmstat reclaim and swap items and memory PSI; OpenMetrics when the scraper asks for it. Histogram bounds are 2^k - 1 ns, k = 10..36, exact edges of vmtrace's buckets. A loopback address unless --serve-public. See docs/PROMETHEUS.md."
    )]
    pub serve: Option<std::net::SocketAddr>,
    /// Allow --serve on an address that is not loopback
    #[arg(long, requires = "serve")]
    pub serve_public: bool,
    /// Most cgroups with a row of their own under --serve; stalls of
    /// more go to cgroup="(other)" (1 to 4096)
    #[arg(long, value_name = "N", default_value_t = 256, requires = "serve",
          value_parser = clap::value_parser!(u32).range(1..=vmtrace_common::MAX_CGROUPS as i64))]
    pub max_cgroups: u32,
    /// The per-cgroup histograms' bounds under --serve: `fine` (27, one
    /// per power of two from 1 us to 69 s: 60 series a cgroup) or
    /// `coarse` (7, x16 apart from 1 us to 17 s: 20 series a cgroup)
    #[arg(long, value_name = "fine|coarse", default_value = "fine", requires = "serve",
          value_parser = ["fine", "coarse"])]
    pub cgroup_buckets: String,
}
