//! Command lines of the bundled workloads, shared by their standalone
//! binaries and by `vmtrace run <workload>`, which runs them in-process.

use std::{ffi::OsString, time::Duration};

use anyhow::Result;
use clap::Parser;

use crate::qsbench;

#[derive(Debug, Parser)]
#[command(
    name = "qsbench",
    about = "Fill an int array from the C library's rand() and quicksort it",
    long_about = "qsbench, after the 2001 benchmark of the 'VM: qsbench numbers' \
mails: fills an array of ints with rand() after srand(SEED) (glibc's sequence, \
reproduced exactly), sorts it with a recursive median-of-three quicksort and \
verifies the order. Sized past the memory it runs in, it makes the VM swap hard. \
It prints nothing of its own but errors; time it (or run it under vmtrace).",
    after_help = "Examples:\n  qsbench -m 350            # 350 MiB of ints\n  \
qsbench -n 90000000 -p 1 -s 140175100   # the seed mail's run"
)]
pub struct QsbenchArgs {
    /// Array size in MiB (MB*1048576/4 ints)
    #[arg(
        short = 'm',
        value_name = "MB",
        default_value_t = 10,
        conflicts_with = "n"
    )]
    pub mb: usize,
    /// Array size in ints (overrides -m)
    #[arg(short = 'n', value_name = "N")]
    pub n: Option<usize>,
    /// Sorter processes, each with its own array (at most 1024)
    #[arg(short = 'p', value_name = "N", default_value_t = 1)]
    pub procs: usize,
    /// srand() seed
    #[arg(short = 's', value_name = "SEED", default_value_t = 1)]
    pub seed: u32,
    /// Back the array by an unlinked temporary file mapped MAP_SHARED (in
    /// $TMPDIR): file pages and writeback instead of anonymous memory and swap
    #[arg(short = 'M')]
    pub file_backed: bool,
    /// Sleep SECS before freeing the array
    #[arg(short = 'z', value_name = "SECS", default_value_t = 0)]
    pub sleep: u64,
    /// Say what is being done on stderr
    #[arg(short = 'v')]
    pub verbose: bool,
}

/// Runs qsbench with these arguments (argv[0] included); the exit code.
pub fn qsbench_main(args: impl IntoIterator<Item = OsString>) -> i32 {
    let args = match QsbenchArgs::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    match run_qsbench(&args) {
        Ok(0) => 0,
        Ok(_) => 1,
        Err(e) => {
            eprintln!("qsbench: error: {e:#}");
            2
        }
    }
}

fn run_qsbench(a: &QsbenchArgs) -> Result<u64> {
    let n = a.n.unwrap_or(a.mb * 1_048_576 / 4);
    let backing = if a.file_backed {
        qsbench::Backing::File(std::env::temp_dir())
    } else {
        qsbench::Backing::Anon
    };
    if a.verbose {
        eprintln!(
            "qsbench: {n} ints ({} MiB) x {} process(es), seed {}, {}",
            (n * 4) >> 20,
            a.procs.min(qsbench::MAX_PROCS),
            a.seed,
            if a.file_backed {
                "file-backed (MAP_SHARED)"
            } else {
                "anonymous"
            }
        );
    }
    qsbench::run(n, a.procs, a.seed, &backing, Duration::from_secs(a.sleep))
}

#[derive(Debug, Parser)]
#[command(
    name = "memhog",
    about = "Fill memory with random non-zero data, then touch it at random",
    after_help = "Example (256 MiB box, 1 GiB swap):\n  \
sudo vmtrace run --mem 256M --swap 1G -- memhog --mib 512 --passes 2"
)]
pub struct MemhogArgs {
    /// MiB to allocate and fill
    #[arg(long, default_value_t = 512)]
    pub mib: usize,
    /// Passes of random page touches after the fill
    #[arg(long, default_value_t = 1)]
    pub passes: usize,
    /// Seed of the random data and touch order
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Allocate 2 MiB-aligned and madvise(MADV_HUGEPAGE): transparent
    /// huge page faults (unless THP is `never`); --mib rounds up to 2
    #[arg(long)]
    pub thp: bool,
    /// Threads in the one process, each with its own --mib MiB (seeds
    /// --seed, --seed+1, ...): reclaim stalls of several threads of a
    /// process
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub threads: u32,
    /// Then, its memory freed, read FILE (a block device too) through a
    /// read-only mapping, a byte per page: each page not in the page
    /// cache is a file read (from disk, under readahead)
    #[arg(long, value_name = "FILE")]
    pub then_read: Option<std::path::PathBuf>,
    /// Print what was done on stderr
    #[arg(short, long)]
    pub verbose: bool,
}

