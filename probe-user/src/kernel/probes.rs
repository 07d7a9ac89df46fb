//! The catalogue of signals vmtrace measures, which kernel hooks feed each
//! one, whether the running kernel has them, and loading/attaching the
//! eBPF programs that do. A metric whose tracepoint (or field) is missing
//! is disabled on its own, with a notice; the others still run.

use anyhow::{Context, Result, anyhow};
use aya::{
    Btf, Ebpf, EbpfLoader,
    maps::{MapData, RingBuf},
    programs::{
        BtfTracePoint, PerfEvent, TracePoint,
        perf_event::{PerfEventConfig, PerfEventScope, SamplePolicy, SoftwareEvent},
    },
    util::online_cpus,
};
use vmtrace_common::{Field, Fields, OomVictim, SwapExtents, Target, ZoneSpans, names};

use crate::kernel::tracefs::TraceFs;

/// How a program is hooked into the kernel.
#[derive(Clone, Copy, Debug)]
pub enum Hook {
    /// A classic tracepoint; its fields come from tracefs `format`. The
    /// first of `events` this kernel has is used (later names are older
    /// kernels' names for the same event).
    Tracepoint {
        system: &'static str,
        events: &'static [&'static str],
    },
    /// A BTF tracepoint (typed arguments, no perf buffer copy; skipped
    /// only when it interrupts itself, not any BPF program).
    BtfTracepoint {
        system: &'static str,
        event: &'static str,
    },
    /// A software perf event with sample period 1 on every CPU.
    PerfSoftware(SoftwareEvent),
}

impl Hook {
    pub fn describe(&self) -> String {
        match self {
            Hook::Tracepoint { system, events } => {
                format!("tracepoint {system}:{}", events.join("|"))
            }
            Hook::BtfTracepoint { system, event } => format!("BTF tracepoint {system}:{event}"),
            Hook::PerfSoftware(ev) => {
                let name = match ev {
                    SoftwareEvent::PageFaultsMaj => "PAGE_FAULTS_MAJ",
                    SoftwareEvent::PageFaultsMin => "PAGE_FAULTS_MIN",
                    _ => "other",
                };
                format!("perf software event {name}")
            }
        }
    }
}

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
        }
    };
    (optional $strukt:ident . $member:ident, $size:literal, $slot:ident) => {
        MemberUse {
            strukt: stringify!($strukt),
            member: stringify!($member),
            size: $size,
            slot: |f: &mut Fields| &mut f.$slot,
            required: false,
        }
    };
}

/// Kernel type information: where struct members lie on this kernel.
pub trait KernelTypes {
    fn member_offset(&self, strukt: &str, member: &str) -> Option<u32>;
}

