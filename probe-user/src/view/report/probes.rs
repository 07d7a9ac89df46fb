//! `vmtrace probes` as text: one block per metric (available or why
//! not, its hooks), at most 72 columns.

use crate::model::format::wrap;
use std::fmt::Write as _;

use crate::model::probes::Listed;

/// `vmtrace probes` as text: one block per metric, 72 columns.
pub fn probes_text(kernel_release: &str, listed: &[Listed]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "vmtrace probes on Linux {kernel_release}");
    for m in listed {
        let status = match (&m.reason, m.opt_in.as_deref()) {
            (Some(_), _) => "UNAVAILABLE".to_string(),
            (None, Some(flag)) => format!("available ({flag})"),
            (None, None) => "available".to_string(),
        };
        let head = format!("{} ({})", m.id, m.title);
        let _ = writeln!(o);
        if head.len() + 1 + status.len() <= 72 {
            let _ = writeln!(o, "{head:<width$} {status}", width = 71 - status.len());
        } else {
            let _ = writeln!(o, "{head}");
            let _ = writeln!(o, "{status:>72}");
        }
        for h in &m.hooks {
            let _ = writeln!(o, "  {h}");
        }
        if let Some(r) = &m.reason {
            for line in wrap(&format!("  why: {r}"), 72) {
                let _ = writeln!(o, "{line}");
            }
        }
    }
    o
}
