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

use std::time::{Duration, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow};
use hdrhistogram::serialization::{
    V2DeflateSerializer,
    interval_log::{IntervalLogWriterBuilder, Tag},
};

use crate::{model::histogram, model::recording::Recording};

/// The suffix of the tags of whole-run histograms.
pub const WHOLE_RUN: &str = ".whole_run";

/// The interval log of a recording, written by hdrhistogram's own
/// interval log writer (headers, the line format, the compressed V2
/// encoding); vmtrace only decodes each payload of the recording (under
/// its bounds, model/histogram.rs) and says where it goes.
pub fn render(rec: &Recording) -> Result<String> {
    let base = rec
        .runs
        .iter()
        .map(|r| r.report.started_unix_s)
        .filter(|&t| t > 0.0)
        .reduce(f64::min)
        .unwrap_or(0.0);
    let at = UNIX_EPOCH + secs(base)?;
    let mut out = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let mut log = IntervalLogWriterBuilder::new()
        .add_comment(&format!(
            "[vmtrace {} recording of {} on Linux {}]",
            rec.vmtrace_version, rec.workload.name, rec.environment.kernel_release
        ))
        .add_comment("[Histogram log format version 1.3]")
        .add_comment("[Values in nanoseconds; Interval_Max in milliseconds]")
        .add_comment(&format!("[Started {}]", crate::model::recording::utc(at).0))
        .with_start_time(at)
        .with_base_time(at)
        .with_max_value_divisor(1e6)
        .begin_log_with(&mut out, &mut serializer)?;
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
        let mut write = |tag: &str, start: f64, length: f64, payload: &str| -> Result<()> {
            let h = histogram::decode(payload)?;
            let tag = Tag::new(tag).with_context(|| format!("histogram tag {tag:?}"))?;
            log.write_histogram(&h, secs(start)?, secs(length)?, Some(tag))
                .map_err(|e| anyhow!("writing the interval log: {e}"))
        };
        let mut prev_t = 0.0;
        for s in &r.timeline {
            for (name, payload) in &s.hists {
                write(
                    &format!("{prefix}{name}"),
                    offset + prev_t,
                    s.t_s - prev_t,
                    payload,
                )?;
            }
            prev_t = s.t_s;
        }
        for (h, summary) in r.histograms() {
            if summary.count == 0 {
                continue;
            }
            write(
                &format!("{prefix}{}{WHOLE_RUN}", h.name()),
                offset,
                r.usage.wall_s,
                &summary.hdr,
            )?;
        }
    }
    drop(log);
    String::from_utf8(out).context("the interval log is ASCII")
}

/// A time of the recording as a duration: negative as 0, and one no
/// duration holds (a recording from elsewhere may say 1e300 s) refused
/// in one line instead of overflowing.
fn secs(s: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(s.max(0.0))
        .map_err(|_| anyhow!("the recording holds an impossible time ({s} s); it is corrupt"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_times_are_refused_not_overflowed() {
        assert_eq!(secs(-3.0).expect("clamped"), Duration::ZERO);
        assert_eq!(secs(1.5).expect("fine"), Duration::from_millis(1500));
        assert!(secs(1e300).is_err() && secs(f64::INFINITY).is_err());
    }
}
