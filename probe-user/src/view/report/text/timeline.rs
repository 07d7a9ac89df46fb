//! The time line of the text report: per step, rates over the step (at
//! most 20 rows: steps are merged on long runs). Its columns come from
//! three places, and a group line above the header says which: the whole
//! machine (/proc/vmstat pgscan/pgsteal/pswpout/pswpin, /proc/pressure/
//! memory), the target (the command's tasks: major faults and reclaim
//! stall as the probes saw them) and, with a memory box, the box's own
//! memory.pressure. A machine-wide psi% of 40 beside a target stall of
//! 608 ms in a second is two different populations, not a contradiction.

use crate::model::format::fmt_ns;
use std::fmt::{Result, Write as _};

use crate::model::{
    report::RunReport,
    sample::{Psi, Sample},
};

/// The table, when the run has at least two samples.
pub(super) fn timeline(o: &mut String, report: &RunReport) -> Result {
    let samples = &report.timeline;
    if samples.len() < 2 {
        return Ok(());
    }
    let with_box = samples.iter().any(|s| s.box_psi.is_some());
    let step = samples.len().div_ceil(20);
    writeln!(o)?;
    writeln!(
        o,
        "time line (per second over each step; psi% = PSI memory some, % of"
    )?;
    writeln!(
        o,
        "the step; stall = the target's reclaim stalls, summed over tasks)"
    )?;
    // Spans: machine = pgscan/s .. psi% (40 columns), target = majflt/s
    // .. stall (16), box = its psi% (4).
    write!(
        o,
        "{:9} {} {}",
        "",
        group("whole machine", 40),
        group("target", 16)
    )?;
    if with_box {
        write!(o, " {}", group("box", 4))?;
    }
    writeln!(o)?;
    write!(
        o,
        "  {:>7} {:>8} {:>8} {:>8} {:>8} {:>4} {:>8} {:>7}",
        "t", "pgscan/s", "steal/s", "swpout/s", "swpin/s", "psi%", "majflt/s", "stall"
    )?;
    if with_box {
        write!(o, " {:>4}", "psi%")?;
    }
    writeln!(o)?;
    let zero = Sample::default();
    let mut prev = &zero;
    for s in samples.iter().skip(step - 1).step_by(step).chain(
        // Always end with the last sample.
        samples
            .last()
            .filter(|_| !(samples.len() - step).is_multiple_of(step)),
    ) {
        step_row(o, prev, s, with_box)?;
        prev = s;
    }
    Ok(())
}

/// `label` centred in dashes over `width` columns: `--- target ---`.
fn group(label: &str, width: usize) -> String {
    let pad = width.saturating_sub(label.len() + 2);
    if pad < 2 {
        return format!("{label:>width$}");
    }
    let left = pad / 2;
    format!("{} {label} {}", "-".repeat(left), "-".repeat(pad - left))
}

/// The share of the step `p`..`s` in which some task stalled, in %.
/// `-` without PSI, and `?` for a share over 100% (never printed).
fn psi_pct(now: Option<Psi>, before: Option<Psi>, dt: f64) -> String {
    let Some(now) = now else {
        return "-".into();
    };
    let us = now
        .some_us
        .saturating_sub(before.unwrap_or_default().some_us);
    let pct = us as f64 / (dt * 1e4);
    if pct > 100.5 {
        "?".into()
    } else {
        format!("{pct:.0}")
    }
}

/// One row: the rates from `p` to `s`.
fn step_row(o: &mut String, p: &Sample, s: &Sample, with_box: bool) -> Result {
    let dt = (s.t_s - p.t_s).max(1e-9);
    let rate = |a: u64, b: u64| format!("{:.0}", a.saturating_sub(b) as f64 / dt);
    let stall =
        (s.memcg_stall_ns + s.direct_stall_ns).saturating_sub(p.memcg_stall_ns + p.direct_stall_ns);
    write!(
        o,
        "  {:>6.1}s {:>8} {:>8} {:>8} {:>8} {:>4} {:>8} {:>7}",
        s.t_s,
        rate(s.pgscan, p.pgscan),
        rate(s.pgsteal, p.pgsteal),
        rate(s.pswpout, p.pswpout),
        rate(s.pswpin, p.pswpin),
        psi_pct(s.psi, p.psi, dt),
        rate(s.major_faults_target, p.major_faults_target),
        fmt_ns(stall),
    )?;
    if with_box {
        write!(o, " {:>4}", psi_pct(s.box_psi, p.box_psi, dt))?;
    }
    writeln!(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t_s: f64, psi_us: u64, box_us: Option<u64>) -> Sample {
        Sample {
            t_s,
            pgscan: 123_456 * t_s as u64,
            psi: Some(Psi {
                some_us: psi_us,
                full_us: 0,
            }),
            box_psi: box_us.map(|some_us| Psi {
                some_us,
                full_us: 0,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn groups_label_the_machine_the_target_and_the_box_within_72_columns() {
        let mut report = RunReport {
            timeline: vec![
                sample(1.0, 400_000, Some(900_000)),
                sample(2.0, 500_000, Some(1_500_000)),
            ],
            ..Default::default()
        };
        let mut o = String::new();
        timeline(&mut o, &report).expect("write");
        assert!(o.lines().all(|l| l.len() <= 72), "{o}");
        assert!(o.contains("whole machine") && o.contains("target"), "{o}");
        // Box psi%: 90 then 60; machine: 40 then 10.
        let rows: Vec<&str> = o.lines().filter(|l| l.contains("s ")).collect();
        assert!(
            rows.iter()
                .any(|r| r.ends_with("  40        0       0   90")),
            "{o}"
        );
        assert!(
            rows.iter()
                .any(|r| r.ends_with("  10        0       0   60")),
            "{o}"
        );
        // The group line's "box" sits over the box column.
        let group_line = o
            .lines()
            .find(|l| l.contains("whole machine"))
            .expect("group");
        assert_eq!(group_line.len(), 72, "{group_line}");

        // Without a box: no box column, no box label.
        for s in &mut report.timeline {
            s.box_psi = None;
        }
        let mut o = String::new();
        timeline(&mut o, &report).expect("write");
        assert!(!o.contains("box"), "{o}");
    }

    #[test]
    fn a_share_over_100_percent_is_not_printed() {
        let before = Some(Psi {
            some_us: 0,
            full_us: 0,
        });
        let now = Some(Psi {
            some_us: 3_000_000,
            full_us: 0,
        });
        assert_eq!(psi_pct(now, before, 1.0), "?");
        assert_eq!(psi_pct(now, before, 4.0), "75");
        assert_eq!(psi_pct(None, before, 1.0), "-");
    }
}
