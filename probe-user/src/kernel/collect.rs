//! Reading what the probes gathered (per-CPU maps, summed) and the
//! kernel's own counters (/proc/vmstat), which the report sets side by
//! side.

use anyhow::{Context, Result, anyhow};
use aya::maps::{Array, HashMap as AyaHashMap, PerCpuArray};
use vmtrace_common::{
    CgroupStalls, Counter, Counters, Hist, KswapdNode, LRU_LISTS, LruIsolate, LruShrinkActive,
    LruShrinkInactive, LruType, MAX_NODES, MAX_ZONES, ORDERS, PRIORITIES, ProcFaultTime,
    ProcFaults, ReclaimContext, SplitFamily, SplitPart, SplitTotals, Staller, THROTTLE_REASONS,
    hist::Buckets, isolate_cell, lru_cell, names, order_cell, priority_cell, split_counter,
    zone_cell,
};

use crate::{
    host::proc::read_psi,
    kernel::probes::Probes,
    model::{
        counters::LruSizes,
        sample::{Psi, Sample},
        vmstat::VmStat,
    },
};

/// Everything the eBPF maps hold, summed over CPUs.
#[derive(Clone, Debug, Default)]
pub struct KernelTotals {
    /// Bucket counts per [`Hist`], indexed by `Hist as usize`.
    pub hists: Vec<Vec<u64>>,
    /// Per [`Counter`], indexed by `Counter as usize`.
    pub counters: Vec<u64>,
    /// Non-empty (node, context, type) cells of the inactive LRU table.
    pub lru: Vec<LruRow<LruShrinkInactive>>,
    /// Non-empty cells of the active LRU table.
    pub lru_active: Vec<LruRow<LruShrinkActive>>,
    /// Inactive shrinks per priority (index 0..=12), per context.
    pub priority: Vec<(ReclaimContext, Vec<u64>)>,
    /// Target reclaims per allocation order (last cell: that order and
    /// above), per context; only contexts with any.
    pub order: Vec<(ReclaimContext, Vec<u64>)>,
    /// Per process: stall totals (tgid, record).
    pub stallers: Vec<(u32, Staller)>,
    /// Where the target's reclaims were entered (full reads only; None
    /// when the metric is off).
    pub entries: Option<crate::model::report::ReclaimEntries>,
    /// The job's CPU profile (full reads only; None when it is off).
    pub profile: Option<crate::model::profile::ProfileReport>,
    /// Per node with any kswapd activity: totals, and how long it has been
    /// awake now if it is (ns).
    pub kswapd: Vec<(u32, KswapdNode, Option<u64>)>,
    /// `mm_vmscan_wakeup_kswapd` per (node, zone index).
    pub kswapd_wakeups: Vec<(u32, u32, u64)>,
    /// kswapd wakeups per allocation order (last cell: that and above).
    pub kswapd_wakeup_order: Vec<u64>,
    /// Who woke kswapd (task name, times).
    pub kswapd_wakers: Vec<(String, u64)>,
    /// LRU isolation per (highest zone index, lru list), non-empty cells.
    pub isolate: Vec<(u32, u32, LruIsolate)>,
    /// Pages allocated per (node, zone index) (--page-alloc).
    pub page_alloc: Vec<(u32, u32, u64)>,
    /// `oom:reclaim_retry_zone` per (node, zone index).
    pub retry_zone: Vec<(u32, u32, u64)>,
    /// Fault time per process of the target (--fault-latency).
    pub process_fault_time: Vec<(u32, ProcFaultTime)>,
    /// Page faults per process of the target (tgid, record).
    pub processes: Vec<(u32, ProcFaults)>,
    /// Target throttling events per reason bit (writeback, isolated,
    /// noprogress, congested).
    pub throttle_reasons: Vec<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LruRow<T> {
    pub node: u32,
    pub context: ReclaimContext,
    pub lru: LruType,
    pub totals: T,
}

impl KernelTotals {
    pub fn counter(&self, c: Counter) -> u64 {
        self.counters.get(c as usize).copied().unwrap_or(0)
    }

    pub fn hist(&self, h: Hist) -> &[u64] {
        self.hists.get(h as usize).map_or(&[], Vec::as_slice)
    }
}

/// A map of the eBPF object by name.
fn map<'a>(probes: &'a Probes, name: &str) -> Result<&'a aya::maps::Map> {
    probes
        .ebpf
        .map(name)
        .ok_or_else(|| anyhow!("map {name} is not in the eBPF object"))
}

