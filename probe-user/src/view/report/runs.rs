//! Repeated and swept runs side by side: the table of the seed mails.

use std::fmt::Write as _;

use serde::Serialize;

use super::RunReport;

/// Repeated runs side by side, as the seed mails tabulate them: one row
/// per run, one column per swept value (e.g. -j5, -j10, -j15), elapsed
/// seconds (a failed run shows why), then mean, stddev, min and max of the
/// runs that completed.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct RunsTable {
    pub columns: Vec<RunsColumn>,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct RunsColumn {
    /// The swept value (`-j5`), or `elapsed` without a sweep.
    pub label: String,
    pub elapsed_s: Vec<Option<f64>>,
    /// Why each failed run failed ("OOM", "exit 3", "signal 9").
    pub failures: Vec<Option<String>>,
    pub mean_s: Option<f64>,
    pub stddev_s: Option<f64>,
    pub min_s: Option<f64>,
    pub max_s: Option<f64>,
}

impl RunsColumn {
    pub fn of(label: &str, reports: &[&RunReport]) -> RunsColumn {
        let failures: Vec<Option<String>> = reports
            .iter()
            .map(|r| match (r.exit.oom_killed, r.exit.code, r.exit.signal) {
                (true, _, _) => Some("OOM".to_string()),
                (false, Some(0), _) => None,
                (false, Some(c), _) => Some(format!("exit {c}")),
                (false, None, Some(s)) => Some(format!("signal {s}")),
                _ => Some("unknown".to_string()),
            })
            .collect();
        let elapsed_s: Vec<Option<f64>> = reports
            .iter()
            .zip(&failures)
            .map(|(r, f)| f.is_none().then_some(r.usage.wall_s))
            .collect();
        let ok: Vec<f64> = elapsed_s.iter().flatten().copied().collect();
        let n = ok.len() as f64;
        let mean = (!ok.is_empty()).then(|| ok.iter().sum::<f64>() / n);
        let stddev = mean
            .filter(|_| ok.len() > 1)
            .map(|m| (ok.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0)).sqrt());
        RunsColumn {
            label: if label.is_empty() {
                "elapsed s".into()
            } else {
                label.into()
            },
            mean_s: mean,
            stddev_s: stddev,
            min_s: ok.iter().copied().reduce(f64::min),
            max_s: ok.iter().copied().reduce(f64::max),
            elapsed_s,
            failures,
        }
    }
}

/// The seed mails' table across kernels: a row per kernel (one
/// recording each), a column per swept value (`-j5`; `elapsed s`
/// without a sweep), each cell the mean elapsed seconds and standard
/// deviation of the runs that completed; failed runs are counted under
/// the table, never averaged in.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct KernelsTable {
    /// Column labels, in the order they first appear.
    pub labels: Vec<String>,
    pub rows: Vec<KernelsRow>,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct KernelsRow {
    /// The kernel release (or the name the caller gave the recording).
    pub kernel: String,
    /// One per label; None where this kernel has no run of it.
    pub cells: Vec<Option<RunsColumn>>,
}

impl KernelsTable {
    /// From (kernel, recording) pairs.
    pub fn of(recordings: &[(String, &crate::model::recording::Recording)]) -> KernelsTable {
        let tables: Vec<(String, RunsTable)> = recordings
            .iter()
            .map(|(k, r)| (k.clone(), RunsTable::of_recording(r)))
            .collect();
        let mut labels: Vec<String> = Vec::new();
        for (_, t) in &tables {
            for c in &t.columns {
                if !labels.contains(&c.label) {
                    labels.push(c.label.clone());
                }
            }
        }
        let rows = tables
            .into_iter()
            .map(|(kernel, t)| KernelsRow {
                kernel,
                cells: labels
                    .iter()
                    .map(|l| t.columns.iter().find(|c| &c.label == l).cloned())
                    .collect(),
            })
            .collect();
        KernelsTable { labels, rows }
    }

