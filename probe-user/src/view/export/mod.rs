//! Exports of recordings: what other tools load (HdrHistogram interval
//! logs, CSV, JSON) and what people read (mail-ready text, SVG plots, and
//! the same plots as PNG).
//! Pure functions of `Recording`s.

pub mod csv;
pub mod folded;
pub mod hlog;
pub mod png;
pub mod svg;
pub mod text;

use std::io::Write;

use anyhow::{Context, Result};

use crate::model::recording::Recording;

/// The formats `vmtrace export --format` writes.
pub const FORMATS: &[&str] = &[
    "text",
    "json",
    "csv",
    "series-csv",
    "hlog",
    "folded",
    "flamegraph",
    "svg",
    "png",
];

/// Renders recordings in `format`: one, or several for svg and png (the
/// plots overlay them).
/// Writes them to `out`; the CSV formats are streamed (their rows repeat
/// the run's label: many times the recording's size), the others are
/// rendered, then written.
pub fn render(recs: &[&Recording], format: &str, out: &mut dyn Write) -> Result<()> {
    check(recs, format)?;
    match (format, recs) {
        ("svg", _) => out.write_all(svg::recording_svg(recs).as_bytes())?,
        ("png", _) => out.write_all(&png::to_png(&svg::recording_svg(recs))?)?,
        ("csv", [rec]) => csv::metrics(rec, out)?,
        ("series-csv", [rec]) => csv::series(rec, out)?,
        (_, [rec]) => out.write_all(&render_one(rec, format)?)?,
        _ => {}
    }
    Ok(())
}

/// Refuses what `render` cannot do, before anything is written: an
/// unknown format, several recordings for a format that takes one.
pub fn check(recs: &[&Recording], format: &str) -> Result<()> {
    if !FORMATS.contains(&format) {
        anyhow::bail!(
            "unknown format {format}; use one of: {}",
            FORMATS.join(", ")
        );
    }
    if recs.len() != 1 && !matches!(format, "svg" | "png") {
        anyhow::bail!(
            "--format {format} takes one recording (got {}); run export once per file, \
             or use --format svg to overlay them",
            recs.len()
        );
    }
    Ok(())
}

fn render_one(rec: &Recording, format: &str) -> Result<Vec<u8>> {
    Ok(match format {
        "text" => text::render(rec).into_bytes(),
        "json" => {
            let mut v = serde_json::to_vec_pretty(rec).context("serialising")?;
            v.push(b'\n');
            v
        }
        "hlog" => hlog::render(rec)?.into_bytes(),
        "folded" => folded::render(rec)?.into_bytes(),
        "flamegraph" => folded::flamegraph(rec)?.into_bytes(),
        other => anyhow::bail!("unknown format {other}; use one of: {}", FORMATS.join(", ")),
    })
}
