//! Tests of the SVG plots as documents: well-formed, with every part a
//! reader needs, "no values" where there are none, and never NaN.

use super::{Series, latency_plot, page::run_labels, recording_svg};
use crate::model::format::fmt_ns_3sig;
use crate::{
    model::histogram::{Summary, summarize},
    model::recording::{Environment, RecordedRun, Recording, Workload},
    model::report::{ReclaimReport, RunReport, SwapIoReport},
    model::sample::{Sample, ZoneSample},
    view::plot::labels::MAX_LABEL,
};
use vmtrace_common::hist::{BUCKETS, bucket_of};

fn summary_of(values: &[u64]) -> Summary {
    let mut counts = vec![0u64; BUCKETS];
    for &v in values {
        counts[bucket_of(v)] += 1;
    }
    summarize(&counts)
}

/// Checks the document is one well-formed <svg> element: tags nest
/// and close, attribute quotes pair up, text has no bare `<` or `&`,
/// and no number is NaN or infinite.
fn assert_well_formed(doc: &str) {
    assert!(
        doc.starts_with("<svg xmlns="),
        "{}",
        &doc[..doc.len().min(80)]
    );
    assert!(doc.trim_end().ends_with("</svg>"));
    for bad in ["NaN", "inf", "nan"] {
        assert!(!doc.contains(bad), "{bad} in the SVG");
    }
    let mut open: Vec<String> = Vec::new();
    let mut rest = doc;
    let mut roots = 0;
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        assert!(!text.contains('>'), "bare > in text {text:?}");
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
                    .iter()
                    .any(|e| entity.starts_with(e)),
                "bare & in text {text:?}"
            );
        }
        let gt = rest[lt..].find('>').expect("tag ends") + lt;
        let tag = &rest[lt + 1..gt];
        assert_eq!(tag.matches('"').count() % 2, 0, "quotes in <{tag}>");
        assert!(!tag.contains('<'), "< inside <{tag}>");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(open.pop().as_deref(), Some(name), "</{name}> closes");
        } else if !tag.ends_with('/') {
            let name: String = tag
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            if open.is_empty() {
                roots += 1;
            }
            open.push(name);
        } else if open.is_empty() {
            roots += 1;
        }
        rest = &rest[gt + 1..];
    }
    assert!(open.is_empty(), "unclosed {open:?}");
    assert!(rest.trim().is_empty());
    assert_eq!(roots, 1, "one root element");
}

fn zone(name: &str, free: u64, managed: u64) -> ZoneSample {
    ZoneSample {
        node: 0,
        zone: name.into(),
        free,
        min: 100,
        low: 125,
        high: 150,
        managed,
        ..Default::default()
    }
}

fn timeline(n: usize) -> Vec<Sample> {
    (1..=n)
        .map(|i| {
            let i64 = i as u64;
            Sample {
                t_s: i as f64,
                pgscan: 1000 * i64 * i64,
                pgsteal: 400 * i64 * i64,
                pswpout: 300 * i64,
                pswpin: 20 * i64,
                zones: vec![
                    zone("DMA", 3840, 3840),
                    zone("Normal", 5000 - 200 * i64.min(20), 100_000),
                    zone("Movable", 0, 0),
                    zone("Device", 0, 0),
                ],
                ..Default::default()
            }
        })
        .collect()
}

fn report(stall_values: &[u64], tl: Vec<Sample>) -> RunReport {
    RunReport {
        kernel_release: "6.18.44".into(),
        memcg_reclaim: Some(ReclaimReport {
            stalls: summary_of(stall_values),
            pages_reclaimed: 1,
            split: None,
        }),
        direct_reclaim: Some(ReclaimReport {
            stalls: summary_of(&[]),
            pages_reclaimed: 0,
            split: None,
        }),
        swap_io: Some(SwapIoReport {
            areas: vec!["/swap".into()],
            truncated: false,
            write: summary_of(&[500_000, 600_000, 2_000_000]),
            write_bytes: 0,
            read: summary_of(&[]),
            read_bytes: 0,
        }),
        timeline: tl,
        ..Default::default()
    }
}

