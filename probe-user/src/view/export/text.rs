//! Mail-ready text: what a patch author pastes under "Results:". The
//! recording's header (machine, kernel, VM settings, workload), each run's
//! report and the runs table; ASCII only, at most 72 columns, no tabs,
//! whatever the recording holds (process names, paths, command lines).

use std::fmt::Write as _;

use crate::{
    model::format::{human, wrap},
    model::recording::Recording,
    view::report::{self, RunsTable},
};

/// The widest line mail-ready text may have.
pub const WIDTH: usize = 72;

/// The whole recording as mail-ready text.
pub fn render(rec: &Recording) -> String {
    let mut o = header(rec);
    let several = rec.runs.len() > 1;
    for (i, run) in rec.runs.iter().enumerate() {
        if several {
            let label = if run.label.is_empty() {
                String::new()
            } else {
                format!(" ({})", run.label)
            };
            let _ = writeln!(o, "=== run {} of {}{label} ===", i + 1, rec.runs.len());
        }
        o.push_str(&report::to_text(&run.report));
        o.push('\n');
    }
    if several {
        o.push_str(&RunsTable::of_recording(rec).to_text());
    }
    mail_safe(&o)
}

/// Where and how the recording was made, in a few lines.
pub fn header(rec: &Recording) -> String {
    let e = &rec.environment;
    let mut lines = Vec::new();
    if !rec.complete {
        lines.push(format!(
            "INCOMPLETE RECORDING: {}",
            rec.incomplete_reason.as_deref().unwrap_or("reason unknown")
        ));
    }
    let mut workload = format!(
        "workload: {} {}",
        rec.workload.name,
        rec.workload.arguments.join(" ")
    );
    if let Some(seed) = rec.workload.seed {
        let _ = write!(workload, " (seed {seed})");
    }
    lines.push(workload);
    lines.push(format!(
        "machine: {}, {} x {}, {} RAM",
        e.hostname,
        e.cpus,
        e.cpu_model,
        human(e.mem_total_bytes)
    ));
    lines.push(format!("kernel: {}", e.kernel_version));
    lines.push(format!("cmdline: {}", e.boot_cmdline));
    let swap = if e.swap_devices.is_empty() {
        "none besides vmtrace's".to_string()
    } else {
        e.swap_devices
            .iter()
            .map(|d| format!("{} ({}, {})", d.name, d.kind, human(d.size_bytes)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    lines.push(format!("swap devices: {swap}"));
    let sysctls: Vec<String> = e
        .vm_sysctls
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    lines.push(format!("vm: {}", sysctls.join(" ")));
    let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "n/a".into());
    lines.push(format!(
        "THP {} (defrag {}), zswap {} ({}), MGLRU {}",
        opt(&e.thp_enabled),
        opt(&e.thp_defrag),
        opt(&e.zswap_enabled),
        opt(&e.zswap_compressor),
        opt(&e.mglru)
    ));
    if let Some(g) = &e.guest_storage {
        lines.push(format!("guest files: {g}"));
    }
    lines.push(format!(
        "recorded {} by vmtrace {} (format {})",
        rec.created_utc, rec.vmtrace_version, rec.format_version
    ));
    let mut o = String::new();
    for l in lines {
        for w in wrap(&l, WIDTH) {
            o.push_str(&w);
            o.push('\n');
        }
    }
    o.push('\n');
    o
}

/// ASCII only (anything else becomes `?`), tabs expanded, lines longer
/// than `WIDTH` wrapped (a long process name or path, say).
pub fn mail_safe(text: &str) -> String {
    let mut o = String::with_capacity(text.len());
    for line in text.lines() {
        let mut clean = String::with_capacity(line.len());
        for c in line.chars() {
            match c {
                '\t' => {
                    let pad = 8 - clean.len() % 8;
                    clean.extend(std::iter::repeat_n(' ', pad));
                }
                ' '..='~' => clean.push(c),
                _ => clean.push('?'),
            }
        }
        let clean = clean.trim_end();
        if clean.len() <= WIDTH {
            o.push_str(clean);
            o.push('\n');
            continue;
        }
        for w in wrap(clean, WIDTH) {
            // A single word longer than the width: cut it.
            let mut rest = w.as_str();
            while rest.len() > WIDTH {
                let (head, tail) = rest.split_at(WIDTH);
                o.push_str(head);
                o.push('\n');
                rest = tail;
            }
            o.push_str(rest);
            o.push('\n');
        }
    }
    o
}

/// Lines that break the mail rules, as (line number, why): the check the
/// tests run on real recordings.
pub fn violations(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            if l.len() > WIDTH {
                Some((i + 1, format!("{} columns", l.len())))
            } else if l.contains('\t') {
                Some((i + 1, "a tab".into()))
            } else if !l.is_ascii() || l.chars().any(|c| c.is_ascii_control()) {
                Some((i + 1, "a non-ASCII or control character".into()))
            } else {
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mail_safe_fixes_everything() {
        let long = format!("comm: {}", "x".repeat(150));
        let text = format!(
            "ok\n\tb\u{e9}t\u{e4}\n{long}\nkernel: a very long line {}\n",
            "word ".repeat(30)
        );
        let safe = mail_safe(&text);
        assert!(violations(&text).len() >= 3);
        assert_eq!(violations(&safe), vec![]);
        assert!(safe.contains("        b?t?"));
    }
}
