//! The doc tables that list signals, written from the data the code
//! runs on (`vmtrace generate docs TABLE`), never copied by hand: the
//! README's metric table from the catalogue, docs/PROMETHEUS.md's
//! histogram and counter families from what `/metrics` renders for every
//! `Hist` and `Counter`, docs/RECORDING.md's latency histograms from
//! `RunReport::histogram_path`. Each lives in its file between two
//! marker lines (`splice` rewrites what lies between); the recordings
//! test fails while a file's table is not the generated one, and
//! `VMTRACE_BLESS=1 cargo test -p vmtrace --test recordings docs`
//! rewrites it.

use anyhow::{Context, Result, bail};
use vmtrace_common::{Counter, Hist, hist::BUCKETS};

use crate::model::{histogram::whose, probes::Documented, report::RunReport};
use crate::view::prometheus::{Exposition, Format, render};

macro_rules! doc_tables {
    ($($variant:ident => ($name:literal, $file:literal),)*) => {
        /// The generated tables: one enum, matched exhaustively where a
        /// table is written, so a new one does not compile until it is.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum DocTable {
            $($variant,)*
        }

        impl DocTable {
            pub const ALL: [DocTable; [$(DocTable::$variant,)*].len()] =
                [$(DocTable::$variant,)*];

            /// As given to `vmtrace generate docs`.
            pub fn name(self) -> &'static str {
                match self {
                    $(DocTable::$variant => $name,)*
                }
            }

            /// The file it lives in, from the repository's root.
            pub fn file(self) -> &'static str {
                match self {
                    $(DocTable::$variant => $file,)*
                }
            }
        }
    };
}

doc_tables! {
    Metrics => ("metrics", "README.md"),
    PrometheusHistograms => ("prometheus-histograms", "docs/PROMETHEUS.md"),
    PrometheusCounters => ("prometheus-counters", "docs/PROMETHEUS.md"),
    RecordingHistograms => ("recording-histograms", "docs/RECORDING.md"),
}

