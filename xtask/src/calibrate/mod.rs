//! `cargo xtask calibrate --kernels`: does `vmtrace compare` name the
//! mechanism of a change it did not see being made? Each case is a patch
//! to Debian's linux-source-6.1 (xtask/calibrate/patches) whose effect
//! on memory management is known because it was planted: swap readahead
//! off, slower reclaim per folio, refaults never activated, memcg giving
//! up early, and an A/A control (a comment only) that should be called
//! within noise.
//!
//! `vmtrace kernels` builds each kernel from the tree (the stock one, the
//! baseline, and one per patch, applied to its own copy) as an
//! unprivileged user (nobody, through SUDO_UID/SUDO_GID) into a cache of
//! its own, boots each in a QEMU guest and runs the case's job in it
//! `--repeat` times. Cases whose guest and job are the same share one
//! `vmtrace kernels` (one baseline for all of them). Then `vmtrace
//! compare --json` of the baseline against each patched kernel, and a
//! table of what it named first, with its share of the elapsed
//! difference, beside what the patch was expected to do:
//! target/calibrate/UTC/kernels.md.
//!
//! The tree is unpacked once into /var/tmp/vmtrace-calibrate (root's, not
//! writable by others) and kept, with the build cache beside it: a second
//! calibration rebuilds nothing that did not change. Root only (guests,
//! memory boxes, eBPF).

mod host;
mod report;

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Instant,
};

use anyhow::{Context, Result, bail};
use report::{GroupResult, Summary};
use serde_json::Value;

use crate::{build, setup, util};

/// One planted change and how it is measured. Edit freely: cases whose
/// `mem`, `swap` and `run` are the same run in one `vmtrace kernels`.
#[derive(Debug)]
struct Case {
    /// The patch, in xtask/calibrate/patches; its stem names the case
    /// (`--only` matches a prefix of it).
    patch: &'static str,
    /// What the patch changes, for the table.
    changes: &'static str,
    /// The mechanism the compare should name first, for the table
    /// (free text: a reader's expectation, checked by eye).
    expected: &'static str,
    /// The guest's memory (`vmtrace kernels --mem`).
    mem: &'static str,
    /// The guest's swap disk (`vmtrace kernels --swap`), if any.
    swap: Option<&'static str>,
    /// The swap disk's bandwidth (`vmtrace kernels --swap-rate`), if
    /// capped: a slow disk, on which reclaim meets folios under writeback.
    swap_rate: Option<&'static str>,
    /// What runs in the guest: `run`, its options and the job, split at
    /// whitespace; `{workloads}` is xtask/calibrate/workloads (the guest
    /// sees the host's root).
    run: &'static str,
    /// Runs per kernel at least, whatever `--repeat` says (0: `--repeat`):
    /// for an effect that shows in some runs only (an OOM kill).
    min_runs: u32,
}

/// qsbench in a 128 MiB memory cgroup inside a 512 MiB guest: the job
/// reclaims for itself (memcg reclaim: no kswapd, whose CPU would take
/// turns with the job's under single-threaded TCG), swaps with locality
/// (its partitions are scanned in order, so readahead matters) and
/// refaults. About 46 s a run under TCG here (1 run: 2842 memcg reclaim
/// stalls, 10.5 s stalled, 126k pages swapped out, 14.7k major faults).
const QSBENCH_BOXED: (&str, Option<&str>, &str) =
    ("512M", None, "run --mem 128M --swap 512M qsbench -m 192");

