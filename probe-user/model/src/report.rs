//! The run report: the model of one run (`RunReport`) as a recording
//! stores it. Plain data and what follows from it alone; it is filled by
//! `kernel::fill` from the maps and the host's counters, and printed by
//! `view::report`.

use serde::{Deserialize, Serialize};
pub use vmtrace_common::ReclaimContext;
use vmtrace_common::{Hist, LruIsolate, LruShrinkActive, LruShrinkInactive};

pub use crate::entries::{
    EntryPath, EntrySplit, EntryWay, KswapdWakePath, ReclaimEntries, entry_chain,
};
pub use crate::kswapd::{KswapdNodeReport, KswapdReport, NameCount, ZoneCount};
pub use crate::membox::{BoxReport, CgroupVersion};
pub use crate::split::StallSplit;
pub use crate::swap_causes::{SwapArea, SwapCauses};
pub use crate::zones::{ZoneEnd, ZoneRow, ZoneTypeCounts};
use crate::{histogram::Summary, vmstat::VmStat};

/// How the traced command ended.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Exit {
    /// Exit code when it exited normally.
    pub code: Option<i32>,
    /// Signal number when a signal killed it.
    pub signal: Option<i32>,
    /// Killed by the box's memory cgroup OOM killer.
    pub oom_killed: bool,
    /// vmtrace was interrupted (Ctrl-C, SIGTERM, SIGHUP) during the run.
    pub interrupted: bool,
    /// Processes left in the box at exit and killed (0: waited, attached).
    #[serde(default)]
    pub background_killed: u32,
}

/// A signal's name (`SIGKILL`), or "signal" for one without a name
/// here: how an exit, an interrupted wait and a stopped guest name it.
pub fn signal_name(sig: i32) -> &'static str {
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

/// The kernel's resource usage of the command and its waited-for children.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
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

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReclaimReport {
    /// Stall time of each reclaim a target task entered.
    pub stalls: Summary,
    pub pages_reclaimed: u64,
    /// The stalls' wall time split by what the task did meanwhile
    /// (None: recordings before the split, or a kernel without BTF).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<StallSplit>,
}

/// One (node, context, LRU type) row of `mm_vmscan_lru_shrink_inactive`
/// totals; field names are the tracepoint's.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LruRowReport {
    pub node: u32,
    pub context: ReclaimContext,
    pub lru: String,
    #[serde(flatten)]
    pub totals: LruShrinkInactive,
}

/// One row of `mm_vmscan_lru_shrink_active` totals.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LruActiveRowReport {
    pub node: u32,
    pub context: ReclaimContext,
    pub lru: String,
    #[serde(flatten)]
    pub totals: LruShrinkActive,
}

/// Counts per reclaim priority (index = priority, 12 = DEF_PRIORITY).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PriorityRow {
    pub context: ReclaimContext,
    pub counts: Vec<u64>,
}

/// Reclaims of target tasks per allocation order (last: that and above).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OrderRow {
    pub context: ReclaimContext,
    pub counts: Vec<u64>,
}

/// A process and the time it spent stalled in reclaim.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SwapOutReport {
    /// Anon folios: swap-out.
    pub anon_folios: u64,
    /// File folios written back by reclaim itself.
    pub file_folios: u64,
}

/// Slab shrinking (every task: kswapd and reclaimers alike).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SlabReport {
    /// Duration of each shrinker call.
    pub calls: Summary,
    pub objects_freed: u64,
}

/// Reclaim throttling of the target's tasks.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CompactionReport {
    pub runs: Summary,
    /// Compaction runs of every task (kcompactd and proactive included).
    pub all_tasks: u64,
    /// The runs' wall time split as the reclaim stalls' (None: unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<StallSplit>,
}

