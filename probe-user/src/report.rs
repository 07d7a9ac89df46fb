//! The run report: one model (`RunReport`), built from what the collector
//! read, printed as plain text that survives a mailing list (ASCII, at
//! most 72 columns) or as JSON. Pure functions: no kernel access here.

use std::fmt::Write as _;

use serde::Serialize;
use vmtrace_common::{
    Counter, Hist,
    hist::{BUCKETS, SUB, bucket_lower},
};

use crate::{
    collect::{KernelTotals, VmStat},
    histogram::{Summary, summarize},
    membox::BoxReport,
    size::human,
};

/// How the traced command ended.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Exit {
    /// Exit code when it exited normally.
    pub code: Option<i32>,
    /// Signal number when a signal killed it.
    pub signal: Option<i32>,
    /// Killed by the box's memory cgroup OOM killer.
    pub oom_killed: bool,
    /// vmtrace was interrupted (Ctrl-C, SIGTERM, SIGHUP) during the run.
    pub interrupted: bool,
}

/// The kernel's resource usage of the command and its waited-for children.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Usage {
    pub wall_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub max_rss_bytes: u64,
    /// Block input and output operations (rusage ru_inblock, ru_oublock).
    pub in_blocks: u64,
    pub out_blocks: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ReclaimReport {
    /// Stall time of each reclaim a target task entered.
    pub stalls: Summary,
    pub pages_reclaimed: u64,
}

/// One (node, context, LRU type) row of `mm_vmscan_lru_shrink_inactive`
/// totals; field names are the tracepoint's.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LruRowReport {
    pub node: u32,
    pub context: &'static str,
    pub lru: &'static str,
    pub events: u64,
    pub nr_scanned: u64,
    pub nr_reclaimed: u64,
    pub nr_dirty: u64,
    pub nr_writeback: u64,
    pub nr_congested: u64,
    pub nr_immediate: u64,
    pub nr_activate_anon: u64,
    pub nr_activate_file: u64,
    pub nr_ref_keep: u64,
    pub nr_unmap_fail: u64,
}

/// One row of `mm_vmscan_lru_shrink_active` totals.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LruActiveRowReport {
    pub node: u32,
    pub context: &'static str,
    pub lru: &'static str,
    pub events: u64,
    pub nr_taken: u64,
    pub nr_active: u64,
    pub nr_deactivated: u64,
    pub nr_referenced: u64,
}

/// Counts per reclaim priority (index = priority, 12 = DEF_PRIORITY).
#[derive(Clone, Debug, Serialize)]
pub struct PriorityRow {
    pub context: &'static str,
    pub counts: Vec<u64>,
}

/// Reclaims of target tasks per allocation order (last: that and above).
#[derive(Clone, Debug, Serialize)]
pub struct OrderRow {
    pub context: &'static str,
    pub counts: Vec<u64>,
}

/// A process and the time it spent stalled in reclaim.
#[derive(Clone, Debug, Serialize)]
pub struct StallerReport {
    pub pid: u32,
    pub comm: String,
    pub target: bool,
    pub direct_stalls: u64,
    pub direct_ns: u64,
    pub memcg_stalls: u64,
    pub memcg_ns: u64,
}

/// Folios reclaim wrote out (`mm_vmscan_write_folio`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SwapOutReport {
    /// Anon folios: swap-out.
    pub anon_folios: u64,
    /// File folios written back by reclaim itself.
    pub file_folios: u64,
}

/// Slab shrinking (every task: kswapd and reclaimers alike).
#[derive(Clone, Debug, Serialize)]
pub struct SlabReport {
    /// Duration of each shrinker call.
    pub calls: Summary,
    pub objects_freed: u64,
}

/// Reclaim throttling of the target's tasks.
#[derive(Clone, Debug, Serialize)]
pub struct ThrottleReport {
    /// Time each throttling put a target task to sleep.
    pub delays: Summary,
    pub writeback: u64,
    pub isolated: u64,
    pub noprogress: u64,
    pub congested: u64,
    /// Throttling events of every task.
    pub all_tasks: u64,
}

/// Compaction runs of the target's tasks.
#[derive(Clone, Debug, Serialize)]
pub struct CompactionReport {
    pub runs: Summary,
    /// Compaction runs of every task (kcompactd and proactive included).
    pub all_tasks: u64,
}

