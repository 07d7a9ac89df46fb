//! Which metrics of the catalogue the running kernel can run and where
//! their fields lie: a pure function of the tracefs `format` files and
//! kernel BTF, tested against three kernels' real format files. A metric
//! whose tracepoint (or field) is missing is disabled on its own, with a
//! one-line reason; the others still run.

use anyhow::Result;
use vmtrace_common::{Field, Fields};

use super::catalogue::{CATALOGUE, Hook, KernelTypes, MetricId, OptIn, Program};
use crate::kernel::{gfp::GfpNames, tracefs::TraceFs};
use crate::model::probes::Listed;

/// What the running kernel offers, and what we will therefore attach.
#[derive(Debug, Default)]
pub struct Plan {
    /// Field offsets for the programs that will be attached.
    pub fields: Fields,
    /// Ids of the metrics that will be attached.
    pub enabled: Vec<MetricId>,
    /// Metrics left out, each with the reason (one line).
    pub unavailable: Vec<(MetricId, String)>,
    /// Metrics that run without some optional field (it reads 0).
    pub partial: Vec<(MetricId, String)>,
    /// The tracepoint name this kernel has, per program name.
    pub events: Vec<(&'static str, &'static str)>,
    /// This kernel's GFP flag names (from the reclaim begin tracepoint's
    /// print format), for `reclaim_entries`; None when that metric is off
    /// or the format does not parse (flags then read in hex).
    pub gfp_names: Option<GfpNames>,
}

impl Plan {
    pub fn is_enabled(&self, id: MetricId) -> bool {
        self.enabled.contains(&id)
    }

    /// Whether the ways in are taken (reclaim and compaction entries,
    /// kswapd wakers: `ENTRY_STACKS` is theirs).
    pub fn takes_entry_stacks(&self) -> bool {
        [
            MetricId::ReclaimEntries,
            MetricId::CompactionEntries,
            MetricId::KswapdWakePaths,
        ]
        .into_iter()
        .any(|id| self.is_enabled(id))
    }

