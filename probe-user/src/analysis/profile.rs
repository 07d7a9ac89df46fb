//! Inside the stalls: where the job's CPU went while it reclaimed or
//! compacted, per kernel function, compared (issue 44).
//!
//! A run's profile (probe-ebpf `profile`) holds the job's kernel stacks
//! sampled on the CPU clock. The samples whose stack passes through
//! the functions the stall spans are timed in
//! (`model::profile::STALL_SPANS`) are the in-stall samples. Each function's share of
//! them, per run: `total`, the samples whose stack passes through it,
//! and `self`, those interrupted in it. Functions are named as on every
//! kernel (`model::profile::function_name`: no `.isra.0`, no
//! `_noprof`), and only the frames from the stall's function inwards
//! count (`ProfileReport::in_stall`: its callers are the way in), so two
//! kernels' profiles line up.
//!
//! A function's total share is tested across runs as every measure is
//! (Welch's t-test). A profile has dozens of functions, and dozens of
//! tests at 5% would name one in most A/A pairs, so a function "moved"
//! only when it holds at least `MIN_SHARE` of the in-stall samples in
//! one group, its share changed by `MIN_SHARE` or more, and its p-value
//! passes Holm's step-down correction over the functions tested; or
//! when it is absent from every run of one group and present in every
//! run of the other (a compressor that zswap switched on: a t-test
//! against a group of zeros cannot judge it with few runs).

use std::collections::HashMap;

use serde::Serialize;

use super::{
    ALPHA, Change,
    measures::change,
    stats::{Describe, describe},
};
use crate::model::profile::{ProfileReport, function_name};
use crate::model::report::RunReport;

/// The least share of the in-stall samples a function must hold in a
/// group to be tested, and the least change of it that can move.
pub const MIN_SHARE: f64 = 0.02;

/// Functions kept in the comparison (most in-stall samples first).
const MAX_ROWS: usize = 40;

/// One kernel function inside reclaim and compaction, across groups.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ProfileRow {
    pub function: String,
    /// Its share (0..1) of each run's in-stall samples whose stack
    /// passes through it, per group (None: no run of the group has
    /// in-stall samples).
    pub total: Vec<Option<Describe>>,
    /// The same for the samples interrupted in it.
    #[serde(rename = "self")]
    pub self_share: Vec<Option<Describe>>,
    /// Of `total`, per group after the baseline.
    pub changes: Vec<Option<Change>>,
    /// Per group after the baseline: whether its share moved (see the
    /// module's rules).
    pub moved: Vec<bool>,
}

/// One run's in-stall samples (`ProfileReport::in_stall`).
struct RunShares {
    by_function: HashMap<String, (u64, u64)>,
    samples: u64,
}

fn run_shares(p: &ProfileReport) -> RunShares {
    let inside = p.in_stall();
    RunShares {
        by_function: inside
            .functions
            .into_iter()
            .map(|(name, f)| (name, (f.total, f.own)))
            .collect(),
        samples: inside.samples,
    }
}

/// The in-stall profile of `ok` (each group's completed runs), the
/// functions with most in-stall samples first, at most `MAX_ROWS`;
/// empty when no run has in-stall samples.
pub(super) fn rows(ok: &[Vec<&RunReport>]) -> Vec<ProfileRow> {
    // Per group, the runs that sampled reclaim or compaction at all: a
    // run without a profile, or without a stall, says nothing of shares.
    let runs: Vec<Vec<RunShares>> = ok
        .iter()
        .map(|rs| {
            rs.iter()
                .filter_map(|r| r.profile.as_ref())
                .map(run_shares)
                .filter(|s| s.samples > 0)
                .collect()
        })
        .collect();
    let mut weight: HashMap<&str, f64> = HashMap::new();
    for r in runs.iter().flatten() {
        for (name, (total, _)) in &r.by_function {
            *weight.entry(name.as_str()).or_default() += *total as f64 / r.samples as f64;
        }
    }
    let mut names: Vec<(&str, f64)> = weight.into_iter().collect();
    names.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    names.truncate(MAX_ROWS);
    let mut rows: Vec<ProfileRow> = names
        .into_iter()
        .map(|(name, _)| row(name, &runs))
        .collect();
    mark_moved(&mut rows);
    rows
}

fn row(name: &str, runs: &[Vec<RunShares>]) -> ProfileRow {
    let share = |r: &RunShares, pick: fn(&(u64, u64)) -> u64| {
        r.by_function.get(name).map_or(0, pick) as f64 / r.samples as f64
    };
    let per_group = |pick: fn(&(u64, u64)) -> u64| -> Vec<Vec<f64>> {
        runs.iter()
            .map(|rs| rs.iter().map(|r| share(r, pick)).collect())
            .collect()
    };
    let total = per_group(|c| c.0);
    let own = per_group(|c| c.1);
    let groups: Vec<Option<Describe>> = total.iter().map(|v| describe(v)).collect();
    let changes: Vec<Option<Change>> = total[1..]
        .iter()
        .zip(&groups[1..])
        .map(|(v, d)| change(&total[0], groups[0], v, *d))
        .collect();
    ProfileRow {
        function: name.to_string(),
        self_share: own.iter().map(|v| describe(v)).collect(),
        moved: vec![false; changes.len()],
        total: groups,
        changes,
    }
}

