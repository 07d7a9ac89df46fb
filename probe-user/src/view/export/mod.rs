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
pub fn render(recs: &[&Recording], format: &str) -> Result<Vec<u8>> {
    match (format, recs) {
        ("svg", _) => Ok(svg::recording_svg(recs).into_bytes()),
        ("png", _) => png::to_png(&svg::recording_svg(recs)),
        (_, [rec]) => render_one(rec, format),
        _ => anyhow::bail!(
            "--format {format} takes one recording (got {}); run export once per file, \
             or use --format svg to overlay them",
            recs.len()
        ),
    }
}

fn render_one(rec: &Recording, format: &str) -> Result<Vec<u8>> {
    Ok(match format {
        "text" => text::render(rec).into_bytes(),
        "json" => {
            let mut v = serde_json::to_vec_pretty(rec).context("serialising")?;
            v.push(b'\n');
            v
        }
        "csv" => csv::metrics(rec).into_bytes(),
        "series-csv" => csv::series(rec).into_bytes(),
        "hlog" => hlog::render(rec)?.into_bytes(),
        "folded" => folded::render(rec)?.into_bytes(),
        "flamegraph" => folded::flamegraph(rec)?.into_bytes(),
        other => anyhow::bail!("unknown format {other}; use one of: {}", FORMATS.join(", ")),
    })
}