/// The target's sleeps in an I/O wait, timed at the scheduler on every
/// kernel alike: from `sched_switch` of a target task that leaves the
/// CPU blocked with `in_iowait` set, to its `sched_wakeup`. Unlike the
/// delay accounting's blkio (stamped in `__block_task()` on 6.12+, from
/// `current`, for a delayed-dequeue task possibly another task's), it
/// means the same on 6.1, 6.12 and 6.18.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IoWaitReport {
    pub waits: u64,
    pub total_ns: u64,
}

/// Who held the CPU while the target's tasks waited for one (probe-ebpf
/// `contention`): task-ns summed over the timed waits, by holder.
/// Their sum is the target's run_delay over those waits; waits cut by a
/// migration are timed up to it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunnableReport {
    /// Behind the job's own threads (its self-contention).
    pub behind_job_ns: u64,
    pub behind_kswapd_ns: u64,
    pub behind_kcompactd_ns: u64,
    /// Behind other kernel threads (workqueues, ksoftirqd, ...).
    pub behind_kthreads_ns: u64,
    /// Behind other tasks of the machine.
    pub behind_others_ns: u64,
    /// While the CPU idled (wake-up latency: no task held it).
    pub behind_idle_ns: u64,
    /// Waits timed, and of them cut short by a migration.
    pub waits: u64,
    pub cut: u64,
}

impl RunnableReport {
    /// Task-ns behind tasks outside the job (kswapd, kcompactd, kernel
    /// threads, other tasks): the contention from outside.
    pub fn outside_ns(&self) -> u64 {
        self.behind_kcompactd_ns
            + self.behind_kthreads_ns
            + self.behind_others_ns
            + self.behind_kswapd_ns
    }

    /// Every timed wait, whoever held the CPU.
    pub fn total_ns(&self) -> u64 {
        self.outside_ns() + self.behind_job_ns + self.behind_idle_ns
    }
}

/// The whole machine's CPU time over the run (/proc/stat `cpu` line,
/// summed over CPUs, end minus start), in seconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MachineCpu {
    /// CPUs online (/proc/stat `cpuN` lines).
    pub cpus: u32,
    pub user_s: f64,
    pub nice_s: f64,
    pub system_s: f64,
    pub idle_s: f64,
    pub iowait_s: f64,
    pub irq_s: f64,
    pub softirq_s: f64,
    pub steal_s: f64,
}

impl MachineCpu {
    /// CPU-seconds the CPUs were busy (steal included: a guest's vCPU
    /// wanted to run then).
    pub fn busy_s(&self) -> f64 {
        self.user_s + self.nice_s + self.system_s + self.irq_s + self.softirq_s + self.steal_s
    }
}

/// Block I/O to and from the swap areas.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OomVictimReport {
    /// Seconds after the command started.
    pub time_s: f64,
    pub pid: u32,
    pub comm: String,
    /// The victim was one of the command's processes: it later exited as
    /// a target task (the process-exit probe saw it). mark_victim runs in
    /// the task that invoked the OOM killer, not in the victim, so its
    /// own context cannot say whose the victim is. False when unknown
    /// (`victim_known`).
    pub target: bool,
    /// Whether `target` could be decided (the process-exit probe ran).
    #[serde(default)]
    pub victim_known: bool,
    /// The OOM killer was invoked by a target task (an allocation of the
    /// command's ran out): the context mark_victim runs in.
    #[serde(default)]
    pub invoked_by_target: bool,
    pub total_vm_kb: u64,
    pub anon_rss_kb: u64,
    pub file_rss_kb: u64,
    pub shmem_rss_kb: u64,
}

/// The OOM reaper over the window, every task's victims (the reaper is
/// one kthread for the machine). Since 5.18 a victim is queued to it 2 s
/// after the kill, and only if it has not freed its memory by itself
/// by then: most victims exit first and are never reaped.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OomReaperReport {
    /// Victims the reaper was woken for (`oom:wake_reaper`).
    pub wakeups: u64,
    /// Its attempts that reaped (`oom:start_task_reaping`).
    pub reaps: u64,
    /// Its attempts that did not (`oom:skip_task_reaping`): the victim's
    /// mmap lock busy (retried, up to 10 attempts a victim) or its mm
    /// already torn down. reaps + skips >= wakeups.
    pub skips: u64,
    /// Each reaping pass, start to finish.
    pub reap_time: Summary,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
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

