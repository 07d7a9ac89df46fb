//! Reclaim against the kernel's own counters: memcg reclaim in a small
//! box (LRU scanning, stalls, swap, faults, the time line), kswapd under
//! global pressure, and page allocation per zone, each checked against
//! /proc/vmstat deltas.

use serde_json::Value;

use crate::common::{delta, global_hog_mib, guard, json_of, json_ok, run_memhog, vmstat, within};

/// The acceptance test: a memory hog in a 128 MiB memcg with 1 GiB
/// of swap. vmtrace must see memcg reclaim, and its LRU and major-fault
/// totals must equal the kernel's own /proc/vmstat deltas within 1%.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn memcg_reclaim_and_faults_match_the_kernels_counters() {
    let _g = guard();
    let delayacct_before =
        std::fs::read_to_string("/proc/sys/kernel/task_delayacct").expect("task_delayacct");
    let before = vmstat();
    let out = run_memhog(
        true,
        &["--mem", "128M", "--swap", "1G"],
        &["--mib", "384", "--passes", "1"],
    )
    .output()
    .expect("run vmtrace");
    let after = vmstat();
    let r = json_of(&out);
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "status {:?}", out.status);
    assert_eq!(r["exit"]["code"], 0, "{r:#}");
    assert!(r["membox"]["cgroup_version"].is_string(), "{r:#}");

    let memcg = &r["memcg_reclaim"];
    let stalls = memcg["stalls"]["count"].as_u64().expect("memcg stalls");
    assert!(stalls > 0, "no memcg reclaim seen: {memcg:#}");

    delay_accounting_agrees_with_ebpf(&r, &delayacct_before);
    stalls_split_at_the_scheduler_add_up(&r);
    let pgscan = lru_totals_match_vmstat(&r, &before, &after);
    scanned_pages_add_up(&r);
    major_faults_match_vmstat_and_rusage(&r, &before, &after);
    swap_out_and_io_match_vmstat(&r, &before, &after);
    nothing_was_lost(&r);
    the_hog_stalled_most(&r, stalls);
    entered_through_the_fault_path(&r, stalls);
    // memcg reclaim runs the memcg-aware shrinkers: timed, every call.
    let slab = &r["slab_shrink"]["calls"];
    assert!(slab["count"].as_u64().unwrap_or(0) > 0, "{slab:#}");
    assert!(slab["p50_ns"].as_u64().unwrap_or(0) > 0, "{slab:#}");
    // LRU isolation of the inactive lists is what vmstat counts as pgscan
    // (the active lists' pgrefill leaves out memcg reclaim: see the
    // kswapd test for that one).
    let iso_inactive = isolate_scanned(&r, &[0, 2]);
    eprintln!("isolate inactive {iso_inactive} vs pgscan {pgscan}");
    assert!(
        within(iso_inactive, pgscan, 0.01),
        "{iso_inactive} vs {pgscan}"
    );
    timeline_ends_at_the_totals(&r, stalls, pgscan);
    // Throttling and compaction are reported (zero or not) when available.
    assert!(
        r["throttle"]["delays"]["count"].is_u64(),
        "{:#}",
        r["throttle"]
    );
    assert!(
        r["compaction"]["all_tasks"].is_u64(),
        "{:#}",
        r["compaction"]
    );
}

