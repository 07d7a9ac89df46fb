//! Command-line definitions (clap) and the thin layer that turns them
//! into calls of the library. Everything users type is parsed here.

use std::{ffi::OsString, path::PathBuf, time::Duration};

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::{
    host::membox::BoxSpec,
    model::recording::{Environment, RecordedRun, Recording},
    model::report::RunReport,
    model::units::parse_size,
    session::run::{RunOptions, run},
    view::report::RunsTable,
};

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
list to sweep, e.g. -j 5,10,15) and `memhog` (default --mib 512 --passes 2 in 256 \
MiB with 1 GiB). The default box applies when neither --mem nor --swap is given; \
vmtrace's own options may also follow the workload's name. --repeat N runs each \
configuration N times and ends with the seed mails' table (elapsed per run, mean, \
stddev, min, max).\n\n\
Ctrl-C (or SIGTERM/SIGHUP) is passed to the command and the report is still \
printed; a second one kills the command. vmtrace exits with the command's exit \
status (128+N if signal N killed it).",
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
        /// Print JSON instead of text
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
directory, by cgroup id; for a v1 cgroup, its processes now and what they fork), \
--comm NAME (processes with that name and their descendants). Targets combine; with \
none, every task is traced. Stops on Ctrl-C, SIGTERM or SIGHUP, after --duration, \
or when every target has exited. Processes attached to were not started by vmtrace: \
the report has no exit status or rusage, the delay accounting covers threads that \
exit while attached.",
        after_help = "Examples:\n  \
sudo vmtrace attach --pid $(pgrep -o make) --interval 1\n  \
sudo vmtrace attach --cgroup /sys/fs/cgroup/system.slice/build.service --duration 60\n  \
sudo vmtrace attach --comm cc1 -o cc1.vmtrace.json"
    )]
    Attach(AttachArgs),
    /// Run the same job on other kernels, each booted in a QEMU guest
    /// with a small memory size, and compare them
    #[command(
        long_about = "Boots each --kernel in a QEMU guest (TCG; --kvm where the host's \
KVM runs stock kernels) with --mem of memory (the modern mem=64M), the host's root \
shared read-only, a scratch disk for /var/tmp and, with --swap, a swap disk; runs \
this very vmtrace binary inside with the `run ...` given after --, brings the \
recording home (labelled with the guest's kernel release), and ends with `vmtrace \
compare` of the kernels. `--kernel host` runs the same command on the host, for \
reference. Each kernel's directory keeps its recording, vmtrace's output and the \
guest's console log; a guest that panics, hangs (--timeout) or does not boot is \
reported with its last console lines, and the other kernels still run. Under TCG \
guest wall times are several times the host's and only comparable between guests; \
counters are real. Debian kernels are downloaded with apt-get download and unpacked \
into /var/cache/vmtrace/kernels, never installed.",
        after_help = "Examples:\n  \
sudo vmtrace kernels --kernel debian:6.1 --kernel debian:6.12 --mem 512M -- run qsbench -m 200 --mem 128M --swap 1G\n  \
sudo vmtrace kernels --kernel /boot/vmlinuz-6.1.0-57-amd64 --kernel host -- run build -j 4\n  \
sudo vmtrace kernels --kernel ./bzImage:./modules/6.13.0 --swap 1G -- run memhog"
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
        /// Recordings written by `vmtrace run`
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Print the recordings as JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// Compare groups of recordings: is B really slower than A, and why
    #[command(
        long_about = "Compares groups of recordings: the files before the first --vs \
are group A, the baseline (repeated runs of one kernel or setting); each --vs starts \
another group. For every metric: each group's mean, the change against A and its \
significance by Welch's t-test (* p < 0.05, ** p < 0.01, ~ within noise; with one \
run in a group significance cannot be judged). Then where the elapsed time went \
(user and system CPU, reclaim stalls, swap-in and refault waits from the kernel's \
delay accounting, compaction, the rest unexplained), and the mechanisms behind the \
difference, strongest first, each with its numbers. A difference that is not \
significant is called within noise, and no cause is named.\n\n\
Groups are labelled by kernel release, or on one kernel by the vm sysctl that \
differs; --label names them. Recordings of different workloads are refused \
(--force compares them anyway); different machines or memory limits are warned \
about.",
        after_help = "Examples:\n  \
vmtrace compare old-*.vmtrace.json --vs new-*.vmtrace.json\n  \
vmtrace compare a.vmtrace.json --vs b.vmtrace.json --label 6.1 --label 6.12 --detail\n  \
vmtrace compare a*.json --vs b*.json --svg latency.svg --json > cmp.json"
    )]
    Compare {
        /// Recordings: group A (the baseline), then `--vs` and the
        /// recordings of group B, and so on
        #[arg(required = true, value_name = "FILE... --vs FILE...", allow_hyphen_values = true, num_args = 1..)]
        files: Vec<String>,
        /// Name a group (once per group, in order: A, B, ...)
        #[arg(long, value_name = "NAME")]
        label: Vec<String>,
        /// Also show each metric's stddev, min and max
        #[arg(long)]
        detail: bool,
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
        /// text: mail-ready (ASCII, <= 72 columns, no colour); auto: the
        /// same, with bold headings on a terminal (NO_COLOR turns that off)
        #[arg(long, value_name = "FORMAT", default_value = "auto", value_parser = ["auto", "text", "json"])]
        format: String,
        /// Also write the groups' latency distributions, overlaid, as SVG
        /// (or PNG, when PATH ends in .png)
        #[arg(long, value_name = "PATH")]
        svg: Option<PathBuf>,
        /// Compare recordings of different workloads anyway
        #[arg(long)]
        force: bool,
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
svg         plots: latency percentiles (every run of every FILE overlaid) and\n              \
pressure over time (scan/reclaim, swap, free pages vs watermarks)\n  \
png         the same plots as a PNG image (-o FILE.png)\n\n\
Several FILEs are allowed for svg and png (overlaid); the other formats take one.",
        after_help = "Examples:\n  \
vmtrace export run.vmtrace.json --format text > results.txt\n  \
vmtrace export run.vmtrace.json --format hlog -o run.hlog\n  \
vmtrace export a.vmtrace.json b.vmtrace.json --format svg -o latency.svg"
    )]
    Export {
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Output format
        #[arg(long, short, value_name = "FORMAT", value_parser = clap::builder::PossibleValuesParser::new(crate::view::export::FORMATS))]
        format: String,
        /// Write to PATH instead of stdout
        #[arg(short, long, value_name = "PATH")]
        output: Option<PathBuf>,
    },
    /// Run a bundled workload in this process (what `vmtrace run qsbench`
    /// starts inside the box)
    #[command(hide = true)]
    Workload {
        name: String,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Memory limit of the box, e.g. 256M or 1G (a fresh memory cgroup)
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    pub mem: Option<u64>,

    /// Add a temporary swapfile of SIZE for the run, e.g. 1G
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    pub swap: Option<u64>,

    /// Directory for the swapfile (a filesystem that supports swapfiles)
    #[arg(long, value_name = "DIR", default_value = "/var/tmp")]
    pub swap_dir: PathBuf,

    /// Time every user page fault of the command, minor and major
    #[arg(
        long,
        long_help = "Time every user page fault of the command (minor and major \
latency histograms). Off by default because it costs the fault path: measured \
here, about +200 ns on a ~2.1 us first-touch minor fault (~10%; up to ~20% on a \
warm fault loop), from a tp_btf program on page_fault_user plus a perf-event \
program on PAGE_FAULTS_MIN. Fault counts need none of this: they come from \
rusage, the kernel's per-task counters and the PAGE_FAULTS_MAJ event. Faults \
taken inside the kernel through get_user_pages (mlock, MAP_POPULATE) are not \
timed: the kernel raises no perf event for them."
    )]
    pub fault_latency: bool,

    /// Count page allocations per zone (kmem:mm_page_alloc; a hot path)
    #[arg(
        long,
        long_help = "Count the pages allocated from each zone (kmem:mm_page_alloc, \
zone found from the pfn): the seed mails' question of uneven pressure on the DMA \
and Normal zones. Off by default: every page allocation of every task runs the \
probe (see docs/BENCHMARKS.md for its measured cost)."
    )]
    pub page_alloc: bool,

    /// Report each eBPF program's runs and average run time (switches
    /// kernel.bpf_stats_enabled on for the run: ~20 ns per program run)
    #[arg(long)]
    pub bpf_stats: bool,

    /// Run the command as root under sudo. By default it runs as the
    /// user who ran sudo (SUDO_UID/SUDO_GID), so that it creates no
    /// root-owned files in that user's tree
    #[arg(long)]
    pub as_root: bool,

    /// Attach nothing: run the command in the same box, untraced (the
    /// baseline for measuring what tracing costs)
    #[arg(long, conflicts_with_all = ["fault_latency", "page_alloc", "bpf_stats"])]
    pub no_probes: bool,

    /// Print the report as JSON on stdout instead of text
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

    /// Set a sysctl for the runs, e.g. vm.page-cluster=0 (repeatable);
    /// restored afterwards, also on errors and Ctrl-C
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
    /// newest Debian package of that line), a Debian package name, or
    /// `host` (no guest: this machine)
    #[arg(long = "kernel", value_name = "K", required = true)]
    pub kernels: Vec<String>,
    /// Guest memory (the modern mem=...)
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = parse_size)]
    pub mem: u64,
    /// Give the guest a swap disk of SIZE, active before the run
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub swap: Option<u64>,
    /// Size of the guest's /var/tmp disk (ext4, sparse on the host): room
    /// for the swapfile `run --swap` makes, plus the 1 GiB it keeps spare
    #[arg(long, value_name = "SIZE", default_value = "4G", value_parser = parse_size)]
    pub disk: u64,
    /// Guest CPUs
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub cpus: u32,
    /// Runs of the command in each guest (`run --repeat`)
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Seconds a guest may take, boot to power-off, before it is killed
    #[arg(long, value_name = "SECS", default_value_t = 1800)]
    pub timeout: u64,
    /// Use KVM instead of TCG (where the host's KVM runs stock kernels)
    #[arg(long)]
    pub kvm: bool,
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
    /// Time every user page fault of the targets (costs the fault path)
    #[arg(long)]
    pub fault_latency: bool,
    /// Count page allocations per zone (a hot path)
    #[arg(long)]
    pub page_alloc: bool,
    /// Write the recording to PATH [default:
    /// ./vmtrace-attach-KERNEL-UTCTIME.vmtrace.json]
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Print the report as JSON on stdout instead of text
    #[arg(long)]
    pub json: bool,
}

