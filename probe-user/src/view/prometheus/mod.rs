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
//! `vmtrace_<counter>_total` (the recording's names in base units, the
//! dimensions they hold as labels: `names`), and
//! `vmtrace_vmstat_<item>_total` for /proc/vmstat items.

use std::fmt::Write;

mod names;

use vmtrace_common::{
    CGROUP_BUCKETS, CgroupStalls, Counter, Hist, ReclaimContext,
    hist::{bucket_lower, bucket_upper},
};

/// The powers of two whose `2^k - 1 ns` are the `le` bounds.
pub const LE_LOG2: std::ops::RangeInclusive<u32> = 10..=36;

/// The `le` bounds (as powers of two) of the per-cgroup histograms:
/// every one of `LE_LOG2` (27 bounds, 1 us to 69 s: 60 series a
/// cgroup), or with `--cgroup-buckets coarse` every fourth (7 bounds,
/// 1 us to 17 s, x16 apart: 20 series a cgroup, a third of the
/// cardinality, quantiles within a factor of 16 instead of 2).
pub fn cgroup_bounds(coarse: bool) -> Vec<u32> {
    LE_LOG2.step_by(if coarse { 4 } else { 1 }).collect()
}

/// The /proc/vmstat items exported, where the kernel has them. The
/// per-reclaimer pgscan/pgsteal items (kswapd, direct, khugepaged and
/// proactive, memory.reclaim's: 6.18 has it, 6.12 not) leave out reclaim for a memory
/// cgroup's limit (`if (!cgroup_reclaim(sc))` in mm/vmscan.c); the
/// per-LRU-type items (anon, file; from 5.8) count every reclaim.
pub const VMSTAT_ITEMS: &[&str] = &[
    "pgscan_kswapd",
    "pgscan_direct",
    "pgscan_khugepaged",
    "pgscan_proactive",
    "pgscan_anon",
    "pgscan_file",
    "pgsteal_kswapd",
    "pgsteal_direct",
    "pgsteal_khugepaged",
    "pgsteal_proactive",
    "pgsteal_anon",
    "pgsteal_file",
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
    pub lru: Vec<(ReclaimContext, u64, u64)>,
    /// Per-cgroup rows: the cap, and rows deleted (cgroup removed).
    pub max_cgroups: u32,
    /// Per-cgroup histograms with `cgroup_bounds(true)`'s bounds.
    pub coarse_cgroups: bool,
    pub cgroups_expired: u64,
    /// vmtrace's version and the running kernel's release
    /// (`vmtrace_build_info`); not shown when the version is empty.
    pub build: BuildInfo,
    /// Each metric of the catalogue by its stable id, and whether its
    /// probes are attached (`vmtrace_probe_enabled`): a metric this
    /// kernel lacks reads 0 here, not a silent 0 in its own series.
    pub probes: Vec<(&'static str, bool)>,
    /// vmtrace's own cost, per attached eBPF program (its fdinfo): the
    /// runs and run time (counted while kernel.bpf_stats_enabled is on,
    /// as `--bpf-stats` sets it) and the runs the kernel skipped
    /// (recursion misses: an event that came while the program ran).
    pub programs: Vec<ProgramCost>,
}

/// One eBPF program's cost, as its fdinfo says.
pub struct ProgramCost {
    pub program: &'static str,
    pub runs: u64,
    pub run_ns: u64,
    pub misses: u64,
}

/// What `vmtrace_build_info` says.
#[derive(Default)]
pub struct BuildInfo {
    pub version: String,
    pub kernel: String,
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
            // The top buckets' bounds pass 2^62: the midpoint is capped
            // there, never an overflow.
            let (lo, hi) = (bucket_lower(i), bucket_upper(i).min(1 << 62));
            (lo + hi.saturating_sub(lo) / 2).saturating_mul(n)
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
        bounds: &[u32],
        cumulative: &[u64],
        count: u64,
        sum_ns: u64,
    ) {
        for (&k, n) in bounds.iter().zip(cumulative) {
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
    info(&mut w, e);
    histograms(&mut w, e);
    if !e.cgroups.is_empty() {
        cgroups(&mut w, e);
    }
    counters(&mut w, e);
    if !e.programs.is_empty() {
        programs(&mut w, e);
    }
    if format == Format::OpenMetrics {
        w.out.push_str("# EOF\n");
    }
    w.out
}

/// The node_exporter-style info gauge, and which probes are attached.
fn info(w: &mut Writer, e: &Exposition) {
    if !e.build.version.is_empty() {
        w.family(
            "vmtrace_build_info",
            "gauge",
            "vmtrace's version and the kernel it traces, as labels (always 1)",
        );
        w.sample(
            "vmtrace_build_info",
            &[("version", &e.build.version), ("kernel", &e.build.kernel)],
            "1",
        );
    }
    if !e.probes.is_empty() {
        w.family(
            "vmtrace_probe_enabled",
            "gauge",
            "1 when a metric's probes are attached, 0 when this kernel lacks them or they were left off (vmtrace probes says why)",
        );
        for &(probe, on) in &e.probes {
            w.sample(
                "vmtrace_probe_enabled",
                &[("probe", probe)],
                if on { "1" } else { "0" },
            );
        }
    }
}

/// vmtrace's own cost, per program.
fn programs(w: &mut Writer, e: &Exposition) {
    type Pick = fn(&ProgramCost) -> String;
    let families: [(&str, &str, Pick); 3] = [
        (
            "vmtrace_program_runs_total",
            "runs of each of vmtrace's eBPF programs, while kernel.bpf_stats_enabled is on (--bpf-stats)",
            |p| p.runs.to_string(),
        ),
        (
            "vmtrace_program_run_seconds_total",
            "time each of vmtrace's eBPF programs ran, while kernel.bpf_stats_enabled is on (--bpf-stats)",
            |p| seconds(p.run_ns),
        ),
        (
            "vmtrace_program_recursion_misses_total",
            "events a program missed because it was already running on that CPU (fdinfo recursion_misses)",
            |p| p.misses.to_string(),
        ),
    ];
    for (name, help, pick) in families {
        w.family(name, "counter", help);
        for p in &e.programs {
            w.sample(name, &[("program", p.program)], &pick(p));
        }
    }
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
        let whose = crate::model::histogram::whose(*h);
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
            &LE_LOG2.collect::<Vec<_>>(),
            &cum,
            count,
            exact.unwrap_or_else(|| fine_midpoint_sum(counts)),
        );
    }
}

