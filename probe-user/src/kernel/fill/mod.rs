//! Fills the model's run report from what one window read: `fill` is
//! the one entry point. It takes the window's `Readings` (the
//! /proc/vmstat and /proc/stat snapshots at its opening and close, and
//! for a traced
//! window the eBPF maps' totals, the samples, the OOM victims, kswapd's
//! CPU time, the swap layout) and returns every section of the report;
//! each metric's gate (`enabled(MetricId::X)`) is here, in `traced`.
//! The submodules build one section each, by signal family: reclaim,
//! LRU lists, page faults, kswapd and the zones, fault causes, the OOM
//! reaper; here
//! swap I/O, the OOM victims and what was dropped.

use vmtrace_common::{Counter, Hist, OomVictim, SplitFamily};

use crate::{
    host::{proc::CpuTimes, swapdev::SwapLayout},
    kernel::{collect::comm_to_string, probes::MetricId, totals::KernelTotals},
    model::{
        counters::{CompactionCounters, ThpCounters},
        histogram::summarize,
        report::*,
        sample::Sample,
        vmstat::VmStat,
        zones::zone_type_counts,
    },
};

mod faults;
mod kswapd;
mod lru;
mod oom;
mod reclaim;
mod swapcause;

/// What one window read, all that `fill` needs.
pub struct Readings<'a> {
    /// /proc/vmstat (with the mTHP stats) when the window opened.
    pub before: &'a VmStat,
    /// The same when it closed.
    pub after: &'a VmStat,
    /// /proc/stat's CPU times when the window opened and when it closed
    /// (None where it was unreadable).
    pub cpu_before: Option<&'a CpuTimes>,
    pub cpu_after: Option<&'a CpuTimes>,
    /// How long the window was open.
    pub wall_s: f64,
    /// What the probes measured; None for a window with nothing traced
    /// (`run --no-probes`).
    pub traced: Option<Traced>,
}

/// What a traced window's probes held when it closed (read before they
/// were detached), and what the machine said beside them.
#[derive(Default)]
pub struct Traced {
    /// The metrics whose programs ran: every gate asks this.
    pub enabled: Vec<MetricId>,
    pub totals: KernelTotals,
    /// The metrics the plan or the attaching left out, and those only
    /// partly measured.
    pub unavailable: Vec<Unavailable>,
    pub partial: Vec<Unavailable>,
    /// The time series sampled while the window was open.
    pub samples: Vec<Sample>,
    pub swap_layout: SwapLayout,
    /// From the OOM ring buffer.
    pub oom_victims: Vec<OomVictim>,
    /// CLOCK_MONOTONIC when the window opened: the victims' times count
    /// from it.
    pub started_mono_ns: u64,
    /// Each kswapd's CPU seconds (node, seconds) at the opening and at
    /// the close.
    pub kswapd_cpu_before: Vec<(u32, f64)>,
    pub kswapd_cpu_after: Vec<(u32, f64)>,
    /// Zone names per node, indexed by zone id (/proc/zoneinfo).
    pub zone_names: Vec<(u32, Vec<String>)>,
    /// kernel.task_delayacct was on for the window; it was on before.
    pub delayacct_on: bool,
    pub delayacct_already_on: bool,
    /// Program run counts and times (--bpf-stats).
    pub program_costs: Option<Vec<ProgramCost>>,
    /// (program, nested runs the kernel skipped), for those that missed.
    pub program_misses: Vec<(String, u64)>,
}

/// Every section of the report of one window: the /proc/vmstat delta's
/// (computed once) for any window, the probes' for a traced one. The
/// caller adds who ran what (versions, command, exit, rusage).
pub fn fill(readings: Readings) -> RunReport {
    let delta = VmStat::delta(readings.before, readings.after);
    let window = RunReport {
        untraced: readings.traced.is_none(),
        usage: Usage {
            wall_s: readings.wall_s,
            ..Default::default()
        },
        vmstat: VmstatDelta::from_delta(&delta),
        swap_causes: Some(swapcause::swap_causes(&delta)),
        zone_vmstat: Some(zone_type_counts(&delta)),
        thp: ThpCounters::from_delta(&delta),
        compaction_counters: CompactionCounters::from_delta(&delta),
        machine_cpu: readings
            .cpu_before
            .zip(readings.cpu_after)
            .map(|(b, a)| crate::host::proc::machine_cpu_between(b, a)),
        ..Default::default()
    };
    match readings.traced {
        Some(t) => traced(t, window),
        None => window,
    }
}