/// Holm's step-down over the functions' p-values, per group against
/// the baseline, then the size rule; and the switches on or off.
fn mark_moved(rows: &mut [ProfileRow]) {
    let groups = rows.first().map_or(0, |r| r.changes.len());
    for g in 0..groups {
        let mean = |r: &ProfileRow, i: usize| r.total[i].map_or(0.0, |d| d.mean);
        let mut tested: Vec<(usize, f64)> = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| mean(r, 0).max(mean(r, g + 1)) >= MIN_SHARE)
            .filter_map(|(i, r)| Some((i, r.changes[g]?.welch?.p)))
            .collect();
        tested.sort_by(|a, b| a.1.total_cmp(&b.1));
        let m = tested.len();
        for (rank, (i, p)) in tested.into_iter().enumerate() {
            if p * (m - rank) as f64 >= ALPHA {
                break;
            }
            rows[i].moved[g] = rows[i].changes[g].is_some_and(|c| c.diff.abs() >= MIN_SHARE);
        }
        for r in rows.iter_mut() {
            if switched(r.total[0], r.total[g + 1]) {
                r.moved[g] = true;
            }
        }
    }
}

/// Absent from every run of one group (two runs or more), present at
/// `MIN_SHARE` or more in every run of the other.
fn switched(a: Option<Describe>, b: Option<Describe>) -> bool {
    let (Some(a), Some(b)) = (a, b) else {
        return false;
    };
    a.n >= 2
        && b.n >= 2
        && ((a.max == 0.0 && b.min >= MIN_SHARE) || (b.max == 0.0 && a.min >= MIN_SHARE))
}

/// The functions whose share moved for group `g` (1-based, against the
/// baseline), largest change first.
pub fn moved(rows: &[ProfileRow], g: usize) -> Vec<&ProfileRow> {
    let diff = |r: &ProfileRow| r.changes[g - 1].map_or(0.0, |c| c.diff);
    let mut out: Vec<&ProfileRow> = rows
        .iter()
        .filter(|r| r.moved.get(g - 1) == Some(&true))
        .collect();
    out.sort_by(|a, b| diff(b).abs().total_cmp(&diff(a).abs()));
    out
}

/// One in-stall kernel stack, B against A: its mean share (0..1) of a
/// run's in-stall samples in each group (0 in a run that never sampled
/// it), frames named as on every kernel, outermost first (the folded
/// format's order).
#[derive(Clone, Debug, PartialEq)]
pub struct StackShare {
    pub frames: Vec<String>,
    pub a: f64,
    pub b: f64,
}

