//! The job's CPU profile (probe-ebpf `profile`), read: samples per
//! kernel stack from `PROFILE`, the stacks from `PROFILE_STACKS`
//! symbolized with /proc/kallsyms. Stacks that differ only in return
//! addresses inside the same functions read the same and are one row.

use std::collections::HashMap;

use anyhow::{Context, Result};
use aya::maps::{HashMap as AyaHashMap, StackTraceMap};
use vmtrace_common::{Counter, names};

use crate::{
    kernel::{
        kallsyms::Kallsyms,
        probes::{MetricId, PROFILE_HZ, Probes},
        totals::KernelTotals,
    },
    model::profile::{PROFILE_STACKS_KEPT, ProfileReport, ProfileStack},
};

/// The profile so far; None when it is off (`--no-stacks`, or the
/// kernel refused the sampler). `totals` gives the counters.
pub fn read(probes: &Probes, totals: &KernelTotals) -> Result<Option<ProfileReport>> {
    if !probes.plan.is_enabled(MetricId::Profile) {
        return Ok(None);
    }
    let map = |name: &str| {
        probes
            .ebpf
            .map(name)
            .with_context(|| format!("map {name} is not in the eBPF object"))
    };
    let cells: AyaHashMap<_, i32, u64> = AyaHashMap::try_from(map(names::PROFILE)?)?;
    let cells: Vec<(i32, u64)> = cells.iter().flatten().collect();
    let stacks = StackTraceMap::try_from(map(names::PROFILE_STACKS)?)?;
    let symbols = Kallsyms::for_stacks(
        probes.kallsyms.as_ref(),
        !cells.is_empty(),
        "profile stacks",
    );
    let rows = cells.into_iter().map(|(id, samples)| {
        let frames = u32::try_from(id)
            .ok()
            .and_then(|id| stacks.get(&id, 0).ok())
            .map(|t| t.frames().iter().map(|f| symbols.name(f.ip)).collect())
            .unwrap_or_default();
        (frames, samples)
    });
    Ok(Some(merge(
        rows,
        totals.counter(Counter::ProfileUserSamples),
        totals.counter(Counter::ProfileStacksLost),
        totals.counter(Counter::ProfileKernelSamples),
    )))
}

/// One row per symbolized stack, most samples first; past
/// `PROFILE_STACKS_KEPT` rows the rest are summed into `other_samples`
/// (a recording stays small; the shares stay whole).
fn merge(
    rows: impl Iterator<Item = (Vec<String>, u64)>,
    user: u64,
    lost: u64,
    kernel: u64,
) -> ProfileReport {
    let mut merged: HashMap<Vec<String>, u64> = HashMap::new();
    for (frames, samples) in rows {
        *merged.entry(frames).or_default() += samples;
    }
    let mut stacks: Vec<ProfileStack> = merged
        .into_iter()
        .map(|(frames, samples)| ProfileStack { frames, samples })
        .collect();
    stacks.sort_by(|a, b| {
        b.samples
            .cmp(&a.samples)
            .then_with(|| a.frames.cmp(&b.frames))
    });
    let other_samples = stacks
        .iter()
        .skip(PROFILE_STACKS_KEPT)
        .map(|s| s.samples)
        .sum();
    stacks.truncate(PROFILE_STACKS_KEPT);
    ProfileReport {
        hz: PROFILE_HZ,
        user_samples: user,
        lost_samples: lost,
        stacks,
        other_samples,
        counted_kernel_samples: Some(kernel),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(frames: &[&str], samples: u64) -> (Vec<String>, u64) {
        (frames.iter().map(|f| f.to_string()).collect(), samples)
    }

    #[test]
    fn stacks_that_read_the_same_are_one_row_most_samples_first() {
        let p = merge(
            [
                row(&["copy_page_to_iter", "filemap_read"], 3),
                row(&["read_pages", "page_cache_ra_unbounded"], 5),
                row(&["copy_page_to_iter", "filemap_read"], 4),
            ]
            .into_iter(),
            11,
            1,
            12,
        );
        assert_eq!(p.stacks.len(), 2);
        assert_eq!(p.stacks[0].samples, 7);
        assert_eq!(p.stacks[0].frames[0], "copy_page_to_iter");
        assert_eq!((p.stack_samples(), p.kernel_samples()), (13, 12));
        assert_eq!(
            (p.user_samples, p.lost_samples, p.other_samples),
            (11, 1, 0)
        );
    }

    #[test]
    fn stacks_past_the_kept_ones_are_summed_not_lost() {
        let rows = (0..PROFILE_STACKS_KEPT as u64 + 3).map(|i| row(&[&format!("f{i}")], 1 + i));
        let p = merge(rows, 0, 0, 0);
        assert_eq!(p.stacks.len(), PROFILE_STACKS_KEPT);
        // The three smallest (1, 2, 3 samples) went to other.
        assert_eq!(p.other_samples, 6);
        let n = PROFILE_STACKS_KEPT as u64 + 3;
        assert_eq!(p.stack_samples(), n * (n + 1) / 2);
    }
}