const CASES: &[Case] = &[
    Case {
        patch: "01-swap-readahead-off.patch",
        changes: "`__swapin_nr_pages()` returns 1: no swap readahead (cluster or VMA)",
        expected: "swap-in (1 page per swap read, more swap-in faults and waits)",
        mem: QSBENCH_BOXED.0,
        swap: QSBENCH_BOXED.1,
        swap_rate: None,
        run: QSBENCH_BOXED.2,
        min_runs: 0,
    },
    Case {
        patch: "02-reclaim-slower-per-folio.patch",
        changes: "`udelay(50)` per folio in `shrink_folio_list()`",
        expected: "reclaim (on-CPU time per scanned page up)",
        mem: QSBENCH_BOXED.0,
        swap: QSBENCH_BOXED.1,
        swap_rate: None,
        run: QSBENCH_BOXED.2,
        min_runs: 0,
    },
    Case {
        patch: "03-refault-detection-off.patch",
        changes: "`workingset_refault()` counts, never activates",
        expected: "refaults (more file refaults and reads, activations 0)",
        // qsbench's refaults are beyond the distance activation protects
        // (stock activated 15.5k of 110k and its time did not move), and
        // a file larger than the box refaults on both kernels: this is a
        // new working set smaller than the box but larger than its
        // inactive list, after an old one took the active list
        // (docs/CALIBRATION.md).
        mem: "512M",
        swap: None,
        swap_rate: None,
        run: "run --mem 96M --swap 64M sh {workloads}/new-workingset.sh 48 64 24",
        min_runs: 0,
    },
    Case {
        patch: "04-memcg-gives-up-early.patch",
        changes: "`MAX_RECLAIM_RETRIES` 16 -> 1 (memcg charge, allocator, kswapd)",
        expected: "OOM kills (in the box)",
        mem: "512M",
        // A 4 MB/s swap disk: a reclaim pass frees nothing while its
        // swap-outs are in flight (6.1's shrink_folio_list activates a
        // folio under writeback), which stock's 16 retries ride out and
        // one retry does not: stock 0 of 2 OOM-killed, planted 2 of 2
        // (4.6 s in). At 8 MB/s planted survived too. At the edge of box
        // + swap (the old workload) the kill was swap filling up, on
        // either kernel (docs/CALIBRATION.md).
        swap: Some("512M"),
        swap_rate: Some("4M"),
        run: "run --mem 64M memhog --mib 32 --threads 3 --passes 2",
        min_runs: 0,
    },
    Case {
        patch: "05-aa-comment-only.patch",
        changes: "a comment in mm/vmscan.c (A/A control)",
        expected: "none: within noise",
        mem: QSBENCH_BOXED.0,
        swap: QSBENCH_BOXED.1,
        swap_rate: None,
        run: QSBENCH_BOXED.2,
        min_runs: 0,
    },
];

/// Who builds the kernels: nobody/nogroup.
const BUILDER_ID: u32 = 65534;
const BUILDER_NAME: &str = "nobody";

pub struct CalibrateOptions {
    pub kernels: bool,
    pub repeat: u32,
    /// Patch stem prefixes (`01`, `05-aa`); empty: every case.
    pub only: Vec<String>,
}

/// A `vmtrace kernels` run: the cases sharing a guest and a job.
#[derive(Debug)]
struct Group<'a> {
    mem: &'a str,
    swap: Option<&'a str>,
    swap_rate: Option<&'a str>,
    run: Vec<String>,
    /// Runs per kernel: the largest of the cases' `min_runs`.
    min_runs: u32,
    cases: Vec<&'a Case>,
}