/// `vmtrace attach`: the report and the recording of the window.
fn attach_command(args: AttachArgs) -> Result<i32> {
    crate::host::privilege::require()?;
    let mut words = vec!["attach".to_string()];
    for p in &args.pid {
        words.push(format!("--pid {p}"));
    }
    for c in &args.cgroup {
        words.push(format!("--cgroup {}", c.display()));
    }
    for c in &args.comm {
        words.push(format!("--comm {c}"));
    }
    let workload = crate::model::recording::Workload {
        name: "attach".into(),
        arguments: words[1..].to_vec(),
        seed: None,
    };
    let path = args.output.clone().unwrap_or_else(|| {
        Recording::default_path(
            "attach",
            &crate::host::proc::kernel_release(),
            std::time::SystemTime::now(),
        )
    });
    check_writable(&path)?;
    let opts = crate::session::attach::AttachOptions {
        pids: args.pid,
        cgroups: args.cgroup,
        comms: args.comm,
        duration: args.duration.map(Duration::from_secs_f64),
        lines: args.interval.map(Duration::from_secs_f64),
        interval: Duration::from_secs_f64(args.interval.unwrap_or(1.0)),
        fault_latency: args.fault_latency,
        page_alloc: args.page_alloc,
        progress: None,
    };
    let mut recording = Recording::new(workload, Environment::capture());
    let report = crate::session::attach::attach(&opts, words)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.to_text());
    }
    if report.exit.interrupted {
        recording.mark_incomplete("stopped by a signal");
    }
    recording.runs.push(RecordedRun {
        label: String::new(),
        report,
    });
    recording.write(&path, crate::model::recording::sudo_owner())?;
    eprintln!("vmtrace: recording written to {}", path.display());
    Ok(0)
}

