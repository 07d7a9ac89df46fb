//! Developer tasks for vmtrace: `cargo xtask <setup|build|run|test|lint>`.
//! Each task does the set-up it needs, so a fresh machine needs nothing
//! typed by hand first.

mod build;
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
    Setup,
    /// Build vmtrace (with its eBPF programs) and the workloads, release
    Build,
    /// The main job: a traced qsbench in a small memory box with swap
    Run {
        /// Extra `vmtrace run` options (e.g. --json), before the command
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Every test: unit tests, then the kernel tests (root only)
    Test,
    /// cargo fmt --check and cargo clippy -D warnings
    Lint,
}

fn main() {
    let cli = Cli::parse();
    let result: Result<()> = match cli.task {
        Task::Setup => setup::setup(setup::Verbosity::Report),
        Task::Build => build::build(),
        Task::Run { args } => run::run(&args),
        Task::Test => test::test(),
        Task::Lint => build::lint(),
    };
    if let Err(e) = result {
        eprintln!("xtask: error: {e:#}");
        std::process::exit(1);
    }
}
