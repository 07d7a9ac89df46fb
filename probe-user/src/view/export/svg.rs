//! SVG plots of recordings, for people: latency by percentile (the
//! HdrHistogram plot: x is the percentile on a log scale of 1/(1-q), y the
//! latency on a log scale) with every run overlaid, and memory pressure
//! over time (reclaim and swap rates, free pages against the watermarks).
//!
//! Pure functions that write standalone SVG 1.1 text by hand: a white
//! background, `sans-serif`, sizes in px, a fixed palette, no scripts. The
//! output depends only on the input (no clock, no hashing), and every
//! number written is finite: odd input (no values, one sample, counters
//! that go backwards, NaN times) gives a "no values" note, never NaN.

use std::fmt::{self, Write};

use vmtrace_common::Hist;

use crate::{
    model::histogram::{self, Bucket, Summary},
    model::recording::Recording,
    model::sample::{Sample, ZoneSample},
};

/// One labelled latency distribution (a run, or a group of runs merged).
pub struct Series<'a> {
    pub label: String,
    pub summary: &'a Summary,
}

/// Series colours: distinguishable on white, in order of use.
const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22",
];
/// Dash patterns for the 11th series on (the palette comes round again).
const DASHES: [&str; 3] = ["", "7,3", "2,2"];

const PAGE_W: f64 = 1000.0;
const MARGIN: f64 = 20.0;
/// Space left of a plot for tick labels and the rotated axis label.
const PLOT_LEFT: f64 = 72.0;
const PLOT_RIGHT: f64 = 24.0;
/// Below a plot: tick labels and the axis label.
const PLOT_BOTTOM: f64 = 44.0;

const TEXT: &str = "#222222";
const MUTED: &str = "#666666";
const AXIS: &str = "#444444";
const GRID: &str = "#dddddd";
const GRID_MINOR: &str = "#f0f0f0";

/// Percentile steps along the curve, in decades of 1/(1-q).
const CURVE_STEP: f64 = 0.02;
/// Percentile axis: at most 99.9999999% (9 decades).
const MAX_DECADES: f64 = 9.0;
/// Pressure over time is drawn for at most this many runs of the first
/// recording, and at most `MAX_ZONES` zone panels per run.
const MAX_TIMELINE_RUNS: usize = 4;
const MAX_ZONES: usize = 8;
/// Labels longer than this are cut (with an ellipsis).
const MAX_LABEL: usize = 40;

// ---------------------------------------------------------------- text

/// A coordinate or length: finite, one decimal. Everything numeric that
/// reaches the SVG goes through this, so NaN and inf cannot.
#[derive(Clone, Copy)]
struct P(f64);

impl fmt::Display for P {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = if self.0.is_finite() { self.0 } else { 0.0 };
        // -0.0 prints as "-0.0"; keep the output tidy.
        let v = (v * 10.0).round() / 10.0;
        let v = if v == 0.0 { 0.0 } else { v };
        write!(f, "{v:.1}")
    }
}

/// Escapes text for element content and attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Characters XML 1.0 does not allow at all.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push(' '),
            '\u{FFFE}' | '\u{FFFF}' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Cuts a label to `MAX_LABEL` characters.
fn shorten(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() <= MAX_LABEL {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(MAX_LABEL - 1).collect();
        t.push('…');
        t
    }
}

/// Rough width of text in the sans-serif fonts people have (DejaVu Sans,
/// the widest common one, averages about 0.6 em).
fn text_w(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.6
}

