//! What a calibration says: each case's `vmtrace compare --json`
//! summarized (the mechanism named first, its share of the elapsed
//! difference, the next one's, p, the elapsed means) and kernels.md.

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::{CalibrateOptions, Case, stem, stems};
use crate::util;

/// What one column of a compare says of the patched kernel.
#[derive(Debug, PartialEq)]
pub(super) struct Summary {
    /// The sweep value (`-j5`); empty without a sweep.
    sweep: String,
    verdict: String,
    /// Mechanisms the compare linked elapsed seconds to, strongest first:
    /// the name and the seconds (None: unbounded, as OOM kills are).
    named: Vec<(String, Option<f64>)>,
    /// Mean elapsed seconds less the baseline's.
    difference: Option<f64>,
    /// Welch's two-sided p of the elapsed times.
    p: Option<f64>,
    /// Mean elapsed seconds, baseline and patched.
    elapsed: (Option<f64>, Option<f64>),
    /// Runs that completed and runs OOM-killed, baseline and patched.
    runs: [(u64, u64); 2],
}

/// The summary of every column of a `vmtrace-compare` document of two
/// groups.
pub(super) fn summarize(doc: &Value) -> Result<Vec<Summary>> {
    if doc["format"] != "vmtrace-compare" {
        bail!("not a vmtrace-compare document");
    }
    let columns = doc["columns"]
        .as_array()
        .context("vmtrace-compare without columns")?;
    columns
        .iter()
        .map(|col| {
            let cmp = &col["comparison"];
            let versus = &cmp["versus"][0];
            if !versus.is_object() {
                bail!("vmtrace-compare without a second group");
            }
            // As the text's "likely mechanisms": seconds of the elapsed
            // difference linked (null: infinite, an OOM kill's).
            let named = versus["hints"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .filter_map(|h| {
                    let name = h["mechanism"]["label"].as_str()?.to_string();
                    match h["seconds"].as_f64() {
                        None => Some((name, None)),
                        Some(s) if s.abs() >= 0.001 => Some((name, Some(s))),
                        Some(_) => None,
                    }
                })
                .collect();
            let elapsed = cmp["metrics"]
                .as_array()
                .and_then(|rows| rows.iter().find(|r| r["measure"]["id"] == "elapsed"));
            let mean = |g: usize| elapsed.and_then(|r| r["groups"][g]["mean"].as_f64());
            let runs = |g: usize| {
                let info = &cmp["groups"][g];
                (
                    info["runs"].as_u64().unwrap_or(0),
                    info["oom_killed"].as_u64().unwrap_or(0),
                )
            };
            Ok(Summary {
                sweep: col["sweep_value"].as_str().unwrap_or("").to_string(),
                verdict: versus["verdict"]["label"]
                    .as_str()
                    .unwrap_or("?")
                    .to_string(),
                named,
                difference: versus["split"]["difference"]
                    .as_f64()
                    .or_else(|| versus["elapsed"]["diff"].as_f64()),
                p: versus["elapsed"]["welch"]["p"].as_f64(),
                elapsed: (mean(0), mean(1)),
                runs: [runs(0), runs(1)],
            })
        })
        .collect()
}

/// A named mechanism's share of the elapsed difference, as the compare's
/// text gives it: `44%`; `-` when none is named or there is no
/// difference; `not timed` for one without seconds (OOM kills).
fn share(named: Option<&(String, Option<f64>)>, difference: Option<f64>) -> String {
    match (named, difference) {
        (None, _) => "-".into(),
        (Some((_, None)), _) => "not timed".into(),
        (Some((_, Some(s))), Some(d)) if d != 0.0 => format!("{:.0}%", 100.0 * s / d),
        (Some(_), _) => "-".into(),
    }
}

/// One group's outcome, for the report.
pub(super) struct GroupResult {
    pub(super) workload: String,
    pub(super) dir: PathBuf,
    pub(super) took: Duration,
    /// Whether its `vmtrace kernels` succeeded.
    pub(super) ok: bool,
    pub(super) rows: Vec<(&'static Case, Result<Vec<Summary>>)>,
}

pub(super) fn header(version: &str, tree: &Path, opts: &CalibrateOptions) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Calibration: planted kernel changes");
    let _ = writeln!(md);
    let _ = writeln!(
        md,
        "- kernel: Linux {version} (Debian's linux-source-6.1, {})",
        tree.display()
    );
    let _ = writeln!(md, "- date: {}", util::utc_stamp());
    let _ = writeln!(
        md,
        "- command: `sudo -E cargo xtask calibrate --kernels --repeat {}{}`",
        opts.repeat,
        if opts.only.is_empty() {
            String::new()
        } else {
            format!(" --only {}", opts.only.join(","))
        }
    );
    let _ = writeln!(
        md,
        "- each kernel booted under `vmtrace kernels`, its job run {} times; \
         `vmtrace compare` of the stock kernel (A) against the patched one (B)",
        opts.repeat
    );
    md
}

/// Writes the report so far (after every group, so that a stopped
/// calibration leaves its results).
pub(super) fn write_report(
    path: &Path,
    header: &str,
    done: &[GroupResult],
    total: Duration,
) -> Result<()> {
    let mut md = header.to_string();
    let _ = writeln!(md, "- wall time so far: {}", duration(total));
    let _ = writeln!(md);
    let _ = writeln!(
        md,
        "| patch | what it changes | expected mechanism | named first | its share | \
         next one's share | verdict, p | elapsed A -> B | runs A / B |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|");
    for g in done {
        for (case, result) in &g.rows {
            md.push_str(&table_rows(case, result));
        }
    }
    let _ = writeln!(md);
    for (n, g) in done.iter().enumerate() {
        let _ = writeln!(
            md,
            "- group {} ({}): `{}`, {}{}; in {}",
            n + 1,
            stems(g.rows.iter().map(|(c, _)| *c)),
            g.workload,
            duration(g.took),
            if g.ok { "" } else { ", vmtrace kernels failed" },
            g.dir.display()
        );
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, md).with_context(|| format!("writing {}", path.display()))
}

/// A case's rows: one per compare column, or one saying why there is none.
fn table_rows(case: &Case, result: &Result<Vec<Summary>>) -> String {
    let lead = format!("| {} | {} | {} |", stem(case), case.changes, case.expected);
    let summaries = match result {
        Ok(s) if !s.is_empty() => s,
        Ok(_) => return format!("{lead} no comparison | | | | | |\n"),
        Err(e) => {
            let why = format!("{e:#}").replace('|', "/");
            return format!("{lead} not compared: {why} | | | | | |\n");
        }
    };
    let secs = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
    let mut out = String::new();
    for s in summaries {
        let sweep = if s.sweep.is_empty() {
            String::new()
        } else {
            format!(" ({})", s.sweep)
        };
        let first = s.named.first();
        let _ = writeln!(
            out,
            "{lead} {}{sweep} | {} | {} | {}{} | {} -> {} s | {} / {} |",
            first.map_or("none", |(m, _)| m.as_str()),
            share(first, s.difference),
            share(s.named.get(1), s.difference),
            s.verdict,
            s.p.map(p_value).unwrap_or_default(),
            secs(s.elapsed.0),
            secs(s.elapsed.1),
            runs(s.runs[0]),
            runs(s.runs[1]),
        );
    }
    out
}

/// `, p = 0.012`, or `, p < 0.001`.
fn p_value(p: f64) -> String {
    if p < 0.001 {
        ", p < 0.001".into()
    } else {
        format!(", p = {p:.3}")
    }
}

/// `3`, or `2 + 1 OOM`.
fn runs((done, oom): (u64, u64)) -> String {
    if oom == 0 {
        done.to_string()
    } else {
        format!("{done} + {oom} OOM")
    }
}

pub(super) fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, s % 3600 / 60),
    }
}