/// Runs memhog with these arguments (argv[0] included); the exit code.
pub fn memhog_main(args: impl IntoIterator<Item = OsString>) -> i32 {
    let args = match MemhogArgs::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    if args.mib == 0 {
        eprintln!("memhog: error: --mib must be at least 1");
        return 2;
    }
    let Some(stats) =
        crate::memhog::run_threads(args.threads, args.mib, args.passes, args.seed, args.thp)
    else {
        eprintln!("memhog: error: mmap of {} MiB failed", args.mib);
        return 1;
    };
    if args.verbose {
        eprintln!(
            "memhog: {} pages, {} touches, checksum {:016x}",
            stats.pages, stats.touches, stats.checksum
        );
    }
    if let Some(file) = &args.then_read {
        match crate::memhog::read_mapped(file) {
            Ok((pages, sum)) if args.verbose => {
                eprintln!(
                    "memhog: read {} pages of {}, sum {sum}",
                    pages,
                    file.display()
                );
            }
            Ok(_) => {}
            Err(e) => {
                eprintln!("memhog: error: --then-read {}: {e}", file.display());
                return 2;
            }
        }
    }
    0
}

#[derive(Debug, Parser)]
#[command(
    name = "faults",
    about = "A storm of first-touch minor faults, without memory pressure",
    long_about = "Writes one byte to every page of a small anonymous buffer, drops \
the pages (MADV_DONTNEED), and again, --passes times: every write is a first-touch \
minor fault. The page-fault path's hot loop, where a tracer's cost shows first \
(about 2-3 us per fault on the project's machines). The buffer is small so that \
the run measures the fault path, not the host's memory.",
    after_help = "Example (2.6 M faults):\n  sudo vmtrace run faults --mib 32 --passes 320"
)]
pub struct FaultsArgs {
    /// MiB of buffer to fault in each pass
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub mib: u32,
    /// Passes over the buffer (faults = passes x pages)
    #[arg(long, default_value_t = 320)]
    pub passes: usize,
    /// Print what was done on stderr
    #[arg(short, long)]
    pub verbose: bool,
}

/// Runs faults with these arguments (argv[0] included); the exit code.
pub fn faults_main(args: impl IntoIterator<Item = OsString>) -> i32 {
    let args = match FaultsArgs::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    match crate::faults::run(args.mib as usize, args.passes) {
        Ok(stats) => {
            if args.verbose {
                eprintln!("faults: {} first-touch writes", stats.touches);
            }
            0
        }
        Err(e) => {
            eprintln!("faults: error: {e}");
            2
        }
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "build",
    about = "A kernel-build-like compile: make -jN of a generated C tree",
    long_about = "Generates a C tree (deterministic from --seed: --files translation \
units sharing a header, each big enough that its compiler process needs tens of MiB) \
in a scratch directory and builds it from clean with `make -jN` and the system C \
compiler. --source DIR builds a real tree instead, from a scratch copy, leaving DIR \
as it was (for example Debian's linux-source with --target tinyconfig... or a plain \
make target). Exits with make's status.",
    after_help = "Examples:\n  build -j 5\n  build -j 4 --source ~/src/project --target all"
)]
pub struct BuildArgs {
    /// Parallel jobs (make -jN)
    #[arg(short = 'j', value_name = "N", default_value_t = 2)]
    pub jobs: usize,
    /// Translation units of the generated tree
    #[arg(long, default_value_t = 24)]
    pub files: usize,
    /// Functions per translation unit (the size of each compile: at 15,
    /// about 1.5 s and 65 MiB of cc1 at -O2 on the project's machines)
    #[arg(long, default_value_t = 15)]
    pub functions: usize,
    /// Seed of the generated tree
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Build this tree (a scratch copy of it) instead of a generated one
    #[arg(long, value_name = "DIR")]
    pub source: Option<std::path::PathBuf>,
    /// Make target for --source
    #[arg(long, value_name = "T", requires = "source")]
    pub target: Option<String>,
    /// Write the tree to build into DIR (existing, empty) and exit: the
    /// preparation vmtrace runs before measuring (a copy of --source, or
    /// the generated tree)
    #[arg(long, value_name = "DIR", conflicts_with = "prepared")]
    pub prepare_into: Option<std::path::PathBuf>,
    /// Build the tree already in DIR (from --prepare-into) in place: only
    /// make is measured
    #[arg(long, value_name = "DIR")]
    pub prepared: Option<std::path::PathBuf>,
    /// Show make's output
    #[arg(short = 'v')]
    pub verbose: bool,
}

