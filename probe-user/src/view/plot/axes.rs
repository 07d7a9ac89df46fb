//! Plot areas, scales and axes: where a plot sits on the page, how data
//! maps onto it, round tick steps, linear axes with gridlines, axis
//! labels, panel titles, and the box that says there is nothing to plot.

use super::style::{AXIS, GRID, MUTED, PLOT_LEFT, TEXT};
use super::svg::Svg;
use crate::model::format::{fmt_si, trim_num};

/// Maps a data interval onto a pixel interval (linear).
#[derive(Clone, Copy)]
pub struct Scale {
    pub d0: f64,
    pub d1: f64,
    pub r0: f64,
    pub r1: f64,
}

impl Scale {
    pub fn map(&self, v: f64) -> f64 {
        let span = self.d1 - self.d0;
        if !span.is_finite() || span.abs() < 1e-12 || !v.is_finite() {
            return self.r0;
        }
        self.r0 + (v - self.d0) / span * (self.r1 - self.r0)
    }
}

/// The plot area of a panel.
#[derive(Clone, Copy)]
pub struct Area {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

impl Area {
    pub fn right(&self) -> f64 {
        self.x + self.w
    }
    pub fn bottom(&self) -> f64 {
        self.y + self.h
    }
    /// The scale from `d0..d1` onto the area's width, left to right.
    pub fn x_scale(&self, d0: f64, d1: f64) -> Scale {
        Scale {
            d0,
            d1,
            r0: self.x,
            r1: self.right(),
        }
    }
    /// The scale from `d0..d1` onto the area's height, bottom to top.
    pub fn y_scale(&self, d0: f64, d1: f64) -> Scale {
        Scale {
            d0,
            d1,
            r0: self.bottom(),
            r1: self.y,
        }
    }
}

/// A panel's title, left-aligned above its plot.
pub fn panel_title(svg: &mut Svg, x: f64, y: f64, title: &str) {
    svg.text((x, y), 15.0, "start", TEXT, r#" font-weight="bold""#, title);
}

/// A framed box that says there is nothing to plot.
pub fn no_values_box(svg: &mut Svg, a: Area, note: &str) {
    svg.rect(a.x, a.y, a.w, a.h, "#fafafa", GRID);
    svg.text(
        (a.x + a.w / 2.0, a.y + a.h / 2.0 + 5.0),
        14.0,
        "middle",
        MUTED,
        "",
        note,
    );
}

/// The y axis label, rotated, left of the tick labels.
pub fn y_axis_label(svg: &mut Svg, a: Area, label: &str) {
    let x = a.x - PLOT_LEFT + 16.0;
    let y = a.y + a.h / 2.0;
    svg.text_up((x, y), 12, TEXT, label);
}

/// The x axis label, centred under the tick labels.
pub fn x_axis_label(svg: &mut Svg, a: Area, label: &str) {
    svg.text(
        (a.x + a.w / 2.0, a.bottom() + 36.0),
        12.0,
        "middle",
        TEXT,
        "",
        label,
    );
}

/// A tick mark and its label under the x axis at `px`, `len` px long.
pub fn x_tick(svg: &mut Svg, a: Area, px: f64, len: f64, size: f64, fill: &str, label: &str) {
    svg.line((px, a.bottom()), (px, a.bottom() + len), AXIS, 1.0, "");
    svg.text((px, a.bottom() + 17.0), size, "middle", fill, "", label);
}

/// Round numbers for a linear axis from 0 to at least `max`: (top, step).
pub fn nice_ticks(max: f64, target: usize) -> (f64, f64) {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let raw = max / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let top = (max / step).ceil() * step;
    (top.max(step), step)
}

/// Linear x (time) and y axes with gridlines and tick labels, and the
/// frame around the area.
pub fn linear_axes(svg: &mut Svg, a: Area, xs: Scale, ys: Scale, y_step: f64, x_step: f64) {
    // Horizontal gridlines and y tick labels.
    for v in steps(ys, y_step) {
        let y = ys.map(v);
        svg.line((a.x, y), (a.right(), y), GRID, 1.0, "");
        svg.text((a.x - 6.0, y + 4.0), 11.0, "end", TEXT, "", &fmt_si(v));
    }
    for t in steps(xs, x_step) {
        let x = xs.map(t);
        svg.line((x, a.y), (x, a.bottom()), GRID, 1.0, "");
        x_tick(svg, a, x, 4.0, 11.0, TEXT, &trim_num(t));
    }
    svg.rect(a.x, a.y, a.w, a.h, "none", AXIS);
}

/// The ticks of a linear scale every `step` from its start (at most 51).
fn steps(s: Scale, step: f64) -> impl Iterator<Item = f64> {
    (0..=50u32)
        .map(move |i| s.d0 + f64::from(i) * step)
        .take_while(move |v| *v <= s.d1 + step * 1e-6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(nice_ticks(0.0, 5), (1.0, 0.2));
        assert_eq!(nice_ticks(f64::NAN, 5), (1.0, 0.2));
        assert_eq!(nice_ticks(186_000.0, 5), (200_000.0, 50_000.0));
    }

    #[test]
    fn scales_map_and_never_divide_by_zero() {
        let a = Area {
            x: 10.0,
            y: 0.0,
            w: 100.0,
            h: 50.0,
        };
        assert_eq!(a.x_scale(0.0, 10.0).map(5.0), 60.0);
        assert_eq!(a.y_scale(0.0, 10.0).map(10.0), 0.0);
        assert_eq!(a.x_scale(3.0, 3.0).map(7.0), 10.0);
        assert_eq!(a.x_scale(0.0, 1.0).map(f64::NAN), 10.0);
    }

    #[test]
    fn steps_stop_at_the_end() {
        let s = Scale {
            d0: 0.0,
            d1: 1.0,
            r0: 0.0,
            r1: 1.0,
        };
        assert_eq!(steps(s, 0.25).count(), 5);
        assert_eq!(steps(s, 1e-9).count(), 51);
    }
}