    /// Plain text within 72 columns: three value columns a block.
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "elapsed seconds per kernel: mean +-stddev of the runs that completed"
        );
        // Names too long for the column (a tree and its patches' subjects)
        // are rows A, B, ... with the names above, as compare does.
        let long = self.rows.iter().any(|r| r.kernel.len() > 24);
        let names: Vec<String> = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                if long {
                    row_letter(i)
                } else {
                    r.kernel.clone()
                }
            })
            .collect();
        if long {
            for (n, r) in names.iter().zip(&self.rows) {
                for l in crate::model::format::wrap(&format!("{n} = {}", r.kernel), 72) {
                    let _ = writeln!(o, "{l}");
                }
            }
        }
        let width = names
            .iter()
            .map(String::len)
            .max()
            .unwrap_or(6)
            .clamp(6, 24);
        for block in (0..self.labels.len()).collect::<Vec<_>>().chunks(3) {
            let mut head = format!("{:<width$}", "kernel");
            for &i in block {
                let _ = write!(head, " {:>14}", self.labels[i]);
            }
            let _ = writeln!(o, "{head}");
            for (r, name) in self.rows.iter().zip(&names) {
                let mut line = format!("{name:<width$}");
                for &i in block {
                    let cell = match &r.cells[i] {
                        Some(c) => match (c.mean_s, c.stddev_s) {
                            (Some(m), Some(sd)) => format!("{m:.2} +-{sd:.2}"),
                            (Some(m), None) => format!("{m:.2}"),
                            (None, _) => "failed".into(),
                        },
                        None => "-".into(),
                    };
                    let _ = write!(line, " {cell:>14}");
                }
                let _ = writeln!(o, "{line}");
            }
        }
        for line in self.failures(&names) {
            let _ = writeln!(o, "{line}");
        }
        o
    }

    /// `  runs: 3 a cell` or what failed where: `  6.1.0-x -j15: 1 of 3
    /// failed (OOM)`.
    fn failures(&self, names: &[String]) -> Vec<String> {
        let mut lines = Vec::new();
        let mut counts: Vec<usize> = Vec::new();
        for (r, name) in self.rows.iter().zip(names) {
            for (c, label) in r.cells.iter().zip(&self.labels) {
                let Some(c) = c else { continue };
                counts.push(c.failures.len());
                let failed: Vec<&String> = c.failures.iter().flatten().collect();
                if !failed.is_empty() {
                    let mut why: Vec<&str> = failed.iter().map(|f| f.as_str()).collect();
                    why.dedup();
                    lines.push(format!(
                        "  {name} {label}: {} of {} failed ({})",
                        failed.len(),
                        c.failures.len(),
                        why.join(", ")
                    ));
                }
            }
        }
        counts.sort_unstable();
        counts.dedup();
        let runs = match counts.as_slice() {
            [n] => format!("  runs: {n} a cell"),
            _ => "  runs: as many as each kernel recorded".to_string(),
        };
        std::iter::once(runs).chain(lines).collect()
    }
}

/// The `i`th row's letter when kernels are named above the table: A to
/// Z, then K27, K28, ...
fn row_letter(i: usize) -> String {
    match u8::try_from(i) {
        Ok(n) if n < 26 => char::from(b'A' + n).to_string(),
        _ => format!("K{}", i + 1),
    }
}

impl RunsTable {
    /// One column per (label, runs of that configuration).
    pub fn of(columns: &[(String, Vec<&RunReport>)]) -> RunsTable {
        RunsTable {
            columns: columns.iter().map(|(l, r)| RunsColumn::of(l, r)).collect(),
        }
    }

    /// The runs of a recording, one column per label, in first-run order.
    pub fn of_recording(rec: &crate::model::recording::Recording) -> RunsTable {
        let mut columns: Vec<(String, Vec<&RunReport>)> = Vec::new();
        for run in &rec.runs {
            match columns.iter_mut().find(|(l, _)| *l == run.label) {
                Some((_, v)) => v.push(&run.report),
                None => columns.push((run.label.clone(), vec![&run.report])),
            }
        }
        RunsTable::of(&columns)
    }

    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let mut head = format!("{:>8}", "run");
        for c in &self.columns {
            let _ = write!(head, " {:>10}", c.label);
        }
        let _ = writeln!(o, "{head}");
        let rows = self
            .columns
            .iter()
            .map(|c| c.elapsed_s.len())
            .max()
            .unwrap_or(0);
        for i in 0..rows {
            let mut line = format!("{:>8}", i + 1);
            for c in &self.columns {
                let cell = match (c.elapsed_s.get(i), c.failures.get(i)) {
                    (Some(Some(e)), _) => format!("{e:.2}"),
                    (_, Some(Some(f))) => f.clone(),
                    _ => "-".into(),
                };
                let _ = write!(line, " {cell:>10}");
            }
            let _ = writeln!(o, "{line}");
        }
        let show = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
        type Stat = fn(&RunsColumn) -> Option<f64>;
        let stats: [(&str, Stat); 4] = [
            ("mean", |c| c.mean_s),
            ("stddev", |c| c.stddev_s),
            ("min", |c| c.min_s),
            ("max", |c| c.max_s),
        ];
        for (name, get) in stats {
            let mut line = format!("{name:>8}");
            for c in &self.columns {
                let _ = write!(line, " {:>10}", show(get(c)));
            }
            let _ = writeln!(o, "{line}");
        }
        let failed: usize = self
            .columns
            .iter()
            .map(|c| c.failures.iter().flatten().count())
            .sum();
        let total: usize = self.columns.iter().map(|c| c.failures.len()).sum();
        if failed > 0 {
            let _ = writeln!(o, "{failed} of {total} runs failed");
        }
        o
    }
}
