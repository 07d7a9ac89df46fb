//! Tests of the mechanisms: each claims at most what its components
//! hold, together at most the difference, shares by evidence.

use super::io::{file_reads, swap_in, swap_out, zswap};
use super::*;
use crate::model::report::ZoneTypeCounts;

/// A hint's sentence, as compare prints it (the view writes it).
fn text(h: &Hint) -> String {
    crate::view::compare::hints::sentence(h)
}

/// The way that moved most, as the reclaim hint says it.
fn way_text(e: &Evidence) -> Option<String> {
    e.way_that_moved_most()
        .map(|w| crate::view::compare::hints::way_said(&w))
}

/// Group B against A over `metrics`, with no time budget.
fn b_vs_a(metrics: &[MetricRow], judgeable: bool) -> Evidence<'_> {
    Evidence {
        g: 1,
        judgeable,
        groups: &[],
        metrics,
        attribution: &[],
        entries: &[],
        profile: &[],
        ok: &[],
    }
}

/// zswap off (A) against on (B): the loads and stores are new in B,
/// the swap device's reads are gone, and the mechanism is zswap.
#[test]
fn zswap_names_swap_ins_served_from_zswap() {
    use crate::model::report::{DelayReport, SwapCauses};
    let run = |zswap: bool, i: u64| RunReport {
        swap_causes: Some(SwapCauses {
            pgmajfault: Some(30_000 + i),
            pswpin: Some(if zswap { 0 } else { 200_000 + i }),
            zswpin: Some(if zswap { 200_000 + 7 * i } else { 0 }),
            zswpout: Some(if zswap { 250_000 + 5 * i } else { 0 }),
            swap_ra: Some(170_000),
            ..Default::default()
        }),
        vmstat: crate::model::report::VmstatDelta {
            pswpin: if zswap { 0 } else { 200_000 + 3 * i },
            ..Default::default()
        },
        delays: Some(DelayReport {
            accounting_on: true,
            blkio_ns: if zswap {
                0
            } else {
                1_900_000_000 + 10_000_000 * i
            },
            ..Default::default()
        }),
        ..Default::default()
    };
    let a: Vec<RunReport> = (0..3).map(|i| run(false, i)).collect();
    let b: Vec<RunReport> = (0..3).map(|i| run(true, i)).collect();
    let ok = vec![a.iter().collect::<Vec<_>>(), b.iter().collect()];
    let metrics = super::super::measures::rows(&ok);
    let e = b_vs_a(&metrics, true);
    let h = zswap(&e).expect("a zswap mechanism");
    assert_eq!(h.mechanism, Mechanism::Zswap);
    assert!(
        text(&h).starts_with("swap-ins served from zswap: I/O waits 1.9"),
        "{}",
        text(&h)
    );
    assert!(text(&h).contains("-> 0"), "{}", text(&h));
    assert!(file_reads(&e).is_none(), "{}", text(&h));
    // The swap-in seconds are zswap's alone: no second claim.
    assert!(swap_in(&e).is_none());
    assert!(system_cpu(&e).is_none());
    // Two zswap runs far apart: stores 0 -> 250k/450k is no
    // significant t-test, but zswap was switched on in every run.
    let b2 = [run(true, 0), run(true, 40_000)];
    let ok = vec![a.iter().collect::<Vec<_>>(), b2.iter().collect()];
    let metrics = super::super::measures::rows(&ok);
    let e = Evidence {
        metrics: &metrics,
        ..e
    };
    assert!(!e.real(ZswapStores) && e.switched(ZswapStores));
    assert!(zswap(&e).is_some() && swap_in(&e).is_none());
}