fn per_cpu_array<'a, V: aya::Pod>(
    probes: &'a Probes,
    name: &str,
) -> Result<PerCpuArray<&'a aya::maps::MapData, V>> {
    PerCpuArray::try_from(map(probes, name)?).with_context(|| format!("map {name}"))
}

/// Every (key, value) of a hash map; an entry evicted between listing
/// and lookup is skipped.
fn hash_entries<K: aya::Pod, V: aya::Pod>(probes: &Probes, name: &str) -> Result<Vec<(K, V)>> {
    let table: AyaHashMap<_, K, V> = AyaHashMap::try_from(map(probes, name)?)?;
    Ok(table.iter().flatten().collect())
}

/// Sums a per-CPU cell of u64 counters.
fn sum_u64(map: &PerCpuArray<&aya::maps::MapData, u64>, idx: u32) -> Result<u64> {
    sum_cell(map, idx)
}

/// Adds up one cell of a per-CPU array over every CPU.
fn sum_cell<V>(map: &PerCpuArray<&aya::maps::MapData, V>, idx: u32) -> Result<V>
where
    V: aya::Pod + Default + std::ops::AddAssign,
{
    let mut sum = V::default();
    for v in map.get(&idx, 0)?.iter() {
        sum += *v;
    }
    Ok(sum)
}

/// The per-cgroup stall rows (`attach --serve`): (cgroup id, row); id 0
/// is the overflow row. Empty when the table is not kept.
pub fn read_cgroup_stalls(probes: &Probes) -> Result<Vec<(u64, CgroupStalls)>> {
    hash_entries(probes, names::CGROUP_STALLS)
}

/// Deletes the rows of cgroups that no longer exist; returns how many
/// went. The overflow row stays.
pub fn forget_cgroups(probes: &mut Probes, ids: &[u64]) -> Result<usize> {
    let map = probes
        .ebpf
        .map_mut(names::CGROUP_STALLS)
        .ok_or_else(|| anyhow!("map CGROUP_STALLS is not in the eBPF object"))?;
    let mut table: AyaHashMap<_, u64, CgroupStalls> = AyaHashMap::try_from(map)?;
    Ok(ids
        .iter()
        .filter(|&&id| id != 0 && table.remove(&id).is_ok())
        .count())
}

/// Reads every map, the per-process tables included: at the end of a
/// window. Reading a hash costs two system calls per entry, and the
/// per-process tables hold a row for every process seen (up to
/// MAX_PROCESSES), so this is not for every sample or scrape.
pub fn read(probes: &Probes) -> Result<KernelTotals> {
    let mut t = read_aggregates(probes)?;
    add_live_split(probes, &mut t)?;
    t.stallers = hash_entries(probes, names::RECLAIM_STALLERS)?;
    t.processes = hash_entries(probes, names::PROCESS_FAULTS)?;
    t.process_fault_time = hash_entries(probes, names::PROCESS_FAULT_TIME)?;
    t.entries = crate::kernel::entries::read(probes, &t)?;
    t.profile = crate::kernel::profile::read(probes, &t)?;
    Ok(t)
}

/// Adds the live threads' split totals (`SPLIT_LIVE`, summed by the
/// task iterator `Probes::flush_stalls` just run) to the counters,
/// which hold the exited threads' (probe-ebpf `sched`).
fn add_live_split(probes: &Probes, t: &mut KernelTotals) -> Result<()> {
    let live: Array<_, SplitTotals> =
        Array::try_from(map(probes, names::SPLIT_LIVE)?).context("map SPLIT_LIVE")?;
    for family in SplitFamily::ALL {
        let totals = live.get(&(family.index() as u32), 0)?;
        for part in SplitPart::ALL {
            if let Some(c) = t.counters.get_mut(split_counter(family, part) as usize) {
                *c += totals.part(part);
            }
        }
    }
    Ok(())
}

/// Reads every map but the per-process tables (those stay empty): what
/// a progress sample and a /metrics scrape need, at a cost that does
/// not grow with the processes the machine has run.
pub fn read_aggregates(probes: &Probes) -> Result<KernelTotals> {
    let mut t = KernelTotals::default();
    read_hists(probes, &mut t)?;
    read_counters(probes, &mut t)?;
    read_lru(probes, &mut t)?;
    read_priority_and_order(probes, &mut t)?;
    read_kswapd(probes, &mut t)?;
    read_isolate(probes, &mut t)?;
    read_zone_cells(probes, &mut t)?;
    let reasons = per_cpu_array::<u64>(probes, names::THROTTLE_REASON)?;
    t.throttle_reasons = (0..THROTTLE_REASONS)
        .map(|i| sum_u64(&reasons, i))
        .collect::<Result<_>>()?;
    Ok(t)
}

