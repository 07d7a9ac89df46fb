//! Fills the model's run report from what the kernel side measured: the
//! eBPF maps' totals, the swap layout, the zones, the OOM victims.

use vmtrace_common::{Counter, Hist};

use crate::{
    host::swapdev::SwapLayout,
    kernel::collect::{KernelTotals, comm_to_string},
    model::{
        histogram::summarize,
        report::*,
        sample::{Sample, time_below},
    },
};

impl RunReport {
    /// Fills the eBPF-derived sections; `enabled` says which metrics ran.
    pub fn add_kernel_totals(&mut self, totals: &KernelTotals, enabled: &dyn Fn(&str) -> bool) {
        let reclaim = |h: Hist, pages: Counter| ReclaimReport {
            stalls: summarize(totals.hist(h)),
            pages_reclaimed: totals.counter(pages),
        };
        if enabled("direct_reclaim") {
            self.direct_reclaim = Some(reclaim(Hist::DirectReclaim, Counter::DirectReclaimPages));
        }
        if enabled("memcg_reclaim") {
            self.memcg_reclaim = Some(reclaim(Hist::MemcgReclaim, Counter::MemcgReclaimPages));
        }
        if enabled("lru_shrink_inactive") {
            self.lru_shrink_inactive = Some(
                totals
                    .lru
                    .iter()
                    .map(|r| LruRowReport {
                        node: r.node,
                        context: r.context.name().into(),
                        lru: r.lru.name().into(),
                        totals: r.totals,
                    })
                    .collect(),
            );
            self.reclaim_priority = totals
                .priority
                .iter()
                .map(|(c, counts)| PriorityRow {
                    context: c.name().into(),
                    counts: counts.clone(),
                })
                .collect();
        }
        if enabled("lru_shrink_active") {
            self.lru_shrink_active = Some(
                totals
                    .lru_active
                    .iter()
                    .map(|r| LruActiveRowReport {
                        node: r.node,
                        context: r.context.name().into(),
                        lru: r.lru.name().into(),
                        totals: r.totals,
                    })
                    .collect(),
            );
        }
        self.reclaim_order = totals
            .order
            .iter()
            .map(|(c, counts)| OrderRow {
                context: c.name().into(),
                counts: counts.clone(),
            })
            .collect();
        let mut stallers: Vec<StallerReport> = totals
            .stallers
            .iter()
            .map(|(pid, s)| StallerReport {
                pid: *pid,
                comm: comm_to_string(&s.comm),
                target: s.target != 0,
                direct_stalls: s.direct_count,
                direct_ns: s.direct_ns,
                memcg_stalls: s.memcg_count,
                memcg_ns: s.memcg_ns,
            })
            .collect();
        stallers.sort_by_key(|s| std::cmp::Reverse(s.direct_ns + s.memcg_ns));
        stallers.truncate(10);
        self.top_stallers = stallers;
        if enabled("lru_isolate") {
            self.lru_isolate = Some(
                totals
                    .isolate
                    .iter()
                    .map(|(zone, lru, i)| IsolateRow {
                        highest_zone_idx: *zone,
                        lru: *lru,
                        totals: *i,
                    })
                    .collect(),
            );
        }
        if enabled("slab_shrink") {
            self.slab_shrink = Some(SlabReport {
                calls: summarize(totals.hist(Hist::SlabShrink)),
                objects_freed: totals.counter(Counter::SlabFreed),
            });
        }
        if enabled("throttle") {
            let r = |i: usize| totals.throttle_reasons.get(i).copied().unwrap_or(0);
            self.throttle = Some(ThrottleReport {
                delays: summarize(totals.hist(Hist::Throttle)),
                writeback: r(0),
                isolated: r(1),
                noprogress: r(2),
                congested: r(3),
                all_tasks: totals.counter(Counter::ThrottledAll),
            });
        }
        if enabled("compaction") {
            self.compaction = Some(CompactionReport {
                runs: summarize(totals.hist(Hist::Compaction)),
                all_tasks: totals.counter(Counter::CompactionsAll),
            });
        }
        if enabled("swap_out") {
            self.swap_out = Some(SwapOutReport {
                anon_folios: totals.counter(Counter::WriteFolioAnon),
                file_folios: totals.counter(Counter::WriteFolioFile),
            });
        }
        if enabled("major_fault") {
            self.faults.major_all = Some(totals.counter(Counter::MajorFaultsAll));
            self.faults.major_target = Some(totals.counter(Counter::MajorFaultsTarget));
        }
        if enabled("kernel_faults") {
            self.faults.kernel_mode_target = Some(totals.counter(Counter::KernelFaultsTarget));
        }
        if enabled("process_faults") {
            self.delays = Some(DelayReport {
                accounting_on: false,
                blkio_ns: totals.counter(Counter::DelayBlkioNs),
                swapin_ns: totals.counter(Counter::DelaySwapinNs),
                freepages_ns: totals.counter(Counter::DelayFreepagesNs),
                thrashing_ns: totals.counter(Counter::DelayThrashingNs),
                compact_ns: totals.counter(Counter::DelayCompactNs),
                cpu_ns: totals.counter(Counter::DelayCpuNs),
            });
            let mut top: Vec<ProcessFaults> = totals
                .processes
                .iter()
                .map(|(pid, p)| ProcessFaults {
                    pid: *pid,
                    comm: comm_to_string(&p.comm),
                    threads: p.threads,
                    minor: p.min_flt,
                    major: p.maj_flt,
                })
                .collect();
            let totals_row = ProcessFaultTotals {
                processes: top.len() as u64,
                threads: top.iter().map(|p| p.threads).sum(),
                minor: top.iter().map(|p| p.minor).sum(),
                major: top.iter().map(|p| p.major).sum(),
                top: Vec::new(),
            };
            top.sort_by_key(|p| std::cmp::Reverse((p.major, p.minor)));
            top.truncate(10);
            self.faults.processes = Some(ProcessFaultTotals { top, ..totals_row });
        }
        if enabled("fault_latency") {
            self.faults.minor_target = Some(totals.counter(Counter::MinorFaultsTarget));
            self.faults.minor_latency = Some(summarize(totals.hist(Hist::MinorFault)));
            self.faults.major_latency = Some(summarize(totals.hist(Hist::MajorFault)));
            let mut times: Vec<ProcessFaultTime> = totals
                .process_fault_time
                .iter()
                .map(|(pid, t)| ProcessFaultTime {
                    pid: *pid,
                    comm: totals
                        .processes
                        .iter()
                        .find(|(p, _)| p == pid)
                        .map(|(_, p)| comm_to_string(&p.comm))
                        .unwrap_or_default(),
                    minor: t.minor,
                    minor_ns: t.minor_ns,
                    major: t.major,
                    major_ns: t.major_ns,
                    max_ns: t.max_ns,
                })
                .collect();
            times.sort_by_key(|t| std::cmp::Reverse(t.minor_ns + t.major_ns));
            times.truncate(10);
            self.faults.process_time = Some(times);
        }
        self.dropped = Dropped {
            reclaim_start_map_full: totals.counter(Counter::ReclaimStartDropped),
            reclaim_end_without_begin: totals.counter(Counter::ReclaimEndUnmatched),
            fault_start_map_full: totals.counter(Counter::FaultStartDropped),
            node_out_of_range: totals.counter(Counter::NodeOutOfRange),
            oom_records_lost: totals.counter(Counter::OomRecordsDropped),
            swap_io_map_full: totals.counter(Counter::SwapIoStartDropped),
            evicted: [
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
            .collect(),
            program_misses: Vec::new(),
        };
    }

    /// Adds the kswapd section. `cpu` is (node, seconds before, after);
    /// `zones` names zone indices per node (from /proc/zoneinfo).
    pub fn add_kswapd(
        &mut self,
        totals: &KernelTotals,
        cpu: &[(u32, f64, f64)],
        zones: &[(u32, Vec<String>)],
    ) {
        let mut k = KswapdReport::default();
        for &(node, before, after) in cpu {
            let (wakes, awake_ns) = totals
                .kswapd
                .iter()
                .find(|(n, _, _)| *n == node)
                .map_or((0, 0), |(_, t, open)| {
                    (t.wakes, t.awake_ns + open.unwrap_or(0))
                });
            k.nodes.push(KswapdNodeReport {
                node,
                wakes,
                awake_s: awake_ns as f64 / 1e9,
                cpu_s: (after - before).max(0.0),
            });
        }
        let periods = totals.hist(Hist::KswapdAwake);
        if periods.iter().any(|&n| n > 0) {
            k.awake_periods = Some(summarize(periods));
        }
        k.wakeups = totals
            .kswapd_wakeups
            .iter()
            .map(|&(node, zid, count)| ZoneCount {
                node,
                zone: zones
                    .iter()
                    .find(|(n, _)| *n == node)
                    .and_then(|(_, z)| z.get(zid as usize).cloned())
                    .unwrap_or_else(|| format!("zone{zid}")),
                count,
            })
            .collect();
        k.wakeup_orders = totals.kswapd_wakeup_order.clone();
        k.wakers = totals
            .kswapd_wakers
            .iter()
            .take(10)
            .map(|(name, count)| NameCount {
                name: name.clone(),
                count: *count,
            })
            .collect();
        self.kswapd = Some(k);
    }

    pub fn add_swap_io(&mut self, totals: &KernelTotals, layout: &SwapLayout) {
        self.swap_io = Some(SwapIoReport {
            areas: layout.areas.clone(),
            truncated: layout.truncated,
            write: summarize(totals.hist(Hist::SwapWrite)),
            write_bytes: totals.counter(Counter::SwapWriteSectors) * 512,
            read: summarize(totals.hist(Hist::SwapRead)),
            read_bytes: totals.counter(Counter::SwapReadSectors) * 512,
        });
    }

    /// Builds the zone table from the kernel totals and the samples.
    pub fn add_zones(&mut self, totals: &KernelTotals, samples: &[Sample], page_alloc: bool) {
        let Some(last) = samples.last() else { return };
        let below = time_below(samples);
        for (idx, z) in last.zones.iter().enumerate() {
            // Zone index within its node = position among the node's zones.
            let zid = last.zones[..idx]
                .iter()
                .filter(|o| o.node == z.node)
                .count() as u32;
            let iso = |f: fn(&vmtrace_common::LruIsolate) -> u64| -> u64 {
                totals
                    .isolate
                    .iter()
                    .filter(|(zone, _, _)| *zone == zid)
                    .map(|(_, _, i)| f(i))
                    .sum()
            };
            let (below_low_s, below_min_s) = below
                .iter()
                .find(|b| b.0 == z.node && b.1 == z.zone)
                .map_or((0.0, 0.0), |b| (b.2, b.3));
            let row = ZoneRow {
                node: z.node,
                zone: z.zone.clone(),
                kswapd_wakeups: totals
                    .kswapd_wakeups
                    .iter()
                    .filter(|w| w.0 == z.node && w.1 == zid)
                    .map(|w| w.2)
                    .sum(),
                isolate_scanned: iso(|i| i.nr_scanned),
                isolate_skipped: iso(|i| i.nr_skipped),
                isolate_taken: iso(|i| i.nr_taken),
                reclaim_retries: totals
                    .retry_zone
                    .iter()
                    .filter(|r| r.0 == z.node && r.1 == zid)
                    .map(|r| r.2)
                    .sum(),
                below_low_s,
                below_min_s,
                allocated_pages: page_alloc.then(|| {
                    totals
                        .page_alloc
                        .iter()
                        .filter(|a| a.0 == z.node && a.1 == zid)
                        .map(|a| a.2)
                        .sum()
                }),
            };
            // Empty zones (Movable, Device) still show when allocations
            // named them as their highest zone.
            let busy = row.kswapd_wakeups + row.isolate_scanned + row.reclaim_retries > 0;
            if z.managed > 0 || busy {
                self.zones.push(row);
            }
        }
    }

    /// Adds the OOM victims read from the ring buffer; `start_ns` is the
    /// CLOCK_MONOTONIC time the command started.
    pub fn add_oom_victims(&mut self, victims: &[vmtrace_common::OomVictim], start_ns: u64) {
        self.oom_victims = Some(
            victims
                .iter()
                .map(|v| OomVictimReport {
                    time_s: v.time_ns.saturating_sub(start_ns) as f64 / 1e9,
                    pid: v.pid,
                    comm: comm_to_string(&v.comm),
                    target: v.target != 0,
                    total_vm_kb: v.total_vm_kb,
                    anon_rss_kb: v.anon_rss_kb,
                    file_rss_kb: v.file_rss_kb,
                    shmem_rss_kb: v.shmem_rss_kb,
                })
                .collect(),
        );
    }
}
