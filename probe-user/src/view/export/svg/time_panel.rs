//! A panel of lines over time (linear axes from 0, a legend row under the
//! title), and the per-second rates of cumulative counters that most of
//! its lines are.

use crate::model::sample::Sample;
use crate::view::plot::{
    axes::{Area, Scale, linear_axes, nice_ticks, panel_title, x_axis_label, y_axis_label},
    labels::text_w,
    style::{MUTED, PLOT_BOTTOM, PLOT_LEFT, PLOT_RIGHT, TEXT},
    svg::Svg,
};

/// One line of a time panel.
pub(super) struct Line {
    pub name: String,
    pub color: &'static str,
    pub dash: &'static str,
    pub points: Vec<(f64, f64)>,
}

/// A panel of lines over time, linear y from 0.
pub(super) struct TimePanel<'a> {
    pub title: String,
    /// Grey text right of the title.
    pub note: String,
    pub y_label: &'a str,
    /// The time axis runs from 0 to at least this.
    pub t_max: f64,
    /// The y axis runs from 0 to at least this (shared between runs).
    pub y_max: f64,
    pub lines: Vec<Line>,
    /// Said in the plot when every line is at 0.
    pub idle_note: &'a str,
}

/// Rates of a cumulative counter: per interval (previous sample, or the
/// start, to this one), as a step line of (t, value per second).
pub(super) fn rate_steps(tl: &[Sample], counter: impl Fn(&Sample) -> u64) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let (mut t0, mut v0) = (0.0f64, 0u64);
    for s in tl.iter().filter(|s| s.t_s.is_finite() && s.t_s >= 0.0) {
        let v = counter(s);
        let dt = s.t_s - t0;
        if dt > 1e-6 {
            let r = v.saturating_sub(v0) as f64 / dt;
            out.push((t0, r));
            out.push((s.t_s, r));
            t0 = s.t_s;
        }
        v0 = v;
    }
    out
}

/// The highest finite y of a line (0 for none).
pub(super) fn max_y(points: &[(f64, f64)]) -> f64 {
    points
        .iter()
        .map(|p| p.1)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
}

/// Draws a time panel at (x, y), `w` by `h`: title, a legend row under
/// it, the plot.
pub(super) fn time_panel(svg: &mut Svg, x: f64, y: f64, w: f64, h: f64, p: &TimePanel) {
    time_panel_head(svg, x, y, w, p);
    let a = Area {
        x: x + PLOT_LEFT,
        y: y + 48.0,
        w: w - PLOT_LEFT - PLOT_RIGHT,
        h: h - 48.0 - PLOT_BOTTOM,
    };
    let own_max = p.lines.iter().map(|l| max_y(&l.points)).fold(0.0, f64::max);
    let y_max = if p.y_max.is_finite() {
        own_max.max(p.y_max)
    } else {
        own_max
    };
    let (top, y_step) = nice_ticks(y_max * 1.05, 5);
    let (t_end, t_step) = time_axis(p.t_max);
    let xs = a.x_scale(0.0, t_end);
    let ys = a.y_scale(0.0, top);
    linear_axes(svg, a, xs, ys, y_step, t_step);
    time_lines(svg, a, xs, ys, &p.lines);
    if own_max <= 0.0 && !p.idle_note.is_empty() {
        let centre = (a.x + a.w / 2.0, a.y + a.h / 2.0);
        svg.text(centre, 13.0, "middle", MUTED, "", p.idle_note);
    }
    y_axis_label(svg, a, p.y_label);
    x_axis_label(svg, a, "time since the command started (s)");
}

/// The title, the grey note right of it, and the legend row.
fn time_panel_head(svg: &mut Svg, x: f64, y: f64, w: f64, p: &TimePanel) {
    panel_title(svg, x, y + 18.0, &p.title);
    if !p.note.is_empty() {
        let at = (x + w - PLOT_RIGHT, y + 18.0);
        svg.text(at, 11.0, "end", MUTED, "", &p.note);
    }
    let mut lx = x + PLOT_LEFT;
    for l in &p.lines {
        svg.line((lx, y + 33.0), (lx + 20.0, y + 33.0), l.color, 2.5, l.dash);
        svg.text((lx + 25.0, y + 37.0), 12.0, "start", TEXT, "", &l.name);
        lx += 25.0 + text_w(&l.name, 12.0) + 10.0;
    }
}

/// The time axis for data up to `t_max`: (end, tick step).
fn time_axis(t_max: f64) -> (f64, f64) {
    let t_max = if t_max.is_finite() && t_max > 0.0 {
        t_max
    } else {
        1.0
    };
    let (t_top, t_step) = nice_ticks(t_max, 8);
    // End the axis at the data when the round number is far beyond it.
    let t_end = if t_top - t_max > t_step * 0.5 {
        t_max
    } else {
        t_top
    };
    (t_end, t_step)
}

/// The lines, clipped to the area (a lone point gets a dot).
fn time_lines(svg: &mut Svg, a: Area, xs: Scale, ys: Scale, lines: &[Line]) {
    let clip = format!("clip-t{}", svg.written());
    svg.clip_begin(&clip, a.x - 4.0, a.y - 4.0, a.w + 8.0, a.h + 8.0);
    for l in lines {
        let pts: Vec<(f64, f64)> = l
            .points
            .iter()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .map(|&(t, v)| (xs.map(t), ys.map(v)))
            .collect();
        svg.polyline(&pts, l.color, 2.0, l.dash);
        if pts.len() == 1 {
            svg.circle(pts[0].0, pts[0].1, 3.0, l.color);
        }
    }
    svg.clip_end();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_per_interval() {
        let tl: Vec<Sample> = (1..=3u64)
            .map(|i| Sample {
                t_s: i as f64,
                pgscan: 1000 * i * i,
                ..Default::default()
            })
            .collect();
        // pgscan 1000, 4000, 9000 at 1, 2, 3 s.
        assert_eq!(
            rate_steps(&tl, |s| s.pgscan),
            vec![
                (0.0, 1000.0),
                (1.0, 1000.0),
                (1.0, 3000.0),
                (2.0, 3000.0),
                (2.0, 5000.0),
                (3.0, 5000.0)
            ]
        );
        assert!(rate_steps(&[], |s| s.pgscan).is_empty());
    }

    #[test]
    fn time_axis_ends_near_the_data() {
        assert_eq!(time_axis(0.0), (1.0, 0.2));
        assert_eq!(time_axis(f64::NAN), (1.0, 0.2));
        assert_eq!(time_axis(10.0), (10.0, 2.0));
        assert_eq!(time_axis(11.0), (12.0, 2.0));
        assert_eq!(time_axis(10.5), (10.5, 2.0));
    }
}