/// A command-line error as one line (clap's message, its lines joined,
/// without the usage block), pointing at --help; None for --help and
/// --version, which are not errors.
pub fn one_line_usage_error(e: &clap::Error) -> Option<String> {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        return None;
    }
    let text = e.render().to_string();
    let message: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.is_empty() && !l.starts_with("Usage:"))
        .collect();
    let message = message.join(" ");
    let message = message.trim_start_matches("error: ").trim_end_matches('.');
    Some(format!("{message}; see --help"))
}

/// Runs the parsed command line; returns the process exit code.
pub fn dispatch(cli: Cli) -> Result<i32> {
    // `run` and `attach` release the held signals once their handlers are
    // in place; everything else has nothing to tear down.
    if !matches!(cli.command, Commands::Run(_) | Commands::Attach(_)) {
        crate::session::run::release_signals();
    }
    match cli.command {
        Commands::Run(args) => run_command(args),
        Commands::Kernels(a) => {
            crate::session::kernels::kernels(&crate::session::kernels::KernelsOptions {
                kernels: a.kernels,
                mem: a.mem,
                swap: a.swap,
                disk: a.disk,
                cpus: a.cpus,
                repeat: a.repeat,
                timeout: Duration::from_secs(a.timeout.max(10)),
                kvm: a.kvm,
                out: a.out,
                command: a.command,
            })
        }
        Commands::Workload { name, args } => {
            let Some(b) = vmtrace_workloads::cli::bundled(&name) else {
                anyhow::bail!("no bundled workload named {name}");
            };
            // Show up as the workload, not as vmtrace, in ps and reports.
            if let Ok(c) = std::ffi::CString::new(b.name) {
                // SAFETY: PR_SET_NAME with a valid NUL-terminated string.
                unsafe { libc::prctl(libc::PR_SET_NAME, c.as_ptr() as libc::c_ulong, 0, 0, 0) };
            }
            let mut argv = vec![OsString::from(b.name)];
            argv.extend(args);
            Ok((b.main)(argv))
        }
        Commands::Report { files, json } => report_command(&files, json),
        Commands::Attach(args) => attach_command(args),
        Commands::Compare {
            files,
            label,
            detail,
            json,
            format,
            svg,
            force,
        } => compare_command(
            &files,
            &label,
            detail,
            if json { "json" } else { format.as_str() },
            svg.as_deref(),
            force,
        ),
        Commands::Export {
            files,
            format,
            output,
        } => export_command(&files, &format, output.as_deref()),
        Commands::Probes { json } => {
            let listed = crate::session::run::probe_listing()?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&listed).unwrap_or_default()
                );
            } else {
                print!(
                    "{}",
                    crate::view::report::probes_text(&crate::host::proc::kernel_release(), &listed)
                );
            }
            Ok(0)
        }
    }
}