impl KernelTypes for crate::kernel::btf::Btf {
    fn member_offset(&self, strukt: &str, member: &str) -> Option<u32> {
        crate::kernel::btf::Btf::member_offset(self, strukt, member)
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

/// A measurement: all its programs attach, or none do.
pub struct Metric {
    /// Stable id, used in notices and JSON (`unavailable`).
    pub id: &'static str,
    pub title: &'static str,
    /// Off unless its command-line flag asks for it (hot-path probes).
    pub opt_in: Option<OptIn>,
    pub programs: &'static [Program],
}

/// Metrics that cost a hot path and run only when asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OptIn {
    /// `--fault-latency`
    FaultLatency,
    /// `--page-alloc`
    PageAlloc,
    /// Following a process tree: `attach --pid/--comm` (not a flag).
    FollowForks,
}

impl OptIn {
    pub fn flag(self) -> &'static str {
        match self {
            OptIn::FaultLatency => "--fault-latency",
            OptIn::PageAlloc => "--page-alloc",
            OptIn::FollowForks => "attach --pid/--comm",
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

/// Every metric vmtrace knows, in report order.
pub const CATALOGUE: &[Metric] = &[
    Metric {
        id: "direct_reclaim",
        title: "direct reclaim stalls",
        opt_in: None,
        programs: &[
            tp!("direct_reclaim_begin", "vmscan": "mm_vmscan_direct_reclaim_begin",
                [opt!("order", direct_reclaim_begin_order)]),
            tp!("direct_reclaim_end", "vmscan": "mm_vmscan_direct_reclaim_end",
                [req!("nr_reclaimed", direct_reclaim_end_nr_reclaimed)]),
        ],
    },
    Metric {
        id: "memcg_reclaim",
        title: "memcg reclaim stalls",
        opt_in: None,
        programs: &[
            tp!("memcg_reclaim_begin", "vmscan": "mm_vmscan_memcg_reclaim_begin",
                [opt!("order", memcg_reclaim_begin_order)]),
            tp!("memcg_reclaim_end", "vmscan": "mm_vmscan_memcg_reclaim_end",
                [req!("nr_reclaimed", memcg_reclaim_end_nr_reclaimed)]),
        ],
    },
    Metric {
        id: "lru_shrink_inactive",
        title: "inactive LRU scanned/reclaimed",
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
        id: "lru_isolate",
        title: "LRU isolation per highest zone and list",
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
        id: "lru_shrink_active",
        title: "active LRU deactivation",
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
        id: "kswapd",
        title: "kswapd awake periods per node",
        opt_in: None,
        programs: &[
            tp!("kswapd_wake", "vmscan": "mm_vmscan_kswapd_wake",
                [req!("nid", kswapd_wake_nid)]),
            tp!("kswapd_sleep", "vmscan": "mm_vmscan_kswapd_sleep",
                [req!("nid", kswapd_sleep_nid)]),
        ],
    },
    Metric {
        id: "kswapd_wakeups",
        title: "kswapd wakeups per zone and waker",
        opt_in: None,
        programs: &[tp!("wakeup_kswapd", "vmscan": "mm_vmscan_wakeup_kswapd", [
            req!("nid", wakeup_kswapd_nid),
            req!("zid", wakeup_kswapd_zid),
            opt!("order", wakeup_kswapd_order),
        ])],
    },
    Metric {
        id: "slab_shrink",
        title: "slab shrinker latency",
        opt_in: None,
        programs: &[
            tp!("shrink_slab_start", "vmscan": "mm_shrink_slab_start", []),
            tp!("shrink_slab_end", "vmscan": "mm_shrink_slab_end",
                [opt!("retval", shrink_slab_end_retval)]),
        ],
    },
    Metric {
        id: "throttle",
        title: "reclaim throttling",
        opt_in: None,
        programs: &[tp!("throttled", "vmscan": "mm_vmscan_throttled", [
            req!("usec_delayed", throttled_usec_delayed),
            opt!("reason", throttled_reason),
        ])],
    },
    Metric {
        id: "compaction",
        title: "compaction runs",
        opt_in: None,
        programs: &[
            tp!("compaction_begin", "compaction": "mm_compaction_begin", []),
            tp!("compaction_end", "compaction": "mm_compaction_end", []),
        ],
    },
    Metric {
        id: "swap_out",
        title: "swap-out: folios written by reclaim",
        opt_in: None,
        programs: &[
            tp!("write_folio", "vmscan": "mm_vmscan_write_folio" | "mm_vmscan_writepage",
            [req!("reclaim_flags", write_folio_reclaim_flags)]),
        ],
    },
    Metric {
        id: "swap_io",
        title: "swap device I/O latency",
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
        id: "oom",
        title: "OOM victims",
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
        id: "reclaim_retry_zone",
        title: "allocator reclaim-retry checks per zone",
        opt_in: None,
        programs: &[tp!("reclaim_retry_zone", "oom": "reclaim_retry_zone", [
            req!("node", reclaim_retry_zone_node),
            req!("zone_idx", reclaim_retry_zone_zone_idx),
        ])],
    },
    Metric {
        id: "page_alloc",
        title: "page allocations per zone",
        opt_in: Some(OptIn::PageAlloc),
        programs: &[tp!("page_alloc", "kmem": "mm_page_alloc", [
            req!("pfn", page_alloc_pfn),
            opt!("order", page_alloc_order),
        ])],
    },
    Metric {
        id: "major_fault",
        title: "major fault counts",
        opt_in: None,
        programs: &[Program {
            name: "major_fault",
            hook: Hook::PerfSoftware(SoftwareEvent::PageFaultsMaj),
            fields: &[],
            members: &[],
        }],
    },
    Metric {
        id: "process_faults",
        title: "page faults per process (counted at exit)",
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
                member!(optional task_struct.sched_info, 8, task_sched_info),
                member!(optional sched_info.run_delay, 8, sched_info_run_delay),
            ],
        }],
    },
    Metric {
        id: "kernel_faults",
        title: "kernel-mode page faults",
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
        id: "fault_latency",
        title: "page fault latency",
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
    // Last: its exit program leaves the target set, so it must run after
    // every other program on sched_process_exit (programs on one
    // tracepoint run in the order they were attached).
    Metric {
        id: "follow_forks",
        title: "following a process tree (attach --pid/--comm)",
        opt_in: Some(OptIn::FollowForks),
        programs: &[
            tp!("target_fork", "sched": "sched_process_fork", [
                req!("child_pid", fork_child_pid),
            ]),
            tp!("target_exit", "sched": "sched_process_exit", []),
        ],
    },
];

/// What the running kernel offers, and what we will therefore attach.
#[derive(Debug, Default)]
pub struct Plan {
    /// Field offsets for the programs that will be attached.
    pub fields: Fields,
    /// Ids of the metrics that will be attached.
    pub enabled: Vec<&'static str>,
    /// Metrics left out, each with the reason (one line).
    pub unavailable: Vec<(&'static str, String)>,
    /// Metrics that run without some optional field (it reads 0).
    pub partial: Vec<(&'static str, String)>,
    /// The tracepoint name this kernel has, per program name.
    pub events: Vec<(&'static str, &'static str)>,
}

impl Plan {
    pub fn is_enabled(&self, id: &str) -> bool {
        self.enabled.contains(&id)
    }
}

/// Decides, from a tracefs tree and whether kernel BTF exists, which
/// metrics can run and where their fields are. Pure: the tests feed it the
/// format files of other kernels.
pub fn plan(
    tracefs: &TraceFs,
    types: Option<&dyn KernelTypes>,
    opted_in: &[OptIn],
) -> Result<Plan> {
    let mut plan = Plan::default();
    'metric: for metric in CATALOGUE {
        if metric.opt_in.is_some_and(|o| !opted_in.contains(&o)) {
            continue;
        }
        let mut fields = plan.fields;
        let mut partial = Vec::new();
        let mut events = Vec::new();
        for program in metric.programs {
            match program.hook {
                Hook::Tracepoint {
                    system,
                    events: names,
                } => {
                    let mut found = None;
                    for &event in names {
                        if let Some(format) = tracefs.format(system, event)? {
                            found = Some((event, format));
                            break;
                        }
                    }
                    let Some((event, format)) = found else {
                        plan.unavailable.push((
                            metric.id,
                            format!(
                                "this kernel has no tracepoint {system}:{}",
                                names.join(" or ")
                            ),
                        ));
                        continue 'metric;
                    };
                    events.push((program.name, event));
                    for used in program.fields {
                        let problem = match format.field(used.name) {
                            Some(def) if matches!(def.size, 1 | 2 | 4 | 8) => {
                                *(used.slot)(&mut fields) = Field {
                                    offset: def.offset,
                                    size: def.size,
                                };
                                continue;
                            }
                            Some(def) => format!(
                                "{system}:{event} field {} has size {}, not an integer",
                                used.name, def.size
                            ),
                            None => format!("{system}:{event} has no field {}", used.name),
                        };
                        if used.required {
                            plan.unavailable.push((metric.id, problem));
                            continue 'metric;
                        }
                        partial.push((metric.id, format!("{problem} (shown as 0)")));
                    }
                }
                Hook::BtfTracepoint { system, event } => {
                    if types.is_none() {
                        plan.unavailable.push((
                            metric.id,
                            format!("kernel BTF (/sys/kernel/btf/vmlinux) is missing, needed for {event}"),
                        ));
                        continue 'metric;
                    }
                    if tracefs.format(system, event)?.is_none() {
                        plan.unavailable.push((
                            metric.id,
                            format!("this kernel has no tracepoint {system}:{event}"),
                        ));
                        continue 'metric;
                    }
                }
                Hook::PerfSoftware(_) => {}
            }
            for m in program.members {
                let Some(types) = types else {
                    plan.unavailable.push((
                        metric.id,
                        format!(
                            "kernel BTF (/sys/kernel/btf/vmlinux) is missing, needed for {}.{}",
                            m.strukt, m.member
                        ),
                    ));
                    continue 'metric;
                };
                match types.member_offset(m.strukt, m.member).map(u16::try_from) {
                    Some(Ok(offset)) => {
                        *(m.slot)(&mut fields) = Field {
                            offset,
                            size: m.size,
                        }
                    }
                    _ if !m.required => partial.push((
                        metric.id,
                        format!(
                            "kernel BTF has no usable {}.{}: it reads 0",
                            m.strukt, m.member
                        ),
                    )),
                    _ => {
                        plan.unavailable.push((
                            metric.id,
                            format!("kernel BTF has no usable {}.{}", m.strukt, m.member),
                        ));
                        continue 'metric;
                    }
                }
            }
        }
        plan.fields = fields;
        plan.partial.append(&mut partial);
        plan.events.append(&mut events);
        plan.enabled.push(metric.id);
    }
    Ok(plan)
}

/// One metric as `vmtrace probes` lists it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Listed {
    pub id: &'static str,
    pub title: &'static str,
    /// The hooks behind it, e.g. `tracepoint vmscan:mm_vmscan_direct_reclaim_end`.
    pub hooks: Vec<String>,
    /// The flag that turns it on, when it is off by default.
    pub opt_in: Option<&'static str>,
    pub available: bool,
    /// Why not, when not.
    pub reason: Option<String>,
}

/// Every metric of the catalogue and whether this kernel can run it.
pub fn listing(tracefs: &TraceFs, types: Option<&dyn KernelTypes>) -> Result<Vec<Listed>> {
    let plan = plan(tracefs, types, &[OptIn::FaultLatency, OptIn::PageAlloc])?;
    Ok(CATALOGUE
        .iter()
        .map(|m| {
            let reason = plan
                .unavailable
                .iter()
                .find(|(id, _)| *id == m.id)
                .map(|(_, r)| r.clone());
            Listed {
                id: m.id,
                title: m.title,
                hooks: m
                    .programs
                    .iter()
                    .map(
                        |p| match (p.hook, plan.events.iter().find(|(n, _)| *n == p.name)) {
                            (Hook::Tracepoint { system, .. }, Some((_, event))) => {
                                format!("tracepoint {system}:{event}")
                            }
                            _ => p.hook.describe(),
                        },
                    )
                    .collect(),
                opt_in: m.opt_in.map(OptIn::flag),
                available: reason.is_none(),
                reason,
            }
        })
        .collect())
}

/// The loaded and attached programs. Links are owned by file descriptors
/// held here (nothing is pinned): dropping this, or the process dying,
/// detaches everything.
/// One program's counters (fdinfo).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgramStats {
    pub program: &'static str,
    pub runs: u64,
    pub run_ns: u64,
    pub misses: u64,
}

