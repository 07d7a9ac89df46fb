//! Exports of recordings: what other tools load (HdrHistogram interval
//! logs, CSV, JSON) and what people read (mail-ready text, SVG plots).
//! Pure functions of `Recording`s.

pub mod svg;
