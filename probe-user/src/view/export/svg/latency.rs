//! The latency panel: latency by percentile, HdrHistogram style (x is the
//! percentile on a log scale of 1/(1-q), y the latency on a log scale),
//! every series overlaid, with a legend table of count, p50, p99 and max.

use super::curve::{Curve, MAX_DECADES, curve_of};
use crate::model::format::{fmt_ns_3sig, fmt_ns_tick, fmt_thousands, pct_label};
use crate::model::histogram::Summary;
use crate::view::plot::{
    axes::{Area, Scale, no_values_box, panel_title, x_axis_label, x_tick, y_axis_label},
    labels::{shorten, text_w},
    style::{
        AXIS, GRID, GRID_MINOR, MARGIN, MUTED, PAGE_W, PLOT_BOTTOM, PLOT_LEFT, PLOT_RIGHT, TEXT,
        style,
    },
    svg::Svg,
};

/// One labelled latency distribution (a run, or a group of runs merged).
pub struct Series<'a> {
    pub label: String,
    pub summary: &'a Summary,
}

/// Height of a latency panel with `n` series.
fn latency_panel_height(n: usize, any_values: bool) -> f64 {
    let plot = if any_values { 300.0 } else { 90.0 };
    let below = if any_values { PLOT_BOTTOM } else { 12.0 };
    34.0 + plot + below + 12.0 + 20.0 + 19.0 * n as f64
}

/// Draws one latency panel at (x, y), `w` wide; returns its height.
/// `id` makes its clip id unique within a document.
pub(super) fn latency_panel(
    svg: &mut Svg,
    x: f64,
    y: f64,
    w: f64,
    title: &str,
    series: &[Series],
    id: &str,
) -> f64 {
    let curves: Vec<Option<Curve>> = series.iter().map(|s| curve_of(s.summary)).collect();
    let any = curves.iter().any(Option::is_some);
    let height = latency_panel_height(series.len(), any);
    panel_title(svg, x, y + 18.0, title);
    let a = Area {
        x: x + PLOT_LEFT,
        y: y + 34.0,
        w: w - PLOT_LEFT - PLOT_RIGHT,
        h: if any { 300.0 } else { 90.0 },
    };
    let legend_y = if any {
        latency_axes_and_curves(svg, a, &curves, id);
        a.bottom() + PLOT_BOTTOM + 12.0
    } else {
        no_values_box(svg, a, "no values");
        a.bottom() + 12.0
    };
    latency_legend(svg, a.x, legend_y, series, &curves);
    height
}

/// The plot of a panel with values: gridlines, frame, curves, labels.
fn latency_axes_and_curves(svg: &mut Svg, a: Area, curves: &[Option<Curve>], id: &str) {
    let (decades, lo, hi) = extent(curves);
    let xs = a.x_scale(0.0, decades);
    let ys = a.y_scale(lo, hi);
    latency_grid(svg, a, ys, lo, hi);
    percentile_grid(svg, a, xs, decades);
    svg.rect(a.x, a.y, a.w, a.h, "none", AXIS);
    let clip = format!("clip-{id}");
    svg.clip_begin(&clip, a.x - 4.0, a.y - 4.0, a.w + 8.0, a.h + 8.0);
    for (i, c) in curves.iter().enumerate() {
        let Some(c) = c else { continue };
        let (color, dash) = style(i);
        let pts: Vec<(f64, f64)> = c
            .points
            .iter()
            .map(|&(px, py)| (xs.map(px), ys.map(py)))
            .collect();
        svg.polyline(&pts, color, 2.0, dash);
        if let Some(&(ex, ey)) = pts.last() {
            svg.circle(ex, ey, 3.5, color);
        }
    }
    svg.clip_end();
    y_axis_label(svg, a, "latency (log scale)");
    x_axis_label(
        svg,
        a,
        "percentile (log scale; a dot marks each series' maximum)",
    );
}

/// What the axes span: (percentile decades, lowest and highest decade of
/// latency in ns), whole decades around the curves.
fn extent(curves: &[Option<Curve>]) -> (f64, f64, f64) {
    let drawn = curves.iter().flatten();
    let x_end = drawn
        .clone()
        .filter_map(|c| c.points.last().map(|p| p.0))
        .fold(0.0f64, f64::max);
    let decades = x_end.ceil().clamp(1.0, MAX_DECADES);
    let lo = drawn
        .clone()
        .flat_map(|c| c.points.iter().map(|p| p.1))
        .fold(f64::INFINITY, f64::min);
    let hi = drawn
        .flat_map(|c| c.points.iter().map(|p| p.1))
        .fold(f64::NEG_INFINITY, f64::max);
    let lo = if lo.is_finite() { lo.floor() } else { 0.0 };
    let mut hi = if hi.is_finite() { hi.ceil() } else { 1.0 };
    if hi <= lo {
        hi = lo + 1.0;
    }
    (decades, lo, hi)
}

