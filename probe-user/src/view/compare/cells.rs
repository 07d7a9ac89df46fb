//! The cells every compare table writes: a group's letter, a value in
//! its unit, a change in percent and its significance mark (shared by
//! the local comparison, its CPU-inside-the-stalls section and the
//! fleet's).

use crate::analysis::{Change, Unit};
use crate::model::format::{fmt_count_short, fmt_secs};

pub(super) fn letter(i: usize) -> String {
    crate::model::format::group_letter(i).to_string()
}

pub(super) fn value(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Seconds => fmt_secs(v),
        Unit::Percent => format!("{v:.1}%"),
        Unit::Count | Unit::Pages | Unit::PerSecond => fmt_count_short(v),
    }
}

pub(super) fn pct(c: &Change) -> String {
    match c.pct {
        Some(p) if p.abs() >= 10.0 => format!("{p:+.0}%"),
        Some(p) => format!("{p:+.1}%"),
        None if c.diff == 0.0 => "0".into(),
        None => "new".into(),
    }
}

pub(super) fn mark(c: &Change) -> &'static str {
    match c.welch {
        Some(w) if w.p < 0.01 => "**",
        Some(w) if w.p < 0.05 => "*",
        Some(_) => "~",
        None => "",
    }
}
