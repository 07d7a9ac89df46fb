//! Types shared by vmtrace's eBPF programs (`probe-ebpf`) and its collector
//! (`probe-user`): map names and layouts, the histogram bucket scheme, the
//! indices of counters and the field-offset tables that userspace fills in
//! at load time. Both sides compile this one file, so they cannot disagree.
#![no_std]

#[macro_use]
mod ids;
pub mod hist;

/// Most NUMA nodes a per-node table has room for. Events from a node id at
/// or above this are counted in [`Counter::NodeOutOfRange`].
pub const MAX_NODES: u32 = 64;

/// Entries in the per-task "fault in progress" map (fault latency only).
pub const MAX_TASKS_IN_FAULT: u32 = 65536;

signal_ids! {
    /// A latency histogram kept in the kernel (index into `HISTOGRAMS`).
    /// `name` is its name in recordings, exports (hlog tags, CSV) and JSON:
    /// the kernel's words, snake case; `title` what one value is, for titles
    /// and legends.
    pub enum Hist {
        /// Time a target task spent in one direct reclaim (ns).
        DirectReclaim => ("direct_reclaim", "direct reclaim stall"),
        /// Time a target task spent in one memcg reclaim (ns).
        MemcgReclaim => ("memcg_reclaim", "memcg reclaim stall"),
        /// Duration of a minor page fault of a target task (ns; --fault-latency).
        MinorFault => ("minor_fault", "minor fault"),
        /// Duration of a major page fault of a target task (ns; --fault-latency).
        MajorFault => ("major_fault", "major fault"),
        /// One kswapd awake period, wake to sleep, any node (ns).
        KswapdAwake => ("kswapd_awake", "kswapd awake period"),
        /// One shrink_slab call (one shrinker), any task (ns).
        SlabShrink => ("slab_shrink", "slab shrinker call"),
        /// Time a target task was throttled in reclaim (ns, from usec_delayed).
        Throttle => ("throttle", "reclaim throttle wait"),
        /// One compaction run (begin..end) of a target task (ns).
        Compaction => ("compaction", "compaction run"),
        /// One write request to a swap area, issue to completion (ns).
        SwapWrite => ("swap_write", "swap write request"),
        /// One read request from a swap area, issue to completion (ns).
        SwapRead => ("swap_read", "swap read request"),
        /// One OOM reaper pass over a victim's address space, any task's
        /// victim: `oom:start_task_reaping` to `finish_task_reaping`,
        /// both in the oom_reaper kthread (ns).
        OomReap => ("oom_reap", "OOM reaper pass over a victim"),
    }
}

