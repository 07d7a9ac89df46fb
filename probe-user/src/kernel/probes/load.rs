//! Loading vmtrace's eBPF object with the plan's field offsets, attaching
//! every enabled metric's programs, and what the loaded programs offer
//! while they run (followed pids, program statistics, OOM records).

use anyhow::{Context, Result, anyhow};
use aya::{
    Btf, Ebpf, EbpfLoader,
    maps::{Array, MapData, PerCpuArray, PerCpuValues, RingBuf},
    programs::{
        BtfTracePoint, Iter, PerfEvent, TracePoint,
        perf_event::{PerfEventConfig, PerfEventScope, SamplePolicy, SoftwareEvent},
    },
    util::online_cpus,
};
use vmtrace_common::{
    CgroupStalls, MAX_CGROUPS, MAX_ENTRIES, MAX_ENTRY_STACKS, MAX_PROFILE_STACKS, MAX_TARGET_PIDS,
    MAX_TASKS_IN_FAULT, OomVictim, SplitFamily, SplitTotals, SwapExtents, Target, ZoneSpans, names,
};

use super::{
    catalogue::{CATALOGUE, Hook, MetricId, Program},
    debug_log::{self, DebugLog},
    plan::Plan,
};

/// One program's counters (fdinfo).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgramStats {
    pub program: &'static str,
    pub runs: u64,
    pub run_ns: u64,
    pub misses: u64,
}

/// The loaded and attached programs. Links are owned by file descriptors
/// held here (nothing is pinned): dropping this, or the process dying,
/// detaches everything.
pub struct Probes {
    pub ebpf: Ebpf,
    pub plan: Plan,
    /// Failures to attach a metric on this kernel (metric id, reason).
    pub attach_failures: Vec<(MetricId, String)>,
    /// The programs' rare events as lines (`--debug-probes`); None
    /// without the flag.
    debug_log: Option<DebugLog>,
    /// The OOM victim ring buffer, and what has been read from it.
    oom: Option<RingBuf<MapData>>,
    pub oom_victims: Vec<OomVictim>,
    /// /proc/kallsyms, opened at attach for `reclaim_entries`: the kernel
    /// decides at open whether it shows addresses (the opener's
    /// privileges), and `attach` gives some up before it reads the maps.
    pub kallsyms: Option<std::fs::File>,
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

    /// The `--debug-probes` lines that came since the last call, to
    /// print on stderr; none without the flag.
    pub fn debug_lines(&mut self) -> Vec<String> {
        self.debug_log
            .as_mut()
            .map_or_else(Vec::new, DebugLog::take)
    }