pub fn calibrate(opts: &CalibrateOptions) -> Result<()> {
    if !opts.kernels {
        bail!("say what to calibrate: --kernels (planted kernel patches; the only calibration)");
    }
    if !util::is_root() {
        bail!(
            "calibrating boots guests and builds kernels as nobody: run it as root \
             (sudo -E cargo xtask calibrate --kernels)"
        );
    }
    if opts.repeat < 2 {
        eprintln!(
            "calibrate: with --repeat 1 compare cannot judge significance: no p, \
             and it may name nothing"
        );
    }
    let cases = chosen(CASES, &opts.only)?;
    let groups = grouped(&cases);
    let vmtrace = util::root().join("target/release/vmtrace");
    host::check_builder_reaches(&vmtrace)?;
    setup::setup(setup::Verbosity::Quiet, setup::Need::KernelBuild)?;
    build::build()?;
    let work = host::work_dir()?;
    let tree = host::unpacked_tree(&work)?;
    let cache = host::builder_cache(&work)?;
    let patches = host::staged_patches(&work, &cases)?;
    let version = std::fs::read_to_string(tree.join("Makefile"))
        .ok()
        .and_then(|m| report::kernel_version(&m))
        .unwrap_or_else(|| "unknown".into());
    let out = util::root()
        .join("target/calibrate")
        .join(util::utc_stamp());
    let report = out.join("kernels.md");
    let header = report::header(&version, &tree, opts);
    let calib = Calibration {
        vmtrace,
        tree,
        cache,
        patches,
        repeat: opts.repeat,
    };
    let started = Instant::now();
    let mut done: Vec<GroupResult> = Vec::new();
    for (n, group) in groups.iter().enumerate() {
        let dir = out.join("kernels").join(format!("g{}", n + 1));
        host::builder_out_dir(&dir)?;
        let t = Instant::now();
        let ok = calib.run_group(group, &dir)?;
        let rows = group
            .cases
            .iter()
            .enumerate()
            .map(|(j, case)| (*case, calib.compare(&dir, j + 2)))
            .collect();
        done.push(GroupResult {
            workload: workload_line(group),
            dir,
            took: t.elapsed(),
            ok,
            rows,
        });
        report::write_report(&report, &header, &done, started.elapsed())?;
    }
    let md = std::fs::read_to_string(&report).unwrap_or_default();
    print!("{md}");
    for (n, g) in done.iter().enumerate() {
        eprintln!(
            "calibrate: group {} ({}): {}",
            n + 1,
            stems(g.rows.iter().map(|(c, _)| *c)),
            report::duration(g.took)
        );
    }
    eprintln!(
        "calibrate: {} in all; results in {}",
        report::duration(started.elapsed()),
        report.display()
    );
    Ok(())
}

/// The cases `--only` names (by a prefix of their patch's stem), in the
/// table's order; all of them without it.
fn chosen<'a>(cases: &'a [Case], only: &[String]) -> Result<Vec<&'a Case>> {
    for prefix in only {
        if !cases.iter().any(|c| stem(c).starts_with(prefix.as_str())) {
            bail!(
                "--only {prefix}: no patch's name starts with it; the patches: {}",
                stems(cases.iter())
            );
        }
    }
    Ok(cases
        .iter()
        .filter(|c| only.is_empty() || only.iter().any(|p| stem(c).starts_with(p.as_str())))
        .collect())
}

/// The cases grouped by guest and job (the same `--mem`, `--swap` and
/// `run` words), groups in the order of their first case.
fn grouped<'a>(cases: &[&'a Case]) -> Vec<Group<'a>> {
    let mut groups: Vec<Group<'a>> = Vec::new();
    for &case in cases {
        let workloads = util::root().join("xtask/calibrate/workloads");
        let run: Vec<String> = case
            .run
            .split_whitespace()
            .map(|w| w.replace("{workloads}", &workloads.to_string_lossy()))
            .collect();
        match groups.iter_mut().find(|g| {
            g.mem == case.mem
                && g.swap == case.swap
                && g.swap_rate == case.swap_rate
                && g.run == run
        }) {
            Some(g) => {
                g.min_runs = g.min_runs.max(case.min_runs);
                g.cases.push(case);
            }
            None => groups.push(Group {
                mem: case.mem,
                swap: case.swap,
                swap_rate: case.swap_rate,
                run,
                min_runs: case.min_runs,
                cases: vec![case],
            }),
        }
    }
    groups
}

fn stem(case: &Case) -> &str {
    case.patch.strip_suffix(".patch").unwrap_or(case.patch)
}

fn stems<'a>(cases: impl Iterator<Item = &'a Case>) -> String {
    cases.map(stem).collect::<Vec<_>>().join(", ")
}