signal_ids! {
    /// A scalar event counter kept in the kernel (index into `COUNTERS`).
    /// The counters one event adds to are neighbours, so that they share
    /// a cache line (a reclaim's end adds to nine).
    pub enum Counter {
        /// Direct reclaims of target tasks (begin..end pairs).
        DirectReclaims => ("direct_reclaims", "direct reclaims of the target"),
        /// Total stall time of target direct reclaims (ns).
        DirectReclaimNs => ("direct_reclaim_ns", "target direct reclaim stall time (ns)"),
        /// Pages reclaimed by those direct reclaims (from `..._end`).
        DirectReclaimPages => ("direct_reclaim_pages", "pages reclaimed by target direct reclaims"),
        /// Where those stalls' wall time went, measured at the scheduler
        /// (probe-ebpf `sched`): on a CPU, runnable, blocked, of it in an
        /// I/O wait, the stalls' wall time, the kernel's run_delay change
        /// over them (ns). Beside the stall counters: one reclaim's end
        /// adds to these nine.
        DirectReclaimOnCpuNs => ("direct_reclaim_on_cpu_ns", "target direct reclaim: on a CPU (ns)"),
        DirectReclaimRunnableNs => ("direct_reclaim_runnable_ns", "target direct reclaim: runnable (ns)"),
        DirectReclaimBlockedNs => ("direct_reclaim_blocked_ns", "target direct reclaim: blocked (ns)"),
        DirectReclaimIowaitNs => ("direct_reclaim_iowait_ns", "target direct reclaim: blocked in I/O wait (ns)"),
        DirectReclaimSplitWallNs => ("direct_reclaim_split_wall_ns", "target direct reclaim: wall time split (ns)"),
        DirectReclaimRunDelayNs => ("direct_reclaim_run_delay_ns", "target direct reclaim: kernel run_delay (ns)"),
        /// Memcg reclaims of target tasks (begin..end pairs).
        MemcgReclaims => ("memcg_reclaims", "memcg reclaims of the target"),
        /// Total stall time of target memcg reclaims (ns).
        MemcgReclaimNs => ("memcg_reclaim_ns", "target memcg reclaim stall time (ns)"),
        /// Pages reclaimed by those memcg reclaims.
        MemcgReclaimPages => ("memcg_reclaim_pages", "pages reclaimed by target memcg reclaims"),
        /// As for direct reclaim.
        MemcgReclaimOnCpuNs => ("memcg_reclaim_on_cpu_ns", "target memcg reclaim: on a CPU (ns)"),
        MemcgReclaimRunnableNs => ("memcg_reclaim_runnable_ns", "target memcg reclaim: runnable (ns)"),
        MemcgReclaimBlockedNs => ("memcg_reclaim_blocked_ns", "target memcg reclaim: blocked (ns)"),
        MemcgReclaimIowaitNs => ("memcg_reclaim_iowait_ns", "target memcg reclaim: blocked in I/O wait (ns)"),
        MemcgReclaimSplitWallNs => ("memcg_reclaim_split_wall_ns", "target memcg reclaim: wall time split (ns)"),
        MemcgReclaimRunDelayNs => ("memcg_reclaim_run_delay_ns", "target memcg reclaim: kernel run_delay (ns)"),
        /// Major faults of every task on the machine.
        MajorFaultsAll => ("major_faults_all", "major faults, every task"),
        /// Major faults of target tasks.
        MajorFaultsTarget => ("major_faults_target", "major faults of the target"),
        /// Minor faults of target tasks (only counted with --fault-latency).
        MinorFaultsTarget => ("minor_faults_target", "minor faults of the target (--fault-latency)"),
        /// Reclaim begins not recorded because the per-task map was full.
        ReclaimStartDropped => ("reclaim_start_dropped", "reclaim begins dropped (no task storage)"),
        /// Reclaim ends seen without a begin (tracing started mid-reclaim).
        ReclaimEndUnmatched => ("reclaim_end_unmatched", "reclaim ends without a begin"),
        /// Fault starts not recorded because the per-task map was full.
        FaultStartDropped => ("fault_start_dropped", "fault starts dropped (map full)"),
        /// Events whose node id was >= MAX_NODES.
        NodeOutOfRange => ("node_out_of_range", "events from a node id out of range"),
        /// Anon folios reclaim wrote out (swap-out), `mm_vmscan_write_folio`.
        WriteFolioAnon => ("write_folio_anon", "anon folios written out by reclaim (swap-out)"),
        /// File folios reclaim wrote back, `mm_vmscan_write_folio`.
        WriteFolioFile => ("write_folio_file", "file folios written back by reclaim"),
        /// OOM victims chosen (`oom:mark_victim`), every task.
        OomVictims => ("oom_victims", "OOM victims, every task"),
        /// OOM victim records lost because the ring buffer was full.
        OomRecordsDropped => ("oom_records_dropped", "OOM victim records dropped (ring full)"),
        /// Objects freed by shrinkers (`mm_shrink_slab_end.retval`), any task.
        SlabFreed => ("slab_freed", "objects freed by shrinkers"),
        /// Reclaim throttling events, every task.
        ThrottledAll => ("throttled_all", "reclaim throttling events, every task"),
        /// Compaction runs, every task (direct, kcompactd, proactive).
        CompactionsAll => ("compactions_all", "compaction runs, every task"),
        /// Slab/compaction starts not recorded because the map was full.
        SpanStartDropped => ("span_start_dropped", "slab/compaction/OOM-reap starts dropped (no task storage)"),
        /// Kernel-mode page faults of target tasks (`page_fault_kernel`).
        KernelFaultsTarget => ("kernel_faults_target", "kernel-mode faults of the target"),
        /// Threads of the target that exited (their faults are counted).
        ExitedThreads => ("exited_threads", "target threads that exited"),
        /// Completed block requests writing to a swap area, and their sectors.
        SwapWriteRequests => ("swap_write_requests", "swap write requests completed"),
        SwapWriteSectors => ("swap_write_sectors", "sectors written to swap"),
        /// Completed block requests reading from a swap area, and sectors.
        SwapReadRequests => ("swap_read_requests", "swap read requests completed"),
        SwapReadSectors => ("swap_read_sectors", "sectors read from swap"),
        /// Swap I/O issues not recorded because the map was full.
        SwapIoStartDropped => ("swap_io_start_dropped", "swap I/O issues dropped (map full)"),
        /// Swap I/O slots found holding another request's issue (at a
        /// completion, or overwritten by a new issue): not timed.
        SwapIoUnpaired => ("swap_io_unpaired", "swap I/O issue/completion pairs that did not match"),
        /// Page allocations whose pfn fell in no known zone span.
        PageAllocNoZone => ("page_alloc_no_zone", "page allocations in no known zone"),
        /// Entries created in the per-process and per-name tables (LRU maps:
        /// entries beyond what the map holds at the end were evicted).
        StallerInserts => ("staller_inserts", "per-process staller entries created"),
        ProcessFaultInserts => ("process_fault_inserts", "per-process fault entries created"),
        ProcessTimeInserts => ("process_time_inserts", "per-process fault time entries created"),
        WakerInserts => ("waker_inserts", "kswapd waker entries created"),
        /// The kernel's own delay accounting (task->delays, the figures
        /// taskstats reports), summed over target threads at exit (ns): time
        /// waiting for block I/O, swap-in, in reclaim ("freepages"),
        /// thrashing (refaults) and compaction. Zero unless
        /// kernel.task_delayacct is on (vmtrace turns it on for a run).
        DelayBlkioNs => ("delay_blkio_ns", "delay accounting: block I/O (ns)"),
        DelaySwapinNs => ("delay_swapin_ns", "delay accounting: swap-in (ns)"),
        DelayFreepagesNs => ("delay_freepages_ns", "delay accounting: reclaim (ns)"),
        DelayThrashingNs => ("delay_thrashing_ns", "delay accounting: thrashing (ns)"),
        DelayCompactNs => ("delay_compact_ns", "delay accounting: compaction (ns)"),
        /// Write-protect copies (a COW fault's copy, 6.0+) and the time
        /// the tasks' CPU time lost to interrupts (6.5+, booked only with
        /// CONFIG_IRQ_TIME_ACCOUNTING: psi_account_irqtime).
        DelayWpcopyNs => ("delay_wpcopy_ns", "delay accounting: write-protect copy (ns)"),
        DelayIrqNs => ("delay_irq_ns", "delay accounting: IRQ/softirq (ns)"),
        /// Time target threads waited for a CPU (runnable, not running):
        /// `task_struct.sched_info.run_delay`, kept while delay accounting is on.
        DelayCpuNs => ("delay_cpu_ns", "waiting for a CPU (ns)"),
        /// Per-task delay values (one category of one exiting thread)
        /// longer than the thread had lived, dropped instead of summed:
        /// the kernel books `now - start stamp`, and a wait with no stamp
        /// (begun while delay accounting was off; on 6.12+ also a block
        /// I/O wait with a delayed dequeue) gets the whole uptime. Their
        /// count, and what they would have added.
        DelayImplausible => ("delay_implausible", "per-task delays dropped (> lifetime)"),
        DelayImplausibleNs => ("delay_implausible_ns", "ns in the dropped per-task delays"),
        /// Exiting target threads the kernel kept no delay accounting for
        /// (`task->delays` NULL: forked while it was off, e.g. at attach).
        DelayUntracked => ("delay_untracked", "threads without delay accounting"),
        /// Forked children of target processes not followed: TARGET_PIDS full.
        TargetPidsFull => ("target_pids_full", "forks not followed (TARGET_PIDS full)"),
        /// Children of target processes followed (`sched_process_fork`).
        TargetForks => ("target_forks", "forks of the target followed"),
        /// Reclaim stalls of cgroups past `attach --max-cgroups` (the
        /// per-cgroup table full), counted in its overflow row instead.
        CgroupStallsFolded => ("cgroup_stalls_folded", "reclaim stalls folded into the overflow cgroup row"),
        /// The OOM reaper, every task's victims: victims queued to it
        /// (`oom:wake_reaper`, 2 s after the kill on 5.18+, and only if
        /// the victim had not freed its memory by then), its attempts
        /// that reaped (`start_task_reaping`) and those it skipped
        /// (`skip_task_reaping`: mmap lock busy, retried; or the mm
        /// already torn down, MMF_OOM_SKIP).
        OomReaperWakeups => ("oom_reaper_wakeups", "victims the OOM reaper was woken for"),
        OomReapStarts => ("oom_reap_starts", "OOM reaper attempts that reaped"),
        OomReapSkips => ("oom_reap_skips", "OOM reaper attempts skipped"),
        /// Where target compactions' wall time went, measured at the
        /// scheduler (probe-ebpf `sched`), six counters in this order: on
        /// a CPU, runnable, blocked, of it in an I/O wait, the runs' wall
        /// time, and the kernel's `sched_info.run_delay` change over them
        /// (ns). See [`split_counter`]; the reclaim families' six sit
        /// beside their stall counters (a reclaim's end adds to all nine).
        CompactionOnCpuNs => ("compaction_on_cpu_ns", "target compaction: on a CPU (ns)"),
        CompactionRunnableNs => ("compaction_runnable_ns", "target compaction: runnable (ns)"),
        CompactionBlockedNs => ("compaction_blocked_ns", "target compaction: blocked (ns)"),
        CompactionIowaitNs => ("compaction_iowait_ns", "target compaction: blocked in I/O wait (ns)"),
        CompactionSplitWallNs => ("compaction_split_wall_ns", "target compaction: wall time split (ns)"),
        CompactionRunDelayNs => ("compaction_run_delay_ns", "target compaction: kernel run_delay (ns)"),
        /// A task in a split span switched in while it was booked asleep
        /// (its wake-up was not seen): the interval is booked blocked.
        SplitWakeupMissed => ("split_wakeup_missed", "split spans: switch-ins without a seen wake-up"),
        /// The target's sleeps in an I/O wait (switched out blocked with
        /// `in_iowait`, closed at `sched_wakeup`): count and time (ns).
        IoWaits => ("io_waits", "target I/O-wait sleeps"),
        IoWaitNs => ("io_wait_ns", "target I/O-wait sleep time (ns)"),
        /// I/O-wait sleeps not timed: the table of open ones was full.
        IoWaitDropped => ("io_wait_dropped", "target I/O-wait sleeps not timed (map full)"),
        /// The target's memory-stall sleeps outside reclaim and
        /// compaction (switched out blocked with `in_memstall` and not in
        /// an I/O wait, no split span open: memory.high's penalty sleep,
        /// mem_cgroup_handle_over_high), closed at `sched_wakeup`: count
        /// and time (ns), and those not timed (map full).
        MemstallSleeps => ("memstall_sleeps", "target memory-stall sleeps outside reclaim"),
        MemstallSleepNs => ("memstall_sleep_ns", "target memory-stall sleep time outside reclaim (ns)"),
        MemstallDropped => ("memstall_dropped", "target memory-stall sleeps not timed (map full)"),
        /// Sectors of the swap requests counted in `SwapIoUnpaired` (the
        /// size the request had at its issue): the device counted them,
        /// vmtrace timed none of them.
        SwapIoUnpairedSectors => ("swap_io_unpaired_sectors", "sectors of unpaired swap I/O requests"),
        /// Target reclaims whose kernel stack was not kept (a stack-map
        /// hash collision, or no stack): counted under a lost stack.
        EntryStacksLost => ("entry_stacks_lost", "reclaim entry stacks not kept"),
        /// Target reclaims not added to `RECLAIM_ENTRIES` (the table was
        /// full): their stall time is missing from the entry paths.
        EntriesFull => ("entries_full", "reclaim entries lost to a full table"),
        /// The target's tasks runnable on a CPU another task held, by
        /// who held it (probe-ebpf `contention`; [`Holder`] order): the
        /// job's own threads, kswapd, kcompactd, other kernel threads,
        /// other tasks, and nobody (the CPU idle: wake-up latency), ns
        /// summed over the waiting tasks. Their sum is the target's
        /// run_delay over the same waits.
        RunnableBehindJobNs => ("runnable_behind_job_ns", "target runnable behind its own threads (ns)"),
        RunnableBehindKswapdNs => ("runnable_behind_kswapd_ns", "target runnable behind kswapd (ns)"),
        RunnableBehindKcompactdNs => ("runnable_behind_kcompactd_ns", "target runnable behind kcompactd (ns)"),
        RunnableBehindKthreadsNs => ("runnable_behind_kthreads_ns", "target runnable behind other kernel threads (ns)"),
        RunnableBehindOthersNs => ("runnable_behind_others_ns", "target runnable behind other tasks (ns)"),
        RunnableBehindIdleNs => ("runnable_behind_idle_ns", "target runnable while its CPU was idle (ns)"),
        /// Target waits for a CPU begun (a wake-up or a preemption).
        RunnableWaits => ("runnable_waits", "target waits for a CPU timed"),
        /// Waits cut short: the task was moved to another CPU while
        /// queued (its wait there is not timed), or its CPU was beyond
        /// [`MAX_CPUS`].
        RunnableWaitsCut => ("runnable_waits_cut", "target waits for a CPU cut short (migrated)"),
        /// The CPU profile (probe-ebpf `profile`): samples of target tasks
        /// running in user mode (no kernel stack to keep), and samples in
        /// the kernel whose stack was not kept (a stack-map collision or
        /// full table, or `PROFILE` full).
        ProfileUserSamples => ("profile_user_samples", "profile: target samples in user mode"),
        ProfileStacksLost => ("profile_stacks_lost", "profile: target kernel samples not kept"),
    }
}