/// A latency with three significant digits: `870 ns`, `44.0 us`, `1.80 ms`.
fn fmt_ns(ns: f64) -> String {
    if !ns.is_finite() || ns <= 0.0 {
        return "0 ns".into();
    }
    let (v, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "us")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    if ns < 1e3 || v >= 99.95 {
        format!("{v:.0} {unit}")
    } else if v >= 9.995 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

/// A tick label on the latency axis: `1 ns`, `20 us`, `500 ms`, `10 s`.
fn fmt_ns_tick(ns: f64) -> String {
    let (v, unit) = if ns < 1e3 - 0.5 {
        (ns, "ns")
    } else if ns < 1e6 - 0.5 {
        (ns / 1e3, "us")
    } else if ns < 1e9 - 0.5 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    format!("{} {unit}", trim_num(v))
}

/// A count with thousands separators: `41,670`.
fn fmt_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A number with SI suffix and at most 3 significant digits: `25.6k`, `4.8M`.
fn fmt_si(v: f64) -> String {
    if !v.is_finite() || v.abs() < 1e-9 {
        return "0".into();
    }
    let a = v.abs();
    let (x, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    format!("{}{suffix}", trim_num(x))
}

/// At most 3 significant digits, no trailing zeros: `2`, `2.5`, `0.125`.
fn trim_num(v: f64) -> String {
    if !v.is_finite() {
        return "0".into();
    }
    let a = v.abs();
    let decimals = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" { "0".into() } else { s }
}

/// The percentile at `d` decades of 1/(1-q): 0 -> `0%`, 1 -> `90%`,
/// 3 -> `99.9%`.
fn pct_label(d: u32) -> String {
    match d {
        0 => "0%".into(),
        1 => "90%".into(),
        _ => {
            let mut s = "99".to_string();
            if d > 2 {
                s.push('.');
                for _ in 2..d {
                    s.push('9');
                }
            }
            s.push('%');
            s
        }
    }
}

// ------------------------------------------------------------- drawing

/// SVG body text under construction.
#[derive(Default)]
struct Svg {
    out: String,
}

impl Svg {
    fn text(&mut self, at: (f64, f64), size: f64, anchor: &str, fill: &str, extra: &str, s: &str) {
        let (x, y) = at;
        let _ = writeln!(
            self.out,
            r#"<text x="{}" y="{}" font-size="{}px" text-anchor="{anchor}" fill="{fill}"{extra}>{}</text>"#,
            P(x),
            P(y),
            P(size),
            esc(s)
        );
    }

    fn line(&mut self, from: (f64, f64), to: (f64, f64), stroke: &str, width: f64, dash: &str) {
        let ((x1, y1), (x2, y2)) = (from, to);
        let _ = write!(
            self.out,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{stroke}" stroke-width="{}""#,
            P(x1),
            P(y1),
            P(x2),
            P(y2),
            P(width)
        );
        if !dash.is_empty() {
            let _ = write!(self.out, r#" stroke-dasharray="{dash}""#);
        }
        self.out.push_str("/>\n");
    }

    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, stroke: &str) {
        let _ = writeln!(
            self.out,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{fill}" stroke="{stroke}"/>"#,
            P(x),
            P(y),
            P(w.max(0.0)),
            P(h.max(0.0))
        );
    }

    fn circle(&mut self, x: f64, y: f64, r: f64, fill: &str) {
        let _ = writeln!(
            self.out,
            r#"<circle cx="{}" cy="{}" r="{}" fill="{fill}"/>"#,
            P(x),
            P(y),
            P(r)
        );
    }

    fn polyline(&mut self, points: &[(f64, f64)], stroke: &str, width: f64, dash: &str) {
        if points.is_empty() {
            return;
        }
        self.out.push_str(r#"<polyline fill="none" points=""#);
        for (i, &(x, y)) in points.iter().enumerate() {
            if i > 0 {
                self.out.push(' ');
            }
            let _ = write!(self.out, "{},{}", P(x), P(y));
        }
        let _ = write!(
            self.out,
            r#"" stroke="{stroke}" stroke-width="{}" stroke-linejoin="round""#,
            P(width)
        );
        if !dash.is_empty() {
            let _ = write!(self.out, r#" stroke-dasharray="{dash}""#);
        }
        self.out.push_str("/>\n");
    }

    /// Starts a group clipped to a rectangle (for lines that leave a plot).
    fn clip_begin(&mut self, id: &str, x: f64, y: f64, w: f64, h: f64) {
        let _ = writeln!(
            self.out,
            r#"<clipPath id="{id}"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath>"#,
            P(x),
            P(y),
            P(w.max(0.0)),
            P(h.max(0.0))
        );
        let _ = writeln!(self.out, r#"<g clip-path="url(#{id})">"#);
    }

    fn clip_end(&mut self) {
        self.out.push_str("</g>\n");
    }
}

/// A complete document around a body.
fn document(width: f64, height: f64, title: &str, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + 512);
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w}px" height="{h}px" viewBox="0 0 {w} {h}" font-family="sans-serif">"#,
        w = P(width),
        h = P(height)
    );
    let _ = writeln!(out, "<title>{}</title>", esc(title));
    let _ = writeln!(
        out,
        r#"<rect x="0" y="0" width="{}" height="{}" fill="white"/>"#,
        P(width),
        P(height)
    );
    out.push_str(body);
    out.push_str("</svg>\n");
    out
}

/// Maps a data interval onto a pixel interval (linear).
#[derive(Clone, Copy)]
struct Scale {
    d0: f64,
    d1: f64,
    r0: f64,
    r1: f64,
}

impl Scale {
    fn map(&self, v: f64) -> f64 {
        let span = self.d1 - self.d0;
        if !span.is_finite() || span.abs() < 1e-12 || !v.is_finite() {
            return self.r0;
        }
        self.r0 + (v - self.d0) / span * (self.r1 - self.r0)
    }
}

/// The plot area of a panel.
#[derive(Clone, Copy)]
struct Area {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

impl Area {
    fn right(&self) -> f64 {
        self.x + self.w
    }
    fn bottom(&self) -> f64 {
        self.y + self.h
    }
}

/// A panel's title, left-aligned above its plot.
fn panel_title(svg: &mut Svg, x: f64, y: f64, title: &str) {
    svg.text((x, y), 15.0, "start", TEXT, r#" font-weight="bold""#, title);
}

/// A framed box that says there is nothing to plot.
fn no_values_box(svg: &mut Svg, a: Area, note: &str) {
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
fn y_axis_label(svg: &mut Svg, a: Area, label: &str) {
    let x = a.x - PLOT_LEFT + 16.0;
    let y = a.y + a.h / 2.0;
    let _ = writeln!(
        svg.out,
        r#"<text x="{}" y="{}" font-size="12px" text-anchor="middle" fill="{TEXT}" transform="rotate(-90 {} {})">{}</text>"#,
        P(x),
        P(y),
        P(x),
        P(y),
        esc(label)
    );
}

fn x_axis_label(svg: &mut Svg, a: Area, label: &str) {
    svg.text(
        (a.x + a.w / 2.0, a.bottom() + 36.0),
        12.0,
        "middle",
        TEXT,
        "",
        label,
    );
}

/// Round numbers for a linear axis from 0 to at least `max`: (top, step).
fn nice_ticks(max: f64, target: usize) -> (f64, f64) {
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

/// Linear x (time) and y axes with gridlines and tick labels.
fn linear_axes(svg: &mut Svg, a: Area, xs: Scale, ys: Scale, y_step: f64, x_step: f64) {
    // Horizontal gridlines and y tick labels.
    for i in 0..=50u32 {
        let v = ys.d0 + f64::from(i) * y_step;
        if v > ys.d1 + y_step * 1e-6 {
            break;
        }
        let y = ys.map(v);
        svg.line((a.x, y), (a.right(), y), GRID, 1.0, "");
        svg.text((a.x - 6.0, y + 4.0), 11.0, "end", TEXT, "", &fmt_si(v));
    }
    for i in 0..=50u32 {
        let t = xs.d0 + f64::from(i) * x_step;
        if t > xs.d1 + x_step * 1e-6 {
            break;
        }
        let x = xs.map(t);
        svg.line((x, a.y), (x, a.bottom()), GRID, 1.0, "");
        svg.line((x, a.bottom()), (x, a.bottom() + 4.0), AXIS, 1.0, "");
        svg.text(
            (x, a.bottom() + 17.0),
            11.0,
            "middle",
            TEXT,
            "",
            &trim_num(t),
        );
    }
    svg.rect(a.x, a.y, a.w, a.h, "none", AXIS);
}

// ----------------------------------------------------- latency curves

/// A latency distribution as a quantile function: the recording's
/// HdrHistogram when it decodes, else the kernel buckets.
enum Dist {
    Hdr(hdrhistogram::Histogram<u64>),
    Buckets(Vec<Bucket>, u64),
}

impl Dist {
    fn of(s: &Summary) -> Option<Dist> {
        if let Ok(h) = histogram::decode(&s.hdr)
            && !h.is_empty()
        {
            return Some(Dist::Hdr(h));
        }
        let mut buckets: Vec<Bucket> = s.buckets.iter().filter(|b| b.count > 0).cloned().collect();
        buckets.sort_by_key(|b| b.lower_ns);
        let n = buckets
            .iter()
            .map(|b| b.count)
            .fold(0u64, u64::saturating_add);
        (n > 0).then_some(Dist::Buckets(buckets, n))
    }

    fn count(&self) -> u64 {
        match self {
            Dist::Hdr(h) => h.len(),
            Dist::Buckets(_, n) => *n,
        }
    }

    fn value_at(&self, q: f64) -> u64 {
        let q = if q.is_finite() {
            q.clamp(0.0, 1.0)
        } else {
            0.0
        };
        match self {
            Dist::Hdr(h) => h.value_at_quantile(q),
            Dist::Buckets(b, n) => {
                let rank = ((q * *n as f64).ceil() as u64).clamp(1, *n);
                let mut seen = 0u64;
                for bucket in b {
                    seen = seen.saturating_add(bucket.count);
                    if seen >= rank {
                        return bucket_mid(bucket);
                    }
                }
                b.last().map_or(0, bucket_mid)
            }
        }
    }

    fn max(&self) -> u64 {
        match self {
            Dist::Hdr(h) => h.max(),
            Dist::Buckets(b, _) => b.last().map_or(0, bucket_mid),
        }
    }
}

fn bucket_mid(b: &Bucket) -> u64 {
    b.lower_ns + b.upper_ns.saturating_sub(b.lower_ns) / 2
}

/// A series ready to draw: its points are (decades of 1/(1-q), log10 ns).
struct Curve {
    count: u64,
    p50: u64,
    p99: u64,
    max: u64,
    points: Vec<(f64, f64)>,
}

fn log_ns(v: u64) -> f64 {
    (v.max(1) as f64).log10()
}

fn curve_of(s: &Summary) -> Option<Curve> {
    let d = Dist::of(s)?;
    let n = d.count();
    let max = d.max();
    let end = (n as f64).log10().clamp(0.0, MAX_DECADES);
    let mut points: Vec<(f64, f64)> = Vec::new();
    let mut k = 0u32;
    loop {
        let x = f64::from(k) * CURVE_STEP;
        if x >= end - 1e-9 {
            break;
        }
        let q = 1.0 - 10f64.powf(-x);
        points.push((x, log_ns(d.value_at(q))));
        k += 1;
    }
    points.push((end, log_ns(max)));
    // Drop points in the middle of flat runs: the curve is the same.
    let mut slim: Vec<(f64, f64)> = Vec::with_capacity(points.len());
    for (i, &p) in points.iter().enumerate() {
        let flat_before = i > 0 && points[i - 1].1 == p.1;
        let flat_after = i + 1 < points.len() && points[i + 1].1 == p.1;
        if !(flat_before && flat_after) {
            slim.push(p);
        }
    }
    Some(Curve {
        count: n,
        p50: d.value_at(0.5),
        p99: d.value_at(0.99),
        max,
        points: slim,
    })
}

/// How a series is drawn, by its position among all series.
fn style(i: usize) -> (&'static str, &'static str) {
    (
        PALETTE[i % PALETTE.len()],
        DASHES[(i / PALETTE.len()) % DASHES.len()],
    )
}

/// Height of a latency panel with `n` series.
fn latency_panel_height(n: usize, any_values: bool) -> f64 {
    let plot = if any_values { 300.0 } else { 90.0 };
    let below = if any_values { PLOT_BOTTOM } else { 12.0 };
    34.0 + plot + below + 12.0 + 20.0 + 19.0 * n as f64
}

/// Draws one latency panel at (x, y), `w` wide; returns its height.
/// `id` makes its clip id unique within a document.
fn latency_panel(
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
    let plot_h = if any { 300.0 } else { 90.0 };
    let a = Area {
        x: x + PLOT_LEFT,
        y: y + 34.0,
        w: w - PLOT_LEFT - PLOT_RIGHT,
        h: plot_h,
    };
    let legend_y;
    if any {
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
        let xs = Scale {
            d0: 0.0,
            d1: decades,
            r0: a.x,
            r1: a.right(),
        };
        let ys = Scale {
            d0: lo,
            d1: hi,
            r0: a.bottom(),
            r1: a.y,
        };
        // Latency gridlines: every decade, and 2..9 of each in light grey;
        // 2 and 5 labelled too when the range is narrow.
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
                    svg.text(
                        (a.x - 6.0, py + 4.0),
                        11.0,
                        "end",
                        TEXT,
                        "",
                        &fmt_ns_tick(v),
                    );
                } else {
                    if span <= 6 {
                        svg.line((a.x, py), (a.right(), py), GRID_MINOR, 1.0, "");
                    }
                    if span <= 2 && (m == 2 || m == 5) {
                        svg.text(
                            (a.x - 6.0, py + 4.0),
                            10.0,
                            "end",
                            MUTED,
                            "",
                            &fmt_ns_tick(v),
                        );
                    }
                }
            }
        }
        // Percentile gridlines: each decade, and 50% / 75% before 90%.
        let px_per_decade = a.w / decades;
        for d in 0..=(decades as u32) {
            let px = xs.map(f64::from(d));
            svg.line((px, a.y), (px, a.bottom()), GRID, 1.0, "");
            svg.line((px, a.bottom()), (px, a.bottom() + 4.0), AXIS, 1.0, "");
            svg.text(
                (px, a.bottom() + 17.0),
                11.0,
                "middle",
                TEXT,
                "",
                &pct_label(d),
            );
        }
        if px_per_decade >= 90.0 {
            for (q, label) in [(0.5, "50%"), (0.75, "75%")] {
                let px = xs.map((1.0f64 / (1.0 - q)).log10());
                svg.line((px, a.y), (px, a.bottom()), GRID_MINOR, 1.0, "");
                svg.line((px, a.bottom()), (px, a.bottom() + 3.0), AXIS, 1.0, "");
                svg.text((px, a.bottom() + 17.0), 10.0, "middle", MUTED, "", label);
            }
        }
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
        legend_y = a.bottom() + PLOT_BOTTOM + 12.0;
    } else {
        no_values_box(svg, a, "no values");
        legend_y = a.bottom() + 12.0;
    }
    latency_legend(svg, a.x, legend_y, series, &curves);
    height
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
        match c {
            Some(c) => {
                svg.text((col(0), ry), 12.0, "end", TEXT, "", &fmt_count(c.count));
                svg.text((col(1), ry), 12.0, "end", TEXT, "", &fmt_ns(c.p50 as f64));
                svg.text((col(2), ry), 12.0, "end", TEXT, "", &fmt_ns(c.p99 as f64));
                svg.text((col(3), ry), 12.0, "end", TEXT, "", &fmt_ns(c.max as f64));
            }
            None => {
                svg.text((col(0), ry), 12.0, "end", TEXT, "", "0");
                svg.text((col(0) + 12.0, ry), 12.0, "start", MUTED, "", "no values");
            }
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
    document(PAGE_W, h + 2.0 * MARGIN, title, &svg.out)
}

// ------------------------------------------------------------ timeline

/// One line of a time panel.
struct Line {
    name: String,
    color: &'static str,
    dash: &'static str,
    points: Vec<(f64, f64)>,
}

/// A panel of lines over time, linear y from 0.
struct TimePanel<'a> {
    title: String,
    /// Grey text right of the title.
    note: String,
    y_label: &'a str,
    /// The time axis runs from 0 to at least this.
    t_max: f64,
    /// The y axis runs from 0 to at least this (shared between runs).
    y_max: f64,
    lines: Vec<Line>,
    /// Said in the plot when every line is at 0.
    idle_note: &'a str,
}

/// Rates of a cumulative counter: per interval (previous sample, or the
/// start, to this one), as a step line of (t, value per second).
fn rate_steps(tl: &[Sample], counter: impl Fn(&Sample) -> u64) -> Vec<(f64, f64)> {
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

fn max_y(points: &[(f64, f64)]) -> f64 {
    points
        .iter()
        .map(|p| p.1)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
}

/// Draws a time panel at (x, y), `w` by `h`: title, a legend row under
/// it, the plot.
fn time_panel(svg: &mut Svg, x: f64, y: f64, w: f64, h: f64, p: &TimePanel) {
    panel_title(svg, x, y + 18.0, &p.title);
    if !p.note.is_empty() {
        svg.text(
            (x + w - PLOT_RIGHT, y + 18.0),
            11.0,
            "end",
            MUTED,
            "",
            &p.note,
        );
    }
    let mut lx = x + PLOT_LEFT;
    for l in &p.lines {
        svg.line((lx, y + 33.0), (lx + 20.0, y + 33.0), l.color, 2.5, l.dash);
        svg.text((lx + 25.0, y + 37.0), 12.0, "start", TEXT, "", &l.name);
        lx += 25.0 + text_w(&l.name, 12.0) + 10.0;
    }
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
    let t_max = if p.t_max.is_finite() && p.t_max > 0.0 {
        p.t_max
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
    let xs = Scale {
        d0: 0.0,
        d1: t_end,
        r0: a.x,
        r1: a.right(),
    };
    let ys = Scale {
        d0: 0.0,
        d1: top,
        r0: a.bottom(),
        r1: a.y,
    };
    linear_axes(svg, a, xs, ys, y_step, t_step);
    let clip = format!("clip-t{}", svg.out.len());
    svg.clip_begin(&clip, a.x - 4.0, a.y - 4.0, a.w + 8.0, a.h + 8.0);
    for l in &p.lines {
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
    if own_max <= 0.0 && !p.idle_note.is_empty() {
        svg.text(
            (a.x + a.w / 2.0, a.y + a.h / 2.0),
            13.0,
            "middle",
            MUTED,
            "",
            p.idle_note,
        );
    }
    y_axis_label(svg, a, p.y_label);
    x_axis_label(svg, a, "time since the command started (s)");
}

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
fn usable(tl: &[Sample]) -> Vec<Sample> {
    tl.iter()
        .filter(|s| s.t_s.is_finite() && s.t_s >= 0.0)
        .cloned()
        .collect()
}

/// Axis ranges shared by the pressure panels of several runs, so that
/// their heights compare.
#[derive(Default)]
struct Shared {
    t_max: f64,
    reclaim: f64,
    swap: f64,
    zones: Vec<((u32, String), f64)>,
}

impl Shared {
    fn of(timelines: &[Vec<Sample>]) -> Shared {
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

/// Pressure over time for one run; returns the height used.
fn pressure_section(svg: &mut Svg, y: f64, heading: &str, tl: &[Sample], shared: &Shared) -> f64 {
    let x = MARGIN;
    let full = PAGE_W - 2.0 * MARGIN;
    svg.text(
        (x, y + 22.0),
        18.0,
        "start",
        TEXT,
        r#" font-weight="bold""#,
        heading,
    );
    let mut cy = y + 36.0;
    if tl.is_empty() {
        let a = Area {
            x: x + PLOT_LEFT,
            y: cy,
            w: full - PLOT_LEFT - PLOT_RIGHT,
            h: 70.0,
        };
        no_values_box(svg, a, "no values: this run has no timeline samples");
        return cy + 70.0 + 20.0 - y;
    }
    let half = (full - 20.0) / 2.0;
    let ph = 250.0;
    let rates = [
        TimePanel {
            title: "Reclaim: pages scanned and reclaimed".into(),
            note: String::new(),
            y_label: "pages per second",
            t_max: shared.t_max,
            y_max: shared.reclaim,
            lines: vec![
                Line {
                    name: "scanned/s".into(),
                    color: "#1f77b4",
                    dash: "",
                    points: rate_steps(tl, |s| s.pgscan),
                },
                Line {
                    name: "reclaimed/s".into(),
                    color: "#2ca02c",
                    dash: "",
                    points: rate_steps(tl, |s| s.pgsteal),
                },
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
                Line {
                    name: "swap-out/s".into(),
                    color: "#d62728",
                    dash: "",
                    points: rate_steps(tl, |s| s.pswpout),
                },
                Line {
                    name: "swap-in/s".into(),
                    color: "#9467bd",
                    dash: "",
                    points: rate_steps(tl, |s| s.pswpin),
                },
            ],
            idle_note: "no swapping",
        },
    ];
    for (i, p) in rates.iter().enumerate() {
        time_panel(svg, x + i as f64 * (half + 20.0), cy, half, ph, p);
    }
    cy += ph + 16.0;
    let zones = zones_of(tl);
    if zones.is_empty() {
        let a = Area {
            x: x + PLOT_LEFT,
            y: cy,
            w: full - PLOT_LEFT - PLOT_RIGHT,
            h: 50.0,
        };
        no_values_box(svg, a, "no values: no populated zones in the samples");
        return cy + 50.0 + 20.0 - y;
    }
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
        let zx = x + (i % 2) as f64 * (half + 20.0);
        let zy = cy + (i / 2) as f64 * (zh + 12.0);
        time_panel(svg, zx, zy, half, zh, &p);
    }
    let shown = zones.len().min(MAX_ZONES);
    cy += shown.div_ceil(2) as f64 * (zh + 12.0);
    if zones.len() > MAX_ZONES {
        svg.text(
            (x, cy + 4.0),
            12.0,
            "start",
            MUTED,
            "",
            &format!("{} more zones not shown", zones.len() - MAX_ZONES),
        );
        cy += 20.0;
    }
    cy + 8.0 - y
}

// ---------------------------------------------------------------- page

/// Unique, short labels for every run of every recording, in order:
/// `<kernel release> <run label or run N>` (the run part left out for a
/// recording of one unlabelled run).
fn run_labels(recordings: &[&Recording]) -> Vec<Vec<String>> {
    let mut labels: Vec<Vec<String>> = recordings
        .iter()
        .enumerate()
        .map(|(i, rec)| {
            rec.runs
                .iter()
                .enumerate()
                .map(|(j, run)| {
                    let kernel = [
                        rec.environment.kernel_release.trim(),
                        run.report.kernel_release.trim(),
                    ]
                    .into_iter()
                    .find(|k| !k.is_empty())
                    .map_or_else(|| format!("recording {}", i + 1), shorten);
                    let run_part = if !run.label.trim().is_empty() {
                        shorten(&run.label)
                    } else if rec.runs.len() > 1 {
                        format!("run {}", j + 1)
                    } else {
                        String::new()
                    };
                    if run_part.is_empty() {
                        kernel
                    } else {
                        format!("{kernel} {run_part}")
                    }
                })
                .collect()
        })
        .collect();
    // The same label in several recordings: tell them apart by recording.
    let owners = |l: &String| labels.iter().filter(|runs| runs.contains(l)).count();
    let marks: Vec<Vec<bool>> = labels
        .iter()
        .map(|runs| runs.iter().map(|l| owners(l) > 1).collect())
        .collect();
    for (i, runs) in labels.iter_mut().enumerate() {
        for (j, l) in runs.iter_mut().enumerate() {
            if marks[i][j] {
                l.push_str(&format!(" [{}]", i + 1));
            }
        }
    }
    // The same label twice in one recording (a run label repeated): add
    // the run's number.
    for runs in labels.iter_mut() {
        let copy = runs.clone();
        for (j, l) in runs.iter_mut().enumerate() {
            if copy.iter().filter(|o| *o == l).count() > 1 {
                l.push_str(&format!(" run {}", j + 1));
            }
        }
    }
    labels
}

/// One line about a recording for the page header.
fn recording_line(i: usize, rec: &Recording) -> String {
    let env = &rec.environment;
    let mut parts: Vec<String> = Vec::new();
    let kernel = if env.kernel_release.trim().is_empty() {
        rec.runs
            .first()
            .map(|r| r.report.kernel_release.clone())
            .unwrap_or_default()
    } else {
        env.kernel_release.clone()
    };
    if !kernel.trim().is_empty() {
        parts.push(format!("Linux {}", kernel.trim()));
    }
    if !env.hostname.is_empty() {
        parts.push(format!("host {}", env.hostname));
    }
    if env.cpus > 0 {
        parts.push(format!("{} CPUs", env.cpus));
    }
    if env.mem_total_bytes > 0 {
        parts.push(format!(
            "{} GiB RAM",
            trim_num(env.mem_total_bytes as f64 / f64::from(1u32 << 30))
        ));
    }
    let runs = rec.runs.len();
    parts.push(format!("{runs} run{}", if runs == 1 { "" } else { "s" }));
    if !rec.created_utc.is_empty() {
        parts.push(rec.created_utc.clone());
    }
    if !rec.complete {
        parts.push(format!(
            "INCOMPLETE: {}",
            rec.incomplete_reason.as_deref().unwrap_or("interrupted")
        ));
    }
    format!("[{}] {}", i + 1, parts.join(", "))
}

/// The whole page for one or more recordings, one standalone SVG document:
/// a latency panel per histogram kind that has values in any run (every
/// run of every recording overlaid), then pressure over time for the runs
/// of the first recording (at most `MAX_TIMELINE_RUNS` of them).
pub fn recording_svg(recordings: &[&crate::model::recording::Recording]) -> String {
    let mut svg = Svg::default();
    let x = MARGIN;
    let full = PAGE_W - 2.0 * MARGIN;
    let mut y = MARGIN;

    // Header.
    let workload = recordings.first().map_or(String::new(), |r| {
        let mut w = r.workload.name.clone();
        for a in &r.workload.arguments {
            w.push(' ');
            w.push_str(a);
        }
        w
    });
    let title = if workload.trim().is_empty() {
        "vmtrace".to_string()
    } else {
        format!("vmtrace: {}", shorten(&workload))
    };
    svg.text(
        (x, y + 22.0),
        22.0,
        "start",
        TEXT,
        r#" font-weight="bold""#,
        &title,
    );
    y += 34.0;
    if recordings.is_empty() {
        no_values_box(
            &mut svg,
            Area {
                x,
                y: y + 10.0,
                w: full,
                h: 80.0,
            },
            "no values: no recordings",
        );
        return document(PAGE_W, y + 110.0 + MARGIN, &title, &svg.out);
    }
    for (i, rec) in recordings.iter().enumerate().take(6) {
        y += 18.0;
        svg.text((x, y), 12.0, "start", MUTED, "", &recording_line(i, rec));
    }
    if recordings.len() > 6 {
        y += 18.0;
        svg.text(
            (x, y),
            12.0,
            "start",
            MUTED,
            "",
            &format!("and {} more recordings", recordings.len() - 6),
        );
    }
    y += 16.0;

    // Latency panels.
    let labels = run_labels(recordings);
    let runs: Vec<(String, &crate::model::report::RunReport)> = recordings
        .iter()
        .zip(&labels)
        .flat_map(|(rec, l)| rec.runs.iter().zip(l).map(|(r, l)| (l.clone(), &r.report)))
        .collect();
    let mut panels = 0;
    for kind in Hist::ALL {
        // Every run takes part, even one without this histogram (the
        // legend says "no values"), so a run keeps its colour throughout.
        let series: Vec<Series> = runs
            .iter()
            .map(|(label, report)| Series {
                label: label.clone(),
                summary: report
                    .histograms()
                    .into_iter()
                    .find(|(h, _)| *h == kind)
                    .map_or(&EMPTY, |(_, s)| s),
            })
            .collect();
        if !series.iter().any(|s| curve_of(s.summary).is_some()) {
            continue;
        }
        let title = format!("Latency by percentile: {}", kind.title());
        let h = latency_panel(&mut svg, x, y + 10.0, full, &title, &series, kind.name());
        y += h + 20.0;
        panels += 1;
    }
    if panels == 0 {
        panel_title(&mut svg, x, y + 28.0, "Latency by percentile");
        no_values_box(
            &mut svg,
            Area {
                x: x + PLOT_LEFT,
                y: y + 40.0,
                w: full - PLOT_LEFT - PLOT_RIGHT,
                h: 70.0,
            },
            "no values: no latency histogram has values",
        );
        y += 130.0;
    }

    // Pressure over time: the first recording's runs, on shared axes.
    let first = recordings[0];
    let first_labels = labels.first().cloned().unwrap_or_default();
    let timelines: Vec<Vec<Sample>> = first
        .runs
        .iter()
        .take(MAX_TIMELINE_RUNS)
        .map(|r| usable(&r.report.timeline))
        .collect();
    let shared = Shared::of(&timelines);
    if timelines.is_empty() {
        y += pressure_section(&mut svg, y, "Memory pressure over time", &[], &shared);
    }
    for (j, tl) in timelines.iter().enumerate() {
        let label = first_labels.get(j).cloned().unwrap_or_default();
        let heading = format!("Memory pressure over time: {label}");
        y += pressure_section(&mut svg, y, &heading, tl, &shared);
    }
    let n_runs = first.runs.len();
    if n_runs > MAX_TIMELINE_RUNS {
        svg.text(
            (x, y + 14.0),
            12.0,
            "start",
            MUTED,
            "",
            &format!(
                "Pressure over time of runs {}..{} of [1] not shown.",
                MAX_TIMELINE_RUNS + 1,
                n_runs
            ),
        );
        y += 24.0;
    }
    document(PAGE_W, y + MARGIN, &title, &svg.out)
}

/// An empty summary, for runs that lack a histogram.
static EMPTY: Summary = Summary {
    count: 0,
    total_ns: 0,
    p50_ns: 0,
    p90_ns: 0,
    p99_ns: 0,
    p999_ns: 0,
    max_ns: 0,
    buckets: Vec::new(),
    hdr: String::new(),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        model::histogram::summarize,
        model::recording::{Environment, RecordedRun, Workload},
        model::report::{ReclaimReport, RunReport, SwapIoReport},
    };
    use vmtrace_common::hist::{BUCKETS, bucket_of};

    fn summary_of(values: &[u64]) -> Summary {
        let mut counts = vec![0u64; BUCKETS];
        for &v in values {
            counts[bucket_of(v)] += 1;
        }
        summarize(&counts)
    }

    /// Checks the document is one well-formed <svg> element: tags nest
    /// and close, attribute quotes pair up, text has no bare `<` or `&`,
    /// and no number is NaN or infinite.
    fn assert_well_formed(doc: &str) {
        assert!(
            doc.starts_with("<svg xmlns="),
            "{}",
            &doc[..doc.len().min(80)]
        );
        assert!(doc.trim_end().ends_with("</svg>"));
        for bad in ["NaN", "inf", "nan"] {
            assert!(!doc.contains(bad), "{bad} in the SVG");
        }
        let mut open: Vec<String> = Vec::new();
        let mut rest = doc;
        let mut roots = 0;
        while let Some(lt) = rest.find('<') {
            let text = &rest[..lt];
            assert!(!text.contains('>'), "bare > in text {text:?}");
            for (i, _) in text.match_indices('&') {
                let entity = &text[i..];
                assert!(
                    ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
                        .iter()
                        .any(|e| entity.starts_with(e)),
                    "bare & in text {text:?}"
                );
            }
            let gt = rest[lt..].find('>').expect("tag ends") + lt;
            let tag = &rest[lt + 1..gt];
            assert_eq!(tag.matches('"').count() % 2, 0, "quotes in <{tag}>");
            assert!(!tag.contains('<'), "< inside <{tag}>");
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(open.pop().as_deref(), Some(name), "</{name}> closes");
            } else if !tag.ends_with('/') {
                let name: String = tag
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric())
                    .collect();
                if open.is_empty() {
                    roots += 1;
                }
                open.push(name);
            } else if open.is_empty() {
                roots += 1;
            }
            rest = &rest[gt + 1..];
        }
        assert!(open.is_empty(), "unclosed {open:?}");
        assert!(rest.trim().is_empty());
        assert_eq!(roots, 1, "one root element");
    }

    fn zone(name: &str, free: u64, managed: u64) -> ZoneSample {
        ZoneSample {
            node: 0,
            zone: name.into(),
            free,
            min: 100,
            low: 125,
            high: 150,
            managed,
            ..Default::default()
        }
    }

    fn timeline(n: usize) -> Vec<Sample> {
        (1..=n)
            .map(|i| {
                let i64 = i as u64;
                Sample {
                    t_s: i as f64,
                    pgscan: 1000 * i64 * i64,
                    pgsteal: 400 * i64 * i64,
                    pswpout: 300 * i64,
                    pswpin: 20 * i64,
                    zones: vec![
                        zone("DMA", 3840, 3840),
                        zone("Normal", 5000 - 200 * i64.min(20), 100_000),
                        zone("Movable", 0, 0),
                        zone("Device", 0, 0),
                    ],
                    ..Default::default()
                }
            })
            .collect()
    }

    fn report(stall_values: &[u64], tl: Vec<Sample>) -> RunReport {
        RunReport {
            kernel_release: "6.18.44".into(),
            memcg_reclaim: Some(ReclaimReport {
                stalls: summary_of(stall_values),
                pages_reclaimed: 1,
            }),
            direct_reclaim: Some(ReclaimReport {
                stalls: summary_of(&[]),
                pages_reclaimed: 0,
            }),
            swap_io: Some(SwapIoReport {
                areas: vec!["/swap".into()],
                truncated: false,
                write: summary_of(&[500_000, 600_000, 2_000_000]),
                write_bytes: 0,
                read: summary_of(&[]),
                read_bytes: 0,
            }),
            timeline: tl,
            ..Default::default()
        }
    }

    fn recording(kernel: &str, runs: Vec<(&str, RunReport)>) -> Recording {
        let mut rec = Recording::new(
            Workload {
                name: "memhog".into(),
                arguments: vec!["--mib".into(), "300".into()],
                seed: Some(1),
            },
            Environment {
                kernel_release: kernel.into(),
                hostname: "box".into(),
                cpus: 4,
                mem_total_bytes: 8 << 30,
                ..Default::default()
            },
        );
        rec.created_utc = "2026-11-30T03:04:05Z".into();
        rec.runs = runs
            .into_iter()
            .map(|(label, report)| RecordedRun {
                label: label.into(),
                report,
            })
            .collect();
        rec
    }

    fn spread(n: u64, scale: u64) -> Vec<u64> {
        (1..=n).map(|i| scale * (1 + i * i % 997)).collect()
    }

    #[test]
    fn latency_plot_overlays_series_with_a_legend() {
        let a = summary_of(&spread(5000, 1000));
        let b = summary_of(&spread(300, 2500));
        let doc = latency_plot(
            "memcg reclaim stall",
            &[
                Series {
                    label: "6.18.44".into(),
                    summary: &a,
                },
                Series {
                    label: "6.1.0".into(),
                    summary: &b,
                },
            ],
        );
        assert_well_formed(&doc);
        for want in [
            "memcg reclaim stall",
            "6.18.44",
            "6.1.0",
            "5,000",
            "300",
            "p50",
            "p99",
            "90%",
            "99.9%",
            "percentile",
            "latency (log scale)",
            " us<",
            "font-family=\"sans-serif\"",
            "fill=\"white\"",
        ] {
            assert!(doc.contains(want), "lacks {want:?}");
        }
        assert_eq!(doc.matches("<polyline").count(), 2);
        assert!(!doc.contains("no values"));
        // p50 of the first series, as the legend prints it.
        assert!(doc.contains(&fmt_ns(a.p50_ns as f64)));
    }

    #[test]
    fn empty_inputs_say_no_values() {
        let empty = summary_of(&[]);
        for series in [
            vec![],
            vec![Series {
                label: "idle".into(),
                summary: &empty,
            }],
        ] {
            let doc = latency_plot("nothing", &series);
            assert_well_formed(&doc);
            assert!(doc.contains("no values"));
            assert!(!doc.contains("<polyline"));
        }
        let doc = recording_svg(&[]);
        assert_well_formed(&doc);
        assert!(doc.contains("no values"));

        let no_runs = recording("6.1", vec![]);
        let doc = recording_svg(&[&no_runs]);
        assert_well_formed(&doc);
        assert!(doc.contains("no values"));

        let bare = recording("6.1", vec![("", RunReport::default())]);
        let doc = recording_svg(&[&bare]);
        assert_well_formed(&doc);
        assert!(doc.contains("no latency histogram has values"));
        assert!(doc.contains("no timeline samples"));
    }

    #[test]
    fn one_value_and_extreme_values_plot() {
        let one = summary_of(&[1234]);
        let huge = summary_of(&[0, 1, u64::MAX]);
        let doc = latency_plot(
            "odd",
            &[
                Series {
                    label: "one".into(),
                    summary: &one,
                },
                Series {
                    label: "huge".into(),
                    summary: &huge,
                },
            ],
        );
        assert_well_formed(&doc);
        assert!(doc.contains("<circle"));
        assert!(doc.contains(&fmt_ns(one.max_ns as f64)));
        assert!(!doc.contains("no values"));
    }

    #[test]
    fn broken_hdr_payload_falls_back_to_buckets() {
        let mut s = summary_of(&spread(1000, 100));
        s.hdr = "not base64!".into();
        let doc = latency_plot(
            "fallback",
            &[Series {
                label: "x".into(),
                summary: &s,
            }],
        );
        assert_well_formed(&doc);
        assert!(doc.contains("<polyline"));
        assert!(doc.contains("1,000"));
    }

    #[test]
    fn labels_are_escaped() {
        let s = summary_of(&[1000, 2000]);
        let doc = latency_plot(
            "a < b & \"c\"",
            &[Series {
                label: "<script>&'x'".into(),
                summary: &s,
            }],
        );
        assert_well_formed(&doc);
        assert!(doc.contains("a &lt; b &amp; &quot;c&quot;"));
        assert!(doc.contains("&lt;script&gt;&amp;&apos;x&apos;"));
        assert!(!doc.contains("<script"));
    }

    #[test]
    fn recording_page_has_every_part() {
        let a = recording(
            "6.18.44-fc",
            vec![("", report(&spread(4000, 1000), timeline(10)))],
        );
        let b = recording(
            "6.1.0-57-amd64",
            vec![
                ("-j1", report(&spread(2000, 3000), timeline(5))),
                ("-j2", report(&spread(2000, 5000), timeline(5))),
            ],
        );
        let doc = recording_svg(&[&a, &b]);
        assert_well_formed(&doc);
        for want in [
            "vmtrace: memhog --mib 300",
            "[1] Linux 6.18.44-fc, host box, 4 CPUs, 8 GiB RAM, 1 run",
            "Latency by percentile: memcg reclaim stall",
            "Latency by percentile: swap write request",
            ">6.18.44-fc<",
            ">6.1.0-57-amd64 -j1<",
            ">6.1.0-57-amd64 -j2<",
            "Memory pressure over time: 6.18.44-fc",
            "Reclaim: pages scanned and reclaimed",
            "scanned/s",
            "reclaimed/s",
            "swap-out/s",
            "swap-in/s",
            "Node 0 DMA: free pages",
            "Node 0 Normal: free pages",
            "min 100",
            "time since the command started (s)",
            "pages per second",
        ] {
            assert!(doc.contains(want), "lacks {want:?}");
        }
        // Empty histograms and empty zones get no panel.
        assert!(!doc.contains("direct reclaim stall"));
        assert!(!doc.contains("swap read request"));
        assert!(!doc.contains("Movable"));
        assert!(!doc.contains("Device"));
        // Only the first recording's timeline.
        assert!(!doc.contains("Memory pressure over time: 6.1.0"));
        // Deterministic.
        assert_eq!(doc, recording_svg(&[&a, &b]));
    }

    #[test]
    fn odd_timelines_never_give_nan() {
        let mut tl = timeline(1);
        let mut nan = timeline(2).remove(1);
        nan.t_s = f64::NAN;
        tl.push(nan);
        let mut back = timeline(3).remove(2);
        back.pgscan = 0; // counter went backwards
        back.t_s = 1.0; // and no time passed
        tl.push(back);
        let mut inf = timeline(4).remove(3);
        inf.t_s = f64::INFINITY;
        tl.push(inf);
        let mut neg = timeline(1).remove(0);
        neg.t_s = -5.0;
        tl.insert(0, neg);
        let rec = recording(
            "6.1",
            vec![
                ("", report(&[5], tl)),
                ("", report(&[], timeline(1))),
                ("", report(&[], vec![])),
            ],
        );
        let doc = recording_svg(&[&rec]);
        assert_well_formed(&doc);
        assert!(doc.contains(">6.1 run 1<"));
        assert!(doc.contains(">6.1 run 3<"));
        assert!(doc.contains("no timeline samples"));
    }

    #[test]
    fn labels_are_unique() {
        let r = || report(&[1000], vec![]);
        let a = recording("6.1", vec![("", r())]);
        let b = recording("6.1", vec![("", r())]);
        let c = recording("", vec![("-j1", r()), ("-j1", r())]);
        let labels = run_labels(&[&a, &b, &c]);
        assert_eq!(
            labels,
            vec![
                vec!["6.1 [1]".to_string()],
                vec!["6.1 [2]".to_string()],
                vec![
                    "6.18.44 -j1 run 1".to_string(),
                    "6.18.44 -j1 run 2".to_string()
                ],
            ]
        );
        let long = recording(&"x".repeat(100), vec![("", r())]);
        let labels = run_labels(&[&long]);
        assert_eq!(labels[0][0].chars().count(), MAX_LABEL);
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_ns(870.0), "870 ns");
        assert_eq!(fmt_ns(44_031.0), "44.0 us");
        assert_eq!(fmt_ns(1_802_239.0), "1.80 ms");
        assert_eq!(fmt_ns(250e9), "250 s");
        assert_eq!(fmt_ns(f64::NAN), "0 ns");
        assert_eq!(fmt_ns_tick(1e4), "10 us");
        assert_eq!(fmt_ns_tick(5e8), "500 ms");
        assert_eq!(fmt_ns_tick(1.0), "1 ns");
        assert_eq!(pct_label(0), "0%");
        assert_eq!(pct_label(1), "90%");
        assert_eq!(pct_label(2), "99%");
        assert_eq!(pct_label(5), "99.999%");
        assert_eq!(fmt_count(1_234_567), "1,234,567");
        assert_eq!(fmt_si(25_557.0), "25.6k");
        assert_eq!(fmt_si(4_800_000.0), "4.8M");
        assert_eq!(fmt_si(0.5), "0.5");
        assert_eq!(P(f64::NAN).to_string(), "0.0");
        assert_eq!(P(-0.01).to_string(), "0.0");
        assert_eq!(nice_ticks(0.0, 5), (1.0, 0.2));
        assert_eq!(nice_ticks(f64::NAN, 5), (1.0, 0.2));
        assert_eq!(nice_ticks(186_000.0, 5), (200_000.0, 50_000.0));
    }

    #[test]
    fn rates_are_per_interval() {
        let tl = timeline(3);
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
}
