//! `/metrics` of `attach --serve`: what the probes hold, in the Prometheus
//! text format (0.0.4) or, when the scraper asks for it, OpenMetrics 1.0.
//!
//! Histogram bounds are powers of two: `le` is 2^k - 1 ns for k = 10..=36
//! (about 1 us to 69 s), written in seconds with every digit (a value is
//! an integer number of ns, so `<= 2^k - 1 ns` is `< 2^k ns`). Each bound
//! is an edge of vmtrace's own buckets (the kernel's log-linear
//! histograms and the per-cgroup power-of-two rows), so every cumulative
//! count is exact, not interpolated. `_sum` is exact where the probes
//! keep an exact sum (reclaim stalls) and the sum of bucket midpoints
//! (within 1/32) elsewhere; the HELP line says which.
//!
//! Names are vmtrace's own: `vmtrace_<histogram>_seconds`,
//! `vmtrace_<counter>_total` (the recording's names), and
//! `vmtrace_vmstat_<item>_total` for /proc/vmstat items.

use std::fmt::Write;

use vmtrace_common::{
    CGROUP_BUCKETS, CgroupStalls, Counter, Hist,
    hist::{bucket_lower, bucket_upper},
};

/// The powers of two whose `2^k - 1 ns` are the `le` bounds.
pub const LE_LOG2: std::ops::RangeInclusive<u32> = 10..=36;

/// The /proc/vmstat items exported, where the kernel has them.
pub const VMSTAT_ITEMS: &[&str] = &[
    "pgscan_kswapd",
    "pgscan_direct",
    "pgscan_khugepaged",
    "pgsteal_kswapd",
    "pgsteal_direct",
    "pgsteal_khugepaged",
    "pswpin",
    "pswpout",
    "zswpin",
    "zswpout",
    "oom_kill",
    "pgmajfault",
    "workingset_refault_anon",
    "workingset_refault_file",
];

/// The label of the per-cgroup overflow row.
pub const OVERFLOW_CGROUP: &str = "(other)";

/// Exposition format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Prometheus,
    OpenMetrics,
}