/// Distinct kernel stacks the CPU profile keeps (`PROFILE_STACKS`) and
/// its (stack -> samples) cells (`PROFILE`): a job's kernel time runs
/// through a few hundred to a few thousand distinct stacks.
pub const MAX_PROFILE_STACKS: u32 = 16384;

/// Who held a CPU while a target task waited for it (the order of the
/// `RunnableBehind*` counters).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    Job = 0,
    Kswapd = 1,
    Kcompactd = 2,
    Kthreads = 3,
    Others = 4,
    Idle = 5,
}

impl Holder {
    pub const COUNT: u32 = 6;
    pub const ALL: [Holder; 6] = [
        Holder::Job,
        Holder::Kswapd,
        Holder::Kcompactd,
        Holder::Kthreads,
        Holder::Others,
        Holder::Idle,
    ];

    /// The counter its time goes to.
    #[inline(always)]
    pub const fn counter(self) -> Counter {
        match self {
            Holder::Job => Counter::RunnableBehindJobNs,
            Holder::Kswapd => Counter::RunnableBehindKswapdNs,
            Holder::Kcompactd => Counter::RunnableBehindKcompactdNs,
            Holder::Kthreads => Counter::RunnableBehindKthreadsNs,
            Holder::Others => Counter::RunnableBehindOthersNs,
            Holder::Idle => Counter::RunnableBehindIdleNs,
        }
    }
}

/// CPUs the per-CPU wait table has room for (`CPU_WAITS`).
pub const MAX_CPUS: u32 = 1024;

/// One CPU's waiting target tasks (`CPU_WAITS`, indexed by CPU): how
/// many are queued on it now, since when that number holds, and the
/// task-ns the current holder of the CPU has kept them waiting so far
/// (booked to its [`Holder`] when it is switched out). Changed only
/// under that CPU's run-queue lock.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct CpuWaiters {
    pub since_ns: u64,
    pub pending_ns: u64,
    pub waiters: u32,
    pub _pad: u32,
}

/// A span family whose wall time `sched` splits.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitFamily {
    DirectReclaim = 1,
    MemcgReclaim = 2,
    Compaction = 3,
}

impl SplitFamily {
    pub const ALL: [SplitFamily; 3] = [
        SplitFamily::DirectReclaim,
        SplitFamily::MemcgReclaim,
        SplitFamily::Compaction,
    ];
    pub const COUNT: u32 = Self::ALL.len() as u32;

