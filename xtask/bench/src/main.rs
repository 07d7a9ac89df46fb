//! `cargo xtask bench`: what tracing costs the traced job, vmtrace beside
//! the tools people use today (bpftrace, perf record, trace-cmd), on two
//! workloads: qsbench in a small box with swap (reclaim and swap storm)
//! and a fault storm without pressure (the page-fault hot path).
//!
//! Configurations run interleaved, each round in a rotated order, so that
//! drift of a shared, noisy machine falls on all of them alike; each
//! tool's ratio to the bare run of the same round is the measure (median
//! and range over rounds). A last, untimed round per workload reads the
//! eBPF programs' own run time (kernel.bpf_stats_enabled, restored after)
//! for vmtrace and bpftrace. Nothing here is a pass/fail test: the
//! results go to a Markdown file (docs/BENCHMARKS.md quotes it).
//!
//! A crate of its own (xtask builds and runs it with the arguments it was
//! given): it reads each run's recording as vmtrace's typed model, and
//! checks its signal table against `vmtrace probes --json` (`signals`).

mod baseline;
mod cardinality;
mod costs;
mod measure;
mod signals;
mod soak;
mod stats;
mod tools;
mod util;

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};
use clap::Parser;
use measure::run_retrying;
use stats::{median, spread};
use tools::Tool;

/// What tracing costs the traced job: vmtrace beside bpftrace, perf
/// record and trace-cmd (installed when missing), interleaved rounds,
/// ratios to the bare run; writes target/bench/UTC/bench.md (root; about
/// 35 minutes with the defaults)
#[derive(Parser)]
#[command(name = "cargo xtask bench", bin_name = "cargo xtask bench")]
pub struct BenchOptions {
    /// Interleaved rounds (every configuration once per round)
    #[arg(long, default_value_t = 10)]
    pub rounds: usize,
    /// Workloads, comma-separated: qsbench (reclaim and swap in a
    /// small box), faults (the page-fault path, no pressure)
    #[arg(long, value_delimiter = ',', default_value = "qsbench,faults")]
    pub workloads: Vec<String>,
    /// Configurations, comma-separated (bare is always included)
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "bare,vmtrace,bpftrace,perf-record,trace-cmd"
    )]
    pub tools: Vec<String>,
    /// Directory for the results [default: target/bench/UTC]
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Instead: `vmtrace attach --serve` for MINUTES while memory
    /// boxes come and go, scraped every second (RSS, scrape latency,
    /// lost events; soak.md). 30 for the documented run
    #[arg(long, value_name = "MINUTES", conflicts_with = "cardinality")]
    pub soak: Option<u64>,
    /// Instead: `vmtrace attach --serve` at the default cap while
    /// CGROUPS cgroups stall in memcg reclaim and stay (series,
    /// scrape size and latency, RSS, promtool; with fine and coarse
    /// per-cgroup buckets; cardinality.md). 300 for the documented run
    #[arg(long, value_name = "CGROUPS")]
    pub cardinality: Option<usize>,
    /// Also: the eBPF programs' cost against the same programs at
    /// commit REV (built in target/bench-baseline), in alternating
    /// pairs of runs, one per round
    #[arg(long, value_name = "REV")]
    pub baseline: Option<String>,
}

fn main() {
    let opts = BenchOptions::parse();
    if let Err(e) = bench(&opts) {
        eprintln!("bench: error: {e:#}");
        std::process::exit(1);
    }
}

/// A workload of the bench: the bundled workload's arguments (the box
/// is its default one), and what one of its runs is called.
struct Workload {
    name: &'static str,
    args: &'static [&'static str],
    what: &'static str,
}

const WORKLOADS: &[Workload] = &[
    Workload {
        name: "qsbench",
        args: &["qsbench", "-m", "350"],
        what: "qsbench -m 350 in a 256 MiB memory cgroup with a 2 GiB swapfile \
               (vmtrace's default box for it): memcg reclaim and swap",
    },
    Workload {
        name: "faults",
        args: &["faults", "--mib", "32", "--passes", "320"],
        what: "2.6 M first-touch minor faults (32 MiB written, dropped with \
               MADV_DONTNEED, 320 times), no memory limit: the fault path",
    },
];

