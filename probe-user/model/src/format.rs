//! Numbers and text for people, in one place: every view formats
//! durations, counts, shares and wrapped lines through these, so one
//! quantity reads the same in the report, compare, plots and progress.
//! Each format is named by what it is for; byte sizes are the model's
//! (`model::units`, parsed from and printed for users alike) and are
//! re-exported here.

pub use crate::units::human;

// Durations.

/// A group's letter in compare's tables and plots: A, B, ... Z, then
/// A again (27 groups are not told apart by letter).
pub fn group_letter(i: usize) -> char {
    char::from(b'A' + (i % 26) as u8)
}

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

/// Seconds as a compact duration (`fmt_ns`): compare's tables.
pub fn fmt_secs(v: f64) -> String {
    fmt_ns((v * 1e9).max(0.0) as u64)
}

/// A latency with three significant digits: `870 ns`, `44.0 us`, `1.80 ms`.
pub fn fmt_ns_3sig(ns: f64) -> String {
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
pub fn fmt_ns_tick(ns: f64) -> String {
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

// Counts and plain numbers.

/// A count in at most 6 characters: `812`, `25.6k`, `1.25M` (compare).
pub fn fmt_count_short(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// 1234567 -> `1.2M`: short rates for the status line.
pub fn fmt_rate_short(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// A count with thousands separators: `41,670`.
pub fn fmt_thousands(n: u64) -> String {
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
pub fn fmt_si(v: f64) -> String {
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
pub fn trim_num(v: f64) -> String {
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

// Shares and percentiles.

/// `part` as a percentage of `whole`, one decimal; `-` when whole is 0.
pub fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}", part as f64 * 100.0 / whole as f64)
    }
}

/// The percentile at `d` decades of 1/(1-q): 0 -> `0%`, 1 -> `90%`,
/// 3 -> `99.9%`.
pub fn pct_label(d: u32) -> String {
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

// Mail-ready text (ASCII, 72 columns).

/// Wraps at spaces to `width` columns. The first line keeps the text's
/// own indentation; continuation lines are indented 2 more.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let body = text.trim_start_matches(' ');
    let indent = &text[..text.len() - body.len()];
    let mut lines = Vec::new();
    let mut line = String::from(indent);
    for word in body.split(' ') {
        let empty = lines.is_empty() && line.len() == indent.len();
        if !empty && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
            line.push_str(indent);
            line.push_str("  ");
        } else if !empty && !line.ends_with("  ") {
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
pub fn write_wrapped(o: &mut String, text: &str) -> std::fmt::Result {
    use std::fmt::Write as _;
    for line in wrap(text, 72) {
        writeln!(o, "{line}")?;
    }
    Ok(())
}

// Text that came from a recording (or any file vmtrace does not control).

/// `text` with every control character (C0, DEL, C1) and every bidi
/// override or isolate written as an escape (`\n`, `\t`, `\r`, `\x1b`,
/// `\u{202e}`), so that text from a recording printed to a terminal, a
/// CSV file or an error line cannot move the cursor, clear the screen,
/// forge lines or reorder what follows. Anything else, non-ASCII
/// included, is kept. Idempotent (a backslash is kept as it is), and
/// borrowed when nothing needs escaping.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char =
        |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut o = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            '\r' => o.push_str("\\r"),
            c if (c as u32) < 0x80 && unsafe_char(c) => {
                o.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if unsafe_char(c) => o.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => o.push(c),
        }
    }
    std::borrow::Cow::Owned(o)
}

/// `printable` line by line: a multi-line text (compare's table) keeps
/// its line breaks and loses every other control character.
pub fn printable_lines(text: &str) -> String {
    let mut o = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        o.push_str(&printable(body));
        o.push_str(end);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_escapes_controls_only() {
        assert_eq!(
            printable("memhog --mib 64 -- caf\u{e9}"),
            "memhog --mib 64 -- caf\u{e9}"
        );
        assert!(matches!(printable("plain"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(
            printable("a\x1b[2Jb\nc\td\re\x7f\u{9b}f\u{202e}g\0"),
            "a\\x1b[2Jb\\nc\\td\\re\\x7f\\u{9b}f\\u{202e}g\\x00"
        );
        let once = printable("x\x1b]0;owned\x07").into_owned();
        assert_eq!(printable(&once), once.as_str());
        assert!(!once.chars().any(char::is_control));
        assert_eq!(printable_lines("a\x1b\nb\r\n\n"), "a\\x1b\nb\\r\n\n");
    }

    #[test]
    fn durations_are_short() {
        assert_eq!(fmt_ns(0), "0");
        assert_eq!(fmt_ns(512), "512ns");
        assert_eq!(fmt_ns(1_500), "1.5us");
        assert_eq!(fmt_ns(12_000_000), "12ms");
        assert_eq!(fmt_ns(250_000_000), "250ms");
        assert_eq!(fmt_ns(9_000_000_000), "9.0s");
        for v in [1u64, 999, 99_999, 123_456_789_012] {
            assert!(fmt_ns(v).len() <= 6, "{v}: {}", fmt_ns(v));
        }
        assert_eq!(fmt_secs(0.25), "250ms");
    }

    #[test]
    fn plot_numbers() {
        assert_eq!(fmt_si(25_557.0), "25.6k");
        assert_eq!(fmt_si(4_800_000.0), "4.8M");
        assert_eq!(fmt_si(0.5), "0.5");
        assert_eq!(trim_num(-0.0001), "0");
        assert_eq!(fmt_ns_3sig(44_000.0), "44.0 us");
        assert_eq!(fmt_ns_tick(20_000.0), "20 us");
        assert_eq!(fmt_thousands(41_670), "41,670");
        assert_eq!(pct_label(3), "99.9%");
    }

    #[test]
    fn wrapped_lines_keep_their_indentation() {
        let text = format!("  woken by: {}", ["kcompactd0 12"; 12].join(", "));
        let lines = wrap(&text, 72);
        assert!(lines.len() > 1, "{lines:?}");
        assert!(lines[0].starts_with("  woken by: kcompactd0"), "{lines:?}");
        assert!(
            lines[1..].iter().all(|l| l.starts_with("    k")),
            "{lines:?}"
        );
        assert!(lines.iter().all(|l| l.len() <= 72), "{lines:?}");
        // Unindented text as before: continuation lines indented by 2.
        let plain = wrap(&"word ".repeat(30), 20);
        assert!(!plain[0].starts_with(' ') && plain[1].starts_with("  w"));
    }

    #[test]
    fn short_counts() {
        assert_eq!(fmt_count_short(812.0), "812");
        assert_eq!(fmt_count_short(25_600.0), "25.6k");
        assert_eq!(fmt_count_short(1_250_000.0), "1.25M");
        assert_eq!(fmt_rate_short(1_234_567.0), "1.2M");
        assert_eq!(pct(1, 4), "25.0");
        assert_eq!(pct(1, 0), "-");
    }
}
