//! CSV for spreadsheets, R and pandas. `metrics`: tidy, one row per run
//! and metric (`run,label,kernel,metric,value`), every number of the run
//! report with its path as the metric name (units in the name: `_ns`,
//! `_s`, `_bytes`). `series`: the time series, one row per run and step.

use serde_json::Value;

use crate::model::recording::Recording;

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

pub fn metrics(rec: &Recording) -> String {
    let mut o = String::from("run,label,kernel,metric,value\n");
    for (i, run) in rec.runs.iter().enumerate() {
        let Ok(v) = serde_json::to_value(&run.report) else {
            continue;
        };
        let mut rows = Vec::new();
        flatten("", &v, &mut rows);
        for (metric, value) in rows {
            o.push_str(&format!(
                "{},{},{},{},{}\n",
                i + 1,
                field(&run.label),
                field(&rec.environment.kernel_release),
                field(&metric),
                field(&value)
            ));
        }
    }
    o
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

/// A CSV field, quoted when it needs to be.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The time series: counters cumulative since the run started, so rates
/// are differences between rows; free pages per populated zone.
pub fn series(rec: &Recording) -> String {
    let mut zones: Vec<(u32, String)> = Vec::new();
    for run in &rec.runs {
        for s in &run.report.timeline {
            for z in s.zones.iter().filter(|z| z.managed > 0) {
                if !zones
                    .iter()
                    .any(|(n, name)| *n == z.node && *name == z.zone)
                {
                    zones.push((z.node, z.zone.clone()));
                }
            }
        }
    }
    let mut o = String::from(
        "run,label,t_s,pgfault,pgmajfault,pgscan,pgsteal,pswpin,pswpout,allocstall,\
         direct_reclaims,direct_stall_ns,memcg_reclaims,memcg_stall_ns,\
         major_faults_target,swap_out_folios,kswapd_rounds,psi_some_us,psi_full_us,box_bytes",
    );
    for (node, zone) in &zones {
        o.push_str(&format!(
            ",free_pages_{node}_{zone},low_pages_{node}_{zone}"
        ));
    }
    o.push('\n');
    let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
    for (i, run) in rec.runs.iter().enumerate() {
        for s in &run.report.timeline {
            o.push_str(&format!(
                "{},{},{:.3},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                i + 1,
                field(&run.label),
                s.t_s,
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
                opt(s.psi.map(|p| p.some_us)),
                opt(s.psi.map(|p| p.full_us)),
                opt(s.box_bytes),
            ));
            for (node, zone) in &zones {
                let z = s.zones.iter().find(|z| z.node == *node && z.zone == *zone);
                o.push_str(&format!(
                    ",{},{}",
                    opt(z.map(|z| z.free)),
                    opt(z.map(|z| z.low))
                ));
            }
            o.push('\n');
        }
    }
    o
}

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
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("x\"y"), "\"x\"\"y\"");
    }
}