    /// The family of a direct or memcg reclaim's stall.
    #[inline(always)]
    pub const fn of_reclaim(context: ReclaimContext) -> SplitFamily {
        match context {
            ReclaimContext::Memcg => SplitFamily::MemcgReclaim,
            _ => SplitFamily::DirectReclaim,
        }
    }

    /// The family's slot in `SplitTotals` arrays (`TaskSpans::split`,
    /// `SPLIT_LIVE`).
    #[inline(always)]
    pub const fn index(self) -> usize {
        self as usize - 1
    }
}

/// A task's split spans of one family, summed over its life: each part
/// only grows (`sched` adds a stretch when it ends; a span's end adds
/// its last stretch on the CPU and its wall time). A span's own parts
/// are the difference across it. The counters get a thread's totals at
/// its exit; live threads' are summed into `SPLIT_LIVE` by the
/// collector's task iterator.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SplitTotals {
    pub on_cpu_ns: u64,
    pub runnable_ns: u64,
    pub blocked_ns: u64,
    pub iowait_ns: u64,
    pub wall_ns: u64,
    pub run_delay_ns: u64,
}

impl SplitTotals {
    /// `part`'s value.
    pub const fn part(&self, part: SplitPart) -> u64 {
        match part {
            SplitPart::OnCpu => self.on_cpu_ns,
            SplitPart::Runnable => self.runnable_ns,
            SplitPart::Blocked => self.blocked_ns,
            SplitPart::Iowait => self.iowait_ns,
            SplitPart::Wall => self.wall_ns,
            SplitPart::RunDelay => self.run_delay_ns,
        }
    }
}

/// One part of a split span's time (the order of the counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitPart {
    OnCpu,
    Runnable,
    Blocked,
    Iowait,
    Wall,
    RunDelay,
}

impl SplitPart {
    pub const ALL: [SplitPart; 6] = [
        SplitPart::OnCpu,
        SplitPart::Runnable,
        SplitPart::Blocked,
        SplitPart::Iowait,
        SplitPart::Wall,
        SplitPart::RunDelay,
    ];
}

/// The counter holding `part` of `family`'s spans.
#[inline(always)]
pub const fn split_counter(family: SplitFamily, part: SplitPart) -> Counter {
    use Counter::*;
    use SplitPart::*;
    match family {
        SplitFamily::DirectReclaim => match part {
            OnCpu => DirectReclaimOnCpuNs,
            Runnable => DirectReclaimRunnableNs,
            Blocked => DirectReclaimBlockedNs,
            Iowait => DirectReclaimIowaitNs,
            Wall => DirectReclaimSplitWallNs,
            RunDelay => DirectReclaimRunDelayNs,
        },
        SplitFamily::MemcgReclaim => match part {
            OnCpu => MemcgReclaimOnCpuNs,
            Runnable => MemcgReclaimRunnableNs,
            Blocked => MemcgReclaimBlockedNs,
            Iowait => MemcgReclaimIowaitNs,
            Wall => MemcgReclaimSplitWallNs,
            RunDelay => MemcgReclaimRunDelayNs,
        },
        SplitFamily::Compaction => match part {
            OnCpu => CompactionOnCpuNs,
            Runnable => CompactionRunnableNs,
            Blocked => CompactionBlockedNs,
            Iowait => CompactionIowaitNs,
            Wall => CompactionSplitWallNs,
            RunDelay => CompactionRunDelayNs,
        },
    }
}

/// Most target I/O-wait sleeps open at once (one per sleeping thread).
pub const MAX_IO_WAITS: u32 = 16384;

/// Buckets of the per-cgroup stall histograms (`CGROUP_STALLS`): bucket
/// 0 holds 0 ns, bucket k (1..=64) the values 2^(k-1) ..= 2^k - 1 ns, so
/// its upper edge 2^k - 1 ns is also an edge of the fine histograms'
/// buckets ([`hist`]): both fold exactly into the same power-of-two
/// bounds (`/metrics` `le`).
pub const CGROUP_BUCKETS: usize = 65;

/// The per-cgroup bucket of a value.
#[inline(always)]
pub fn cgroup_bucket(v: u64) -> usize {
    if v == 0 {
        0
    } else {
        hist::log2_floor(v) as usize + 1
    }
}

/// Most cgroups the per-cgroup table has room for (`attach --serve
/// --max-cgroups`, which sets the map's size at load time, is at most
/// this), besides the overflow row (cgroup id 0).
pub const MAX_CGROUPS: u32 = 4096;

/// Reclaim stalls of the tasks of one cgroup (v2 id), `CGROUP_STALLS`:
/// histograms (see [`CGROUP_BUCKETS`]) and exact sums, per context.
/// Added to atomically (a shared hash entry).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CgroupStalls {
    pub direct: [u64; CGROUP_BUCKETS],
    pub memcg: [u64; CGROUP_BUCKETS],
    pub direct_ns: u64,
    pub memcg_ns: u64,
}

impl Default for CgroupStalls {
    fn default() -> Self {
        CgroupStalls {
            direct: [0; CGROUP_BUCKETS],
            memcg: [0; CGROUP_BUCKETS],
            direct_ns: 0,
            memcg_ns: 0,
        }
    }
}

/// Most (node, zone) pfn spans passed to the page-allocation probe.
pub const MAX_ZONE_SPANS: usize = 32;

/// The pfn range of one zone, from /proc/zoneinfo (start_pfn, spanned).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneSpan {
    pub node: u32,
    pub zone: u32,
    pub start: u64,
    /// Exclusive.
    pub end: u64,
}

/// Every populated zone's span (global `ZONE_SPANS`, set at load time).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneSpans {
    pub count: u32,
    pub _pad: u32,
    pub spans: [ZoneSpan; MAX_ZONE_SPANS],
}

impl ZoneSpans {
    pub const EMPTY: ZoneSpans = ZoneSpans {
        count: 0,
        _pad: 0,
        spans: [ZoneSpan {
            node: 0,
            zone: 0,
            start: 0,
            end: 0,
        }; MAX_ZONE_SPANS],
    };
}

/// Most disk ranges that make up the swap areas (a swapfile's extents,
/// merged; a swap partition is one).
pub const MAX_SWAP_EXTENTS: usize = 64;

/// One disk range of a swap area, in 512-byte sectors of the whole disk,
/// as the block tracepoints report them. `dev` uses the kernel's dev_t
/// encoding (major << 20 | minor).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwapExtent {
    pub dev: u32,
    pub _pad: u32,
    pub start: u64,
    /// Exclusive.
    pub end: u64,
}

/// The swap areas' disk ranges (global `SWAP_EXTENTS`, set at load time).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwapExtents {
    pub count: u32,
    pub _pad: u32,
    pub extents: [SwapExtent; MAX_SWAP_EXTENTS],
}

impl SwapExtents {
    pub const EMPTY: SwapExtents = SwapExtents {
        count: 0,
        _pad: 0,
        extents: [SwapExtent {
            dev: 0,
            _pad: 0,
            start: 0,
            end: 0,
        }; MAX_SWAP_EXTENTS],
    };
}

