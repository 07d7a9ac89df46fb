//! The comparison as text: ASCII, at most 72 columns (it goes to
//! linux-mm). Groups are lettered A, B, C... (A is the baseline); tables
//! hold the baseline and at most two other groups, more go in further
//! blocks.

use crate::view::format::{fmt_count_short, fmt_secs, wrap};
use std::fmt::Write as _;

use super::{AttributionRow, Change, Comparison, MetricRow, Unit, Versus};

const NAME: usize = 24;

fn letter(i: usize) -> String {
    char::from(b'A' + (i % 26) as u8).to_string()
}

fn value(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Seconds => fmt_secs(v),
        Unit::Percent => format!("{v:.1}%"),
        Unit::Count | Unit::Pages | Unit::PerSecond => fmt_count_short(v),
    }
}

fn pct(c: &Change) -> String {
    match c.pct {
        Some(p) if p.abs() >= 10.0 => format!("{p:+.0}%"),
        Some(p) => format!("{p:+.1}%"),
        None if c.diff == 0.0 => "0".into(),
        None => "new".into(),
    }
}

fn mark(c: &Change) -> &'static str {
    match c.welch {
        Some(w) if w.p < 0.01 => "**",
        Some(w) if w.p < 0.05 => "*",
        Some(_) => "~",
        None => "",
    }
}

pub fn render(c: &Comparison, detail: bool) -> String {
    let mut o = String::new();
    let mut lines = vec![
        format!("vmtrace compare: {} groups", c.groups.len()),
        format!(
            "significance: {}: * p < 0.05, ** p < 0.01, ~ within noise",
            c.test
        ),
    ];
    for (i, g) in c.groups.iter().enumerate() {
        let mut s = format!(
            "{} = {}: {} run{}",
            letter(i),
            g.label,
            g.runs,
            if g.runs == 1 { "" } else { "s" }
        );
        if g.label != g.kernel_release {
            let _ = write!(s, " on {}", g.kernel_release);
        }
        if g.oom_killed > 0 {
            let _ = write!(s, ", {} OOM-killed (left out)", g.oom_killed);
        }
        if g.failed > 0 {
            let _ = write!(s, ", {} failed (left out)", g.failed);
        }
        if i == 0 {
            s.push_str(" (baseline)");
        }
        lines.push(s);
    }
    for s in &c.settings {
        lines.push(format!("setting differs: {s}"));
    }
    for w in &c.warnings {
        lines.push(format!("WARNING: {w}"));
    }
    lines.extend(super::guards::lines(&c.guards));
    for l in lines {
        for w in wrap(&l, 72) {
            let _ = writeln!(o, "{w}");
        }
    }
    let _ = writeln!(o);
    for v in c.versus.iter().enumerate() {
        write_verdict(&mut o, v.0 + 1, v.1);
    }
    let others: Vec<usize> = (1..c.groups.len()).collect();
    for chunk in others.chunks(2) {
        let _ = writeln!(o);
        write_metrics(&mut o, &c.metrics, chunk, detail);
    }
    for (k, v) in c.versus.iter().enumerate() {
        let _ = writeln!(o);
        write_attribution(&mut o, &c.attribution, k + 1, v);
    }
    for (k, v) in c.versus.iter().enumerate() {
        write_hints(&mut o, k + 1, v);
    }
    o
}

fn write_verdict(o: &mut String, g: usize, v: &Versus) {
    let e = v.elapsed;
    let mut s = format!("{} vs A: {}", letter(g), v.verdict);
    if let Some(e) = e {
        let _ = write!(
            s,
            ", elapsed {}{} ({})",
            if e.diff >= 0.0 { "+" } else { "-" },
            fmt_secs(e.diff.abs()),
            pct(&e)
        );
        if let Some(w) = e.welch {
            let _ = write!(s, ", p = {:.3}", w.p);
        }
    }
    if v.judgeable && v.verdict == "within noise" {
        s.push_str(": no cause to explain");
    }
    for w in wrap(&s, 72) {
        let _ = writeln!(o, "{w}");
    }
    if !v.judgeable {
        let _ = writeln!(
            o,
            "  (one run in a group: significance cannot be judged; run each"
        );
        let _ = writeln!(o, "  configuration 3 times or more, e.g. --repeat 3)");
    }
}