    /// Whether any kernel stacks are taken (the ways in, or the CPU
    /// profile's `PROFILE_STACKS`): kallsyms is needed.
    pub fn takes_stacks(&self) -> bool {
        self.takes_entry_stacks() || self.is_enabled(MetricId::Profile)
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
    for metric in CATALOGUE {
        if metric.opt_in.is_some_and(|o| !opted_in.contains(&o)) {
            continue;
        }
        let mut resolved = Resolved {
            fields: plan.fields,
            partial: Vec::new(),
            events: Vec::new(),
        };
        let mut missing = None;
        for program in metric.programs {
            let step = resolve_hook(tracefs, types, program, &mut resolved)?
                .and_then(|()| resolve_members(types, program, &mut resolved));
            if let Err(reason) = step {
                missing = Some(reason);
                break;
            }
        }
        if let Some(reason) = missing {
            plan.unavailable.push((metric.id, reason));
            continue;
        }
        plan.fields = resolved.fields;
        plan.partial
            .extend(resolved.partial.into_iter().map(|p| (metric.id, p)));
        plan.events.append(&mut resolved.events);
        plan.enabled.push(metric.id);
    }
    if plan.takes_entry_stacks() {
        plan.gfp_names = tracefs
            .format("vmscan", "mm_vmscan_memcg_reclaim_begin")?
            .and_then(|f| GfpNames::from_print_fmt(&f.print_fmt, "gfp_flags").ok());
    }
    Ok(plan)
}

/// What one metric's programs resolved so far: committed to the plan only
/// when every program of the metric resolves.
struct Resolved {
    fields: Fields,
    /// Optional fields or members missing (they read 0), one line each.
    partial: Vec<String>,
    /// (program, tracepoint this kernel has).
    events: Vec<(&'static str, &'static str)>,
}

/// Why a metric cannot run on this kernel, in one line.
type Missing = String;

/// Finds the program's hook on this kernel and the offsets of the
/// tracepoint fields it reads. Outer error: tracefs unreadable; inner:
/// the metric cannot run here.
fn resolve_hook(
    tracefs: &TraceFs,
    types: Option<&dyn KernelTypes>,
    program: &Program,
    r: &mut Resolved,
) -> Result<Result<(), Missing>> {
    match program.hook {
        Hook::Tracepoint { system, events } => {
            let mut found = None;
            for &event in events {
                if let Some(format) = tracefs.format(system, event)? {
                    found = Some((event, format));
                    break;
                }
            }
            let Some((event, format)) = found else {
                return Ok(Err(format!(
                    "this kernel has no tracepoint {system}:{}",
                    events.join(" or ")
                )));
            };
            r.events.push((program.name, event));
            Ok(resolve_fields(system, event, &format, program, r))
        }
        Hook::BtfTracepoint { system, event } => {
            if types.is_none() {
                return Ok(Err(format!(
                    "kernel BTF (/sys/kernel/btf/vmlinux) is missing, needed for {event}"
                )));
            }
            if tracefs.format(system, event)?.is_none() {
                return Ok(Err(format!(
                    "this kernel has no tracepoint {system}:{event}"
                )));
            }
            Ok(Ok(()))
        }
        Hook::PerfSoftware(_) | Hook::PerfCpuClock { .. } => Ok(Ok(())),
        Hook::Iter { target } => Ok(if types.is_none() {
            Err(format!(
                "kernel BTF (/sys/kernel/btf/vmlinux) is missing, needed for the {target} iterator"
            ))
        } else {
            Ok(())
        }),
    }
}

/// The offsets of the tracepoint fields a program reads, from the
/// event's `format`.
fn resolve_fields(
    system: &str,
    event: &str,
    format: &crate::kernel::tracefs::Format,
    program: &Program,
    r: &mut Resolved,
) -> Result<(), Missing> {
    for used in program.fields {
        let problem = match format.field(used.name) {
            Some(def) if def.offset + def.size > vmtrace_common::RECORD_READ_LIMIT => format!(
                "{system}:{event} field {} lies at byte {}, past the {} bytes vmtrace reads",
                used.name,
                def.offset,
                vmtrace_common::RECORD_READ_LIMIT
            ),
            Some(def) if matches!(def.size, 1 | 2 | 4 | 8) => {
                *(used.slot)(&mut r.fields) = Field {
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
            return Err(problem);
        }
        r.partial.push(format!("{problem} (shown as 0)"));
    }
    Ok(())
}

/// The offsets of the kernel struct members a program reads, from BTF.
fn resolve_members(
    types: Option<&dyn KernelTypes>,
    program: &Program,
    r: &mut Resolved,
) -> Result<(), Missing> {
    for m in program.members {
        let Some(types) = types else {
            if !m.required {
                r.partial.push(format!(
                    "kernel BTF is missing: {}.{} reads 0",
                    m.strukt, m.member
                ));
                continue;
            }
            return Err(format!(
                "kernel BTF (/sys/kernel/btf/vmlinux) is missing, needed for {}.{}",
                m.strukt, m.member
            ));
        };
        let field = if m.bit {
            types
                .member_bit_offset(m.strukt, m.member)
                .and_then(|bits| {
                    Some(Field {
                        offset: u16::try_from(bits / 8).ok()?,
                        size: (bits % 8) as u16,
                    })
                })
        } else {
            types
                .member_offset(m.strukt, m.member)
                .and_then(|offset| u16::try_from(offset).ok())
                .map(|offset| Field {
                    offset,
                    size: m.size,
                })
        };
        match field {
            Some(field) => *(m.slot)(&mut r.fields) = field,
            _ if !m.required => r.partial.push(format!(
                "kernel BTF has no usable {}.{}: it reads 0",
                m.strukt, m.member
            )),
            _ => {
                return Err(format!(
                    "kernel BTF has no usable {}.{}",
                    m.strukt, m.member
                ));
            }
        }
    }
    Ok(())
}

/// Every metric of the catalogue and whether this kernel can run it.
pub fn listing(tracefs: &TraceFs, types: Option<&dyn KernelTypes>) -> Result<Vec<Listed>> {
    let plan = plan(
        tracefs,
        types,
        &[OptIn::FaultLatency, OptIn::PageAlloc, OptIn::ReclaimStacks],
    )?;
    Ok(CATALOGUE
        .iter()
        .map(|m| {
            let reason = plan
                .unavailable
                .iter()
                .find(|(id, _)| *id == m.id)
                .map(|(_, r)| r.clone());
            Listed {
                id: m.id.name().to_string(),
                title: m.id.title().to_string(),
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
                programs: m.programs.iter().map(|p| p.name.to_string()).collect(),
                opt_in: m.opt_in.map(|o| o.flag().to_string()),
                available: reason.is_none(),
                reason,
            }
        })
        .collect())
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
                ("task_delay_info", "wpcopy_delay") => Some(200),
                ("task_delay_info", "irq_delay") => Some(232),
                ("task_struct", "sched_info") => Some(1008),
                ("sched_info", "run_delay") => Some(8),
                // start_time (ktime at fork) on 6.1, 6.12 and 6.18 alike.
                ("task_struct", "start_time") => Some(2424),
                ("task_struct", "tgid") => Some(1268),
                // A bitfield in the byte at 1220 (its bit: see
                // member_bit_offset).
                ("task_struct", "in_iowait") => Some(1220),
                ("task_struct", "in_memstall") => Some(1221),
                ("task_struct", "comm") => Some(1752),
                ("task_struct", "flags") => Some(44),
                // Who held the CPU (6.18.44; thread_info is task_struct's
                // first member).
                ("thread_info", "cpu") => Some(20),
                ("task_struct", "on_cpu") => Some(52),
                // The woken task's run queue's clock_update_flags
                // (6.18.44).
                ("task_struct", "se") => Some(128),
                ("sched_entity", "cfs_rq") => Some(168),
                ("cfs_rq", "rq") => Some(312),
                ("rq", "clock_update_flags") => Some(2768),
                // The cached target verdict's key (6.18.44).
                ("task_struct", "cgroups") => Some(2376),
                ("css_set", "dfl_cgrp") => Some(112),
                ("cgroup", "self") => Some(0),
                ("cgroup_subsys_state", "serial_nr") => Some(80),
                ("request", "__sector") => Some(48),
                ("request", "__data_len") => Some(44),
                ("request", "cmd_flags") => Some(24),
                ("request", "q") => Some(0),
                ("request_queue", "disk") => Some(88),
                ("gendisk", "major") => Some(0),
                ("gendisk", "first_minor") => Some(4),
                ("request", "tag") => Some(32),
                ("request", "internal_tag") => Some(36),
                ("request", "mq_hctx") => Some(16),
                ("blk_mq_hw_ctx", "queue_num") => Some(196),
                // x86-64's since before 6.1 (a union with FRED's csx
                // from 6.9).
                ("pt_regs", "cs") => Some(136),
                _ => None,
            }
        }
    }