/// Every scalar counter, in one per-CPU cell (`COUNTERS`, index 0): the
/// counters one event adds to sit on one or two cache lines instead of
/// one allocation each (each element of a per-CPU array is its own).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Counters {
    pub n: [u64; Counter::COUNT as usize],
    /// Target reclaims per (context, allocation order), `order_cell`:
    /// added at a reclaim's end, with its other counters.
    pub orders: [u64; (ReclaimContext::COUNT * ORDERS) as usize],
}

/// An in-flight swap request (a slot of `SWAP_IO`; `start_ns` 0 = free).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoStart {
    pub start_ns: u64,
    /// The request (`struct request` address): unique among requests in
    /// flight on the machine, so a completion recognises its own slot.
    pub rq: u64,
    /// The request's first sector at issue, checked at completion.
    pub sector: u64,
    /// 1 for a write, 0 for a read.
    pub write: u32,
    pub nr_sector: u32,
}

/// `SWAP_IO` has a slot per (hardware queue, driver tag) for queues
/// numbered below `IO_QUEUES` and tags below `IO_TAGS` (blk-mq queue
/// depths are at most 1024 on common drivers: virtio-blk 256, NVMe 1023).
pub const IO_QUEUES: u32 = 64;
pub const IO_TAGS: u32 = 1024;
pub const IO_SLOTS: u32 = IO_QUEUES * IO_TAGS;

/// LRU lists as `mm_vmscan_lru_isolate.lru` numbers them (enum lru_list).
pub const LRU_LISTS: u32 = 5;

/// One cell of `LRU_ISOLATE`: isolation totals for one (highest zone
/// index the reclaim may take pages from, LRU list).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    feature = "user",
    derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)
)]
pub struct LruIsolate {
    pub events: u64,
    pub nr_requested: u64,
    pub nr_scanned: u64,
    pub nr_skipped: u64,
    pub nr_taken: u64,
}

/// Index of a (highest zone index, LRU list) cell in `LRU_ISOLATE`.
pub const fn isolate_cell(zone: u32, lru: u32) -> u32 {
    zone * LRU_LISTS + lru
}

/// `mm_vmscan_throttled` reasons (bit numbers of `reason`), in order:
/// VMSCAN_THROTTLE_WRITEBACK, _ISOLATED, _NOPROGRESS, _CONGESTED.
pub const THROTTLE_REASONS: u32 = 4;

/// Who was reclaiming when the LRU was shrunk. Decided in the kernel from
/// the per-task reclaim map (direct/memcg) and the task name (kswapd).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReclaimContext {
    Kswapd = 0,
    Direct = 1,
    Memcg = 2,
    /// Anything else: node reclaim (__node_reclaim) and hibernation's
    /// shrink_all_memory. khugepaged reclaims through try_to_free_pages
    /// (direct) and memory.reclaim through try_to_free_mem_cgroup_pages
    /// (memcg), both inside a span the probes saw begin.
    Other = 3,
}

impl ReclaimContext {
    pub const ALL: [ReclaimContext; 4] = [
        ReclaimContext::Kswapd,
        ReclaimContext::Direct,
        ReclaimContext::Memcg,
        ReclaimContext::Other,
    ];
    pub const COUNT: u32 = Self::ALL.len() as u32;

    pub fn name(self) -> &'static str {
        match self {
            ReclaimContext::Kswapd => "kswapd",
            ReclaimContext::Direct => "direct",
            ReclaimContext::Memcg => "memcg",
            ReclaimContext::Other => "other",
        }
    }
}

/// Which LRU list pair a shrink worked on.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LruType {
    Anon = 0,
    File = 1,
}

impl LruType {
    pub const ALL: [LruType; 2] = [LruType::Anon, LruType::File];
    pub const COUNT: u32 = 2;

    pub fn name(self) -> &'static str {
        match self {
            LruType::Anon => "anon",
            LruType::File => "file",
        }
    }
}

/// `reclaim_flags` bit of the lru_shrink and write_folio tracepoints that
/// says the pages were file pages (include/trace/events/vmscan.h).
pub const RECLAIM_WB_FILE: u64 = 0x0002;
/// ... and that they were anon pages.
pub const RECLAIM_WB_ANON: u64 = 0x0001;

/// Reclaim priorities run from DEF_PRIORITY (12) down to 0.
pub const PRIORITIES: u32 = 13;

/// Index of a (node, context, lru type) cell in the LRU tables.
pub const fn lru_cell(node: u32, ctx: ReclaimContext, lru: LruType) -> u32 {
    (node * ReclaimContext::COUNT + ctx as u32) * LruType::COUNT + lru as u32
}

/// Cells in each LRU table.
pub const LRU_CELLS: u32 = MAX_NODES * ReclaimContext::COUNT * LruType::COUNT;

/// Index of a (context, priority) cell in `RECLAIM_PRIORITY`.
pub const fn priority_cell(ctx: ReclaimContext, priority: u32) -> u32 {
    ctx as u32 * PRIORITIES + priority
}

/// One cell of `LRU_SHRINK_INACTIVE`: totals of the
/// `vmscan:mm_vmscan_lru_shrink_inactive` events of one node, context and
/// LRU type. Names are the tracepoint's own.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    feature = "user",
    derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)
)]
pub struct LruShrinkInactive {
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

/// One cell of `LRU_SHRINK_ACTIVE` (`mm_vmscan_lru_shrink_active`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    feature = "user",
    derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)
)]
pub struct LruShrinkActive {
    pub events: u64,
    pub nr_taken: u64,
    pub nr_active: u64,
    pub nr_deactivated: u64,
    pub nr_referenced: u64,
}

/// Processes whose fault counts are kept (LRU beyond that).
pub const MAX_PROCESSES: u32 = 16384;

/// Per process (tgid) of the target: page faults of its threads, summed
/// as each thread exits (`PROCESS_FAULTS`); read from the kernel's own
/// per-task counters, so the fault path pays nothing.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcFaults {
    pub comm: [u8; 16],
    pub min_flt: u64,
    pub maj_flt: u64,
    pub threads: u64,
}

/// Per process (tgid) of the target, with --fault-latency: how many
/// faults it took and how long they lasted (`PROCESS_FAULT_TIME`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcFaultTime {
    pub minor: u64,
    pub minor_ns: u64,
    pub major: u64,
    pub major_ns: u64,
    pub max_ns: u64,
}

/// Zones per node a table has room for (DMA, DMA32, Normal, Movable,
/// Device, and spare).
pub const MAX_ZONES: u32 = 8;

/// Index of a (node, zone) cell in `KSWAPD_WAKEUPS`.
pub const fn zone_cell(node: u32, zone: u32) -> u32 {
    node * MAX_ZONES + zone
}

