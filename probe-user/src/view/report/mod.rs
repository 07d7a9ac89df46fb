//! The run report printed: plain text that survives a mailing list
//! (`text`: ASCII, at most 72 columns; one function per section), colour
//! for a terminal, and `runs`, the table of repeated runs. Reads the
//! model only.

use crate::model::report::RunReport;

/// `Out of Memory: Killed process PID (comm).` for each of the
/// command's processes the OOM killer took, in the words of the mails
/// that argue about it; the first lines of a report.
pub fn oom_lines(report: &RunReport) -> Vec<String> {
    let mut lines: Vec<String> = report
        .oom_victims
        .iter()
        .flatten()
        .filter(|v| v.target && v.victim_known)
        .map(|v| format!("Out of Memory: Killed process {} ({}).", v.pid, v.comm))
        .collect();
    if lines.is_empty() && report.exit.oom_killed {
        lines.push(format!("Out of Memory: Killed process {}.", report.pid));
    }
    lines
}

/// The run as csh's `time` prints it, as in the seed mails:
/// `70.270u 7.330s 2:33.29 50.6%    0+0k 0+0io 19670pf+0w`
/// (pf: major faults; io: block operations in+out).
pub fn time_line(report: &RunReport) -> String {
    let u = &report.usage;
    let minutes = (u.wall_s / 60.0).floor();
    let cpu = if u.wall_s > 0.0 {
        (u.user_s + u.sys_s) / u.wall_s * 100.0
    } else {
        0.0
    };
    format!(
        "{:.3}u {:.3}s {}:{:05.2} {:.1}%    0+0k {}+{}io {}pf+0w",
        u.user_s,
        u.sys_s,
        minutes,
        u.wall_s - minutes * 60.0,
        cpu,
        u.in_blocks,
        u.out_blocks,
        u.major_faults
    )
}

/// kswapd CPU time over the run, `m:ss kswapd`, as the mails append it.
pub fn kswapd_line(report: &RunReport) -> Option<String> {
    let k = report.kswapd.as_ref()?;
    let s = k.nodes.iter().map(|n| n.cpu_s).sum::<f64>().round() as u64;
    Some(format!("{}:{:02} kswapd", s / 60, s % 60))
}

/// The plain-text report (ASCII, <= 72 columns).
pub fn to_text(report: &RunReport) -> String {
    let mut o = String::new();
    let _ = text::write_text(&mut o, report);
    o
}

mod probes;
mod runs;
mod text;

pub use probes::probes_text;
pub use runs::{KernelsRow, KernelsTable, RunsColumn, RunsTable};

/// Terminal colour for report text: headings (lines that start at the
/// first column) bold, OOM and incomplete-recording lines red.
pub fn colourize(text: &str) -> String {
    let mut o = String::with_capacity(text.len() + text.len() / 8);
    for line in text.lines() {
        if line.starts_with("Out of Memory") || line.starts_with("INCOMPLETE") {
            o.push_str(&format!("\x1b[1;31m{line}\x1b[0m\n"));
        } else if !line.is_empty() && !line.starts_with(' ') {
            o.push_str(&format!("\x1b[1m{line}\x1b[0m\n"));
        } else {
            o.push_str(line);
            o.push('\n');
        }
    }
    o
}

#[cfg(test)]
mod tests {
    #[test]
    fn colour_marks_headings_and_oom_only() {
        let c = colourize("Out of Memory: Killed process 1 (x).\nmemcg reclaim: 3\n  row 1\n\n");
        assert_eq!(
            c,
            "\x1b[1;31mOut of Memory: Killed process 1 (x).\x1b[0m\n\x1b[1mmemcg reclaim: 3\x1b[0m\n  row 1\n\n"
        );
    }

    use super::text::hist::power_of_two_rows;
    use super::*;
    use crate::{
        kernel::{
            fill::{Readings, Traced, fill},
            probes::MetricId,
            totals::KernelTotals,
        },
        model::{report::*, vmstat::VmStat},
    };
    use vmtrace_common::{
        Counter, Hist, ReclaimContext,
        hist::{BUCKETS, bucket_of},
    };

