//! The job's CPU inside reclaim and compaction, B against A, for flame
//! graph tools (`compare --cpu-flamegraph`): each in-stall kernel stack
//! with its mean share of a run's in-stall samples in each group
//! (`analysis::profile::stack_shares`), in parts per million.
//!
//! `.folded`: `stack A B` lines, the two-column format of FlameGraph's
//! difffolded.pl and inferno-diff-folded, for flamegraph.pl and
//! inferno-flamegraph to draw. `.svg`: the differential flame graph
//! drawn here (inferno): widths B's, red a frame whose share grew,
//! blue one that shrank, and neutral a frame whose change is within
//! noise: only the functions `analysis::profile` found moved (Holm's
//! correction, across runs) are coloured, so sampling noise is never
//! painted as a change.

use anyhow::{Result, bail};

use super::folded::frame;
use crate::analysis::profile::StackShare;

/// Shares as the integer counts flame graph tools read.
fn ppm(share: f64) -> u64 {
    (share * 1e6).round().max(0.0) as u64
}

fn line(s: &StackShare, a: f64) -> Option<String> {
    let stack: Vec<String> = s.frames.iter().map(|f| frame(f)).collect();
    let (a, b) = (ppm(a), ppm(s.b));
    (a > 0 || b > 0).then(|| format!("{} {a} {b}", stack.join(";")))
}

/// The two-column folded diff, most of B's share first.
pub fn diff_folded(stacks: &[StackShare]) -> Result<String> {
    none_is_an_error(stacks)?;
    Ok(stacks
        .iter()
        .filter_map(|s| line(s, s.a))
        .map(|l| l + "\n")
        .collect())
}

/// The differential flame graph: a stack whose innermost function did
/// not move (`moved` false) is drawn with B's share on both sides, so
/// its frame is neutral.
pub fn differential_svg(
    stacks: &[StackShare],
    moved: &dyn Fn(&str) -> bool,
    title: &str,
) -> Result<String> {
    none_is_an_error(stacks)?;
    let lines: Vec<String> = stacks
        .iter()
        .filter_map(|s| {
            let leaf_moved = s.frames.last().is_some_and(|f| moved(f));
            line(s, if leaf_moved { s.a } else { s.b })
        })
        .collect();
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = "ppm of in-stall samples".to_string();
    opts.subtitle = Some(
        "red: a larger share than the baseline, blue: smaller; \
         uncoloured: within noise"
            .into(),
    );
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), &mut svg)
        .map_err(|e| anyhow::anyhow!("drawing the flame graph: {e}"))?;
    String::from_utf8(svg).map_err(|e| anyhow::anyhow!("drawing the flame graph: {e}"))
}

fn none_is_an_error(stacks: &[StackShare]) -> Result<()> {
    if stacks.is_empty() {
        bail!(
            "no run of either group sampled the job's CPU inside reclaim or \
             compaction (recorded with --no-stacks, without a stall, or by a \
             vmtrace without the profile): no CPU flame graph"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(frames: &[&str], a: f64, b: f64) -> StackShare {
        StackShare {
            frames: frames.iter().map(|f| f.to_string()).collect(),
            a,
            b,
        }
    }

    fn stacks() -> Vec<StackShare> {
        vec![
            share(
                &["try_to_free_pages", "shrink_folio_list", "zswap_compress"],
                0.0,
                0.45,
            ),
            share(
                &[
                    "try_to_free_pages",
                    "shrink_folio_list",
                    "isolate_lru_folios",
                ],
                0.7,
                0.38,
            ),
            share(
                &["try_to_free_pages", "shrink_folio_list", "folio_referenced"],
                0.3,
                0.17,
            ),
        ]
    }

    #[test]
    fn the_folded_diff_has_both_groups_shares() {
        let text = diff_folded(&stacks()).expect("stacks");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "try_to_free_pages;shrink_folio_list;zswap_compress 0 450000"
        );
        assert_eq!(
            lines[1],
            "try_to_free_pages;shrink_folio_list;isolate_lru_folios 700000 380000"
        );
        assert!(diff_folded(&[]).is_err());
    }

    /// Only moved functions differ between the two columns drawn: a
    /// change within noise is not painted.
    #[test]
    fn frames_within_noise_are_drawn_neutral() {
        let moved = |f: &str| f == "zswap_compress";
        let svg = differential_svg(&stacks(), &moved, "t").expect("draws");
        // inferno gives each frame its change in the title and its
        // colour in the rect that follows.
        let frame_of = |f: &str| {
            let at = svg.find(&format!("<title>{f} (")).unwrap_or(0);
            let rest = &svg[at..];
            let end = rest.find("/>").unwrap_or(rest.len());
            rest[..end].to_string()
        };
        let grew = frame_of("zswap_compress");
        assert!(grew.contains("; +45.00%)"), "{grew}");
        assert!(grew.contains("fill=\"rgb(255,"), "{grew}");
        // folio_referenced shrank 0.30 -> 0.17, within noise: neutral.
        let noise = frame_of("folio_referenced");
        assert!(noise.contains("; 0.00%)"), "{noise}");
        assert!(noise.contains("fill=\"rgb(250,250,250)\""), "{noise}");
    }
}