/// Per node: kswapd's sleeps and wakes (`KSWAPD_NODES`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KswapdNode {
    /// `mm_vmscan_kswapd_wake` events: one per balancing round
    /// (balance_pgdat), as /proc/vmstat's pageoutrun counts them.
    pub wakes: u64,
    /// `mm_vmscan_kswapd_sleep` events that closed an awake period.
    pub sleeps: u64,
    /// Sum of closed awake periods (ns).
    pub awake_ns: u64,
}

/// Distinct waker names kept in `KSWAPD_WAKERS` (LRU).
pub const MAX_WAKERS: u32 = 1024;

/// Allocation orders tracked one by one; higher ones share the last cell.
pub const ORDERS: u32 = 12;

/// Index of a (context, order) cell in `Counters::orders`.
pub const fn order_cell(ctx: ReclaimContext, order: u32) -> u32 {
    let o = if order < ORDERS { order } else { ORDERS - 1 };
    ctx as u32 * ORDERS + o
}

/// Processes tracked for "who stalled most" (LRU: the least recently
/// stalled drop out first when more processes stall than this).
pub const MAX_STALLERS: u32 = 4096;

/// Distinct kernel stacks kept for "where reclaim was entered"
/// (`ENTRY_STACKS`, a stack-trace map: 127 frames, ~1 KiB each, all
/// preallocated). A stack whose hash bucket holds another stack is not
/// kept (`Counter::EntryStacksLost`): with the few dozen distinct entry
/// paths a job has, a collision is rare at this size.
pub const MAX_ENTRY_STACKS: u32 = 4096;

/// (context, stack, GFP flags, order) cells of `RECLAIM_ENTRIES`.
pub const MAX_ENTRIES: u32 = 4096;

/// The stack id of an entry whose stack was not kept.
pub const ENTRY_STACK_LOST: i32 = -1;

/// What a `RECLAIM_ENTRIES` row is the way into: a direct or memcg
/// reclaim (the `ReclaimContext`'s value), a direct compaction's runs,
/// or a kswapd wake-up (counted, no stall: the waker goes on).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryWay {
    Direct = ReclaimContext::Direct as u32,
    Memcg = ReclaimContext::Memcg as u32,
    Compaction = 8,
    KswapdWake = 9,
}

impl EntryWay {
    pub const ALL: [EntryWay; 4] = [
        EntryWay::Direct,
        EntryWay::Memcg,
        EntryWay::Compaction,
        EntryWay::KswapdWake,
    ];

    /// As reports and recordings name it.
    pub const fn name(self) -> &'static str {
        match self {
            EntryWay::Direct => "direct",
            EntryWay::Memcg => "memcg",
            EntryWay::Compaction => "compaction",
            EntryWay::KswapdWake => "kswapd_wake",
        }
    }
}

/// A key of `RECLAIM_ENTRIES`: how a target reclaim was entered.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EntryKey {
    /// Id in `ENTRY_STACKS`, or `ENTRY_STACK_LOST`.
    pub stack_id: i32,
    /// An `EntryWay`.
    pub context: u32,
    /// The allocation's GFP flags (the tracepoint's `gfp_flags`; gfp_t
    /// is 32 bits on every kernel vmtrace supports).
    pub gfp: u32,
    pub order: u32,
    /// A kswapd wake-up's (node, zone), `zone_cell`; 0 for the others.
    pub zone: u32,
}

/// A cell of `RECLAIM_ENTRIES`: the reclaims entered that way and their
/// stall time, added to atomically.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EntryCell {
    pub count: u64,
    pub stall_ns: u64,
    /// The stalls' time at the scheduler (the task's `SplitTotals`
    /// across each; 0 where the split is off): on a CPU, runnable,
    /// blocked.
    pub on_cpu_ns: u64,
    pub runnable_ns: u64,
    pub blocked_ns: u64,
}

/// Per process (tgid): time spent stalled in reclaim, `RECLAIM_STALLERS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Staller {
    pub comm: [u8; 16],
    pub stalls: StallTotals,
}

/// Reclaim stalls summed: a process's row in `RECLAIM_STALLERS`, and a
/// thread's stalls not yet added to it (kept in the thread's task
/// storage by the reclaim programs).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StallTotals {
    pub direct_ns: u64,
    pub direct_count: u64,
    pub memcg_ns: u64,
    pub memcg_count: u64,
    /// 1 when any of them was a stall in the target.
    pub target: u32,
    pub _pad: u32,
}

/// One `oom:mark_victim` event, sent through the `OOM_VICTIMS` ring
/// buffer (rare: per-event records are fine here).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OomVictim {
    /// bpf_ktime_get_ns() (CLOCK_MONOTONIC) when the victim was marked.
    pub time_ns: u64,
    pub total_vm_kb: u64,
    pub anon_rss_kb: u64,
    pub file_rss_kb: u64,
    pub shmem_rss_kb: u64,
    pub pid: u32,
    /// 1 when the task that ran into the OOM belongs to the target.
    pub target: u32,
    pub comm: [u8; 16],
}

/// Where a field of a classic tracepoint's record lies, as read from the
/// running kernel's tracefs `format` file. `size == 0` means "absent".
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Field {
    pub offset: u16,
    pub size: u16,
}

impl Field {
    pub const ABSENT: Field = Field { offset: 0, size: 0 };
}

/// Tracepoint programs read their record with direct loads at fixed
/// offsets below this (probe-ebpf `shared::tracepoint_field`); a field
/// that ends past it is treated as absent by the planner.
pub const RECORD_READ_LIMIT: u16 = 128;

