//! The run report: the model of one run (`RunReport`) as a recording
//! stores it. Plain data and what follows from it alone; it is filled by
//! `kernel::fill` from the maps and the host's counters, and printed by
//! `view::report`.

use serde::{Deserialize, Serialize};
use vmtrace_common::{Hist, LruIsolate, LruShrinkActive, LruShrinkInactive};

use crate::model::{histogram::Summary, vmstat::VmStat};

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
    /// Per-task values (one category of one thread) longer than the
    /// thread lived, dropped by the eBPF side instead of summed: a wait
    /// with no start stamp is booked from 0 (the whole uptime): begun
    /// while kernel.task_delayacct was off, or, on 6.12 and later, a
    /// block I/O wait whose dequeue was delayed (the stamp went to
    /// another task). None of them is in the figures above;
    /// `implausible_ns` is what they would have added.
    #[serde(default)]
    pub implausible: u64,
    #[serde(default)]
    pub implausible_ns: u64,
    /// Exiting threads the kernel kept no delay accounting for (forked
    /// while it was off: an attach to older tasks).
    #[serde(default)]
    pub untracked_threads: u64,
    /// kernel.task_delayacct was on before vmtrace looked: tasks older
    /// than the window carry delays from before it.
    #[serde(default)]
    pub already_on: bool,
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
    pub timeline: Vec<crate::model::sample::Sample>,
    /// Major faults by cause and where swap went (zswap, zero pages,
    /// the swap device), from /proc/vmstat deltas (None: older
    /// recordings).
    #[serde(default)]
    pub swap_causes: Option<SwapCauses>,
    /// THP and mTHP events, machine-wide (None: older recordings, or a
    /// kernel without THP).
    #[serde(default)]
    pub thp: Option<crate::model::counters::ThpCounters>,
    /// compact_* events, machine-wide (None: older recordings, or a
    /// kernel without compaction).
    #[serde(default)]
    pub compaction_counters: Option<crate::model::counters::CompactionCounters>,
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
    /// The run's histogram of one kind, where the run has it. The match
    /// is exhaustive: a new [`Hist`] must say where it lives here.
    pub fn histogram(&self, h: Hist) -> Option<&Summary> {
        match h {
            Hist::DirectReclaim => self.direct_reclaim.as_ref().map(|r| &r.stalls),
            Hist::MemcgReclaim => self.memcg_reclaim.as_ref().map(|r| &r.stalls),
            Hist::MinorFault => self.faults.minor_latency.as_ref(),
            Hist::MajorFault => self.faults.major_latency.as_ref(),
            Hist::KswapdAwake => self.kswapd.as_ref().and_then(|k| k.awake_periods.as_ref()),
            Hist::SlabShrink => self.slab_shrink.as_ref().map(|r| &r.calls),
            Hist::Throttle => self.throttle.as_ref().map(|r| &r.delays),
            Hist::Compaction => self.compaction.as_ref().map(|r| &r.runs),
            Hist::SwapWrite => self.swap_io.as_ref().map(|r| &r.write),
            Hist::SwapRead => self.swap_io.as_ref().map(|r| &r.read),
        }
    }

    /// Every latency histogram the run has, with the kernel histogram it
    /// came from (its name is the tag in exports), in [`Hist::ALL`] order.
    pub fn histograms(&self) -> Vec<(Hist, &Summary)> {
        Hist::ALL
            .into_iter()
            .filter_map(|h| Some((h, self.histogram(h)?)))
            .collect()
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
}

/// The cgroup hierarchy the memory box was made in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersion {
    V1,
    V2,
}

/// What the box saw, as reported.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct BoxReport {
    pub name: String,
    pub cgroup_version: Option<CgroupVersion>,
    pub mem_limit_bytes: Option<u64>,
    pub swap_bytes: Option<u64>,
    pub swapfile: Option<String>,
    pub peak_bytes: Option<u64>,
    /// Tasks the memory cgroup's OOM killer killed (None: kernel too old).
    pub oom_kills: Option<u64>,
    pub memory_stat: std::collections::BTreeMap<String, u64>,
}

/// The kernel's own counters (/proc/vmstat deltas over the window) that
/// tell a swap-in from a file read and say where swapped pages went.
/// A counter is None when this kernel does not have it (never 0 as if
/// measured). What each counts, as read in the mm sources of 6.1, 6.12
/// and 6.18:
/// - `pgmajfault`: do_swap_page (mm/memory.c) when the folio was not in
///   the swap cache (a read from the device, zswap or the zero map);
///   filemap_fault (mm/filemap.c) when the page was not in the page
///   cache; shmem_swapin_folio (mm/shmem.c). A fault that finds the
///   folio in the swap cache is minor.
/// - `pswpin`/`pswpout`: pages read from / written to the swap device
///   (mm/page_io.c: bio, synchronous bdev incl. zram, swap over a
///   file); not zswap hits, not zero pages. zswap's own writebacks
///   (zswap_writeback_entry -> __swap_writepage) count in pswpout too.
/// - `swap_ra`: pages allocated by swap readahead (mm/swap_state.c,
///   swap_cluster_readahead / swap_vma_readahead), read but not faulted
///   on yet; `swap_ra_hit`: later faults that found such a page in the
///   swap cache (minor faults).
/// - `workingset_refault_*`: a page read back in (fault, read(),
///   readahead or swap-in) whose eviction left a shadow entry
///   (mm/workingset.c workingset_refault); `_activate_*`: of those, the
///   ones close enough to be activated; `_restore_*`: of those, the ones
///   that were in the active working set when evicted.
/// - `zswpout`/`zswpin`/`zswpwb`: pages stored in, loaded from, written
///   back from zswap (mm/zswap.c); zswpwb exists since 6.8. 6.1 has
///   zswpin/zswpout (since 5.19).
/// - `swpin_zero`/`swpout_zero`: zero-filled pages swapped in / out
///   through the swap zero map without I/O (mm/page_io.c, since 6.12).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SwapCauses {
    pub pgmajfault: Option<u64>,
    pub pswpin: Option<u64>,
    pub pswpout: Option<u64>,
    pub swap_ra: Option<u64>,
    pub swap_ra_hit: Option<u64>,
    pub refault_anon: Option<u64>,
    pub refault_file: Option<u64>,
    pub activate_anon: Option<u64>,
    pub activate_file: Option<u64>,
    pub restore_anon: Option<u64>,
    pub restore_file: Option<u64>,
    pub zswpin: Option<u64>,
    pub zswpout: Option<u64>,
    pub zswpwb: Option<u64>,
    pub swpin_zero: Option<u64>,
    pub swpout_zero: Option<u64>,
    /// /sys/module/zswap/parameters/enabled at the end (None: no zswap).
    pub zswap_enabled: Option<bool>,
    /// /proc/meminfo `Zswap:` (compressed pool) and `Zswapped:` (what
    /// it holds, uncompressed) at the end of the window, in bytes.
    pub zswap_pool_bytes: Option<u64>,
    pub zswapped_bytes: Option<u64>,
    /// The active swap areas and what backs them.
    pub swap_areas: Vec<SwapArea>,
}

