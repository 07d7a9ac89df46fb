//! The time line of the text report: per step, rates over the step (at
//! most 20 rows: steps are merged on long runs), stall time and PSI.

use crate::view::format::fmt_ns;
use std::fmt::{Result, Write as _};

use crate::model::{report::RunReport, sample::Sample};

/// The table, when the run has at least two samples.
pub(super) fn timeline(o: &mut String, report: &RunReport) -> Result {
    let samples = &report.timeline;
    if samples.len() < 2 {
        return Ok(());
    }
    let step = samples.len().div_ceil(20);
    writeln!(o)?;
    writeln!(
        o,
        "time line (per second over each step; stall = reclaim stall time)"
    )?;
    writeln!(
        o,
        "  {:>7} {:>9} {:>9} {:>8} {:>8} {:>8} {:>7} {:>5}",
        "t", "pgscan/s", "steal/s", "swpout/s", "swpin/s", "majflt/s", "stall", "psi%"
    )?;
    let zero = Sample::default();
    let mut prev = &zero;
    for s in samples.iter().skip(step - 1).step_by(step).chain(
        // Always end with the last sample.
        samples
            .last()
            .filter(|_| !(samples.len() - step).is_multiple_of(step)),
    ) {
        step_row(o, prev, s)?;
        prev = s;
    }
    Ok(())
}

/// One row: the rates from `p` to `s`.
fn step_row(o: &mut String, p: &Sample, s: &Sample) -> Result {
    let dt = (s.t_s - p.t_s).max(1e-9);
    let rate = |a: u64, b: u64| format!("{:.0}", a.saturating_sub(b) as f64 / dt);
    let stall =
        (s.memcg_stall_ns + s.direct_stall_ns).saturating_sub(p.memcg_stall_ns + p.direct_stall_ns);
    let psi = match (s.psi, p.psi) {
        (Some(a), Some(b)) => format!(
            "{:.0}",
            a.some_us.saturating_sub(b.some_us) as f64 / (dt * 1e4)
        ),
        (Some(a), None) => format!("{:.0}", a.some_us as f64 / (dt * 1e4)),
        _ => "-".into(),
    };
    writeln!(
        o,
        "  {:>6.1}s {:>9} {:>9} {:>8} {:>8} {:>8} {:>7} {:>5}",
        s.t_s,
        rate(s.pgscan, p.pgscan),
        rate(s.pgsteal, p.pgsteal),
        rate(s.pswpout, p.pswpout),
        rate(s.pswpin, p.pswpin),
        rate(s.major_faults_target, p.major_faults_target),
        fmt_ns(stall),
        psi
    )
}