    const TYPES: Option<&dyn KernelTypes> = Some(&FakeTypes);

    #[test]
    fn the_catalogue_has_one_metric_per_id_in_id_order() {
        let ids: Vec<MetricId> = CATALOGUE.iter().map(|m| m.id).collect();
        assert_eq!(ids, MetricId::ALL);
    }

    #[test]
    fn every_shipped_kernel_has_every_default_metric() {
        for release in ["6.1.0-57-amd64", "6.12.117+deb12-amd64", "6.18.44-fc-v1045"] {
            let tracefs = TraceFs::at(&kernel_formats(release));
            let plan = plan(
                &tracefs,
                TYPES,
                &[
                    OptIn::FaultLatency,
                    OptIn::PageAlloc,
                    OptIn::FollowForks,
                    OptIn::ReclaimStacks,
                ],
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
            // At offset 0 (the first member), present all the same: a
            // member's presence is its size.
            assert_eq!(f.cgroup_self, Field { offset: 0, size: 8 });
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
        assert_eq!(plan.unavailable[0].0, MetricId::MemcgReclaim);
        assert!(
            plan.unavailable[0]
                .1
                .contains("vmscan:mm_vmscan_memcg_reclaim_end")
        );
        assert!(!plan.is_enabled(MetricId::MemcgReclaim));
        for id in [
            MetricId::DirectReclaim,
            MetricId::LruShrinkInactive,
            MetricId::MajorFault,
        ] {
            assert!(plan.is_enabled(id), "{id}");
        }
        // The disabled metric's field stays absent, so nothing reads junk.
        assert_eq!(plan.fields.memcg_reclaim_end_nr_reclaimed, Field::ABSENT);
        std::fs::remove_dir_all(&tmp).ok();
    }

    /// The reaper's metric is on on every shipped kernel; a kernel
    /// without one of its events loses that metric, not the victims.
    #[test]
    fn a_kernel_without_the_reaper_events_keeps_the_oom_victims() {
        for release in ["6.1.0-57-amd64", "6.12.117+deb12-amd64", "6.18.44-fc-v1045"] {
            let plan = plan(&TraceFs::at(&kernel_formats(release)), TYPES, &[]).expect("plan");
            assert!(plan.is_enabled(MetricId::OomReaper), "{release}");
        }
        let tmp = tempdir("no-reaper");
        copy_tree(&kernel_formats("6.12.117+deb12-amd64"), &tmp);
        std::fs::remove_dir_all(tmp.join("oom/start_task_reaping")).expect("rm");
        let plan = plan(&TraceFs::at(&tmp), TYPES, &[]).expect("plan");
        assert_eq!(plan.unavailable.len(), 1, "{:?}", plan.unavailable);
        assert_eq!(plan.unavailable[0].0, MetricId::OomReaper);
        assert!(plan.unavailable[0].1.contains("oom:start_task_reaping"));
        assert!(plan.is_enabled(MetricId::Oom));
        std::fs::remove_dir_all(&tmp).ok();
    }

    #[test]
    fn a_missing_field_disables_its_metric() {
        let tmp = tempdir("missing-field");
        copy_tree(&kernel_formats("6.18.44-fc-v1045"), &tmp);
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
        assert_eq!(plan.unavailable[0].0, MetricId::LruShrinkInactive);
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
        assert!(plan.is_enabled(MetricId::SwapOut) && plan.is_enabled(MetricId::Oom));
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
        assert!(!off.is_enabled(MetricId::FaultLatency));
        assert!(off.unavailable.is_empty());
        let no_btf = plan(&tracefs, None, &[OptIn::FaultLatency]).expect("plan");
        assert!(!no_btf.is_enabled(MetricId::FaultLatency));
        // Without BTF: the stall table's task iterator, the split at the
        // scheduler, swap I/O, fault latency, kernel faults and
        // per-process faults go, each saying why; everything else stays.
        let gone: Vec<MetricId> = no_btf.unavailable.iter().map(|(id, _)| *id).collect();
        assert_eq!(
            gone,
            [
                MetricId::ReclaimStallers,
                MetricId::SchedSplit,
                MetricId::SwapIo,
                MetricId::ProcessFaults,
                MetricId::KernelFaults,
                MetricId::FaultLatency
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