/// `vmtrace run`: every configuration of a sweep, `--repeat` times each;
/// a report per run, the runs table, and the recording, rewritten after
/// each run so that an interruption keeps every finished run.
fn run_command(args: RunArgs) -> Result<i32> {
    use std::io::IsTerminal;
    let progress = if args.quiet {
        crate::session::run::Progress::Quiet
    } else {
        crate::session::run::Progress::from_mode(&args.progress, std::io::stderr().is_terminal())
    };
    let opts = RunOptions {
        command: args.command,
        label: None,
        spec: BoxSpec {
            mem_limit: args.mem,
            swap: args.swap,
            swap_dir: args.swap_dir,
        },
        fault_latency: args.fault_latency,
        page_alloc: args.page_alloc,
        bpf_stats: args.bpf_stats,
        no_probes: args.no_probes,
        as_root: args.as_root,
        progress,
        interval: Duration::from_secs_f64(args.interval),
    };
    // Not root says so first: nothing else can work without it.
    crate::host::privilege::require()?;
    // Before the environment is captured, so the recording shows them;
    // restored when the guards drop at the end of this function.
    let restored = crate::host::sysctl::restore_stale();
    if !restored.is_empty() {
        eprintln!(
            "vmtrace: a vmtrace that died left sysctls changed: {}",
            restored.join(", ")
        );
    }
    let mut _sysctls = Vec::new();
    for (name, value) in &args.sysctl {
        if let Some(g) = crate::host::sysctl::SysctlOverride::set(name, value)? {
            eprintln!("vmtrace: {name} set to {value} for the runs (restored after)");
            _sysctls.push(g);
        }
    }
    let configs = crate::session::run::sweep(&opts)?;
    let mut workload = crate::session::run::workload_of(&configs[0].1);
    workload.arguments = crate::session::run::workload_of(&opts).arguments;
    let path = args.output.clone().unwrap_or_else(|| {
        Recording::default_path(
            &workload.name,
            &crate::host::proc::kernel_release(),
            std::time::SystemTime::now(),
        )
    });
    check_writable(&path)?;
    let owner = crate::model::recording::sudo_owner();
    let mut recording = Recording::new(workload, Environment::capture());
    let total = configs.len() * args.repeat as usize;
    let mut exit_code = 0;
    let mut n = 0;
    'configs: for (label, opts) in &configs {
        for _ in 0..args.repeat {
            n += 1;
            if total > 1 {
                eprintln!("vmtrace: run {n} of {total} {label}");
            }
            let outcome = match run(opts) {
                Ok(o) => o,
                Err(e) => {
                    if !recording.runs.is_empty() {
                        recording.mark_incomplete(&format!("run {n} of {total} failed: {e:#}"));
                        recording.write(&path, owner)?;
                        eprintln!(
                            "vmtrace: recording of the {} finished run(s) written to {}",
                            recording.runs.len(),
                            path.display()
                        );
                    }
                    return Err(e);
                }
            };
            if !args.json {
                print!("{}", outcome.report.to_text());
                if total > 1 {
                    println!();
                }
            }
            if outcome.exit_code != 0 {
                exit_code = outcome.exit_code;
            }
            let interrupted = outcome.report.exit.interrupted;
            recording.runs.push(RecordedRun {
                label: label.clone(),
                report: outcome.report,
            });
            if interrupted {
                recording.mark_incomplete(&format!("interrupted during run {n} of {total}"));
            }
            recording.write(&path, owner)?;
            if interrupted {
                break 'configs;
            }
        }
    }
    let table = RunsTable::of_recording(&recording);
    if args.json {
        let json = if total > 1 {
            let runs: Vec<&RunReport> = recording.runs.iter().map(|r| &r.report).collect();
            serde_json::json!({ "runs": runs, "summary": table })
        } else {
            serde_json::to_value(&recording.runs[0].report).unwrap_or_default()
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&json).unwrap_or_default()
        );
    } else if total > 1 {
        print!("{}", table.to_text());
    }
    eprintln!("vmtrace: recording written to {}", path.display());
    Ok(exit_code)
}