/// Latency gridlines: every decade, and 2..9 of each in light grey; 2
/// and 5 labelled too when the range is narrow.
fn latency_grid(svg: &mut Svg, a: Area, ys: Scale, lo: f64, hi: f64) {
    let span = (hi - lo) as u32;
    for dec in (lo as i32)..=(hi as i32) {
        let base = 10f64.powi(dec);
        for m in 1..=9 {
            let v = base * f64::from(m);
            let ly = v.log10();
            if ly > hi + 1e-9 || (m > 1 && dec == hi as i32) {
                continue;
            }
            let py = ys.map(ly);
            if m == 1 {
                svg.line((a.x, py), (a.right(), py), GRID, 1.0, "");
                let label = fmt_ns_tick(v);
                svg.text((a.x - 6.0, py + 4.0), 11.0, "end", TEXT, "", &label);
                continue;
            }
            if span <= 6 {
                svg.line((a.x, py), (a.right(), py), GRID_MINOR, 1.0, "");
            }
            if span <= 2 && (m == 2 || m == 5) {
                let label = fmt_ns_tick(v);
                svg.text((a.x - 6.0, py + 4.0), 10.0, "end", MUTED, "", &label);
            }
        }
    }
}

/// Percentile gridlines: each decade, and 50% / 75% before 90% when
/// there is room.
fn percentile_grid(svg: &mut Svg, a: Area, xs: Scale, decades: f64) {
    let px_per_decade = a.w / decades;
    for d in 0..=(decades as u32) {
        let px = xs.map(f64::from(d));
        svg.line((px, a.y), (px, a.bottom()), GRID, 1.0, "");
        x_tick(svg, a, px, 4.0, 11.0, TEXT, &pct_label(d));
    }
    if px_per_decade >= 90.0 {
        for (q, label) in [(0.5, "50%"), (0.75, "75%")] {
            let px = xs.map((1.0f64 / (1.0 - q)).log10());
            svg.line((px, a.y), (px, a.bottom()), GRID_MINOR, 1.0, "");
            x_tick(svg, a, px, 3.0, 10.0, MUTED, label);
        }
    }
}

/// The legend table under a latency plot: one row per series.
fn latency_legend(svg: &mut Svg, x: f64, y: f64, series: &[Series], curves: &[Option<Curve>]) {
    let labels: Vec<String> = series.iter().map(|s| shorten(&s.label)).collect();
    let label_w = labels
        .iter()
        .map(|l| text_w(l, 12.0))
        .fold(text_w("series", 12.0), f64::max)
        + 16.0;
    let label_x = x + 34.0;
    let col = |i: usize| label_x + label_w + 60.0 + 90.0 * i as f64;
    let y0 = y + 12.0;
    svg.text((label_x, y0), 11.0, "start", MUTED, "", "series");
    for (i, h) in ["count", "p50", "p99", "max"].iter().enumerate() {
        svg.text((col(i), y0), 11.0, "end", MUTED, "", h);
    }
    for (i, (label, c)) in labels.iter().zip(curves).enumerate() {
        let ry = y0 + 19.0 * (i as f64 + 1.0);
        let (color, dash) = style(i);
        svg.line((x, ry - 4.0), (x + 26.0, ry - 4.0), color, 2.5, dash);
        svg.circle(x + 26.0, ry - 4.0, 3.0, color);
        svg.text((label_x, ry), 12.0, "start", TEXT, "", label);
        let cells = match c {
            Some(c) => [
                fmt_thousands(c.count),
                fmt_ns_3sig(c.p50 as f64),
                fmt_ns_3sig(c.p99 as f64),
                fmt_ns_3sig(c.max as f64),
            ],
            None => {
                svg.text((col(0), ry), 12.0, "end", TEXT, "", "0");
                svg.text((col(0) + 12.0, ry), 12.0, "start", MUTED, "", "no values");
                continue;
            }
        };
        for (j, cell) in cells.iter().enumerate() {
            svg.text((col(j), ry), 12.0, "end", TEXT, "", cell);
        }
    }
}

/// A log-scaled percentile plot (HdrHistogram style: x axis = percentile on
/// a log scale of 1/(1-q): 0%, 90%, 99%, 99.9%, 99.99%...; y axis =
/// latency, log scale, with units ns/us/ms/s), every series overlaid, with
/// a title, axis labels with units, and a legend (label, count, p50, p99).
/// Returns a complete standalone <svg> document.
pub fn latency_plot(title: &str, series: &[Series]) -> String {
    let mut svg = Svg::default();
    let h = latency_panel(
        &mut svg,
        MARGIN,
        MARGIN,
        PAGE_W - 2.0 * MARGIN,
        title,
        series,
        "l0",
    );
    svg.finish(PAGE_W, h + 2.0 * MARGIN, title)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(fmt_ns_3sig(870.0), "870 ns");
        assert_eq!(fmt_ns_3sig(44_031.0), "44.0 us");
        assert_eq!(fmt_ns_3sig(1_802_239.0), "1.80 ms");
        assert_eq!(fmt_ns_3sig(250e9), "250 s");
        assert_eq!(fmt_ns_3sig(f64::NAN), "0 ns");
        assert_eq!(fmt_ns_tick(1e4), "10 us");
        assert_eq!(fmt_ns_tick(5e8), "500 ms");
        assert_eq!(fmt_ns_tick(1.0), "1 ns");
        assert_eq!(pct_label(0), "0%");
        assert_eq!(pct_label(1), "90%");
        assert_eq!(pct_label(2), "99%");
        assert_eq!(pct_label(5), "99.999%");
        assert_eq!(fmt_thousands(1_234_567), "1,234,567");
    }
}
