//! Recordings of a sweep (`run build -j 5,10,15`, `kernels --mem
//! 256M,192M`) hold runs of several values: their elapsed times are not
//! samples of one quantity, and pooling them would compare a mix. Each
//! sweep value is compared on its own: the seed mails' table read down a
//! column.

use anyhow::{Result, bail};
use serde::Serialize;

use super::{Comparison, GroupInput, compare};
use crate::model::recording::Recording;

/// One sweep value's comparison.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Column {
    /// The sweep value (`-j5`); empty without a sweep.
    pub sweep_value: String,
    pub comparison: Comparison,
}

/// The sweep values of all the groups' runs, in the order they first
/// appear.
pub fn sweep_values(inputs: &[GroupInput]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut values: Vec<String> = Vec::new();
    for run in inputs
        .iter()
        .flat_map(|g| &g.recordings)
        .flat_map(|r| &r.runs)
    {
        if seen.insert(run.label.as_str()) {
            values.push(run.label.clone());
        }
    }
    values
}

/// A comparison per sweep value that every group has runs of; one
/// column (the plain comparison) without a sweep. The values some group
/// lacks are returned apart, for the reader to be told.
pub fn compare_columns(inputs: &[GroupInput], force: bool) -> Result<(Vec<Column>, Vec<String>)> {
    let values = sweep_values(inputs);
    if values.len() <= 1 {
        return Ok((
            vec![Column {
                sweep_value: values.into_iter().next().unwrap_or_default(),
                comparison: compare(inputs, force)?,
            }],
            Vec::new(),
        ));
    }
    let (mut columns, mut skipped) = (Vec::new(), Vec::new());
    for v in values {
        let only: Vec<Vec<Recording>> = inputs
            .iter()
            .map(|g| g.recordings.iter().filter_map(|r| runs_of(r, &v)).collect())
            .collect();
        if only.iter().any(Vec::is_empty) {
            skipped.push(v);
            continue;
        }
        let column_inputs: Vec<GroupInput> = inputs
            .iter()
            .zip(&only)
            .map(|(g, recs)| GroupInput {
                label: g.label.clone(),
                files: g.files.clone(),
                recordings: recs.iter().collect(),
            })
            .collect();
        columns.push(Column {
            sweep_value: v,
            comparison: compare(&column_inputs, force)?,
        });
    }
    if columns.is_empty() {
        bail!(
            "no sweep value has runs in every group ({} missing somewhere): \
             compare recordings of the same sweep",
            skipped.join(", ")
        );
    }
    Ok((columns, skipped))
}

/// The recording with only its runs of sweep value `v` (None: it has
/// none).
fn runs_of(r: &Recording, v: &str) -> Option<Recording> {
    // Only the runs labelled `v` are cloned: cloning the whole recording
    // per label and then dropping the rest was quadratic (2000 labelled
    // runs: 74 s).
    let runs: Vec<_> = r
        .runs
        .iter()
        .filter(|run| run.label == v)
        .cloned()
        .collect();
    (!runs.is_empty()).then(|| Recording {
        format: r.format.clone(),
        format_version: r.format_version,
        vmtrace_version: r.vmtrace_version.clone(),
        created_utc: r.created_utc.clone(),
        complete: r.complete,
        incomplete_reason: r.incomplete_reason.clone(),
        workload: r.workload.clone(),
        environment: r.environment.clone(),
        runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::compare::columns::render;
    use crate::view::json::{CompareDocument, to_json};

    #[test]
    fn a_sweep_is_compared_value_by_value() {
        let base = crate::host::corpus_recording();
        let mut sweep = base.clone();
        sweep.runs.clear();
        for (label, wall) in [("-j2", 10.0), ("-j4", 6.0), ("-j2", 11.0), ("-j4", 6.5)] {
            let mut run = base.runs[0].clone();
            run.label = label.into();
            run.report.usage.wall_s = wall;
            sweep.runs.push(run);
        }
        let mut other = sweep.clone();
        for run in &mut other.runs {
            run.report.usage.wall_s *= 2.0;
        }
        other
            .runs
            .retain(|r| r.label != "-j4" || r.report.usage.wall_s < 13.0);
        other.runs.push({
            let mut r = other.runs[0].clone();
            r.label = "-j8".into();
            r
        });
        fn inputs<'a>(a: &'a Recording, b: &'a Recording) -> Vec<GroupInput<'a>> {
            vec![
                GroupInput {
                    label: Some("a".into()),
                    files: vec![],
                    recordings: vec![a],
                },
                GroupInput {
                    label: Some("b".into()),
                    files: vec![],
                    recordings: vec![b],
                },
            ]
        }
        let (cols, skipped) = compare_columns(&inputs(&sweep, &other), false).unwrap();
        assert_eq!(skipped, ["-j8"]);
        let values: Vec<&str> = cols.iter().map(|c| c.sweep_value.as_str()).collect();
        assert_eq!(values, ["-j2", "-j4"]);
        // -j2: 10.5 s vs 21 s; -j4: 6.25 s vs 12 s (one run kept).
        let elapsed = |c: &Column, g: usize| {
            c.comparison.metrics[0].groups[g]
                .as_ref()
                .map(|d| d.mean)
                .unwrap()
        };
        assert_eq!(
            cols[0].comparison.metrics[0].measure,
            super::super::Measure::Elapsed
        );
        assert!((elapsed(&cols[0], 0) - 10.5).abs() < 1e-9);
        assert!((elapsed(&cols[0], 1) - 21.0).abs() < 1e-9);
        assert!((elapsed(&cols[1], 0) - 6.25).abs() < 1e-9);
        assert!((elapsed(&cols[1], 1) - 12.0).abs() < 1e-9);
        // Without a sweep: one column, the plain comparison.
        let (one, none) = compare_columns(&inputs(&base, &base), false).unwrap();
        assert_eq!(one.len(), 1);
        let plain = crate::view::compare::text::render(&one[0].comparison, false);
        assert_eq!(render(&one, &none, false), plain);
        // One sweep value (`run build -j 4`): no sweep to split either.
        let mut j4 = base.clone();
        for run in &mut j4.runs {
            run.label = "-j4".into();
        }
        let (one, none) = compare_columns(&inputs(&j4, &j4), false).unwrap();
        assert_eq!(one[0].sweep_value, "-j4");
        assert!(!render(&one, &none, false).contains("=="));
        let doc = CompareDocument {
            source: crate::view::json::Source::Recordings,
            columns: &one,
            not_compared: &none,
            fleet: None,
        };
        assert!(to_json(&doc).unwrap().contains("\"versus\""));
    }
}