/// `vmtrace report`: each recording's text, coloured on a terminal.
fn report_command(files: &[PathBuf], json: bool) -> Result<i32> {
    use std::io::IsTerminal;
    let recordings = files
        .iter()
        .map(|f| Recording::read(f))
        .collect::<Result<Vec<_>>>()?;
    if json {
        let v = if recordings.len() == 1 {
            serde_json::to_value(&recordings[0])?
        } else {
            serde_json::to_value(&recordings)?
        };
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(0);
    }
    let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    for (i, (rec, file)) in recordings.iter().zip(files).enumerate() {
        if i > 0 {
            println!();
        }
        let mut text = format!("recording: {}\n", file.display());
        text.push_str(&crate::view::export::text::render(rec));
        if colour {
            text = crate::view::report::colourize(&text);
        }
        print!("{text}");
    }
    Ok(0)
}

/// `vmtrace compare`: groups of recordings side by side.
fn compare_command(
    args: &[String],
    labels: &[String],
    detail: bool,
    format: &str,
    svg: Option<&std::path::Path>,
    force: bool,
) -> Result<i32> {
    let groups: Vec<Vec<PathBuf>> = args
        .split(|a| a == "--vs")
        .map(|g| g.iter().map(PathBuf::from).collect())
        .collect();
    if groups.len() < 2 {
        anyhow::bail!(
            "compare needs two groups: vmtrace compare A.vmtrace.json... --vs B.vmtrace.json..."
        );
    }
    if let Some(i) = groups.iter().position(Vec::is_empty) {
        anyhow::bail!(
            "group {} has no recordings: give files after each --vs",
            char::from(b'A' + (i % 26) as u8)
        );
    }
    if let Some(flag) = args.iter().find(|a| a.starts_with('-') && *a != "--vs") {
        anyhow::bail!("unknown option {flag} among the recordings; see vmtrace compare --help");
    }
    if labels.len() > groups.len() {
        anyhow::bail!(
            "{} --label given for {} groups; give one per group, in order",
            labels.len(),
            groups.len()
        );
    }
    let recordings: Vec<Vec<Recording>> = groups
        .iter()
        .map(|g| {
            g.iter()
                .map(|f| Recording::read(f))
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<_>>()?;
    let inputs: Vec<crate::view::compare::GroupInput> = groups
        .iter()
        .zip(&recordings)
        .enumerate()
        .map(|(i, (files, recs))| crate::view::compare::GroupInput {
            label: labels.get(i).cloned(),
            files: files.iter().map(|f| f.display().to_string()).collect(),
            recordings: recs.iter().collect(),
        })
        .collect();
    let cmp = crate::view::compare::compare(&inputs, force)?;
    if let Some(path) = svg {
        check_writable(path)?;
        let page = crate::view::compare::svg(&cmp, &inputs);
        // A .png path gets the same plots as an image.
        let bytes = if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("png"))
        {
            crate::view::export::png::to_png(&page)?
        } else {
            page.into_bytes()
        };
        std::fs::write(path, bytes).map_err(|e| {
            anyhow::anyhow!(
                "cannot write {}: {e}; choose another path with --svg",
                path.display()
            )
        })?;
        eprintln!("vmtrace: latency plots written to {}", path.display());
    }
    use std::io::IsTerminal;
    match format {
        "json" => println!("{}", serde_json::to_string_pretty(&cmp)?),
        "auto" if std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none() => {
            print!(
                "{}",
                crate::view::report::colourize(&crate::view::compare::text::render(&cmp, detail))
            );
        }
        _ => print!("{}", crate::view::compare::text::render(&cmp, detail)),
    }
    Ok(0)
}

/// `vmtrace export`: one recording (several for svg) in another format.
fn export_command(
    files: &[PathBuf],
    format: &str,
    output: Option<&std::path::Path>,
) -> Result<i32> {
    use std::io::Write;
    let recordings = files
        .iter()
        .map(|f| Recording::read(f))
        .collect::<Result<Vec<_>>>()?;
    let refs: Vec<&Recording> = recordings.iter().collect();
    let bytes = crate::view::export::render(&refs, format)?;
    match output {
        Some(path) => {
            check_writable(path)?;
            std::fs::write(path, &bytes).map_err(|e| {
                anyhow::anyhow!(
                    "cannot write {}: {e}; choose another path with -o",
                    path.display()
                )
            })?;
            if let Some((uid, gid)) = crate::model::recording::sudo_owner() {
                let _ = std::os::unix::fs::chown(path, Some(uid), Some(gid));
            }
        }
        None => {
            use std::io::IsTerminal;
            if format == "png" && std::io::stdout().is_terminal() {
                anyhow::bail!("PNG is binary; write it to a file with -o plots.png");
            }
            let mut out = std::io::stdout().lock();
            out.write_all(&bytes)
                .and_then(|()| out.flush())
                .map_err(|e| anyhow::anyhow!("writing to stdout: {e}"))?;
        }
    }
    Ok(0)
}

/// Refuses, before anything runs, a recording path vmtrace could not
/// write: its directory missing, not a directory, or not writable.
fn check_writable(path: &std::path::Path) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if path.is_dir() {
        anyhow::bail!(
            "-o {}: that is a directory; give a file name, like {}/run.{}",
            path.display(),
            path.display(),
            crate::model::recording::EXTENSION
        );
    }
    if !dir.is_dir() {
        anyhow::bail!(
            "cannot write the recording to {}: directory {} does not exist; create it or choose another path with -o",
            path.display(),
            dir.display()
        );
    }
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| anyhow::anyhow!("-o {}: the path has a NUL byte", path.display()))?;
    // SAFETY: access() on a valid NUL-terminated path.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
        anyhow::bail!(
            "cannot write the recording to {}: directory {} is not writable; choose another path with -o",
            path.display(),
            dir.display()
        );
    }
    Ok(())
}