/// Bucket counts per histogram, summed over CPUs.
fn read_hists(probes: &Probes, t: &mut KernelTotals) -> Result<()> {
    let hist_map = per_cpu_array::<Buckets>(probes, names::HISTOGRAMS)?;
    for h in Hist::ALL {
        let per_cpu = hist_map.get(&(h as u32), 0)?;
        let mut sum = vec![0u64; vmtrace_common::hist::BUCKETS];
        for cpu in per_cpu.iter() {
            for (s, c) in sum.iter_mut().zip(cpu.counts.iter()) {
                *s += c;
            }
        }
        t.hists.push(sum);
    }
    Ok(())
}

fn read_counters(probes: &Probes, t: &mut KernelTotals) -> Result<()> {
    let counter_map = per_cpu_array::<Counters>(probes, names::COUNTERS)?;
    let per_cpu = counter_map.get(&0, 0)?;
    for i in 0..Counter::COUNT as usize {
        t.counters.push(per_cpu.iter().map(|c| c.n[i]).sum());
    }
    Ok(())
}

/// The inactive and active LRU tables: non-empty (node, context, list)
/// cells.
fn read_lru(probes: &Probes, t: &mut KernelTotals) -> Result<()> {
    let inactive = per_cpu_array::<LruShrinkInactive>(probes, names::LRU_SHRINK_INACTIVE)?;
    let active = per_cpu_array::<LruShrinkActive>(probes, names::LRU_SHRINK_ACTIVE)?;
    for node in 0..online_node_limit() {
        for context in ReclaimContext::ALL {
            for lru in LruType::ALL {
                let cell = lru_cell(node, context, lru);
                let sum: LruShrinkInactive = sum_cell(&inactive, cell)?;
                if sum.events > 0 {
                    t.lru.push(LruRow {
                        node,
                        context,
                        lru,
                        totals: sum,
                    });
                }
                let sum: LruShrinkActive = sum_cell(&active, cell)?;
                if sum.events > 0 {
                    t.lru_active.push(LruRow {
                        node,
                        context,
                        lru,
                        totals: sum,
                    });
                }
            }
        }
    }
    Ok(())
}

/// Shrinks per reclaim priority and reclaims per allocation order, per
/// context with any.
fn read_priority_and_order(probes: &Probes, t: &mut KernelTotals) -> Result<()> {
    let priority = per_cpu_array::<u64>(probes, names::RECLAIM_PRIORITY)?;
    let counters = per_cpu_array::<Counters>(probes, names::COUNTERS)?.get(&0, 0)?;
    let order = |cell: u32| -> u64 {
        counters
            .iter()
            .map(|c| c.orders.get(cell as usize).copied().unwrap_or(0))
            .sum()
    };
    for context in ReclaimContext::ALL {
        let p = (0..PRIORITIES)
            .map(|i| sum_u64(&priority, priority_cell(context, i)))
            .collect::<Result<Vec<u64>>>()?;
        if p.iter().any(|&n| n > 0) {
            t.priority.push((context, p));
        }
        let o: Vec<u64> = (0..ORDERS).map(|i| order(order_cell(context, i))).collect();
        if o.iter().any(|&n| n > 0) {
            t.order.push((context, o));
        }
    }
    Ok(())
}

/// LRU isolation: non-empty (highest zone, list) cells.
fn read_isolate(probes: &Probes, t: &mut KernelTotals) -> Result<()> {
    let isolate = per_cpu_array::<LruIsolate>(probes, names::LRU_ISOLATE)?;
    for zone in 0..MAX_ZONES {
        for lru in 0..LRU_LISTS {
            let sum: LruIsolate = sum_cell(&isolate, isolate_cell(zone, lru))?;
            if sum.events > 0 {
                t.isolate.push((zone, lru, sum));
            }
        }
    }
    Ok(())
}

/// Reclaim retries and pages allocated: non-zero (node, zone) cells.
fn read_zone_cells(probes: &Probes, t: &mut KernelTotals) -> Result<()> {
    let retry = per_cpu_array::<u64>(probes, names::RECLAIM_RETRY_ZONE)?;
    let alloc = per_cpu_array::<u64>(probes, names::PAGE_ALLOC)?;
    for node in 0..online_node_limit() {
        for zone in 0..MAX_ZONES {
            let n = sum_u64(&retry, zone_cell(node, zone))?;
            if n > 0 {
                t.retry_zone.push((node, zone, n));
            }
            let n = sum_u64(&alloc, zone_cell(node, zone))?;
            if n > 0 {
                t.page_alloc.push((node, zone, n));
            }
        }
    }
    Ok(())
}

