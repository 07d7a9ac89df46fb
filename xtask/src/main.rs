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
    /// record and trace-cmd, interleaved rounds, ratios to the bare run;
    /// writes target/bench/UTC/bench.md (root). Its options are the
    /// bench's own (xtask/bench): `cargo xtask bench --help`
    #[command(disable_help_flag = true)]
    Bench {
        /// The bench's options, passed on as given
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
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
        Task::Bench { args } => bench::bench(&args),
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