/// One run each, zswap off (A) and on (B), as a user first tries
/// it: nothing can be judged, yet zswap switched on is named, and
/// swap-out is not read as falling to 0 (as many pages went out,
/// into zswap); the table says both.
#[test]
fn one_run_each_names_zswap_not_a_swap_out_of_zero() {
    use crate::model::report::{SwapCauses, VmstatDelta};
    let run = |zswap: bool| {
        let dev = |n: u64| if zswap { 0 } else { n };
        let z = |n: u64| if zswap { n } else { 0 };
        RunReport {
            swap_causes: Some(SwapCauses {
                pgmajfault: Some(21_775),
                pswpin: Some(dev(159_316)),
                pswpout: Some(dev(184_430)),
                zswpin: Some(z(159_600)),
                zswpout: Some(z(184_000)),
                zswpwb: Some(0),
                swap_ra: Some(137_541),
                ..Default::default()
            }),
            vmstat: VmstatDelta {
                pswpin: dev(159_316),
                pswpout: dev(184_430),
                ..Default::default()
            },
            ..Default::default()
        }
    };
    let (a, b) = ([run(false)], [run(true)]);
    let ok = vec![a.iter().collect::<Vec<_>>(), b.iter().collect()];
    let metrics = super::super::measures::rows(&ok);
    let e = b_vs_a(&metrics, false);
    let mean = |key: Measure, g: usize| e.mean(key, g).expect("a mean");
    assert_eq!(mean(PagesSwappedOut, 0), 184_430.0);
    assert_eq!(mean(PagesSwappedOut, 1), 184_000.0);
    assert_eq!(mean(WrittenToSwapDevice, 1), 0.0);
    assert_eq!(mean(PagesSwappedIn, 1), 159_600.0);
    assert!(e.real(WrittenToSwapDevice) && !e.real(PagesSwappedOut));
    let h = zswap(&e).expect("zswap named with one run each");
    assert!(
        text(&h).starts_with("swap-ins served from zswap"),
        "{}",
        text(&h)
    );
    assert!(swap_out(&e).is_none(), "swap-out named");
    assert!(swap_in(&e).is_none());
}