/// kswapd over the run, system-wide (kswapd works for every task).
#[derive(Clone, Debug, Default, Serialize)]
pub struct KswapdReport {
    pub nodes: Vec<KswapdNodeReport>,
    /// Completed awake periods (wake to sleep), every node.
    pub awake_periods: Option<Summary>,
    /// `mm_vmscan_wakeup_kswapd` per node and zone.
    pub wakeups: Vec<ZoneCount>,
    /// Wakeups per allocation order (last: that order and above).
    pub wakeup_orders: Vec<u64>,
    /// Task names that woke kswapd most (at most 10).
    pub wakers: Vec<NameCount>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct KswapdNodeReport {
    pub node: u32,
    pub wakes: u64,
    /// Awake time, including a period still open at the end (seconds).
    pub awake_s: f64,
    /// CPU time of this node's kswapd thread over the run (/proc stat).
    pub cpu_s: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ZoneCount {
    pub node: u32,
    pub zone: String,
    pub count: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct NameCount {
    pub name: String,
    pub count: u64,
}

/// Block I/O to and from the swap areas.
#[derive(Clone, Debug, Serialize)]
pub struct SwapIoReport {
    /// The swap areas whose requests were timed.
    pub areas: Vec<String>,
    /// More disk ranges than the probes hold: some requests were missed.
    pub truncated: bool,
    pub write: Summary,
    pub write_bytes: u64,
    pub read: Summary,
    pub read_bytes: u64,
}

/// One OOM victim (`oom:mark_victim`).
#[derive(Clone, Debug, Serialize)]
pub struct OomVictimReport {
    /// Seconds after the command started.
    pub time_s: f64,
    pub pid: u32,
    pub comm: String,
    /// The OOM was hit by a target task (a kill in the command's box).
    pub target: bool,
    pub total_vm_kb: u64,
    pub anon_rss_kb: u64,
    pub file_rss_kb: u64,
    pub shmem_rss_kb: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct FaultReport {
    /// Major faults of every task while tracing (eBPF).
    pub major_all: Option<u64>,
    /// Major faults of the target's tasks (eBPF).
    pub major_target: Option<u64>,
    /// With --fault-latency: minor faults of the target (eBPF) and latency.
    pub minor_target: Option<u64>,
    pub minor_latency: Option<Summary>,
    pub major_latency: Option<Summary>,
    /// Kernel-mode faults of target tasks (page_fault_kernel).
    pub kernel_mode_target: Option<u64>,
    /// With --fault-latency: the processes whose faults took longest.
    pub process_time: Option<Vec<ProcessFaultTime>>,
    /// Per process of the target, counted when its threads exit, from the
    /// kernel's task counters (which include get_user_pages faults).
    pub processes: Option<ProcessFaultTotals>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ProcessFaultTotals {
    pub processes: u64,
    pub threads: u64,
    pub minor: u64,
    pub major: u64,
    /// The processes with the most faults (at most 10).
    pub top: Vec<ProcessFaults>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ProcessFaultTime {
    pub pid: u32,
    /// Name at exit (from the fault counts), when known.
    pub comm: String,
    pub minor: u64,
    pub minor_ns: u64,
    pub major: u64,
    pub major_ns: u64,
    pub max_ns: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ProcessFaults {
    pub pid: u32,
    pub comm: String,
    pub threads: u64,
    pub minor: u64,
    pub major: u64,
}

/// /proc/vmstat deltas over the traced window: the kernel's own view,
/// printed next to vmtrace's so that a reader can check one with the other.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VmstatDelta {
    pub pgscan: u64,
    pub pgsteal: u64,
    pub pgmajfault: u64,
    pub pgfault: u64,
    pub pswpin: u64,
    pub pswpout: u64,
    pub allocstall: u64,
    /// Pages allocated, every zone (pgalloc_*).
    pub pgalloc: u64,
}

impl VmstatDelta {
    pub fn from_delta(d: &VmStat) -> VmstatDelta {
        let allocstall =
            d.0.iter()
                .filter(|(k, _)| k.starts_with("allocstall"))
                .map(|(_, v)| v)
                .sum();
        VmstatDelta {
            pgscan: d.sum(&["pgscan_anon", "pgscan_file"]),
            pgsteal: d.sum(&["pgsteal_anon", "pgsteal_file"]),
            pgmajfault: d.get("pgmajfault"),
            pgfault: d.get("pgfault"),
            pswpin: d.get("pswpin"),
            pswpout: d.get("pswpout"),
            allocstall,
            pgalloc: d
                .0
                .iter()
                .filter(|(k, _)| k.starts_with("pgalloc_"))
                .map(|(_, v)| v)
                .sum(),
        }
    }
}

/// Events the probes could not account for; all zero in a sound run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Dropped {
    pub reclaim_start_map_full: u64,
    pub reclaim_end_without_begin: u64,
    pub fault_start_map_full: u64,
    pub node_out_of_range: u64,
    pub oom_records_lost: u64,
    pub swap_io_map_full: u64,
    /// Rows pushed out of a bounded per-process or per-name table (map,
    /// rows): those tables then miss rows, their totals are short.
    pub evicted: Vec<(String, u64)>,
    /// Events the kernel did not run a program for, because it would have
    /// interrupted another BPF program on the same CPU (program, count).
    pub program_misses: Vec<(String, u64)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Unavailable {
    pub metric: String,
    pub reason: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct RunReport {
    pub vmtrace_version: String,
    pub kernel_release: String,
    pub command: Vec<String>,
    /// The command's process id.
    pub pid: u32,
    /// Which tasks the per-task metrics cover.
    pub target: String,
    pub exit: Exit,
    pub usage: Usage,
    pub membox: Option<BoxReport>,
    pub unavailable: Vec<Unavailable>,
    /// Metrics running without an optional field (it reads 0).
    pub partial: Vec<Unavailable>,
    pub direct_reclaim: Option<ReclaimReport>,
    pub memcg_reclaim: Option<ReclaimReport>,
    /// `mm_vmscan_lru_shrink_inactive`, every task, per node, context and
    /// LRU type.
    pub lru_shrink_inactive: Option<Vec<LruRowReport>>,
    pub lru_shrink_active: Option<Vec<LruActiveRowReport>>,
    /// Inactive shrinks per reclaim priority, per context.
    pub reclaim_priority: Vec<PriorityRow>,
    /// Target reclaims per allocation order, per context.
    pub reclaim_order: Vec<OrderRow>,
    /// Processes that stalled most in reclaim, most first (at most 10).
    pub top_stallers: Vec<StallerReport>,
    pub swap_out: Option<SwapOutReport>,
    pub swap_io: Option<SwapIoReport>,
    pub kswapd: Option<KswapdReport>,
    pub slab_shrink: Option<SlabReport>,
    pub throttle: Option<ThrottleReport>,
    pub compaction: Option<CompactionReport>,
    /// Every OOM victim while tracing (None: the probe was unavailable).
    pub oom_victims: Option<Vec<OomVictimReport>>,
    pub faults: FaultReport,
    pub vmstat: VmstatDelta,
    pub dropped: Dropped,
    /// Per populated zone: pressure from every side, in one table.
    pub zones: Vec<ZoneRow>,
    /// `mm_vmscan_lru_isolate` per (highest zone index, LRU list); lists
    /// are numbered as the kernel's enum lru_list (0 inactive anon,
    /// 1 active anon, 2 inactive file, 3 active file, 4 unevictable).
    pub lru_isolate: Option<Vec<IsolateRow>>,
    /// Snapshots every --interval (cumulative since the start).
    pub timeline: Vec<crate::sample::Sample>,
}

#[derive(Clone, Debug, Serialize)]
pub struct IsolateRow {
    pub highest_zone_idx: u32,
    pub lru: u32,
    pub events: u64,
    pub nr_requested: u64,
    pub nr_scanned: u64,
    pub nr_skipped: u64,
    pub nr_taken: u64,
}

/// One populated zone: the seed mails' question ("uneven pressure on
/// normal and DMA zones") in numbers.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ZoneRow {
    pub node: u32,
    pub zone: String,
    /// kswapd wakeups for allocations whose highest zone is this one.
    pub kswapd_wakeups: u64,
    /// LRU isolation by reclaims whose highest allowed zone is this one
    /// (not node-specific: the tracepoint has no node).
    pub isolate_scanned: u64,
    pub isolate_skipped: u64,
    pub isolate_taken: u64,
    /// oom:reclaim_retry_zone checks of this zone.
    pub reclaim_retries: u64,
    /// Pages allocated from this zone (only with --page-alloc).
    pub allocated_pages: Option<u64>,
    /// Seconds below the low / min watermark (from the samples).
    pub below_low_s: f64,
    pub below_min_s: f64,
}

impl RunReport {
    /// Fills the eBPF-derived sections; `enabled` says which metrics ran.
    pub fn add_kernel_totals(&mut self, totals: &KernelTotals, enabled: &dyn Fn(&str) -> bool) {
        let reclaim = |h: Hist, pages: Counter| ReclaimReport {
            stalls: summarize(totals.hist(h)),
            pages_reclaimed: totals.counter(pages),
        };
        if enabled("direct_reclaim") {
            self.direct_reclaim = Some(reclaim(Hist::DirectReclaim, Counter::DirectReclaimPages));
        }
        if enabled("memcg_reclaim") {
            self.memcg_reclaim = Some(reclaim(Hist::MemcgReclaim, Counter::MemcgReclaimPages));
        }
        if enabled("lru_shrink_inactive") {
            self.lru_shrink_inactive = Some(
                totals
                    .lru
                    .iter()
                    .map(|r| {
                        let t = &r.totals;
                        LruRowReport {
                            node: r.node,
                            context: r.context.name(),
                            lru: r.lru.name(),
                            events: t.events,
                            nr_scanned: t.nr_scanned,
                            nr_reclaimed: t.nr_reclaimed,
                            nr_dirty: t.nr_dirty,
                            nr_writeback: t.nr_writeback,
                            nr_congested: t.nr_congested,
                            nr_immediate: t.nr_immediate,
                            nr_activate_anon: t.nr_activate_anon,
                            nr_activate_file: t.nr_activate_file,
                            nr_ref_keep: t.nr_ref_keep,
                            nr_unmap_fail: t.nr_unmap_fail,
                        }
                    })
                    .collect(),
            );
            self.reclaim_priority = totals
                .priority
                .iter()
                .map(|(c, counts)| PriorityRow {
                    context: c.name(),
                    counts: counts.clone(),
                })
                .collect();
        }
        if enabled("lru_shrink_active") {
            self.lru_shrink_active = Some(
                totals
                    .lru_active
                    .iter()
                    .map(|r| LruActiveRowReport {
                        node: r.node,
                        context: r.context.name(),
                        lru: r.lru.name(),
                        events: r.totals.events,
                        nr_taken: r.totals.nr_taken,
                        nr_active: r.totals.nr_active,
                        nr_deactivated: r.totals.nr_deactivated,
                        nr_referenced: r.totals.nr_referenced,
                    })
                    .collect(),
            );
        }
        self.reclaim_order = totals
            .order
            .iter()
            .map(|(c, counts)| OrderRow {
                context: c.name(),
                counts: counts.clone(),
            })
            .collect();
        let mut stallers: Vec<StallerReport> = totals
            .stallers
            .iter()
            .map(|(pid, s)| StallerReport {
                pid: *pid,
                comm: crate::collect::comm_to_string(&s.comm),
                target: s.target != 0,
                direct_stalls: s.direct_count,
                direct_ns: s.direct_ns,
                memcg_stalls: s.memcg_count,
                memcg_ns: s.memcg_ns,
            })
            .collect();
        stallers.sort_by_key(|s| std::cmp::Reverse(s.direct_ns + s.memcg_ns));
        stallers.truncate(10);
        self.top_stallers = stallers;
        if enabled("lru_isolate") {
            self.lru_isolate = Some(
                totals
                    .isolate
                    .iter()
                    .map(|(zone, lru, i)| IsolateRow {
                        highest_zone_idx: *zone,
                        lru: *lru,
                        events: i.events,
                        nr_requested: i.nr_requested,
                        nr_scanned: i.nr_scanned,
                        nr_skipped: i.nr_skipped,
                        nr_taken: i.nr_taken,
                    })
                    .collect(),
            );
        }
        if enabled("slab_shrink") {
            self.slab_shrink = Some(SlabReport {
                calls: summarize(totals.hist(Hist::SlabShrink)),
                objects_freed: totals.counter(Counter::SlabFreed),
            });
        }
        if enabled("throttle") {
            let r = |i: usize| totals.throttle_reasons.get(i).copied().unwrap_or(0);
            self.throttle = Some(ThrottleReport {
                delays: summarize(totals.hist(Hist::Throttle)),
                writeback: r(0),
                isolated: r(1),
                noprogress: r(2),
                congested: r(3),
                all_tasks: totals.counter(Counter::ThrottledAll),
            });
        }
        if enabled("compaction") {
            self.compaction = Some(CompactionReport {
                runs: summarize(totals.hist(Hist::Compaction)),
                all_tasks: totals.counter(Counter::CompactionsAll),
            });
        }
        if enabled("swap_out") {
            self.swap_out = Some(SwapOutReport {
                anon_folios: totals.counter(Counter::WriteFolioAnon),
                file_folios: totals.counter(Counter::WriteFolioFile),
            });
        }
        if enabled("major_fault") {
            self.faults.major_all = Some(totals.counter(Counter::MajorFaultsAll));
            self.faults.major_target = Some(totals.counter(Counter::MajorFaultsTarget));
        }
        if enabled("kernel_faults") {
            self.faults.kernel_mode_target = Some(totals.counter(Counter::KernelFaultsTarget));
        }
        if enabled("process_faults") {
            let mut top: Vec<ProcessFaults> = totals
                .processes
                .iter()
                .map(|(pid, p)| ProcessFaults {
                    pid: *pid,
                    comm: crate::collect::comm_to_string(&p.comm),
                    threads: p.threads,
                    minor: p.min_flt,
                    major: p.maj_flt,
                })
                .collect();
            let totals_row = ProcessFaultTotals {
                processes: top.len() as u64,
                threads: top.iter().map(|p| p.threads).sum(),
                minor: top.iter().map(|p| p.minor).sum(),
                major: top.iter().map(|p| p.major).sum(),
                top: Vec::new(),
            };
            top.sort_by_key(|p| std::cmp::Reverse((p.major, p.minor)));
            top.truncate(10);
            self.faults.processes = Some(ProcessFaultTotals { top, ..totals_row });
        }
        if enabled("fault_latency") {
            self.faults.minor_target = Some(totals.counter(Counter::MinorFaultsTarget));
            self.faults.minor_latency = Some(summarize(totals.hist(Hist::MinorFault)));
            self.faults.major_latency = Some(summarize(totals.hist(Hist::MajorFault)));
            let mut times: Vec<ProcessFaultTime> = totals
                .process_fault_time
                .iter()
                .map(|(pid, t)| ProcessFaultTime {
                    pid: *pid,
                    comm: totals
                        .processes
                        .iter()
                        .find(|(p, _)| p == pid)
                        .map(|(_, p)| crate::collect::comm_to_string(&p.comm))
                        .unwrap_or_default(),
                    minor: t.minor,
                    minor_ns: t.minor_ns,
                    major: t.major,
                    major_ns: t.major_ns,
                    max_ns: t.max_ns,
                })
                .collect();
            times.sort_by_key(|t| std::cmp::Reverse(t.minor_ns + t.major_ns));
            times.truncate(10);
            self.faults.process_time = Some(times);
        }
        self.dropped = Dropped {
            reclaim_start_map_full: totals.counter(Counter::ReclaimStartDropped),
            reclaim_end_without_begin: totals.counter(Counter::ReclaimEndUnmatched),
            fault_start_map_full: totals.counter(Counter::FaultStartDropped),
            node_out_of_range: totals.counter(Counter::NodeOutOfRange),
            oom_records_lost: totals.counter(Counter::OomRecordsDropped),
            swap_io_map_full: totals.counter(Counter::SwapIoStartDropped),
            evicted: [
                (
                    "reclaim stallers",
                    Counter::StallerInserts,
                    totals.stallers.len(),
                ),
                (
                    "process faults",
                    Counter::ProcessFaultInserts,
                    totals.processes.len(),
                ),
                (
                    "process fault time",
                    Counter::ProcessTimeInserts,
                    totals.process_fault_time.len(),
                ),
                (
                    "kswapd wakers",
                    Counter::WakerInserts,
                    totals.kswapd_wakers.len(),
                ),
            ]
            .into_iter()
            .filter_map(|(name, inserts, held)| {
                let lost = totals.counter(inserts).saturating_sub(held as u64);
                (lost > 0).then(|| (name.to_string(), lost))
            })
            .collect(),
            program_misses: Vec::new(),
        };
    }

    /// Adds the kswapd section. `cpu` is (node, seconds before, after);
    /// `zones` names zone indices per node (from /proc/zoneinfo).
    pub fn add_kswapd(
        &mut self,
        totals: &KernelTotals,
        cpu: &[(u32, f64, f64)],
        zones: &[(u32, Vec<String>)],
    ) {
        let mut k = KswapdReport::default();
        for &(node, before, after) in cpu {
            let (wakes, awake_ns) = totals
                .kswapd
                .iter()
                .find(|(n, _, _)| *n == node)
                .map_or((0, 0), |(_, t, open)| {
                    (t.wakes, t.awake_ns + open.unwrap_or(0))
                });
            k.nodes.push(KswapdNodeReport {
                node,
                wakes,
                awake_s: awake_ns as f64 / 1e9,
                cpu_s: (after - before).max(0.0),
            });
        }
        let periods = totals.hist(Hist::KswapdAwake);
        if periods.iter().any(|&n| n > 0) {
            k.awake_periods = Some(summarize(periods));
        }
        k.wakeups = totals
            .kswapd_wakeups
            .iter()
            .map(|&(node, zid, count)| ZoneCount {
                node,
                zone: zones
                    .iter()
                    .find(|(n, _)| *n == node)
                    .and_then(|(_, z)| z.get(zid as usize).cloned())
                    .unwrap_or_else(|| format!("zone{zid}")),
                count,
            })
            .collect();
        k.wakeup_orders = totals.kswapd_wakeup_order.clone();
        k.wakers = totals
            .kswapd_wakers
            .iter()
            .take(10)
            .map(|(name, count)| NameCount {
                name: name.clone(),
                count: *count,
            })
            .collect();
        self.kswapd = Some(k);
    }

    pub fn add_swap_io(&mut self, totals: &KernelTotals, layout: &crate::swapdev::SwapLayout) {
        self.swap_io = Some(SwapIoReport {
            areas: layout.areas.clone(),
            truncated: layout.truncated,
            write: summarize(totals.hist(Hist::SwapWrite)),
            write_bytes: totals.counter(Counter::SwapWriteSectors) * 512,
            read: summarize(totals.hist(Hist::SwapRead)),
            read_bytes: totals.counter(Counter::SwapReadSectors) * 512,
        });
    }

    /// Builds the zone table from the kernel totals and the samples.
    pub fn add_zones(
        &mut self,
        totals: &KernelTotals,
        samples: &[crate::sample::Sample],
        page_alloc: bool,
    ) {
        let Some(last) = samples.last() else { return };
        let below = crate::sample::time_below(samples);
        for (idx, z) in last.zones.iter().enumerate() {
            // Zone index within its node = position among the node's zones.
            let zid = last.zones[..idx]
                .iter()
                .filter(|o| o.node == z.node)
                .count() as u32;
            let iso = |f: fn(&vmtrace_common::LruIsolate) -> u64| -> u64 {
                totals
                    .isolate
                    .iter()
                    .filter(|(zone, _, _)| *zone == zid)
                    .map(|(_, _, i)| f(i))
                    .sum()
            };
            let (below_low_s, below_min_s) = below
                .iter()
                .find(|b| b.0 == z.node && b.1 == z.zone)
                .map_or((0.0, 0.0), |b| (b.2, b.3));
            let row = ZoneRow {
                node: z.node,
                zone: z.zone.clone(),
                kswapd_wakeups: totals
                    .kswapd_wakeups
                    .iter()
                    .filter(|w| w.0 == z.node && w.1 == zid)
                    .map(|w| w.2)
                    .sum(),
                isolate_scanned: iso(|i| i.nr_scanned),
                isolate_skipped: iso(|i| i.nr_skipped),
                isolate_taken: iso(|i| i.nr_taken),
                reclaim_retries: totals
                    .retry_zone
                    .iter()
                    .filter(|r| r.0 == z.node && r.1 == zid)
                    .map(|r| r.2)
                    .sum(),
                below_low_s,
                below_min_s,
                allocated_pages: page_alloc.then(|| {
                    totals
                        .page_alloc
                        .iter()
                        .filter(|a| a.0 == z.node && a.1 == zid)
                        .map(|a| a.2)
                        .sum()
                }),
            };
            // Empty zones (Movable, Device) still show when allocations
            // named them as their highest zone.
            let busy = row.kswapd_wakeups + row.isolate_scanned + row.reclaim_retries > 0;
            if z.managed > 0 || busy {
                self.zones.push(row);
            }
        }
    }

    /// Adds the OOM victims read from the ring buffer; `start_ns` is the
    /// CLOCK_MONOTONIC time the command started.
    pub fn add_oom_victims(&mut self, victims: &[vmtrace_common::OomVictim], start_ns: u64) {
        self.oom_victims = Some(
            victims
                .iter()
                .map(|v| OomVictimReport {
                    time_s: v.time_ns.saturating_sub(start_ns) as f64 / 1e9,
                    pid: v.pid,
                    comm: crate::collect::comm_to_string(&v.comm),
                    target: v.target != 0,
                    total_vm_kb: v.total_vm_kb,
                    anon_rss_kb: v.anon_rss_kb,
                    file_rss_kb: v.file_rss_kb,
                    shmem_rss_kb: v.shmem_rss_kb,
                })
                .collect(),
        );
    }

    /// `Out of Memory: Killed process PID (comm).` for each of the
    /// command's processes the OOM killer took, in the words of the mails
    /// that argue about it; the first lines of a report.
    pub fn oom_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .oom_victims
            .iter()
            .flatten()
            .filter(|v| v.target)
            .map(|v| format!("Out of Memory: Killed process {} ({}).", v.pid, v.comm))
            .collect();
        if lines.is_empty() && self.exit.oom_killed {
            lines.push(format!("Out of Memory: Killed process {}.", self.pid));
        }
        lines
    }

    /// The run as csh's `time` prints it, as in the seed mails:
    /// `70.270u 7.330s 2:33.29 50.6%    0+0k 0+0io 19670pf+0w`
    /// (pf: major faults; io: block operations in+out).
    pub fn time_line(&self) -> String {
        let u = &self.usage;
        let minutes = (u.wall_s / 60.0).floor();
        let cpu = if u.wall_s > 0.0 {
            (u.user_s + u.sys_s) / u.wall_s * 100.0
        } else {
            0.0
        };
        format!(
            "{:.3}u {:.3}s {}:{:05.2} {:.1}%    0+0k {}+{}io {}pf+0w",
            u.user_s,
            u.sys_s,
            minutes,
            u.wall_s - minutes * 60.0,
            cpu,
            u.in_blocks,
            u.out_blocks,
            u.major_faults
        )
    }

    /// kswapd CPU time over the run, `m:ss kswapd`, as the mails append it.
    pub fn kswapd_line(&self) -> Option<String> {
        let k = self.kswapd.as_ref()?;
        let s = k.nodes.iter().map(|n| n.cpu_s).sum::<f64>().round() as u64;
        Some(format!("{}:{:02} kswapd", s / 60, s % 60))
    }

    /// Totals of the LRU table: (scanned, reclaimed).
    pub fn lru_totals(&self) -> Option<(u64, u64)> {
        self.lru_shrink_inactive.as_ref().map(|rows| {
            rows.iter().fold((0, 0), |(s, r), row| {
                (s + row.nr_scanned, r + row.nr_reclaimed)
            })
        })
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// The plain-text report (ASCII, <= 72 columns).
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let _ = self.write_text(&mut o);
        o
    }

    fn write_text(&self, o: &mut String) -> std::fmt::Result {
        for line in self.oom_lines() {
            writeln!(o, "{line}")?;
        }
        writeln!(o, "{}", self.time_line())?;
        if let Some(line) = self.kswapd_line() {
            writeln!(o, "{line}")?;
        }
        writeln!(o)?;
        writeln!(
            o,
            "vmtrace {} on Linux {}",
            self.vmtrace_version, self.kernel_release
        )?;
        for line in wrap(&format!("command: {}", self.command.join(" ")), 72) {
            writeln!(o, "{line}")?;
        }
        if let Some(b) = &self.membox {
            let mem = b.mem_limit_bytes.map_or("no limit".to_string(), |m| {
                format!(
                    "{} (cgroup {})",
                    human(m),
                    b.cgroup_version.map_or("?", |v| match v {
                        crate::membox::CgroupVersion::V1 => "v1",
                        crate::membox::CgroupVersion::V2 => "v2",
                    })
                )
            });
            let swap = b.swap_bytes.map_or("none added".to_string(), human);
            for line in wrap(&format!("box: memory {mem}, swapfile {swap}"), 72) {
                writeln!(o, "{line}")?;
            }
        }
        for line in wrap(&format!("target: {}", self.target), 72) {
            writeln!(o, "{line}")?;
        }
        writeln!(o)?;

        let e = &self.exit;
        let status = match (e.code, e.signal) {
            (Some(c), _) => format!("exited with status {c}"),
            (None, Some(s)) => format!("killed by signal {s} ({})", signal_name(s)),
            _ => "unknown".into(),
        };
        let mut status = status;
        if e.oom_killed {
            status.push_str(", OOM-killed by the box's memcg");
        }
        if e.interrupted {
            status.push_str(" (vmtrace interrupted)");
        }
        writeln!(o, "exit:     {status}")?;
        let u = &self.usage;
        writeln!(
            o,
            "time:     {:.2} s elapsed, {:.2} s user, {:.2} s system",
            u.wall_s, u.user_s, u.sys_s
        )?;
        writeln!(
            o,
            "faults:   {} minor, {} major (rusage)",
            u.minor_faults, u.major_faults
        )?;
        let mut mem = format!("memory:   max RSS {}", human(u.max_rss_bytes));
        if let Some(b) = &self.membox {
            if let Some(p) = b.peak_bytes {
                let _ = write!(mem, ", box peak {}", human(p));
            }
            if let Some(k) = b.oom_kills {
                let _ = write!(mem, ", {k} OOM kill(s)");
            }
        }
        writeln!(o, "{mem}")?;
        let v = &self.vmstat;
        writeln!(
            o,
            "swap:     {} pages out, {} pages in (/proc/vmstat)",
            v.pswpout, v.pswpin
        )?;

        for (title, r) in [
            ("direct reclaim", &self.direct_reclaim),
            ("memcg reclaim", &self.memcg_reclaim),
        ] {
            let Some(r) = r else { continue };
            writeln!(o)?;
            writeln!(
                o,
                "{title}: {} stalls, {} stalled, {} pages reclaimed",
                r.stalls.count,
                fmt_ns(r.stalls.total_ns),
                r.pages_reclaimed
            )?;
            write_hist(o, &r.stalls)?;
        }

        if !self.top_stallers.is_empty() {
            writeln!(o)?;
            writeln!(o, "processes stalled most in reclaim (* = the command's)")?;
            writeln!(
                o,
                "  {:>8} {:<16} {:>8} {:>9} {:>8} {:>9}",
                "pid", "comm", "direct", "stalled", "memcg", "stalled"
            )?;
            for t in &self.top_stallers {
                writeln!(
                    o,
                    "{} {:>8} {:<16} {:>8} {:>9} {:>8} {:>9}",
                    if t.target { '*' } else { ' ' },
                    t.pid,
                    t.comm,
                    t.direct_stalls,
                    fmt_ns(t.direct_ns),
                    t.memcg_stalls,
                    fmt_ns(t.memcg_ns)
                )?;
            }
        }
        for r in &self.reclaim_order {
            writeln!(o)?;
            let pairs = nonzero_pairs(&r.counts, |i| {
                if i + 1 == r.counts.len() {
                    format!("{i}+")
                } else {
                    i.to_string()
                }
            });
            for line in wrap(
                &format!("{} reclaims by allocation order: {pairs}", r.context),
                72,
            ) {
                writeln!(o, "{line}")?;
            }
        }

        if let Some(rows) = &self.lru_shrink_inactive {
            writeln!(o)?;
            writeln!(o, "LRU shrink inactive (all tasks; vmstat: pgscan/pgsteal)")?;
            writeln!(
                o,
                "  {:>4} {:<7} {:<4} {:>8} {:>12} {:>12} {:>6}",
                "node", "context", "lru", "events", "scanned", "reclaimed", "eff%"
            )?;
            for r in rows {
                writeln!(
                    o,
                    "  {:>4} {:<7} {:<4} {:>8} {:>12} {:>12} {:>6}",
                    r.node,
                    r.context,
                    r.lru,
                    r.events,
                    r.nr_scanned,
                    r.nr_reclaimed,
                    pct(r.nr_reclaimed, r.nr_scanned)
                )?;
            }
            let (s, r) = self.lru_totals().unwrap_or_default();
            writeln!(o, "  {:<27} {:>12} {:>12} {:>6}", "total", s, r, pct(r, s))?;
            writeln!(
                o,
                "  {:<27} {:>12} {:>12}",
                "/proc/vmstat", v.pgscan, v.pgsteal
            )?;
            if u.wall_s > 0.0 {
                writeln!(
                    o,
                    "  velocity {:.0} pages scanned/s, {:.0} reclaimed/s",
                    s as f64 / u.wall_s,
                    r as f64 / u.wall_s
                )?;
            }
            write_kept_back(o, rows)?;
        }
        for p in &self.reclaim_priority {
            let pairs = nonzero_pairs(&p.counts, |i| i.to_string());
            let text = format!(
                "{} shrinks by priority (12 mildest, 0 last resort): {pairs}",
                p.context
            );
            for line in wrap(&text, 72) {
                writeln!(o, "{line}")?;
            }
        }
        if let Some(rows) = &self.lru_shrink_active
            && !rows.is_empty()
        {
            writeln!(o)?;
            writeln!(o, "LRU shrink active (all tasks)")?;
            writeln!(
                o,
                "  {:<7} {:<4} {:>11} {:>11} {:>12} {:>12}",
                "context", "lru", "taken", "kept active", "deactivated", "referenced"
            )?;
            for r in rows {
                writeln!(
                    o,
                    "  {:<7} {:<4} {:>11} {:>11} {:>12} {:>12}",
                    r.context, r.lru, r.nr_taken, r.nr_active, r.nr_deactivated, r.nr_referenced
                )?;
            }
        }
        if let Some(t) = &self.throttle {
            writeln!(o)?;
            writeln!(
                o,
                "reclaim throttling: {} waits, {} asleep ({} of all tasks)",
                t.delays.count,
                fmt_ns(t.delays.total_ns),
                t.all_tasks
            )?;
            writeln!(
                o,
                "  reasons: writeback {}, isolated {}, noprogress {}, congested {}",
                t.writeback, t.isolated, t.noprogress, t.congested
            )?;
            if t.delays.count > 0 {
                write_hist(o, &t.delays)?;
            }
        }
        if let Some(c) = &self.compaction {
            writeln!(o)?;
            writeln!(
                o,
                "compaction: {} runs, {} ({} runs of all tasks)",
                c.runs.count,
                fmt_ns(c.runs.total_ns),
                c.all_tasks
            )?;
            if c.runs.count > 0 {
                write_hist(o, &c.runs)?;
            }
        }
        if let Some(sl) = &self.slab_shrink {
            writeln!(o)?;
            writeln!(
                o,
                "slab shrinking (all tasks): {} shrinker calls, {}, {} freed",
                sl.calls.count,
                fmt_ns(sl.calls.total_ns),
                sl.objects_freed
            )?;
            if sl.calls.count > 0 {
                write_hist(o, &sl.calls)?;
            }
        }
        if let Some(w) = &self.swap_out {
            writeln!(o)?;
            writeln!(
                o,
                "swap-out: {} anon folios written by reclaim (pswpout {})",
                w.anon_folios, v.pswpout
            )?;
            writeln!(o, "file writeback by reclaim: {} folios", w.file_folios)?;
        }
        if let Some(io) = &self.swap_io {
            writeln!(o)?;
            if io.areas.is_empty() {
                writeln!(o, "swap I/O: no swap area was active")?;
            } else {
                for (title, s, bytes) in [
                    ("swap writes", &io.write, io.write_bytes),
                    ("swap reads", &io.read, io.read_bytes),
                ] {
                    writeln!(
                        o,
                        "{title}: {} requests, {}, issue to completion",
                        s.count,
                        human(bytes)
                    )?;
                    if s.count > 0 {
                        write_hist(o, s)?;
                    }
                }
                if io.truncated {
                    writeln!(o, "  (swap areas too fragmented: some requests missed)")?;
                }
            }
        }
        if let Some(k) = &self.kswapd {
            writeln!(o)?;
            writeln!(o, "kswapd (system-wide)")?;
            writeln!(
                o,
                "  {:>4} {:>8} {:>10} {:>10}",
                "node", "wakes", "awake", "cpu"
            )?;
            for n in &k.nodes {
                writeln!(
                    o,
                    "  {:>4} {:>8} {:>9.2}s {:>9.2}s",
                    n.node, n.wakes, n.awake_s, n.cpu_s
                )?;
            }
            if let Some(p) = &k.awake_periods {
                writeln!(o, "kswapd awake periods: {} in all", p.count)?;
                write_hist(o, p)?;
            }
            if !k.wakeups.is_empty() {
                let z: Vec<String> = k
                    .wakeups
                    .iter()
                    .map(|w| format!("node {} {} {}", w.node, w.zone, w.count))
                    .collect();
                let text = format!(
                    "  wakeups by highest zone of the allocation: {}",
                    z.join(", ")
                );
                for line in wrap(&text, 72) {
                    writeln!(o, "{line}")?;
                }
            }
            if k.wakeup_orders.iter().any(|&n| n > 0) {
                let last = k.wakeup_orders.len().saturating_sub(1);
                let pairs = nonzero_pairs(&k.wakeup_orders, |i| {
                    if i == last {
                        format!("{i}+")
                    } else {
                        i.to_string()
                    }
                });
                writeln!(o, "  wakeups by allocation order: {pairs}")?;
            }
            if !k.wakers.is_empty() {
                let w: Vec<String> = k
                    .wakers
                    .iter()
                    .map(|w| format!("{} {}", w.name, w.count))
                    .collect();
                for line in wrap(&format!("  woken by: {}", w.join(", ")), 72) {
                    writeln!(o, "{line}")?;
                }
            }
        }
        if let Some(victims) = &self.oom_victims
            && !victims.is_empty()
        {
            writeln!(o)?;
            writeln!(o, "OOM victims (* = OOM hit by the command's tasks)")?;
            writeln!(
                o,
                "  {:>8} {:>8} {:<16} {:>10} {:>10} {:>10}",
                "time", "pid", "comm", "anon-rss", "file-rss", "total-vm"
            )?;
            for k in victims {
                writeln!(
                    o,
                    "{} {:>7.2}s {:>8} {:<16} {:>10} {:>10} {:>10}",
                    if k.target { '*' } else { ' ' },
                    k.time_s,
                    k.pid,
                    k.comm,
                    human(k.anon_rss_kb * 1024),
                    human(k.file_rss_kb * 1024),
                    human(k.total_vm_kb * 1024)
                )?;
            }
        }

        if !self.zones.is_empty() {
            writeln!(o)?;
            writeln!(
                o,
                "zones (isolation and kswapd wakeups by highest allowed zone)"
            )?;
            writeln!(
                o,
                "  {:<9} {:>7} {:>9} {:>9} {:>9} {:>7} {:>6} {:>6}",
                "zone", "kswapd", "isolated", "skipped", "taken", "retries", "<low", "<min"
            )?;
            for z in &self.zones {
                writeln!(
                    o,
                    "  {:<9} {:>7} {:>9} {:>9} {:>9} {:>7} {:>5.1}s {:>5.1}s",
                    format!("{}/{}", z.node, z.zone),
                    z.kswapd_wakeups,
                    z.isolate_scanned,
                    z.isolate_skipped,
                    z.isolate_taken,
                    z.reclaim_retries,
                    z.below_low_s,
                    z.below_min_s
                )?;
            }
        }
        let allocs: Vec<String> = self
            .zones
            .iter()
            .filter_map(|z| Some(format!("{}/{} {}", z.node, z.zone, z.allocated_pages?)))
            .collect();
        if !allocs.is_empty() {
            let text = format!("  pages allocated per zone: {}", allocs.join(", "));
            for line in wrap(&text, 72) {
                writeln!(o, "{line}")?;
            }
        }
        write_timeline(o, &self.timeline)?;

        let f = &self.faults;
        if f.major_all.is_some() || f.minor_latency.is_some() || f.processes.is_some() {
            writeln!(o)?;
            writeln!(o, "page faults")?;
            if let (Some(all), Some(t)) = (f.major_all, f.major_target) {
                writeln!(
                    o,
                    "  major, target tasks   {t:>12}   rusage {:>12}",
                    u.major_faults
                )?;
                writeln!(
                    o,
                    "  major, all tasks      {all:>12}   vmstat {:>12}",
                    v.pgmajfault
                )?;
            }
            if let Some(k) = f.kernel_mode_target {
                writeln!(o, "  kernel-mode, target   {k:>12}")?;
            }
            if let Some(p) = &f.processes {
                writeln!(
                    o,
                    "  by process, at exit   {:>12} minor {:>12} major",
                    p.minor, p.major
                )?;
                writeln!(
                    o,
                    "  ({} processes, {} threads; includes get_user_pages faults)",
                    p.processes, p.threads
                )?;
                writeln!(
                    o,
                    "  {:>8} {:<16} {:>7} {:>12} {:>12}",
                    "pid", "comm", "threads", "minor", "major"
                )?;
                for t in &p.top {
                    writeln!(
                        o,
                        "  {:>8} {:<16} {:>7} {:>12} {:>12}",
                        t.pid, t.comm, t.threads, t.minor, t.major
                    )?;
                }
            }
            if let Some(m) = f.minor_target {
                writeln!(
                    o,
                    "  minor, target tasks   {m:>12}   rusage {:>12}",
                    u.minor_faults
                )?;
            }
            if let Some(times) = &f.process_time
                && !times.is_empty()
            {
                writeln!(o)?;
                writeln!(o, "fault time by process (--fault-latency)")?;
                writeln!(
                    o,
                    "  {:>8} {:<16} {:>9} {:>7} {:>8} {:>7} {:>7}",
                    "pid", "comm", "minor", "time", "major", "time", "max"
                )?;
                for t in times {
                    writeln!(
                        o,
                        "  {:>8} {:<16} {:>9} {:>7} {:>8} {:>7} {:>7}",
                        t.pid,
                        t.comm,
                        t.minor,
                        fmt_ns(t.minor_ns),
                        t.major,
                        fmt_ns(t.major_ns),
                        fmt_ns(t.max_ns)
                    )?;
                }
            }
            for (title, s) in [
                ("minor fault latency", &f.minor_latency),
                ("major fault latency", &f.major_latency),
            ] {
                if let Some(s) = s {
                    writeln!(o)?;
                    writeln!(
                        o,
                        "{title}: {} faults, {} in all",
                        s.count,
                        fmt_ns(s.total_ns)
                    )?;
                    writeln!(o, "  (faults taken through get_user_pages are not timed)")?;
                    write_hist(o, s)?;
                }
            }
        }

        let d = &self.dropped;
        if !d.evicted.is_empty() {
            writeln!(o)?;
            let list: Vec<String> = d.evicted.iter().map(|(m, n)| format!("{m} {n}")).collect();
            let text = format!(
                "warning: rows evicted from full tables (their totals are short): {}",
                list.join(", ")
            );
            for line in wrap(&text, 72) {
                writeln!(o, "{line}")?;
            }
        }
        if !d.program_misses.is_empty() {
            writeln!(o)?;
            let list: Vec<String> = d
                .program_misses
                .iter()
                .map(|(p, n)| format!("{p} {n}"))
                .collect();
            let text = format!(
                "warning: events skipped by the kernel (program would have nested \
                 in another BPF program on its CPU): {}",
                list.join(", ")
            );
            for line in wrap(&text, 72) {
                writeln!(o, "{line}")?;
            }
        }
        let lost = d.reclaim_start_map_full
            + d.fault_start_map_full
            + d.node_out_of_range
            + d.oom_records_lost
            + d.swap_io_map_full;
        if lost > 0 || d.reclaim_end_without_begin > 0 {
            writeln!(o)?;
            writeln!(
                o,
                "warning: events not accounted: {} reclaim starts (map full),",
                d.reclaim_start_map_full
            )?;
            writeln!(
                o,
                "  {} fault starts (map full), {} bad node ids, {} reclaim ends",
                d.fault_start_map_full, d.node_out_of_range, d.reclaim_end_without_begin
            )?;
            writeln!(o, "  without a begin (reclaims already running at attach),")?;
            writeln!(
                o,
                "  {} OOM victim records (ring buffer full), {} swap I/Os (map full)",
                d.oom_records_lost, d.swap_io_map_full
            )?;
        }
        if !self.unavailable.is_empty() || !self.partial.is_empty() {
            writeln!(o)?;
            let notices = self
                .unavailable
                .iter()
                .map(|u| (u, "unavailable"))
                .chain(self.partial.iter().map(|u| (u, "incomplete")));
            for (u, what) in notices {
                let text = format!("notice: {} {what}: {}", u.metric, u.reason);
                for line in wrap(&text, 72) {
                    writeln!(o, "{line}")?;
                }
            }
        }
        Ok(())
    }
}

/// "why scanned pages were not reclaimed": reasons down, the busiest
/// (context, lru) pairs across (at most 4 columns), summed over nodes.
fn write_kept_back(o: &mut String, rows: &[LruRowReport]) -> std::fmt::Result {
    let mut cols: Vec<LruRowReport> = Vec::new();
    for r in rows {
        let i = match cols
            .iter()
            .position(|c| c.context == r.context && c.lru == r.lru)
        {
            Some(i) => i,
            None => {
                cols.push(LruRowReport {
                    context: r.context,
                    lru: r.lru,
                    ..Default::default()
                });
                cols.len() - 1
            }
        };
        let c = &mut cols[i];
        c.nr_scanned += r.nr_scanned;
        c.nr_dirty += r.nr_dirty;
        c.nr_writeback += r.nr_writeback;
        c.nr_congested += r.nr_congested;
        c.nr_immediate += r.nr_immediate;
        c.nr_activate_anon += r.nr_activate_anon;
        c.nr_activate_file += r.nr_activate_file;
        c.nr_ref_keep += r.nr_ref_keep;
        c.nr_unmap_fail += r.nr_unmap_fail;
    }
    cols.sort_by_key(|c| std::cmp::Reverse(c.nr_scanned));
    cols.truncate(4);
    if cols.is_empty() {
        return Ok(());
    }
    writeln!(o, "  scanned but kept back (pages)")?;
    let mut head = format!("  {:<16}", "");
    for c in &cols {
        let _ = write!(head, " {:>12}", format!("{}/{}", c.context, c.lru));
    }
    writeln!(o, "{head}")?;
    type Get = fn(&LruRowReport) -> u64;
    let reasons: [(&str, Get); 8] = [
        ("dirty", |c| c.nr_dirty),
        ("writeback", |c| c.nr_writeback),
        ("congested", |c| c.nr_congested),
        ("immediate", |c| c.nr_immediate),
        ("activated anon", |c| c.nr_activate_anon),
        ("activated file", |c| c.nr_activate_file),
        ("referenced kept", |c| c.nr_ref_keep),
        ("unmap failed", |c| c.nr_unmap_fail),
    ];
    for (name, get) in reasons {
        let mut line = format!("  {name:<16}");
        for c in &cols {
            let _ = write!(line, " {:>12}", get(c));
        }
        writeln!(o, "{line}")?;
    }
    Ok(())
}

/// The time line: per step, rates over the step (at most 20 rows: steps
/// are merged on long runs), stall time and PSI.
fn write_timeline(o: &mut String, samples: &[crate::sample::Sample]) -> std::fmt::Result {
    if samples.len() < 2 {
        return Ok(());
    }
    let step = samples.len().div_ceil(20);
    writeln!(o)?;
    writeln!(
        o,
        "time line (per second over each step; stall = reclaim stall time)"
    )?;
    writeln!(
        o,
        "  {:>7} {:>9} {:>9} {:>8} {:>8} {:>8} {:>7} {:>5}",
        "t", "pgscan/s", "steal/s", "swpout/s", "swpin/s", "majflt/s", "stall", "psi%"
    )?;
    let mut prev: Option<&crate::sample::Sample> = None;
    for s in samples.iter().skip(step - 1).step_by(step).chain(
        // Always end with the last sample.
        samples
            .last()
            .filter(|_| !(samples.len() - step).is_multiple_of(step)),
    ) {
        let zero = crate::sample::Sample::default();
        let p = prev.unwrap_or(&zero);
        let dt = (s.t_s - p.t_s).max(1e-9);
        let rate = |a: u64, b: u64| format!("{:.0}", a.saturating_sub(b) as f64 / dt);
        let stall = (s.memcg_stall_ns + s.direct_stall_ns)
            .saturating_sub(p.memcg_stall_ns + p.direct_stall_ns);
        let psi = match (s.psi, p.psi) {
            (Some(a), Some(b)) => format!(
                "{:.0}",
                a.some_us.saturating_sub(b.some_us) as f64 / (dt * 1e4)
            ),
            (Some(a), None) => format!("{:.0}", a.some_us as f64 / (dt * 1e4)),
            _ => "-".into(),
        };
        writeln!(
            o,
            "  {:>6.1}s {:>9} {:>9} {:>8} {:>8} {:>8} {:>7} {:>5}",
            s.t_s,
            rate(s.pgscan, p.pgscan),
            rate(s.pgsteal, p.pgsteal),
            rate(s.pswpout, p.pswpout),
            rate(s.pswpin, p.pswpin),
            rate(s.major_faults_target, p.major_faults_target),
            fmt_ns(stall),
            psi
        )?;
        prev = Some(s);
    }
    Ok(())
}

/// `i:count` for the non-zero counts, highest index first.
fn nonzero_pairs(counts: &[u64], label: impl Fn(usize) -> String) -> String {
    let pairs: Vec<String> = counts
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, n)| **n > 0)
        .map(|(i, n)| format!("{}:{n}", label(i)))
        .collect();
    if pairs.is_empty() {
        "none".into()
    } else {
        pairs.join(" ")
    }
}

/// Repeated runs side by side, as the seed mails tabulate them: one row
/// per run, one column per swept value (e.g. -j5, -j10, -j15), elapsed
/// seconds (a failed run shows why), then mean, stddev, min and max of the
/// runs that completed.
#[derive(Clone, Debug, Serialize)]
pub struct RunsTable {
    pub columns: Vec<RunsColumn>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunsColumn {
    /// The swept value (`-j5`), or `elapsed` without a sweep.
    pub label: String,
    pub elapsed_s: Vec<Option<f64>>,
    /// Why each failed run failed ("OOM", "exit 3", "signal 9").
    pub failures: Vec<Option<String>>,
    pub mean_s: Option<f64>,
    pub stddev_s: Option<f64>,
    pub min_s: Option<f64>,
    pub max_s: Option<f64>,
}

impl RunsColumn {
    pub fn of(label: &str, reports: &[&RunReport]) -> RunsColumn {
        let failures: Vec<Option<String>> = reports
            .iter()
            .map(|r| match (r.exit.oom_killed, r.exit.code, r.exit.signal) {
                (true, _, _) => Some("OOM".to_string()),
                (false, Some(0), _) => None,
                (false, Some(c), _) => Some(format!("exit {c}")),
                (false, None, Some(s)) => Some(format!("signal {s}")),
                _ => Some("unknown".to_string()),
            })
            .collect();
        let elapsed_s: Vec<Option<f64>> = reports
            .iter()
            .zip(&failures)
            .map(|(r, f)| f.is_none().then_some(r.usage.wall_s))
            .collect();
        let ok: Vec<f64> = elapsed_s.iter().flatten().copied().collect();
        let n = ok.len() as f64;
        let mean = (!ok.is_empty()).then(|| ok.iter().sum::<f64>() / n);
        let stddev = mean
            .filter(|_| ok.len() > 1)
            .map(|m| (ok.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0)).sqrt());
        RunsColumn {
            label: if label.is_empty() {
                "elapsed s".into()
            } else {
                label.into()
            },
            mean_s: mean,
            stddev_s: stddev,
            min_s: ok.iter().copied().reduce(f64::min),
            max_s: ok.iter().copied().reduce(f64::max),
            elapsed_s,
            failures,
        }
    }
}

impl RunsTable {
    /// One column per (label, runs of that configuration).
    pub fn of(columns: &[(String, Vec<&RunReport>)]) -> RunsTable {
        RunsTable {
            columns: columns.iter().map(|(l, r)| RunsColumn::of(l, r)).collect(),
        }
    }

    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let mut head = format!("{:>8}", "run");
        for c in &self.columns {
            let _ = write!(head, " {:>10}", c.label);
        }
        let _ = writeln!(o, "{head}");
        let rows = self
            .columns
            .iter()
            .map(|c| c.elapsed_s.len())
            .max()
            .unwrap_or(0);
        for i in 0..rows {
            let mut line = format!("{:>8}", i + 1);
            for c in &self.columns {
                let cell = match (c.elapsed_s.get(i), c.failures.get(i)) {
                    (Some(Some(e)), _) => format!("{e:.2}"),
                    (_, Some(Some(f))) => f.clone(),
                    _ => "-".into(),
                };
                let _ = write!(line, " {cell:>10}");
            }
            let _ = writeln!(o, "{line}");
        }
        let show = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
        type Stat = fn(&RunsColumn) -> Option<f64>;
        let stats: [(&str, Stat); 4] = [
            ("mean", |c| c.mean_s),
            ("stddev", |c| c.stddev_s),
            ("min", |c| c.min_s),
            ("max", |c| c.max_s),
        ];
        for (name, get) in stats {
            let mut line = format!("{name:>8}");
            for c in &self.columns {
                let _ = write!(line, " {:>10}", show(get(c)));
            }
            let _ = writeln!(o, "{line}");
        }
        let failed: usize = self
            .columns
            .iter()
            .map(|c| c.failures.iter().flatten().count())
            .sum();
        let total: usize = self.columns.iter().map(|c| c.failures.len()).sum();
        if failed > 0 {
            let _ = writeln!(o, "{failed} of {total} runs failed");
        }
        o
    }
}

/// `vmtrace probes` as text: one block per metric, 72 columns.
pub fn probes_text(kernel_release: &str, listed: &[crate::probes::Listed]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "vmtrace probes on Linux {kernel_release}");
    for m in listed {
        let status = match (&m.reason, m.opt_in) {
            (Some(_), _) => "UNAVAILABLE".to_string(),
            (None, Some(flag)) => format!("available ({flag})"),
            (None, None) => "available".to_string(),
        };
        let head = format!("{} ({})", m.id, m.title);
        let _ = writeln!(o);
        if head.len() + 1 + status.len() <= 72 {
            let _ = writeln!(o, "{head:<width$} {status}", width = 71 - status.len());
        } else {
            let _ = writeln!(o, "{head}");
            let _ = writeln!(o, "{status:>72}");
        }
        for h in &m.hooks {
            let _ = writeln!(o, "  {h}");
        }
        if let Some(r) = &m.reason {
            for line in wrap(&format!("  why: {r}"), 72) {
                let _ = writeln!(o, "{line}");
            }
        }
    }
    o
}

/// Count, quantiles and a bar per power of two (merging the kernel's 16
/// sub-buckets), bpftrace-style but at most 72 columns.
fn write_hist(o: &mut String, s: &Summary) -> std::fmt::Result {
    if s.count == 0 {
        writeln!(o, "  (none)")?;
        return Ok(());
    }
    writeln!(
        o,
        "  {:>9} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "count", "p50", "p90", "p99", "p99.9", "max"
    )?;
    writeln!(
        o,
        "  {:>9} {:>8} {:>8} {:>8} {:>8} {:>8}",
        s.count,
        fmt_ns(s.p50_ns),
        fmt_ns(s.p90_ns),
        fmt_ns(s.p99_ns),
        fmt_ns(s.p999_ns),
        fmt_ns(s.max_ns)
    )?;
    for (lo, hi, n, bar) in power_of_two_rows(s) {
        writeln!(
            o,
            "  [{:>6}, {:>6}) {:>9} |{:<32}|",
            fmt_ns(lo),
            fmt_ns(hi),
            n,
            bar
        )?;
    }
    Ok(())
}

/// (lower, upper, count, bar) per power of two from the first to the last
/// non-empty one.
fn power_of_two_rows(s: &Summary) -> Vec<(u64, u64, u64, String)> {
    let sub = SUB as usize;
    let mut groups: Vec<(usize, u64)> = Vec::new();
    for b in &s.buckets {
        let idx = vmtrace_common::hist::bucket_of(b.lower_ns);
        let g = idx / sub;
        match groups.last_mut() {
            Some((last, n)) if *last == g => *n += b.count,
            _ => groups.push((g, b.count)),
        }
    }
    let (Some(first), Some(last)) = (groups.first(), groups.last()) else {
        return Vec::new();
    };
    let (first, last) = (first.0, last.0);
    let max = groups.iter().map(|g| g.1).max().unwrap_or(1).max(1);
    (first..=last)
        .map(|g| {
            let n = groups.iter().find(|x| x.0 == g).map_or(0, |x| x.1);
            let lo = bucket_lower(g * sub);
            let hi = if (g + 1) * sub < BUCKETS {
                bucket_lower((g + 1) * sub)
            } else {
                u64::MAX
            };
            let width = ((n as u128 * 32).div_ceil(max as u128)) as usize;
            (lo, hi, n, "@".repeat(width.min(32)))
        })
        .collect()
}

/// A duration in ns as at most 6 characters: `512ns`, `1.5us`, `12ms`.
pub fn fmt_ns(ns: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    for (scale, unit) in UNITS {
        if ns >= scale {
            let v = ns as f64 / scale as f64;
            return if scale == 1 || v >= 100.0 {
                format!("{v:.0}{unit}")
            } else if v >= 10.0 {
                format!("{v:.1}{unit}").replace(".0", "")
            } else {
                format!("{v:.1}{unit}")
            };
        }
    }
    "0".into()
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}", part as f64 * 100.0 / whole as f64)
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        _ => "signal",
    }
}