/// kswapd per node (totals, time awake now), its wakeups per (node,
/// zone) and per order, and who woke it, most first.
fn read_kswapd(probes: &Probes, t: &mut KernelTotals) -> Result<()> {
    let nodes = per_cpu_array::<KswapdNode>(probes, names::KSWAPD_NODES)?;
    let since: aya::maps::Array<_, u64> =
        aya::maps::Array::try_from(map(probes, names::KSWAPD_AWAKE_SINCE)?)?;
    let wakeups = per_cpu_array::<u64>(probes, names::KSWAPD_WAKEUPS)?;
    let now = monotonic_ns();
    for node in 0..online_node_limit() {
        let sum: KswapdNode = sum_cell(&nodes, node)?;
        let woke = since.get(&node, 0)?;
        let awake_now = (woke != 0).then(|| now.saturating_sub(woke));
        if sum.wakes > 0 || awake_now.is_some() {
            t.kswapd.push((node, sum, awake_now));
        }
        for zone in 0..MAX_ZONES {
            let n = sum_u64(&wakeups, zone_cell(node, zone))?;
            if n > 0 {
                t.kswapd_wakeups.push((node, zone, n));
            }
        }
    }
    let orders = per_cpu_array::<u64>(probes, names::KSWAPD_WAKEUP_ORDER)?;
    t.kswapd_wakeup_order = (0..ORDERS)
        .map(|i| sum_u64(&orders, i))
        .collect::<Result<_>>()?;
    let wakers: Vec<([u8; 16], u64)> = hash_entries(probes, names::KSWAPD_WAKERS)?;
    for (comm, n) in wakers {
        t.kswapd_wakers.push((comm_to_string(&comm), n));
    }
    t.kswapd_wakers.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    Ok(())
}

/// A kernel task name (NUL-padded) as text; odd bytes become `?`.
pub fn comm_to_string(comm: &[u8]) -> String {
    comm.iter()
        .take_while(|&&b| b != 0)
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '?'
            }
        })
        .collect()
}

/// CLOCK_MONOTONIC in ns: the clock bpf_ktime_get_ns() reads.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Number of node ids worth reading: highest possible node + 1, capped.
fn online_node_limit() -> u32 {
    crate::host::proc::highest_possible_node().map_or(MAX_NODES, |max| (max + 1).min(MAX_NODES))
}

/// A time-series sample: what the maps hold now (already read), with
/// the host's counters beside them.
impl Sample {
    /// Takes a snapshot: kernel maps (already read), /proc/vmstat minus
    /// its value at the start, PSI minus its start, and zoneinfo as is.
    pub fn take(
        t_s: f64,
        totals: &KernelTotals,
        vmstat_start: &VmStat,
        psi_start: Option<Psi>,
    ) -> Sample {
        let now = VmStat::read().unwrap_or_default();
        let d = VmStat::delta(vmstat_start, &now);
        let psi = read_psi().map(|p| {
            let start = psi_start.unwrap_or_default();
            Psi {
                some_us: p.some_us.saturating_sub(start.some_us),
                full_us: p.full_us.saturating_sub(start.full_us),
            }
        });
        Sample {
            t_s,
            direct_reclaims: totals.counter(Counter::DirectReclaims),
            direct_stall_ns: totals.counter(Counter::DirectReclaimNs),
            memcg_reclaims: totals.counter(Counter::MemcgReclaims),
            memcg_stall_ns: totals.counter(Counter::MemcgReclaimNs),
            major_faults_target: totals.counter(Counter::MajorFaultsTarget),
            swap_out_folios: totals.counter(Counter::WriteFolioAnon),
            kswapd_rounds: totals.kswapd.iter().map(|(_, k, _)| k.wakes).sum(),
            pgscan: d.sum(&["pgscan_anon", "pgscan_file"]),
            pgsteal: d.sum(&["pgsteal_anon", "pgsteal_file"]),
            pswpin: d.get("pswpin"),
            pswpout: d.get("pswpout"),
            pgmajfault: d.get("pgmajfault"),
            pgfault: d.get("pgfault"),
            box_bytes: None,
            box_psi: None,
            hists: Default::default(),
            lru: LruSizes::from_snapshot(&now),
            allocstall: d.sum_prefixed("allocstall"),
            psi,
            zones: crate::host::proc::read_zoneinfo(),
        }
    }
}
