//! The run report: one model (`RunReport`), built from what the collector
//! read, printed as plain text that survives a mailing list (`text`:
//! ASCII, at most 72 columns) or as JSON; `runs` tabulates repeated runs.
//! Pure functions: no kernel access here.

use serde::{Deserialize, Serialize};
use vmtrace_common::{Counter, Hist, LruIsolate, LruShrinkActive, LruShrinkInactive};

use crate::{
    collect::{KernelTotals, VmStat},
    histogram::{Summary, summarize},
    membox::BoxReport,
};

/// How the traced command ended.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
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
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
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

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReclaimReport {
    /// Stall time of each reclaim a target task entered.
    pub stalls: Summary,
    pub pages_reclaimed: u64,
}

/// One (node, context, LRU type) row of `mm_vmscan_lru_shrink_inactive`
/// totals; field names are the tracepoint's.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LruRowReport {
    pub node: u32,
    pub context: String,
    pub lru: String,
    #[serde(flatten)]
    pub totals: LruShrinkInactive,
}

/// One row of `mm_vmscan_lru_shrink_active` totals.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LruActiveRowReport {
    pub node: u32,
    pub context: String,
    pub lru: String,
    #[serde(flatten)]
    pub totals: LruShrinkActive,
}

/// Counts per reclaim priority (index = priority, 12 = DEF_PRIORITY).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PriorityRow {
    pub context: String,
    pub counts: Vec<u64>,
}

/// Reclaims of target tasks per allocation order (last: that and above).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OrderRow {
    pub context: String,
    pub counts: Vec<u64>,
}

/// A process and the time it spent stalled in reclaim.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SwapOutReport {
    /// Anon folios: swap-out.
    pub anon_folios: u64,
    /// File folios written back by reclaim itself.
    pub file_folios: u64,
}

/// Slab shrinking (every task: kswapd and reclaimers alike).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SlabReport {
    /// Duration of each shrinker call.
    pub calls: Summary,
    pub objects_freed: u64,
}

/// Reclaim throttling of the target's tasks.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CompactionReport {
    pub runs: Summary,
    /// Compaction runs of every task (kcompactd and proactive included).
    pub all_tasks: u64,
}

