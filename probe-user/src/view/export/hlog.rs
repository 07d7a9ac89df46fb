//! HdrHistogram interval log (format 1.3): what HdrHistogram's own tools
//! (HistogramLogProcessor, HdrHistogramVisualizer, the Python `hdrh`
//! package) load and plot.
//!
//! One tag per histogram (`memcg_reclaim`, `swap_read`, ...; prefixed
//! `runN/` when the recording has several runs). Each time-series step of a
//! run is one interval line per histogram that had values in it; the whole
//! run is one more line per histogram, tagged `<tag>.whole_run`. Values are
//! nanoseconds; the max column is in milliseconds (max / 1e6), as is the
//! Java tools' convention.

use std::fmt::Write as _;

use anyhow::Result;

use crate::{model::histogram, model::recording::Recording};

/// The suffix of the tags of whole-run histograms.
pub const WHOLE_RUN: &str = ".whole_run";

/// The interval log of a recording.
pub fn render(rec: &Recording) -> Result<String> {
    let mut o = String::new();
    let base = rec
        .runs
        .iter()
        .map(|r| r.report.started_unix_s)
        .filter(|&t| t > 0.0)
        .reduce(f64::min)
        .unwrap_or(0.0);
    writeln!(
        o,
        "#[vmtrace {} recording of {} on Linux {}]",
        rec.vmtrace_version, rec.workload.name, rec.environment.kernel_release
    )?;
    writeln!(o, "#[Histogram log format version 1.3]")?;
    writeln!(
        o,
        "#[StartTime: {base:.3} (seconds since epoch), {}]",
        crate::model::recording::utc(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(base.max(0.0))
        )
        .0
    )?;
    writeln!(o, "#[BaseTime: {base:.3} (seconds since epoch)]")?;
    writeln!(o, "#[Values in nanoseconds; Interval_Max in milliseconds]")?;
    writeln!(
        o,
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
    )?;
    let several = rec.runs.len() > 1;
    for (i, run) in rec.runs.iter().enumerate() {
        let r = &run.report;
        let prefix = if several {
            format!("run{}/", i + 1)
        } else {
            String::new()
        };
        let offset = if r.started_unix_s > 0.0 {
            r.started_unix_s - base
        } else {
            0.0
        };
        let mut prev_t = 0.0;
        for s in &r.timeline {
            for (name, payload) in &s.hists {
                let h = histogram::decode(payload)?;
                line(
                    &mut o,
                    &format!("{prefix}{name}"),
                    offset + prev_t,
                    (s.t_s - prev_t).max(0.0),
                    h.max(),
                    payload,
                )?;
            }
            prev_t = s.t_s;
        }
        for (h, summary) in r.histograms() {
            if summary.count == 0 {
                continue;
            }
            line(
                &mut o,
                &format!("{prefix}{}{WHOLE_RUN}", h.name()),
                offset,
                r.usage.wall_s,
                summary.max_ns,
                &summary.hdr,
            )?;
        }
    }
    Ok(o)
}

fn line(
    o: &mut String,
    tag: &str,
    start: f64,
    length: f64,
    max_ns: u64,
    payload: &str,
) -> Result<()> {
    writeln!(
        o,
        "Tag={tag},{start:.3},{length:.3},{:.3},{payload}",
        max_ns as f64 / 1e6
    )?;
    Ok(())
}
