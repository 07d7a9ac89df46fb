//! The compare plot: the groups' latency distributions overlaid, one
//! percentile plot per histogram, stacked in one SVG page.

use crate::analysis::groups::completed;
use crate::analysis::{Comparison, GroupInput};

/// The groups' latency distributions, overlaid (each group's completed
/// runs merged), one percentile plot per histogram, as one SVG page.
pub fn svg(c: &Comparison, inputs: &[GroupInput]) -> String {
    use vmtrace_common::hist::{BUCKETS, bucket_of};
    let mut panels = Vec::new();
    for h in vmtrace_common::Hist::ALL {
        let mut merged = Vec::new();
        for (g, input) in inputs.iter().enumerate() {
            let mut counts = vec![0u64; BUCKETS];
            for run in input.recordings.iter().flat_map(|r| &r.runs) {
                if !completed(&run.report) {
                    continue;
                }
                for (kind, s) in run.report.histograms() {
                    if kind == h {
                        for b in &s.buckets {
                            if let Some(slot) = counts.get_mut(bucket_of(b.lower_ns)) {
                                *slot = slot.saturating_add(b.count);
                            }
                        }
                    }
                }
            }
            if counts.iter().any(|&n| n > 0) {
                let label = c.groups.get(g).map_or(String::new(), |g| g.label.clone());
                merged.push((
                    format!("{} {label}", crate::model::format::group_letter(g)),
                    crate::model::histogram::summarize(&counts),
                ));
            }
        }
        if merged.is_empty() {
            continue;
        }
        let series: Vec<crate::view::export::svg::Series> = merged
            .iter()
            .map(|(label, summary)| crate::view::export::svg::Series {
                label: label.clone(),
                summary,
            })
            .collect();
        panels.push(crate::view::export::svg::latency_plot(h.title(), &series));
    }
    let title = c
        .groups
        .iter()
        .enumerate()
        .map(|(i, g)| format!("{} {}", crate::model::format::group_letter(i), g.label))
        .collect::<Vec<_>>()
        .join(" vs ");
    stack(&format!("vmtrace compare: {title}"), &panels)
}

/// Standalone SVG documents stacked vertically in one page.
pub fn stack(title: &str, panels: &[String]) -> String {
    let attr = |tag: &str, name: &str| -> f64 {
        tag.split(&format!(" {name}=\""))
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .and_then(|v| v.trim_end_matches("px").parse().ok())
            .unwrap_or(0.0)
    };
    let escaped = crate::view::plot::svg::esc(title);
    let mut body = format!(
        "<text x=\"20\" y=\"32\" font-family=\"sans-serif\" font-size=\"20\" \
         font-weight=\"bold\">{escaped}</text>\n"
    );
    let (mut y, mut width) = (48.0f64, 600.0f64);
    for p in panels {
        let Some(start) = p.find("<svg") else {
            continue;
        };
        let tag_end = p[start..].find('>').map_or(p.len(), |e| start + e);
        let tag = &p[start..tag_end];
        let (w, h) = (attr(tag, "width"), attr(tag, "height"));
        body.push_str(&format!("<svg x=\"0\" y=\"{y}\"{}", &p[start + 4..]));
        body.push('\n');
        y += h;
        width = width.max(w);
    }
    if panels.is_empty() {
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"600\" height=\"40\">\
                <text x=\"10\" y=\"25\" font-family=\"sans-serif\">no latency values to plot</text></svg>\n"
            .into();
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{y}\" \
         viewBox=\"0 0 {width} {y}\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n{body}</svg>\n"
    )
}
