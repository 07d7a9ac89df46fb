//! The memory box's own pressure and events, under the run's outcome:
//! the PSI totals of the box's cgroup (memory.pressure, not the
//! machine's /proc/pressure/memory) as seconds and as a share of the
//! run's wall time, and the memory cgroup's event counters by the names
//! of the file they come from (v2 memory.events; v1 failcnt and
//! oom_control). What each counts is said at `BoxReport` (model), from
//! kernel/sched/psi.c and mm/memcontrol.c.

use std::fmt::{Result, Write as _};

use crate::{
    model::format::{fmt_ns, pct, wrap},
    model::report::{BoxReport, RunReport},
};

/// v2 events always shown (in this order), then any other non-zero one.
const MAIN_EVENTS: &[&str] = &["max", "high", "oom", "oom_kill"];

/// `pressure:` and `events:` lines; nothing without a box or values.
pub(super) fn box_counters(o: &mut String, report: &RunReport) -> Result {
    let Some(b) = &report.membox else {
        return Ok(());
    };
    if let Some(text) = pressure_text(b, report.usage.wall_s) {
        labelled(o, "pressure:", &text)?;
    }
    if let Some(text) = events_text(b) {
        labelled(o, "events:", &text)?;
    }
    if let Some(text) = job_pressure_text(b) {
        labelled(o, "waits:", &text)?;
    }
    Ok(())
}

/// `CPU some 1.2s full 1.2s, I/O some 3.4s full 3.0s (the job's cgroup's
/// cpu.pressure and io.pressure)`: the kernel's PSI reading of the job's
/// runnable and I/O-wait time, beside vmtrace's own.
fn job_pressure_text(b: &BoxReport) -> Option<String> {
    let part = |what: &str, p: Option<crate::model::sample::Psi>| {
        p.map(|p| {
            format!(
                "{what} some {} full {}",
                fmt_ns(p.some_us * 1000),
                fmt_ns(p.full_us * 1000)
            )
        })
    };
    let parts: Vec<String> = [part("CPU", b.cpu_pressure), part("I/O", b.io_pressure)]
        .into_iter()
        .flatten()
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "job PSI {} (the job's cgroup's cpu.pressure and io.pressure)",
            parts.join(", ")
        )
    })
}

/// `label` in the outcome's 10 columns, then `text` wrapped at 72 with
/// continuation lines under it (indented 2 more).
fn labelled(o: &mut String, label: &str, text: &str) -> Result {
    for (i, line) in wrap(&format!("{:10}{text}", ""), 72).iter().enumerate() {
        if i == 0 {
            writeln!(o, "{label:10}{}", line.trim_start())?;
        } else {
            writeln!(o, "{line}")?;
        }
    }
    Ok(())
}

/// `box PSI some 3.2s (26.1% of the run), full 2.9s (23.6%), from the
/// box's memory.pressure, not the machine's: ...` (what PSI's total is).
fn pressure_text(b: &BoxReport, wall_s: f64) -> Option<String> {
    let p = b.pressure?;
    let wall_us = (wall_s * 1e6) as u64;
    // A cgroup's `some` cannot exceed the time its tasks lived: a share
    // over 100% (half a percent for the reads' spacing) is not printed.
    let share = |us: u64| -> String {
        if wall_us == 0 || us as f64 > wall_us as f64 * 1.005 {
            "longer than the run: not a share".into()
        } else {
            format!("{}%", pct(us, wall_us))
        }
    };
    let mut line = format!(
        "box PSI some {} ({} of the run), full {} ({})",
        fmt_ns(p.some_us * 1000),
        share(p.some_us),
        fmt_ns(p.full_us * 1000),
        share(p.full_us)
    );
    line.push_str(
        ", from the box's memory.pressure, not the machine's: per-CPU \
         stall time weighted by each CPU's busy time, not a sum of the \
         tasks' stalls",
    );
    Some(line)
}

/// `box max 1234, high 0, oom 0, oom_kill 0 (memory.events)`.
fn events_text(b: &BoxReport) -> Option<String> {
    if b.events.is_empty() {
        return None;
    }
    let mut shown: Vec<String> = Vec::new();
    let v2 = b.events.contains_key("max");
    if v2 {
        for k in MAIN_EVENTS {
            if let Some(v) = b.events.get(*k) {
                shown.push(format!("{k} {v}"));
            }
        }
        for (k, v) in &b.events {
            if *v > 0 && !MAIN_EVENTS.contains(&k.as_str()) {
                shown.push(format!("{k} {v}"));
            }
        }
    } else {
        for k in ["failcnt", "memsw.failcnt", "oom_kill"] {
            if let Some(v) = b.events.get(k) {
                shown.push(format!("{k} {v}"));
            }
        }
    }
    let mut line = format!("box {}", shown.join(", "));
    if let Some(src) = &b.events_source {
        let _ = write!(line, " ({src})");
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sample::Psi;

    fn report(b: BoxReport, wall_s: f64) -> RunReport {
        let mut r = RunReport {
            membox: Some(b),
            ..Default::default()
        };
        r.usage.wall_s = wall_s;
        r
    }

    #[test]
    fn pressure_and_v2_events_name_their_files() {
        let b = BoxReport {
            pressure: Some(Psi {
                some_us: 3_210_000,
                full_us: 2_900_000,
            }),
            events: [
                ("max", 1234),
                ("high", 0),
                ("oom", 1),
                ("oom_kill", 1),
                ("low", 0),
            ]
            .map(|(k, v)| (k.to_string(), v))
            .into_iter()
            .collect(),
            events_source: Some("memory.events".into()),
            ..Default::default()
        };
        let mut o = String::new();
        box_counters(&mut o, &report(b, 12.3)).expect("write");
        assert!(o.lines().all(|l| l.len() <= 72 && l.is_ascii()), "{o}");
        assert!(
            o.contains("box PSI some 3.2s (26.1% of the run), full 2.9s (23.6%)"),
            "{o}"
        );
        assert!(o.contains("memory.pressure"), "{o}");
        // Aligned with the outcome's `time:     ` lines; wrapped under.
        assert!(o.starts_with("pressure: box PSI some"), "{o}");
        assert!(o.contains("\nevents:   box max"), "{o}");
        assert!(o.contains("\n            "), "{o}");
        assert!(
            o.contains("box max 1234, high 0, oom 1, oom_kill 1 (memory.events)"),
            "{o}"
        );
    }

    #[test]
    fn v1_events_and_an_implausible_share() {
        let b = BoxReport {
            pressure: Some(Psi {
                some_us: 5_000_000,
                full_us: 0,
            }),
            events: [("failcnt", 77), ("oom_kill", 0)]
                .map(|(k, v)| (k.to_string(), v))
                .into_iter()
                .collect(),
            ..Default::default()
        };
        let mut o = String::new();
        box_counters(&mut o, &report(b, 2.0)).expect("write");
        assert!(o.contains("longer than the run: not a share"), "{o}");
        assert!(!o.contains("250"), "{o}");
        assert!(o.contains("box failcnt 77, oom_kill 0"), "{o}");
        // No box: nothing.
        let mut o = String::new();
        box_counters(&mut o, &RunReport::default()).expect("write");
        assert!(o.is_empty());
    }
}