impl DocTable {
    pub fn from_name(name: &str) -> Option<DocTable> {
        DocTable::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The line that opens its region in its file.
    pub fn start_marker(self) -> String {
        format!("<!-- generated: vmtrace generate docs {} -->", self.name())
    }
}

/// The line that closes a generated region.
pub const END_MARKER: &str = "<!-- end generated -->";

/// The table, in Markdown (`metrics`: the catalogue, as
/// `kernel::probes::documented` lists it).
pub fn table(t: DocTable, metrics: &[Documented]) -> String {
    match t {
        DocTable::Metrics => metrics_table(metrics),
        DocTable::PrometheusHistograms => prometheus_histograms(),
        DocTable::PrometheusCounters => prometheus_counters(),
        DocTable::RecordingHistograms => recording_histograms(),
    }
}

/// `text` with the region of `t` holding `table` (its marker line, a
/// blank line, the table, a blank line, the end marker: Markdown sees the
/// markers as HTML blocks of their own); `file` names the text in errors.
pub fn splice(text: &str, file: &str, t: DocTable, table: &str) -> Result<String> {
    let start = t.start_marker();
    let at = text
        .find(&format!("{start}\n"))
        .with_context(|| format!("{file} has no line `{start}`"))?;
    let body = at + start.len() + 1;
    let end = text[body..]
        .find(&format!("{END_MARKER}\n"))
        .with_context(|| format!("{file}: `{start}` has no `{END_MARKER}` after it"))?;
    if text[body + end..].contains(&start) {
        bail!("{file} has `{start}` twice");
    }
    Ok(format!(
        "{}\n{table}\n{}",
        &text[..body],
        &text[body + end..]
    ))
}

/// A Markdown table: a header and rows of cells (`|` escaped).
fn markdown(header: &[&str], rows: &[Vec<String>]) -> String {
    let line = |cells: &[String]| {
        let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        format!("| {} |\n", cells.join(" | "))
    };
    let head: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let mut out = line(&head);
    out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
    for row in rows {
        out.push_str(&line(row));
    }
    out
}

fn code(s: &str) -> String {
    format!("`{s}`")
}

/// The README's: each metric, its hooks, what it keeps in the kernel.
fn metrics_table(metrics: &[Documented]) -> String {
    let rows: Vec<Vec<String>> = metrics
        .iter()
        .map(|m| {
            let id = match m.opt_in {
                Some(flag) => format!("{} ({flag})", m.id),
                None => m.id.to_string(),
            };
            vec![id, m.title.to_string(), hooks(&m.hooks), m.kept.to_string()]
        })
        .collect();
    markdown(
        &[
            "metric",
            "measures",
            "kernel hooks",
            "kept in the kernel as",
        ],
        &rows,
    )
}

/// Hooks as `vmtrace probes` describes them, their names in code and
/// a kind said once for a run of hooks of that kind: `tracepoint
/// vmscan:a`, `tracepoint vmscan:b` as tracepoint `vmscan:a`, `vmscan:b`.
fn hooks(described: &[String]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut last_kind = "";
    for d in described {
        match d.rsplit_once(' ') {
            Some((kind, name)) if !name.ends_with("Hz") => {
                out.push(if kind == last_kind {
                    code(name)
                } else {
                    format!("{kind} {}", code(name))
                });
                last_kind = kind;
            }
            _ => {
                out.push(d.clone());
                last_kind = "";
            }
        }
    }
    out.join(", ")
}

/// One family of a rendered exposition.
#[derive(Debug, PartialEq)]
struct Family {
    name: String,
    kind: String,
    help: String,
    /// Each label but `le`, with its values in the order they came.
    labels: Vec<(String, Vec<String>)>,
}

/// The families `/metrics` shows for `e`, read back from its text.
fn families(e: &Exposition) -> Vec<Family> {
    let mut out: Vec<Family> = Vec::new();
    for line in render(e, Format::Prometheus).lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            out.push(Family {
                name: name.to_string(),
                kind: String::new(),
                help: help.to_string(),
                labels: Vec::new(),
            });
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            if let (Some(f), Some((_, kind))) = (out.last_mut(), rest.split_once(' ')) {
                f.kind = kind.to_string();
            }
        } else if let (Some(f), Some((_, rest))) = (out.last_mut(), line.split_once('{')) {
            let inside = rest.split('}').next().unwrap_or("");
            for pair in inside.split(',') {
                let Some((k, v)) = pair.split_once('=') else {
                    continue;
                };
                let v = v.trim_matches('"').to_string();
                if k == "le" {
                    continue;
                }
                match f.labels.iter_mut().find(|(key, _)| key == k) {
                    Some((_, values)) if !values.contains(&v) => values.push(v),
                    Some(_) => {}
                    None => f.labels.push((k.to_string(), vec![v])),
                }
            }
        }
    }
    out
}

/// The families an exposition holding only `e`'s signal adds to an
/// empty one's.
fn added(e: &Exposition) -> Vec<Family> {
    let empty: Vec<String> = families(&Exposition::default())
        .into_iter()
        .map(|f| f.name)
        .collect();
    families(e)
        .into_iter()
        .filter(|f| !empty.contains(&f.name))
        .collect()
}

/// docs/PROMETHEUS.md's: the family of every kernel histogram.
fn prometheus_histograms() -> String {
    let rows: Vec<Vec<String>> = Hist::ALL
        .into_iter()
        .flat_map(|h| {
            let e = Exposition {
                hists: vec![(h, vec![0; BUCKETS])],
                ..Exposition::default()
            };
            added(&e)
                .into_iter()
                .map(move |f| vec![code(&f.name), code(h.name()), f.help])
        })
        .collect();
    markdown(&["family (histogram)", "recording's", "HELP"], &rows)
}