/// Field offsets of every classic tracepoint vmtrace reads, filled in by the
/// collector from tracefs before the programs are loaded (global `FIELDS`).
/// A field left [`Field::ABSENT`] reads as 0.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fields {
    /// `mm_vmscan_direct_reclaim_end.nr_reclaimed`
    pub direct_reclaim_end_nr_reclaimed: Field,
    /// `mm_vmscan_memcg_reclaim_end.nr_reclaimed`
    pub memcg_reclaim_end_nr_reclaimed: Field,
    /// `mm_vmscan_lru_shrink_inactive.nid`
    pub lru_shrink_inactive_nid: Field,
    /// `mm_vmscan_lru_shrink_inactive.nr_scanned`
    pub lru_shrink_inactive_nr_scanned: Field,
    /// `mm_vmscan_lru_shrink_inactive.nr_reclaimed`
    pub lru_shrink_inactive_nr_reclaimed: Field,
    pub lru_shrink_inactive_nr_dirty: Field,
    pub lru_shrink_inactive_nr_writeback: Field,
    pub lru_shrink_inactive_nr_congested: Field,
    pub lru_shrink_inactive_nr_immediate: Field,
    pub lru_shrink_inactive_nr_activate0: Field,
    pub lru_shrink_inactive_nr_activate1: Field,
    pub lru_shrink_inactive_nr_ref_keep: Field,
    pub lru_shrink_inactive_nr_unmap_fail: Field,
    pub lru_shrink_inactive_priority: Field,
    pub lru_shrink_inactive_reclaim_flags: Field,
    pub lru_shrink_active_nid: Field,
    pub lru_shrink_active_nr_taken: Field,
    pub lru_shrink_active_nr_active: Field,
    pub lru_shrink_active_nr_deactivated: Field,
    pub lru_shrink_active_nr_referenced: Field,
    pub lru_shrink_active_priority: Field,
    pub lru_shrink_active_reclaim_flags: Field,
    /// `mm_vmscan_{direct,memcg}_reclaim_begin.order`
    pub direct_reclaim_begin_order: Field,
    pub memcg_reclaim_begin_order: Field,
    /// `mm_vmscan_{direct,memcg}_reclaim_begin.gfp_flags`
    pub direct_reclaim_begin_gfp_flags: Field,
    pub memcg_reclaim_begin_gfp_flags: Field,
    /// `mm_vmscan_write_folio.reclaim_flags`
    pub write_folio_reclaim_flags: Field,
    /// `oom:mark_victim` fields (rss in kB; comm is a __data_loc string).
    pub mark_victim_pid: Field,
    pub mark_victim_comm: Field,
    pub mark_victim_total_vm: Field,
    pub mark_victim_anon_rss: Field,
    pub mark_victim_file_rss: Field,
    pub mark_victim_shmem_rss: Field,
    /// `mm_vmscan_kswapd_wake` / `_sleep` / `mm_vmscan_wakeup_kswapd`.
    pub kswapd_wake_nid: Field,
    pub kswapd_sleep_nid: Field,
    pub wakeup_kswapd_nid: Field,
    pub wakeup_kswapd_zid: Field,
    pub wakeup_kswapd_order: Field,
    pub wakeup_kswapd_gfp_flags: Field,
    /// `mm_compaction_try_to_compact_pages.order` / `.gfp_mask`.
    pub try_to_compact_pages_order: Field,
    pub try_to_compact_pages_gfp_mask: Field,
    /// `mm_shrink_slab_end.retval` (objects freed).
    pub shrink_slab_end_retval: Field,
    /// `mm_vmscan_throttled.usec_delayed` / `.reason`.
    pub throttled_usec_delayed: Field,
    pub throttled_reason: Field,
    /// `struct task_struct` members, from kernel BTF (not tracefs).
    pub task_min_flt: Field,
    pub task_maj_flt: Field,
    /// `task_struct.delays` (a pointer) and `struct task_delay_info`
    /// members: the kernel's per-task delay accounting.
    pub task_delays: Field,
    pub delay_blkio: Field,
    pub delay_swapin: Field,
    pub delay_freepages: Field,
    pub delay_thrashing: Field,
    pub delay_compact: Field,
    pub delay_wpcopy: Field,
    pub delay_irq: Field,
    /// `task_struct.sched_info` (embedded) and `sched_info.run_delay`.
    pub task_sched_info: Field,
    /// `task_struct.start_time`: CLOCK_MONOTONIC ns at fork, the bound
    /// of every per-task delay.
    pub task_start_time: Field,
    /// `task_struct.tgid` and `.comm` (16 bytes), read by the task
    /// iterator that adds live threads' reclaim stalls to their process.
    pub task_tgid: Field,
    pub task_comm: Field,
    /// `sched_process_fork.child_pid`.
    pub fork_child_pid: Field,
    pub sched_info_run_delay: Field,
    /// `task_struct.in_iowait`, a bitfield: `offset` is the byte that
    /// holds it, `size` the bit's index in that byte (little-endian).
    pub task_in_iowait: Field,
    /// `task_struct.in_memstall`, a bitfield as `task_in_iowait` (PSI:
    /// the task is in a memory stall, psi_memstall_enter).
    pub task_in_memstall: Field,
    /// `task_struct.flags` (PF_*).
    pub task_flags: Field,
    /// `thread_info.cpu` (the CPU a task is queued or runs on; with
    /// THREAD_INFO_IN_TASK, `thread_info` is `task_struct`'s first
    /// member) and `task_struct.on_cpu`.
    pub task_cpu: Field,
    pub task_on_cpu: Field,
    /// `task_struct.cgroups`, `css_set.dfl_cgrp`, `cgroup.self` and
    /// `cgroup_subsys_state.serial_nr`: the serial number of the task's
    /// cgroup (unique, never reused), which keys a reclaim begin's
    /// cached target verdict.
    pub task_cgroups: Field,
    pub css_set_dfl_cgrp: Field,
    pub cgroup_self: Field,
    pub css_serial_nr: Field,
    /// `mm_vmscan_lru_isolate` fields.
    pub lru_isolate_highest_zoneidx: Field,
    pub lru_isolate_nr_requested: Field,
    pub lru_isolate_nr_scanned: Field,
    pub lru_isolate_nr_skipped: Field,
    pub lru_isolate_nr_taken: Field,
    pub lru_isolate_lru: Field,
    /// `oom:reclaim_retry_zone` node and zone.
    pub reclaim_retry_zone_node: Field,
    pub reclaim_retry_zone_zone_idx: Field,
    /// Members read from a `struct request` (BTF) by the swap I/O
    /// programs: `__sector`, `__data_len`, `cmd_flags`, `q`; then
    /// `request_queue.disk` and `gendisk.major` / `.first_minor`.
    pub request_sector: Field,
    pub request_data_len: Field,
    pub request_cmd_flags: Field,
    pub request_q: Field,
    pub request_queue_disk: Field,
    pub gendisk_major: Field,
    pub gendisk_first_minor: Field,
    /// `request.tag` (the driver tag), `request.internal_tag` (the I/O
    /// scheduler's), `request.mq_hctx` and `blk_mq_hw_ctx.queue_num`: the
    /// request's slot in `SWAP_IO`.
    pub request_tag: Field,
    pub request_internal_tag: Field,
    pub request_mq_hctx: Field,
    pub hctx_queue_num: Field,
    /// `kmem:mm_page_alloc` pfn and order.
    pub page_alloc_pfn: Field,
    pub page_alloc_order: Field,
}

impl Fields {
    /// Every field absent (all zero), the compiled-in default.
    // SAFETY: Fields is made of u16s only; all-zero is a valid value.
    pub const ABSENT: Fields = unsafe { core::mem::zeroed() };
}

/// Which tasks are the target. Global `TARGET`, set at load time.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Target {
    /// cgroup v2 id whose tasks, and its descendants' tasks, are the
    /// target (0: none by cgroup).
    pub cgroup_id: u64,
    /// Non-zero: the processes in `TARGET_PIDS` are targets too, and the
    /// processes they fork are added to it. With neither, every task is.
    pub by_pid: u32,
    /// The level of `cgroup_id` in the cgroup2 hierarchy (the root 0):
    /// a task is in its subtree when its cgroup's ancestor at this level
    /// is that cgroup (a slice holds no tasks itself, its children do).
    pub cgroup_level: u32,
}

