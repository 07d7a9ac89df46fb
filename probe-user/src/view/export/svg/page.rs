//! The page for one or more recordings (`vmtrace export --format svg`):
//! a header naming the workload and each recording, a latency panel per
//! histogram kind with every run overlaid, then pressure over time for
//! the first recording's runs.

use crate::model::format::trim_num;
use vmtrace_common::Hist;

use super::latency::{Series, latency_panel};
use super::pressure::{Shared, pressure_section, usable};
use super::{curve::curve_of, full_width_area};
use crate::model::{histogram::Summary, recording::Recording, report::RunReport, sample::Sample};
use crate::view::plot::{
    axes::{Area, no_values_box, panel_title},
    labels::shorten,
    style::{MARGIN, MUTED, PAGE_W, TEXT},
    svg::Svg,
};

/// Pressure over time is drawn for at most this many runs of the first
/// recording.
const MAX_TIMELINE_RUNS: usize = 4;
/// The header names at most this many recordings.
const MAX_HEADER_LINES: usize = 6;

/// An empty summary, for runs that lack a histogram.
static EMPTY: Summary = Summary {
    count: 0,
    total_ns: 0,
    p50_ns: 0,
    p90_ns: 0,
    p99_ns: 0,
    p999_ns: 0,
    max_ns: 0,
    buckets: Vec::new(),
    hdr: String::new(),
};

/// A run's label: `<kernel release> <run label or run N>` (the run part
/// left out for a recording of one unlabelled run).
fn run_label(i: usize, rec: &Recording, j: usize) -> String {
    let run = &rec.runs[j];
    let kernel = [
        rec.environment.kernel_release.trim(),
        run.report.kernel_release.trim(),
    ]
    .into_iter()
    .find(|k| !k.is_empty())
    .map_or_else(|| format!("recording {}", i + 1), shorten);
    let run_part = if !run.label.trim().is_empty() {
        shorten(&run.label)
    } else if rec.runs.len() > 1 {
        format!("run {}", j + 1)
    } else {
        String::new()
    };
    if run_part.is_empty() {
        kernel
    } else {
        format!("{kernel} {run_part}")
    }
}

/// Unique, short labels for every run of every recording, in order (see
/// `run_label`).
pub(super) fn run_labels(recordings: &[&Recording]) -> Vec<Vec<String>> {
    let mut labels: Vec<Vec<String>> = recordings
        .iter()
        .enumerate()
        .map(|(i, rec)| (0..rec.runs.len()).map(|j| run_label(i, rec, j)).collect())
        .collect();
    // The same label in several recordings: tell them apart by recording.
    let owners = |l: &String| labels.iter().filter(|runs| runs.contains(l)).count();
    let marks: Vec<Vec<bool>> = labels
        .iter()
        .map(|runs| runs.iter().map(|l| owners(l) > 1).collect())
        .collect();
    for (i, runs) in labels.iter_mut().enumerate() {
        for (j, l) in runs.iter_mut().enumerate() {
            if marks[i][j] {
                l.push_str(&format!(" [{}]", i + 1));
            }
        }
    }
    // The same label twice in one recording (a run label repeated): add
    // the run's number.
    for runs in labels.iter_mut() {
        let copy = runs.clone();
        for (j, l) in runs.iter_mut().enumerate() {
            if copy.iter().filter(|o| *o == l).count() > 1 {
                l.push_str(&format!(" run {}", j + 1));
            }
        }
    }
    labels
}

/// One line about a recording for the page header.
fn recording_line(i: usize, rec: &Recording) -> String {
    let env = &rec.environment;
    let mut parts: Vec<String> = Vec::new();
    let kernel = if env.kernel_release.trim().is_empty() {
        rec.runs
            .first()
            .map(|r| r.report.kernel_release.clone())
            .unwrap_or_default()
    } else {
        env.kernel_release.clone()
    };
    if !kernel.trim().is_empty() {
        parts.push(format!("Linux {}", kernel.trim()));
    }
    if !env.hostname.is_empty() {
        parts.push(format!("host {}", env.hostname));
    }
    if env.cpus > 0 {
        parts.push(format!("{} CPUs", env.cpus));
    }
    if env.mem_total_bytes > 0 {
        parts.push(format!(
            "{} GiB RAM",
            trim_num(env.mem_total_bytes as f64 / f64::from(1u32 << 30))
        ));
    }
    let runs = rec.runs.len();
    parts.push(format!("{runs} run{}", if runs == 1 { "" } else { "s" }));
    if !rec.created_utc.is_empty() {
        parts.push(rec.created_utc.clone());
    }
    if !rec.complete {
        parts.push(format!(
            "INCOMPLETE: {}",
            rec.incomplete_reason.as_deref().unwrap_or("interrupted")
        ));
    }
    format!("[{}] {}", i + 1, parts.join(", "))
}

/// The page's title: the first recording's workload and arguments.
fn page_title(recordings: &[&Recording]) -> String {
    let workload = recordings.first().map_or(String::new(), |r| {
        let mut w = r.workload.name.clone();
        for a in &r.workload.arguments {
            w.push(' ');
            w.push_str(a);
        }
        w
    });
    if workload.trim().is_empty() {
        "vmtrace".to_string()
    } else {
        format!("vmtrace: {}", shorten(&workload))
    }
}

