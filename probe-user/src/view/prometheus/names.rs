//! How the recording's counters are named in the exposition, as the
//! Prometheus naming guide asks (and `promtool check metrics` checks):
//!
//! - base units: a time in ns is exposed in seconds
//!   (`memcg_reclaim_on_cpu_ns` in `vmtrace_reclaim_on_cpu_seconds_total`),
//!   a count of 512-byte sectors in bytes;
//! - dimensions as labels, not in names: the reclaim context
//!   (`direct_`/`memcg_` → `context`), whose tasks (`_all`/`_target` →
//!   `tasks`), the folio type (`anon`/`file` → `type`), the swap I/O
//!   direction (`read`/`write` → `op`), so that `sum` and `by` work;
//! - no duplicates: the reclaim counts and stall times are the reclaim
//!   histograms' `_count` and (exact) `_sum`, so they are not exposed a
//!   second time as counters.

use vmtrace_common::Counter;

use super::seconds;

/// One sample of a counter family.
pub(super) struct CounterSample {
    /// The family's name, `_total` included.
    pub family: String,
    pub help: String,
    /// The dimension the recording's name held, as a label.
    pub label: Option<(&'static str, &'static str)>,
    pub value: String,
}

/// Every counter's sample, in the recording's order; the duplicates of
/// the reclaim histograms left out.
pub(super) fn counter_samples(counters: &[(Counter, u64)]) -> Vec<CounterSample> {
    counters
        .iter()
        .filter(|(c, _)| !histogram_has_it(*c))
        .map(|&(c, v)| sample(c, v))
        .collect()
}

/// The reclaim counts and stall times: `vmtrace_{direct,memcg}_reclaim_
/// seconds_count` and `_sum` (the programs add each stall's exact ns).
fn histogram_has_it(c: Counter) -> bool {
    matches!(
        c,
        Counter::DirectReclaims
            | Counter::DirectReclaimNs
            | Counter::MemcgReclaims
            | Counter::MemcgReclaimNs
    )
}

/// The dimension a counter's name holds: the name without it, the
/// label, its value, and the family's help.
fn dimension(c: Counter) -> Option<(String, &'static str, &'static str, String)> {
    use Counter::*;
    let fixed = |stem: &str, label, value, help: &str| {
        Some((stem.to_string(), label, value, help.to_string()))
    };
    match c {
        MajorFaultsAll => fixed("major_faults", "tasks", "all", MAJOR_FAULTS),
        MajorFaultsTarget => fixed("major_faults", "tasks", "target", MAJOR_FAULTS),
        WriteFolioAnon => fixed("write_folio", "type", "anon", WRITE_FOLIO),
        WriteFolioFile => fixed("write_folio", "type", "file", WRITE_FOLIO),
        SwapReadRequests => fixed("swap_requests", "op", "read", SWAP_REQUESTS),
        SwapWriteRequests => fixed("swap_requests", "op", "write", SWAP_REQUESTS),
        SwapReadSectors => fixed("swap_sectors", "op", "read", SWAP_SECTORS),
        SwapWriteSectors => fixed("swap_sectors", "op", "write", SWAP_SECTORS),
        _ => {
            let (name, title) = (c.name(), c.title());
            [("direct_reclaim_", "direct"), ("memcg_reclaim_", "memcg")]
                .into_iter()
                .find_map(|(prefix, context)| {
                    let rest = name.strip_prefix(prefix)?;
                    let help = format!(
                        "{}, by reclaim context (direct, memcg)",
                        title.replacen(&format!("{context} "), "", 1)
                    );
                    Some((format!("reclaim_{rest}"), "context", context, help))
                })
        }
    }
}

const MAJOR_FAULTS: &str = "major faults (exceptions:page_fault_user, a major fault), every task's (tasks=all) or the target's (tasks=target)";
const WRITE_FOLIO: &str =
    "folios reclaim wrote out (mm_vmscan_write_folio): anon to swap, file back to its file";
const SWAP_REQUESTS: &str = "block requests on a swap area completed, by direction";
const SWAP_SECTORS: &str = "bytes moved by block requests on a swap area, by direction";

/// A counter's sample: its family in base units, its label, its value.
fn sample(c: Counter, v: u64) -> CounterSample {
    let (stem, label, help) = match dimension(c) {
        Some((stem, label, value, help)) => (stem, Some((label, value)), help),
        None => (c.name().to_string(), None, c.title().to_string()),
    };
    let (family, help, value) = if let Some(s) = stem.strip_suffix("_ns") {
        (
            format!("vmtrace_{s}_seconds_total"),
            help.replace("(ns)", "(seconds)")
                .replace("ns in", "seconds in"),
            seconds(v),
        )
    } else if let Some(s) = stem.strip_suffix("_sectors") {
        (
            format!("vmtrace_{s}_bytes_total"),
            help.replace("sectors", "bytes"),
            v.saturating_mul(512).to_string(),
        )
    } else {
        (format!("vmtrace_{stem}_total"), help, v.to_string())
    };
    CounterSample {
        family,
        help,
        label,
        value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(c: Counter, v: u64) -> CounterSample {
        sample(c, v)
    }

    #[test]
    fn counters_are_exposed_in_base_units_with_dimensions_as_labels() {
        let s = one(Counter::MemcgReclaimOnCpuNs, 1_500_000_000);
        assert_eq!(s.family, "vmtrace_reclaim_on_cpu_seconds_total");
        assert_eq!(s.label, Some(("context", "memcg")));
        assert_eq!(s.value, "1.5");
        assert!(s.help.contains("(seconds)") && !s.help.contains("memcg reclaim"));
        let s = one(Counter::SwapReadSectors, 8);
        assert_eq!(
            (s.family.as_str(), s.label, s.value.as_str()),
            ("vmtrace_swap_bytes_total", Some(("op", "read")), "4096")
        );
        let s = one(Counter::MajorFaultsTarget, 7);
        assert_eq!(
            (s.family.as_str(), s.label),
            ("vmtrace_major_faults_total", Some(("tasks", "target")))
        );
        let s = one(Counter::DelayBlkioNs, 2_000);
        assert_eq!(s.family, "vmtrace_delay_blkio_seconds_total");
        assert_eq!(s.label, None);
        for c in Counter::ALL {
            let s = one(c, 1);
            assert!(
                !s.family.contains("_ns_") && !s.family.contains("sectors"),
                "{}: not a base unit",
                s.family
            );
            if let Some((label, value)) = s.label {
                assert!(!s.family.contains(value), "{}: {label}={value}", s.family);
            }
        }
    }

    /// The two contexts of a reclaim measure are one family with one
    /// help; the histograms' counts and sums are not repeated.
    #[test]
    fn a_family_holds_both_contexts_and_no_histogram_duplicate() {
        let samples = counter_samples(&Counter::ALL.map(|c| (c, 1)));
        let pages: Vec<&CounterSample> = samples
            .iter()
            .filter(|s| s.family == "vmtrace_reclaim_pages_total")
            .collect();
        assert_eq!(pages.len(), 2);
        assert_eq!(pages[0].help, pages[1].help);
        assert!(
            !samples
                .iter()
                .any(|s| s.family.starts_with("vmtrace_memcg_reclaim")
                    || s.family == "vmtrace_reclaims_total")
        );
    }
}
