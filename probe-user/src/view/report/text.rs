//! The plain-text report: ASCII, at most 72 columns, so that it survives
//! a mailing list. Only formatting: every number comes from the model in
//! `report`.

use std::fmt::Write as _;

use vmtrace_common::hist::{BUCKETS, SUB, bucket_lower};

use crate::model::report::{LruRowReport, RunReport};
use crate::{model::histogram::Summary, model::units::human};

impl RunReport {
    pub(super) fn write_text(&self, o: &mut String) -> std::fmt::Result {
        for line in self.oom_lines() {
            writeln!(o, "{line}")?;
        }
        if !self.attached {
            writeln!(o, "{}", self.time_line())?;
        }
        if let Some(line) = self.kswapd_line() {
            writeln!(o, "{line}")?;
        }
        writeln!(o)?;
        writeln!(
            o,
            "vmtrace {} on Linux {}",
            self.vmtrace_version, self.kernel_release
        )?;
        for line in wrap(&format!("command: {}", self.command.join(" ")), 72) {
            writeln!(o, "{line}")?;
        }
        if let Some(user) = &self.run_as {
            writeln!(o, "run as: {user}, who ran sudo")?;
        }
        if let Some(b) = &self.membox {
            let mem = b.mem_limit_bytes.map_or("no limit".to_string(), |m| {
                format!(
                    "{} (cgroup {})",
                    human(m),
                    b.cgroup_version.map_or("?", |v| match v {
                        crate::model::report::CgroupVersion::V1 => "v1",
                        crate::model::report::CgroupVersion::V2 => "v2",
                    })
                )
            });
            let swap = b.swap_bytes.map_or("none added".to_string(), human);
            for line in wrap(&format!("box: memory {mem}, swapfile {swap}"), 72) {
                writeln!(o, "{line}")?;
            }
        }
        for line in wrap(&format!("target: {}", self.target), 72) {
            writeln!(o, "{line}")?;
        }
        writeln!(o)?;

        let e = &self.exit;
        let status = match (e.code, e.signal) {
            (Some(c), _) => format!("exited with status {c}"),
            (None, Some(s)) => format!("killed by signal {s} ({})", signal_name(s)),
            _ => "unknown".into(),
        };
        let mut status = status;
        if e.oom_killed {
            status.push_str(", OOM-killed by the box's memcg");
        }
        if e.interrupted {
            status.push_str(" (vmtrace interrupted)");
        }
        let u = &self.usage;
        if self.attached {
            // Not vmtrace's children: no exit status, no rusage.
            let how = if e.interrupted {
                "stopped by a signal"
            } else {
                "ended"
            };
            writeln!(o, "attached: {:.2} s, {how}", u.wall_s)?;
        } else {
            writeln!(o, "exit:     {status}")?;
            writeln!(
                o,
                "time:     {:.2} s elapsed, {:.2} s user, {:.2} s system",
                u.wall_s, u.user_s, u.sys_s
            )?;
            writeln!(
                o,
                "faults:   {} minor, {} major (rusage)",
                u.minor_faults, u.major_faults
            )?;
        }
        let mut mem = format!("memory:   max RSS {}", human(u.max_rss_bytes));
        if let Some(b) = &self.membox {
            if let Some(p) = b.peak_bytes {
                let _ = write!(mem, ", box peak {}", human(p));
            }
            if let Some(k) = b.oom_kills {
                let _ = write!(mem, ", {k} OOM kill(s)");
            }
        }
        if !self.attached {
            writeln!(o, "{mem}")?;
        }
        let v = &self.vmstat;
        writeln!(
            o,
            "swap:     {} pages out, {} pages in (/proc/vmstat)",
            v.pswpout, v.pswpin
        )?;
        if self.untraced {
            writeln!(o)?;
            writeln!(
                o,
                "untraced (--no-probes): nothing was attached; times, rusage"
            )?;
            writeln!(o, "and /proc/vmstat only (a baseline for overhead).")?;
            return Ok(());
        }

        for (title, r) in [
            ("direct reclaim", &self.direct_reclaim),
            ("memcg reclaim", &self.memcg_reclaim),
        ] {
            let Some(r) = r else { continue };
            writeln!(o)?;
            writeln!(
                o,
                "{title}: {} stalls, {} stalled, {} pages reclaimed",
                r.stalls.count,
                fmt_ns(r.stalls.total_ns),
                r.pages_reclaimed
            )?;
            write_hist(o, &r.stalls)?;
        }

        if !self.top_stallers.is_empty() {
            writeln!(o)?;
            writeln!(o, "processes stalled most in reclaim (* = the command's)")?;
            writeln!(
                o,
                "  {:>8} {:<16} {:>8} {:>9} {:>8} {:>9}",
                "pid", "comm", "direct", "stalled", "memcg", "stalled"
            )?;
            for t in &self.top_stallers {
                writeln!(
                    o,
                    "{} {:>8} {:<16} {:>8} {:>9} {:>8} {:>9}",
                    if t.target { '*' } else { ' ' },
                    t.pid,
                    t.comm,
                    t.direct_stalls,
                    fmt_ns(t.direct_ns),
                    t.memcg_stalls,
                    fmt_ns(t.memcg_ns)
                )?;
            }
        }
        for r in &self.reclaim_order {
            writeln!(o)?;
            let pairs = nonzero_pairs(&r.counts, |i| {
                if i + 1 == r.counts.len() {
                    format!("{i}+")
                } else {
                    i.to_string()
                }
            });
            for line in wrap(
                &format!("{} reclaims by allocation order: {pairs}", r.context),
                72,
            ) {
                writeln!(o, "{line}")?;
            }
        }

        if let Some(rows) = &self.lru_shrink_inactive {
            writeln!(o)?;
            writeln!(o, "LRU shrink inactive (all tasks; vmstat: pgscan/pgsteal)")?;
            writeln!(
                o,
                "  {:>4} {:<7} {:<4} {:>8} {:>12} {:>12} {:>6}",
                "node", "context", "lru", "events", "scanned", "reclaimed", "eff%"
            )?;
            for r in rows {
                writeln!(
                    o,
                    "  {:>4} {:<7} {:<4} {:>8} {:>12} {:>12} {:>6}",
                    r.node,
                    r.context,
                    r.lru,
                    r.totals.events,
                    r.totals.nr_scanned,
                    r.totals.nr_reclaimed,
                    pct(r.totals.nr_reclaimed, r.totals.nr_scanned)
                )?;
            }
            let (s, r) = self.lru_totals().unwrap_or_default();
            writeln!(o, "  {:<27} {:>12} {:>12} {:>6}", "total", s, r, pct(r, s))?;
            writeln!(
                o,
                "  {:<27} {:>12} {:>12}",
                "/proc/vmstat", v.pgscan, v.pgsteal
            )?;
            if u.wall_s > 0.0 {
                writeln!(
                    o,
                    "  velocity {:.0} pages scanned/s, {:.0} reclaimed/s",
                    s as f64 / u.wall_s,
                    r as f64 / u.wall_s
                )?;
            }
            write_kept_back(o, rows)?;
        }
        for p in &self.reclaim_priority {
            let pairs = nonzero_pairs(&p.counts, |i| i.to_string());
            let text = format!(
                "{} shrinks by priority (12 mildest, 0 last resort): {pairs}",
                p.context
            );
            for line in wrap(&text, 72) {
                writeln!(o, "{line}")?;
            }
        }
        if let Some(rows) = &self.lru_shrink_active
            && !rows.is_empty()
        {
            writeln!(o)?;
            writeln!(o, "LRU shrink active (all tasks)")?;
            writeln!(
                o,
                "  {:<7} {:<4} {:>11} {:>11} {:>12} {:>12}",
                "context", "lru", "taken", "kept active", "deactivated", "referenced"
            )?;
            for r in rows {
                writeln!(
                    o,
                    "  {:<7} {:<4} {:>11} {:>11} {:>12} {:>12}",
                    r.context,
                    r.lru,
                    r.totals.nr_taken,
                    r.totals.nr_active,
                    r.totals.nr_deactivated,
                    r.totals.nr_referenced
                )?;
            }
        }
        if let Some(t) = &self.throttle {
            writeln!(o)?;
            writeln!(
                o,
                "reclaim throttling: {} waits, {} asleep ({} of all tasks)",
                t.delays.count,
                fmt_ns(t.delays.total_ns),
                t.all_tasks
            )?;
            writeln!(
                o,
                "  reasons: writeback {}, isolated {}, noprogress {}, congested {}",
                t.writeback, t.isolated, t.noprogress, t.congested
            )?;
            if t.delays.count > 0 {
                write_hist(o, &t.delays)?;
            }
        }
        if let Some(c) = &self.compaction {
            writeln!(o)?;
            writeln!(
                o,
                "compaction: {} runs, {} ({} runs of all tasks)",
                c.runs.count,
                fmt_ns(c.runs.total_ns),
                c.all_tasks
            )?;
            if c.runs.count > 0 {
                write_hist(o, &c.runs)?;
            }
        }
        if let Some(sl) = &self.slab_shrink {
            writeln!(o)?;
            writeln!(
                o,
                "slab shrinking (all tasks): {} shrinker calls, {}, {} freed",
                sl.calls.count,
                fmt_ns(sl.calls.total_ns),
                sl.objects_freed
            )?;
            if sl.calls.count > 0 {
                write_hist(o, &sl.calls)?;
            }
        }
        if let Some(w) = &self.swap_out {
            writeln!(o)?;
            writeln!(
                o,
                "swap-out: {} anon folios written by reclaim (pswpout {})",
                w.anon_folios, v.pswpout
            )?;
            writeln!(o, "file writeback by reclaim: {} folios", w.file_folios)?;
        }
        if let Some(io) = &self.swap_io {
            writeln!(o)?;
            if io.areas.is_empty() {
                writeln!(o, "swap I/O: no swap area was active")?;
            } else {
                for (title, s, bytes) in [
                    ("swap writes", &io.write, io.write_bytes),
                    ("swap reads", &io.read, io.read_bytes),
                ] {
                    writeln!(
                        o,
                        "{title}: {} requests, {}, issue to completion",
                        s.count,
                        human(bytes)
                    )?;
                    if s.count > 0 {
                        write_hist(o, s)?;
                    }
                }
                if io.truncated {
                    writeln!(o, "  (swap areas too fragmented: some requests missed)")?;
                }
            }
        }
        if let Some(k) = &self.kswapd {
            writeln!(o)?;
            writeln!(o, "kswapd (system-wide)")?;
            writeln!(
                o,
                "  {:>4} {:>8} {:>10} {:>10}",
                "node", "wakes", "awake", "cpu"
            )?;
            for n in &k.nodes {
                writeln!(
                    o,
                    "  {:>4} {:>8} {:>9.2}s {:>9.2}s",
                    n.node, n.wakes, n.awake_s, n.cpu_s
                )?;
            }
            if let Some(p) = &k.awake_periods {
                writeln!(o, "kswapd awake periods: {} in all", p.count)?;
                write_hist(o, p)?;
            }
            if !k.wakeups.is_empty() {
                let z: Vec<String> = k
                    .wakeups
                    .iter()
                    .map(|w| format!("node {} {} {}", w.node, w.zone, w.count))
                    .collect();
                let text = format!(
                    "  wakeups by highest zone of the allocation: {}",
                    z.join(", ")
                );
                for line in wrap(&text, 72) {
                    writeln!(o, "{line}")?;
                }
            }
            if k.wakeup_orders.iter().any(|&n| n > 0) {
                let last = k.wakeup_orders.len().saturating_sub(1);
                let pairs = nonzero_pairs(&k.wakeup_orders, |i| {
                    if i == last {
                        format!("{i}+")
                    } else {
                        i.to_string()
                    }
                });
                writeln!(o, "  wakeups by allocation order: {pairs}")?;
            }
            if !k.wakers.is_empty() {
                let w: Vec<String> = k
                    .wakers
                    .iter()
                    .map(|w| format!("{} {}", w.name, w.count))
                    .collect();
                for line in wrap(&format!("  woken by: {}", w.join(", ")), 72) {
                    writeln!(o, "{line}")?;
                }
            }
        }
        if let Some(victims) = &self.oom_victims
            && !victims.is_empty()
        {
            writeln!(o)?;
            writeln!(o, "OOM victims (* = OOM hit by the command's tasks)")?;
            writeln!(
                o,
                "  {:>8} {:>8} {:<16} {:>10} {:>10} {:>10}",
                "time", "pid", "comm", "anon-rss", "file-rss", "total-vm"
            )?;
            for k in victims {
                writeln!(
                    o,
                    "{} {:>7.2}s {:>8} {:<16} {:>10} {:>10} {:>10}",
                    if k.target { '*' } else { ' ' },
                    k.time_s,
                    k.pid,
                    k.comm,
                    human(k.anon_rss_kb * 1024),
                    human(k.file_rss_kb * 1024),
                    human(k.total_vm_kb * 1024)
                )?;
            }
        }

        if !self.zones.is_empty() {
            writeln!(o)?;
            writeln!(
                o,
                "zones (isolation and kswapd wakeups by highest allowed zone)"
            )?;
            writeln!(
                o,
                "  {:<9} {:>7} {:>9} {:>9} {:>9} {:>7} {:>6} {:>6}",
                "zone", "kswapd", "isolated", "skipped", "taken", "retries", "<low", "<min"
            )?;
            for z in &self.zones {
                writeln!(
                    o,
                    "  {:<9} {:>7} {:>9} {:>9} {:>9} {:>7} {:>5.1}s {:>5.1}s",
                    format!("{}/{}", z.node, z.zone),
                    z.kswapd_wakeups,
                    z.isolate_scanned,
                    z.isolate_skipped,
                    z.isolate_taken,
                    z.reclaim_retries,
                    z.below_low_s,
                    z.below_min_s
                )?;
            }
        }
        let allocs: Vec<String> = self
            .zones
            .iter()
            .filter_map(|z| Some(format!("{}/{} {}", z.node, z.zone, z.allocated_pages?)))
            .collect();
        if !allocs.is_empty() {
            let text = format!("  pages allocated per zone: {}", allocs.join(", "));
            for line in wrap(&text, 72) {
                writeln!(o, "{line}")?;
            }
        }
        write_timeline(o, &self.timeline)?;

        let f = &self.faults;
        if f.major_all.is_some() || f.minor_latency.is_some() || f.processes.is_some() {
            writeln!(o)?;
            writeln!(o, "page faults")?;
            if let (Some(all), Some(t)) = (f.major_all, f.major_target) {
                writeln!(
                    o,
                    "  major, target tasks   {t:>12}   rusage {:>12}",
                    u.major_faults
                )?;
                writeln!(
                    o,
                    "  major, all tasks      {all:>12}   vmstat {:>12}",
                    v.pgmajfault
                )?;
            }
            if let Some(k) = f.kernel_mode_target {
                writeln!(o, "  kernel-mode, target   {k:>12}")?;
            }
            if let Some(p) = &f.processes {
                writeln!(
                    o,
                    "  by process, at exit   {:>12} minor {:>12} major",
                    p.minor, p.major
                )?;
                writeln!(
                    o,
                    "  ({} processes, {} threads; includes get_user_pages faults)",
                    p.processes, p.threads
                )?;
                writeln!(
                    o,
                    "  {:>8} {:<16} {:>7} {:>12} {:>12}",
                    "pid", "comm", "threads", "minor", "major"
                )?;
                for t in &p.top {
                    writeln!(
                        o,
                        "  {:>8} {:<16} {:>7} {:>12} {:>12}",
                        t.pid, t.comm, t.threads, t.minor, t.major
                    )?;
                }
            }
            if let Some(m) = f.minor_target {
                writeln!(
                    o,
                    "  minor, target tasks   {m:>12}   rusage {:>12}",
                    u.minor_faults
                )?;
            }
            if let Some(times) = &f.process_time
                && !times.is_empty()
            {
                writeln!(o)?;
                writeln!(o, "fault time by process (--fault-latency)")?;
                writeln!(
                    o,
                    "  {:>8} {:<16} {:>9} {:>7} {:>8} {:>7} {:>7}",
                    "pid", "comm", "minor", "time", "major", "time", "max"
                )?;
                for t in times {
                    writeln!(
                        o,
                        "  {:>8} {:<16} {:>9} {:>7} {:>8} {:>7} {:>7}",
                        t.pid,
                        t.comm,
                        t.minor,
                        fmt_ns(t.minor_ns),
                        t.major,
                        fmt_ns(t.major_ns),
                        fmt_ns(t.max_ns)
                    )?;
                }
            }
            for (title, s) in [
                ("minor fault latency", &f.minor_latency),
                ("major fault latency", &f.major_latency),
            ] {
                if let Some(s) = s {
                    writeln!(o)?;
                    writeln!(
                        o,
                        "{title}: {} faults, {} in all",
                        s.count,
                        fmt_ns(s.total_ns)
                    )?;
                    writeln!(o, "  (faults taken through get_user_pages are not timed)")?;
                    write_hist(o, s)?;
                }
            }
        }

        if let Some(d) = &self.delays {
            writeln!(o)?;
            writeln!(o, "delay accounting (the kernel's, target threads at exit)")?;
            if d.accounting_on {
                let stalls = self
                    .direct_reclaim
                    .as_ref()
                    .map_or(0, |r| r.stalls.total_ns)
                    + self.memcg_reclaim.as_ref().map_or(0, |r| r.stalls.total_ns);
                writeln!(
                    o,
                    "  reclaim {:>8}  (eBPF reclaim stalls {})",
                    fmt_ns(d.freepages_ns),
                    fmt_ns(stalls)
                )?;
                writeln!(
                    o,
                    "  swap-in {:>8}  thrashing {:>8}  compaction {:>8}",
                    fmt_ns(d.swapin_ns),
                    fmt_ns(d.thrashing_ns),
                    fmt_ns(d.compact_ns)
                )?;
                writeln!(
                    o,
                    "  block I/O {:>6}  waiting for a CPU {:>8}",
                    fmt_ns(d.blkio_ns),
                    fmt_ns(d.cpu_ns)
                )?;
            } else {
                writeln!(o, "  off: kernel.task_delayacct could not be turned on")?;
            }
        }

        if let Some(costs) = &self.program_costs {
            writeln!(o)?;
            writeln!(
                o,
                "eBPF program cost (--bpf-stats; kernel.bpf_stats_enabled)"
            )?;
            writeln!(
                o,
                "  {:<28} {:>12} {:>10} {:>10}",
                "program", "runs", "total", "per run"
            )?;
            let mut rows: Vec<_> = costs.iter().filter(|c| c.runs > 0).collect();
            rows.sort_by_key(|c| std::cmp::Reverse(c.run_ns));
            for c in rows {
                writeln!(
                    o,
                    "  {:<28} {:>12} {:>10} {:>10}",
                    c.program,
                    c.runs,
                    fmt_ns(c.run_ns),
                    format!("{}ns", c.run_ns / c.runs.max(1))
                )?;
            }
        }

        if let Some(c) = &self.collector {
            writeln!(o)?;
            writeln!(
                o,
                "vmtrace itself: attach {:.2} s, CPU {:.2} s user + {:.2} s sys,",
                c.attach_s, c.user_s, c.sys_s
            )?;
            writeln!(o, "  peak RSS {}", human(c.max_rss_bytes))?;
        }

        let d = &self.dropped;
        if !d.evicted.is_empty() {
            writeln!(o)?;
            let list: Vec<String> = d.evicted.iter().map(|(m, n)| format!("{m} {n}")).collect();
            let text = format!(
                "warning: rows evicted from full tables (their totals are short): {}",
                list.join(", ")
            );
            for line in wrap(&text, 72) {
                writeln!(o, "{line}")?;
            }
        }
        if !d.program_misses.is_empty() {
            writeln!(o)?;
            let list: Vec<String> = d
                .program_misses
                .iter()
                .map(|(p, n)| format!("{p} {n}"))
                .collect();
            let text = format!(
                "warning: events skipped by the kernel (program would have nested \
                 in another BPF program on its CPU): {}",
                list.join(", ")
            );
            for line in wrap(&text, 72) {
                writeln!(o, "{line}")?;
            }
        }
        let lost = d.reclaim_start_map_full
            + d.fault_start_map_full
            + d.node_out_of_range
            + d.oom_records_lost
            + d.swap_io_map_full;
        if lost > 0 || d.reclaim_end_without_begin > 0 {
            writeln!(o)?;
            writeln!(
                o,
                "warning: events not accounted: {} reclaim starts (map full),",
                d.reclaim_start_map_full
            )?;
            writeln!(
                o,
                "  {} fault starts (map full), {} bad node ids, {} reclaim ends",
                d.fault_start_map_full, d.node_out_of_range, d.reclaim_end_without_begin
            )?;
            writeln!(o, "  without a begin (reclaims already running at attach),")?;
            writeln!(
                o,
                "  {} OOM victim records (ring buffer full), {} swap I/Os (map full)",
                d.oom_records_lost, d.swap_io_map_full
            )?;
        }
        if !self.unavailable.is_empty() || !self.partial.is_empty() {
            writeln!(o)?;
            let notices = self
                .unavailable
                .iter()
                .map(|u| (u, "unavailable"))
                .chain(self.partial.iter().map(|u| (u, "incomplete")));
            for (u, what) in notices {
                let text = format!("notice: {} {what}: {}", u.metric, u.reason);
                for line in wrap(&text, 72) {
                    writeln!(o, "{line}")?;
                }
            }
        }
        Ok(())
    }
}