/// Issue 31: every memcg stall of the hog is in a way in (same count,
/// the same stall time within 2%: the entry programs stamp beside the
/// reclaim pair, not with it); the anonymous fault path
/// (handle_mm_fault and below) holds >= 90% of the stall time, the top
/// way in among it; every frame is a function of /proc/kallsyms; the
/// GFP flags are the anonymous fault's (GFP_HIGHUSER_MOVABLE).
fn entered_through_the_fault_path(r: &Value, stalls: u64) {
    let e = &r["reclaim_entries"];
    let paths = e["paths"].as_array().expect("reclaim_entries.paths");
    let n = |p: &Value, k: &str| p[k].as_u64().unwrap_or(0);
    let memcg: Vec<&Value> = paths.iter().filter(|p| p["context"] == "memcg").collect();
    let count: u64 = memcg.iter().map(|p| n(p, "count")).sum();
    let total: u64 = memcg.iter().map(|p| n(p, "stall_ns")).sum();
    // The split's wall time: every target stall's exact sum (the
    // histogram's total is a sum of bucket midpoints).
    let stalled = r["memcg_reclaim"]["split"]["wall_ns"]
        .as_u64()
        .expect("split.wall_ns");
    eprintln!(
        "entries: {} ways in, {count} reclaims, {total} ns (stalls {stalls}, {stalled} ns)",
        memcg.len()
    );
    assert_eq!(count, stalls, "{e:#}");
    assert_eq!(n(e, "stacks_lost") + n(e, "table_full"), 0, "{e:#}");
    assert!(within(total, stalled, 0.02), "{total} vs {stalled}");
    // The ways' split (runnable and blocked: the task's split totals
    // across each stall; on a CPU: the rest of it, so the three add up
    // by construction) agrees part by part with the split's own
    // counters, read apart.
    let part = |k: &str| -> u64 { memcg.iter().map(|p| n(&p["split"], k)).sum() };
    let (on, runnable, blocked) = (part("on_cpu_ns"), part("runnable_ns"), part("blocked_ns"));
    eprintln!("ways in: on-CPU {on} runnable {runnable} blocked {blocked} ns");
    let split = &r["memcg_reclaim"]["split"];
    for (k, v) in [
        ("on_cpu_ns", on),
        ("runnable_ns", runnable),
        ("blocked_ns", blocked),
    ] {
        let whole = n(split, k);
        assert!(
            v.abs_diff(whole) <= stalled / 50,
            "ways' {k} {v} vs the split's {whole} (wall {stalled})"
        );
    }
    let through = |p: &Value, f: &str| {
        p["frames"]
            .as_array()
            .is_some_and(|fs| fs.iter().any(|x| x == f))
    };
    let fault: u64 = memcg
        .iter()
        .filter(|p| through(p, "handle_mm_fault"))
        .map(|p| n(p, "stall_ns"))
        .sum();
    eprintln!("through handle_mm_fault: {fault} of {total} ns");
    assert!(fault as f64 >= 0.9 * total as f64, "{e:#}");
    let top = memcg.first().expect("a way in");
    assert!(through(top, "handle_mm_fault"), "{top:#}");
    assert!(
        top["gfp_names"]
            .as_str()
            .is_some_and(|g| g.starts_with("GFP_HIGHUSER_MOVABLE")),
        "{top:#}"
    );
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").expect("kallsyms");
    let functions: std::collections::HashSet<String> = kallsyms
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (_, _, name) = (w.next()?, w.next()?, w.next()?);
            Some(match w.next() {
                Some(module) => format!("{name} {module}"),
                None => name.to_string(),
            })
        })
        .collect();
    for p in &memcg {
        for f in p["frames"].as_array().expect("frames") {
            let f = f.as_str().expect("frame");
            assert!(functions.contains(f), "{f} is not in /proc/kallsyms");
        }
    }
}

