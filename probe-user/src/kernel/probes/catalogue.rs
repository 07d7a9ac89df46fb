//! The catalogue of signals vmtrace measures: each metric, the eBPF
//! programs behind it (their names in probe-ebpf) and the kernel hooks and
//! fields each program needs. One declarative table, in report order;
//! `plan` decides what of it this kernel can run.

use aya::programs::perf_event::SoftwareEvent;
use vmtrace_common::{Field, Fields};

pub use super::hook::Hook;

/// A field a program reads, and where its offset goes in [`Fields`].
pub struct FieldUse {
    pub name: &'static str,
    pub slot: fn(&mut Fields) -> &mut Field,
    /// Without it the metric means nothing; an optional field that is
    /// missing reads as 0, with a notice.
    pub required: bool,
}

/// A member of a kernel struct a program reads, resolved from kernel BTF.
pub struct MemberUse {
    pub strukt: &'static str,
    pub member: &'static str,
    /// Bytes the program reads (4 or 8; pointers are 8).
    pub size: u16,
    pub slot: fn(&mut Fields) -> &mut Field,
    /// A missing optional member reads as 0, with a notice; a missing
    /// required one disables the metric.
    pub required: bool,
    /// A one-bit bitfield: the slot gets the byte holding it as its
    /// offset and the bit's index in that byte as its size.
    pub bit: bool,
}

/// `member!(request, __sector, 8, request_sector)`
macro_rules! member {
    ($strukt:ident . $member:ident, $size:literal, $slot:ident) => {
        MemberUse {
            strukt: stringify!($strukt),
            member: stringify!($member),
            size: $size,
            slot: |f: &mut Fields| &mut f.$slot,
            required: true,
            bit: false,
        }
    };
    (optional $strukt:ident . $member:ident, $size:literal, $slot:ident) => {
        MemberUse {
            strukt: stringify!($strukt),
            member: stringify!($member),
            size: $size,
            slot: |f: &mut Fields| &mut f.$slot,
            required: false,
            bit: false,
        }
    };
    (optional bit $strukt:ident . $member:ident, $slot:ident) => {
        MemberUse {
            strukt: stringify!($strukt),
            member: stringify!($member),
            size: 0,
            slot: |f: &mut Fields| &mut f.$slot,
            required: false,
            bit: true,
        }
    };
}

/// Kernel type information: where struct members lie on this kernel.
pub trait KernelTypes {
    fn member_offset(&self, strukt: &str, member: &str) -> Option<u32>;
    /// The member's offset in bits (bitfields lie inside a byte).
    fn member_bit_offset(&self, strukt: &str, member: &str) -> Option<u32> {
        self.member_offset(strukt, member).map(|bytes| bytes * 8)
    }
}

impl KernelTypes for crate::kernel::btf::Btf {
    fn member_offset(&self, strukt: &str, member: &str) -> Option<u32> {
        crate::kernel::btf::Btf::member_offset(self, strukt, member)
    }
    fn member_bit_offset(&self, strukt: &str, member: &str) -> Option<u32> {
        crate::kernel::btf::Btf::member_bit_offset(self, strukt, member)
    }
}

/// One eBPF program of `probe-ebpf`.
pub struct Program {
    /// The function name in `probe-ebpf` (= program name in the object).
    pub name: &'static str,
    pub hook: Hook,
    pub fields: &'static [FieldUse],
    /// Kernel struct members it reads (8-byte integers).
    pub members: &'static [MemberUse],
}