/// `NAME=VALUE` of --sysctl; the name must exist under /proc/sys.
fn parse_sysctl(text: &str) -> Result<(String, String), String> {
    let Some((name, value)) = text.split_once('=') else {
        return Err(format!("`{text}`: give NAME=VALUE, like vm.page-cluster=0"));
    };
    let name = name.trim();
    if name.is_empty() || name.contains("..") || name.starts_with('/') {
        return Err(format!("`{name}` is not a sysctl name; like vm.swappiness"));
    }
    let path = std::path::Path::new("/proc/sys").join(name.replace('.', "/"));
    if !path.is_file() {
        return Err(format!(
            "this kernel has no sysctl {name} ({} does not exist)",
            path.display()
        ));
    }
    Ok((name.to_string(), value.trim().to_string()))
}

/// A sampling interval: at least 10 ms, at most an hour.
fn parse_interval(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds, like 1 or 0.5"))?;
    if !(0.01..=3600.0).contains(&v) {
        return Err(format!(
            "--interval {text} is out of range; use 0.01 to 3600 seconds"
        ));
    }
    Ok(v)
}

/// `vmtrace compare` options and whether each takes a value.
const COMPARE_OPTIONS: &[(&str, bool)] = &[
    ("--label", true),
    ("--format", true),
    ("--svg", true),
    ("--detail", false),
    ("--json", false),
    ("--force", false),
    ("--help", false),
    ("-h", false),
];