/// `6.1.172` from a kernel Makefile's VERSION, PATCHLEVEL, SUBLEVEL and
/// EXTRAVERSION.
pub(super) fn kernel_version(makefile: &str) -> Option<String> {
    let var = |name: &str| {
        makefile.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    Some(format!(
        "{}.{}.{}{}",
        var("VERSION")?,
        var("PATCHLEVEL")?,
        var("SUBLEVEL")?,
        var("EXTRAVERSION").unwrap_or_default()
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::calibrate::CASES;

    /// A `vmtrace compare --json` of two groups of three runs, in the
    /// shape of docs/schema/compare.schema.json (trimmed to what is read,
    /// plus the neighbours that must not be).
    fn compare_doc(hints: Value, verdict: &str, oom: u64) -> Value {
        json!({
            "format": "vmtrace-compare",
            "format_version": 2,
            "not_compared": [],
            "columns": [{
                "sweep_value": "",
                "comparison": {
                    "test": "Welch's t-test, two-sided",
                    "groups": [
                        {"label": "baseline", "kernel_release": "6.1.172", "files": ["1-6.1.172/run.vmtrace.json"],
                         "runs": 3, "oom_killed": 0, "failed": 0},
                        {"label": "patched", "kernel_release": "6.1.172", "files": ["2-6.1.172/run.vmtrace.json"],
                         "runs": 3 - oom, "oom_killed": oom, "failed": 0}
                    ],
                    "warnings": [], "settings": [],
                    "metrics": [
                        {"measure": {"id": "user_cpu", "label": "user CPU"}, "unit": "seconds", "scope": "target",
                         "groups": [{"n": 3, "mean": 9.0, "stddev": 0.1, "min": 8.9, "max": 9.1},
                                    {"n": 3, "mean": 9.1, "stddev": 0.1, "min": 9.0, "max": 9.2}],
                         "changes": [{"diff": 0.1, "pct": 1.1, "welch": null}]},
                        {"measure": {"id": "elapsed", "label": "elapsed"}, "unit": "seconds", "scope": "target",
                         "groups": [{"n": 3, "mean": 40.0, "stddev": 0.5, "min": 39.5, "max": 40.5},
                                    {"n": 3, "mean": 48.0, "stddev": 0.6, "min": 47.4, "max": 48.6}],
                         "changes": [{"diff": 8.0, "pct": 20.0,
                                      "welch": {"t": 17.7, "df": 3.9, "p": 0.0001}}]}
                    ],
                    "versus": [{
                        "label": "patched",
                        "elapsed": {"diff": 8.0, "pct": 20.0, "welch": {"t": 17.7, "df": 3.9, "p": 0.0001}},
                        "judgeable": true,
                        "verdict": {"id": verdict.replace(' ', "_"), "label": verdict},
                        "explained": 0.75,
                        "split": {"difference": 8.0, "explained": 6.0, "unexplained": 2.0,
                                  "offsets": 0.0, "scale": 1.0, "busy_cpus": [null, null],
                                  "concurrency": [0.9, 0.9], "seconds_per_cpu_second": 1.0,
                                  "seconds_per_wait_second": 1.0, "waiting_for_cpu": [null, null]},
                        "hints": hints
                    }],
                    "attribution": []
                }
            }]
        })
    }

    #[test]
    fn the_summary_names_the_first_linked_mechanism_and_its_share() {
        let doc = compare_doc(
            json!([
                {"mechanism": {"id": "swap_in", "label": "swap-in"}, "seconds": 5.0, "text": "swap-in: ..."},
                {"mechanism": {"id": "reclaim", "label": "reclaim"}, "seconds": 1.0, "text": "reclaim: ..."},
                {"mechanism": {"id": "swap_out", "label": "swap-out"}, "seconds": 0.0, "text": "swap-out: ..."}
            ]),
            "slower",
            0,
        );
        let s = summarize(&doc).unwrap();
        assert_eq!(s.len(), 1);
        let s = &s[0];
        assert_eq!(s.verdict, "slower");
        // swap-out has no seconds linked: not a named mechanism.
        assert_eq!(
            s.named,
            [("swap-in".into(), Some(5.0)), ("reclaim".into(), Some(1.0))]
        );
        assert_eq!(s.difference, Some(8.0));
        assert_eq!(s.p, Some(0.0001));
        assert_eq!(s.elapsed, (Some(40.0), Some(48.0)));
        assert_eq!(s.runs, [(3, 0), (3, 0)]);
        assert_eq!(share(s.named.first(), s.difference), "62%");
        assert_eq!(share(s.named.get(1), s.difference), "12%");
        assert_eq!(share(s.named.get(2), s.difference), "-");

        let row = table_rows(&CASES[0], &Ok(vec![summarize(&doc).unwrap().remove(0)]));
        assert!(
            row.contains("| swap-in | 62% | 12% | slower, p < 0.001 | 40.00 -> 48.00 s | 3 / 3 |"),
            "{row}"
        );
    }

    #[test]
    fn oom_kills_have_no_seconds_and_within_noise_names_nothing() {
        // serde_json writes OOM kills' infinite seconds as null.
        let doc = compare_doc(
            json!([{"mechanism": {"id": "oom_kills", "label": "OOM kills"}, "seconds": null, "text": "OOM kills: 2 of 3"}]),
            "slower",
            2,
        );
        let s = summarize(&doc).unwrap().remove(0);
        assert_eq!(s.named, [("OOM kills".into(), None)]);
        assert_eq!(share(s.named.first(), s.difference), "not timed");
        assert_eq!(s.runs[1], (1, 2));
        assert_eq!(runs(s.runs[1]), "1 + 2 OOM");

        let quiet = summarize(&compare_doc(json!([]), "within noise", 0))
            .unwrap()
            .remove(0);
        let row = table_rows(&CASES[4], &Ok(vec![quiet]));
        assert!(
            row.contains("| none | - | - | within noise, p < 0.001 |"),
            "{row}"
        );
        assert_eq!(p_value(0.0123), ", p = 0.012");

        let failed = table_rows(&CASES[4], &Err(anyhow::anyhow!("no | recording")));
        assert!(
            failed.contains("not compared: no / recording |"),
            "{failed}"
        );
        assert!(summarize(&json!({"format": "vmtrace-run"})).is_err());
    }

    #[test]
    fn kernel_version_and_durations() {
        let makefile = "# SPDX-License-Identifier: GPL-2.0\nVERSION = 6\nPATCHLEVEL = 1\n\
                        SUBLEVEL = 172\nEXTRAVERSION =\nNAME = Curry Ramen\n";
        assert_eq!(kernel_version(makefile).as_deref(), Some("6.1.172"));
        assert_eq!(
            kernel_version("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\nEXTRAVERSION = -rc1\n")
                .as_deref(),
            Some("6.12.0-rc1")
        );
        assert_eq!(kernel_version("VERSION = 6\n"), None);
        assert_eq!(duration(Duration::from_secs(42)), "42s");
        assert_eq!(duration(Duration::from_secs(754)), "12m 34s");
        assert_eq!(duration(Duration::from_secs(5400)), "1h 30m");
    }
}