/// What one run measured.
#[derive(Clone, Debug, Default)]
struct Measured {
    wall_s: f64,
    user_s: f64,
    sys_s: f64,
    minor_faults: u64,
    /// The tracer's own CPU time (vmtrace: from its report; a peer: its
    /// process tree's minus the workload's and the bare vmtrace's).
    tool_cpu_s: Option<f64>,
    /// The tracer's peak RSS (its processes, not the workload's).
    tool_rss: Option<u64>,
    lost: Option<u64>,
    recorded: Option<u64>,
    attach_s: Option<f64>,
    /// (program, runs, run ns): with bpf_stats on.
    programs: Vec<(String, u64, u64)>,
}

pub fn bench(opts: &BenchOptions) -> Result<()> {
    if !util::is_root() {
        bail!(
            "the bench loads eBPF programs and creates cgroups and swapfiles: \
             run it as root (sudo -E cargo xtask bench)"
        );
    }
    if let Some(minutes) = opts.soak {
        return run_soak(opts, minutes);
    }
    if let Some(cgroups) = opts.cardinality {
        let vmtrace = util::build()?.join("vmtrace");
        let out = out_dir(opts);
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        return cardinality::cardinality(&vmtrace, cgroups, &out);
    }
    if opts.rounds < 2 {
        bail!("--rounds must be at least 2 (ratios need a bare run per round)");
    }
    let workloads = chosen_workloads(opts)?;
    let tools = chosen_tools(opts)?;
    install_peers(&tools)?;
    let vmtrace = util::build()?.join("vmtrace");
    signals::check_against(&vmtrace);
    let baseline = opts
        .baseline
        .as_deref()
        .map(baseline::prepare)
        .transpose()?;
    let out = out_dir(opts);
    let scratch = out.join("scratch");
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let _tracefs = TracefsMount::ensure()?;

    let mut md = header(opts, &tools)?;
    let mut csv = String::from(
        "workload,round,tool,elapsed_s,user_s,sys_s,minor_faults,tool_cpu_s,tool_rss_bytes,lost,recorded,attach_s\n",
    );
    let bench = Bench {
        tools: &tools,
        rounds: opts.rounds,
        vmtrace: &vmtrace,
        scratch: &scratch,
        out: &out,
    };
    for w in &workloads {
        let args: Vec<String> = w.args.iter().map(|a| a.to_string()).collect();
        let results = bench.timed_rounds(w, &args, &mut csv)?;
        let costs = bench.program_costs(&args)?;
        md.push_str(&section(w, &tools, &results, &costs));
        if let Some((rev, bin)) = &baseline {
            let pairs = baseline::pairs(opts.rounds, bin, &vmtrace, &args, &scratch)?;
            md.push_str(&baseline::section(rev, &pairs));
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let report = out.join("bench.md");
    std::fs::write(&report, &md).with_context(|| format!("writing {}", report.display()))?;
    print!("{md}");
    eprintln!(
        "bench: results in {} (every run: {})",
        report.display(),
        out.join("runs.csv").display()
    );
    Ok(())
}

/// `--soak MINUTES`: the serve soak alone.
fn run_soak(opts: &BenchOptions, minutes: u64) -> Result<()> {
    let release = util::build()?;
    let out = out_dir(opts);
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    soak::soak(
        &release.join("vmtrace"),
        &release.join("memhog"),
        minutes,
        &out,
    )
}

/// Where the results go: `--out`, or target/bench/<UTC time>.
fn out_dir(opts: &BenchOptions) -> PathBuf {
    match &opts.out {
        Some(o) => o.clone(),
        None => util::root().join("target/bench").join(util::utc_stamp()),
    }
}

fn chosen_workloads(opts: &BenchOptions) -> Result<Vec<&'static Workload>> {
    opts.workloads
        .iter()
        .map(|n| {
            WORKLOADS
                .iter()
                .find(|w| w.name == n)
                .with_context(|| format!("unknown workload {n}; choose from qsbench, faults"))
        })
        .collect()
}

/// The tools asked for, the bare run first when it was not asked for.
fn chosen_tools(opts: &BenchOptions) -> Result<Vec<Tool>> {
    let mut tools: Vec<Tool> = opts
        .tools
        .iter()
        .map(|n| {
            Tool::parse(n).with_context(|| {
                format!(
                    "unknown tool {n}; choose from bare, vmtrace, bpftrace, perf-record, trace-cmd"
                )
            })
        })
        .collect::<Result<_>>()?;
    if !tools.contains(&Tool::Bare) {
        tools.insert(0, Tool::Bare);
    }
    Ok(tools)
}

/// What every run of a bench shares.
struct Bench<'a> {
    tools: &'a [Tool],
    rounds: usize,
    vmtrace: &'a Path,
    scratch: &'a Path,
    out: &'a Path,
}

