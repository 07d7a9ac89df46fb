//! `export --format folded`: where reclaim was entered, as folded
//! stacks weighted by stall time (one line per way in: frames from the
//! outermost caller to the reclaim function, then the GFP flags and
//! order as a last frame, then microseconds stalled), the input of
//! flamegraph.pl, inferno-flamegraph and speedscope as it is. The runs
//! of a recording are added together. `--format flamegraph` draws the
//! same lines as an SVG (inferno), and `differential` draws two groups'
//! ways in (`compare --flamegraph`).

use std::collections::BTreeMap;

use anyhow::{Result, bail};

use crate::model::{recording::Recording, report::EntryWay};

/// The folded lines of `rec`'s reclaim entries, heaviest first.
pub fn render(rec: &Recording) -> Result<String> {
    let mut weights: BTreeMap<String, u64> = BTreeMap::new();
    let mut any = false;
    for run in &rec.runs {
        let Some(e) = &run.report.reclaim_entries else {
            continue;
        };
        any = true;
        for p in &e.paths {
            let root = match p.context {
                EntryWay::Compaction => "direct_compaction".to_string(),
                w @ (EntryWay::Direct | EntryWay::Memcg | EntryWay::KswapdWake) => {
                    format!("{}_reclaim", w.name())
                }
            };
            let mut frames: Vec<String> = vec![root];
            if p.frames.is_empty() {
                frames.push("[stack not kept]".into());
            }
            frames.extend(p.frames.iter().rev().map(|f| frame(f)));
            let order = if p.context.order_known() {
                format!(" order {}", p.order)
            } else {
                String::new()
            };
            frames.push(format!("[{}{order}]", frame(&p.gfp_names)));
            *weights.entry(frames.join(";")).or_default() += p.stall_ns / 1000;
        }
    }
    if !any {
        bail!(
            "this recording has no reclaim entry stacks (recorded with \
             --no-stacks, on a kernel without the reclaim tracepoints, or \
             by a vmtrace that did not keep them yet); record it again \
             without --no-stacks"
        );
    }
    let mut lines: Vec<(String, u64)> = weights.into_iter().filter(|(_, w)| *w > 0).collect();
    lines.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(lines
        .into_iter()
        .map(|(stack, w)| format!("{stack} {w}\n"))
        .collect())
}

/// The flame graph SVG of `rec`'s ways in (`export --format flamegraph`).
pub fn flamegraph(rec: &Recording) -> Result<String> {
    let folded = render(rec)?;
    draw(
        folded.lines(),
        "where reclaim was entered (us stalled)",
        false,
    )
}

/// A differential flame graph of two groups' ways in (`compare
/// --flamegraph`): `ways` holds each way's frames (as recorded,
/// innermost first), its context and its mean stall seconds per run in
/// the baseline and in the other group. Widths are the other group's;
/// red is more time there than in the baseline, blue less.
pub fn differential(ways: &[(EntryWay, Vec<String>, f64, f64)], title: &str) -> Result<String> {
    if ways.is_empty() {
        bail!(
            "no recording of either group kept reclaim entry stacks (recorded \
             with --no-stacks or before vmtrace kept them): no flame graph"
        );
    }
    let lines: Vec<String> = ways
        .iter()
        .map(|(context, frames, a, b)| {
            let mut stack = vec![format!("{}_reclaim", context.name())];
            stack.extend(frames.iter().rev().map(|f| frame(f)));
            let us = |s: f64| (s * 1e6).round().max(0.0) as u64;
            format!("{} {} {}", stack.join(";"), us(*a), us(*b))
        })
        .collect();
    draw(lines.iter().map(String::as_str), title, true)
}

