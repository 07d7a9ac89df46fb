//! Standalone SVG 1.1 text written by hand: a body builder (text, lines,
//! rectangles, circles, polylines, clipped groups) and the document
//! around it (white background, `sans-serif`, sizes in px, no scripts).
//! Every text goes through `esc` and every number through `P`, so the
//! output is well-formed XML with no NaN or infinity in it.

use std::fmt::{self, Write};

/// A coordinate or length: finite, one decimal. Everything numeric that
/// reaches the SVG goes through this, so NaN and inf cannot.
#[derive(Clone, Copy)]
pub struct P(pub f64);

impl fmt::Display for P {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = if self.0.is_finite() { self.0 } else { 0.0 };
        // -0.0 prints as "-0.0"; keep the output tidy.
        let v = (v * 10.0).round() / 10.0;
        let v = if v == 0.0 { 0.0 } else { v };
        write!(f, "{v:.1}")
    }
}

/// Escapes text for XML element content and attribute values.
pub fn esc(s: &str) -> String {
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

/// SVG body text under construction.
#[derive(Default)]
pub struct Svg {
    out: String,
}

impl Svg {
    /// Text at `at`; `extra` is further attributes, written as given
    /// (with a leading space).
    pub fn text(
        &mut self,
        at: (f64, f64),
        size: f64,
        anchor: &str,
        fill: &str,
        extra: &str,
        s: &str,
    ) {
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

    /// Text turned a quarter left (reading upwards), centred on `at`, in
    /// a whole number of px.
    pub fn text_up(&mut self, at: (f64, f64), size_px: u32, fill: &str, s: &str) {
        let (x, y) = at;
        let _ = writeln!(
            self.out,
            r#"<text x="{}" y="{}" font-size="{size_px}px" text-anchor="middle" fill="{fill}" transform="rotate(-90 {} {})">{}</text>"#,
            P(x),
            P(y),
            P(x),
            P(y),
            esc(s)
        );
    }

    pub fn line(&mut self, from: (f64, f64), to: (f64, f64), stroke: &str, width: f64, dash: &str) {
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
        self.dash_and_close(dash);
    }

    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, stroke: &str) {
        let _ = writeln!(
            self.out,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{fill}" stroke="{stroke}"/>"#,
            P(x),
            P(y),
            P(w.max(0.0)),
            P(h.max(0.0))
        );
    }

    pub fn circle(&mut self, x: f64, y: f64, r: f64, fill: &str) {
        let _ = writeln!(
            self.out,
            r#"<circle cx="{}" cy="{}" r="{}" fill="{fill}"/>"#,
            P(x),
            P(y),
            P(r)
        );
    }

    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &str, width: f64, dash: &str) {
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
        self.dash_and_close(dash);
    }

    /// Ends a stroked element: its dash pattern, if any, and `/>`.
    fn dash_and_close(&mut self, dash: &str) {
        if !dash.is_empty() {
            let _ = write!(self.out, r#" stroke-dasharray="{dash}""#);
        }
        self.out.push_str("/>\n");
    }

    /// Starts a group clipped to a rectangle (for lines that leave a plot).
    pub fn clip_begin(&mut self, id: &str, x: f64, y: f64, w: f64, h: f64) {
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

    pub fn clip_end(&mut self) {
        self.out.push_str("</g>\n");
    }

    /// Bytes of body written so far: a cheap id unique within a document.
    pub fn written(&self) -> usize {
        self.out.len()
    }

    /// The complete document around the body.
    pub fn finish(self, width: f64, height: f64, title: &str) -> String {
        document(width, height, title, &self.out)
    }
}

/// A complete document around a body.
pub fn document(width: f64, height: f64, title: &str, body: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_finite_and_tidy() {
        assert_eq!(P(f64::NAN).to_string(), "0.0");
        assert_eq!(P(f64::INFINITY).to_string(), "0.0");
        assert_eq!(P(-0.01).to_string(), "0.0");
        assert_eq!(P(12.345).to_string(), "12.3");
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            esc("a < b & \"c\" 'd' >\u{1}"),
            "a &lt; b &amp; &quot;c&quot; &apos;d&apos; &gt; "
        );
        let mut svg = Svg::default();
        svg.text((1.0, 2.0), 10.0, "start", "#000", "", "<&>");
        let doc = svg.finish(10.0, 10.0, "t&t");
        assert!(doc.contains(">&lt;&amp;&gt;</text>"));
        assert!(doc.contains("<title>t&amp;t</title>"));
    }

    #[test]
    fn dashes_only_when_asked() {
        let mut svg = Svg::default();
        svg.line((0.0, 0.0), (1.0, 1.0), "red", 1.0, "");
        svg.polyline(&[(0.0, 0.0), (1.0, 1.0)], "red", 1.0, "2,2");
        svg.polyline(&[], "red", 1.0, "");
        let doc = svg.finish(1.0, 1.0, "");
        assert_eq!(doc.matches("stroke-dasharray=\"2,2\"").count(), 1);
        assert_eq!(doc.matches("<polyline").count(), 1);
    }
}
