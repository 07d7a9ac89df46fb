//! CSV for spreadsheets, R and pandas. `metrics`: tidy, one row per run
//! and metric (`run,label,kernel,metric,value`), every number of the run
//! report with its path as the metric name (units in the name: `_ns`,
//! `_s`, `_bytes`). `series`: the time series, one row per run and step.

use std::io::{self, Write};

use serde_json::Value;

use crate::model::{format::printable, recording::Recording};

/// Rows to CSV, streamed to a writer: the `csv` crate's writer (quotes
/// a field only when it holds a comma, a quote or a line break), `\n`
/// line ends. Every field goes through `printable`: a label or kernel
/// release from a recording cannot put control characters in a
/// spreadsheet or terminal. A label is repeated on every row, so the
/// output can be many times the recording: it is never held in memory.
struct Rows<'w>(csv::Writer<&'w mut dyn Write>);

impl<'w> Rows<'w> {
    fn new(out: &'w mut dyn Write) -> Rows<'w> {
        Rows(
            csv::WriterBuilder::new()
                .terminator(csv::Terminator::Any(b'\n'))
                .from_writer(out),
        )
    }

    fn row<I, T>(&mut self, fields: I) -> io::Result<()>
    where
        I: IntoIterator<Item = T>,
        T: AsRef<[u8]>,
    {
        let fields: Vec<String> = fields
            .into_iter()
            .map(|f| printable(&String::from_utf8_lossy(f.as_ref())).into_owned())
            .collect();
        self.0
            .write_record(&fields)
            .map_err(|e| match e.into_kind() {
                // The writer's own error as it was (a closed pipe stays one).
                csv::ErrorKind::Io(e) => e,
                other => io::Error::other(format!("{other:?}")),
            })
    }

    fn finish(mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// What a CSV export writes, into memory (tests, small outputs).
pub fn to_string(export: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<String> {
    let mut bytes = Vec::new();
    export(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Identifying fields of table rows, used to name a row in a metric path
/// (`lru_shrink_inactive[0/memcg/anon].nr_scanned`) instead of its index.
const ROW_KEYS: &[&str] = &[
    "node",
    "zone",
    "context",
    "lru",
    "highest_zone_idx",
    "pid",
    "name",
    "metric",
];

/// Sections left out of the metrics: the time series (see `series`),
/// bucket lists and histogram payloads (see the hlog export).
const SKIPPED: &[&str] = &["timeline", "buckets", "hdr", "memory_stat"];

pub fn metrics(rec: &Recording, out: &mut dyn Write) -> io::Result<()> {
    let mut o = Rows::new(out);
    o.row(["run", "label", "kernel", "metric", "value"])?;
    for (i, run) in rec.runs.iter().enumerate() {
        let Ok(v) = serde_json::to_value(&run.report) else {
            continue;
        };
        let mut rows = Vec::new();
        flatten("", &v, &mut rows);
        for (metric, value) in rows {
            o.row([
                (i + 1).to_string().as_str(),
                &run.label,
                &rec.environment.kernel_release,
                &metric,
                &value,
            ])?;
        }
    }
    o.finish()
}

/// Numbers (and booleans) of a JSON tree as (path, value) rows.
fn flatten(path: &str, v: &Value, out: &mut Vec<(String, String)>) {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match v {
        Value::Number(n) => out.push((path.to_string(), n.to_string())),
        Value::Bool(b) => out.push((path.to_string(), u8::from(*b).to_string())),
        Value::Object(m) => {
            for (k, v) in m {
                if !SKIPPED.contains(&k.as_str()) {
                    flatten(&join(k), v, out);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let key = row_key(item).unwrap_or_else(|| i.to_string());
                flatten(&format!("{path}[{key}]"), item, out);
            }
        }
        Value::String(_) | Value::Null => {}
    }
}

fn row_key(item: &Value) -> Option<String> {
    let m = item.as_object()?;
    let parts: Vec<String> = ROW_KEYS
        .iter()
        .filter_map(|k| match m.get(*k)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The time series: counters cumulative since the run started, so rates
/// are differences between rows; the machine's LRU list sizes (gauges);
/// free pages per populated zone.
pub fn series(rec: &Recording, out: &mut dyn Write) -> io::Result<()> {
    // Each populated zone once, in order of first appearance; found by a
    // set, not a search (a crafted recording's 20k zones were quadratic).
    let mut zones: Vec<(u32, String)> = Vec::new();
    let mut seen: std::collections::HashSet<(u32, &str)> = std::collections::HashSet::new();
    for run in &rec.runs {
        for s in &run.report.timeline {
            for z in s.zones.iter().filter(|z| z.managed > 0) {
                if seen.insert((z.node, z.zone.as_str())) {
                    zones.push((z.node, z.zone.clone()));
                }
            }
        }
    }
    let mut header: Vec<String> = SERIES_COLUMNS.iter().map(|c| c.to_string()).collect();
    for (node, zone) in &zones {
        header.push(format!("free_pages_{node}_{zone}"));
        header.push(format!("low_pages_{node}_{zone}"));
    }
    let mut o = Rows::new(out);
    o.row(&header)?;
    let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
    for (i, run) in rec.runs.iter().enumerate() {
        for s in &run.report.timeline {
            let mut row = vec![
                (i + 1).to_string(),
                run.label.clone(),
                format!("{:.3}", s.t_s),
            ];
            row.extend(
                [
                    s.pgfault,
                    s.pgmajfault,
                    s.pgscan,
                    s.pgsteal,
                    s.pswpin,
                    s.pswpout,
                    s.allocstall,
                    s.direct_reclaims,
                    s.direct_stall_ns,
                    s.memcg_reclaims,
                    s.memcg_stall_ns,
                    s.major_faults_target,
                    s.swap_out_folios,
                    s.kswapd_rounds,
                ]
                .map(|v| v.to_string()),
            );
            row.push(opt(s.psi.map(|p| p.some_us)));
            row.push(opt(s.psi.map(|p| p.full_us)));
            row.push(opt(s.box_bytes));
            row.push(opt(s.box_psi.map(|p| p.some_us)));
            row.push(opt(s.box_psi.map(|p| p.full_us)));
            for i in 0..4 {
                row.push(opt(s.lru.map(|l| l.lists()[i].1)));
            }
            let here: std::collections::HashMap<(u32, &str), &crate::model::sample::ZoneSample> = s
                .zones
                .iter()
                .map(|z| ((z.node, z.zone.as_str()), z))
                .collect();
            for (node, zone) in &zones {
                let z = here.get(&(*node, zone.as_str()));
                row.push(opt(z.map(|z| z.free)));
                row.push(opt(z.map(|z| z.low)));
            }
            o.row(&row)?;
        }
    }
    o.finish()
}

/// The series' fixed columns, in order (zone columns follow).
const SERIES_COLUMNS: &[&str] = &[
    "run",
    "label",
    "t_s",
    "pgfault",
    "pgmajfault",
    "pgscan",
    "pgsteal",
    "pswpin",
    "pswpout",
    "allocstall",
    "direct_reclaims",
    "direct_stall_ns",
    "memcg_reclaims",
    "memcg_stall_ns",
    "major_faults_target",
    "swap_out_folios",
    "kswapd_rounds",
    "psi_some_us",
    "psi_full_us",
    "box_bytes",
    "box_psi_some_us",
    "box_psi_full_us",
    // The machine's LRU list sizes at the sample (pages; /proc/vmstat
    // gauges, not cumulative).
    "machine_nr_inactive_anon",
    "machine_nr_active_anon",
    "machine_nr_inactive_file",
    "machine_nr_active_file",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattens_with_row_names() {
        let v = serde_json::json!({
            "usage": {"wall_s": 1.5},
            "lru": [{"node": 0, "context": "memcg", "nr_scanned": 7}],
            "counts": [1, 2],
            "timeline": [{"t_s": 1}],
            "exit": {"oom_killed": true, "code": null},
        });
        let mut rows = Vec::new();
        flatten("", &v, &mut rows);
        let rows: Vec<String> = rows.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(
            rows,
            [
                "counts[0]=1",
                "counts[1]=2",
                "exit.oom_killed=1",
                "lru[0/memcg].node=0",
                "lru[0/memcg].nr_scanned=7",
                "usage.wall_s=1.5",
            ]
        );
        let text = to_string(|w| {
            let mut o = Rows::new(w);
            o.row(["a,b", "x\"y", "plain", ""])?;
            o.finish()
        })
        .expect("in memory");
        assert_eq!(text, "\"a,b\",\"x\"\"y\",plain,\n");
    }
}