/// "why scanned pages were not reclaimed": reasons down, the busiest
/// (context, lru) pairs across (at most 4 columns), summed over nodes.
fn write_kept_back(o: &mut String, rows: &[LruRowReport]) -> std::fmt::Result {
    let mut cols: Vec<LruRowReport> = Vec::new();
    for r in rows {
        let i = match cols
            .iter()
            .position(|c| c.context == r.context && c.lru == r.lru)
        {
            Some(i) => i,
            None => {
                cols.push(LruRowReport {
                    context: r.context.clone(),
                    lru: r.lru.clone(),
                    ..Default::default()
                });
                cols.len() - 1
            }
        };
        cols[i].totals += r.totals;
    }
    cols.sort_by_key(|c| std::cmp::Reverse(c.totals.nr_scanned));
    cols.truncate(4);
    if cols.is_empty() {
        return Ok(());
    }
    writeln!(o, "  scanned but kept back (pages)")?;
    let mut head = format!("  {:<16}", "");
    for c in &cols {
        let _ = write!(head, " {:>12}", format!("{}/{}", c.context, c.lru));
    }
    writeln!(o, "{head}")?;
    type Get = fn(&LruRowReport) -> u64;
    let reasons: [(&str, Get); 8] = [
        ("dirty", |c| c.totals.nr_dirty),
        ("writeback", |c| c.totals.nr_writeback),
        ("congested", |c| c.totals.nr_congested),
        ("immediate", |c| c.totals.nr_immediate),
        ("activated anon", |c| c.totals.nr_activate_anon),
        ("activated file", |c| c.totals.nr_activate_file),
        ("referenced kept", |c| c.totals.nr_ref_keep),
        ("unmap failed", |c| c.totals.nr_unmap_fail),
    ];
    for (name, get) in reasons {
        let mut line = format!("  {name:<16}");
        for c in &cols {
            let _ = write!(line, " {:>12}", get(c));
        }
        writeln!(o, "{line}")?;
    }
    Ok(())
}