impl Bench<'_> {
    /// The timed rounds of one workload, each in a rotated order:
    /// results[tool][round], None when the run failed (an OOM kill).
    /// Each run is a line of `csv`, written out after every round.
    fn timed_rounds(
        &self,
        w: &Workload,
        args: &[String],
        csv: &mut String,
    ) -> Result<Vec<Vec<Option<Measured>>>> {
        let tools = self.tools;
        let mut results: Vec<Vec<Option<Measured>>> = vec![Vec::new(); tools.len()];
        for round in 0..self.rounds {
            for k in 0..tools.len() {
                let i = (round + k) % tools.len();
                let tool = tools[i];
                let m = run_retrying(tool, self.vmtrace, args, self.scratch, false)?;
                if let Some(m) = &m {
                    eprintln!(
                        "bench: {} round {}/{} {:<12} {:.2} s elapsed, {:.2} s sys",
                        w.name,
                        round + 1,
                        self.rounds,
                        tool.name(),
                        m.wall_s,
                        m.sys_s
                    );
                    csv.push_str(&csv_line(w, round, tool, m));
                }
                results[i].push(m);
            }
            std::fs::write(self.out.join("runs.csv"), &*csv)?;
        }
        Ok(results)
    }

    /// The programs' own cost, with bpf_stats on (it adds to every run,
    /// so these runs are not timed).
    fn program_costs(&self, args: &[String]) -> Result<Vec<(Tool, Measured)>> {
        let mut costs = Vec::new();
        for tool in [
            Tool::Vmtrace,
            Tool::VmtraceNoStacks,
            Tool::Bpftrace,
            Tool::EmptyPrograms,
            Tool::ClockPrograms,
        ] {
            // The floor programs come with bpftrace (the same tool loads them).
            let floor = matches!(tool, Tool::EmptyPrograms | Tool::ClockPrograms);
            let wanted =
                self.tools.contains(&tool) || (floor && self.tools.contains(&Tool::Bpftrace));
            if wanted && let Some(m) = run_retrying(tool, self.vmtrace, args, self.scratch, true)? {
                costs.push((tool, m));
            }
        }
        Ok(costs)
    }
}