vmtrace_common::signal_ids! {
    /// A metric's stable id: in notices, in JSON (`unavailable`), in
    /// `vmtrace probes`; `title` says what it measures.
    pub enum MetricId {
        DirectReclaim => ("direct_reclaim", "direct reclaim stalls"),
        MemcgReclaim => ("memcg_reclaim", "memcg reclaim stalls"),
        ReclaimEntries => ("reclaim_entries", "where reclaim was entered: stacks, GFP"),
        CompactionEntries => ("compaction_entries", "where direct compaction was entered"),
        KswapdWakePaths => ("kswapd_wake_paths", "who woke kswapd: stacks per zone"),
        ReclaimStallers => ("reclaim_stallers", "reclaim stall totals per process"),
        SchedSplit => ("sched_split", "stalls on CPU/runnable/blocked; I/O waits"),
        LruShrinkInactive => ("lru_shrink_inactive", "inactive LRU scanned/reclaimed"),
        LruIsolate => ("lru_isolate", "LRU isolation per highest zone and list"),
        LruShrinkActive => ("lru_shrink_active", "active LRU deactivation"),
        Kswapd => ("kswapd", "kswapd awake periods per node"),
        KswapdWakeups => ("kswapd_wakeups", "kswapd wakeups per zone and waker"),
        SlabShrink => ("slab_shrink", "slab shrinker latency"),
        Throttle => ("throttle", "reclaim throttling"),
        Compaction => ("compaction", "compaction runs"),
        SwapOut => ("swap_out", "swap-out: folios written by reclaim"),
        SwapIo => ("swap_io", "swap device I/O latency"),
        Oom => ("oom", "OOM victims"),
        OomReaper => ("oom_reaper", "OOM reaper wake-ups, reaps and reap time"),
        ReclaimRetryZone => ("reclaim_retry_zone", "allocator reclaim-retry checks per zone"),
        PageAlloc => ("page_alloc", "page allocations per zone"),
        MajorFault => ("major_fault", "major fault counts"),
        ProcessFaults => ("process_faults", "page faults per process (counted at exit)"),
        KernelFaults => ("kernel_faults", "kernel-mode page faults"),
        FaultLatency => ("fault_latency", "page fault latency"),
        Profile => ("profile", "the job's kernel stacks sampled on the CPU clock"),
        FollowForks => ("follow_forks", "following a process tree (attach --pid/--comm)"),
    }
}

impl std::fmt::Display for MetricId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for MetricId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}
vmtrace_model::names_schema!(MetricId, MetricId::ALL.map(MetricId::name));

/// The CPU profile's sampling frequency per CPU: a sample every ~2 ms
/// of a target task's CPU time (a second of system CPU is ~500
/// samples), prime so that it does not beat with periodic kernel work
/// (the 250/1000 Hz tick).
pub const PROFILE_HZ: u64 = 499;

/// A measurement: all its programs attach, or none do.
pub struct Metric {
    /// Its id; the title is the id's.
    pub id: MetricId,
    /// Off unless its command-line flag asks for it (hot-path probes).
    pub opt_in: Option<OptIn>,
    pub programs: &'static [Program],
}

/// Metrics that cost a hot path and run only when asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OptIn {
    /// `--fault-latency`
    FaultLatency,
    /// `--page-alloc`
    PageAlloc,
    /// Following a process tree: `attach --pid/--comm` (not a flag).
    FollowForks,
    /// Kernel stacks at reclaim ends: asked for unless `--no-stacks`.
    ReclaimStacks,
}

impl OptIn {
    pub fn flag(self) -> &'static str {
        match self {
            OptIn::FaultLatency => "--fault-latency",
            OptIn::PageAlloc => "--page-alloc",
            OptIn::FollowForks => "attach --pid/--comm",
            OptIn::ReclaimStacks => "off with --no-stacks",
        }
    }
}

/// A required field: `req!("nid", lru_shrink_inactive_nid)`.
macro_rules! req {
    ($name:literal, $slot:ident) => {
        FieldUse {
            name: $name,
            slot: |f: &mut Fields| &mut f.$slot,
            required: true,
        }
    };
}

/// An optional field (reads 0 where the kernel lacks it).
macro_rules! opt {
    ($name:literal, $slot:ident) => {
        FieldUse {
            name: $name,
            slot: |f: &mut Fields| &mut f.$slot,
            required: false,
        }
    };
}

/// A classic tracepoint program.
macro_rules! tp {
    ($prog:literal, $system:literal : $($event:literal)|+, [$($field:expr),* $(,)?]) => {
        Program {
            name: $prog,
            hook: Hook::Tracepoint {
                system: $system,
                events: &[$($event),+],
            },
            fields: &[$($field),*],
            members: &[],
        }
    };
}

/// What a reclaim begin keys its cached target verdict on (the task's
/// cgroup's serial number; probe-ebpf `target::in_target_cached`).
/// Without them each begin asks the kernel, as before.
const TARGET_CACHE_KEY: &[MemberUse] = &[
    member!(optional task_struct.cgroups, 8, task_cgroups),
    member!(optional css_set.dfl_cgrp, 8, css_set_dfl_cgrp),
    member!(optional cgroup.self, 8, cgroup_self),
    member!(optional cgroup_subsys_state.serial_nr, 8, css_serial_nr),
];

