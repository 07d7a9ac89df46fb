//! Reading what the probes gathered (per-CPU maps, summed) and the
//! kernel's own counters (/proc/vmstat), which the report sets side by
//! side.

use anyhow::{Context, Result, anyhow};
use aya::maps::{Array, HashMap as AyaHashMap, PerCpuArray};
use vmtrace_common::{
    CgroupStalls, Counter, Counters, Hist, IO_SLOTS, IoStart, KswapdNode, LRU_LISTS, LruIsolate,
    LruShrinkActive, LruShrinkInactive, LruType, MAX_NODES, MAX_ZONES, ORDERS, PRIORITIES,
    ReclaimContext, SplitFamily, SplitPart, SplitTotals, THROTTLE_REASONS, hist::Buckets,
    isolate_cell, lru_cell, names, order_cell, priority_cell, split_counter, zone_cell,
};

use crate::{
    host::proc::read_psi,
    kernel::{
        probes::Probes,
        totals::{KernelTotals, LruRow},
    },
    model::{
        counters::LruSizes,
        sample::{Psi, Sample},
        vmstat::VmStat,
    },
};

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
    // One lookup per slot (65,536): at the close only.
    t.swap_in_flight = swap_in_flight(probes)?;
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
    // The page counts first, the closest to the caller's /proc/vmstat:
    // reading the other maps allocates.
    read_zone_cells(probes, &mut t)?;
    read_hists(probes, &mut t)?;
    read_counters(probes, &mut t)?;
    read_lru(probes, &mut t)?;
    read_priority_and_order(probes, &mut t)?;
    read_kswapd(probes, &mut t)?;
    read_isolate(probes, &mut t)?;
    let reasons = per_cpu_array::<u64>(probes, names::THROTTLE_REASON)?;
    t.throttle_reasons = (0..THROTTLE_REASONS)
        .map(|i| sum_u64(&reasons, i))
        .collect::<Result<_>>()?;
    Ok(t)
}

/// Swap requests in flight now: the `SWAP_IO` slots an issue filled
/// and no completion has emptied (count, sectors).
fn swap_in_flight(probes: &Probes) -> Result<(u64, u64)> {
    let slots: Array<_, IoStart> = Array::try_from(map(probes, names::SWAP_IO)?)?;
    let mut n = (0, 0);
    for i in 0..IO_SLOTS {
        let s = slots.get(&i, 0)?;
        if s.start_ns != 0 {
            n = (n.0 + 1, n.1 + u64::from(s.nr_sector));
        }
    }
    Ok(n)
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
/// the host's counters beside them: /proc/vmstat minus its value at the
/// start, PSI minus its start, and zoneinfo as is.
pub fn take_sample(
    t_s: f64,
    totals: &KernelTotals,
    vmstat_start: &VmStat,
    psi_start: Option<Psi>,
) -> Sample {
    let now = crate::host::proc::read_vmstat().unwrap_or_default();
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