/// `vmtrace compare A... --vs B... --detail`: compare's own options may
/// stand anywhere; they are moved in front of the recordings, which then
/// keep their order with the `--vs` separators between groups.
fn hoist_compare_options(argv: Vec<OsString>) -> Vec<OsString> {
    let mut head: Vec<OsString> = argv[..2].to_vec();
    let mut files = Vec::new();
    let mut i = 2;
    while i < argv.len() {
        let a = argv[i].to_str().unwrap_or("");
        let value = a.split_once('=').map_or(a, |(k, _)| k);
        match COMPARE_OPTIONS.iter().find(|(o, _)| *o == value) {
            Some((_, true)) if !a.contains('=') && i + 1 < argv.len() => {
                head.extend_from_slice(&argv[i..i + 2]);
                i += 2;
            }
            Some(_) => {
                head.push(argv[i].clone());
                i += 1;
            }
            None => {
                files.push(argv[i].clone());
                i += 1;
            }
        }
    }
    head.extend(files);
    head
}

/// `vmtrace run` options and whether each takes a value.
const RUN_OPTIONS: &[(&str, bool)] = &[
    ("--mem", true),
    ("--swap", true),
    ("--swap-dir", true),
    ("--repeat", true),
    ("--interval", true),
    ("--progress", true),
    ("--output", true),
    ("-o", true),
    ("--quiet", false),
    ("--sysctl", true),
    ("-q", false),
    ("--json", false),
    ("--fault-latency", false),
    ("--page-alloc", false),
    ("--bpf-stats", false),
];