/// Wraps at spaces to `width` columns; continuation lines indented by 2.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
            line.push_str("  ");
        } else if !line.is_empty() && !line.ends_with("  ") {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.trim().is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use vmtrace_common::{ReclaimContext, hist::bucket_of};

    fn sample_report() -> RunReport {
        let mut counts = vec![vec![0u64; BUCKETS]; Hist::COUNT as usize];
        for v in [3_000u64, 5_000, 40_000, 41_000, 2_000_000, 9_000_000_000] {
            counts[Hist::MemcgReclaim as usize][bucket_of(v)] += 1;
        }
        let mut counters = vec![0u64; Counter::COUNT as usize];
        counters[Counter::MemcgReclaims as usize] = 6;
        counters[Counter::MemcgReclaimPages as usize] = 1234;
        counters[Counter::MajorFaultsAll as usize] = 500;
        counters[Counter::MajorFaultsTarget as usize] = 480;
        counters[Counter::WriteFolioAnon as usize] = 777;
        // Two stallers were inserted, one is left: one was evicted.
        counters[Counter::StallerInserts as usize] = 2;
        let mut comm = [0u8; 16];
        comm[..6].copy_from_slice(b"memhog");
        let totals = KernelTotals {
            hists: counts,
            counters,
            lru: vec![crate::collect::LruRow {
                node: 0,
                context: ReclaimContext::Memcg,
                lru: vmtrace_common::LruType::Anon,
                totals: vmtrace_common::LruShrinkInactive {
                    events: 10,
                    nr_scanned: 320,
                    nr_reclaimed: 300,
                    nr_ref_keep: 20,
                    ..Default::default()
                },
            }],
            priority: vec![(ReclaimContext::Memcg, {
                let mut p = vec![0; 13];
                p[12] = 9;
                p[0] = 1;
                p
            })],
            order: vec![(ReclaimContext::Memcg, {
                let mut o = vec![0; 12];
                o[0] = 5;
                o[11] = 1;
                o
            })],
            stallers: vec![(
                4242,
                vmtrace_common::Staller {
                    comm,
                    memcg_ns: 9_000_000_000,
                    memcg_count: 6,
                    target: 1,
                    ..Default::default()
                },
            )],
            ..Default::default()
        };
        let mut r = RunReport {
            vmtrace_version: "0.1.0".into(),
            kernel_release: "6.18.44".into(),
            command: vec!["memhog".into(), "--mib".into(), "384".into()],
            target: "cgroup vmtrace-1 (id 42)".into(),
            exit: Exit {
                code: None,
                signal: Some(9),
                oom_killed: true,
                interrupted: false,
            },
            unavailable: vec![Unavailable {
                metric: "direct_reclaim".into(),
                reason: "this kernel has no tracepoint vmscan:mm_vmscan_direct_reclaim_begin \
                         and the reason is long enough to need wrapping"
                    .into(),
            }],
            ..Default::default()
        };
        r.partial = vec![Unavailable {
            metric: "oom".into(),
            reason: "oom:mark_victim has no field anon_rss (shown as 0)".into(),
        }];
        r.add_kernel_totals(&totals, &|id| id != "direct_reclaim");
        r.add_oom_victims(
            &[vmtrace_common::OomVictim {
                time_ns: 2_500_000_000,
                pid: 4242,
                target: 1,
                comm,
                anon_rss_kb: 65280,
                ..Default::default()
            }],
            1_000_000_000,
        );
        r
    }

    #[test]
    fn text_is_ascii_and_fits_72_columns() {
        let text = sample_report().to_text();
        for line in text.lines() {
            assert!(line.is_ascii(), "{line}");
            assert!(line.len() <= 72, "{} columns: {line}", line.len());
        }
        assert!(text.contains("memcg reclaim: 6 stalls"), "{text}");
        assert!(text.contains("OOM-killed"), "{text}");
        assert!(
            text.contains("notice: direct_reclaim unavailable"),
            "{text}"
        );
        assert!(!text.contains("direct reclaim:"), "{text}");
        assert!(text.contains("    320          300   93.8"), "{text}");
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some("Out of Memory: Killed process 4242 (memhog).")
        );
        // csh time format: the sample has no usage, so all zero.
        assert_eq!(
            lines.next(),
            Some("0.000u 0.000s 0:00.00 0.0%    0+0k 0+0io 0pf+0w")
        );
        assert!(text.contains("*     4242 memhog"), "{text}");
        assert!(
            text.contains("memcg reclaims by allocation order: 11+:1 0:5"),
            "{text}"
        );
        assert!(text.contains("12:9 0:1"), "{text}");
        assert!(text.contains("swap-out: 777 anon folios"), "{text}");
        assert!(text.contains("referenced kept"), "{text}");
        assert!(
            text.contains("rows evicted from full tables (their totals are short):"),
            "{text}"
        );
        assert!(text.contains("reclaim\n  stallers 1"), "{text}");
        assert!(text.contains("notice: oom incomplete: oom:mark_victim has no field"));
    }

    #[test]
    fn histogram_rows_cover_first_to_last_power() {
        let r = sample_report();
        let s = &r.memcg_reclaim.as_ref().expect("memcg").stalls;
        let rows = power_of_two_rows(s);
        assert_eq!(rows.iter().map(|r| r.2).sum::<u64>(), 6);
        // 2^11 (2048 ns) .. 2^33 (8.6 s): 23 rows, contiguous.
        assert_eq!(rows.first().map(|r| r.0), Some(2048));
        assert_eq!(rows.len(), 23);
        for w in rows.windows(2) {
            assert_eq!(w[0].1, w[1].0);
        }
        assert!(rows.iter().all(|r| r.3.len() <= 32));
    }

    #[test]
    fn json_has_the_numbers() {
        let json: serde_json::Value =
            serde_json::from_str(&sample_report().to_json()).expect("valid JSON");
        assert_eq!(json["memcg_reclaim"]["stalls"]["count"], 6);
        assert_eq!(json["memcg_reclaim"]["pages_reclaimed"], 1234);
        assert_eq!(json["faults"]["major_all"], 500);
        assert_eq!(json["lru_shrink_inactive"][0]["nr_scanned"], 320);
        assert_eq!(json["lru_shrink_inactive"][0]["lru"], "anon");
        assert_eq!(json["oom_victims"][0]["pid"], 4242);
        assert_eq!(json["top_stallers"][0]["memcg_ns"], 9_000_000_000u64);
        assert!(json["direct_reclaim"].is_null());
    }

    #[test]
    fn probes_listing_fits_and_says_why() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/kernel-formats/6.1.0-57-amd64");
        let tracefs = crate::tracefs::TraceFs::at(&dir);
        let listed = crate::probes::listing(&tracefs, None).expect("listing");
        let text = probes_text("6.1.0-57-amd64", &listed);
        for line in text.lines() {
            assert!(line.is_ascii() && line.len() <= 72, "{line}");
        }
        assert!(
            text.contains("fault_latency (page fault latency)"),
            "{text}"
        );
        assert!(text.contains("UNAVAILABLE"), "{text}");
        assert!(text.contains("why: kernel BTF"), "{text}");
        assert!(text.contains("tracepoint vmscan:mm_vmscan_lru_shrink_inactive"));
        let fl = listed.iter().find(|m| m.id == "fault_latency").expect("fl");
        assert!(!fl.available && fl.opt_in == Some("--fault-latency"));
        assert!(
            listed
                .iter()
                .filter(|m| {
                    ![
                        "fault_latency",
                        "kernel_faults",
                        "process_faults",
                        "swap_io",
                    ]
                    .contains(&m.id)
                })
                .all(|m| m.available)
        );
    }

    #[test]
    fn runs_table_counts_failures_apart() {
        let run = |wall_s: f64, code: Option<i32>, oom: bool| RunReport {
            usage: Usage {
                wall_s,
                ..Default::default()
            },
            exit: Exit {
                code,
                signal: code.is_none().then_some(9),
                oom_killed: oom,
                interrupted: false,
            },
            ..Default::default()
        };
        let runs = [
            run(10.0, Some(0), false),
            run(12.0, Some(0), false),
            run(3.0, None, true),
            run(14.0, Some(0), false),
        ];
        let fast = [run(5.0, Some(0), false), run(7.0, Some(0), false)];
        let t = RunsTable::of(&[
            ("-j5".to_string(), runs.iter().collect()),
            ("-j10".to_string(), fast.iter().collect()),
        ]);
        let c = &t.columns[0];
        assert_eq!(c.mean_s, Some(12.0));
        assert_eq!(c.stddev_s, Some(2.0));
        assert_eq!((c.min_s, c.max_s), (Some(10.0), Some(14.0)));
        let text = t.to_text();
        assert!(
            text.starts_with("     run        -j5       -j10\n"),
            "{text}"
        );
        assert!(text.contains("       3        OOM          -"), "{text}");
        assert!(text.contains("1 of 6 runs failed"), "{text}");
        assert!(text.contains("    mean      12.00       6.00"), "{text}");
    }

    #[test]
    fn durations_are_short() {
        assert_eq!(fmt_ns(0), "0");
        assert_eq!(fmt_ns(512), "512ns");
        assert_eq!(fmt_ns(1_500), "1.5us");
        assert_eq!(fmt_ns(12_000_000), "12ms");
        assert_eq!(fmt_ns(250_000_000), "250ms");
        assert_eq!(fmt_ns(9_000_000_000), "9.0s");
        for v in [1u64, 999, 99_999, 123_456_789_012] {
            assert!(fmt_ns(v).len() <= 6, "{v}: {}", fmt_ns(v));
        }
    }
}
