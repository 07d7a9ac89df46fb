//! The OOM reaper's section: how many victims the oom_reaper kthread
//! was woken for, how many of its attempts reaped or were skipped, and
//! how long each reaping pass took. It prints nothing where the reaper
//! was not traced (older recordings) or did nothing in the window.

use std::fmt::{Result, Write as _};

use super::hist::write_hist;
use crate::model::{
    format::{fmt_ns, write_wrapped},
    report::RunReport,
};

/// The reaper's counts and its reap-time histogram (all tasks).
pub(super) fn reaper(o: &mut String, report: &RunReport) -> Result {
    let Some(r) = &report.oom_reaper else {
        return Ok(());
    };
    let victims = report.oom_victims.as_ref().map_or(0, Vec::len);
    if r.wakeups + r.reaps + r.skips == 0 && victims == 0 {
        return Ok(());
    }
    writeln!(o)?;
    writeln!(
        o,
        "OOM reaper (all tasks): oom:wake_reaper, oom:*_task_reaping"
    )?;
    writeln!(
        o,
        "  woken for {} victims; {} passes reaped, taking {}; {} skipped",
        r.wakeups,
        r.reaps,
        fmt_ns(r.reap_time.total_ns),
        r.skips
    )?;
    write_wrapped(
        o,
        "  (a victim is queued 2 s after its kill, and only if it has not \
         freed its memory by then; skipped: its mmap lock was busy, \
         retried, or its mm was gone)",
    )?;
    if r.reap_time.count > 0 {
        write_hist(o, &r.reap_time)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{histogram::summarize, report::OomReaperReport};
    use vmtrace_common::hist::{BUCKETS, bucket_of};

    fn with(wakeups: u64, reaps_ns: &[u64], skips: u64) -> RunReport {
        let mut counts = vec![0; BUCKETS];
        for &d in reaps_ns {
            counts[bucket_of(d)] += 1;
        }
        RunReport {
            oom_reaper: Some(OomReaperReport {
                wakeups,
                reaps: reaps_ns.len() as u64,
                skips,
                reap_time: summarize(&counts),
            }),
            ..RunReport::default()
        }
    }

    /// A reaped victim: the counts, the source and the histogram, in
    /// lines a mail keeps; nothing when the reaper did nothing.
    #[test]
    fn the_reaper_section_names_its_source_and_fits_a_mail() {
        let mut o = String::new();
        reaper(&mut o, &with(1, &[3_000_000], 1)).expect("write");
        assert!(o.contains("oom:wake_reaper"), "{o}");
        assert!(o.contains("woken for 1 victims; 1 passes reaped"), "{o}");
        assert!(o.contains("; 1 skipped"), "{o}");
        assert!(o.lines().all(|l| l.len() <= 72 && l.is_ascii()), "{o}");

        let mut none = String::new();
        reaper(&mut none, &with(0, &[], 0)).expect("write");
        assert_eq!(none, "");
        reaper(&mut none, &RunReport::default()).expect("write");
        assert_eq!(none, "");
    }
}