/// The time line: per step, rates over the step (at most 20 rows: steps
/// are merged on long runs), stall time and PSI.
fn write_timeline(o: &mut String, samples: &[crate::model::sample::Sample]) -> std::fmt::Result {
    if samples.len() < 2 {
        return Ok(());
    }
    let step = samples.len().div_ceil(20);
    writeln!(o)?;
    writeln!(
        o,
        "time line (per second over each step; stall = reclaim stall time)"
    )?;
    writeln!(
        o,
        "  {:>7} {:>9} {:>9} {:>8} {:>8} {:>8} {:>7} {:>5}",
        "t", "pgscan/s", "steal/s", "swpout/s", "swpin/s", "majflt/s", "stall", "psi%"
    )?;
    let mut prev: Option<&crate::model::sample::Sample> = None;
    for s in samples.iter().skip(step - 1).step_by(step).chain(
        // Always end with the last sample.
        samples
            .last()
            .filter(|_| !(samples.len() - step).is_multiple_of(step)),
    ) {
        let zero = crate::model::sample::Sample::default();
        let p = prev.unwrap_or(&zero);
        let dt = (s.t_s - p.t_s).max(1e-9);
        let rate = |a: u64, b: u64| format!("{:.0}", a.saturating_sub(b) as f64 / dt);
        let stall = (s.memcg_stall_ns + s.direct_stall_ns)
            .saturating_sub(p.memcg_stall_ns + p.direct_stall_ns);
        let psi = match (s.psi, p.psi) {
            (Some(a), Some(b)) => format!(
                "{:.0}",
                a.some_us.saturating_sub(b.some_us) as f64 / (dt * 1e4)
            ),
            (Some(a), None) => format!("{:.0}", a.some_us as f64 / (dt * 1e4)),
            _ => "-".into(),
        };
        writeln!(
            o,
            "  {:>6.1}s {:>9} {:>9} {:>8} {:>8} {:>8} {:>7} {:>5}",
            s.t_s,
            rate(s.pgscan, p.pgscan),
            rate(s.pgsteal, p.pgsteal),
            rate(s.pswpout, p.pswpout),
            rate(s.pswpin, p.pswpin),
            rate(s.major_faults_target, p.major_faults_target),
            fmt_ns(stall),
            psi
        )?;
        prev = Some(s);
    }
    Ok(())
}