fn recording(kernel: &str, runs: Vec<(&str, RunReport)>) -> Recording {
    let mut rec = Recording::new(
        Workload {
            name: "memhog".into(),
            arguments: vec!["--mib".into(), "300".into()],
            seed: Some(1),
        },
        Environment {
            kernel_release: kernel.into(),
            hostname: "box".into(),
            cpus: 4,
            mem_total_bytes: 8 << 30,
            ..Default::default()
        },
    );
    rec.created_utc = "2026-11-30T03:04:05Z".into();
    rec.runs = runs
        .into_iter()
        .map(|(label, report)| RecordedRun {
            label: label.into(),
            report,
        })
        .collect();
    rec
}

fn spread(n: u64, scale: u64) -> Vec<u64> {
    (1..=n).map(|i| scale * (1 + i * i % 997)).collect()
}

#[test]
fn latency_plot_overlays_series_with_a_legend() {
    let a = summary_of(&spread(5000, 1000));
    let b = summary_of(&spread(300, 2500));
    let doc = latency_plot(
        "memcg reclaim stall",
        &[
            Series {
                label: "6.18.44".into(),
                summary: &a,
            },
            Series {
                label: "6.1.0".into(),
                summary: &b,
            },
        ],
    );
    assert_well_formed(&doc);
    for want in [
        "memcg reclaim stall",
        "6.18.44",
        "6.1.0",
        "5,000",
        "300",
        "p50",
        "p99",
        "90%",
        "99.9%",
        "percentile",
        "latency (log scale)",
        " us<",
        "font-family=\"sans-serif\"",
        "fill=\"white\"",
    ] {
        assert!(doc.contains(want), "lacks {want:?}");
    }
    assert_eq!(doc.matches("<polyline").count(), 2);
    assert!(!doc.contains("no values"));
    // p50 of the first series, as the legend prints it.
    assert!(doc.contains(&fmt_ns_3sig(a.p50_ns as f64)));
}

#[test]
fn empty_inputs_say_no_values() {
    let empty = summary_of(&[]);
    for series in [
        vec![],
        vec![Series {
            label: "idle".into(),
            summary: &empty,
        }],
    ] {
        let doc = latency_plot("nothing", &series);
        assert_well_formed(&doc);
        assert!(doc.contains("no values"));
        assert!(!doc.contains("<polyline"));
    }
    let doc = recording_svg(&[]);
    assert_well_formed(&doc);
    assert!(doc.contains("no values"));

    let no_runs = recording("6.1", vec![]);
    let doc = recording_svg(&[&no_runs]);
    assert_well_formed(&doc);
    assert!(doc.contains("no values"));

    let bare = recording("6.1", vec![("", RunReport::default())]);
    let doc = recording_svg(&[&bare]);
    assert_well_formed(&doc);
    assert!(doc.contains("no latency histogram has values"));
    assert!(doc.contains("no timeline samples"));
}

#[test]
fn one_value_and_extreme_values_plot() {
    let one = summary_of(&[1234]);
    let huge = summary_of(&[0, 1, u64::MAX]);
    let doc = latency_plot(
        "odd",
        &[
            Series {
                label: "one".into(),
                summary: &one,
            },
            Series {
                label: "huge".into(),
                summary: &huge,
            },
        ],
    );
    assert_well_formed(&doc);
    assert!(doc.contains("<circle"));
    assert!(doc.contains(&fmt_ns_3sig(one.max_ns as f64)));
    assert!(!doc.contains("no values"));
}

#[test]
fn broken_hdr_payload_falls_back_to_buckets() {
    let mut s = summary_of(&spread(1000, 100));
    s.hdr = "not base64!".into();
    let doc = latency_plot(
        "fallback",
        &[Series {
            label: "x".into(),
            summary: &s,
        }],
    );
    assert_well_formed(&doc);
    assert!(doc.contains("<polyline"));
    assert!(doc.contains("1,000"));
}