/// `--mem 256M --swap 512M -- run ...`, as given to `vmtrace kernels`.
fn workload_line(g: &Group) -> String {
    let swap = g.swap.map(|s| format!(" --swap {s}")).unwrap_or_default();
    let rate = g
        .swap_rate
        .map(|r| format!(" --swap-rate {r}"))
        .unwrap_or_default();
    format!("--mem {}{swap}{rate} -- {}", g.mem, g.run.join(" "))
}

/// What every group's `vmtrace kernels` shares.
struct Calibration {
    vmtrace: PathBuf,
    tree: PathBuf,
    cache: PathBuf,
    /// The staged copies of the patches, by file name.
    patches: PathBuf,
    repeat: u32,
}

impl Calibration {
    /// One `vmtrace kernels`: the baseline, then each case's kernel, in
    /// `dir`. False when it failed (the recordings it left are still
    /// compared).
    fn run_group(&self, group: &Group, dir: &Path) -> Result<bool> {
        let mut cmd = Command::new(&self.vmtrace);
        cmd.arg("kernels")
            .arg("--build-cache")
            .arg(&self.cache)
            .arg("--kernel")
            .arg(&self.tree);
        for case in &group.cases {
            let mut spec = self.tree.clone().into_os_string();
            spec.push(":");
            spec.push(self.patches.join(case.patch));
            cmd.arg("--kernel").arg(spec);
        }
        cmd.arg("--repeat")
            .arg(self.repeat.max(group.min_runs).to_string())
            .args(["--mem", group.mem]);
        if let Some(swap) = group.swap {
            cmd.args(["--swap", swap]);
        }
        if let Some(rate) = group.swap_rate {
            cmd.args(["--swap-rate", rate]);
        }
        cmd.arg("-o").arg(dir).arg("--").args(&group.run);
        let id = BUILDER_ID.to_string();
        cmd.env("SUDO_UID", &id)
            .env("SUDO_GID", &id)
            .env("SUDO_USER", BUILDER_NAME);
        eprintln!(
            "calibrate: baseline and {} with {}",
            stems(group.cases.iter().copied()),
            workload_line(group)
        );
        match util::run(&mut cmd) {
            Ok(()) => Ok(true),
            Err(e) => {
                eprintln!("calibrate: {e:#}; comparing what it recorded");
                Ok(false)
            }
        }
    }

    /// `vmtrace compare --json` of the baseline's recording (kernel 1 of
    /// the group) against kernel `index`'s, summarized.
    fn compare(&self, dir: &Path, index: usize) -> Result<Vec<Summary>> {
        let base = recording(dir, 1)?;
        let this = recording(dir, index)?;
        let json = util::output(
            Command::new(&self.vmtrace)
                .args([
                    "compare", "--json", "--label", "baseline", "--label", "patched",
                ])
                .arg(&base)
                .arg("--vs")
                .arg(&this),
        )?;
        let doc: Value = serde_json::from_str(&json).context("reading vmtrace compare --json")?;
        report::summarize(&doc)
    }
}