    fn sample_report() -> RunReport {
        let mut counts = vec![vec![0u64; BUCKETS]; Hist::COUNT as usize];
        for v in [3_000u64, 5_000, 40_000, 41_000, 2_000_000, 9_000_000_000] {
            counts[Hist::MemcgReclaim as usize][bucket_of(v)] += 1;
        }
        let mut counters = vec![0u64; Counter::COUNT as usize];
        counters[Counter::MemcgReclaims as usize] = 6;
        counters[Counter::MemcgReclaimPages as usize] = 1234;
        counters[Counter::MajorFaultsAll as usize] = 500;
        counters[Counter::MajorFaultsTarget as usize] = 480;
        counters[Counter::WriteFolioAnon as usize] = 777;
        // Two stallers were inserted, one is left: one was evicted.
        counters[Counter::StallerInserts as usize] = 2;
        let mut comm = [0u8; 16];
        comm[..6].copy_from_slice(b"memhog");
        let totals = KernelTotals {
            hists: counts,
            counters,
            lru: vec![crate::kernel::totals::LruRow {
                node: 0,
                context: ReclaimContext::Memcg,
                lru: vmtrace_common::LruType::Anon,
                totals: vmtrace_common::LruShrinkInactive {
                    events: 10,
                    nr_scanned: 320,
                    nr_reclaimed: 300,
                    nr_ref_keep: 20,
                    ..Default::default()
                },
            }],
            priority: vec![(ReclaimContext::Memcg, {
                let mut p = vec![0; 13];
                p[12] = 9;
                p[0] = 1;
                p
            })],
            order: vec![(ReclaimContext::Memcg, {
                let mut o = vec![0; 12];
                o[0] = 5;
                o[11] = 1;
                o
            })],
            stallers: vec![(
                4242,
                vmtrace_common::Staller {
                    comm,
                    stalls: vmtrace_common::StallTotals {
                        memcg_ns: 9_000_000_000,
                        memcg_count: 6,
                        target: 1,
                        ..Default::default()
                    },
                },
            )],
            ..Default::default()
        };
        // Every metric ran but direct reclaim and those without a row in
        // the totals; the process table holds the OOM victim.
        let skipped = [
            MetricId::DirectReclaim,
            MetricId::Kswapd,
            MetricId::KswapdWakeups,
            MetricId::SwapIo,
        ];
        let traced = Traced {
            enabled: MetricId::ALL
                .into_iter()
                .filter(|id| !skipped.contains(id))
                .collect(),
            totals: KernelTotals {
                processes: vec![(
                    4242,
                    vmtrace_common::ProcFaults {
                        comm,
                        threads: 1,
                        ..Default::default()
                    },
                )],
                ..totals
            },
            unavailable: vec![Unavailable {
                metric: "direct_reclaim".into(),
                reason: "this kernel has no tracepoint vmscan:mm_vmscan_direct_reclaim_begin \
                         and the reason is long enough to need wrapping"
                    .into(),
            }],
            partial: vec![Unavailable {
                metric: "oom".into(),
                reason: "oom:mark_victim has no field anon_rss (shown as 0)".into(),
            }],
            oom_victims: vec![vmtrace_common::OomVictim {
                time_ns: 2_500_000_000,
                pid: 4242,
                target: 1,
                comm,
                anon_rss_kb: 65280,
                ..Default::default()
            }],
            started_mono_ns: 1_000_000_000,
            ..Default::default()
        };
        let vmstat = VmStat::default();
        let filled = fill(Readings {
            before: &vmstat,
            after: &vmstat,
            cpu_before: None,
            cpu_after: None,
            wall_s: 0.0,
            traced: Some(traced),
        });
        RunReport {
            vmtrace_version: "0.1.0".into(),
            kernel_release: "6.18.44".into(),
            command: vec!["memhog".into(), "--mib".into(), "384".into()],
            target: "cgroup vmtrace-1 (id 42)".into(),
            exit: Exit {
                code: None,
                signal: Some(9),
                oom_killed: true,
                interrupted: false,
                background_killed: 0,
            },
            // The machine's zswap and swap areas: not this test's.
            swap_causes: None,
            ..filled
        }
    }