/// The in-stall stacks of group `g`'s completed runs against the
/// baseline's, most of B's samples first: what a differential flame
/// graph draws.
pub fn stack_shares(inputs: &[super::GroupInput], g: usize) -> Vec<StackShare> {
    let runs = super::groups::completed_runs(&super::groups::runs(inputs));
    let per_group = |i: usize| -> HashMap<Vec<String>, f64> {
        let profiles: Vec<&ProfileReport> = runs
            .get(i)
            .into_iter()
            .flatten()
            .filter_map(|r| r.profile.as_ref())
            .collect();
        let mut sum: HashMap<Vec<String>, f64> = HashMap::new();
        let mut n = 0;
        for p in profiles {
            let inside: Vec<_> = p.in_stall_stacks().collect();
            let total: u64 = inside.iter().map(|s| s.samples).sum();
            if total == 0 {
                continue;
            }
            n += 1;
            for s in inside {
                let frames = s.frames.iter().rev().map(|f| function_name(f).to_string());
                *sum.entry(frames.collect()).or_default() += s.samples as f64 / total as f64;
            }
        }
        sum.values_mut().for_each(|v| *v /= n.max(1) as f64);
        sum
    };
    let (a, b) = (per_group(0), per_group(g));
    let mut out: Vec<StackShare> = b
        .iter()
        .map(|(f, &v)| StackShare {
            frames: f.clone(),
            a: a.get(f).copied().unwrap_or(0.0),
            b: v,
        })
        .chain(
            a.iter()
                .filter(|(f, _)| !b.contains_key(*f))
                .map(|(f, &v)| StackShare {
                    frames: f.clone(),
                    a: v,
                    b: 0.0,
                }),
        )
        .collect();
    out.sort_by(|x, y| {
        y.b.total_cmp(&x.b)
            .then(y.a.total_cmp(&x.a))
            .then(x.frames.cmp(&y.frames))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::profile::ProfileStack;

    fn stack(frames: &[&str], samples: u64) -> ProfileStack {
        ProfileStack {
            frames: frames.iter().map(|f| f.to_string()).collect(),
            samples,
        }
    }

    /// A run whose reclaim spends `compress` of its in-stall samples
    /// compressing (zswap), `unmap` unmapping, the rest in the LRU
    /// scan; `noprof` names the allocator as 6.10+ does.
    fn run(compress: u64, unmap: u64, scan: u64, noprof: bool) -> RunReport {
        let alloc = if noprof {
            "__alloc_pages_noprof"
        } else {
            "__alloc_pages"
        };
        let reclaim = |leaf: &[&'static str]| -> Vec<&'static str> {
            let mut f: Vec<&'static str> = leaf.to_vec();
            f.extend([
                "shrink_folio_list.constprop.0",
                "shrink_lruvec",
                "try_to_free_pages",
                alloc,
            ]);
            f
        };
        RunReport {
            profile: Some(ProfileReport {
                hz: 1000,
                stacks: vec![
                    stack(
                        &reclaim(&["lzo1x_1_do_compress", "zswap_compress", "zswap_store"]),
                        compress,
                    ),
                    stack(&reclaim(&["ptep_clear_flush", "try_to_unmap_one"]), unmap),
                    stack(&reclaim(&["isolate_lru_folios"]), scan),
                    // Outside the stalls: not counted.
                    stack(&["clear_page_erms", "do_anonymous_page"], 5000),
                ],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn compare(a: &[RunReport], b: &[RunReport]) -> Vec<ProfileRow> {
        rows(&[a.iter().collect(), b.iter().collect()])
    }

    fn find<'a>(rows: &'a [ProfileRow], name: &str) -> &'a ProfileRow {
        rows.iter()
            .find(|r| r.function == name)
            .unwrap_or_else(|| panic!("{name} not in {rows:#?}"))
    }

    /// zswap switched on: the compressor's frames are new in every run
    /// of B and named as moved; the stall's other functions' shares
    /// shrink with them. Only in-stall samples count, only the frames
    /// from the stall's function inwards, and frames line up across
    /// builds (`.constprop.0`).
    #[test]
    fn the_compressor_switched_on_is_named() {
        let a = [
            run(0, 300, 700, false),
            run(0, 310, 690, false),
            run(0, 290, 700, false),
        ];
        let b = [
            run(450, 170, 380, true),
            run(440, 160, 400, true),
            run(460, 165, 375, true),
        ];
        let rows = compare(&a, &b);
        let lzo = find(&rows, "lzo1x_1_do_compress");
        assert!(lzo.moved[0], "{lzo:#?}");
        assert_eq!(lzo.total[0].map(|d| d.max), Some(0.0));
        let b_share = lzo.total[1].map_or(0.0, |d| d.mean);
        assert!((b_share - 0.45).abs() < 0.01, "{b_share}");
        assert!(lzo.self_share[1].is_some_and(|d| d.mean > 0.44));
        // Clones and renames are one function in both groups.
        let shrink = find(&rows, "shrink_folio_list");
        assert!((shrink.total[0].map_or(0.0, |d| d.mean) - 1.0).abs() < 1e-9);
        assert!((shrink.total[1].map_or(0.0, |d| d.mean) - 1.0).abs() < 1e-9);
        assert!(!shrink.moved[0]);
        // The way in (the allocator, renamed between the kernels) is
        // no function inside the stall.
        assert!(!rows.iter().any(|r| r.function.starts_with("__alloc_pages")));
        // The page clearing outside reclaim is no in-stall sample.
        assert!(!rows.iter().any(|r| r.function == "clear_page_erms"));
        let moved: Vec<&str> = super::moved(&rows, 1)
            .iter()
            .map(|r| r.function.as_str())
            .collect();
        assert_eq!(moved.first(), Some(&"lzo1x_1_do_compress"), "{moved:?}");
        assert!(moved.contains(&"isolate_lru_folios"), "{moved:?}");
    }

    /// The same job twice: shares that differ by sampling noise only
    /// move nothing.
    #[test]
    fn an_a_a_pair_moves_nothing() {
        let a = [
            run(0, 300, 700, false),
            run(0, 330, 660, false),
            run(0, 280, 720, false),
        ];
        let b = [
            run(0, 310, 690, false),
            run(0, 290, 705, false),
            run(0, 325, 670, false),
        ];
        let rows = compare(&a, &b);
        assert!(!rows.is_empty());
        assert!(super::moved(&rows, 1).is_empty(), "{rows:#?}");
    }

    /// Runs without a profile, or without a stall, give no rows.
    #[test]
    fn no_in_stall_samples_no_rows() {
        let none = RunReport::default();
        let idle = run(0, 0, 0, false);
        let one = std::slice::from_ref;
        assert!(compare(one(&none), one(&none)).is_empty());
        assert!(compare(one(&idle), one(&idle)).is_empty());
    }
}
