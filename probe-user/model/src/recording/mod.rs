//! The recording: everything a run measured, kept in one self-describing,
//! versioned JSON file (docs/RECORDING.md) that `report`, `export` and
//! `compare` read. Views read only this model, never the kernel. The
//! bytes are made and parsed here; the file itself is
//! `host::recording_file`'s.

pub mod environment;
mod parse;

use std::{
    path::{Path, PathBuf},
    time::{SystemTime, UNIX_EPOCH},
};

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};

pub use environment::Environment;

use crate::{histogram, report::RunReport};

/// The `format` field of every recording.
pub const FORMAT: &str = "vmtrace-recording";
/// The newest format version this vmtrace writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// The file name extension of recordings.
pub const EXTENSION: &str = "vmtrace.json";

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Recording {
    /// Always `vmtrace-recording`: tells a recording from other JSON.
    pub format: String,
    pub format_version: u32,
    pub vmtrace_version: String,
    /// When the recording was started, UTC, RFC 3339.
    pub created_utc: String,
    /// False when vmtrace was interrupted (Ctrl-C, SIGTERM, SIGHUP) or a
    /// run failed: the runs present are whole, but some are missing or cut
    /// short. `incomplete_reason` says which.
    pub complete: bool,
    pub incomplete_reason: Option<String>,
    /// What ran: the bundled workload's name or the command.
    pub workload: Workload,
    pub environment: Environment,
    /// Every run, in the order they ran.
    pub runs: Vec<RecordedRun>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Workload {
    /// `qsbench`, `build`, `memhog`, or the command's program name.
    pub name: String,
    /// Its arguments as given to it (defaults filled in for bundled ones).
    #[serde(deserialize_with = "crate::bounded::arguments")]
    pub arguments: Vec<String>,
    /// The seed the bundled workload ran with (None: not a bundled one).
    pub seed: Option<u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RecordedRun {
    /// The sweep value this run belongs to (`-j5`), empty without a sweep.
    #[serde(deserialize_with = "crate::bounded::label")]
    pub label: String,
    pub report: RunReport,
}

impl Recording {
    pub fn new(workload: Workload, environment: Environment) -> Recording {
        Recording {
            format: FORMAT.into(),
            format_version: FORMAT_VERSION,
            vmtrace_version: env!("CARGO_PKG_VERSION").into(),
            created_utc: utc(SystemTime::now()).0,
            complete: true,
            incomplete_reason: None,
            workload,
            environment,
            runs: Vec::new(),
        }
    }

    /// Marks the recording incomplete, keeping the first reason given.
    pub fn mark_incomplete(&mut self, reason: &str) {
        self.complete = false;
        self.incomplete_reason.get_or_insert_with(|| reason.into());
    }

    /// `./vmtrace-<workload>-<kernel release>-<UTC timestamp>.vmtrace.json`
    pub fn default_path(workload: &str, kernel_release: &str, when: SystemTime) -> PathBuf {
        let clean = |s: &str| -> String {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || "._+-".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        };
        let name = Path::new(workload)
            .file_name()
            .map_or_else(|| workload.into(), |n| n.to_string_lossy().into_owned());
        PathBuf::from(format!(
            "vmtrace-{}-{}-{}.{EXTENSION}",
            clean(&name),
            clean(kernel_release),
            utc(when).1
        ))
    }

    /// The bytes of the recording file: its JSON and a newline (the
    /// writer behind `host::recording_file`).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut json = serde_json::to_vec(self).context("serialising the recording")?;
        json.push(b'\n');
        Ok(json)
    }

    /// Checks what serde cannot: every histogram payload decodes and holds
    /// as many values as its summary says.
    pub(super) fn check(&self) -> Result<()> {
        for (i, run) in self.runs.iter().enumerate() {
            for (h, s) in run.report.histograms() {
                let hdr = histogram::decode(&s.hdr)
                    .map_err(|e| anyhow!("corrupt recording: run {} {}: {e:#}", i + 1, h.name()))?;
                if hdr.len() != s.count {
                    bail!(
                        "corrupt recording: run {} {}: histogram holds {} values, summary says {}",
                        i + 1,
                        h.name(),
                        hdr.len(),
                        s.count
                    );
                }
            }
            for sample in &run.report.timeline {
                for (name, payload) in &sample.hists {
                    histogram::decode(payload).map_err(|e| {
                        anyhow!(
                            "corrupt recording: run {} {name} at {:.1} s: {e:#}",
                            i + 1,
                            sample.t_s
                        )
                    })?;
                }
            }
        }
        Ok(())
    }
}

/// (RFC 3339 `2026-11-30T03:04:05Z`, compact `20261130T030405Z`) of a time.
pub fn utc(t: SystemTime) -> (String, String) {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // Howard Hinnant's civil_from_days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    (
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}Z"),
        format!("{y:04}{mo:02}{d:02}T{h:02}{m:02}{s:02}Z"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sample() -> Recording {
        let mut rec = Recording::new(
            Workload {
                name: "memhog".into(),
                arguments: vec!["--mib".into(), "64".into()],
                seed: Some(1),
            },
            Environment::default(),
        );
        let mut report = RunReport::default();
        let mut counts = vec![0u64; vmtrace_common::hist::BUCKETS];
        counts[100] = 7;
        counts[300] = 3;
        report.memcg_reclaim = Some(crate::report::ReclaimReport {
            stalls: histogram::summarize(&counts),
            pages_reclaimed: 12,
            split: None,
        });
        rec.runs.push(RecordedRun {
            label: String::new(),
            report,
        });
        rec
    }

    #[test]
    fn utc_formats() {
        let t = UNIX_EPOCH + Duration::from_secs(1_796_007_845);
        assert_eq!(utc(t).0, "2026-11-30T03:04:05Z");
        assert_eq!(utc(t).1, "20261130T030405Z");
        assert_eq!(
            utc(UNIX_EPOCH + Duration::from_secs(951_782_400)).0,
            "2000-02-29T00:00:00Z"
        );
    }

    #[test]
    fn default_path_is_clean() {
        let t = UNIX_EPOCH + Duration::from_secs(1_796_007_845);
        assert_eq!(
            Recording::default_path("qsbench", "6.18.44-fc-v657", t),
            PathBuf::from("vmtrace-qsbench-6.18.44-fc-v657-20261130T030405Z.vmtrace.json")
        );
        assert_eq!(
            Recording::default_path("/usr/bin/make", "6.1.0-57+deb12/x", t),
            PathBuf::from("vmtrace-make-6.1.0-57+deb12_x-20261130T030405Z.vmtrace.json")
        );
    }

    #[test]
    fn round_trips_through_bytes() {
        let rec = sample();
        let bytes = rec.to_bytes().expect("serialises");
        assert_eq!(bytes.last(), Some(&b'\n'));
        let back = Recording::from_bytes(&bytes).expect("parses");
        assert_eq!(
            serde_json::to_string(&back).expect("ser"),
            serde_json::to_string(&rec).expect("ser")
        );
    }

    fn err_of(bytes: &[u8]) -> String {
        format!("{:#}", Recording::from_bytes(bytes).expect_err("must fail"))
    }

    #[test]
    fn bad_recordings_give_one_line_errors() {
        let good = serde_json::to_vec_pretty(&sample()).expect("ser");
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (Vec::new(), "empty file"),
            (good[..good.len() / 2].to_vec(), "truncated"),
            (b"\x7fELF\x02\x01".to_vec(), "not JSON"),
            (b"{\"runs\": []}".to_vec(), "no \"format\""),
            (
                String::from_utf8_lossy(&good)
                    .replacen("\"format_version\": 1", "\"format_version\": 9", 1)
                    .into_bytes(),
                "format version 9",
            ),
            (
                String::from_utf8_lossy(&good)
                    .replacen("\"complete\": true", "\"complete\": 3", 1)
                    .into_bytes(),
                "corrupt recording",
            ),
            (
                String::from_utf8_lossy(&good)
                    .replacen("\"hdr\": \"", "\"hdr\": \"xx", 1)
                    .into_bytes(),
                "memcg_reclaim",
            ),
        ];
        for (bytes, want) in cases {
            let e = err_of(&bytes);
            assert!(e.contains(want), "{e:?} lacks {want:?}");
            assert!(!e.contains('\n'), "{e:?} is not one line");
        }
    }
}