/// Runs build with these arguments (argv[0] included); make's exit code.
pub fn build_main(args: impl IntoIterator<Item = OsString>) -> i32 {
    let a = match BuildArgs::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    let source = match a.source {
        Some(path) => crate::build::Source::Dir {
            path,
            target: a.target.clone(),
        },
        None => crate::build::Source::Generated(crate::build::TreeSpec {
            files: a.files,
            functions: a.functions,
            seed: a.seed,
        }),
    };
    let done = match (&a.prepare_into, &a.prepared) {
        (Some(dir), _) => crate::build::prepare(&source, dir).map(|_| 0),
        (None, Some(dir)) => crate::build::make_in(dir, a.jobs, a.verbose, a.target.as_deref()),
        (None, None) => crate::build::run(&source, a.jobs, a.verbose),
    };
    match done {
        Ok(code) => code,
        Err(e) => {
            eprintln!("build: error: {e:#}");
            2
        }
    }
}

/// A workload bundled with vmtrace: its name, entry point, and the box it
/// needs.
pub struct Bundled {
    pub name: &'static str,
    pub main: fn(Vec<OsString>) -> i32,
    /// Arguments used when none are given.
    pub default_args: &'static [&'static str],
    /// The box used when neither --mem nor --swap is given (bytes; None:
    /// no limit, no swapfile).
    pub default_mem: Option<u64>,
    pub default_swap: Option<u64>,
    /// The smallest memory box it can start in (bytes).
    pub min_mem: u64,
    /// A flag that `vmtrace run` may be given a comma list for, to sweep
    /// (`build -j 5,10,15`): one column of runs per value.
    pub sweep_flag: Option<&'static str>,
    /// The seed these arguments (argv[0] included) run with, defaults
    /// applied: recordings name it so that a run can be repeated exactly.
    pub seed: fn(Vec<OsString>) -> Option<u64>,
}

/// Every bundled workload.
pub const BUNDLED: &[Bundled] = &[
    Bundled {
        name: "qsbench",
        main: |a| qsbench_main(a),
        // The configuration of the mails: 350 MiB of ints in a 256 MiB
        // box, 2 GiB of swap: real reclaim and swap in well under a minute.
        default_args: &["-m", "350"],
        default_mem: Some(256 << 20),
        default_swap: Some(2 << 30),
        min_mem: 16 << 20,
        sweep_flag: None,
        seed: |a| {
            QsbenchArgs::try_parse_from(a)
                .ok()
                .map(|a| u64::from(a.seed))
        },
    },
    Bundled {
        name: "memhog",
        main: |a| memhog_main(a),
        default_args: &["--mib", "512", "--passes", "2"],
        default_mem: Some(256 << 20),
        default_swap: Some(1 << 30),
        min_mem: 16 << 20,
        sweep_flag: None,
        seed: |a| MemhogArgs::try_parse_from(a).ok().map(|a| a.seed),
    },
    Bundled {
        name: "build",
        main: |a| build_main(a),
        // The seed's kernel compile was at -j5/-j10/-j15 in 64 MiB.
        default_args: &["-j", "5"],
        default_mem: Some(64 << 20),
        default_swap: Some(1 << 30),
        min_mem: 32 << 20,
        sweep_flag: Some("-j"),
        seed: |a| BuildArgs::try_parse_from(a).ok().map(|a| a.seed),
    },
    Bundled {
        name: "faults",
        main: |a| faults_main(a),
        // 2.6 M first-touch faults reusing 32 MiB: the fault-path
        // benchmark, deliberately without memory pressure.
        default_args: &["--mib", "32", "--passes", "320"],
        default_mem: None,
        default_swap: None,
        min_mem: 16 << 20,
        sweep_flag: None,
        seed: |_| None,
    },
];

pub fn bundled(name: &str) -> Option<&'static Bundled> {
    BUNDLED.iter().find(|b| b.name == name)
}