/// Lets vmtrace's own options follow a bundled workload's name, as in
/// `vmtrace run build -j 2,4 --mem 128M --swap 1G --repeat 2`: they are
/// moved in front of the name before parsing. Only for bundled workloads
/// (their own flags never clash with these), and not after a `--`.
pub fn hoist_bundled_options(argv: Vec<OsString>) -> Vec<OsString> {
    if argv.get(1).and_then(|a| a.to_str()) == Some("compare") {
        return hoist_compare_options(argv);
    }
    if argv.get(1).and_then(|a| a.to_str()) != Some("run") {
        return argv;
    }
    let mut i = 2;
    // Find the workload name: the first word that is not an option or an
    // option's value.
    while i < argv.len() {
        let Some(a) = argv[i].to_str() else {
            return argv;
        };
        if a == "--" {
            return argv;
        }
        if let Some((_, takes)) = RUN_OPTIONS.iter().find(|(o, _)| *o == a) {
            i += if *takes { 2 } else { 1 };
            continue;
        }
        if a.starts_with('-') {
            i += 1;
            continue;
        }
        break;
    }
    if i >= argv.len()
        || argv[i]
            .to_str()
            .and_then(vmtrace_workloads::cli::bundled)
            .is_none()
    {
        return argv;
    }
    let (head, tail) = argv.split_at(i);
    let mut hoisted = Vec::new();
    let mut rest = vec![tail[0].clone()];
    let mut j = 1;
    while j < tail.len() {
        let a = tail[j].to_str().unwrap_or("");
        match RUN_OPTIONS.iter().find(|(o, _)| *o == a) {
            Some((_, true)) if j + 1 < tail.len() => {
                hoisted.extend_from_slice(&tail[j..j + 2]);
                j += 2;
            }
            Some((_, false)) => {
                hoisted.push(tail[j].clone());
                j += 1;
            }
            _ => {
                rest.push(tail[j].clone());
                j += 1;
            }
        }
    }
    head.iter().cloned().chain(hoisted).chain(rest).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &str) -> Vec<OsString> {
        args.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn usage_errors_are_one_line_and_help_is_not_an_error() {
        use clap::Parser;
        for (args, want) in [
            (
                "vmtrace run --interval 0 -- true",
                "--interval 0 is out of range",
            ),
            ("vmtrace run --mem -1G -- true", "negative"),
            (
                "vmtrace run",
                "required arguments were not provided: <COMMAND>",
            ),
            ("vmtrace nosuch", "unrecognized subcommand 'nosuch'"),
        ] {
            let e = Cli::try_parse_from(v(args)).expect_err(args);
            let line = one_line_usage_error(&e).expect("an error");
            assert!(!line.contains('\n'), "{line}");
            assert!(
                line.contains(want) && line.ends_with("; see --help"),
                "{line}"
            );
        }
        let e = Cli::try_parse_from(v("vmtrace run --help")).expect_err("help");
        assert_eq!(one_line_usage_error(&e), None);
    }

    #[test]
    fn vmtrace_options_after_a_bundled_workload_are_hoisted() {
        assert_eq!(
            hoist_bundled_options(v(
                "vmtrace run build -j 2,4 --mem 128M --swap 1G --repeat 2"
            )),
            v("vmtrace run --mem 128M --swap 1G --repeat 2 build -j 2,4")
        );
        assert_eq!(
            hoist_bundled_options(v("vmtrace run --json qsbench -m 350 --fault-latency")),
            v("vmtrace run --json --fault-latency qsbench -m 350")
        );
        // Not a bundled workload, or after --: left alone.
        for argv in [
            "vmtrace run make -j4 --mem 1G",
            "vmtrace run -- qsbench --mem 1G",
            "vmtrace probes --json",
        ] {
            assert_eq!(hoist_bundled_options(v(argv)), v(argv));
        }
    }

    #[test]
    fn hoisted_command_lines_parse() {
        let argv = hoist_bundled_options(v("vmtrace run build -j 2,4 --mem 128M --repeat 2"));
        let cli = Cli::try_parse_from(argv).expect("parses");
        let Commands::Run(run) = cli.command else {
            panic!("not run")
        };
        assert_eq!(run.mem, Some(128 << 20));
        assert_eq!(run.repeat, 2);
        assert_eq!(run.command, v("build -j 2,4"));
    }
}
