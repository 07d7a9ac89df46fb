//! A small plotting library for the SVG views, written by hand (no
//! plotting crate): an SVG document builder that escapes every text and
//! writes every number finite (`svg`), the house style of colours, series
//! styles and margins (`style`), plot areas, scales and axes (`axes`), and
//! the label text those need (`labels`). It knows nothing of recordings;
//! view::export::svg draws the plots with it.

pub mod axes;
pub mod labels;
pub mod style;
pub mod svg;