/// The line about each recording under the title, from `y` down;
/// returns where they end.
fn recording_lines(svg: &mut Svg, recordings: &[&Recording], mut y: f64) -> f64 {
    for (i, rec) in recordings.iter().enumerate().take(MAX_HEADER_LINES) {
        y += 18.0;
        svg.text(
            (MARGIN, y),
            12.0,
            "start",
            MUTED,
            "",
            &recording_line(i, rec),
        );
    }
    if recordings.len() > MAX_HEADER_LINES {
        y += 18.0;
        let more = format!(
            "and {} more recordings",
            recordings.len() - MAX_HEADER_LINES
        );
        svg.text((MARGIN, y), 12.0, "start", MUTED, "", &more);
    }
    y + 16.0
}

/// A latency panel per histogram kind with values in any run, from `y`
/// down (or a note that none has values); returns where they end.
fn latency_panels(
    svg: &mut Svg,
    recordings: &[&Recording],
    labels: &[Vec<String>],
    mut y: f64,
) -> f64 {
    let full = PAGE_W - 2.0 * MARGIN;
    let runs: Vec<(String, &RunReport)> = recordings
        .iter()
        .zip(labels)
        .flat_map(|(rec, l)| rec.runs.iter().zip(l).map(|(r, l)| (l.clone(), &r.report)))
        .collect();
    let mut panels = 0;
    for kind in Hist::ALL {
        // Every run takes part, even one without this histogram (the
        // legend says "no values"), so a run keeps its colour throughout.
        let series: Vec<Series> = runs
            .iter()
            .map(|(label, report)| Series {
                label: label.clone(),
                summary: report
                    .histograms()
                    .into_iter()
                    .find(|(h, _)| *h == kind)
                    .map_or(&EMPTY, |(_, s)| s),
            })
            .collect();
        if !series.iter().any(|s| curve_of(s.summary).is_some()) {
            continue;
        }
        let title = format!("Latency by percentile: {}", kind.title());
        let h = latency_panel(svg, MARGIN, y + 10.0, full, &title, &series, kind.name());
        y += h + 20.0;
        panels += 1;
    }
    if panels == 0 {
        panel_title(svg, MARGIN, y + 28.0, "Latency by percentile");
        let note = "no values: no latency histogram has values";
        no_values_box(svg, full_width_area(y + 40.0, 70.0), note);
        y += 130.0;
    }
    y
}

/// Pressure over time for the first recording's runs (at most
/// `MAX_TIMELINE_RUNS`), on shared axes, from `y` down; returns where it
/// ends.
fn pressure_sections(svg: &mut Svg, first: &Recording, labels: &[String], mut y: f64) -> f64 {
    let timelines: Vec<Vec<Sample>> = first
        .runs
        .iter()
        .take(MAX_TIMELINE_RUNS)
        .map(|r| usable(&r.report.timeline))
        .collect();
    let shared = Shared::of(&timelines);
    if timelines.is_empty() {
        y += pressure_section(svg, y, "Memory pressure over time", &[], &shared);
    }
    for (j, tl) in timelines.iter().enumerate() {
        let label = labels.get(j).cloned().unwrap_or_default();
        let heading = format!("Memory pressure over time: {label}");
        y += pressure_section(svg, y, &heading, tl, &shared);
    }
    let n_runs = first.runs.len();
    if n_runs > MAX_TIMELINE_RUNS {
        let note = format!(
            "Pressure over time of runs {}..{} of [1] not shown.",
            MAX_TIMELINE_RUNS + 1,
            n_runs
        );
        svg.text((MARGIN, y + 14.0), 12.0, "start", MUTED, "", &note);
        y += 24.0;
    }
    y
}

/// The whole page for one or more recordings, one standalone SVG document:
/// a latency panel per histogram kind that has values in any run (every
/// run of every recording overlaid), then pressure over time for the runs
/// of the first recording (at most `MAX_TIMELINE_RUNS` of them).
pub fn recording_svg(recordings: &[&Recording]) -> String {
    let mut svg = Svg::default();
    let title = page_title(recordings);
    let bold = r#" font-weight="bold""#;
    svg.text((MARGIN, MARGIN + 22.0), 22.0, "start", TEXT, bold, &title);
    let mut y = MARGIN + 34.0;
    let Some(first) = recordings.first() else {
        let area = Area {
            x: MARGIN,
            y: y + 10.0,
            w: PAGE_W - 2.0 * MARGIN,
            h: 80.0,
        };
        no_values_box(&mut svg, area, "no values: no recordings");
        return svg.finish(PAGE_W, y + 110.0 + MARGIN, &title);
    };
    y = recording_lines(&mut svg, recordings, y);
    let labels = run_labels(recordings);
    y = latency_panels(&mut svg, recordings, &labels, y);
    let first_labels = labels.first().map_or(&[][..], Vec::as_slice);
    y = pressure_sections(&mut svg, first, first_labels, y);
    svg.finish(PAGE_W, y + MARGIN, &title)
}