/// Issue 29: each reclaim stall's wall time, split at the scheduler
/// (probe-ebpf sched), is on a CPU + runnable + blocked: the parts add
/// up to the split stalls' wall time, which is the stall histogram's
/// total; the on-CPU part is at most the command's system time
/// (rusage); the kernel's own `sched_info.run_delay` change over the
/// same stalls lies between the runnable part and that less the waits
/// of preempting wake-ups, which run_delay mostly misses (each within
/// 2% of the wall time + 5 ms); and the
/// target's I/O-wait sleeps timed at the scheduler agree with the delay
/// accounting's block I/O total.
fn stalls_split_at_the_scheduler_add_up(r: &Value) {
    let split = &r["memcg_reclaim"]["split"];
    let ns = |k: &str| {
        split[k]
            .as_u64()
            .unwrap_or_else(|| panic!("split.{k}: {split:#}"))
    };
    let (on, runnable, blocked) = (ns("on_cpu_ns"), ns("runnable_ns"), ns("blocked_ns"));
    let (wall, run_delay, iowait) = (ns("wall_ns"), ns("run_delay_ns"), ns("iowait_ns"));
    let stalled = r["memcg_reclaim"]["stalls"]["total_ns"]
        .as_u64()
        .expect("stall total");
    eprintln!(
        "split: on {on} runnable {runnable} blocked {blocked} (iowait {iowait}) \
         = wall {wall}; stalls {stalled}; run_delay {run_delay}"
    );
    assert!(wall > 0, "no split stall: {split:#}");
    assert!(
        within(on + runnable + blocked, wall, 0.02),
        "parts do not add up to the wall time: {split:#}"
    );
    assert!(within(wall, stalled, 0.02), "{wall} vs {stalled}");
    assert!(iowait <= blocked, "{split:#}");
    let sys_ns = (r["usage"]["sys_s"].as_f64().expect("sys_s") * 1e9) as u64;
    assert!(
        on <= sys_ns,
        "on-CPU reclaim {on} ns > system time {sys_ns} ns"
    );
    // The kernel's run_delay misses most of a preempting wake-up's wait
    // (its switch-in reads the run queue's clock as of the wake-up:
    // CI once read runnable 87.9 ms against run_delay 33.2), and reads
    // a little higher where the same skip stamps a preempted task's wait
    // at the stale clock (probe-ebpf sched's header), so it lies
    // between runnable minus the preempting wake-ups' waits and
    // runnable, each within 2% of the wall time plus 5 ms.
    let preempt_wake = ns("preempt_wake_ns");
    eprintln!("of the runnable part, preempting wake-ups' waits {preempt_wake}");
    assert!(preempt_wake <= runnable, "{split:#}");
    let slack = wall / 50 + 5_000_000;
    assert!(
        run_delay <= runnable + slack && run_delay + slack >= runnable - preempt_wake,
        "run_delay {run_delay} outside runnable {runnable} less preempting \
         wake-ups' {preempt_wake} (wall {wall})"
    );
    let io = r["io_waits"]["total_ns"].as_u64().expect("io_waits");
    let blkio = r["delays"]["blkio_ns"].as_u64().unwrap_or(0);
    eprintln!(
        "io waits {io} ns ({} sleeps) vs delay accounting blkio {blkio} ns",
        r["io_waits"]["waits"]
    );
    if blkio > 100_000_000 {
        assert!(within(io, blkio, 0.25), "io waits {io} vs blkio {blkio}");
    }
}

/// /proc/vmstat, as `vmstat()` reads it.
type Counters = std::collections::BTreeMap<String, u64>;

/// The kernel's own delay accounting agrees with the eBPF stall time, and
/// kernel.task_delayacct is back as it was (`delayacct_before`).
fn delay_accounting_agrees_with_ebpf(r: &Value, delayacct_before: &str) {
    let memcg = &r["memcg_reclaim"];
    // The kernel's own delay accounting agrees with the eBPF stall time
    // (it times the same reclaim calls from inside), and vmtrace put
    // kernel.task_delayacct back as it found it.
    let d = &r["delays"];
    assert_eq!(d["accounting_on"], true, "{d}");
    let freepages = d["freepages_ns"].as_u64().unwrap_or(0);
    let stall_ns = memcg["stalls"]["total_ns"].as_u64().unwrap_or(0);
    assert!(
        within(freepages, stall_ns, 0.25),
        "delayacct reclaim {freepages} ns vs eBPF {stall_ns} ns"
    );
    assert!(d["swapin_ns"].as_u64().unwrap_or(0) > 0, "{d}");
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/task_delayacct")
            .expect("sysctl")
            .trim(),
        delayacct_before.trim()
    );
    assert!(memcg["stalls"]["p50_ns"].as_u64().unwrap_or(0) > 0);
}