/// One run's line of runs.csv.
fn csv_line(w: &Workload, round: usize, tool: Tool, m: &Measured) -> String {
    format!(
        "{},{},{},{:.3},{:.3},{:.3},{},{},{},{},{},{}\n",
        w.name,
        round + 1,
        tool.name(),
        m.wall_s,
        m.user_s,
        m.sys_s,
        m.minor_faults,
        opt(m.tool_cpu_s.map(|v| format!("{v:.3}"))),
        opt(m.tool_rss),
        opt(m.lost),
        opt(m.recorded),
        opt(m.attach_s.map(|v| format!("{v:.3}"))),
    )
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// Installs the peers that are missing (Debian packages).
fn install_peers(tools: &[Tool]) -> Result<()> {
    let missing: Vec<&str> = tools
        .iter()
        .filter_map(|t| t.needs())
        .filter(|(bin, _)| !util::on_path(bin))
        .map(|(_, pkg)| pkg)
        .collect();
    if !missing.is_empty() {
        util::install_debian(&missing)?;
    }
    Ok(())
}

/// tracefs at /sys/kernel/tracing for the peers (perf and trace-cmd read
/// it); mounted for the bench when missing, unmounted after.
struct TracefsMount(bool);

impl TracefsMount {
    fn ensure() -> Result<TracefsMount> {
        if Path::new("/sys/kernel/tracing/events").exists() {
            return Ok(TracefsMount(false));
        }
        util::run(Command::new("mount").args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"]))?;
        Ok(TracefsMount(true))
    }
}

impl Drop for TracefsMount {
    fn drop(&mut self) {
        if self.0 {
            let _ = Command::new("umount").arg("/sys/kernel/tracing").status();
        }
    }
}

/// What ran where: kernel, machine, tool versions, the command line.
fn header(opts: &BenchOptions, tools: &[Tool]) -> Result<String> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        .unwrap_or_default();
    let cpus = read("/proc/cpuinfo")
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let mem_gib = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1048576.0);
    let version = |bin: &str, arg: &str| -> String {
        Command::new(bin)
            .arg(arg)
            .output()
            .map(|o| {
                let s = String::from_utf8_lossy(if o.stdout.is_empty() {
                    &o.stderr
                } else {
                    &o.stdout
                })
                .into_owned();
                s.lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .trim()
                    .to_string()
            })
            .unwrap_or_else(|_| "not installed".into())
    };
    let mut md = String::new();
    writeln!(md, "# vmtrace overhead bench")?;
    writeln!(md)?;
    writeln!(
        md,
        "- command: `sudo -E cargo xtask bench --rounds {} --workloads {} --tools {}`",
        opts.rounds,
        opts.workloads.join(","),
        tools.iter().map(|t| t.name()).collect::<Vec<_>>().join(",")
    )?;
    writeln!(
        md,
        "- kernel: {} ({})",
        read("/proc/sys/kernel/osrelease").trim(),
        read("/proc/version").trim()
    )?;
    writeln!(md, "- machine: {cpus} x {cpu}, {mem_gib:.1} GiB")?;
    writeln!(md, "- date: {}", util::utc_stamp())?;
    for t in tools {
        let v = match t {
            Tool::Bare => continue,
            Tool::Vmtrace | Tool::VmtraceNoStacks => {
                format!("vmtrace {}", env!("CARGO_PKG_VERSION"))
            }
            Tool::Bpftrace => version("bpftrace", "--version"),
            Tool::Perf => version("perf", "--version"),
            Tool::TraceCmd => version("trace-cmd", "--version"),
            Tool::EmptyPrograms | Tool::ClockPrograms => continue,
        };
        writeln!(md, "- {}: {v}", t.name())?;
    }
    Ok(md)
}

/// A tool's row of a workload's table: its runs `own`, each paired with
/// the bare run of its round.
fn tool_row(tool: Tool, own: &[Option<Measured>], bare: &[Option<Measured>]) -> String {
    let runs: Vec<&Measured> = own.iter().flatten().collect();
    let pairs: Vec<(&Measured, &Measured)> = own
        .iter()
        .zip(bare)
        .filter_map(|(m, b)| Some((m.as_ref()?, b.as_ref()?)))
        .collect();
    let wall: Vec<f64> = runs.iter().map(|m| m.wall_s).collect();
    let sys: Vec<f64> = runs.iter().map(|m| m.sys_s).collect();
    let ratio: Vec<f64> = pairs.iter().map(|(m, b)| m.wall_s / b.wall_s).collect();
    let dsys: Vec<f64> = pairs.iter().map(|(m, b)| m.sys_s - b.sys_s).collect();
    let per_fault: Vec<f64> = pairs
        .iter()
        .map(|(m, b)| (m.sys_s - b.sys_s) * 1e9 / b.minor_faults.max(1) as f64)
        .collect();
    let cpu: Vec<f64> = runs.iter().filter_map(|m| m.tool_cpu_s).collect();
    let rss = runs.iter().filter_map(|m| m.tool_rss).max();
    let lost: Option<u64> = runs.iter().filter_map(|m| m.lost).reduce(|a, b| a + b);
    let failed = own.iter().filter(|m| m.is_none()).count();
    let is_bare = tool == Tool::Bare;
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {}{} |",
        tool.name(),
        spread(&wall, 2),
        if is_bare {
            "1".into()
        } else {
            spread(&ratio, 3)
        },
        spread(&sys, 2),
        if is_bare {
            "-".into()
        } else {
            spread(&dsys, 2)
        },
        if is_bare {
            "-".into()
        } else {
            let mut v = per_fault.clone();
            median(&mut v).map_or("-".into(), |m| format!("{m:+.0} ns"))
        },
        if cpu.is_empty() {
            "-".into()
        } else {
            spread(&cpu, 2)
        },
        rss.map_or("-".into(), |b| format!("{:.1} MiB", b as f64 / 1048576.0)),
        lost.map_or("-".into(), |l| l.to_string()),
        runs.len(),
        if failed > 0 {
            format!(", {failed} failed 3x")
        } else {
            String::new()
        },
    )
}

