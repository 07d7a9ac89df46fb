//! Types shared by vmtrace's eBPF programs (`probe-ebpf`) and its collector
//! (`probe-user`): map names and layouts, the histogram bucket scheme, the
//! indices of counters and the field-offset tables that userspace fills in
//! at load time. Both sides compile this one crate, so they cannot disagree.
//! The signal ids (`Hist`, `Counter`) are here; the rest is in one module per
//! family, as in `probe-ebpf/src/`, each re-exported at the crate root.
#![no_std]

#[macro_use]
mod ids;
pub mod hist;

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

mod cgroup;
mod contention;
mod entry;
mod fault;
mod fields;
mod kswapd;
mod lru;
pub mod names;
mod oom;
mod profile;
mod reclaim;
mod sched;
mod swap;
mod target;
mod zone;

pub use cgroup::*;
pub use contention::*;
pub use entry::*;
pub use fault::*;
pub use fields::*;
pub use kswapd::*;
pub use lru::*;
pub use oom::*;
pub use profile::*;
pub use reclaim::*;
pub use sched::*;
pub use swap::*;
pub use target::*;
pub use zone::*;

/// Most NUMA nodes a per-node table has room for. Events from a node id at
/// or above this are counted in [`Counter::NodeOutOfRange`].
pub const MAX_NODES: u32 = 64;

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
        /// over them, and of the runnable time the waits a wake-up ended
        /// by preempting (`SplitTotals::preempt_wake_ns`) (ns). Beside
        /// the stall counters; a thread's exit adds to all seven.
        DirectReclaimOnCpuNs => ("direct_reclaim_on_cpu_ns", "target direct reclaim: on a CPU (ns)"),
        DirectReclaimRunnableNs => ("direct_reclaim_runnable_ns", "target direct reclaim: runnable (ns)"),
        DirectReclaimBlockedNs => ("direct_reclaim_blocked_ns", "target direct reclaim: blocked (ns)"),
        DirectReclaimIowaitNs => ("direct_reclaim_iowait_ns", "target direct reclaim: blocked in I/O wait (ns)"),
        DirectReclaimSplitWallNs => ("direct_reclaim_split_wall_ns", "target direct reclaim: wall time split (ns)"),
        DirectReclaimRunDelayNs => ("direct_reclaim_run_delay_ns", "target direct reclaim: kernel run_delay (ns)"),
        DirectReclaimPreemptWakeNs => ("direct_reclaim_preempt_wake_ns", "target direct reclaim: runnable after preempting wake-ups (ns)"),
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
        MemcgReclaimPreemptWakeNs => ("memcg_reclaim_preempt_wake_ns", "target memcg reclaim: runnable after preempting wake-ups (ns)"),
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
        /// scheduler (probe-ebpf `sched`), seven counters in this order:
        /// on a CPU, runnable, blocked, of it in an I/O wait, the runs'
        /// wall time, the kernel's `sched_info.run_delay` change over
        /// them, and the preempting wake-ups' waits (ns). See
        /// [`split_counter`]; the reclaim families' seven sit beside
        /// their stall counters.
        CompactionOnCpuNs => ("compaction_on_cpu_ns", "target compaction: on a CPU (ns)"),
        CompactionRunnableNs => ("compaction_runnable_ns", "target compaction: runnable (ns)"),
        CompactionBlockedNs => ("compaction_blocked_ns", "target compaction: blocked (ns)"),
        CompactionIowaitNs => ("compaction_iowait_ns", "target compaction: blocked in I/O wait (ns)"),
        CompactionSplitWallNs => ("compaction_split_wall_ns", "target compaction: wall time split (ns)"),
        CompactionRunDelayNs => ("compaction_run_delay_ns", "target compaction: kernel run_delay (ns)"),
        CompactionPreemptWakeNs => ("compaction_preempt_wake_ns", "target compaction: runnable after preempting wake-ups (ns)"),
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
        /// Every sample of a target task in the kernel, its stack walked
        /// or not (outside the stall spans one in
        /// [`PROFILE_OUTSIDE_ONE_IN`] is): the exact count that the
        /// stacks' weighted sum estimates.
        ProfileKernelSamples => ("profile_kernel_samples", "profile: target samples in the kernel"),
    }
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
    unsafe impl aya::Pod for super::IoStart {}
    unsafe impl aya::Pod for super::ZoneSpans {}
    unsafe impl aya::Pod for super::Fields {}
    unsafe impl aya::Pod for super::Field {}
    unsafe impl aya::Pod for super::Target {}
    unsafe impl aya::Pod for super::Counters {}
    unsafe impl aya::Pod for super::hist::Buckets {}
}