#[test]
fn labels_are_escaped() {
    let s = summary_of(&[1000, 2000]);
    let doc = latency_plot(
        "a < b & \"c\"",
        &[Series {
            label: "<script>&'x'".into(),
            summary: &s,
        }],
    );
    assert_well_formed(&doc);
    assert!(doc.contains("a &lt; b &amp; &quot;c&quot;"));
    assert!(doc.contains("&lt;script&gt;&amp;&apos;x&apos;"));
    assert!(!doc.contains("<script"));
}

#[test]
fn recording_page_has_every_part() {
    let a = recording(
        "6.18.44-fc",
        vec![("", report(&spread(4000, 1000), timeline(10)))],
    );
    let b = recording(
        "6.1.0-57-amd64",
        vec![
            ("-j1", report(&spread(2000, 3000), timeline(5))),
            ("-j2", report(&spread(2000, 5000), timeline(5))),
        ],
    );
    let doc = recording_svg(&[&a, &b]);
    assert_well_formed(&doc);
    for want in [
        "vmtrace: memhog --mib 300",
        "[1] Linux 6.18.44-fc, host box, 4 CPUs, 8 GiB RAM, 1 run",
        "Latency by percentile: memcg reclaim stall",
        "Latency by percentile: swap write request",
        ">6.18.44-fc<",
        ">6.1.0-57-amd64 -j1<",
        ">6.1.0-57-amd64 -j2<",
        "Memory pressure over time: 6.18.44-fc",
        "Reclaim: pages scanned and reclaimed",
        "scanned/s",
        "reclaimed/s",
        "swap-out/s",
        "swap-in/s",
        "Node 0 DMA: free pages",
        "Node 0 Normal: free pages",
        "min 100",
        "time since the command started (s)",
        "pages per second",
    ] {
        assert!(doc.contains(want), "lacks {want:?}");
    }
    // Empty histograms and empty zones get no panel.
    assert!(!doc.contains("direct reclaim stall"));
    assert!(!doc.contains("swap read request"));
    assert!(!doc.contains("Movable"));
    assert!(!doc.contains("Device"));
    // Only the first recording's timeline.
    assert!(!doc.contains("Memory pressure over time: 6.1.0"));
    // Deterministic.
    assert_eq!(doc, recording_svg(&[&a, &b]));
}

#[test]
fn odd_timelines_never_give_nan() {
    let mut tl = timeline(1);
    let mut nan = timeline(2).remove(1);
    nan.t_s = f64::NAN;
    tl.push(nan);
    let mut back = timeline(3).remove(2);
    back.pgscan = 0; // counter went backwards
    back.t_s = 1.0; // and no time passed
    tl.push(back);
    let mut inf = timeline(4).remove(3);
    inf.t_s = f64::INFINITY;
    tl.push(inf);
    let mut neg = timeline(1).remove(0);
    neg.t_s = -5.0;
    tl.insert(0, neg);
    let rec = recording(
        "6.1",
        vec![
            ("", report(&[5], tl)),
            ("", report(&[], timeline(1))),
            ("", report(&[], vec![])),
        ],
    );
    let doc = recording_svg(&[&rec]);
    assert_well_formed(&doc);
    assert!(doc.contains(">6.1 run 1<"));
    assert!(doc.contains(">6.1 run 3<"));
    assert!(doc.contains("no timeline samples"));
}

#[test]
fn labels_are_unique() {
    let r = || report(&[1000], vec![]);
    let a = recording("6.1", vec![("", r())]);
    let b = recording("6.1", vec![("", r())]);
    let c = recording("", vec![("-j1", r()), ("-j1", r())]);
    let labels = run_labels(&[&a, &b, &c]);
    assert_eq!(
        labels,
        vec![
            vec!["6.1 [1]".to_string()],
            vec!["6.1 [2]".to_string()],
            vec![
                "6.18.44 -j1 run 1".to_string(),
                "6.18.44 -j1 run 2".to_string()
            ],
        ]
    );
    let long = recording(&"x".repeat(100), vec![("", r())]);
    let labels = run_labels(&[&long]);
    assert_eq!(labels[0][0].chars().count(), MAX_LABEL);
}
