//! SVG plots of recordings.

/// Placeholder until the plots land.
pub fn recording_svg(_recordings: &[&crate::recording::Recording]) -> String {
    String::new()
}