/// The probes' sections over `window`'s, each only if its metric ran.
fn traced(t: Traced, window: RunReport) -> RunReport {
    use MetricId::*;
    let on = |id: MetricId| t.enabled.contains(&id);
    let totals = &t.totals;
    RunReport {
        direct_reclaim: on(DirectReclaim).then(|| {
            let split = on(SchedSplit).then_some(SplitFamily::DirectReclaim);
            reclaim::reclaim(
                totals,
                Hist::DirectReclaim,
                Counter::DirectReclaimPages,
                split,
            )
        }),
        memcg_reclaim: on(MemcgReclaim).then(|| {
            let split = on(SchedSplit).then_some(SplitFamily::MemcgReclaim);
            reclaim::reclaim(
                totals,
                Hist::MemcgReclaim,
                Counter::MemcgReclaimPages,
                split,
            )
        }),
        io_waits: on(SchedSplit).then(|| reclaim::io_waits(totals)),
        runnable: on(SchedSplit).then(|| reclaim::runnable(totals)),
        memstall_sleeps: on(SchedSplit).then(|| reclaim::memstall_sleeps(totals)),
        // Always: empty when nothing fed them.
        reclaim_order: reclaim::order_rows(totals),
        top_stallers: reclaim::top_stallers(totals),
        reclaim_entries: totals.entries.clone().map(|mut e| {
            for w in &mut e.kswapd_wakers {
                w.zone = kswapd::zone_name(&t.zone_names, w.node, w.zid);
            }
            e
        }),
        profile: totals.profile.clone(),
        slab_shrink: on(SlabShrink).then(|| reclaim::slab_shrink(totals)),
        throttle: on(Throttle).then(|| reclaim::throttle(totals)),
        compaction: on(Compaction).then(|| reclaim::compaction(totals, on(SchedSplit))),
        swap_out: on(SwapOut).then(|| reclaim::swap_out(totals)),
        lru_shrink_inactive: on(LruShrinkInactive).then(|| lru::inactive_rows(totals)),
        reclaim_priority: if on(LruShrinkInactive) {
            lru::priority_rows(totals)
        } else {
            Vec::new()
        },
        lru_shrink_active: on(LruShrinkActive).then(|| lru::active_rows(totals)),
        lru_isolate: on(LruIsolate).then(|| lru::isolate_rows(totals)),
        faults: FaultReport {
            major_all: on(MajorFault).then(|| totals.counter(Counter::MajorFaultsAll)),
            major_target: on(MajorFault).then(|| totals.counter(Counter::MajorFaultsTarget)),
            kernel_mode_target: on(KernelFaults)
                .then(|| totals.counter(Counter::KernelFaultsTarget)),
            processes: on(ProcessFaults).then(|| faults::process_faults(totals)),
            minor_target: on(FaultLatency).then(|| totals.counter(Counter::MinorFaultsTarget)),
            minor_latency: on(FaultLatency).then(|| summarize(totals.hist(Hist::MinorFault))),
            major_latency: on(FaultLatency).then(|| summarize(totals.hist(Hist::MajorFault))),
            process_time: on(FaultLatency).then(|| faults::fault_times(totals)),
        },
        delays: on(ProcessFaults)
            .then(|| faults::delays(totals, t.delayacct_on, t.delayacct_already_on)),
        kswapd: (on(Kswapd) || on(KswapdWakeups)).then(|| {
            let cpu = kswapd::cpu(&t.kswapd_cpu_before, &t.kswapd_cpu_after);
            kswapd::kswapd(totals, &cpu, &t.zone_names)
        }),
        oom_victims: on(Oom).then(|| {
            // The target processes seen exiting (None when the exit
            // probe did not run): a victim among them was the command's.
            let exited: Option<Vec<u32>> =
                on(ProcessFaults).then(|| totals.processes.iter().map(|(pid, _)| *pid).collect());
            oom_victims(&t.oom_victims, t.started_mono_ns, exited.as_deref())
        }),
        oom_reaper: on(OomReaper).then(|| oom::reaper(totals)),
        swap_io: on(SwapIo).then(|| swap_io(totals, &t.swap_layout)),
        // Always: the rows of the last sample's zones (none without one).
        zones: kswapd::zones(totals, &t.samples, on(PageAlloc)),
        dropped: Dropped {
            program_misses: t.program_misses,
            ..dropped(totals)
        },
        program_costs: t.program_costs,
        unavailable: t.unavailable,
        partial: t.partial,
        timeline: t.samples,
        ..window
    }
}