/// The LRU shrink totals equal vmstat's pgscan and pgsteal (or the box's
/// memory.stat), and the memcg context's share is the memcg reclaim's own.
/// Returns pgscan.
fn lru_totals_match_vmstat(r: &Value, before: &Counters, after: &Counters) -> u64 {
    let memcg = &r["memcg_reclaim"];
    let rows = r["lru_shrink_inactive"].as_array().expect("lru rows");
    let sum = |key: &str| {
        rows.iter()
            .map(|row| row[key].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    let (scanned, reclaimed) = (sum("nr_scanned"), sum("nr_reclaimed"));
    let pgscan = delta(before, after, &["pgscan_anon", "pgscan_file"]);
    let pgsteal = delta(before, after, &["pgsteal_anon", "pgsteal_file"]);
    eprintln!(
        "lru scanned {scanned} vs pgscan {pgscan}; reclaimed {reclaimed} vs pgsteal {pgsteal}"
    );
    assert!(scanned > 0 && reclaimed > 0);
    // Some kernels leave memcg reclaim out of pgscan/pgsteal; then the
    // cgroup's own memory.stat is the reference (issue #2 allows either).
    if pgscan > 0 {
        assert!(
            within(scanned, pgscan, 0.01),
            "scanned {scanned} vs pgscan {pgscan}"
        );
        assert!(
            within(reclaimed, pgsteal, 0.01),
            "reclaimed {reclaimed} vs pgsteal {pgsteal}"
        );
    } else {
        let stat = &r["membox"]["memory_stat"];
        let steal = stat["pgsteal"].as_u64().expect("memory.stat pgsteal");
        assert!(
            within(reclaimed, steal, 0.01),
            "reclaimed {reclaimed} vs memory.stat {steal}"
        );
    }
    // The reclaim the memcg context shows is the memcg reclaim's own.
    let memcg_lru: u64 = rows
        .iter()
        .filter(|row| row["context"] == "memcg")
        .map(|row| row["nr_reclaimed"].as_u64().unwrap_or(0))
        .sum();
    let memcg_pages = memcg["pages_reclaimed"].as_u64().unwrap_or(0);
    assert!(
        within(memcg_lru, memcg_pages, 0.01),
        "lru memcg {memcg_lru} vs end {memcg_pages}"
    );
    pgscan
}

/// Issue 17: where the scanned pages went adds up. shrink_folio_list
/// frees a folio (nr_reclaimed), activates it (nr_activate), keeps it as
/// referenced (nr_ref_keep), or keeps it without a count: on a swapping
/// run, chiefly folios pageout() wrote that are still under writeback.
/// Those are counted apart, by mm_vmscan_write_folio; with them the
/// groups make what was scanned, within 1%.
fn scanned_pages_add_up(r: &Value) {
    let rows = r["lru_shrink_inactive"].as_array().expect("lru rows");
    let sum = |key: &str| -> u64 { rows.iter().map(|row| row[key].as_u64().unwrap_or(0)).sum() };
    let scanned = sum("nr_scanned");
    let written = r["swap_out"]["anon_folios"].as_u64().unwrap_or(0)
        + r["swap_out"]["file_folios"].as_u64().unwrap_or(0);
    let kept = sum("nr_activate_anon") + sum("nr_activate_file") + sum("nr_ref_keep") + written;
    let reclaimed = sum("nr_reclaimed");
    eprintln!(
        "scanned {scanned} = reclaimed {reclaimed} + activated {} + referenced {} \
         + written {written} (= {})",
        sum("nr_activate_anon") + sum("nr_activate_file"),
        sum("nr_ref_keep"),
        reclaimed + kept
    );
    assert!(written > 0, "{:#}", r["swap_out"]);
    assert!(
        within(reclaimed + kept, scanned, 0.01),
        "kept back {kept} + reclaimed {reclaimed} vs scanned {scanned}"
    );
}

/// Major faults: all of them against vmstat, the target's against rusage.
fn major_faults_match_vmstat_and_rusage(r: &Value, before: &Counters, after: &Counters) {
    let major_all = r["faults"]["major_all"].as_u64().expect("major_all");
    let pgmajfault = delta(before, after, &["pgmajfault"]);
    eprintln!("major faults: vmtrace {major_all}, vmstat {pgmajfault}");
    assert!(
        major_all > 1000,
        "too few major faults to compare: {major_all}"
    );
    assert!(
        within(major_all, pgmajfault, 0.01),
        "{major_all} vs {pgmajfault}"
    );
    // The target's major faults are the hog's, which rusage counts too.
    let major_target = r["faults"]["major_target"].as_u64().expect("major_target");
    let rusage_major = r["usage"]["major_faults"].as_u64().expect("rusage");
    assert!(
        within(major_target, rusage_major, 0.01),
        "{major_target} vs {rusage_major}"
    );
}

/// Swap-outs and the swap device's I/O against pswpout and pswpin.
fn swap_out_and_io_match_vmstat(r: &Value, before: &Counters, after: &Counters) {
    // Swap really happened, in the kernel's own words, and vmtrace saw
    // the same swap-outs (folios are single pages here: THP is madvise).
    let pswpout = delta(before, after, &["pswpout"]);
    assert!(pswpout > 10_000, "{pswpout}");
    let anon_out = r["swap_out"]["anon_folios"].as_u64().expect("swap_out");
    eprintln!("swap-out: vmtrace {anon_out} folios, pswpout {pswpout}");
    assert!(within(anon_out, pswpout, 0.01), "{anon_out} vs {pswpout}");

    // Swap device I/O: what the block layer moved to and from the swap
    // area is what vmstat counts as swapped out and in (pages of 4 KiB).
    let io = &r["swap_io"];
    assert!(
        io["areas"].as_array().is_some_and(|a| a
            .iter()
            .any(|p| p.as_str().is_some_and(|p| p.contains("vmtrace-")))),
        "{io:#}"
    );
    let page = 4096;
    let (wrote, read) = (
        io["write_bytes"].as_u64().unwrap_or(0),
        io["read_bytes"].as_u64().unwrap_or(0),
    );
    let pswpin = delta(before, after, &["pswpin"]);
    eprintln!(
        "swap I/O: wrote {} pages vs pswpout {pswpout}, read {} vs pswpin {pswpin}",
        wrote / page,
        read / page
    );
    assert!(
        within(wrote / page, pswpout, 0.01),
        "{wrote} B vs {pswpout} pages"
    );
    assert!(
        within(read / page, pswpin, 0.01),
        "{read} B vs {pswpin} pages"
    );
    assert!(io["write"]["p50_ns"].as_u64().unwrap_or(0) > 0, "{io:#}");
}

/// No program skipped by the kernel, no map full.
fn nothing_was_lost(r: &Value) {
    let dropped = &r["dropped"];
    assert_eq!(
        dropped["program_misses"],
        serde_json::json!([]),
        "{dropped:#}"
    );
    assert_eq!(dropped["evicted"], serde_json::json!([]), "{dropped:#}");
    for key in [
        "reclaim_start_map_full",
        "swap_io_map_full",
        "node_out_of_range",
    ] {
        assert_eq!(dropped[key], 0, "{dropped:#}");
    }
}

/// The hog stalled most; every memcg stall has an order, every inactive
/// shrink a priority.
fn the_hog_stalled_most(r: &Value, stalls: u64) {
    let rows = r["lru_shrink_inactive"].as_array().expect("lru rows");
    // The hog is the process that stalled most, and it is the target.
    let top = &r["top_stallers"][0];
    assert_eq!(top["comm"], "memhog", "{:#}", r["top_stallers"]);
    assert_eq!(top["target"], true);
    assert_eq!(top["pid"], r["pid"]);
    assert_eq!(top["memcg_stalls"].as_u64(), Some(stalls));
    // Every target reclaim has an order; the hog asks for single pages.
    let orders = r["reclaim_order"]
        .as_array()
        .and_then(|rows| rows.iter().find(|row| row["context"] == "memcg"))
        .expect("memcg orders");
    let by_order: Vec<u64> = orders["counts"]
        .as_array()
        .expect("counts")
        .iter()
        .map(|n| n.as_u64().unwrap_or(0))
        .collect();
    assert_eq!(by_order.iter().sum::<u64>(), stalls, "{by_order:?}");
    // Priorities were recorded for every inactive shrink.
    let prio_total: u64 = r["reclaim_priority"]
        .as_array()
        .expect("priority")
        .iter()
        .flat_map(|row| row["counts"].as_array().cloned().unwrap_or_default())
        .map(|n| n.as_u64().unwrap_or(0))
        .sum();
    let events: u64 = rows
        .iter()
        .map(|row| row["events"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(prio_total, events);
}

/// A snapshot per second, counters never going back, ending at the run's
/// totals; the zones named.
fn timeline_ends_at_the_totals(r: &Value, stalls: u64, pgscan: u64) {
    // The time line: a snapshot per second, counters never going back,
    // ending where the run's totals end.
    let tl = r["timeline"].as_array().expect("timeline");
    let wall = r["usage"]["wall_s"].as_f64().unwrap_or(0.0);
    assert!(
        tl.len() as f64 >= wall.floor(),
        "{} samples in {wall} s",
        tl.len()
    );
    for pair in tl.windows(2) {
        for key in ["pgscan", "pswpout", "memcg_reclaims", "memcg_stall_ns"] {
            assert!(
                pair[0][key].as_u64() <= pair[1][key].as_u64(),
                "{key} went back"
            );
        }
    }
    let last = tl.last().expect("a sample");
    assert_eq!(last["memcg_reclaims"].as_u64(), Some(stalls));
    assert!(within(last["pgscan"].as_u64().unwrap_or(0), pgscan, 0.01));
    assert!(last["zones"].as_array().is_some_and(|z| z.len() >= 3));
    let zones = r["zones"].as_array().expect("zones");
    assert!(zones.iter().any(|z| z["zone"] == "Normal"), "{zones:?}");
}

/// Global pressure, bounded: a hog half a GiB larger than the free memory
/// (swap behind it, so nothing is OOM-killed) makes kswapd reclaim. What
/// vmtrace saw of kswapd must match the kernel's own counters.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn kswapd_under_global_pressure_matches_vmstat() {
    let _g = guard();
    let mib = global_hog_mib(512);
    let before = vmstat();
    let out = run_memhog(true, &["--swap", "2G"], &["--mib", &mib.to_string()])
        .output()
        .expect("run vmtrace");
    let after = vmstat();
    let r = json_of(&out);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    kswapd_rounds_and_wakeups_match(&r, &before, &after);
    kswapd_wakers_by_stack_match(&r);

    // kswapd's share of the LRU scanning equals vmstat's pgscan_kswapd.
    let rows = r["lru_shrink_inactive"].as_array().expect("lru");
    let (scanned, reclaimed) = (
        lru_sum(rows, "kswapd", "nr_scanned"),
        lru_sum(rows, "kswapd", "nr_reclaimed"),
    );
    let pgscan_kswapd = delta(&before, &after, &["pgscan_kswapd"]);
    let pgsteal_kswapd = delta(&before, &after, &["pgsteal_kswapd"]);
    eprintln!(
        "kswapd scanned {scanned} vs {pgscan_kswapd}; reclaimed {reclaimed} vs {pgsteal_kswapd}"
    );
    assert!(scanned > 0);
    assert!(
        within(scanned, pgscan_kswapd, 0.01),
        "{scanned} vs {pgscan_kswapd}"
    );
    assert!(
        within(reclaimed, pgsteal_kswapd, 0.01),
        "{reclaimed} vs {pgsteal_kswapd}"
    );
    assert_eq!(
        r["dropped"]["program_misses"],
        serde_json::json!([]),
        "{:#}",
        r["dropped"]
    );
    // Global reclaim: isolation from the active lists is vmstat's pgrefill.
    let iso_active = isolate_scanned(&r, &[1, 3]);
    let pgrefill = delta(&before, &after, &["pgrefill"]);
    eprintln!("isolate active {iso_active} vs pgrefill {pgrefill}");
    // vmstat is read before vmtrace attaches and after it detaches, and
    // kswapd goes on deactivating for a moment after the hog exits (the
    // run's swapfile is switched off, its pages come back): vmstat counts
    // that, the detached probes cannot. Seen once: 7002 vs 7114. Allowed:
    // 1% plus four isolation batches (SWAP_CLUSTER_MAX = 32 pages).
    assert!(
        iso_active.abs_diff(pgrefill) <= pgrefill / 100 + 4 * 32,
        "{iso_active} vs {pgrefill}"
    );
    // Global direct reclaim, when it happened, is the hog's and matches
    // vmstat's pgscan_direct too, but for what was scanned outside the
    // probes' window: the test's vmstat reads bracket vmtrace's start
    // and its exit (the swapfile switched off, its pages coming back
    // under the same pressure: direct reclaim the detached probes cannot
    // see; seen once, 52271 vs 53058). That part is measured: all
    // scanning between the test's reads less the window's own
    // (the recording's /proc/vmstat, read at its open and close).
    let direct = lru_sum(rows, "direct", "nr_scanned");
    let pgscan_direct = delta(&before, &after, &["pgscan_direct"]);
    let outside = delta(&before, &after, &["pgscan_anon", "pgscan_file"])
        .saturating_sub(r["vmstat"]["pgscan"].as_u64().expect("window pgscan"));
    eprintln!("direct scanned {direct} vs {pgscan_direct}; outside the window {outside}");
    assert!(
        direct.abs_diff(pgscan_direct) <= pgscan_direct / 100 + outside,
        "{direct} vs {pgscan_direct}, {outside} scanned outside the window"
    );
}

/// kswapd's rounds are vmstat's pageoutrun; its wakeups add up by order,
/// and the hog is among the wakers.
fn kswapd_rounds_and_wakeups_match(r: &Value, before: &Counters, after: &Counters) {
    let k = &r["kswapd"];
    let rounds: u64 = k["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["wakes"].as_u64().unwrap_or(0))
        .sum();
    let pageoutrun = delta(before, after, &["pageoutrun"]);
    eprintln!("kswapd rounds: vmtrace {rounds}, pageoutrun {pageoutrun}");
    assert!(rounds > 0, "{k:#}");
    assert!(within(rounds, pageoutrun, 0.05), "{rounds} vs {pageoutrun}");
    let wakeups: u64 = k["wakeups"]
        .as_array()
        .expect("wakeups")
        .iter()
        .map(|w| w["count"].as_u64().unwrap_or(0))
        .sum();
    assert!(wakeups > 0, "{k:#}");
    let by_order: u64 = k["wakeup_orders"]
        .as_array()
        .expect("wakeup_orders")
        .iter()
        .map(|n| n.as_u64().unwrap_or(0))
        .sum();
    assert_eq!(by_order, wakeups, "{k:#}");
    assert!(
        k["wakers"]
            .as_array()
            .is_some_and(|w| w.iter().any(|w| w["name"] == "memhog")),
        "{k:#}"
    );
}

/// Who woke kswapd, by stack (probe-ebpf entry, target tasks only):
/// the hog's wake-ups, counted per (zone, stack, GFP, order), add up to
/// its row of the by-name table (another program on the same
/// tracepoint), each way begins at wakeup_kswapd, and its zones are
/// zones the by-zone table has.
fn kswapd_wakers_by_stack_match(r: &Value) {
    let wakers = r["reclaim_entries"]["kswapd_wakers"]
        .as_array()
        .expect("reclaim_entries.kswapd_wakers");
    let by_stack: u64 = wakers
        .iter()
        .map(|w| w["count"].as_u64().unwrap_or(0))
        .sum();
    let by_name = r["kswapd"]["wakers"]
        .as_array()
        .and_then(|w| w.iter().find(|w| w["name"] == "memhog"))
        .and_then(|w| w["count"].as_u64())
        .unwrap_or(0);
    eprintln!(
        "kswapd wakers: {} ways, {by_stack} wake-ups; memhog by name {by_name}",
        wakers.len()
    );
    assert!(by_stack > 0, "{wakers:#?}");
    assert!(within(by_stack, by_name, 0.01), "{by_stack} vs {by_name}");
    let zones: Vec<&Value> = r["kswapd"]["wakeups"]
        .as_array()
        .expect("wakeups")
        .iter()
        .map(|z| &z["zone"])
        .collect();
    for w in wakers {
        assert_eq!(w["frames"][0], "wakeup_kswapd", "{w:#}");
        assert!(zones.contains(&&w["zone"]), "{w:#} not in {zones:?}");
        assert!(
            w["gfp_names"].as_str().is_some_and(|g| !g.is_empty()),
            "{w:#}"
        );
    }
}

/// Sum of one field of the LRU rows of one reclaim context.
fn lru_sum(rows: &[Value], context: &str, key: &str) -> u64 {
    rows.iter()
        .filter(|row| row["context"] == context)
        .map(|row| row[key].as_u64().unwrap_or(0))
        .sum()
}

/// Pages scanned by LRU isolation on the given lists (enum lru_list).
fn isolate_scanned(r: &Value, lists: &[u64]) -> u64 {
    r["lru_isolate"]
        .as_array()
        .expect("lru_isolate")
        .iter()
        .filter(|i| lists.contains(&i["lru"].as_u64().unwrap_or(9)))
        .map(|i| i["nr_scanned"].as_u64().unwrap_or(0))
        .sum()
}

/// --page-alloc: pages allocated per zone, found from the pfn, add up to
/// the kernel's pgalloc_* counters over the run.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn page_alloc_per_zone_matches_pgalloc() {
    let _g = guard();
    let r = json_ok(&mut run_memhog(true, &["--page-alloc"], &["--mib", "256"]));
    let zones = r["zones"].as_array().expect("zones");
    let total: u64 = zones
        .iter()
        .map(|z| z["allocated_pages"].as_u64().expect("allocated_pages"))
        .sum();
    let pgalloc = r["vmstat"]["pgalloc"].as_u64().expect("pgalloc");
    eprintln!("pages allocated: vmtrace {total}, pgalloc {pgalloc}");
    // 256 MiB touched: at least 65536 pages.
    assert!(total >= 65536, "{total}");
    assert!(within(total, pgalloc, 0.02), "{total} vs {pgalloc}");
}
