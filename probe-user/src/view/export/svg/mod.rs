//! SVG plots of recordings, for people: latency by percentile (the
//! HdrHistogram plot: x is the percentile on a log scale of 1/(1-q), y the
//! latency on a log scale) with every run overlaid, and memory pressure
//! over time (reclaim and swap rates, free pages against the watermarks).
//!
//! Pure functions that write standalone SVG 1.1 text with view::plot: the
//! output depends only on the input (no clock, no hashing), and every
//! number written is finite: odd input (no values, one sample, counters
//! that go backwards, NaN times) gives a "no values" note, never NaN.

mod curve;
mod latency;
mod page;
mod pressure;
mod time_panel;

pub use latency::{Series, latency_plot};
pub use page::recording_svg;

use crate::view::plot::{
    axes::Area,
    style::{MARGIN, PAGE_W, PLOT_LEFT, PLOT_RIGHT},
};

/// A plot area as wide as the page's plots, `h` high at `y` (for the
/// boxes that say a part has no values).
fn full_width_area(y: f64, h: f64) -> Area {
    Area {
        x: MARGIN + PLOT_LEFT,
        y,
        w: PAGE_W - 2.0 * MARGIN - PLOT_LEFT - PLOT_RIGHT,
        h,
    }
}

#[cfg(test)]
mod tests;