/// Every metric vmtrace knows, in report order.
pub const CATALOGUE: &[Metric] = &[
    Metric {
        id: MetricId::DirectReclaim,
        opt_in: None,
        programs: &[
            Program {
                name: "direct_reclaim_begin",
                hook: Hook::Tracepoint {
                    system: "vmscan",
                    events: &["mm_vmscan_direct_reclaim_begin"],
                },
                fields: &[opt!("order", direct_reclaim_begin_order)],
                members: TARGET_CACHE_KEY,
            },
            tp!("direct_reclaim_end", "vmscan": "mm_vmscan_direct_reclaim_end",
                [req!("nr_reclaimed", direct_reclaim_end_nr_reclaimed)]),
        ],
    },
    Metric {
        id: MetricId::MemcgReclaim,
        opt_in: None,
        programs: &[
            Program {
                name: "memcg_reclaim_begin",
                hook: Hook::Tracepoint {
                    system: "vmscan",
                    events: &["mm_vmscan_memcg_reclaim_begin"],
                },
                fields: &[opt!("order", memcg_reclaim_begin_order)],
                members: TARGET_CACHE_KEY,
            },
            tp!("memcg_reclaim_end", "vmscan": "mm_vmscan_memcg_reclaim_end",
                [req!("nr_reclaimed", memcg_reclaim_end_nr_reclaimed)]),
        ],
    },
    // Where those reclaims were entered: programs of their own on the
    // same tracepoints (probe-ebpf `entry`), so that --no-stacks leaves
    // the reclaim pair as it is.
    Metric {
        id: MetricId::ReclaimEntries,
        opt_in: Some(OptIn::ReclaimStacks),
        programs: &[
            tp!("entry_direct_begin", "vmscan": "mm_vmscan_direct_reclaim_begin", [
                opt!("order", direct_reclaim_begin_order),
                req!("gfp_flags", direct_reclaim_begin_gfp_flags),
            ]),
            tp!("entry_direct_end", "vmscan": "mm_vmscan_direct_reclaim_end", []),
            tp!("entry_memcg_begin", "vmscan": "mm_vmscan_memcg_reclaim_begin", [
                opt!("order", memcg_reclaim_begin_order),
                req!("gfp_flags", memcg_reclaim_begin_gfp_flags),
            ]),
            tp!("entry_memcg_end", "vmscan": "mm_vmscan_memcg_reclaim_end", []),
        ],
    },
    // Where direct compaction was entered (probe-ebpf entry): the way at
    // try_to_compact_pages, its runs timed while PF_MEMALLOC is set.
    Metric {
        id: MetricId::CompactionEntries,
        opt_in: Some(OptIn::ReclaimStacks),
        programs: &[
            Program {
                name: "entry_compact_way",
                hook: Hook::Tracepoint {
                    system: "compaction",
                    events: &["mm_compaction_try_to_compact_pages"],
                },
                fields: &[
                    opt!("order", try_to_compact_pages_order),
                    req!("gfp_mask", try_to_compact_pages_gfp_mask),
                ],
                members: &[member!(optional task_struct.flags, 4, task_flags)],
            },
            tp!("entry_compaction_begin", "compaction": "mm_compaction_begin", []),
            tp!("entry_compaction_end", "compaction": "mm_compaction_end", []),
        ],
    },
    // Who woke kswapd (probe-ebpf entry): the waker's stack per zone.
    Metric {
        id: MetricId::KswapdWakePaths,
        opt_in: Some(OptIn::ReclaimStacks),
        programs: &[
            tp!("entry_kswapd_wake", "vmscan": "mm_vmscan_wakeup_kswapd", [
                req!("nid", wakeup_kswapd_nid),
                req!("zid", wakeup_kswapd_zid),
                opt!("order", wakeup_kswapd_order),
                req!("gfp_flags", wakeup_kswapd_gfp_flags),
            ]),
        ],
    },
    // The reclaim programs add each stall to the thread's task storage;
    // these move the threads' totals into the per-process table.
    Metric {
        id: MetricId::ReclaimStallers,
        opt_in: None,
        programs: &[
            tp!("stall_thread_exit", "sched": "sched_process_exit", []),
            Program {
                name: "stall_flush",
                hook: Hook::Iter { target: "task" },
                fields: &[],
                members: &[
                    member!(task_struct.tgid, 4, task_tgid),
                    member!(task_struct.comm, 16, task_comm),
                ],
            },
        ],
    },
    // Where the target's reclaim stalls and compaction runs spent their
    // time, and its I/O-wait sleeps, at the scheduler (probe-ebpf sched).
    Metric {
        id: MetricId::SchedSplit,
        opt_in: None,
        programs: &[
            Program {
                name: "sched_switch",
                hook: Hook::BtfTracepoint {
                    system: "sched",
                    event: "sched_switch",
                },
                fields: &[],
                members: &[
                    member!(optional bit task_struct.in_iowait, task_in_iowait),
                    member!(optional bit task_struct.in_memstall, task_in_memstall),
                    member!(optional task_struct.sched_info, 8, task_sched_info),
                    member!(optional sched_info.run_delay, 8, sched_info_run_delay),
                    // Who held the CPU (probe-ebpf contention).
                    member!(optional task_struct.flags, 4, task_flags),
                    member!(optional task_struct.comm, 16, task_comm),
                ],
            },
            Program {
                name: "sched_wakeup",
                hook: Hook::BtfTracepoint {
                    system: "sched",
                    event: "sched_wakeup",
                },
                fields: &[],
                members: &[
                    // thread_info is task_struct's first member where
                    // THREAD_INFO_IN_TASK (x86 since 4.9).
                    member!(optional thread_info.cpu, 4, task_cpu),
                    member!(optional task_struct.on_cpu, 4, task_on_cpu),
                    // Whether the wake-up left the run queue's next
                    // clock update skipped (probe-ebpf sched).
                    member!(optional task_struct.se, 8, task_se),
                    member!(optional sched_entity.cfs_rq, 8, sched_entity_cfs_rq),
                    member!(optional cfs_rq.rq, 8, cfs_rq_rq),
                    member!(optional rq.clock_update_flags, 4, rq_clock_update_flags),
                ],
            },
            Program {
                name: "contention_migrate",
                hook: Hook::BtfTracepoint {
                    system: "sched",
                    event: "sched_migrate_task",
                },
                fields: &[],
                members: &[],
            },
            Program {
                name: "contention_fork",
                hook: Hook::BtfTracepoint {
                    system: "sched",
                    event: "sched_process_fork",
                },
                fields: &[],
                members: &[],
            },
            Program {
                name: "contention_exec",
                hook: Hook::BtfTracepoint {
                    system: "sched",
                    event: "sched_process_exec",
                },
                fields: &[],
                members: &[],
            },
        ],
    },
    Metric {
        id: MetricId::LruShrinkInactive,
        opt_in: None,
        programs: &[
            tp!("lru_shrink_inactive", "vmscan": "mm_vmscan_lru_shrink_inactive", [
                req!("nid", lru_shrink_inactive_nid),
                req!("nr_scanned", lru_shrink_inactive_nr_scanned),
                req!("nr_reclaimed", lru_shrink_inactive_nr_reclaimed),
                opt!("nr_dirty", lru_shrink_inactive_nr_dirty),
                opt!("nr_writeback", lru_shrink_inactive_nr_writeback),
                opt!("nr_congested", lru_shrink_inactive_nr_congested),
                opt!("nr_immediate", lru_shrink_inactive_nr_immediate),
                opt!("nr_activate0", lru_shrink_inactive_nr_activate0),
                opt!("nr_activate1", lru_shrink_inactive_nr_activate1),
                opt!("nr_ref_keep", lru_shrink_inactive_nr_ref_keep),
                opt!("nr_unmap_fail", lru_shrink_inactive_nr_unmap_fail),
                opt!("priority", lru_shrink_inactive_priority),
                opt!("reclaim_flags", lru_shrink_inactive_reclaim_flags),
            ]),
        ],
    },
    Metric {
        id: MetricId::LruIsolate,
        opt_in: None,
        programs: &[tp!("lru_isolate", "vmscan": "mm_vmscan_lru_isolate", [
            req!("highest_zoneidx", lru_isolate_highest_zoneidx),
            req!("lru", lru_isolate_lru),
            req!("nr_scanned", lru_isolate_nr_scanned),
            req!("nr_skipped", lru_isolate_nr_skipped),
            req!("nr_taken", lru_isolate_nr_taken),
            opt!("nr_requested", lru_isolate_nr_requested),
        ])],
    },
    Metric {
        id: MetricId::LruShrinkActive,
        opt_in: None,
        programs: &[
            tp!("lru_shrink_active", "vmscan": "mm_vmscan_lru_shrink_active", [
                req!("nid", lru_shrink_active_nid),
                req!("nr_taken", lru_shrink_active_nr_taken),
                opt!("nr_active", lru_shrink_active_nr_active),
                opt!("nr_deactivated", lru_shrink_active_nr_deactivated),
                opt!("nr_referenced", lru_shrink_active_nr_referenced),
                opt!("priority", lru_shrink_active_priority),
                opt!("reclaim_flags", lru_shrink_active_reclaim_flags),
            ]),
        ],
    },
    Metric {
        id: MetricId::Kswapd,
        opt_in: None,
        programs: &[
            tp!("kswapd_wake", "vmscan": "mm_vmscan_kswapd_wake",
                [req!("nid", kswapd_wake_nid)]),
            tp!("kswapd_sleep", "vmscan": "mm_vmscan_kswapd_sleep",
                [req!("nid", kswapd_sleep_nid)]),
        ],
    },
    Metric {
        id: MetricId::KswapdWakeups,
        opt_in: None,
        programs: &[tp!("wakeup_kswapd", "vmscan": "mm_vmscan_wakeup_kswapd", [
            req!("nid", wakeup_kswapd_nid),
            req!("zid", wakeup_kswapd_zid),
            opt!("order", wakeup_kswapd_order),
        ])],
    },
    Metric {
        id: MetricId::SlabShrink,
        opt_in: None,
        programs: &[
            tp!("shrink_slab_start", "vmscan": "mm_shrink_slab_start", []),
            tp!("shrink_slab_end", "vmscan": "mm_shrink_slab_end",
                [opt!("retval", shrink_slab_end_retval)]),
        ],
    },
    Metric {
        id: MetricId::Throttle,
        opt_in: None,
        programs: &[tp!("throttled", "vmscan": "mm_vmscan_throttled", [
            req!("usec_delayed", throttled_usec_delayed),
            opt!("reason", throttled_reason),
        ])],
    },
    Metric {
        id: MetricId::Compaction,
        opt_in: None,
        programs: &[
            tp!("compaction_begin", "compaction": "mm_compaction_begin", []),
            tp!("compaction_end", "compaction": "mm_compaction_end", []),
        ],
    },
    Metric {
        id: MetricId::SwapOut,
        opt_in: None,
        programs: &[
            tp!("write_folio", "vmscan": "mm_vmscan_write_folio" | "mm_vmscan_writepage",
            [req!("reclaim_flags", write_folio_reclaim_flags)]),
        ],
    },
    Metric {
        id: MetricId::SwapIo,
        opt_in: None,
        programs: &[
            Program {
                name: "block_rq_issue",
                hook: Hook::BtfTracepoint {
                    system: "block",
                    event: "block_rq_issue",
                },
                fields: &[],
                members: &[
                    member!(request.__sector, 8, request_sector),
                    member!(request.__data_len, 4, request_data_len),
                    member!(request.cmd_flags, 4, request_cmd_flags),
                    member!(request.q, 8, request_q),
                    member!(request_queue.disk, 8, request_queue_disk),
                    member!(gendisk.major, 4, gendisk_major),
                    member!(gendisk.first_minor, 4, gendisk_first_minor),
                    member!(request.tag, 4, request_tag),
                    member!(request.internal_tag, 4, request_internal_tag),
                    member!(request.mq_hctx, 8, request_mq_hctx),
                    member!(blk_mq_hw_ctx.queue_num, 4, hctx_queue_num),
                ],
            },
            Program {
                name: "block_rq_complete",
                hook: Hook::BtfTracepoint {
                    system: "block",
                    event: "block_rq_complete",
                },
                fields: &[],
                members: &[],
            },
        ],
    },
    Metric {
        id: MetricId::Oom,
        opt_in: None,
        programs: &[tp!("mark_victim", "oom": "mark_victim", [
            req!("pid", mark_victim_pid),
            opt!("comm", mark_victim_comm),
            opt!("total_vm", mark_victim_total_vm),
            opt!("anon_rss", mark_victim_anon_rss),
            opt!("file_rss", mark_victim_file_rss),
            opt!("shmem_rss", mark_victim_shmem_rss),
        ])],
    },
    Metric {
        id: MetricId::OomReaper,
        opt_in: None,
        programs: &[
            tp!("wake_reaper", "oom": "wake_reaper", []),
            tp!("start_task_reaping", "oom": "start_task_reaping", []),
            tp!("finish_task_reaping", "oom": "finish_task_reaping", []),
            tp!("skip_task_reaping", "oom": "skip_task_reaping", []),
        ],
    },
    Metric {
        id: MetricId::ReclaimRetryZone,
        opt_in: None,
        programs: &[tp!("reclaim_retry_zone", "oom": "reclaim_retry_zone", [
            req!("node", reclaim_retry_zone_node),
            req!("zone_idx", reclaim_retry_zone_zone_idx),
        ])],
    },
    Metric {
        id: MetricId::PageAlloc,
        opt_in: Some(OptIn::PageAlloc),
        programs: &[tp!("page_alloc", "kmem": "mm_page_alloc", [
            req!("pfn", page_alloc_pfn),
            opt!("order", page_alloc_order),
        ])],
    },
    Metric {
        id: MetricId::MajorFault,
        opt_in: None,
        programs: &[Program {
            name: "major_fault",
            hook: Hook::PerfSoftware(SoftwareEvent::PageFaultsMaj),
            fields: &[],
            members: &[],
        }],
    },
    Metric {
        id: MetricId::ProcessFaults,
        opt_in: None,
        programs: &[Program {
            name: "process_exit",
            hook: Hook::Tracepoint {
                system: "sched",
                events: &["sched_process_exit"],
            },
            fields: &[],
            members: &[
                member!(task_struct.min_flt, 8, task_min_flt),
                member!(task_struct.maj_flt, 8, task_maj_flt),
                // The kernel's delay accounting, read at the same exit.
                member!(optional task_struct.delays, 8, task_delays),
                member!(optional task_delay_info.blkio_delay, 8, delay_blkio),
                member!(optional task_delay_info.swapin_delay, 8, delay_swapin),
                member!(optional task_delay_info.freepages_delay, 8, delay_freepages),
                member!(optional task_delay_info.thrashing_delay, 8, delay_thrashing),
                member!(optional task_delay_info.compact_delay, 8, delay_compact),
                member!(optional task_delay_info.wpcopy_delay, 8, delay_wpcopy),
                member!(optional task_delay_info.irq_delay, 8, delay_irq),
                member!(optional task_struct.sched_info, 8, task_sched_info),
                member!(optional sched_info.run_delay, 8, sched_info_run_delay),
                // When the thread was forked: no delay can be longer than
                // the thread has lived.
                member!(optional task_struct.start_time, 8, task_start_time),
            ],
        }],
    },
    Metric {
        id: MetricId::KernelFaults,
        opt_in: None,
        programs: &[Program {
            name: "page_fault_kernel",
            hook: Hook::BtfTracepoint {
                system: "exceptions",
                event: "page_fault_kernel",
            },
            fields: &[],
            members: &[],
        }],
    },
    Metric {
        id: MetricId::FaultLatency,
        opt_in: Some(OptIn::FaultLatency),
        programs: &[
            Program {
                name: "page_fault_user",
                hook: Hook::BtfTracepoint {
                    system: "exceptions",
                    event: "page_fault_user",
                },
                fields: &[],
                members: &[],
            },
            Program {
                name: "minor_fault",
                hook: Hook::PerfSoftware(SoftwareEvent::PageFaultsMin),
                fields: &[],
                members: &[],
            },
        ],
    },
    Metric {
        id: MetricId::Profile,
        opt_in: Some(OptIn::ReclaimStacks),
        programs: &[Program {
            name: "profile",
            hook: Hook::PerfCpuClock { hz: PROFILE_HZ },
            fields: &[],
            // User mode without a stack walk (x86-64's pt_regs); where
            // BTF has it elsewhere or not at all, every sample walks.
            members: &[member!(optional pt_regs.cs, 8, pt_regs_cs)],
        }],
    },
    // Last: its exit program leaves the target set, so it must run after
    // every other program on sched_process_exit (programs on one
    // tracepoint run in the order they were attached).
    Metric {
        id: MetricId::FollowForks,
        opt_in: Some(OptIn::FollowForks),
        programs: &[
            tp!("target_fork", "sched": "sched_process_fork", [
                req!("child_pid", fork_child_pid),
            ]),
            tp!("target_exit", "sched": "sched_process_exit", []),
        ],
    },
];