/// docs/PROMETHEUS.md's: the family each kernel counter is exposed in,
/// its labels, and the counters the histograms stand for.
fn prometheus_counters() -> String {
    // (family, its labels, HELP, the recording's counters in it)
    let mut rows: Vec<(Family, Vec<String>)> = Vec::new();
    let mut in_histograms: Vec<String> = Vec::new();
    for c in Counter::ALL {
        let e = Exposition {
            counters: vec![(c, 0)],
            ..Exposition::default()
        };
        let fams = added(&e);
        if fams.is_empty() {
            in_histograms.push(code(c.name()));
        }
        for f in fams {
            match rows.iter_mut().find(|(r, _)| r.name == f.name) {
                Some((row, names)) => {
                    for (k, vs) in f.labels {
                        match row.labels.iter_mut().find(|(key, _)| *key == k) {
                            Some((_, values)) => values.extend(vs),
                            None => row.labels.push((k, vs)),
                        }
                    }
                    names.push(code(c.name()));
                }
                None => rows.push((f, vec![code(c.name())])),
            }
        }
    }
    let mut table: Vec<Vec<String>> = rows
        .into_iter()
        .map(|(f, names)| {
            let labels: Vec<String> = f
                .labels
                .iter()
                .map(|(k, vs)| format!("{k}: {}", vs.join(", ")))
                .collect();
            vec![code(&f.name), labels.join("; "), names.join(", "), f.help]
        })
        .collect();
    if !in_histograms.is_empty() {
        table.push(vec![
            "(in the histograms)".to_string(),
            String::new(),
            in_histograms.join(", "),
            "not counters: the reclaim histograms' `_count` and exact `_sum`".to_string(),
        ]);
    }
    markdown(
        &["family (counter)", "labels", "recording's", "HELP"],
        &table,
    )
}

