//! Memory pressure over time for one run: reclaim and swap rates side by
//! side, then each populated zone's free pages against its watermarks.
//! Panels of several runs share their axes so that their heights compare.

use super::full_width_area;
use super::time_panel::{Line, TimePanel, max_y, rate_steps, time_panel};
use crate::model::format::{fmt_si, trim_num};
use crate::model::sample::{Sample, ZoneSample};
use crate::view::plot::{
    axes::no_values_box,
    labels::shorten,
    style::{MARGIN, MUTED, PAGE_W, TEXT},
    svg::Svg,
};

/// At most this many zone panels per run.
const MAX_ZONES: usize = 8;
/// Width of a panel: half the page, less the gap between two.
const HALF: f64 = (PAGE_W - 2.0 * MARGIN - 20.0) / 2.0;

/// The zones worth a panel: populated ones, in the order first seen,
/// without Movable / Device zones whose free pages never move.
fn zones_of(tl: &[Sample]) -> Vec<(u32, String)> {
    let mut keys: Vec<(u32, String)> = Vec::new();
    for s in tl {
        for z in &s.zones {
            if !keys.iter().any(|k| k.0 == z.node && k.1 == z.zone) {
                keys.push((z.node, z.zone.clone()));
            }
        }
    }
    keys.retain(|(node, zone)| {
        let seen: Vec<&ZoneSample> = tl
            .iter()
            .filter_map(|s| s.zones.iter().find(|z| z.node == *node && &z.zone == zone))
            .collect();
        if !seen.iter().any(|z| z.managed > 0) {
            return false;
        }
        if zone == "Movable" || zone == "Device" {
            let first = seen.first().map_or(0, |z| z.free);
            return seen.iter().any(|z| z.free != first);
        }
        true
    });
    keys
}

/// A zone's free pages and watermarks over time; each watermark's name
/// carries its last value, readable even where the scale squashes it.
fn zone_lines(tl: &[Sample], node: u32, zone: &str) -> Vec<Line> {
    let series = |f: fn(&ZoneSample) -> u64| -> Vec<(f64, f64)> {
        tl.iter()
            .filter(|s| s.t_s.is_finite())
            .filter_map(|s| {
                s.zones
                    .iter()
                    .find(|z| z.node == node && z.zone == zone)
                    .map(|z| (s.t_s, f(z) as f64))
            })
            .collect()
    };
    let line = |name: &str, color, dash, f: fn(&ZoneSample) -> u64| {
        let points = series(f);
        let name = match points.last() {
            Some(&(_, v)) if name != "free" => format!("{name} {}", fmt_si(v)),
            _ => name.to_string(),
        };
        Line {
            name,
            color,
            dash,
            points,
        }
    };
    vec![
        line("free", "#1f77b4", "", |z| z.free),
        line("high", "#2ca02c", "6,3", |z| z.high),
        line("low", "#ff7f0e", "6,3", |z| z.low),
        line("min", "#d62728", "6,3", |z| z.min),
    ]
}

/// Seconds `zone` spent below its low and min watermarks.
fn below(tl: &[Sample], node: u32, zone: &str) -> (f64, f64) {
    crate::model::sample::time_below(tl)
        .into_iter()
        .find(|(n, z, _, _)| *n == node && z == zone)
        .map_or((0.0, 0.0), |(_, _, low, min)| (low, min))
}

/// The samples a view can use: those with a finite, non-negative time.
pub(super) fn usable(tl: &[Sample]) -> Vec<Sample> {
    tl.iter()
        .filter(|s| s.t_s.is_finite() && s.t_s >= 0.0)
        .cloned()
        .collect()
}

/// Axis ranges shared by the pressure panels of several runs, so that
/// their heights compare.
#[derive(Default)]
pub(super) struct Shared {
    t_max: f64,
    reclaim: f64,
    swap: f64,
    zones: Vec<((u32, String), f64)>,
}

impl Shared {
    pub(super) fn of(timelines: &[Vec<Sample>]) -> Shared {
        let mut s = Shared::default();
        for tl in timelines {
            s.t_max = s.t_max.max(
                tl.iter()
                    .map(|x| x.t_s)
                    .filter(|t| t.is_finite())
                    .fold(0.0, f64::max),
            );
            s.reclaim = s
                .reclaim
                .max(max_y(&rate_steps(tl, |x| x.pgscan)))
                .max(max_y(&rate_steps(tl, |x| x.pgsteal)));
            s.swap = s
                .swap
                .max(max_y(&rate_steps(tl, |x| x.pswpout)))
                .max(max_y(&rate_steps(tl, |x| x.pswpin)));
            for (node, zone) in zones_of(tl) {
                let top = zone_lines(tl, node, &zone)
                    .iter()
                    .map(|l| max_y(&l.points))
                    .fold(0.0, f64::max);
                match s.zones.iter_mut().find(|(k, _)| k.0 == node && k.1 == zone) {
                    Some((_, v)) => *v = v.max(top),
                    None => s.zones.push(((node, zone), top)),
                }
            }
        }
        s
    }