/// One run of a 4-task job on 2 CPUs with everything measured: the
/// machine's CPU time, reclaim's split, I/O waits at the scheduler,
/// delay accounting. `worse` (B) swaps in `swapins` and reads
/// `files` pages by major faults, reclaims, runs kswapd and shares
/// the machine more.
fn measured_run(i: u64, worse: bool, swapins: u64, files: u64, swap_io: bool) -> RunReport {
    use crate::model::histogram::summarize;
    use crate::model::report::*;
    let k = i as f64 * 0.1;
    let x = |a: f64, b: f64| if worse { b + k } else { a + k };
    let ns = |s: f64| (s * 1e9) as u64;
    let (user, sys, kswapd, others) = (10.0, x(5.0, 8.0), x(1.0, 3.0), x(1.0, 3.0));
    let wall = x(20.0, 30.0);
    let mut stalls = summarize(&[]);
    stalls.total_ns = ns(x(2.0, 4.0));
    let mut read = summarize(&[]);
    read.total_ns = ns(x(1.0, 2.0));
    RunReport {
        usage: Usage {
            wall_s: wall,
            user_s: user,
            sys_s: sys,
            major_faults: swapins + files + 4 * i,
            ..Default::default()
        },
        machine_cpu: Some(MachineCpu {
            cpus: 2,
            user_s: user + others,
            system_s: sys + kswapd,
            idle_s: 2.0 * wall - user - others - sys - kswapd,
            ..Default::default()
        }),
        kswapd: Some(KswapdReport {
            nodes: vec![KswapdNodeReport {
                node: 0,
                wakes: 10,
                awake_s: 2.0 * kswapd,
                cpu_s: kswapd,
            }],
            ..Default::default()
        }),
        memcg_reclaim: Some(ReclaimReport {
            stalls,
            pages_reclaimed: 1,
            split: Some(StallSplit {
                on_cpu_ns: ns(x(1.0, 2.0)),
                blocked_ns: ns(x(0.5, 1.5)),
                iowait_ns: ns(x(0.2, 0.6)),
                ..Default::default()
            }),
        }),
        io_waits: Some(IoWaitReport {
            waits: 100,
            total_ns: ns(x(4.0, 14.0)),
        }),
        delays: Some(DelayReport {
            accounting_on: true,
            swapin_ns: ns(x(0.5, 1.5)),
            cpu_ns: ns(x(5.0, 9.0)),
            blkio_ns: ns(x(4.0, 14.0)),
            ..Default::default()
        }),
        swap_io: swap_io.then(|| SwapIoReport {
            areas: vec!["/swap".into()],
            truncated: false,
            write: summarize(&[]),
            write_bytes: 0,
            read,
            read_bytes: 4096 * swapins,
        }),
        swap_causes: Some(SwapCauses {
            pgmajfault: Some(swapins + files + 4 * i),
            pswpin: Some(swapins + i),
            swap_ra: Some(0),
            refault_file: Some(files + 5 * i),
            ..Default::default()
        }),
        vmstat: crate::model::report::VmstatDelta {
            pgscan: if worse { 30_000 } else { 10_000 } + i,
            pgsteal: if worse { 10_000 } else { 5_000 } + i,
            pswpin: swapins + i,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Group B against A: the attribution's rows, the difference and
/// the mechanisms.
fn hints_of(a: &[RunReport], b: &[RunReport]) -> (Vec<AttributionRow>, f64, Vec<Hint>) {
    let ok = vec![a.iter().collect::<Vec<_>>(), b.iter().collect()];
    let metrics = super::super::measures::rows(&ok);
    let (rows, splits) = super::super::attribution::attribute(&ok, &metrics);
    let info = |runs: usize| GroupInfo {
        label: String::new(),
        kernel_release: String::new(),
        files: Vec::new(),
        runs,
        oom_killed: 0,
        oom_victims: Vec::new(),
        failed: 0,
    };
    let groups = [info(a.len()), info(b.len())];
    let h = hints(1, true, false, &groups, &metrics, &rows, &ok, &[], &[]);
    (rows, splits[0].difference, h)
}

/// A component's part of the elapsed difference (group B's).
fn part(rows: &[AttributionRow], c: Component) -> f64 {
    rows.iter()
        .find(|r| r.component == c)
        .map_or(0.0, |r| r.elapsed[0])
}

/// The seconds a mechanism claims (0 when not named).
fn claim(hints: &[Hint], m: Mechanism) -> f64 {
    hints
        .iter()
        .find(|h| h.mechanism == m)
        .map_or(0.0, |h| h.seconds)
}

/// A mechanism's sentence ("" when not named).
fn text_of(hints: &[Hint], m: Mechanism) -> String {
    hints
        .iter()
        .find(|h| h.mechanism == m)
        .map(text)
        .unwrap_or_default()
}

/// docs/COMPARE.md's claims table names, for every mechanism, exactly
/// the components `Mechanism::claims` declares.
#[test]
fn the_claims_table_is_what_the_code_declares() {
    let doc = include_str!("../../../../docs/COMPARE.md");
    let header = "| mechanism | claims from (`Mechanism::claims`) | how much |";
    let at = doc.find(header).expect("the claims table");
    let mut seen = Vec::new();
    for line in doc[at..].lines().skip(2).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let m = Mechanism::ALL
            .into_iter()
            .find(|m| m.name() == cells[1])
            .unwrap_or_else(|| panic!("no mechanism {:?}", cells[1]));
        let declared: Vec<&str> = m.claims().iter().map(|c| c.label()).collect();
        let declared = if declared.is_empty() {
            "none".to_string()
        } else {
            declared.join(", ")
        };
        assert_eq!(cells[2], declared, "{}", m.name());
        seen.push(m);
    }
    for m in Mechanism::ALL {
        assert_eq!(
            seen.iter().filter(|s| **s == m).count(),
            1,
            "{} rows for {}",
            seen.len(),
            m.name()
        );
    }
}

/// Everything moved at once: each mechanism claims at most what its
/// components hold, with the difference's sign, and together they
/// claim at most the difference; I/O-sharing ones (swap-in, file
/// reads) and CPU-sharing ones (swap-in, system CPU) at most the
/// components they share.
#[test]
fn claims_stay_within_their_components_and_the_difference() {
    for swap_io in [false, true] {
        // Interrupts move too (0.5 -> 2 CPU-s, out of idle time): a
        // claim on them beyond what `claims` declares shows.
        let run = |i: u64, worse: bool, swapins, files| {
            let mut r = measured_run(i, worse, swapins, files, swap_io);
            if let Some(m) = r.machine_cpu.as_mut() {
                let irq = if worse { 2.0 } else { 0.5 } + i as f64 * 0.05;
                (m.irq_s, m.softirq_s) = (irq / 2.0, irq / 2.0);
                m.idle_s -= irq;
            }
            r
        };
        let a: Vec<RunReport> = (0..3).map(|i| run(i, false, 1000, 1000)).collect();
        let b: Vec<RunReport> = (0..3).map(|i| run(i, true, 5000, 3000)).collect();
        let (rows, diff, hints) = hints_of(&a, &b);
        let part = |c: &Component| {
            rows.iter()
                .find(|r| r.component == *c)
                .map_or(0.0, |r| r.elapsed[0])
        };
        let mut claimed = 0.0;
        for h in &hints {
            let held: f64 = h.mechanism.claims().iter().map(part).sum();
            assert!(h.seconds * diff >= 0.0, "{h:?}");
            assert!(h.seconds.abs() <= held.abs() + 1e-9, "{h:?} of {held}");
            claimed += h.seconds.abs();
        }
        assert!(
            claimed <= diff.abs() + 1e-9,
            "{claimed} of {diff}: {hints:#?}"
        );
        let sum = |ms: &[Mechanism]| -> f64 {
            hints
                .iter()
                .filter(|h| ms.contains(&h.mechanism))
                .map(|h| h.seconds)
                .sum()
        };
        let io = part(&Component::BlockIoWaits) + part(&Component::Interrupts);
        let sys = part(&Component::OtherSystemCpu);
        assert!(
            part(&Component::Interrupts) > 0.0,
            "interrupts hold nothing"
        );
        assert!(sum(&[Mechanism::SwapIn, Mechanism::FileReads]) <= io + sys + 1e-9);
        assert!(sum(&[Mechanism::SwapIn, Mechanism::SystemCpu]) <= io + sys + 1e-9);
        assert!(sum(&[Mechanism::FileReads]) <= io + 1e-9);
        let named: Vec<Mechanism> = hints.iter().map(|h| h.mechanism).collect();
        for m in [
            Mechanism::Reclaim,
            Mechanism::Kswapd,
            Mechanism::CpuContention,
            Mechanism::SwapIn,
            Mechanism::FileReads,
            Mechanism::SystemCpu,
        ] {
            assert!(named.contains(&m), "{m:?} not named: {named:?}");
        }
        // Reclaim's claim is its on-CPU time and its sleeps, no more,
        // shared with refaults when reclaim evicted pages needed again.
        let reclaim = sum(&[Mechanism::Reclaim, Mechanism::Refaults]);
        let held = part(&Component::ReclaimCpu) + part(&Component::ReclaimWaits);
        assert!(reclaim > 0.0 && (reclaim - held).abs() < 1e-9);
    }
}

/// Swap-ins and file reads both grew, file reads nine times as much
/// (file refaults dominate: evicted file pages read back): file
/// reads get the larger share of the I/O waits, swap-in the rest,
/// by what changed (file +9000, swap-in +1000), with the swap device
/// timed or not; neither takes the whole bucket.
#[test]
fn file_reads_get_the_larger_share_when_they_dominate() {
    for swap_io in [false, true] {
        let a: Vec<RunReport> = (0..3)
            .map(|i| measured_run(i, false, 1000, 1000, swap_io))
            .collect();
        let b: Vec<RunReport> = (0..3)
            .map(|i| measured_run(i, true, 2000, 10_000, swap_io))
            .collect();
        let (rows, _, hints) = hints_of(&a, &b);
        let seconds = |m: Mechanism| {
            hints
                .iter()
                .find(|h| h.mechanism == m)
                .map(|h| h.seconds)
                .unwrap_or_else(|| panic!("{m:?} not named: {hints:#?}"))
        };
        let io = part(&rows, Component::BlockIoWaits);
        let (file, swap) = (seconds(Mechanism::FileReads), seconds(Mechanism::SwapIn));
        assert!(io > 0.0 && file > 0.0 && swap > 0.0, "{hints:#?}");
        assert!(file > swap, "file reads {file} <= swap-in {swap}");
        // The faults printed are the ones the shares come from
        // (vmstat's, by cause), not rusage's major faults.
        for h in &hints {
            if matches!(h.mechanism, Mechanism::SwapIn | Mechanism::FileReads) {
                assert!(text(h).contains("swap-in faults"), "{}", text(h));
                assert!(!text(h).contains("major faults"), "{}", text(h));
            }
        }
        // By what changed: 9000 more file reads, 1000 more swap-ins.
        assert!(
            (file / io - 9000.0 / 10000.0).abs() < 0.02,
            "{file} of {io} (swap I/O {swap_io})"
        );
    }
}

#[test]
fn zone_shift_names_the_zones_that_moved() {
    let zone = |zone: &str, pgalloc: u64| ZoneTypeCounts {
        zone: zone.into(),
        pgalloc,
        ..Default::default()
    };
    let a = RunReport {
        zone_vmstat: Some(vec![zone("DMA32", 200), zone("Normal", 800)]),
        ..Default::default()
    };
    let b = RunReport {
        zone_vmstat: Some(vec![zone("DMA32", 500), zone("Normal", 500)]),
        ..Default::default()
    };
    let h = zone_shift(&[&a], &[&b]).expect("a shift");
    assert_eq!(
        text(&h),
        "pressure shifted between zones: allocations DMA32 20% -> 50%, \
         Normal 80% -> 50%"
    );
    assert!(zone_shift(&[&a], &[&a]).is_none());
}

/// A memcg way in through `frames` whose stall per run moved by
/// `diff` seconds, significantly when `moved`.
fn way(frames: &[&str], diff: f64, moved: bool) -> EntryRow {
    EntryRow {
        context: crate::model::report::EntryWay::Memcg,
        frames: frames.iter().map(|f| f.to_string()).collect(),
        groups: vec![None, None],
        changes: vec![Some(super::super::Change {
            diff,
            pct: None,
            welch: None,
        })],
        moved: vec![moved],
    }
}

/// The reclaim mechanism names the way in that moved most (of those
/// that moved), in its first callers; one that did not move is not
/// named, however large its change.
#[test]
fn reclaim_names_the_way_in_that_moved_most() {
    let entries = [
        way(
            &[
                "try_to_free_mem_cgroup_pages",
                "do_anonymous_page",
                "handle_mm_fault",
            ],
            0.9,
            false,
        ),
        way(
            &[
                "try_to_free_mem_cgroup_pages",
                "try_charge_memcg",
                "filemap_add_folio",
                "page_cache_ra_unbounded",
                "filemap_read",
                "vfs_read",
            ],
            0.225,
            true,
        ),
    ];
    let e = Evidence {
        entries: &entries,
        ..b_vs_a(&[], true)
    };
    assert_eq!(
        way_text(&e).as_deref(),
        Some(
            "memcg via try_charge_memcg < filemap_add_folio < page_cache_ra_unbounded < ... (+225ms/run)"
        )
    );
    let none = Evidence {
        entries: &entries[..1],
        ..b_vs_a(&[], true)
    };
    assert_eq!(way_text(&none), None);
    // A direct compaction's way moved more, but it is no reclaim's.
    let mut compaction = way(
        &[
            "try_to_compact_pages",
            "__alloc_pages_direct_compact",
            "do_huge_pmd_anonymous_page",
        ],
        2.0,
        true,
    );
    compaction.context = crate::model::report::EntryWay::Compaction;
    let with_compaction: Vec<EntryRow> = entries.iter().cloned().chain([compaction]).collect();
    let e = Evidence {
        entries: &with_compaction,
        ..b_vs_a(&[], true)
    };
    assert!(
        way_text(&e).is_some_and(|w| w.starts_with("memcg via")),
        "{:?}",
        way_text(&e)
    );
}

/// Two ways through the same charge path: the read is told apart where
/// it leaves it, not by the frames every charging way has.
#[test]
fn a_way_in_is_named_where_it_parts_from_the_others() {
    let charge = [
        "try_to_free_mem_cgroup_pages",
        "try_charge_memcg",
        "charge_memcg",
    ];
    fn with<'a>(charge: &[&'a str], rest: &[&'a str]) -> Vec<&'a str> {
        [charge, rest].concat()
    }
    let entries = [
        way(
            &with(
                &charge,
                &[
                    "__mem_cgroup_charge",
                    "alloc_anon_folio",
                    "do_anonymous_page",
                ],
            ),
            0.1,
            false,
        ),
        way(
            &with(
                &charge,
                &[
                    "__mem_cgroup_charge",
                    "__filemap_add_folio",
                    "filemap_add_folio",
                    "page_cache_ra_unbounded",
                    "filemap_read",
                    "vfs_read",
                ],
            ),
            1.6,
            true,
        ),
    ];
    let e = Evidence {
        entries: &entries,
        ..b_vs_a(&[], true)
    };
    assert_eq!(
        way_text(&e).as_deref(),
        Some(
            "memcg via ... < __filemap_add_folio < filemap_add_folio < page_cache_ra_unbounded < ... (+1.6s/run)"
        )
    );
}

/// The third case: B adds 6000 file-read faults, swap-ins the
/// same: the I/O waits' part is file reads', all of it.
#[test]
fn extra_file_reads_take_the_io_waits_when_swap_ins_hold_still() {
    let a: Vec<RunReport> = (0..3)
        .map(|i| measured_run(i, false, 1000, 1000, false))
        .collect();
    let b: Vec<RunReport> = (0..3)
        .map(|i| measured_run(i, true, 1000, 7000, false))
        .collect();
    let (rows, _, hints) = hints_of(&a, &b);
    let io = part(&rows, Component::BlockIoWaits);
    let file = claim(&hints, Mechanism::FileReads);
    assert!(
        io > 0.0 && (file - io).abs() < 1e-6 * io.max(1.0),
        "{file} of {io}: {hints:#?}"
    );
}

mod profile;

/// A file read through a mapping is one major fault per readahead
/// window (filemap_fault finds the rest in flight): B reads 24k more
/// pages with the same faults. The job's pages read besides swap
/// (rusage's block input less pswpin) carry the I/O waits' part to file
/// reads, none of it to swap-in (measured: 96 MiB read through a
/// mapping of a throttled disk, faults 2 -> 1, pages 190 -> 24.6k).
#[test]
fn file_reads_by_pages_read_when_their_faults_hold_still() {
    let run = |i: u64, worse: bool, file_pages: u64| {
        let r = measured_run(i, worse, 1000, 1000, true);
        let in_blocks = (r.vmstat.pswpin + file_pages) * 8;
        RunReport {
            usage: crate::model::report::Usage {
                in_blocks,
                ..r.usage
            },
            ..r
        }
    };
    for base in [200, 0] {
        file_reads_by_pages(base, &run);
    }
}

/// A slower swap device, the same swap-ins, and file pages read that
/// differ by chance (B a few more, far within noise): the I/O waits are
/// swap-in's, none file reads' (measured: the throttled swap device's
/// 8.9 s went to a file-read share of a +1 page change).
#[test]
fn a_file_read_change_within_noise_claims_no_io() {
    let run = |i: u64, worse: bool| {
        let r = measured_run(i, worse, 1000, 0, true);
        let noise = [10, 40, 12][i as usize] + u64::from(worse) * 6;
        let in_blocks = (r.vmstat.pswpin + noise) * 8;
        RunReport {
            usage: crate::model::report::Usage {
                in_blocks,
                ..r.usage
            },
            ..r
        }
    };
    let a: Vec<RunReport> = (0..3).map(|i| run(i, false)).collect();
    let b: Vec<RunReport> = (0..3).map(|i| run(i, true)).collect();
    let (rows, _, hints) = hints_of(&a, &b);
    let io = part(&rows, Component::BlockIoWaits);
    let swap = claim(&hints, Mechanism::SwapIn);
    assert!(
        io > 0.0 && swap >= io * (1.0 - 1e-6),
        "{swap} of {io}: {hints:#?}"
    );
    assert!(
        hints.iter().all(|h| h.mechanism != Mechanism::FileReads),
        "{hints:#?}"
    );
}

/// The same swap-ins and file reads, and B dirtying 20k more file pages
/// (a job that writes, throttled in balance_dirty_pages): the I/O waits
/// are writeback's, none of them swap-in's.
#[test]
fn writeback_by_pages_dirtied() {
    let run = |i: u64, worse: bool| {
        let r = measured_run(i, worse, 1000, 0, true);
        let dirtied = if worse { 20_000 + 7 * i } else { 100 + 3 * i };
        RunReport {
            usage: crate::model::report::Usage {
                in_blocks: (r.vmstat.pswpin + 10) * 8,
                out_blocks: dirtied * 8,
                ..r.usage
            },
            ..r
        }
    };
    let a: Vec<RunReport> = (0..3).map(|i| run(i, false)).collect();
    let b: Vec<RunReport> = (0..3).map(|i| run(i, true)).collect();
    let (rows, _, hints) = hints_of(&a, &b);
    let io = part(&rows, Component::BlockIoWaits);
    let seconds = |m: Mechanism| claim(&hints, m);
    let w = seconds(Mechanism::Writeback);
    assert!(
        io > 0.0 && (w - io).abs() < 1e-6 * io,
        "{w} of {io}: {hints:#?}"
    );
    // Swap-in keeps only its share of the other system CPU.
    let sys = part(&rows, Component::OtherSystemCpu);
    assert!(seconds(Mechanism::SwapIn) <= sys + 1e-9, "{hints:#?}");
    let text = text_of(&hints, Mechanism::Writeback);
    assert!(text.contains("pages written 103 -> 20.0k"), "{text}");
}

/// As above, A reading `base` pages besides swap (0: none in every run,
/// which no t-test can judge).
fn file_reads_by_pages(base: u64, run: &dyn Fn(u64, bool, u64) -> RunReport) {
    let a: Vec<RunReport> = (0..3)
        .map(|i| run(i, false, if base == 0 { 0 } else { base + i }))
        .collect();
    let b: Vec<RunReport> = (0..3).map(|i| run(i, true, 24_000 + i)).collect();
    let (rows, _, hints) = hints_of(&a, &b);
    let io = part(&rows, Component::BlockIoWaits);
    let seconds = |m: Mechanism| claim(&hints, m);
    let file = seconds(Mechanism::FileReads);
    assert!(
        io > 0.0 && (file - io).abs() < 1e-6 * io,
        "{file} of {io}: {hints:#?}"
    );
    assert_eq!(seconds(Mechanism::SwapIn), 0.0, "{hints:#?}");
    let text = &text_of(&hints, Mechanism::FileReads);
    let from = if base == 0 { "0" } else { "201" };
    assert!(
        text.contains(&format!("pages read {from} -> 24.0k")),
        "{text}"
    );
}