/// The per-cgroup rows: stall histograms, PSI, and the rows themselves.
fn cgroups(w: &mut Writer, e: &Exposition) {
    let bounds = cgroup_bounds(e.coarse_cgroups);
    type Stalls = fn(&CgroupStalls) -> (&[u64; CGROUP_BUCKETS], u64);
    let contexts: [(ReclaimContext, Stalls); 2] = [
        (ReclaimContext::Direct, |s| (&s.direct, s.direct_ns)),
        (ReclaimContext::Memcg, |s| (&s.memcg, s.memcg_ns)),
    ];
    for (context, stalls) in contexts {
        let title = context.name();
        let name = format!("vmtrace_cgroup_{title}_reclaim_seconds");
        w.family(
            &name,
            "histogram",
            &format!(
                "{title} reclaim stalls of the target's tasks per cgroup (s); _sum exact; \
                 cgroup=\"{OVERFLOW_CGROUP}\" holds cgroups past --max-cgroups"
            ),
        );
        for row in &e.cgroups {
            let (buckets, sum) = stalls(&row.stalls);
            let (cum, count) = pow2_cumulative(buckets);
            let at_bounds: Vec<u64> = LE_LOG2
                .zip(cum)
                .filter(|(k, _)| bounds.contains(k))
                .map(|(_, n)| n)
                .collect();
            if count > 0 {
                w.histogram(
                    &name,
                    &[("cgroup", &row.name)],
                    &bounds,
                    &at_bounds,
                    count,
                    sum,
                );
            }
        }
    }
    // node_exporter's and cAdvisor's names: "some" is time at least
    // one task waited on memory, "full" time all of them stalled (full
    // lies within some, so they are two families, never summed).
    let mut psi: Vec<(&str, (u64, u64))> = e.psi_us.map(|p| ("/", p)).into_iter().collect();
    psi.extend(
        e.cgroups
            .iter()
            .filter_map(|r| Some((r.name.as_str(), r.psi_us?))),
    );
    type Pick = fn(&(u64, u64)) -> u64;
    let families: [(&str, &str, Pick); 2] = [
        (
            "vmtrace_cgroup_memory_waiting_seconds_total",
            "time at least one task of the cgroup waited on memory: memory PSI some total \
             (memory.pressure; cgroup=\"/\": /proc/pressure/memory)",
            |p| p.0,
        ),
        (
            "vmtrace_cgroup_memory_stalled_seconds_total",
            "time every non-idle task of the cgroup stalled on memory at once: memory PSI \
             full total (memory.pressure; cgroup=\"/\": /proc/pressure/memory)",
            |p| p.1,
        ),
    ];
    for (name, help, pick) in families {
        w.family(name, "counter", help);
        for (cgroup, p) in &psi {
            w.sample(
                name,
                &[("cgroup", cgroup)],
                &seconds(pick(p).saturating_mul(1000)),
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
    type Pick = fn(&(ReclaimContext, u64, u64)) -> u64;
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
            w.sample(name, &[("context", l.0.name())], &pick(l).to_string());
        }
    }
    // A family's samples together, in the order its first one comes.
    let samples = names::counter_samples(&e.counters);
    let mut families: Vec<&str> = Vec::new();
    for s in &samples {
        if !families.contains(&s.family.as_str()) {
            families.push(&s.family);
        }
    }
    for family in families {
        let mut of = samples.iter().filter(|s| s.family == family).peekable();
        if let Some(first) = of.peek() {
            w.family(family, "counter", &first.help);
        }
        for s in of {
            let labels: Vec<(&str, &str)> = s.label.into_iter().collect();
            w.sample(family, &labels, &s.value);
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use vmtrace_common::hist::{BUCKETS, bucket_of};

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
    fn coarse_cgroup_buckets_keep_a_third_of_the_series() {
        let mut stalls = CgroupStalls::default();
        stalls.memcg[vmtrace_common::cgroup_bucket(3_000_000)] += 2;
        stalls.memcg[vmtrace_common::cgroup_bucket(300)] += 1;
        stalls.memcg_ns = 6_000_300;
        let one = |coarse| Exposition {
            cgroups: vec![CgroupRow {
                name: "/a".into(),
                stalls,
                psi_us: None,
            }],
            coarse_cgroups: coarse,
            max_cgroups: 4,
            ..Exposition::default()
        };
        let series = |text: &str| {
            text.lines()
                .filter(|l| l.starts_with("vmtrace_cgroup_memcg_reclaim_seconds"))
                .count()
        };
        let fine = render(&one(false), Format::Prometheus);
        let coarse = render(&one(true), Format::Prometheus);
        // The bounds, +Inf, _sum and _count.
        assert_eq!(series(&fine), 27 + 3, "{fine}");
        assert_eq!(series(&coarse), 7 + 3, "{coarse}");
        // Where both have a bound, they count the same: 1.023 us holds
        // the 300 ns stall, 4.19 ms all three.
        let at = |le: &str, n: u64| {
            format!(
                "vmtrace_cgroup_memcg_reclaim_seconds_bucket{{cgroup=\"/a\",le=\"{le}\"}} {n}\n"
            )
        };
        for text in [&fine, &coarse] {
            assert!(text.contains(&at("0.000001023", 1)), "{text}");
            assert!(text.contains(&at("0.004194303", 3)), "{text}");
            assert!(text.contains(&at("+Inf", 3)), "{text}");
        }
        assert!(!coarse.contains("le=\"0.000002047\""), "{coarse}");
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
                (Counter::MemcgReclaimPages, 5),
            ],
            cgroups: vec![CgroupRow {
                name: "/a \"b\"".into(),
                stalls,
                psi_us: Some((1500, 20)),
            }],
            psi_us: Some((10, 0)),
            vmstat: vec![("pswpout", 7)],
            lru: vec![(ReclaimContext::Kswapd, 64, 32)],
            max_cgroups: 16,
            coarse_cgroups: false,
            cgroups_expired: 1,
            build: BuildInfo {
                version: "0.1.0".into(),
                kernel: "6.18.44".into(),
            },
            probes: vec![("memcg_reclaim", true), ("zswap", false)],
            programs: vec![ProgramCost {
                program: "memcg_reclaim_end",
                runs: 3,
                run_ns: 900,
                misses: 0,
            }],
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
        assert!(p.contains("vmtrace_cgroup_memory_waiting_seconds_total{cgroup=\"/\"} 0.00001\n"));
        assert!(p.contains(
            "# TYPE vmtrace_reclaim_pages_total counter\nvmtrace_reclaim_pages_total{context=\"memcg\"} 5\n"
        ));
        assert!(!p.contains("vmtrace_memcg_reclaims_total"));
        assert!(p.contains("vmtrace_vmstat_pswpout_total 7\n"));
        assert!(p.contains("vmtrace_lru_reclaimed_pages_total{context=\"kswapd\"} 32\n"));
        assert!(p.contains(
            "# TYPE vmtrace_build_info gauge\nvmtrace_build_info{version=\"0.1.0\",kernel=\"6.18.44\"} 1\n"
        ));
        assert!(p.contains("vmtrace_probe_enabled{probe=\"memcg_reclaim\"} 1\n"));
        assert!(p.contains("vmtrace_probe_enabled{probe=\"zswap\"} 0\n"));
        assert!(p.contains(
            "vmtrace_program_run_seconds_total{program=\"memcg_reclaim_end\"} 0.0000009\n"
        ));
        assert!(!p.contains("# EOF"));
        let o = render(&e, Format::OpenMetrics);
        assert!(
            o.contains("# TYPE vmtrace_reclaim_pages counter\nvmtrace_reclaim_pages_total{context=\"memcg\"} 5\n")
        );
        assert!(o.ends_with("# EOF\n"));
        assert!(p.is_ascii() && o.is_ascii());
        assert_eq!(
            Format::from_accept("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
            Format::OpenMetrics
        );
        assert_eq!(Format::from_accept("*/*"), Format::Prometheus);
    }

    /// docs/grafana-vmtrace.json: every series a query names is one an
    /// exposition holds (with every histogram, counter and vmstat item),
    /// every query selects on job and instance, every quantile is over
    /// buckets summed by le, and nothing asks for an import-time input
    /// (a provisioned file gets none).
    #[test]
    fn the_dashboard_queries_what_vmtrace_exports() {
        let mut stalls = CgroupStalls::default();
        stalls.memcg[4] = 1;
        stalls.direct[4] = 1;
        let e = Exposition {
            hists: Hist::ALL
                .iter()
                .map(|&h| (h, vec![1u64; BUCKETS]))
                .collect(),
            counters: Counter::ALL.iter().map(|&c| (c, 1)).collect(),
            cgroups: vec![CgroupRow {
                name: "/a".into(),
                stalls,
                psi_us: Some((1, 1)),
            }],
            psi_us: Some((1, 1)),
            vmstat: VMSTAT_ITEMS.iter().map(|&i| (i, 1)).collect(),
            build: BuildInfo {
                version: "0".into(),
                kernel: "0".into(),
            },
            ..Default::default()
        };
        let text = render(&e, Format::Prometheus);
        let series: std::collections::HashSet<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split(['{', ' ']).next())
            .collect();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/grafana-vmtrace.json");
        let raw = std::fs::read_to_string(path).expect("the dashboard");
        assert!(!raw.contains("DS_PROMETHEUS") && !raw.contains("__inputs"));
        let d: serde_json::Value = serde_json::from_str(&raw).expect("JSON");
        let mut exprs = Vec::new();
        for panel in d["panels"].as_array().expect("panels") {
            for t in panel["targets"].as_array().into_iter().flatten() {
                exprs.push(t["expr"].as_str().expect("expr").to_string());
            }
        }
        for v in d["templating"]["list"].as_array().expect("variables") {
            if v["type"] == "query" {
                exprs.push(v["query"].as_str().expect("query").to_string());
            }
        }
        assert!(exprs.len() > 10, "{exprs:?}");
        for x in &exprs {
            let names: Vec<&str> = x
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| w.starts_with("vmtrace_"))
                .collect();
            assert!(!names.is_empty(), "{x}");
            for n in names {
                assert!(series.contains(n), "{n} (in {x}) is not exported");
            }
            let instance = x.contains("instance=~\"$instance\"");
            assert!(
                instance || x.starts_with("label_values(vmtrace_build_info"),
                "{x}"
            );
            if x.contains("histogram_quantile") {
                assert!(x.contains("sum by (") && x.contains("le)"), "{x}");
            }
        }
    }
}