/// docs/RECORDING.md's: where each latency histogram lies in a report.
fn recording_histograms() -> String {
    let rows: Vec<Vec<String>> = Hist::ALL
        .into_iter()
        .map(|h| {
            vec![
                code(RunReport::histogram_path(h)),
                code(h.name()),
                h.title().to_string(),
                whose(h).trim_start_matches("of ").to_string(),
            ]
        })
        .collect();
    markdown(&["JSON path", "name", "one value is", "whose"], &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splice_rewrites_only_the_named_region() {
        let t = DocTable::Metrics;
        let text = format!(
            "# Title\n\n{}\n| old |\n{END_MARKER}\nafter\n",
            t.start_marker()
        );
        let got = splice(&text, "README.md", t, "| new |\n").expect("splice");
        assert_eq!(
            got,
            format!(
                "# Title\n\n{}\n\n| new |\n\n{END_MARKER}\nafter\n",
                t.start_marker()
            )
        );
        // Splicing what is there changes nothing.
        assert_eq!(
            splice(&got, "README.md", t, "| new |\n").expect("again"),
            got
        );
        let e = splice("no marker\n", "README.md", t, "").expect_err("no marker");
        assert!(e.to_string().contains("README.md has no line"), "{e}");
        let open = format!("{}\n| x |\n", t.start_marker());
        assert!(splice(&open, "f", t, "").is_err());
        let twice = format!("{text}{text}");
        assert!(splice(&twice, "f", t, "").is_err());
    }

    #[test]
    fn every_table_has_a_name_a_file_and_rows() {
        let metric = Documented {
            id: "direct_reclaim",
            title: "direct reclaim stalls",
            hooks: vec![
                "tracepoint vmscan:a|b".into(),
                "tracepoint vmscan:c".into(),
                "perf software event CPU_CLOCK at 499 Hz".into(),
                "tracepoint oom:d".into(),
            ],
            opt_in: Some("--x"),
            kept: "stamps",
        };
        for t in DocTable::ALL {
            assert_eq!(DocTable::from_name(t.name()), Some(t));
            assert!(t.file().ends_with(".md"), "{t:?}");
            let md = table(t, std::slice::from_ref(&metric));
            let lines: Vec<&str> = md.lines().collect();
            assert!(lines.len() > 2, "{t:?}: {md}");
            let columns = lines[0].matches(" | ").count();
            for l in &lines {
                assert!(l.starts_with('|') && l.ends_with('|'), "{t:?}: {l}");
                if !l.starts_with("|---") {
                    assert_eq!(l.replace("\\|", "").matches(" | ").count(), columns, "{l}");
                }
            }
        }
        let md = table(DocTable::Metrics, &[metric]);
        assert!(
            md.contains(
                "| direct_reclaim (--x) | direct reclaim stalls | tracepoint `vmscan:a\\|b`, \
                 `vmscan:c`, perf software event CPU_CLOCK at 499 Hz, tracepoint `oom:d` | stamps |"
            ),
            "{md}"
        );
    }

    #[test]
    fn prometheus_tables_hold_every_signal_once() {
        let hists = table(DocTable::PrometheusHistograms, &[]);
        for h in Hist::ALL {
            assert_eq!(
                hists.matches(&format!("| `{}` |", h.name())).count(),
                1,
                "{h:?}"
            );
        }
        assert!(hists.contains("| `vmtrace_memcg_reclaim_seconds` | `memcg_reclaim` | memcg reclaim stall of the target (s); _sum exact |"), "{hists}");
        let counters = table(DocTable::PrometheusCounters, &[]);
        for c in Counter::ALL {
            assert_eq!(
                counters.matches(&format!("`{}`", c.name())).count(),
                1,
                "{c:?}"
            );
        }
        // A dimension in the name is a label of one family.
        assert!(
            counters.contains("| `vmtrace_reclaim_on_cpu_seconds_total` | context: direct, memcg | `direct_reclaim_on_cpu_ns`, `memcg_reclaim_on_cpu_ns` |"),
            "{counters}"
        );
        assert!(counters.contains("| (in the histograms) |  | `direct_reclaims`, `direct_reclaim_ns`, `memcg_reclaims`, `memcg_reclaim_ns` |"), "{counters}");
    }

    #[test]
    fn the_recording_table_names_every_histogram_by_its_path() {
        let md = table(DocTable::RecordingHistograms, &[]);
        assert_eq!(md.lines().count(), 2 + Hist::ALL.len());
        assert!(
            md.contains("| `swap_io.read` | `swap_read` | swap read request | every task |"),
            "{md}"
        );
        assert!(
            md.contains(
                "| `memcg_reclaim.stalls` | `memcg_reclaim` | memcg reclaim stall | the target |"
            ),
            "{md}"
        );
    }

    /// The `$defs` name a property's schema refers to (through an
    /// `anyOf` with null: an `Option`).
    fn referred(p: &serde_json::Value) -> Option<&str> {
        let r = p["$ref"].as_str().or_else(|| {
            p["anyOf"]
                .as_array()?
                .iter()
                .find_map(|a| a["$ref"].as_str())
        })?;
        r.strip_prefix("#/$defs/")
    }

    /// Every `Summary` of a run report, found by walking the recording's
    /// JSON Schema two levels down, is a `RunReport::histogram_path`,
    /// and each path leads to a `Summary`.
    #[test]
    fn histogram_paths_are_the_summaries_of_the_report_schema() {
        let schema = crate::view::json::schema("recording").expect("recording schema");
        let defs = &schema["$defs"];
        let mut found: Vec<String> = Vec::new();
        let report = defs["RunReport"]["properties"]
            .as_object()
            .expect("RunReport");
        for (field, p) in report {
            let Some(def) = referred(p) else { continue };
            let Some(inner) = defs[def]["properties"].as_object() else {
                continue;
            };
            for (sub, q) in inner {
                if referred(q) == Some("Summary") {
                    found.push(format!("{field}.{sub}"));
                }
            }
        }
        found.sort();
        let mut paths: Vec<String> = Hist::ALL
            .map(|h| RunReport::histogram_path(h).to_string())
            .to_vec();
        paths.sort();
        assert_eq!(found, paths);
    }
}