impl Format {
    /// OpenMetrics when the Accept header names it, else the classic
    /// text format.
    pub fn from_accept(accept: &str) -> Format {
        if accept.contains("application/openmetrics-text") {
            Format::OpenMetrics
        } else {
            Format::Prometheus
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// One cgroup's row: its name (path under the cgroup2 mount, or
/// [`OVERFLOW_CGROUP`]) and its stalls.
pub struct CgroupRow {
    pub name: String,
    pub stalls: CgroupStalls,
    /// Memory PSI totals (some, full) in us, when the cgroup has them.
    pub psi_us: Option<(u64, u64)>,
}

/// Everything one scrape shows.
#[derive(Default)]
pub struct Exposition {
    /// The target's fine histograms (bucket counts per [`Hist`]), for
    /// the histograms the plan enabled.
    pub hists: Vec<(Hist, Vec<u64>)>,
    pub counters: Vec<(Counter, u64)>,
    pub cgroups: Vec<CgroupRow>,
    /// Machine-wide memory PSI totals (some, full) in us.
    pub psi_us: Option<(u64, u64)>,
    /// (item, value) from /proc/vmstat.
    pub vmstat: Vec<(&'static str, u64)>,
    /// Pages scanned and reclaimed by `mm_vmscan_lru_shrink_inactive`,
    /// every task, per reclaim context: (context, scanned, reclaimed).
    pub lru: Vec<(&'static str, u64, u64)>,
    /// Per-cgroup rows: the cap, and rows deleted (cgroup removed).
    pub max_cgroups: u32,
    pub cgroups_expired: u64,
}

/// Seconds of `ns`, every digit: `0.000001023`.
pub fn seconds(ns: u64) -> String {
    let s = format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
    let s = s.trim_end_matches('0');
    s.strip_suffix('.')
        .map_or_else(|| s.to_string(), str::to_string)
}

/// A label value with `\`, `"` and newlines escaped.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Cumulative counts of a fine histogram at each bound, and its total.
pub fn fine_cumulative(counts: &[u64]) -> (Vec<u64>, u64) {
    let at = |limit: u64| -> u64 {
        counts
            .iter()
            .enumerate()
            .filter(|&(i, _)| bucket_upper(i) <= limit)
            .map(|(_, &n)| n)
            .sum()
    };
    (
        LE_LOG2.map(|k| at((1u64 << k) - 1)).collect(),
        counts.iter().sum(),
    )
}

/// Sum of a fine histogram's bucket midpoints (ns).
fn fine_midpoint_sum(counts: &[u64]) -> u64 {
    counts
        .iter()
        .enumerate()
        .filter(|&(_, &n)| n > 0)
        .map(|(i, &n)| {
            let (lo, hi) = (bucket_lower(i), bucket_upper(i).min(1 << 62));
            (lo + (hi - lo) / 2).saturating_mul(n)
        })
        .fold(0u64, u64::saturating_add)
}

/// Cumulative counts of a per-cgroup row's histogram at each bound.
pub fn pow2_cumulative(buckets: &[u64; CGROUP_BUCKETS]) -> (Vec<u64>, u64) {
    (
        LE_LOG2
            .map(|k| buckets.iter().take(k as usize + 1).sum())
            .collect(),
        buckets.iter().sum(),
    )
}

struct Writer {
    out: String,
    format: Format,
}

impl Writer {
    /// `# HELP` and `# TYPE` of a family; counters' family name drops
    /// `_total` in OpenMetrics.
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let name = match (self.format, kind) {
            (Format::OpenMetrics, "counter") => name.strip_suffix("_total").unwrap_or(name),
            _ => name,
        };
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: &str) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", label(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }

    /// The bucket, sum and count lines of one histogram series.
    fn histogram(
        &mut self,
        name: &str,
        labels: &[(&str, &str)],
        cumulative: &[u64],
        count: u64,
        sum_ns: u64,
    ) {
        for (k, n) in LE_LOG2.zip(cumulative) {
            let le = seconds((1u64 << k) - 1);
            let mut l = labels.to_vec();
            l.push(("le", &le));
            self.sample(&format!("{name}_bucket"), &l, &n.to_string());
        }
        let mut l = labels.to_vec();
        l.push(("le", "+Inf"));
        self.sample(&format!("{name}_bucket"), &l, &count.to_string());
        self.sample(&format!("{name}_sum"), labels, &seconds(sum_ns));
        self.sample(&format!("{name}_count"), labels, &count.to_string());
    }
}

/// The exposition text.
pub fn render(e: &Exposition, format: Format) -> String {
    let mut w = Writer {
        out: String::with_capacity(64 * 1024),
        format,
    };
    histograms(&mut w, e);
    if !e.cgroups.is_empty() {
        cgroups(&mut w, e);
    }
    counters(&mut w, e);
    if format == Format::OpenMetrics {
        w.out.push_str("# EOF\n");
    }
    w.out
}

/// The kernel's latency histograms (the target's and machine-wide).
fn histograms(w: &mut Writer, e: &Exposition) {
    let counter = |c: Counter| -> u64 {
        e.counters
            .iter()
            .find(|(k, _)| *k == c)
            .map_or(0, |&(_, v)| v)
    };
    for (h, counts) in &e.hists {
        let name = format!("vmtrace_{}_seconds", h.name());
        let exact = match h {
            Hist::DirectReclaim => Some(counter(Counter::DirectReclaimNs)),
            Hist::MemcgReclaim => Some(counter(Counter::MemcgReclaimNs)),
            _ => None,
        };
        // Whose work each times (exhaustive: a new Hist must say):
        // kswapd, shrinkers, swap I/O and the reaper work for every task.
        let whose = match h {
            Hist::KswapdAwake
            | Hist::SlabShrink
            | Hist::SwapWrite
            | Hist::SwapRead
            | Hist::OomReap => "every task",
            Hist::DirectReclaim
            | Hist::MemcgReclaim
            | Hist::MinorFault
            | Hist::MajorFault
            | Hist::Throttle
            | Hist::Compaction => "of the target",
        };
        let help = format!(
            "{} {whose} (s); _sum {}",
            h.title(),
            if exact.is_some() {
                "exact"
            } else {
                "of bucket midpoints, within 1/32"
            }
        );
        w.family(&name, "histogram", &help);
        let (cum, count) = fine_cumulative(counts);
        w.histogram(
            &name,
            &[],
            &cum,
            count,
            exact.unwrap_or_else(|| fine_midpoint_sum(counts)),
        );
    }
}

/// The per-cgroup rows: stall histograms, PSI, and the rows themselves.
fn cgroups(w: &mut Writer, e: &Exposition) {
    for (context, title) in [("direct", "direct"), ("memcg", "memcg")] {
        let name = format!("vmtrace_cgroup_{context}_reclaim_seconds");
        w.family(
            &name,
            "histogram",
            &format!(
                "{title} reclaim stalls of the target's tasks per cgroup (s); _sum exact; \
                 cgroup=\"{OVERFLOW_CGROUP}\" holds cgroups past --max-cgroups"
            ),
        );
        for row in &e.cgroups {
            let (buckets, sum) = if context == "memcg" {
                (&row.stalls.memcg, row.stalls.memcg_ns)
            } else {
                (&row.stalls.direct, row.stalls.direct_ns)
            };
            let (cum, count) = pow2_cumulative(buckets);
            if count > 0 {
                w.histogram(&name, &[("cgroup", &row.name)], &cum, count, sum);
            }
        }
    }
    let name = "vmtrace_cgroup_memory_pressure_seconds_total";
    w.family(
        name,
        "counter",
        "memory PSI total of the cgroup (memory.pressure; cgroup=\"/\": \
         /proc/pressure/memory), kind some or full (s)",
    );
    let mut psi: Vec<(&str, (u64, u64))> = e.psi_us.map(|p| ("/", p)).into_iter().collect();
    psi.extend(
        e.cgroups
            .iter()
            .filter_map(|r| Some((r.name.as_str(), r.psi_us?))),
    );
    for (cgroup, (some, full)) in psi {
        for (kind, us) in [("some", some), ("full", full)] {
            w.sample(
                name,
                &[("cgroup", cgroup), ("kind", kind)],
                &seconds(us.saturating_mul(1000)),
            );
        }
    }
    w.family(
        "vmtrace_cgroups",
        "gauge",
        "cgroups with a per-cgroup row now (the overflow row aside)",
    );
    let rows = e
        .cgroups
        .iter()
        .filter(|r| r.name != OVERFLOW_CGROUP)
        .count();
    w.sample("vmtrace_cgroups", &[], &rows.to_string());
    w.family(
        "vmtrace_cgroups_max",
        "gauge",
        "the cap on per-cgroup rows (--max-cgroups)",
    );
    w.sample("vmtrace_cgroups_max", &[], &e.max_cgroups.to_string());
    w.family(
        "vmtrace_cgroups_expired_total",
        "counter",
        "per-cgroup rows deleted because their cgroup was removed",
    );
    w.sample(
        "vmtrace_cgroups_expired_total",
        &[],
        &e.cgroups_expired.to_string(),
    );
}

/// LRU pages per context, the recording's counters, /proc/vmstat items.
fn counters(w: &mut Writer, e: &Exposition) {
    type Pick = fn(&(&'static str, u64, u64)) -> u64;
    let lru: [(&str, &str, Pick); 2] = [
        (
            "vmtrace_lru_scanned_pages_total",
            "pages scanned on the inactive lists (mm_vmscan_lru_shrink_inactive nr_scanned), every task, per reclaim context",
            |l| l.1,
        ),
        (
            "vmtrace_lru_reclaimed_pages_total",
            "pages reclaimed from the inactive lists (mm_vmscan_lru_shrink_inactive nr_reclaimed), every task, per reclaim context",
            |l| l.2,
        ),
    ];
    for (name, help, pick) in lru.into_iter().filter(|_| !e.lru.is_empty()) {
        w.family(name, "counter", help);
        for l in &e.lru {
            w.sample(name, &[("context", l.0)], &pick(l).to_string());
        }
    }
    for &(c, v) in &e.counters {
        let (name, help, value) = in_base_units(c, v);
        w.family(&name, "counter", &help);
        w.sample(&name, &[], &value);
    }
    for &(item, v) in &e.vmstat {
        let name = format!("vmtrace_vmstat_{item}_total");
        w.family(
            &name,
            "counter",
            &format!("/proc/vmstat {item}, machine-wide, since boot"),
        );
        w.sample(&name, &[], &v.to_string());
    }
}

/// A counter as Prometheus names it: in base units (the naming guide;
/// `promtool check metrics` refuses abbreviated units), so a time in ns
/// is exposed in seconds and a count of 512-byte sectors in bytes; its
/// name, help and value.
fn in_base_units(c: Counter, v: u64) -> (String, String, String) {
    let (name, title) = (c.name(), c.title());
    if let Some(stem) = name.strip_suffix("_ns") {
        (
            format!("vmtrace_{stem}_seconds_total"),
            title
                .replace("(ns)", "(seconds)")
                .replace("ns in", "seconds in"),
            seconds(v),
        )
    } else if let Some(stem) = name.strip_suffix("_sectors") {
        (
            format!("vmtrace_{stem}_bytes_total"),
            title.replace("sectors", "bytes"),
            (v.saturating_mul(512)).to_string(),
        )
    } else {
        (
            format!("vmtrace_{name}_total"),
            title.to_string(),
            v.to_string(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vmtrace_common::hist::{BUCKETS, bucket_of};

    #[test]
    fn counters_are_exposed_in_base_units() {
        let (name, help, value) = in_base_units(Counter::MemcgReclaimNs, 1_500_000_000);
        assert_eq!(name, "vmtrace_memcg_reclaim_seconds_total");
        assert_eq!(value, "1.5");
        assert!(help.contains("(seconds)"), "{help}");
        let (name, _, value) = in_base_units(Counter::SwapReadSectors, 8);
        assert_eq!(
            (name.as_str(), value.as_str()),
            ("vmtrace_swap_read_bytes_total", "4096")
        );
        let (name, _, value) = in_base_units(Counter::MemcgReclaims, 7);
        assert_eq!(
            (name.as_str(), value.as_str()),
            ("vmtrace_memcg_reclaims_total", "7")
        );
        for c in Counter::ALL {
            let (name, _, _) = in_base_units(c, 1);
            assert!(
                !name.contains("_ns_") && !name.contains("sectors"),
                "{name}: not a base unit"
            );
        }
    }

    #[test]
    fn seconds_keep_every_digit() {
        assert_eq!(seconds(1023), "0.000001023");
        assert_eq!(seconds(1_000_000_000), "1");
        assert_eq!(seconds((1 << 36) - 1), "68.719476735");
        assert_eq!(seconds(0), "0");
    }

    #[test]
    fn bounds_are_edges_of_both_bucket_layouts() {
        for k in LE_LOG2 {
            let le = (1u64 << k) - 1;
            // The fine bucket of le ends at le; the next starts at 2^k.
            assert_eq!(bucket_upper(bucket_of(le)), le);
            assert_eq!(bucket_lower(bucket_of(le + 1)), le + 1);
            // The per-cgroup bucket k ends at le.
            assert_eq!(vmtrace_common::cgroup_bucket(le), k as usize);
            assert_eq!(vmtrace_common::cgroup_bucket(le + 1), k as usize + 1);
        }
    }

    #[test]
    fn cumulative_counts_are_exact_at_the_bounds() {
        let values = [0u64, 500, 1023, 1024, 1_500_000, 70_000_000_000];
        let mut fine = vec![0u64; BUCKETS];
        let mut pow2 = [0u64; CGROUP_BUCKETS];
        for v in values {
            fine[bucket_of(v)] += 1;
            pow2[vmtrace_common::cgroup_bucket(v)] += 1;
        }
        let (a, n) = fine_cumulative(&fine);
        let (b, m) = pow2_cumulative(&pow2);
        assert_eq!((n, m), (6, 6));
        assert_eq!(a, b);
        for (k, got) in LE_LOG2.zip(&a) {
            let le = (1u64 << k) - 1;
            let want = values.iter().filter(|&&v| v <= le).count() as u64;
            assert_eq!(*got, want, "le 2^{k}-1");
        }
    }

    #[test]
    fn both_formats_render_histograms_counters_and_cgroups() {
        let mut stalls = CgroupStalls::default();
        stalls.memcg[vmtrace_common::cgroup_bucket(3_000_000)] += 2;
        stalls.memcg_ns = 6_000_000;
        let mut fine = vec![0u64; BUCKETS];
        fine[bucket_of(3_000_000)] = 2;
        let e = Exposition {
            hists: vec![(Hist::MemcgReclaim, fine)],
            counters: vec![
                (Counter::MemcgReclaims, 2),
                (Counter::MemcgReclaimNs, 6_000_000),
            ],
            cgroups: vec![CgroupRow {
                name: "/a \"b\"".into(),
                stalls,
                psi_us: Some((1500, 20)),
            }],
            psi_us: Some((10, 0)),
            vmstat: vec![("pswpout", 7)],
            lru: vec![("kswapd", 64, 32)],
            max_cgroups: 16,
            cgroups_expired: 1,
        };
        let p = render(&e, Format::Prometheus);
        assert!(p.contains("# TYPE vmtrace_memcg_reclaim_seconds histogram\n"));
        assert!(p.contains("vmtrace_memcg_reclaim_seconds_bucket{le=\"0.002097151\"} 0\n"));
        assert!(p.contains("vmtrace_memcg_reclaim_seconds_bucket{le=\"0.004194303\"} 2\n"));
        assert!(p.contains("vmtrace_memcg_reclaim_seconds_bucket{le=\"+Inf\"} 2\n"));
        assert!(p.contains("vmtrace_memcg_reclaim_seconds_sum 0.006\n"));
        assert!(
            p.contains("vmtrace_cgroup_memcg_reclaim_seconds_count{cgroup=\"/a \\\"b\\\"\"} 2\n")
        );
        assert!(p.contains(
            "vmtrace_cgroup_memory_pressure_seconds_total{cgroup=\"/\",kind=\"some\"} 0.00001\n"
        ));
        assert!(p.contains(
            "# TYPE vmtrace_memcg_reclaims_total counter\nvmtrace_memcg_reclaims_total 2\n"
        ));
        assert!(p.contains("vmtrace_vmstat_pswpout_total 7\n"));
        assert!(p.contains("vmtrace_lru_reclaimed_pages_total{context=\"kswapd\"} 32\n"));
        assert!(!p.contains("# EOF"));
        let o = render(&e, Format::OpenMetrics);
        assert!(
            o.contains("# TYPE vmtrace_memcg_reclaims counter\nvmtrace_memcg_reclaims_total 2\n")
        );
        assert!(o.ends_with("# EOF\n"));
        assert!(p.is_ascii() && o.is_ascii());
        assert_eq!(
            Format::from_accept("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
            Format::OpenMetrics
        );
        assert_eq!(Format::from_accept("*/*"), Format::Prometheus);
    }
}
