//! A sweep's comparisons (analysis::sweep) as text and JSON: one
//! sweep value's comparison is the plain one; several go under
//! headings, with the values not compared named.

use crate::analysis::sweep::Column;

/// Text: the plain comparison with one sweep value (or none); else
/// each sweep value's under a heading, and the values not compared.
pub fn render(columns: &[Column], skipped: &[String], detail: bool) -> String {
    if let ([one], []) = (columns, skipped) {
        return super::text::render(&one.comparison, detail);
    }
    let mut o = String::from(
        "the recordings hold a sweep: each value is compared on its own
(its runs only)
",
    );
    for c in columns {
        o.push_str(&format!(
            "
== {} ==
",
            c.sweep_value
        ));
        o.push_str(&super::text::render(&c.comparison, detail));
    }
    if !skipped.is_empty() {
        o.push_str(&format!(
            "
not compared (a group has no run of it): {}
",
            skipped.join(", ")
        ));
    }
    o
}