/// `i:count` for the non-zero counts, highest index first.
fn nonzero_pairs(counts: &[u64], label: impl Fn(usize) -> String) -> String {
    let pairs: Vec<String> = counts
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, n)| **n > 0)
        .map(|(i, n)| format!("{}:{n}", label(i)))
        .collect();
    if pairs.is_empty() {
        "none".into()
    } else {
        pairs.join(" ")
    }
}

/// `vmtrace probes` as text: one block per metric, 72 columns.
pub fn probes_text(kernel_release: &str, listed: &[crate::kernel::probes::Listed]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "vmtrace probes on Linux {kernel_release}");
    for m in listed {
        let status = match (&m.reason, m.opt_in) {
            (Some(_), _) => "UNAVAILABLE".to_string(),
            (None, Some(flag)) => format!("available ({flag})"),
            (None, None) => "available".to_string(),
        };
        let head = format!("{} ({})", m.id, m.title);
        let _ = writeln!(o);
        if head.len() + 1 + status.len() <= 72 {
            let _ = writeln!(o, "{head:<width$} {status}", width = 71 - status.len());
        } else {
            let _ = writeln!(o, "{head}");
            let _ = writeln!(o, "{status:>72}");
        }
        for h in &m.hooks {
            let _ = writeln!(o, "  {h}");
        }
        if let Some(r) = &m.reason {
            for line in wrap(&format!("  why: {r}"), 72) {
                let _ = writeln!(o, "{line}");
            }
        }
    }
    o
}

