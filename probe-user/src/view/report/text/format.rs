//! Small text helpers shared by the report's sections: durations in at
//! most 6 characters, percentages, `i:count` lists, signal names, and
//! wrapping at 72 columns.

/// A duration in ns as at most 6 characters: `512ns`, `1.5us`, `12ms`.
pub fn fmt_ns(ns: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    for (scale, unit) in UNITS {
        if ns >= scale {
            let v = ns as f64 / scale as f64;
            return if scale == 1 || v >= 100.0 {
                format!("{v:.0}{unit}")
            } else if v >= 10.0 {
                format!("{v:.1}{unit}").replace(".0", "")
            } else {
                format!("{v:.1}{unit}")
            };
        }
    }
    "0".into()
}

pub(super) fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}", part as f64 * 100.0 / whole as f64)
    }
}

/// `i:count` for the non-zero counts, highest index first.
pub(super) fn nonzero_pairs(counts: &[u64], label: impl Fn(usize) -> String) -> String {
    let pairs: Vec<String> = counts
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, n)| **n > 0)
        .map(|(i, n)| format!("{}:{n}", label(i)))
        .collect();
    if pairs.is_empty() {
        "none".into()
    } else {
        pairs.join(" ")
    }
}

pub(super) fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        _ => "signal",
    }
}

/// Wraps at spaces to `width` columns; continuation lines indented by 2.
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
            line.push_str("  ");
        } else if !line.is_empty() && !line.ends_with("  ") {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.trim().is_empty() {
        lines.push(line);
    }
    lines
}

/// Writes `text` wrapped at 72 columns, one line at a time.
pub(super) fn write_wrapped(o: &mut String, text: &str) -> std::fmt::Result {
    use std::fmt::Write as _;
    for line in wrap(text, 72) {
        writeln!(o, "{line}")?;
    }
    Ok(())
}