impl Target {
    pub const EVERY_TASK: Target = Target {
        cgroup_id: 0,
        by_pid: 0,
        cgroup_level: 0,
    };
}

/// Most processes (and threads, until they exit) `TARGET_PIDS` follows.
pub const MAX_TARGET_PIDS: u32 = 65536;

/// Map and global names, shared so that a rename cannot break loading.
pub mod names {
    pub const HISTOGRAMS: &str = "HISTOGRAMS";
    pub const COUNTERS: &str = "COUNTERS";
    pub const LRU_SHRINK_INACTIVE: &str = "LRU_SHRINK_INACTIVE";
    pub const LRU_SHRINK_ACTIVE: &str = "LRU_SHRINK_ACTIVE";
    pub const RECLAIM_PRIORITY: &str = "RECLAIM_PRIORITY";
    pub const RECLAIM_STALLERS: &str = "RECLAIM_STALLERS";
    pub const OOM_VICTIMS: &str = "OOM_VICTIMS";
    pub const KSWAPD_NODES: &str = "KSWAPD_NODES";
    pub const KSWAPD_AWAKE_SINCE: &str = "KSWAPD_AWAKE_SINCE";
    pub const KSWAPD_WAKEUPS: &str = "KSWAPD_WAKEUPS";
    pub const KSWAPD_WAKERS: &str = "KSWAPD_WAKERS";
    pub const KSWAPD_WAKEUP_ORDER: &str = "KSWAPD_WAKEUP_ORDER";
    pub const THROTTLE_REASON: &str = "THROTTLE_REASON";
    pub const PROCESS_FAULTS: &str = "PROCESS_FAULTS";
    pub const PROCESS_FAULT_TIME: &str = "PROCESS_FAULT_TIME";
    pub const LRU_ISOLATE: &str = "LRU_ISOLATE";
    pub const SWAP_EXTENTS: &str = "SWAP_EXTENTS";
    pub const ZONE_SPANS: &str = "ZONE_SPANS";
    pub const PAGE_ALLOC: &str = "PAGE_ALLOC";
    pub const RECLAIM_RETRY_ZONE: &str = "RECLAIM_RETRY_ZONE";
    pub const TASK_SPANS: &str = "TASK_SPANS";
    pub const SWAP_IO: &str = "SWAP_IO";
    pub const FAULT_START: &str = "FAULT_START";
    pub const FIELDS: &str = "FIELDS";
    pub const TARGET: &str = "TARGET";
    pub const TARGET_PIDS: &str = "TARGET_PIDS";
    pub const FAULT_LATENCY: &str = "FAULT_LATENCY";
    pub const CGROUP_STALLS: &str = "CGROUP_STALLS";
    pub const RECLAIM_ENTRIES: &str = "RECLAIM_ENTRIES";
    pub const ENTRY_STACKS: &str = "ENTRY_STACKS";
    pub const SPLIT_LIVE: &str = "SPLIT_LIVE";
    pub const CGROUP_ZERO: &str = "CGROUP_ZERO";
    pub const PER_CGROUP: &str = "PER_CGROUP";
    pub const PROFILE: &str = "PROFILE";
    pub const PROFILE_STACKS: &str = "PROFILE_STACKS";

    /// The maps userspace opens by name.
    pub const MAPS: &[&str] = &[
        HISTOGRAMS,
        COUNTERS,
        LRU_SHRINK_INACTIVE,
        LRU_SHRINK_ACTIVE,
        RECLAIM_PRIORITY,
        RECLAIM_STALLERS,
        OOM_VICTIMS,
        KSWAPD_NODES,
        KSWAPD_AWAKE_SINCE,
        KSWAPD_WAKEUPS,
        KSWAPD_WAKERS,
        KSWAPD_WAKEUP_ORDER,
        THROTTLE_REASON,
        PROCESS_FAULTS,
        PROCESS_FAULT_TIME,
        LRU_ISOLATE,
        PAGE_ALLOC,
        RECLAIM_RETRY_ZONE,
        TASK_SPANS,
        SWAP_IO,
        FAULT_START,
        TARGET_PIDS,
        CGROUP_STALLS,
        CGROUP_ZERO,
        RECLAIM_ENTRIES,
        ENTRY_STACKS,
        SPLIT_LIVE,
        PROFILE,
        PROFILE_STACKS,
    ];

    /// The globals userspace sets at load time (not maps).
    pub const GLOBALS: &[&str] = &[
        FIELDS,
        TARGET,
        SWAP_EXTENTS,
        ZONE_SPANS,
        FAULT_LATENCY,
        PER_CGROUP,
    ];
}

/// Field-by-field sums, for adding up per-CPU cells (userspace) without
/// listing every field at each place that does it.
macro_rules! impl_add_assign {
    ($t:ty { $($f:ident),* $(,)? }) => {
        impl core::ops::AddAssign for $t {
            fn add_assign(&mut self, o: Self) {
                $(self.$f += o.$f;)*
            }
        }
    };
}

impl_add_assign!(LruShrinkInactive {
    events,
    nr_scanned,
    nr_reclaimed,
    nr_dirty,
    nr_writeback,
    nr_congested,
    nr_immediate,
    nr_activate_anon,
    nr_activate_file,
    nr_ref_keep,
    nr_unmap_fail,
});
impl_add_assign!(LruShrinkActive {
    events,
    nr_taken,
    nr_active,
    nr_deactivated,
    nr_referenced
});
impl_add_assign!(LruIsolate {
    events,
    nr_requested,
    nr_scanned,
    nr_skipped,
    nr_taken
});
impl_add_assign!(KswapdNode {
    wakes,
    sleeps,
    awake_ns
});

#[cfg(feature = "user")]
mod pod {
    // SAFETY: all of these are repr(C), Copy, made of integers, without
    // padding that the kernel could leave uninitialised in a way that
    // matters (values are only ever summed or compared).
    unsafe impl aya::Pod for super::LruShrinkInactive {}
    unsafe impl aya::Pod for super::LruShrinkActive {}
    unsafe impl aya::Pod for super::Staller {}
    unsafe impl aya::Pod for super::EntryKey {}
    unsafe impl aya::Pod for super::EntryCell {}
    unsafe impl aya::Pod for super::SplitTotals {}
    unsafe impl aya::Pod for super::CgroupStalls {}
    unsafe impl aya::Pod for super::OomVictim {}
    unsafe impl aya::Pod for super::KswapdNode {}
    unsafe impl aya::Pod for super::ProcFaults {}
    unsafe impl aya::Pod for super::ProcFaultTime {}
    unsafe impl aya::Pod for super::LruIsolate {}
    unsafe impl aya::Pod for super::SwapExtents {}
    unsafe impl aya::Pod for super::ZoneSpans {}
    unsafe impl aya::Pod for super::Fields {}
    unsafe impl aya::Pod for super::Field {}
    unsafe impl aya::Pod for super::Target {}
    unsafe impl aya::Pod for super::Counters {}
    unsafe impl aya::Pod for super::hist::Buckets {}
}