fn write_metrics(o: &mut String, metrics: &[MetricRow], others: &[usize], detail: bool) {
    let mut head = format!("{:<NAME$}{:>9}", "metric (mean per run)", "A");
    for &g in others {
        let _ = write!(head, " {:>8} {:>8}", letter(g), "");
    }
    let _ = writeln!(o, "{}", head.trim_end());
    for m in metrics {
        let mut line = format!("{:<NAME$}", super::guards::label(m));
        line.truncate(NAME);
        while line.len() < NAME {
            line.push(' ');
        }
        let cell = |g: usize| m.groups[g].map_or("-".to_string(), |d| value(m.unit, d.mean));
        let _ = write!(line, "{:>9}", cell(0));
        for &g in others {
            let ch = m.changes[g - 1]
                .map(|c| format!("{}{}", pct(&c), mark(&c)))
                .unwrap_or_default();
            let _ = write!(line, " {:>8} {:<8}", cell(g), ch);
        }
        let _ = writeln!(o, "{}", line.trim_end());
        if detail {
            for (what, f) in [
                (
                    "  stddev",
                    (|d: &super::Describe| d.stddev) as fn(&super::Describe) -> f64,
                ),
                ("  min", |d| d.min),
                ("  max", |d| d.max),
            ] {
                let cell = |g: usize| m.groups[g].map_or("-".to_string(), |d| value(m.unit, f(&d)));
                let mut line = format!("{what:<NAME$}{:>9}", cell(0));
                for &g in others {
                    let _ = write!(line, " {:>8} {:<8}", cell(g), "");
                }
                let _ = writeln!(o, "{}", line.trim_end());
            }
        }
    }
}

fn write_attribution(o: &mut String, rows: &[AttributionRow], g: usize, v: &Versus) {
    let l = letter(g);
    let _ = writeln!(
        o,
        "where the time went, A vs {l} (seconds per run; task-seconds"
    );
    let _ = writeln!(o, "when tasks ran at once)");
    let _ = writeln!(
        o,
        "{:<28}{:>9}{:>9}{:>9}{:>7}",
        "component",
        "A",
        l,
        format!("{l}-A"),
        "share"
    );
    for r in rows {
        let d = r.diffs[g - 1];
        let share = r.shares[g - 1].map_or(String::new(), |s| format!("{:.0}%", 100.0 * s));
        let sign = if d >= 0.0 { "+" } else { "-" };
        let _ = writeln!(
            o,
            "{:<28}{:>9}{:>9}{:>9}{:>7}",
            r.component,
            signed(r.means[0]),
            signed(r.means[g]),
            format!("{sign}{}", fmt_secs(d.abs())),
            share
        );
    }
    if let Some(x) = v.explained {
        let _ = writeln!(
            o,
            "the components account for {:.0}% of the elapsed difference",
            100.0 * x
        );
    }
}

fn signed(v: f64) -> String {
    if v < 0.0 {
        format!("-{}", fmt_secs(-v))
    } else {
        fmt_secs(v)
    }
}

fn write_hints(o: &mut String, g: usize, v: &Versus) {
    // Mechanisms carry seconds of the elapsed difference; other
    // significant differences are listed apart, not offered as causes.
    let linked = |h: &&super::Hint| !h.seconds.is_finite() || h.seconds.abs() >= 0.001;
    let (causes, others): (Vec<&super::Hint>, Vec<&super::Hint>) = v.hints.iter().partition(linked);
    for (title, hints) in [
        (
            format!("likely mechanisms, {} vs A, strongest first:", letter(g)),
            causes,
        ),
        (
            format!(
                "also different, {} vs A (no elapsed time linked):",
                letter(g)
            ),
            others,
        ),
    ] {
        if hints.is_empty() {
            continue;
        }
        let _ = writeln!(o);
        let _ = writeln!(o, "{title}");
        for (i, h) in hints.iter().enumerate() {
            let mut text = format!("{}. {}", i + 1, h.text);
            if h.seconds.is_finite() && h.seconds.abs() >= 0.001 {
                let _ = write!(
                    text,
                    " [{}{} of elapsed]",
                    if h.seconds >= 0.0 { "+" } else { "-" },
                    fmt_secs(h.seconds.abs())
                );
            }
            for (k, line) in wrap(&text, 70).into_iter().enumerate() {
                // wrap() indents continuation lines by 2; make it 3 under "1. ".
                let line = if k == 0 { line } else { format!(" {line}") };
                let _ = writeln!(o, "  {line}");
            }
        }
    }
}
