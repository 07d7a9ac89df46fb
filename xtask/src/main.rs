//! Developer tasks for vmtrace: `cargo xtask
//! <setup|build|run|test|lint|bench|calibrate>`.
//! Each task does the set-up it needs, so a fresh machine needs nothing
//! typed by hand first.

mod bench;
mod build;
mod calibrate;
mod run;
mod setup;
mod test;
mod util;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "vmtrace developer tasks")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Install what the build and tests need and is missing (idempotent):
    /// the nightly's rust-src, bpf-linker against the nightly's LLVM,
    /// Debian packages
    Setup {
        /// Also what building a guest kernel from a tree needs (flex,
        /// bison, bc, libelf-dev, libssl-dev, dwarves) and Debian's
        /// linux-source-6.1
        #[arg(long)]
        kernel_build: bool,
    },
    /// Build vmtrace (with its eBPF programs) and the workloads, release
    Build,
    /// The main job: a traced qsbench in a small memory box with swap
    Run {
        /// Extra `vmtrace run` options (e.g. --json), before the command
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Every test: unit tests, then the kernel tests (root only)
    Test {
        /// Run the kernel tests this many times (unit tests skipped) and
        /// print each test's pass count: e.g. `--repeat 10 zones`
        #[arg(long, default_value_t = 1)]
        repeat: usize,
        /// Only the kernel tests whose names contain this (unit tests
        /// skipped)
        filter: Option<String>,
    },
    /// cargo fmt --check and cargo clippy -D warnings
    Lint,
    /// What tracing costs the traced job: vmtrace beside bpftrace, perf
    /// record and trace-cmd (installed when missing), interleaved rounds,
    /// ratios to the bare run; writes target/bench/UTC/bench.md (root;
    /// about 35 minutes with the defaults)
    Bench {
        /// Interleaved rounds (every configuration once per round)
        #[arg(long, default_value_t = 10)]
        rounds: usize,
        /// Workloads, comma-separated: qsbench (reclaim and swap in a
        /// small box), faults (the page-fault path, no pressure)
        #[arg(long, value_delimiter = ',', default_value = "qsbench,faults")]
        workloads: Vec<String>,
        /// Configurations, comma-separated (bare is always included)
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "bare,vmtrace,bpftrace,perf-record,trace-cmd"
        )]
        tools: Vec<String>,
        /// Directory for the results [default: target/bench/UTC]
        #[arg(long)]
        out: Option<std::path::PathBuf>,
        /// Instead: `vmtrace attach --serve` for MINUTES while memory
        /// boxes come and go, scraped every second (RSS, scrape latency,
        /// lost events; soak.md). 30 for the documented run
        #[arg(long, value_name = "MINUTES", conflicts_with = "cardinality")]
        soak: Option<u64>,
        /// Instead: `vmtrace attach --serve` at the default cap while
        /// CGROUPS cgroups stall in memcg reclaim and stay (series,
        /// scrape size and latency, RSS, promtool; with fine and coarse
        /// per-cgroup buckets; cardinality.md). 300 for the documented run
        #[arg(long, value_name = "CGROUPS")]
        cardinality: Option<usize>,
        /// Also: the eBPF programs' cost against the same programs at
        /// commit REV (built in target/bench-baseline), in alternating
        /// pairs of runs, one per round
        #[arg(long, value_name = "REV")]
        baseline: Option<String>,
    },
    /// Does compare name a cause it was not told? With --kernels: Debian's
    /// 6.1 tree built stock and with each planted patch
    /// (xtask/calibrate/patches), booted in guests by `vmtrace kernels`,
    /// compared; writes target/calibrate/UTC/kernels.md (root; hours:
    /// each kernel builds in about 12 minutes the first time)
    Calibrate {
        /// The planted kernel patches (the only calibration so far)
        #[arg(long)]
        kernels: bool,
        /// Runs of the job in each guest (compare judges significance
        /// from 2)
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
        repeat: u32,
        /// Only these cases: prefixes of the patches' names,
        /// comma-separated (e.g. 01,05)
        #[arg(long, value_delimiter = ',', value_name = "NAME[,NAME]")]
        only: Vec<String>,
    },
}

fn main() {
    let cli = Cli::parse();
    let result: Result<()> = match cli.task {
        Task::Setup { kernel_build } => setup::setup(
            setup::Verbosity::Report,
            if kernel_build {
                setup::Need::KernelBuild
            } else {
                setup::Need::Test
            },
        ),
        Task::Build => build::build(),
        Task::Run { args } => run::run(&args),
        Task::Test { repeat, filter } => test::test(&test::TestOptions { repeat, filter }),
        Task::Lint => build::lint(),
        Task::Bench {
            rounds,
            workloads,
            tools,
            out,
            soak,
            cardinality,
            baseline,
        } => bench::bench(&bench::BenchOptions {
            rounds,
            workloads,
            tools,
            out,
            soak,
            cardinality,
            baseline,
        }),
        Task::Calibrate {
            kernels,
            repeat,
            only,
        } => calibrate::calibrate(&calibrate::CalibrateOptions {
            kernels,
            repeat,
            only,
        }),
    };
    if let Err(e) = result {
        eprintln!("xtask: error: {e:#}");
        std::process::exit(1);
    }
}