#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcessFaultTotals {
    pub processes: u64,
    pub threads: u64,
    pub minor: u64,
    pub major: u64,
    /// The processes with the most faults (at most 10).
    pub top: Vec<ProcessFaults>,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
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

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// Write-protect copies (COW faults copying a page; 6.0+, else 0).
    #[serde(default)]
    pub wpcopy_ns: u64,
    /// CPU time the tasks lost to interrupts while they ran: 6.5+ and
    /// only with CONFIG_IRQ_TIME_ACCOUNTING, which takes that time out of
    /// the tasks' CPU time (kernel/sched/core.c update_rq_clock_task);
    /// without it the interrupted task's CPU time holds it, and this is 0.
    #[serde(default)]
    pub irq_ns: u64,
    /// Waiting for a CPU while runnable (run-queue delay).
    #[serde(default)]
    pub cpu_ns: u64,
    /// Per-task values (one category of one thread) longer than the
    /// thread lived, dropped by the eBPF side instead of summed: a wait
    /// with no start stamp is booked from 0 (the scheduler clock's
    /// whole reading, local_clock(), about the uptime): begun
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
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Dropped {
    /// Reclaim begins not stamped: the kernel gave the task no storage
    /// cell (no memory, or the CPU was inside another storage operation).
    /// The name is from when the stamps lived in a map.
    pub reclaim_start_map_full: u64,
    pub reclaim_end_without_begin: u64,
    pub fault_start_map_full: u64,
    pub node_out_of_range: u64,
    pub oom_records_lost: u64,
    pub swap_io_map_full: u64,
    /// Swap I/O issues whose completion was not seen (found in their slot
    /// by a later request, completing at another sector, or still in
    /// flight when the window closed): not timed, so no pairing error
    /// reaches a histogram.
    #[serde(default)]
    pub swap_io_unpaired: u64,
    /// Their bytes, as issued: what the swap device's own counters hold
    /// beyond vmtrace's swap I/O bytes.
    #[serde(default)]
    pub swap_io_unpaired_bytes: u64,
    /// Rows pushed out of a bounded per-process or per-name table (map,
    /// rows): those tables then miss rows, their totals are short.
    pub evicted: Vec<(String, u64)>,
    /// Events the kernel did not run a program for, because it would have
    /// interrupted another BPF program on the same CPU (program, count).
    pub program_misses: Vec<(String, u64)>,
}

/// One eBPF program's cost over the run (kernel.bpf_stats_enabled).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProgramCost {
    pub program: String,
    pub runs: u64,
    pub run_ns: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Unavailable {
    pub metric: String,
    pub reason: String,
}