    #[test]
    fn text_is_ascii_and_fits_72_columns() {
        let text = to_text(&sample_report());
        for line in text.lines() {
            assert!(line.is_ascii(), "{line}");
            assert!(line.len() <= 72, "{} columns: {line}", line.len());
        }
        assert!(text.contains("memcg reclaim: 6 stalls"), "{text}");
        assert!(text.contains("OOM-killed"), "{text}");
        assert!(
            text.contains("notice: direct_reclaim unavailable"),
            "{text}"
        );
        assert!(!text.contains("direct reclaim:"), "{text}");
        assert!(text.contains("    320          300   93.8"), "{text}");
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some("Out of Memory: Killed process 4242 (memhog).")
        );
        // csh time format: the sample has no usage, so all zero.
        assert_eq!(
            lines.next(),
            Some("0.000u 0.000s 0:00.00 0.0%    0+0k 0+0io 0pf+0w")
        );
        assert!(text.contains("*     4242 memhog"), "{text}");
        // The kernel passes order 0 for every memcg reclaim: no row.
        assert!(
            !text.contains("memcg reclaims by allocation order"),
            "{text}"
        );
        assert!(text.contains("12:9 0:1"), "{text}");
        assert!(text.contains("swap-out: 777 anon folios"), "{text}");
        assert!(text.contains("referenced, kept"), "{text}");
        assert!(text.contains("= scanned                   320"), "{text}");
        assert!(
            text.contains("rows evicted from full tables (their totals are short):"),
            "{text}"
        );
        assert!(text.contains("reclaim\n  stallers 1"), "{text}");
        assert!(text.contains("notice: oom incomplete: oom:mark_victim has no field"));
    }

    #[test]
    fn histogram_rows_cover_first_to_last_power() {
        let r = sample_report();
        let s = &r.memcg_reclaim.as_ref().expect("memcg").stalls;
        let rows = power_of_two_rows(s);
        assert_eq!(rows.iter().map(|r| r.2).sum::<u64>(), 6);
        // 2^11 (2048 ns) .. 2^33 (8.6 s): 23 rows, contiguous.
        assert_eq!(rows.first().map(|r| r.0), Some(2048));
        assert_eq!(rows.len(), 23);
        for w in rows.windows(2) {
            assert_eq!(w[0].1, w[1].0);
        }
        assert!(rows.iter().all(|r| r.3.len() <= 32));
    }

    #[test]
    fn json_has_the_numbers() {
        let json: serde_json::Value =
            serde_json::from_str(&sample_report().to_json()).expect("valid JSON");
        assert_eq!(json["memcg_reclaim"]["stalls"]["count"], 6);
        assert_eq!(json["memcg_reclaim"]["pages_reclaimed"], 1234);
        assert_eq!(json["faults"]["major_all"], 500);
        assert_eq!(json["lru_shrink_inactive"][0]["nr_scanned"], 320);
        assert_eq!(json["lru_shrink_inactive"][0]["lru"], "anon");
        assert_eq!(json["oom_victims"][0]["pid"], 4242);
        assert_eq!(json["top_stallers"][0]["memcg_ns"], 9_000_000_000u64);
        assert!(json["direct_reclaim"].is_null());
    }

    #[test]
    fn probes_listing_fits_and_says_why() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/kernel-formats/6.1.0-57-amd64");
        let tracefs = crate::kernel::tracefs::TraceFs::at(&dir);
        let listed = crate::kernel::probes::listing(&tracefs, None).expect("listing");
        let text = probes_text("6.1.0-57-amd64", &listed);
        for line in text.lines() {
            assert!(line.is_ascii() && line.len() <= 72, "{line}");
        }
        assert!(
            text.contains("fault_latency (page fault latency)"),
            "{text}"
        );
        assert!(text.contains("UNAVAILABLE"), "{text}");
        assert!(text.contains("why: kernel BTF"), "{text}");
        assert!(text.contains("tracepoint vmscan:mm_vmscan_lru_shrink_inactive"));
        let fl = listed
            .iter()
            .find(|m| m.id == MetricId::FaultLatency.name())
            .expect("fl");
        assert!(!fl.available && fl.opt_in.as_deref() == Some("--fault-latency"));
        assert!(
            listed
                .iter()
                .filter(|m| {
                    ![
                        MetricId::FaultLatency,
                        MetricId::KernelFaults,
                        MetricId::ProcessFaults,
                        MetricId::SwapIo,
                        MetricId::ReclaimStallers,
                        MetricId::SchedSplit,
                    ]
                    .iter()
                    .any(|id| id.name() == m.id)
                })
                .all(|m| m.available)
        );
    }

    #[test]
    fn runs_table_counts_failures_apart() {
        let run = |wall_s: f64, code: Option<i32>, oom: bool| RunReport {
            usage: Usage {
                wall_s,
                ..Default::default()
            },
            exit: Exit {
                code,
                signal: code.is_none().then_some(9),
                oom_killed: oom,
                interrupted: false,
                background_killed: 0,
            },
            ..Default::default()
        };
        let runs = [
            run(10.0, Some(0), false),
            run(12.0, Some(0), false),
            run(3.0, None, true),
            run(14.0, Some(0), false),
        ];
        let fast = [run(5.0, Some(0), false), run(7.0, Some(0), false)];
        let t = RunsTable::of(&[
            ("-j5".to_string(), runs.iter().collect()),
            ("-j10".to_string(), fast.iter().collect()),
        ]);
        let c = &t.columns[0];
        assert_eq!(c.mean_s, Some(12.0));
        assert_eq!(c.stddev_s, Some(2.0));
        assert_eq!((c.min_s, c.max_s), (Some(10.0), Some(14.0)));
        let text = t.to_text();
        assert!(
            text.starts_with("     run        -j5       -j10\n"),
            "{text}"
        );
        assert!(text.contains("       3        OOM          -"), "{text}");
        assert!(text.contains("1 of 6 runs failed"), "{text}");

        // Across kernels: a row per recording, the values as columns.
        let rec = |release: &str, reports: &[(&str, &RunReport)]| {
            let mut r = crate::model::recording::Recording::new(
                crate::model::recording::Workload::default(),
                crate::model::recording::environment::Environment::default(),
            );
            r.environment.kernel_release = release.into();
            for (label, report) in reports {
                r.runs.push(crate::model::recording::RecordedRun {
                    label: label.to_string(),
                    report: (*report).clone(),
                });
            }
            r
        };
        let a = rec(
            "6.1.0-57-amd64",
            &[("-j5", &runs[0]), ("-j5", &runs[1]), ("-j10", &fast[0])],
        );
        let b = rec(
            "6.12.57+deb12-amd64",
            &[("-j5", &runs[2]), ("-j5", &runs[3])],
        );
        let k = KernelsTable::of(&[
            ("6.1.0-57-amd64".into(), &a),
            ("6.12.57+deb12-amd64".into(), &b),
        ]);
        assert_eq!(k.labels, ["-j5", "-j10"]);
        let ktext = k.to_text();
        assert!(
            ktext.contains("6.1.0-57-amd64        11.00 +-1.41           5.00"),
            "{ktext}"
        );
        assert!(
            ktext.contains("6.12.57+deb12-amd64          14.00              -"),
            "{ktext}"
        );
        assert!(
            ktext.contains("6.12.57+deb12-amd64 -j5: 1 of 2 failed (OOM)"),
            "{ktext}"
        );
        for l in ktext.lines() {
            assert!(l.is_ascii() && l.len() <= 72, "{l:?}");
        }
        assert!(text.contains("    mean      12.00       6.00"), "{text}");
        // A tree and its patch's subject do not fit the column: the rows
        // are letters, the names above them whole, never cut to one.
        let long = KernelsTable::of(&[
            ("linux-source-6.1".into(), &a),
            (
                "linux-source-6.1 + mm/vmscan: 20us busy wait per folio (planted)".into(),
                &b,
            ),
        ]);
        let ltext = long.to_text();
        assert!(ltext.contains("A = linux-source-6.1\n"), "{ltext}");
        assert!(
            ltext.contains("B = linux-source-6.1 + mm/vmscan: 20us busy wait per folio"),
            "{ltext}"
        );
        assert!(ltext.contains("\nA        11.00 +-1.41"), "{ltext}");
        assert!(ltext.contains("  B -j5: 1 of 2 failed (OOM)"), "{ltext}");
        for l in ltext.lines() {
            assert!(l.is_ascii() && l.len() <= 72, "{l:?}");
        }
    }
}
