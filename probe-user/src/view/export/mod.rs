//! Exports of recordings: what other tools load (HdrHistogram interval
//! logs, CSV, JSON) and what people read (mail-ready text, SVG plots, and
//! the same plots as PNG).
//! Pure functions of `Recording`s.

pub mod cpu_folded;
pub mod csv;
pub mod folded;
pub mod hlog;
pub mod png;
pub mod svg;
pub mod text;

use std::io::Write;

use anyhow::{Context, Result};

use crate::model::recording::Recording;

/// The formats, each once: the enum, `ALL` (what `--format` offers) and
/// the names come from this one list, so none is left out of another.
macro_rules! export_formats {
    ($($variant:ident => $name:literal,)*) => {
        /// The formats `vmtrace export --format` writes: one enum, matched
        /// exhaustively wherever a format decides something, so a new
        /// format does not compile until it is rendered and checked.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum ExportFormat {
            $($variant,)*
        }

        impl ExportFormat {
            pub const ALL: [ExportFormat; [$(ExportFormat::$variant,)*].len()] =
                [$(ExportFormat::$variant,)*];

            /// As given to `--format`.
            pub fn name(self) -> &'static str {
                match self {
                    $(ExportFormat::$variant => $name,)*
                }
            }
        }
    };
}

export_formats! {
    Text => "text",
    Json => "json",
    Csv => "csv",
    SeriesCsv => "series-csv",
    Hlog => "hlog",
    Folded => "folded",
    Flamegraph => "flamegraph",
    Svg => "svg",
    Png => "png",
}

impl ExportFormat {
    /// Several recordings drawn over each other (the plots), or one.
    pub fn overlays(self) -> bool {
        match self {
            ExportFormat::Svg | ExportFormat::Png => true,
            ExportFormat::Text
            | ExportFormat::Json
            | ExportFormat::Csv
            | ExportFormat::SeriesCsv
            | ExportFormat::Hlog
            | ExportFormat::Folded
            | ExportFormat::Flamegraph => false,
        }
    }

    /// Bytes no terminal should be sent.
    pub fn binary(self) -> bool {
        self == ExportFormat::Png
    }
}

/// Renders recordings in `format` to `out`: one, or several for svg and
/// png (the plots overlay them). The CSV formats are streamed (their
/// rows repeat the run's label: many times the recording's size), the
/// others are rendered, then written.
pub fn render(recs: &[&Recording], format: ExportFormat, out: &mut dyn Write) -> Result<()> {
    check(recs, format)?;
    let one = || recs.first().copied().context("no recording");
    match format {
        ExportFormat::Svg => out.write_all(svg::recording_svg(recs).as_bytes())?,
        ExportFormat::Png => out.write_all(&png::to_png(&svg::recording_svg(recs))?)?,
        ExportFormat::Csv => csv::metrics(one()?, out)?,
        ExportFormat::SeriesCsv => csv::series(one()?, out)?,
        ExportFormat::Text => out.write_all(text::render(one()?).as_bytes())?,
        ExportFormat::Json => {
            let mut v = serde_json::to_vec_pretty(one()?).context("serialising")?;
            v.push(b'\n');
            out.write_all(&v)?;
        }
        ExportFormat::Hlog => out.write_all(hlog::render(one()?)?.as_bytes())?,
        ExportFormat::Folded => out.write_all(folded::render(one()?)?.as_bytes())?,
        ExportFormat::Flamegraph => out.write_all(folded::flamegraph(one()?)?.as_bytes())?,
    }
    Ok(())
}

/// Refuses what `render` cannot do, before anything is written: several
/// recordings for a format that takes one.
pub fn check(recs: &[&Recording], format: ExportFormat) -> Result<()> {
    if recs.len() != 1 && !format.overlays() {
        anyhow::bail!(
            "--format {} takes one recording (got {}); run export once per file, \
             or use --format svg to overlay them",
            format.name(),
            recs.len()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_has_a_name_of_its_own() {
        let names: std::collections::BTreeSet<&str> =
            ExportFormat::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(names.len(), ExportFormat::ALL.len());
    }
}
