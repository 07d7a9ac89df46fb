//! memhog: fill N MiB with random data, then touch it at random, P times
//! over. In a memory box smaller than N it reclaims and swaps hard.

use clap::Parser;

#[derive(Parser)]
#[command(
    name = "memhog",
    about = "Fill memory with random non-zero data, then touch it at random",
    after_help = "Example (256 MiB box, 1 GiB swap):\n  \
sudo vmtrace run --mem 256M --swap 1G -- memhog --mib 512 --passes 2"
)]
struct Args {
    /// MiB to allocate and fill
    #[arg(long, default_value_t = 512)]
    mib: usize,
    /// Passes of random page touches after the fill
    #[arg(long, default_value_t = 1)]
    passes: usize,
    /// Seed of the random data and touch order
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print what was done on stderr
    #[arg(short, long)]
    verbose: bool,
}

fn main() {
    let args = Args::parse();
    if args.mib == 0 {
        eprintln!("memhog: error: --mib must be at least 1");
        std::process::exit(2);
    }
    let stats = vmtrace_workloads::memhog::run(args.mib, args.passes, args.seed);
    if args.verbose {
        eprintln!(
            "memhog: {} pages, {} touches, checksum {:016x}",
            stats.pages, stats.touches, stats.checksum
        );
    }
}