    fn zone(&self, node: u32, zone: &str) -> f64 {
        self.zones
            .iter()
            .find(|(k, _)| k.0 == node && k.1 == zone)
            .map_or(0.0, |z| z.1)
    }
}

/// Pressure over time for one run, from `y` down; returns the height used.
pub(super) fn pressure_section(
    svg: &mut Svg,
    y: f64,
    heading: &str,
    tl: &[Sample],
    shared: &Shared,
) -> f64 {
    let bold = r#" font-weight="bold""#;
    svg.text((MARGIN, y + 22.0), 18.0, "start", TEXT, bold, heading);
    let mut cy = y + 36.0;
    if tl.is_empty() {
        let note = "no values: this run has no timeline samples";
        no_values_box(svg, full_width_area(cy, 70.0), note);
        return cy + 70.0 + 20.0 - y;
    }
    let ph = 250.0;
    for (i, p) in rate_panels(tl, shared).iter().enumerate() {
        time_panel(svg, MARGIN + i as f64 * (HALF + 20.0), cy, HALF, ph, p);
    }
    cy += ph + 16.0;
    let zones = zones_of(tl);
    if zones.is_empty() {
        let note = "no values: no populated zones in the samples";
        no_values_box(svg, full_width_area(cy, 50.0), note);
        return cy + 50.0 + 20.0 - y;
    }
    cy = zone_panels(svg, cy, tl, &zones, shared);
    cy + 8.0 - y
}

/// A line of the per-second rate of a cumulative counter.
fn rate_line(name: &str, color: &'static str, tl: &[Sample], counter: fn(&Sample) -> u64) -> Line {
    Line {
        name: name.into(),
        color,
        dash: "",
        points: rate_steps(tl, counter),
    }
}

/// The reclaim and the swap panel.
fn rate_panels<'a>(tl: &[Sample], shared: &Shared) -> [TimePanel<'a>; 2] {
    [
        TimePanel {
            title: "Reclaim: pages scanned and reclaimed".into(),
            note: String::new(),
            y_label: "pages per second",
            t_max: shared.t_max,
            y_max: shared.reclaim,
            lines: vec![
                rate_line("scanned/s", "#1f77b4", tl, |s| s.pgscan),
                rate_line("reclaimed/s", "#2ca02c", tl, |s| s.pgsteal),
            ],
            idle_note: "no reclaim",
        },
        TimePanel {
            title: "Swap: pages swapped out and in".into(),
            note: String::new(),
            y_label: "pages per second",
            t_max: shared.t_max,
            y_max: shared.swap,
            lines: vec![
                rate_line("swap-out/s", "#d62728", tl, |s| s.pswpout),
                rate_line("swap-in/s", "#9467bd", tl, |s| s.pswpin),
            ],
            idle_note: "no swapping",
        },
    ]
}

/// The zone panels, two a row, from `y` down (at most `MAX_ZONES`, and
/// a note of the rest); returns where they end.
fn zone_panels(
    svg: &mut Svg,
    y: f64,
    tl: &[Sample],
    zones: &[(u32, String)],
    shared: &Shared,
) -> f64 {
    let zh = 230.0;
    for (i, (node, zone)) in zones.iter().take(MAX_ZONES).enumerate() {
        let (low_s, min_s) = below(tl, *node, zone);
        let p = TimePanel {
            title: format!("Node {node} {}: free pages", shorten(zone)),
            note: format!(
                "below low {} s, below min {} s",
                trim_num(low_s),
                trim_num(min_s)
            ),
            y_label: "pages",
            t_max: shared.t_max,
            y_max: shared.zone(*node, zone),
            lines: zone_lines(tl, *node, zone),
            idle_note: "",
        };
        let zx = MARGIN + (i % 2) as f64 * (HALF + 20.0);
        let zy = y + (i / 2) as f64 * (zh + 12.0);
        time_panel(svg, zx, zy, HALF, zh, &p);
    }
    let shown = zones.len().min(MAX_ZONES);
    let mut cy = y + shown.div_ceil(2) as f64 * (zh + 12.0);
    if zones.len() > MAX_ZONES {
        let note = format!("{} more zones not shown", zones.len() - MAX_ZONES);
        svg.text((MARGIN, cy + 4.0), 12.0, "start", MUTED, "", &note);
        cy += 20.0;
    }
    cy
}