/// The tables of one workload.
fn section(
    w: &Workload,
    tools: &[Tool],
    results: &[Vec<Option<Measured>>],
    costs: &[(Tool, Measured)],
) -> String {
    let mut md = String::new();
    let bare = &results[0];
    let _ = writeln!(md);
    let _ = writeln!(md, "## {}", w.name);
    let _ = writeln!(md);
    let _ = writeln!(md, "{}; {} rounds.", w.what, bare.len());
    let _ = writeln!(md);
    let _ = writeln!(
        md,
        "| tool | elapsed s | elapsed / bare | sys s | sys - bare s | per fault | tool CPU s | tool peak RSS | lost | runs (OOM retried) |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|");
    for (i, tool) in tools.iter().enumerate() {
        let _ = writeln!(md, "{}", tool_row(*tool, &results[i], bare));
    }
    let attach: Vec<f64> = tools
        .iter()
        .position(|t| *t == Tool::Vmtrace)
        .map(|i| {
            results[i]
                .iter()
                .flatten()
                .filter_map(|m| m.attach_s)
                .collect()
        })
        .unwrap_or_default();
    if !attach.is_empty() {
        let _ = writeln!(md);
        let _ = writeln!(
            md,
            "vmtrace attach (load, verify and attach every program) {} s.",
            spread(&attach, 3)
        );
    }
    let recorded: Vec<String> = tools
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let mut v: Vec<f64> = results[i]
                .iter()
                .flatten()
                .filter_map(|m| Some(m.recorded? as f64))
                .collect();
            median(&mut v).map(|m| format!("{} {m:.0}", t.name()))
        })
        .collect();
    if !recorded.is_empty() {
        let _ = writeln!(md);
        let _ = writeln!(
            md,
            "Events written to the trace file (median per run): {}.",
            recorded.join(", ")
        );
    }
    md.push_str(&costs::per_tool(costs));
    md.push_str(&costs::side_by_side(costs));
    md.push_str(&costs::stacks(costs));
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_pairs_each_run_with_the_bare_run_of_its_round() {
        let run = |wall_s: f64, sys_s: f64| {
            Some(Measured {
                wall_s,
                sys_s,
                minor_faults: 1_000_000,
                tool_cpu_s: Some(0.1),
                lost: Some(0),
                ..Default::default()
            })
        };
        let results = vec![
            vec![run(10.0, 5.0), run(20.0, 6.0)],
            vec![run(11.0, 5.5), None],
        ];
        let md = section(&WORKLOADS[1], &[Tool::Bare, Tool::Vmtrace], &results, &[]);
        // Round 2 of vmtrace failed: only round 1 pairs.
        assert!(
            md.contains("| vmtrace | 11.00 [11.00-11.00] | 1.100 [1.100-1.100] |"),
            "{md}"
        );
        assert!(md.contains("| +500 ns |"), "{md}");
        assert!(md.contains("1, 1 failed 3x"), "{md}");
    }
}