/// Count, quantiles and a bar per power of two (merging the kernel's 16
/// sub-buckets), bpftrace-style but at most 72 columns.
fn write_hist(o: &mut String, s: &Summary) -> std::fmt::Result {
    if s.count == 0 {
        writeln!(o, "  (none)")?;
        return Ok(());
    }
    writeln!(
        o,
        "  {:>9} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "count", "p50", "p90", "p99", "p99.9", "max"
    )?;
    writeln!(
        o,
        "  {:>9} {:>8} {:>8} {:>8} {:>8} {:>8}",
        s.count,
        fmt_ns(s.p50_ns),
        fmt_ns(s.p90_ns),
        fmt_ns(s.p99_ns),
        fmt_ns(s.p999_ns),
        fmt_ns(s.max_ns)
    )?;
    for (lo, hi, n, bar) in power_of_two_rows(s) {
        writeln!(
            o,
            "  [{:>6}, {:>6}) {:>9} |{:<32}|",
            fmt_ns(lo),
            fmt_ns(hi),
            n,
            bar
        )?;
    }
    Ok(())
}

/// (lower, upper, count, bar) per power of two from the first to the last
/// non-empty one.
pub(super) fn power_of_two_rows(s: &Summary) -> Vec<(u64, u64, u64, String)> {
    let sub = SUB as usize;
    let mut groups: Vec<(usize, u64)> = Vec::new();
    for b in &s.buckets {
        let idx = vmtrace_common::hist::bucket_of(b.lower_ns);
        let g = idx / sub;
        match groups.last_mut() {
            Some((last, n)) if *last == g => *n += b.count,
            _ => groups.push((g, b.count)),
        }
    }
    let (Some(first), Some(last)) = (groups.first(), groups.last()) else {
        return Vec::new();
    };
    let (first, last) = (first.0, last.0);
    let max = groups.iter().map(|g| g.1).max().unwrap_or(1).max(1);
    (first..=last)
        .map(|g| {
            let n = groups.iter().find(|x| x.0 == g).map_or(0, |x| x.1);
            let lo = bucket_lower(g * sub);
            let hi = if (g + 1) * sub < BUCKETS {
                bucket_lower((g + 1) * sub)
            } else {
                u64::MAX
            };
            let width = ((n as u128 * 32).div_ceil(max as u128)) as usize;
            (lo, hi, n, "@".repeat(width.min(32)))
        })
        .collect()
}

/// A duration in ns as at most 6 characters: `512ns`, `1.5us`, `12ms`.
pub fn fmt_ns(ns: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    for (scale, unit) in UNITS {
        if ns >= scale {
            let v = ns as f64 / scale as f64;
            return if scale == 1 || v >= 100.0 {
                format!("{v:.0}{unit}")
            } else if v >= 10.0 {
                format!("{v:.1}{unit}").replace(".0", "")
            } else {
                format!("{v:.1}{unit}")
            };
        }
    }
    "0".into()
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}", part as f64 * 100.0 / whole as f64)
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        _ => "signal",
    }
}

/// Wraps at spaces to `width` columns; continuation lines indented by 2.
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
            line.push_str("  ");
        } else if !line.is_empty() && !line.ends_with("  ") {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.trim().is_empty() {
        lines.push(line);
    }
    lines
}