/// Runs inferno's flame graph on folded lines.
fn draw<'a>(
    lines: impl Iterator<Item = &'a str>,
    title: &str,
    differential: bool,
) -> Result<String> {
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = "us".to_string();
    // A way in's frames are kernel functions: the kernel's palette.
    opts.colors =
        inferno::flamegraph::Palette::Basic(inferno::flamegraph::color::BasicPalette::Hot);
    if differential {
        opts.subtitle = Some("red: more stall time than the baseline, blue: less".into());
    }
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, lines, &mut svg)
        .map_err(|e| anyhow::anyhow!("drawing the flame graph: {e}"))?;
    String::from_utf8(svg).map_err(|e| anyhow::anyhow!("drawing the flame graph: {e}"))
}

/// A frame that cannot break the format: `;` separates frames and a
/// line ends the stack, so both (and any control character) become `_`.
pub(super) fn frame(name: &str) -> String {
    name.chars()
        .map(|c| if c == ';' || c.is_control() { '_' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::report::{EntryPath, ReclaimEntries};

    fn recording(paths: Vec<EntryPath>) -> Recording {
        let mut rec = crate::host::corpus_recording();
        for run in &mut rec.runs {
            run.report.reclaim_entries = Some(ReclaimEntries {
                paths: paths.clone(),
                ..Default::default()
            });
        }
        rec
    }

    fn path(frames: &[&str], stall_ns: u64) -> EntryPath {
        EntryPath {
            context: EntryWay::Memcg,
            frames: frames.iter().map(|s| s.to_string()).collect(),
            gfp: 0xcc0,
            gfp_names: "GFP_KERNEL".into(),
            order: 0,
            count: 1,
            stall_ns,
            split: None,
        }
    }

    #[test]
    fn frames_run_from_the_outermost_caller_weighted_in_microseconds() {
        let rec = recording(vec![
            path(
                &[
                    "try_to_free_mem_cgroup_pages",
                    "do_anonymous_page",
                    "exc_page_fault",
                ],
                3_000_500,
            ),
            path(
                &["try_to_free_mem_cgroup_pages", "filemap_fault;x\n"],
                5_000_000,
            ),
        ]);
        let text = render(&rec).expect("folded");
        let runs = rec.runs.len() as u64;
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                format!(
                    "memcg_reclaim;filemap_fault_x_;try_to_free_mem_cgroup_pages;[GFP_KERNEL] {}",
                    5000 * runs
                ),
                format!(
                    "memcg_reclaim;exc_page_fault;do_anonymous_page;\
                     try_to_free_mem_cgroup_pages;[GFP_KERNEL] {}",
                    3000 * runs
                ),
            ]
        );
    }

    #[test]
    fn the_flame_graphs_draw_every_way_in() {
        let rec = recording(vec![
            path(
                &["try_to_free_mem_cgroup_pages", "do_anonymous_page"],
                3_000_000,
            ),
            path(&["try_to_free_mem_cgroup_pages", "filemap_read"], 1_000_000),
        ]);
        let svg = flamegraph(&rec).expect("svg");
        assert!(svg.starts_with("<?xml"), "{}", &svg[..80.min(svg.len())]);
        // A frame from a hostile recording is text, never markup.
        let hostile = recording(vec![path(&["f", "<script>x</script>"], 1_000_000)]);
        let drawn = flamegraph(&hostile).expect("svg");
        assert!(!drawn.contains("<script>x"), "a frame became markup");
        for name in ["do_anonymous_page", "filemap_read", "memcg_reclaim"] {
            assert!(svg.contains(name), "{name} not drawn");
        }
        let ways = vec![(
            EntryWay::Memcg,
            vec![
                "try_to_free_mem_cgroup_pages".to_string(),
                "filemap_read".to_string(),
            ],
            0.0,
            0.2,
        )];
        let diff = differential(&ways, "B vs A").expect("differential");
        assert!(diff.contains("filemap_read") && diff.contains("B vs A"));
        assert!(differential(&[], "x").is_err());
    }

    #[test]
    fn a_recording_without_stacks_says_how_to_get_them() {
        let mut rec = recording(Vec::new());
        for run in &mut rec.runs {
            run.report.reclaim_entries = None;
        }
        let e = render(&rec).expect_err("no stacks");
        assert!(format!("{e}").contains("--no-stacks"), "{e}");
    }
}
