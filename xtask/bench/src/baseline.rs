//! `--baseline REV`: the eBPF programs' cost in this tree against the
//! same programs at another commit, measured in one bench run with the
//! two binaries alternating round by round. Two bench runs minutes apart
//! differ by 30-60% on every program here (a shared, noisy machine:
//! write_folio 62 -> 79 ns, block_rq_complete 160 -> 266 ns between two
//! runs of one binary), which drowns a change of tens of nanoseconds;
//! alternating pairs see the same machine, and their per-round
//! differences show the spread.

use std::{
    fmt::Write,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

use super::{Measured, measure::run_retrying, median, tools::Tool};
use crate::util;

/// The vmtrace binary at `rev`, built in a worktree of this repository
/// under target/bench-baseline/<commit> (reused while it exists).
pub fn prepare(rev: &str) -> Result<(String, PathBuf)> {
    let out = Command::new("git")
        .current_dir(util::root())
        .args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("{rev}^{{commit}}"))
        .output()
        .context("running git rev-parse")?;
    if !out.status.success() {
        bail!("--baseline {rev}: not a commit of this repository (try a hash or a tag)");
    }
    let commit = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let dir = util::root().join("target/bench-baseline").join(&commit);
    if !dir.join("Cargo.toml").exists() {
        let _ = std::fs::remove_dir_all(&dir);
        util::run(
            Command::new("git")
                .current_dir(util::root())
                .args(["worktree", "add", "--force", "--detach"])
                .arg(&dir)
                .arg(&commit),
        )?;
    }
    eprintln!("bench: building the baseline {commit} in {}", dir.display());
    util::run(
        util::cargo()
            .current_dir(&dir)
            .args(["build", "--release", "-p", "vmtrace"]),
    )?;
    let short = commit.get(..12).unwrap_or(&commit).to_string();
    Ok((short, dir.join("target/release/vmtrace")))
}

/// One round's pair: (baseline, this tree), each with bpf_stats on.
pub type Pair = (Measured, Measured);

/// `rounds` pairs of untimed bpf_stats runs of `args`, the order of the
/// two swapped every round; a pair with a failed side is left out.
pub fn pairs(
    rounds: usize,
    baseline: &Path,
    vmtrace: &Path,
    args: &[String],
    scratch: &Path,
) -> Result<Vec<Pair>> {
    let mut out = Vec::new();
    for round in 0..rounds {
        let mut sides = [None, None];
        for k in 0..2 {
            let side = (round + k) % 2;
            let bin = if side == 0 { baseline } else { vmtrace };
            sides[side] = run_retrying(Tool::Vmtrace, bin, args, scratch, true)?;
        }
        eprintln!("bench: baseline pair {}/{rounds} done", round + 1);
        if let [Some(b), Some(v)] = sides {
            out.push((b, v));
        }
    }
    Ok(out)
}

/// ns per run of `name` in one run (None when it did not run).
fn per_run(m: &Measured, name: &str) -> Option<f64> {
    m.programs
        .iter()
        .find(|p| p.0 == name && p.1 > 0)
        .map(|p| p.2 as f64 / p.1 as f64)
}

/// One program's row: medians of each side, and the median of the
/// per-round differences with their range.
#[derive(Debug, PartialEq)]
pub struct Row {
    pub program: String,
    pub baseline_ns: Option<f64>,
    pub now_ns: Option<f64>,
    /// (median, min, max) of this tree minus the baseline, per round.
    pub change: Option<(f64, f64, f64)>,
}

/// The rows, the programs of either side, this tree's busiest first.
pub fn rows(pairs: &[Pair]) -> Vec<Row> {
    let mut names: Vec<(String, u64)> = Vec::new();
    for (b, v) in pairs {
        for (name, runs, _) in v.programs.iter().chain(&b.programs) {
            match names.iter_mut().find(|n| n.0 == *name) {
                Some(n) => n.1 += runs,
                None => names.push((name.clone(), *runs)),
            }
        }
    }
    names.retain(|n| n.1 > 0);
    names.sort_by_key(|n| std::cmp::Reverse(n.1));
    names
        .into_iter()
        .map(|(program, _)| {
            let side = |f: fn(&Pair) -> &Measured| {
                let mut v: Vec<f64> = pairs
                    .iter()
                    .filter_map(|p| per_run(f(p), &program))
                    .collect();
                median(&mut v)
            };
            let mut diffs: Vec<f64> = pairs
                .iter()
                .filter_map(|(b, v)| Some(per_run(v, &program)? - per_run(b, &program)?))
                .collect();
            let lo = diffs.iter().copied().reduce(f64::min);
            let hi = diffs.iter().copied().reduce(f64::max);
            let change = median(&mut diffs)
                .zip(lo.zip(hi))
                .map(|(m, (l, h))| (m, l, h));
            Row {
                baseline_ns: side(|p| &p.0),
                now_ns: side(|p| &p.1),
                program,
                change,
            }
        })
        .collect()
}

/// The section: the table of `rows(pairs)`.
pub fn section(rev: &str, pairs: &[Pair]) -> String {
    let mut md = String::new();
    let _ = writeln!(md);
    let _ = writeln!(
        md,
        "Against {rev} (`--baseline`): {} alternating pairs of untimed runs with \
         kernel.bpf_stats_enabled, this tree and {rev} in turn; ns per run, \
         medians, and the median of the per-pair changes [their range]:",
        pairs.len()
    );
    let _ = writeln!(md);
    let _ = writeln!(
        md,
        "| program | {rev} ns/run | this tree ns/run | change ns |"
    );
    let _ = writeln!(md, "|---|---|---|---|");
    let ns = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.0}"));
    for r in rows(pairs) {
        let change = r.change.map_or("-".into(), |(m, l, h)| {
            format!("{m:+.0} [{l:+.0} to {h:+.0}]")
        });
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            r.program,
            ns(r.baseline_ns),
            ns(r.now_ns),
            change
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(programs: &[(&str, u64, u64)]) -> Measured {
        Measured {
            programs: programs
                .iter()
                .map(|(n, r, ns)| (n.to_string(), *r, *ns))
                .collect(),
            ..Measured::default()
        }
    }

    #[test]
    fn rows_pair_each_round_and_keep_programs_of_either_side() {
        let pairs = vec![
            (
                run(&[("sched_switch", 100, 30_000)]),
                run(&[("sched_switch", 100, 35_000), ("contention_fork", 2, 900)]),
            ),
            (
                run(&[("sched_switch", 100, 50_000)]),
                run(&[("sched_switch", 100, 52_000)]),
            ),
            (
                run(&[("sched_switch", 100, 40_000)]),
                run(&[("sched_switch", 100, 48_000)]),
            ),
        ];
        let rows = rows(&pairs);
        assert_eq!(rows[0].program, "sched_switch");
        assert_eq!(rows[0].baseline_ns, Some(400.0));
        assert_eq!(rows[0].now_ns, Some(480.0));
        // Per pair: +50, +20, +80.
        assert_eq!(rows[0].change, Some((50.0, 20.0, 80.0)));
        assert_eq!(rows[1].program, "contention_fork");
        assert_eq!(rows[1].baseline_ns, None);
        assert_eq!(rows[1].change, None);
        let md = section("ff4095f", &pairs);
        assert!(
            md.contains("| sched_switch | 400 | 480 | +50 [+20 to +80] |"),
            "{md}"
        );
        assert!(md.contains("| contention_fork | - | 450 | - |"), "{md}");
    }
}