/// What vmtrace itself cost during a run: the time to load, verify and
/// attach every program, its own CPU time (all its threads, attach
/// included) and its peak memory. The command is a child process and is
/// not counted.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct CollectorCost {
    pub attach_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    pub max_rss_bytes: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunReport {
    pub vmtrace_version: String,
    pub kernel_release: String,
    #[serde(deserialize_with = "crate::bounded::arguments")]
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
    /// Where the target's direct and memcg reclaims were entered
    /// (`reclaim_entries`; not with `--no-stacks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaim_entries: Option<ReclaimEntries>,
    /// The job's kernel stacks sampled on the CPU clock (`profile`;
    /// not with `--no-stacks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::ProfileReport>,
    pub swap_out: Option<SwapOutReport>,
    pub swap_io: Option<SwapIoReport>,
    pub kswapd: Option<KswapdReport>,
    pub slab_shrink: Option<SlabReport>,
    pub throttle: Option<ThrottleReport>,
    pub compaction: Option<CompactionReport>,
    /// Every OOM victim while tracing (None: the probe was unavailable).
    pub oom_victims: Option<Vec<OomVictimReport>>,
    /// The OOM reaper (None: not traced; recordings before it). Left
    /// out of the JSON when None, so that the reports of recordings made
    /// before it stay as they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_reaper: Option<OomReaperReport>,
    pub faults: FaultReport,
    #[serde(default)]
    pub delays: Option<DelayReport>,
    /// The target's I/O-wait sleeps, timed at the scheduler (None: not
    /// traced, or recordings before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_waits: Option<IoWaitReport>,
    /// Who held the CPU while the target waited for one (None: not
    /// traced, or recordings before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runnable: Option<RunnableReport>,
    /// The target's memory-stall sleeps outside reclaim and compaction
    /// (memory.high's penalty), timed at the scheduler (None: not
    /// traced, or recordings before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memstall_sleeps: Option<IoWaitReport>,
    /// The machine's CPU time over the run (None: recordings before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_cpu: Option<MachineCpu>,
    pub vmstat: VmstatDelta,
    pub dropped: Dropped,
    /// With --bpf-stats: each eBPF program's runs and run time.
    #[serde(default)]
    pub program_costs: Option<Vec<ProgramCost>>,
    /// What vmtrace itself cost (`run`; None when untraced).
    #[serde(default)]
    pub collector: Option<CollectorCost>,
    /// Per (node, zone), populated zones: what the kernel counts per
    /// node and zone (model/zones.rs).
    pub zones: Vec<ZoneRow>,
    /// Per zone type, every node: /proc/vmstat pgalloc_, pgskip_ and
    /// allocstall_ deltas (None: older recordings).
    #[serde(default)]
    pub zone_vmstat: Option<Vec<ZoneTypeCounts>>,
    /// `mm_vmscan_lru_isolate` per (highest zone index, LRU list); lists
    /// are numbered as the kernel's enum lru_list (0 inactive anon,
    /// 1 active anon, 2 inactive file, 3 active file, 4 unevictable).
    pub lru_isolate: Option<Vec<IsolateRow>>,
    /// Snapshots every --interval (cumulative since the start).
    pub timeline: Vec<crate::sample::Sample>,
    /// Major faults by cause and where swap went (zswap, zero pages,
    /// the swap device), from /proc/vmstat deltas (None: older
    /// recordings).
    #[serde(default)]
    pub swap_causes: Option<SwapCauses>,
    /// THP and mTHP events, machine-wide (None: older recordings, or a
    /// kernel without THP).
    #[serde(default)]
    pub thp: Option<crate::counters::ThpCounters>,
    /// compact_* events, machine-wide (None: older recordings, or a
    /// kernel without compaction).
    #[serde(default)]
    pub compaction_counters: Option<crate::counters::CompactionCounters>,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IsolateRow {
    pub highest_zone_idx: u32,
    pub lru: u32,
    #[serde(flatten)]
    pub totals: LruIsolate,
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
            Hist::OomReap => self.oom_reaper.as_ref().map(|r| &r.reap_time),
        }
    }

    /// Where [`RunReport::histogram`] finds `h` in the report's JSON
    /// (docs/RECORDING.md lists them; a unit test walks the schema). The
    /// match is exhaustive, as that one is.
    pub const fn histogram_path(h: Hist) -> &'static str {
        match h {
            Hist::DirectReclaim => "direct_reclaim.stalls",
            Hist::MemcgReclaim => "memcg_reclaim.stalls",
            Hist::MinorFault => "faults.minor_latency",
            Hist::MajorFault => "faults.major_latency",
            Hist::KswapdAwake => "kswapd.awake_periods",
            Hist::SlabShrink => "slab_shrink.calls",
            Hist::Throttle => "throttle.delays",
            Hist::Compaction => "compaction.runs",
            Hist::SwapWrite => "swap_io.write",
            Hist::SwapRead => "swap_io.read",
            Hist::OomReap => "oom_reaper.reap_time",
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