/// One active swap area (/proc/swaps) and what lies under it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SwapArea {
    pub path: String,
    /// /proc/swaps type: `partition` or `file`.
    pub kind: String,
    /// The block device under it (`sda2`, `zram0`, `dm-1`), when known.
    pub device: Option<String>,
    /// The filesystem a swapfile lives on (`ext4`, `btrfs`), when known.
    pub filesystem: Option<String>,
}

impl SwapArea {
    /// Why block requests to this area cannot be timed by sector range,
    /// if they cannot: zram takes bios without requests, device-mapper
    /// and md remap sectors to other disks, btrfs's extent addresses are
    /// not disk sectors.
    pub fn untimeable(&self) -> Option<&'static str> {
        let dev = self.device.as_deref().unwrap_or("");
        if dev.starts_with("zram") {
            Some("zram: compressed in memory, no block requests")
        } else if dev.starts_with("dm-") {
            Some("device-mapper (LVM, crypt): sectors remapped")
        } else if dev.starts_with("md") {
            Some("md RAID: sectors remapped")
        } else if self.filesystem.as_deref() == Some("btrfs") {
            Some("btrfs swapfile: extents are not disk sectors")
        } else {
            None
        }
    }
}

/// Sums of counters where some exist; None when none of them do.
fn sum_some(xs: &[Option<u64>]) -> Option<u64> {
    xs.iter().flatten().copied().reduce(|a, b| a + b)
}

impl SwapCauses {
    /// Reads the counters out of a /proc/vmstat delta (which holds every
    /// key the kernel printed: a key missing is a counter this kernel
    /// lacks).
    pub fn from_delta(d: &VmStat) -> SwapCauses {
        let g = |k: &str| d.0.get(k).copied();
        SwapCauses {
            pgmajfault: g("pgmajfault"),
            pswpin: g("pswpin"),
            pswpout: g("pswpout"),
            swap_ra: g("swap_ra"),
            swap_ra_hit: g("swap_ra_hit"),
            refault_anon: g("workingset_refault_anon"),
            refault_file: g("workingset_refault_file"),
            activate_anon: g("workingset_activate_anon"),
            activate_file: g("workingset_activate_file"),
            restore_anon: g("workingset_restore_anon"),
            restore_file: g("workingset_restore_file"),
            zswpin: g("zswpin"),
            zswpout: g("zswpout"),
            zswpwb: g("zswpwb"),
            swpin_zero: g("swpin_zero"),
            swpout_zero: g("swpout_zero"),
            ..Default::default()
        }
    }

    /// Pages brought in by swap-ins, every source (device, zswap, zero
    /// map), readahead included.
    pub fn swapin_pages(&self) -> Option<u64> {
        sum_some(&[self.pswpin, self.zswpin, self.swpin_zero])
    }

    /// Major faults that were swap-ins (estimated): pages swapped in
    /// minus those read ahead (a readahead page is read without a fault
    /// of its own, and a later fault on it is minor), at most pgmajfault.
    pub fn swapin_faults(&self) -> Option<u64> {
        let read = self.swapin_pages()?;
        let faults = read.saturating_sub(self.swap_ra.unwrap_or(0));
        Some(self.pgmajfault.map_or(faults, |m| faults.min(m)))
    }

    /// Major faults that were file (page cache) reads: pgmajfault less
    /// the swap-ins. shmem swap-ins count as swap-ins.
    pub fn file_faults(&self) -> Option<u64> {
        Some(
            self.pgmajfault?
                .saturating_sub(self.swapin_faults().unwrap_or(0)),
        )
    }

    /// Anon pages reclaim sent to swap, by destination: (the swap device,
    /// zswap, the zero map). The device's share leaves out zswap's own
    /// writebacks (zswpwb), which pswpout counts too.
    pub fn swapout_destinations(&self) -> (Option<u64>, Option<u64>, Option<u64>) {
        let device = self
            .pswpout
            .map(|p| p.saturating_sub(self.zswpwb.unwrap_or(0)));
        (device, self.zswpout, self.swpout_zero)
    }

    /// zswap took part in the window (stored or loaded pages).
    pub fn zswap_active(&self) -> bool {
        self.zswpout.unwrap_or(0) + self.zswpin.unwrap_or(0) > 0
    }
}
