//! PNG renderings of the SVG plots (resvg: pure Rust, no system library),
//! for mail and chat that do not show SVG.

use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result, anyhow};
use resvg::{tiny_skia, usvg};

/// Families tried, in order, for `sans-serif` text.
const SANS: [&str; 5] = [
    "DejaVu Sans",
    "Liberation Sans",
    "Noto Sans",
    "Arial",
    "Helvetica",
];

/// The system's fonts, loaded once per process (a few tens of ms).
fn fonts() -> Arc<usvg::fontdb::Database> {
    static FONTS: OnceLock<Arc<usvg::fontdb::Database>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = usvg::fontdb::Database::new();
            db.load_system_fonts();
            if db.is_empty() {
                // No fontconfig: the usual places.
                db.load_fonts_dir("/usr/share/fonts");
                db.load_fonts_dir("/usr/local/share/fonts");
            }
            let has = |name: &str| {
                db.faces()
                    .any(|f| f.families.iter().any(|(family, _)| family == name))
            };
            if let Some(family) = SANS.iter().find(|f| has(f)) {
                db.set_sans_serif_family(*family);
            }
            Arc::new(db)
        })
        .clone()
}

/// Renders an SVG document (as `svg::latency_plot` and
/// `svg::recording_svg` write them) to PNG bytes at its own size. Text
/// needs a font on the system (any of DejaVu Sans, Liberation Sans, Noto
/// Sans, Arial); without one the plot renders without its text.
pub fn to_png(svg: &str) -> Result<Vec<u8>> {
    let options = usvg::Options {
        fontdb: fonts(),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &options).context("parsing the SVG")?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height()).ok_or_else(|| {
        anyhow!(
            "cannot render an SVG of {}x{} px",
            size.width(),
            size.height()
        )
    })?;
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().context("encoding the PNG")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_small_document() {
        let svg = r#"<svg xmlns="http://www.w3.org/2000/svg" width="40px" height="20px" font-family="sans-serif"><rect width="40" height="20" fill="white"/><text x="2" y="14" font-size="12px">ok</text></svg>"#;
        let png = to_png(svg).expect("renders");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    }

    #[test]
    fn bad_svg_is_an_error() {
        assert!(to_png("not svg").is_err());
        assert!(
            to_png(r#"<svg xmlns="http://www.w3.org/2000/svg" width="0" height="0"></svg>"#)
                .is_err()
        );
    }
}