fn swap_io(totals: &KernelTotals, layout: &SwapLayout) -> SwapIoReport {
    SwapIoReport {
        areas: layout.areas.clone(),
        truncated: layout.truncated,
        write: summarize(totals.hist(Hist::SwapWrite)),
        write_bytes: totals.counter(Counter::SwapWriteSectors) * 512,
        read: summarize(totals.hist(Hist::SwapRead)),
        read_bytes: totals.counter(Counter::SwapReadSectors) * 512,
    }
}

/// The OOM victims read from the ring buffer; `start_ns` is the
/// CLOCK_MONOTONIC time the window opened. `exited` holds the target
/// processes seen exiting (process-exit probe; None when it did not
/// run): a victim among them was the command's.
fn oom_victims(
    victims: &[OomVictim],
    start_ns: u64,
    exited: Option<&[u32]>,
) -> Vec<OomVictimReport> {
    victims
        .iter()
        .map(|v| OomVictimReport {
            time_s: v.time_ns.saturating_sub(start_ns) as f64 / 1e9,
            pid: v.pid,
            comm: comm_to_string(&v.comm),
            target: exited.is_some_and(|e| e.contains(&v.pid)),
            victim_known: exited.is_some(),
            invoked_by_target: v.target != 0,
            total_vm_kb: v.total_vm_kb,
            anon_rss_kb: v.anon_rss_kb,
            file_rss_kb: v.file_rss_kb,
            shmem_rss_kb: v.shmem_rss_kb,
        })
        .collect()
}

/// What the kernel side could not account for: events dropped on full
/// maps or without a start, and rows evicted from full tables (inserts
/// counted minus rows still held). Nested-program misses are the
/// caller's.
fn dropped(totals: &KernelTotals) -> Dropped {
    Dropped {
        reclaim_start_map_full: totals.counter(Counter::ReclaimStartDropped),
        reclaim_end_without_begin: totals.counter(Counter::ReclaimEndUnmatched),
        fault_start_map_full: totals.counter(Counter::FaultStartDropped),
        node_out_of_range: totals.counter(Counter::NodeOutOfRange),
        oom_records_lost: totals.counter(Counter::OomRecordsDropped),
        swap_io_map_full: totals.counter(Counter::SwapIoStartDropped),
        // Pairing errors, and the requests still in flight at the read
        // (they complete after the close: counted, never timed).
        swap_io_unpaired: totals.counter(Counter::SwapIoUnpaired) + totals.swap_in_flight.0,
        swap_io_unpaired_bytes: (totals.counter(Counter::SwapIoUnpairedSectors)
            + totals.swap_in_flight.1)
            * 512,
        evicted: evicted(totals),
        program_misses: Vec::new(),
    }
}
/// (table, rows lost) for each full table that evicted rows.
fn evicted(totals: &KernelTotals) -> Vec<(String, u64)> {
    [
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
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An untraced window (`run --no-probes`) has the machine's CPU
    /// time too: the /proc/stat delta between its two readings.
    #[test]
    fn an_untraced_window_has_the_machines_cpu_time() {
        let vmstat = VmStat::default();
        let before = CpuTimes {
            cpus: 2,
            ticks: [100, 0, 50, 1000, 0, 0, 0, 5],
        };
        let after = CpuTimes {
            cpus: 2,
            ticks: [300, 0, 90, 1100, 0, 0, 0, 5],
        };
        let r = fill(Readings {
            before: &vmstat,
            after: &vmstat,
            cpu_before: Some(&before),
            cpu_after: Some(&after),
            wall_s: 1.0,
            traced: None,
        });
        let m = r.machine_cpu.expect("machine CPU time");
        assert_eq!(m.cpus, 2);
        assert!(
            m.user_s > 0.0 && m.system_s > 0.0 && m.steal_s == 0.0,
            "{m:?}"
        );
        let r = fill(Readings {
            before: &vmstat,
            after: &vmstat,
            cpu_before: None,
            cpu_after: Some(&after),
            wall_s: 1.0,
            traced: None,
        });
        assert!(r.machine_cpu.is_none());
    }
}