pub struct Probes {
    pub ebpf: Ebpf,
    pub plan: Plan,
    /// Failures to attach a metric on this kernel (metric id, reason).
    pub attach_failures: Vec<(&'static str, String)>,
    /// Forwards the programs' rare warnings (e.g. a full map) to `log`.
    logger: Option<aya_log::EbpfLogger<&'static dyn log::Log>>,
    /// The OOM victim ring buffer, and what has been read from it.
    oom: Option<RingBuf<MapData>>,
    pub oom_victims: Vec<OomVictim>,
}

impl Probes {
    /// Adds processes to the followed set (`attach --pid/--comm`).
    pub fn follow(&mut self, pids: &[u32]) -> Result<()> {
        let map = self
            .ebpf
            .map_mut(names::TARGET_PIDS)
            .context("the eBPF object has no TARGET_PIDS map")?;
        let mut map: aya::maps::HashMap<_, u32, u8> =
            aya::maps::HashMap::try_from(map).context("TARGET_PIDS")?;
        for &pid in pids {
            map.insert(pid, 1, 0)
                .with_context(|| format!("following pid {pid}"))?;
        }
        Ok(())
    }

    /// The processes (and threads) followed now.
    pub fn followed(&self) -> Vec<u32> {
        let Some(map) = self.ebpf.map(names::TARGET_PIDS) else {
            return Vec::new();
        };
        match aya::maps::HashMap::<_, u32, u8>::try_from(map) {
            Ok(m) => m.keys().flatten().collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Passes pending eBPF log records on to the `log` crate.
    pub fn flush_log(&mut self) {
        if let Some(l) = &mut self.logger {
            l.flush();
        }
    }

    /// Each attached program's counters from its fdinfo: runs and run
    /// time (kept by the kernel only while kernel.bpf_stats_enabled is 1)
    /// and recursion misses: events the kernel skipped because the program
    /// would have run nested in another BPF program on the same CPU
    /// (non-zero means undercounts).
    pub fn program_stats(&self) -> Vec<ProgramStats> {
        use std::os::fd::{AsFd, AsRawFd};
        let mut out = Vec::new();
        for metric in CATALOGUE.iter().filter(|m| self.plan.is_enabled(m.id)) {
            for p in metric.programs {
                let Some(Ok(fd)) = self.ebpf.program(p.name).map(|prog| prog.fd()) else {
                    continue;
                };
                let path = format!("/proc/self/fdinfo/{}", fd.as_fd().as_raw_fd());
                let info = std::fs::read_to_string(path).unwrap_or_default();
                let field = |key: &str| -> u64 {
                    info.lines()
                        .find_map(|l| l.strip_prefix(key))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0)
                };
                out.push(ProgramStats {
                    program: p.name,
                    runs: field("run_cnt:"),
                    run_ns: field("run_time_ns:"),
                    misses: field("recursion_misses:"),
                });
            }
        }
        out
    }

    /// Moves OOM victim records out of the ring buffer into `oom_victims`.
    pub fn drain_oom(&mut self) {
        let Some(rb) = &mut self.oom else { return };
        while let Some(item) = rb.next() {
            if item.len() >= std::mem::size_of::<OomVictim>() {
                // SAFETY: the kernel wrote an OomVictim (repr(C), integers
                // only); read_unaligned copes with any alignment.
                let v = unsafe { std::ptr::read_unaligned(item.as_ptr().cast::<OomVictim>()) };
                self.oom_victims.push(v);
            }
        }
    }
}

static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/vmtrace-probes"));

/// Loads the eBPF object with the plan's field offsets and target, then
/// attaches every enabled metric. A metric that fails to attach is moved to
/// `attach_failures` (with the kernel's reason); loading the object itself
/// failing is an error.
/// Facts about this machine the programs need besides field offsets.
pub struct Layout {
    pub target: Target,
    pub swap: SwapExtents,
    pub zones: ZoneSpans,
    /// Fault latency on: the major-fault program also times faults.
    pub fault_latency: bool,
}

pub fn attach(mut plan: Plan, layout: &Layout) -> Result<Probes> {
    let mut ebpf = EbpfLoader::new()
        .override_global(names::FIELDS, &plan.fields, true)
        .override_global(names::TARGET, &layout.target, true)
        .override_global(names::SWAP_EXTENTS, &layout.swap, true)
        .override_global(names::ZONE_SPANS, &layout.zones, true)
        .override_global(names::FAULT_LATENCY, &u32::from(layout.fault_latency), true)
        .load(OBJECT)
        .map_err(|e| {
            let e = anyhow::Error::new(e);
            let text = format!("{e:#}");
            if text.contains("Operation not permitted") || text.contains("not implemented") {
                anyhow::anyhow!(
                    "the kernel refused eBPF ({text}): a seccomp filter (as in most \
                     containers), kernel lockdown or a kernel without BPF can forbid \
                     bpf(); run vmtrace as root on the host"
                )
            } else {
                e.context("loading vmtrace's eBPF object into the kernel failed")
            }
        })?;
    // The logger owns the log ring buffer's fd: it must outlive loading.
    let logger = aya_log::EbpfLogger::init(&mut ebpf)
        .map_err(|e| log::debug!("eBPF logging unavailable: {e}"))
        .ok();
    let oom = match ebpf.take_map(names::OOM_VICTIMS) {
        Some(map) => Some(RingBuf::try_from(map).context("OOM victim ring buffer")?),
        None => None,
    };
    let mut btf = None;
    let mut attach_failures = Vec::new();
    let mut enabled = Vec::new();
    for metric in CATALOGUE {
        if !plan.is_enabled(metric.id) {
            continue;
        }
        let result = metric
            .programs
            .iter()
            .try_for_each(|p| attach_program(&mut ebpf, p, &plan.events, &mut btf));
        match result {
            Ok(()) => enabled.push(metric.id),
            Err(e) => {
                // Detach what did attach: a half metric would mislead.
                for p in metric.programs {
                    detach_program(&mut ebpf, p);
                }
                // The verifier's log spans lines; a notice is one line.
                let reason = format!("{e:#}");
                let reason = reason.lines().next().unwrap_or("").trim_end_matches(':');
                attach_failures.push((metric.id, reason.to_string()));
            }
        }
    }
    plan.enabled = enabled;
    Ok(Probes {
        ebpf,
        plan,
        attach_failures,
        logger,
        oom,
        oom_victims: Vec::new(),
    })
}

/// Unloads a program and detaches all its links (best effort).
fn detach_program(ebpf: &mut Ebpf, p: &Program) {
    use aya::programs::Program as P;
    let _ = match ebpf.program_mut(p.name) {
        Some(P::TracePoint(tp)) => tp.unload(),
        Some(P::BtfTracePoint(tp)) => tp.unload(),
        Some(P::PerfEvent(pe)) => pe.unload(),
        _ => Ok(()),
    };
}

fn attach_program(
    ebpf: &mut Ebpf,
    p: &Program,
    events: &[(&'static str, &'static str)],
    btf: &mut Option<Btf>,
) -> Result<()> {
    let prog = ebpf
        .program_mut(p.name)
        .ok_or_else(|| anyhow!("program {} is not in the eBPF object", p.name))?;
    let what = || format!("{} ({})", p.name, p.hook.describe());
    match p.hook {
        Hook::Tracepoint { system, .. } => {
            let event = events
                .iter()
                .find(|(name, _)| *name == p.name)
                .map(|(_, e)| *e)
                .ok_or_else(|| anyhow!("no tracepoint resolved for {}", p.name))?;
            let tp: &mut TracePoint = prog.try_into()?;
            tp.load().with_context(|| format!("loading {}", what()))?;
            tp.attach(system, event)
                .with_context(|| format!("attaching {}", what()))?;
        }
        Hook::BtfTracepoint { event, .. } => {
            if btf.is_none() {
                *btf = Some(Btf::from_sys_fs().context("reading kernel BTF")?);
            }
            let btf = btf.as_ref().ok_or_else(|| anyhow!("no kernel BTF"))?;
            let tp: &mut BtfTracePoint = prog.try_into()?;
            tp.load(event, btf)
                .with_context(|| format!("loading {}", what()))?;
            tp.attach()
                .with_context(|| format!("attaching {}", what()))?;
        }
        Hook::PerfSoftware(event) => {
            let pe: &mut PerfEvent = prog.try_into()?;
            pe.load().with_context(|| format!("loading {}", what()))?;
            let cpus = online_cpus().map_err(|(path, e)| anyhow!("reading {path}: {e}"))?;
            for cpu in cpus {
                pe.attach(
                    PerfEventConfig::Software(event),
                    PerfEventScope::AllProcessesOneCpu { cpu },
                    SamplePolicy::Period(1),
                    false,
                )
                .with_context(|| format!("attaching {} on CPU {cpu}", what()))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    fn kernel_formats(release: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/kernel-formats")
            .join(release)
    }

    /// Stands in for kernel BTF in tests of other kernels' formats.
    pub struct FakeTypes;

    impl KernelTypes for FakeTypes {
        fn member_offset(&self, strukt: &str, member: &str) -> Option<u32> {
            match (strukt, member) {
                ("task_struct", "min_flt") => Some(2480),
                ("task_struct", "maj_flt") => Some(2488),
                // task_delay_info has had these since 5.14 (compaction).
                ("task_struct", "delays") => Some(2808),
                ("task_delay_info", "blkio_delay") => Some(32),
                ("task_delay_info", "swapin_delay") => Some(64),
                ("task_delay_info", "freepages_delay") => Some(104),
                ("task_delay_info", "thrashing_delay") => Some(136),
                ("task_delay_info", "compact_delay") => Some(168),
                ("task_struct", "sched_info") => Some(1008),
                ("sched_info", "run_delay") => Some(8),
                ("request", "__sector") => Some(48),
                ("request", "__data_len") => Some(44),
                ("request", "cmd_flags") => Some(24),
                ("request", "q") => Some(0),
                ("request_queue", "disk") => Some(88),
                ("gendisk", "major") => Some(0),
                ("gendisk", "first_minor") => Some(4),
                _ => None,
            }
        }
    }

    const TYPES: Option<&dyn KernelTypes> = Some(&FakeTypes);

    #[test]
    fn every_shipped_kernel_has_every_default_metric() {
        for release in ["6.1.0-57-amd64", "6.12.117+deb12-amd64", "6.18.44-fc-v669"] {
            let tracefs = TraceFs::at(&kernel_formats(release));
            let plan = plan(
                &tracefs,
                TYPES,
                &[OptIn::FaultLatency, OptIn::PageAlloc, OptIn::FollowForks],
            )
            .expect("plan");
            assert!(
                plan.unavailable.is_empty(),
                "{release}: {:?}",
                plan.unavailable
            );
            assert_eq!(plan.enabled.len(), CATALOGUE.len(), "{release}");
            let f = plan.fields;
            assert!(plan.partial.is_empty(), "{release}: {:?}", plan.partial);
            assert!(
                plan.events
                    .contains(&("write_folio", "mm_vmscan_write_folio"))
            );
            assert_eq!(
                f.mark_victim_comm,
                Field {
                    offset: 12,
                    size: 4
                }
            );
            assert_eq!(
                f.lru_shrink_inactive_reclaim_flags,
                Field {
                    offset: 92,
                    size: 4
                }
            );
            assert_eq!(
                f.lru_shrink_active_nr_referenced,
                Field {
                    offset: 40,
                    size: 8
                }
            );
            assert_eq!(f.lru_shrink_inactive_nid, Field { offset: 8, size: 4 });
            assert_eq!(
                f.lru_shrink_inactive_nr_scanned,
                Field {
                    offset: 16,
                    size: 8
                }
            );
            assert_eq!(
                f.lru_shrink_inactive_nr_reclaimed,
                Field {
                    offset: 24,
                    size: 8
                }
            );
            assert_eq!(
                f.direct_reclaim_end_nr_reclaimed,
                Field { offset: 8, size: 8 }
            );
            assert_eq!(
                f.memcg_reclaim_end_nr_reclaimed,
                Field { offset: 8, size: 8 }
            );
        }
    }

    #[test]
    fn a_missing_tracepoint_disables_only_its_metric() {
        let tmp = tempdir("missing-tp");
        copy_tree(&kernel_formats("6.1.0-57-amd64"), &tmp);
        std::fs::remove_dir_all(tmp.join("vmscan/mm_vmscan_memcg_reclaim_end")).expect("rm");
        let plan = plan(&TraceFs::at(&tmp), TYPES, &[]).expect("plan");
        assert_eq!(plan.unavailable.len(), 1, "{:?}", plan.unavailable);
        assert_eq!(plan.unavailable[0].0, "memcg_reclaim");
        assert!(
            plan.unavailable[0]
                .1
                .contains("vmscan:mm_vmscan_memcg_reclaim_end")
        );
        assert!(!plan.is_enabled("memcg_reclaim"));
        for id in ["direct_reclaim", "lru_shrink_inactive", "major_fault"] {
            assert!(plan.is_enabled(id), "{id}");
        }
        // The disabled metric's field stays absent, so nothing reads junk.
        assert_eq!(plan.fields.memcg_reclaim_end_nr_reclaimed, Field::ABSENT);
        std::fs::remove_dir_all(&tmp).ok();
    }

    #[test]
    fn a_missing_field_disables_its_metric() {
        let tmp = tempdir("missing-field");
        copy_tree(&kernel_formats("6.18.44-fc-v669"), &tmp);
        let path = tmp.join("vmscan/mm_vmscan_lru_shrink_inactive/format");
        let text = std::fs::read_to_string(&path).expect("read");
        let text: String = text
            .lines()
            .filter(|l| !l.contains(" nr_scanned;"))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(&path, text).expect("write");
        let plan = plan(&TraceFs::at(&tmp), TYPES, &[]).expect("plan");
        assert_eq!(plan.unavailable.len(), 1);
        assert_eq!(plan.unavailable[0].0, "lru_shrink_inactive");
        assert!(plan.unavailable[0].1.contains("no field nr_scanned"));
        std::fs::remove_dir_all(&tmp).ok();
    }

    #[test]
    fn older_names_and_missing_optional_fields() {
        let tmp = tempdir("older");
        copy_tree(&kernel_formats("6.1.0-57-amd64"), &tmp);
        // Kernels before the folio rename call it mm_vmscan_writepage.
        std::fs::rename(
            tmp.join("vmscan/mm_vmscan_write_folio"),
            tmp.join("vmscan/mm_vmscan_writepage"),
        )
        .expect("rename");
        // Older kernels' mark_victim has only the pid.
        let path = tmp.join("oom/mark_victim/format");
        let text = std::fs::read_to_string(&path).expect("read");
        let text: String = text
            .lines()
            .filter(|l| !l.contains("_rss;") && !l.contains(" comm;"))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(&path, text).expect("write");
        let plan = plan(&TraceFs::at(&tmp), TYPES, &[]).expect("plan");
        assert!(plan.unavailable.is_empty(), "{:?}", plan.unavailable);
        assert!(plan.is_enabled("swap_out") && plan.is_enabled("oom"));
        assert!(
            plan.events
                .contains(&("write_folio", "mm_vmscan_writepage"))
        );
        let partial: Vec<&str> = plan.partial.iter().map(|(_, r)| r.as_str()).collect();
        assert_eq!(partial.len(), 4, "{partial:?}");
        assert!(
            partial
                .iter()
                .all(|r| r.starts_with("oom:mark_victim has no field"))
        );
        assert_eq!(plan.fields.mark_victim_anon_rss, Field::ABSENT);
        assert_eq!(plan.fields.mark_victim_pid, Field { offset: 8, size: 4 });
        std::fs::remove_dir_all(&tmp).ok();
    }

    #[test]
    fn fault_latency_needs_btf_and_is_opt_in() {
        let tracefs = TraceFs::at(&kernel_formats("6.12.117+deb12-amd64"));
        let off = plan(&tracefs, TYPES, &[]).expect("plan");
        assert!(!off.is_enabled("fault_latency"));
        assert!(off.unavailable.is_empty());
        let no_btf = plan(&tracefs, None, &[OptIn::FaultLatency]).expect("plan");
        assert!(!no_btf.is_enabled("fault_latency"));
        // Without BTF: fault latency, kernel faults and per-process faults
        // go, each saying why; everything else stays.
        let gone: Vec<&str> = no_btf.unavailable.iter().map(|(id, _)| *id).collect();
        assert_eq!(
            gone,
            [
                "swap_io",
                "process_faults",
                "kernel_faults",
                "fault_latency"
            ]
        );
        assert!(
            no_btf
                .unavailable
                .iter()
                .all(|(_, why)| why.contains("BTF"))
        );
    }

    fn tempdir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("vmtrace-test-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        dir
    }

    fn copy_tree(from: &Path, to: &Path) {
        for entry in std::fs::read_dir(from).expect("readdir") {
            let entry = entry.expect("entry");
            let dst = to.join(entry.file_name());
            if entry.file_type().expect("type").is_dir() {
                std::fs::create_dir_all(&dst).expect("mkdir");
                copy_tree(&entry.path(), &dst);
            } else {
                std::fs::copy(entry.path(), &dst).expect("copy");
            }
        }
    }
}