/// `DIR/<index>-<name>/run.vmtrace.json`: `vmtrace kernels` numbers its
/// kernels' directories from 1, in `--kernel` order.
fn recording(dir: &Path, index: usize) -> Result<PathBuf> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let number = name.split_once('-').map(|(n, _)| n);
        if number.and_then(|n| n.parse::<usize>().ok()) == Some(index) {
            let rec = entry.path().join("run.vmtrace.json");
            if rec.is_file() {
                return Ok(rec);
            }
            bail!(
                "{} has no recording (see its console.log)",
                entry.path().display()
            );
        }
    }
    bail!("{} has no directory for kernel {index}", dir.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn case(patch: &'static str, mem: &'static str, run: &'static str) -> Case {
        Case {
            patch,
            changes: "",
            expected: "",
            mem,
            swap: Some("1G"),
            swap_rate: None,
            run,
            min_runs: 0,
        }
    }

    #[test]
    fn every_case_has_its_patch_in_git_format() {
        let dir = util::root().join("xtask/calibrate/patches");
        for c in CASES {
            let text = std::fs::read_to_string(dir.join(c.patch)).expect(c.patch);
            assert!(text.starts_with("From "), "{}", c.patch);
            assert!(text.contains("\nSubject: [PATCH] "), "{}", c.patch);
            assert!(
                text.contains("\n--- a/") && text.contains("\n+++ b/"),
                "{}",
                c.patch
            );
            assert!(
                !c.run.trim().is_empty() && c.run.starts_with("run "),
                "{}",
                c.patch
            );
        }
        let stems: Vec<&str> = CASES.iter().map(stem).collect();
        assert!(stems.iter().any(|s| s.contains("aa")), "an A/A control");
    }

    #[test]
    fn cases_with_the_same_guest_and_job_share_one_group_in_table_order() {
        let cases = [
            case("01-a.patch", "256M", "run --no-box qsbench -m 320"),
            case("02-b.patch", "512M", "run --mem 96M memhog"),
            case("03-c.patch", "256M", "run  --no-box   qsbench -m 320"),
            case("04-d.patch", "256M", "run --no-box qsbench -m 300"),
            Case {
                swap: None,
                ..case("05-e.patch", "256M", "run --no-box qsbench -m 320")
            },
            Case {
                swap_rate: Some("4M"),
                ..case("06-f.patch", "256M", "run --no-box qsbench -m 320")
            },
        ];
        let refs: Vec<&Case> = cases.iter().collect();
        let groups = grouped(&refs);
        let names: Vec<String> = groups
            .iter()
            .map(|g| stems(g.cases.iter().copied()))
            .collect();
        assert_eq!(names, ["01-a, 03-c", "02-b", "04-d", "05-e", "06-f"]);
        assert_eq!(
            workload_line(&groups[0]),
            "--mem 256M --swap 1G -- run --no-box qsbench -m 320"
        );
        assert_eq!(
            workload_line(&groups[3]),
            "--mem 256M -- run --no-box qsbench -m 320"
        );
        assert_eq!(
            workload_line(&groups[4]),
            "--mem 256M --swap 1G --swap-rate 4M -- run --no-box qsbench -m 320"
        );
    }

    #[test]
    fn only_picks_cases_by_a_prefix_of_their_name() {
        let cases = [
            case("01-swap.patch", "256M", "run x"),
            case("02-reclaim.patch", "256M", "run x"),
            case("05-aa.patch", "256M", "run x"),
        ];
        let picked = |only: &[&str]| {
            let only: Vec<String> = only.iter().map(|s| s.to_string()).collect();
            chosen(&cases, &only).map(|c| stems(c.into_iter()))
        };
        assert_eq!(picked(&[]).unwrap(), "01-swap, 02-reclaim, 05-aa");
        assert_eq!(picked(&["05", "01"]).unwrap(), "01-swap, 05-aa");
        assert_eq!(picked(&["02-rec"]).unwrap(), "02-reclaim");
        let err = picked(&["07"]).unwrap_err().to_string();
        assert!(err.contains("--only 07") && err.contains("05-aa"), "{err}");
    }

    #[test]
    fn a_kernels_recording_is_found_by_its_number() {
        let dir = std::env::temp_dir().join(format!("xtask-calibrate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (name, rec) in [
            ("1-6.1.172", true),
            ("12-6.1.172", true),
            ("2-6.1.172", false),
        ] {
            std::fs::create_dir_all(dir.join(name)).unwrap();
            if rec {
                std::fs::write(dir.join(name).join("run.vmtrace.json"), "{}").unwrap();
            }
        }
        let found = recording(&dir, 1);
        let twelve = recording(&dir, 12);
        let missing = recording(&dir, 2);
        let absent = recording(&dir, 3);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(found.unwrap(), dir.join("1-6.1.172/run.vmtrace.json"));
        assert_eq!(twelve.unwrap(), dir.join("12-6.1.172/run.vmtrace.json"));
        assert!(missing.unwrap_err().to_string().contains("no recording"));
        assert!(
            absent
                .unwrap_err()
                .to_string()
                .contains("no directory for kernel 3")
        );
    }
}
