//! SVG plots of recordings.
