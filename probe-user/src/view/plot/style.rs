//! The house style of the plots: text and grid colours, the series
//! palette and dash patterns, and the page and panel margins (px).

/// Series colours: distinguishable on white, in order of use.
pub const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22",
];
/// Dash patterns for the 11th series on (the palette comes round again).
pub const DASHES: [&str; 3] = ["", "7,3", "2,2"];

pub const PAGE_W: f64 = 1000.0;
pub const MARGIN: f64 = 20.0;
/// Space left of a plot for tick labels and the rotated axis label.
pub const PLOT_LEFT: f64 = 72.0;
pub const PLOT_RIGHT: f64 = 24.0;
/// Below a plot: tick labels and the axis label.
pub const PLOT_BOTTOM: f64 = 44.0;

pub const TEXT: &str = "#222222";
pub const MUTED: &str = "#666666";
pub const AXIS: &str = "#444444";
pub const GRID: &str = "#dddddd";
pub const GRID_MINOR: &str = "#f0f0f0";

/// How a series is drawn, by its position among all series: (colour,
/// dash pattern).
pub fn style(i: usize) -> (&'static str, &'static str) {
    (
        PALETTE[i % PALETTE.len()],
        DASHES[(i / PALETTE.len()) % DASHES.len()],
    )
}