/// kswapd over the run, system-wide (kswapd works for every task).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
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

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct KswapdNodeReport {
    pub node: u32,
    pub wakes: u64,
    /// Awake time, including a period still open at the end (seconds).
    pub awake_s: f64,
    /// CPU time of this node's kswapd thread over the run (/proc stat).
    pub cpu_s: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ZoneCount {
    pub node: u32,
    pub zone: String,
    pub count: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NameCount {
    pub name: String,
    pub count: u64,
}

/// Block I/O to and from the swap areas.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
#[derive(Clone, Debug, Serialize, Deserialize)]
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

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
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

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ProcessFaultTotals {
    pub processes: u64,
    pub threads: u64,
    pub minor: u64,
    pub major: u64,
    /// The processes with the most faults (at most 10).
    pub top: Vec<ProcessFaults>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
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

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProcessFaults {
    pub pid: u32,
    pub comm: String,
    pub threads: u64,
    pub minor: u64,
    pub major: u64,
}

/// The kernel's per-task delay accounting (the figures taskstats
/// reports, read from each target thread's `task->delays` as it exits):
/// time the command's tasks waited, measured by the kernel itself, an
/// independent check on the eBPF stall histograms.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DelayReport {
    /// kernel.task_delayacct was on for the run (else every figure is 0).
    pub accounting_on: bool,
    pub blkio_ns: u64,
    /// Waiting for swap-in.
    pub swapin_ns: u64,
    /// In direct or memcg reclaim ("freepages").
    pub freepages_ns: u64,
    /// Waiting for refaulted pages (thrashing).
    pub thrashing_ns: u64,
    pub compact_ns: u64,
    /// Waiting for a CPU while runnable (run-queue delay).
    #[serde(default)]
    pub cpu_ns: u64,
}

/// /proc/vmstat deltas over the traced window: the kernel's own view,
/// printed next to vmtrace's so that a reader can check one with the other.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
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
    /// Refaults of recently evicted pages (workingset_refault_anon/file).
    #[serde(default)]
    pub refaults: u64,
}

impl VmstatDelta {
    pub fn from_delta(d: &VmStat) -> VmstatDelta {
        VmstatDelta {
            pgscan: d.sum(&["pgscan_anon", "pgscan_file"]),
            pgsteal: d.sum(&["pgsteal_anon", "pgsteal_file"]),
            pgmajfault: d.get("pgmajfault"),
            pgfault: d.get("pgfault"),
            pswpin: d.get("pswpin"),
            pswpout: d.get("pswpout"),
            allocstall: d.sum_prefixed("allocstall"),
            refaults: d.sum(&["workingset_refault_anon", "workingset_refault_file"]),
            pgalloc: d.sum_prefixed("pgalloc_"),
        }
    }
}

/// Events the probes could not account for; all zero in a sound run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
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

/// One eBPF program's cost over the run (kernel.bpf_stats_enabled).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProgramCost {
    pub program: String,
    pub runs: u64,
    pub run_ns: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Unavailable {
    pub metric: String,
    pub reason: String,
}

/// What vmtrace itself cost during a run: the time to load, verify and
/// attach every program, its own CPU time (all its threads, attach
/// included) and its peak memory. The command is a child process and is
/// not counted.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct CollectorCost {
    pub attach_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    pub max_rss_bytes: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunReport {
    pub vmtrace_version: String,
    pub kernel_release: String,
    pub command: Vec<String>,
    /// The command's process id.
    pub pid: u32,
    /// When the command started, seconds since the epoch.
    #[serde(default)]
    pub started_unix_s: f64,
    /// `vmtrace attach`: the processes were running already; no rusage,
    /// no exit status.
    #[serde(default)]
    pub attached: bool,
    /// Who the command ran as when not vmtrace's own user (sudo's
    /// invoker): `alice (uid 1000, gid 1000)`.
    #[serde(default)]
    pub run_as: Option<String>,
    /// `vmtrace run --no-probes`: nothing was attached; only times,
    /// rusage and /proc/vmstat deltas (a baseline).
    #[serde(default)]
    pub untraced: bool,
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
    #[serde(default)]
    pub delays: Option<DelayReport>,
    pub vmstat: VmstatDelta,
    pub dropped: Dropped,
    /// With --bpf-stats: each eBPF program's runs and run time.
    #[serde(default)]
    pub program_costs: Option<Vec<ProgramCost>>,
    /// What vmtrace itself cost (`run`; None when untraced).
    #[serde(default)]
    pub collector: Option<CollectorCost>,
    /// Per populated zone: pressure from every side, in one table.
    pub zones: Vec<ZoneRow>,
    /// `mm_vmscan_lru_isolate` per (highest zone index, LRU list); lists
    /// are numbered as the kernel's enum lru_list (0 inactive anon,
    /// 1 active anon, 2 inactive file, 3 active file, 4 unevictable).
    pub lru_isolate: Option<Vec<IsolateRow>>,
    /// Snapshots every --interval (cumulative since the start).
    pub timeline: Vec<crate::sample::Sample>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IsolateRow {
    pub highest_zone_idx: u32,
    pub lru: u32,
    #[serde(flatten)]
    pub totals: LruIsolate,
}

/// One populated zone: the seed mails' question ("uneven pressure on
/// normal and DMA zones") in numbers.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
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
    /// Every latency histogram the run has, with the kernel histogram it
    /// came from (its name is the tag in exports).
    pub fn histograms(&self) -> Vec<(Hist, &Summary)> {
        let candidates: [(Hist, Option<&Summary>); 10] = [
            (
                Hist::DirectReclaim,
                self.direct_reclaim.as_ref().map(|r| &r.stalls),
            ),
            (
                Hist::MemcgReclaim,
                self.memcg_reclaim.as_ref().map(|r| &r.stalls),
            ),
            (Hist::MinorFault, self.faults.minor_latency.as_ref()),
            (Hist::MajorFault, self.faults.major_latency.as_ref()),
            (
                Hist::KswapdAwake,
                self.kswapd.as_ref().and_then(|k| k.awake_periods.as_ref()),
            ),
            (
                Hist::SlabShrink,
                self.slab_shrink.as_ref().map(|r| &r.calls),
            ),
            (Hist::Throttle, self.throttle.as_ref().map(|r| &r.delays)),
            (Hist::Compaction, self.compaction.as_ref().map(|r| &r.runs)),
            (Hist::SwapWrite, self.swap_io.as_ref().map(|r| &r.write)),
            (Hist::SwapRead, self.swap_io.as_ref().map(|r| &r.read)),
        ];
        candidates
            .into_iter()
            .filter_map(|(h, s)| Some((h, s?)))
            .collect()
    }

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
                    .map(|r| LruRowReport {
                        node: r.node,
                        context: r.context.name().into(),
                        lru: r.lru.name().into(),
                        totals: r.totals,
                    })
                    .collect(),
            );
            self.reclaim_priority = totals
                .priority
                .iter()
                .map(|(c, counts)| PriorityRow {
                    context: c.name().into(),
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
                        context: r.context.name().into(),
                        lru: r.lru.name().into(),
                        totals: r.totals,
                    })
                    .collect(),
            );
        }
        self.reclaim_order = totals
            .order
            .iter()
            .map(|(c, counts)| OrderRow {
                context: c.name().into(),
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
                        totals: *i,
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
            self.delays = Some(DelayReport {
                accounting_on: false,
                blkio_ns: totals.counter(Counter::DelayBlkioNs),
                swapin_ns: totals.counter(Counter::DelaySwapinNs),
                freepages_ns: totals.counter(Counter::DelayFreepagesNs),
                thrashing_ns: totals.counter(Counter::DelayThrashingNs),
                compact_ns: totals.counter(Counter::DelayCompactNs),
                cpu_ns: totals.counter(Counter::DelayCpuNs),
            });
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
                (s + row.totals.nr_scanned, r + row.totals.nr_reclaimed)
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
}

mod runs;
mod text;

pub use runs::{RunsColumn, RunsTable};
pub(crate) use text::wrap;
pub use text::{fmt_ns, probes_text};

/// Terminal colour for report text: headings (lines that start at the
/// first column) bold, OOM and incomplete-recording lines red.
pub fn colourize(text: &str) -> String {
    let mut o = String::with_capacity(text.len() + text.len() / 8);
    for line in text.lines() {
        if line.starts_with("Out of Memory") || line.starts_with("INCOMPLETE") {
            o.push_str(&format!("\x1b[1;31m{line}\x1b[0m\n"));
        } else if !line.is_empty() && !line.starts_with(' ') {
            o.push_str(&format!("\x1b[1m{line}\x1b[0m\n"));
        } else {
            o.push_str(line);
            o.push('\n');
        }
    }
    o
}

#[cfg(test)]
mod tests {
    #[test]
    fn colour_marks_headings_and_oom_only() {
        let c = colourize("Out of Memory: Killed process 1 (x).\nmemcg reclaim: 3\n  row 1\n\n");
        assert_eq!(
            c,
            "\x1b[1;31mOut of Memory: Killed process 1 (x).\x1b[0m\n\x1b[1mmemcg reclaim: 3\x1b[0m\n  row 1\n\n"
        );
    }

    use super::text::power_of_two_rows;
    use super::*;
    use vmtrace_common::{
        ReclaimContext,
        hist::{BUCKETS, bucket_of},
    };

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