    /// The last `--debug-probes` lines and their summary.
    pub fn debug_finish(&mut self) -> Vec<String> {
        self.debug_log
            .as_mut()
            .map_or_else(Vec::new, DebugLog::finish)
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
                let info = crate::host::proc::read_fdinfo(fd.as_fd().as_raw_fd());
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

    /// Starts the machine-wide page counts at the window's open, as the
    /// window's /proc/vmstat starts there: `kmem:mm_page_alloc` fires for
    /// every allocation on the machine, so from its attach to the
    /// window's open it counted vmtrace's own loading (the verifier's and
    /// the JIT's pages for each program attached after it: ~500 pages
    /// here, thousands in a TCG guest) that pgalloc_* and zoneinfo's
    /// numa_hit leave out of the window. The other programs count reclaim
    /// and faults, which loading does not cause.
    pub fn start_window(&mut self) -> Result<()> {
        if !self.plan.is_enabled(MetricId::PageAlloc) {
            return Ok(());
        }
        let cpus = aya::util::nr_cpus().map_err(|(what, e)| anyhow!("{what}: {e}"))?;
        let map = self
            .ebpf
            .map_mut(names::PAGE_ALLOC)
            .context("the eBPF object has no PAGE_ALLOC map")?;
        let mut cells: PerCpuArray<_, u64> = PerCpuArray::try_from(map)?;
        for i in 0..cells.len() {
            cells.set(i, PerCpuValues::try_from(vec![0u64; cpus])?, 0)?;
        }
        Ok(())
    }

    /// Adds every live thread's pending reclaim stalls to its process's
    /// row in RECLAIM_STALLERS, and sums live threads' split totals into
    /// SPLIT_LIVE (the `stall_flush` task iterator: reading an iterator
    /// runs its program once per task). Exited threads were added at
    /// exit. Best effort: on failure the rows and the split lack live
    /// threads' latest, which the log says.
    pub fn flush_stalls(&mut self) {
        if !self.plan.is_enabled(MetricId::ReclaimStallers) {
            return;
        }
        let mut run = || -> Result<()> {
            // The live threads' split totals are summed anew each run.
            if let Some(map) = self.ebpf.map_mut(names::SPLIT_LIVE) {
                let mut live: Array<_, SplitTotals> = Array::try_from(map)?;
                for family in SplitFamily::ALL {
                    live.set(family.index() as u32, SplitTotals::default(), 0)?;
                }
            }
            let it: &mut Iter = self
                .ebpf
                .program_mut("stall_flush")
                .context("no stall_flush program")?
                .try_into()?;
            let id = it.attach().context("attaching the task iterator")?;
            let link = it.take_link(id)?;
            let mut file = link.into_file().context("creating the task iterator")?;
            // The program writes nothing: reading to the end runs it.
            std::io::copy(&mut file, &mut std::io::sink()).context("running the task iterator")?;
            Ok(())
        };
        if let Err(e) = run() {
            log::warn!("per-process reclaim stalls and the split miss live threads' latest: {e:#}");
        }
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

/// vmtrace's eBPF object (probe-ebpf), built by build.rs and embedded.
pub(crate) static OBJECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/vmtrace-probes"));

/// Facts about this machine the programs need besides field offsets.
pub struct Layout {
    pub target: Target,
    pub swap: SwapExtents,
    pub zones: ZoneSpans,
    /// Fault latency on: the major-fault program also times faults.
    pub fault_latency: bool,
    /// Keep reclaim stalls per cgroup (`attach --serve`), for at most
    /// this many cgroups (besides the overflow row).
    pub max_cgroups: Option<u32>,
    /// Kernel stacks at reclaim ends (`reclaim_entries`): the stack
    /// map (~4 MB, preallocated) and the entries table get their full
    /// size only then.
    pub entry_stacks: bool,
    /// The CPU profile runs: its stack map (~16 MB) and table likewise.
    pub profile: bool,
    /// `--debug-probes`: the programs log their rare events.
    pub debug_probes: bool,
}

/// Maps preallocated at their full size only when used (hash maps are
/// preallocated: the perf-event program that closes faults may only
/// use such): the per-task fault stamps (~5 MB) for fault latency, the
/// followed pids (~5 MB) for a target by pid, the stack map (~4 MB) and
/// its table for reclaim entry stacks; otherwise one entry each. And
/// aya-log's ring buffer: one page when nothing is logged, room for a
/// few thousand lines between reads with `--debug-probes`.
fn map_sizes(layout: &Layout) -> [(&'static str, u32); 7] {
    let full_if = |used: bool, full: u32| if used { full } else { 1 };
    [
        (
            names::FAULT_START,
            full_if(layout.fault_latency, MAX_TASKS_IN_FAULT),
        ),
        (
            names::TARGET_PIDS,
            full_if(layout.target.by_pid != 0, MAX_TARGET_PIDS),
        ),
        (
            names::ENTRY_STACKS,
            full_if(layout.entry_stacks, MAX_ENTRY_STACKS),
        ),
        (
            names::RECLAIM_ENTRIES,
            full_if(layout.entry_stacks, MAX_ENTRIES),
        ),
        (
            names::PROFILE_STACKS,
            full_if(layout.profile, MAX_PROFILE_STACKS),
        ),
        (names::PROFILE, full_if(layout.profile, MAX_PROFILE_STACKS)),
        (
            debug_log::RING,
            if layout.debug_probes {
                debug_log::RING_BYTES
            } else {
                page_size()
            },
        ),
    ]
}

/// Loads the eBPF object with the plan's field offsets and target, then
/// attaches every enabled metric. A metric that fails to attach is moved to
/// `attach_failures` (with the kernel's reason); loading the object itself
/// failing is an error.
pub fn attach(mut plan: Plan, layout: &Layout) -> Result<Probes> {
    let per_cgroup = layout.max_cgroups.map(|n| n.clamp(1, MAX_CGROUPS));
    let mut loader = EbpfLoader::new();
    for (map, size) in map_sizes(layout) {
        loader.map_max_entries(map, size);
    }
    let mut ebpf = loader
        // The overflow row (id 0) comes on top of the cap.
        .map_max_entries(names::CGROUP_STALLS, per_cgroup.unwrap_or(1) + 1)
        .override_global(names::PER_CGROUP, &u32::from(per_cgroup.is_some()), true)
        .override_global(names::FIELDS, &plan.fields, true)
        .override_global(names::TARGET, &layout.target, true)
        .override_global(names::SWAP_EXTENTS, &layout.swap, true)
        .override_global(names::ZONE_SPANS, &layout.zones, true)
        .override_global(names::FAULT_LATENCY, &u32::from(layout.fault_latency), true)
        .override_global(names::DEBUG_PROBES, &u32::from(layout.debug_probes), true)
        // TASK_SPANS is task storage, which aya creates but has no
        // userspace type for; only the programs use it.
        .allow_unsupported_maps()
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
    // Before the programs load: the log owns the ring buffer's fd from
    // now on (without it, the object keeps it).
    let debug_log = layout
        .debug_probes
        .then(|| DebugLog::init(&mut ebpf))
        .transpose()?;
    if per_cgroup.is_some() {
        let mut rows: aya::maps::HashMap<_, u64, CgroupStalls> = aya::maps::HashMap::try_from(
            ebpf.map_mut(names::CGROUP_STALLS)
                .context("the eBPF object has no CGROUP_STALLS map")?,
        )?;
        rows.insert(0, CgroupStalls::default(), 0)
            .context("inserting the overflow row of CGROUP_STALLS")?;
    }
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
                // The verifier's log spans lines; a notice is one line
                // (VMTRACE_VERIFIER_LOG=1 prints all of it, for developers).
                let reason = format!("{e:#}");
                if std::env::var_os("VMTRACE_VERIFIER_LOG").is_some() {
                    eprintln!("vmtrace: {}: {reason}", metric.id);
                }
                let reason = reason.lines().next().unwrap_or("").trim_end_matches(':');
                attach_failures.push((metric.id, reason.to_string()));
            }
        }
    }
    plan.enabled = enabled;
    let kallsyms = if plan.takes_stacks() {
        Some(crate::host::proc::open_kallsyms().context("cannot open the kernel symbols")?)
    } else {
        None
    };
    Ok(Probes {
        ebpf,
        plan,
        attach_failures,
        debug_log,
        oom,
        oom_victims: Vec::new(),
        kallsyms,
    })
}

/// The kernel's page size: the smallest ring buffer.
fn page_size() -> u32 {
    // SAFETY: sysconf reads a constant of the running system.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u32::try_from(size).unwrap_or(4096)
}

/// Unloads a program and detaches all its links (best effort).
fn detach_program(ebpf: &mut Ebpf, p: &Program) {
    use aya::programs::Program as P;
    let _ = match ebpf.program_mut(p.name) {
        Some(P::TracePoint(tp)) => tp.unload(),
        Some(P::BtfTracePoint(tp)) => tp.unload(),
        Some(P::PerfEvent(pe)) => pe.unload(),
        Some(P::Iter(it)) => it.unload(),
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
        Hook::PerfCpuClock { hz } => {
            let pe: &mut PerfEvent = prog.try_into()?;
            pe.load().with_context(|| format!("loading {}", what()))?;
            let cpus = online_cpus().map_err(|(path, e)| anyhow!("reading {path}: {e}"))?;
            for cpu in cpus {
                pe.attach(
                    PerfEventConfig::Software(SoftwareEvent::CpuClock),
                    PerfEventScope::AllProcessesOneCpu { cpu },
                    SamplePolicy::Frequency(hz),
                    false,
                )
                .with_context(|| format!("attaching {} on CPU {cpu}", what()))?;
            }
        }
        Hook::Iter { target } => {
            if btf.is_none() {
                *btf = Some(Btf::from_sys_fs().context("reading kernel BTF")?);
            }
            let btf = btf.as_ref().ok_or_else(|| anyhow!("no kernel BTF"))?;
            let it: &mut Iter = prog.try_into()?;
            // Loaded (and verified) now; attached and run by the collector.
            it.load(target, btf)
                .with_context(|| format!("loading {}", what()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use vmtrace_common::names;

    use super::*;

    /// The catalogue and the shared names are the only link between the
    /// two crates: a renamed program, map or global fails here, not at
    /// load time on a user's machine.
    #[test]
    fn the_embedded_object_has_every_program_map_and_global_named() {
        let obj = aya_obj::Object::parse(OBJECT).expect("the embedded object parses");
        assert!(obj.programs.len() >= 20, "{} programs", obj.programs.len());
        let mut missing = Vec::new();
        for metric in CATALOGUE {
            for p in metric.programs {
                if !obj.programs.contains_key(p.name) {
                    missing.push(format!("program {} ({})", p.name, metric.id));
                }
            }
        }
        for map in names::MAPS {
            if !obj.maps.contains_key(*map) {
                missing.push(format!("map {map}"));
            }
        }
        for global in names::GLOBALS {
            let symbol = [b"\0", global.as_bytes(), b"\0"].concat();
            if !OBJECT.windows(symbol.len()).any(|w| w == symbol) {
                missing.push(format!("global {global}"));
            }
        }
        assert!(missing.is_empty(), "not in the eBPF object: {missing:?}");
        // And no program in the object that the catalogue does not attach.
        let catalogued: Vec<&str> = CATALOGUE
            .iter()
            .flat_map(|m| m.programs.iter().map(|p| p.name))
            .collect();
        let mut orphans: Vec<&String> = obj
            .programs
            .keys()
            .filter(|k| !catalogued.contains(&k.as_str()))
            .collect();
        orphans.sort();
        assert!(
            orphans.is_empty(),
            "programs no metric attaches: {orphans:?}"
        );
    }
}
