//! SVG plots of recordings.

/// Placeholder until the plots land.
pub fn recording_svg(_recordings: &[&crate::recording::Recording]) -> String {
    String::new()
}

/// Placeholder until the plots land.
pub struct Series<'a> {
    pub label: String,
    pub summary: &'a crate::histogram::Summary,
}

/// Placeholder until the plots land.
pub fn latency_plot(_title: &str, _series: &[Series]) -> String {
    String::new()
}
