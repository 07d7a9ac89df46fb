//! The swap sections of the text report: folios written out by reclaim,
//! where the swapped pages went (the swap device, zswap, the zero map),
//! and swap I/O from issue to completion, or why it could not be timed.

use std::fmt::{Result, Write as _};

use super::{causes::count, hist::write_hist};
use crate::{
    model::format::{fmt_thousands, human, write_wrapped},
    model::{
        histogram::Summary,
        report::{RunReport, SwapCauses},
    },
};

/// Anon folios swapped out and file folios written back by reclaim.
pub(super) fn swap_out(o: &mut String, report: &RunReport) -> Result {
    let Some(w) = &report.swap_out else {
        return Ok(());
    };
    writeln!(o)?;
    writeln!(
        o,
        "swap-out: {} anon folios written by reclaim (pswpout {})",
        w.anon_folios, report.vmstat.pswpout
    )?;
    writeln!(o, "file writeback by reclaim: {} folios", w.file_folios)
}

/// Where swapped-out pages went and where swap-ins came from, when any
/// page was swapped: the swap device, zswap (with its writebacks and
/// pool), the zero map.
pub(super) fn destinations(o: &mut String, report: &RunReport) -> Result {
    let Some(c) = &report.swap_causes else {
        return Ok(());
    };
    let (device, zswap, zero) = c.swapout_destinations();
    let out = device.unwrap_or(0) + zswap.unwrap_or(0) + zero.unwrap_or(0);
    if out + c.swapin_pages().unwrap_or(0) == 0 {
        return Ok(());
    }
    writeln!(o)?;
    writeln!(o, "where swap went (pages, /proc/vmstat)")?;
    let row = |o: &mut String, what: &str, a: Option<u64>, b: Option<u64>, src: &str| {
        writeln!(o, "  {what:<16} {:>12} {:>12}   {src}", count(a), count(b))
    };
    writeln!(o, "  {:<16} {:>12} {:>12}", "", "out", "in")?;
    row(o, "swap device", device, c.pswpin, "pswpout-zswpwb, pswpin")?;
    row(o, "zswap", zswap, c.zswpin, "zswpout, zswpin")?;
    row(o, "zero map", zero, c.swpin_zero, "swpout_zero, swpin_zero")?;
    if c.zswap_enabled.is_some() || c.zswap_active() {
        write_wrapped(o, &zswap_line(c))?;
    }
    Ok(())
}

/// `zswap: on; 1,234 written back to the swap device (zswpwb); ...`.
fn zswap_line(c: &SwapCauses) -> String {
    let on = match c.zswap_enabled {
        Some(true) => "on",
        Some(false) => "off at the end",
        None => "state unknown",
    };
    let mut line = format!(
        "  zswap {on}; {} written back to the swap device (zswpwb)",
        count(c.zswpwb)
    );
    if let (Some(pool), Some(held)) = (c.zswap_pool_bytes, c.zswapped_bytes) {
        let _ = write!(
            line,
            "; pool at the end {} holding {} (/proc/meminfo)",
            human(pool),
            human(held)
        );
    }
    line
}

/// Swap writes and reads: requests, bytes and the latency histogram;
/// or why the swap device's I/O could not be timed.
pub(super) fn swap_io(o: &mut String, report: &RunReport) -> Result {
    let Some(io) = &report.swap_io else {
        return Ok(());
    };
    writeln!(o)?;
    let causes = report.swap_causes.as_ref();
    if io.areas.is_empty() {
        if let Some(c) = causes.filter(|c| !c.swap_areas.is_empty()) {
            writeln!(
                o,
                "swap I/O: not timed (the areas' disk ranges are unknown)"
            )?;
            return untimeable_areas(o, c, &io.areas);
        }
        return writeln!(o, "swap I/O: no swap area was active");
    }
    let (zswpout, zswpin) =
        causes.map_or((0, 0), |c| (c.zswpout.unwrap_or(0), c.zswpin.unwrap_or(0)));
    for (title, s, bytes, zswap, counter) in [
        ("swap writes", &io.write, io.write_bytes, zswpout, "zswpout"),
        ("swap reads", &io.read, io.read_bytes, zswpin, "zswpin"),
    ] {
        io_line(o, title, s, bytes, (zswap, counter))?;
    }
    if io.truncated {
        writeln!(o, "  (swap areas too fragmented: some requests missed)")?;
    }
    match causes {
        Some(c) => untimeable_areas(o, c, &io.areas),
        None => Ok(()),
    }
}

/// One direction's requests, or that zswap absorbed them.
fn io_line(
    o: &mut String,
    title: &str,
    s: &Summary,
    bytes: u64,
    (zswap, counter): (u64, &str),
) -> Result {
    if s.count == 0 && zswap > 0 {
        return write_wrapped(
            o,
            &format!(
                "{title}: none on the swap device: zswap served {} pages \
                 ({counter}), in memory, without block I/O",
                fmt_thousands(zswap)
            ),
        );
    }
    writeln!(
        o,
        "{title}: {} requests, {}, issue to completion",
        s.count,
        human(bytes)
    )?;
    if s.count > 0 {
        write_hist(o, s)?;
    }
    Ok(())
}

/// The active swap areas whose block I/O could not be timed, and why.
fn untimeable_areas(o: &mut String, c: &SwapCauses, timed: &[String]) -> Result {
    for a in &c.swap_areas {
        let why = match a.untimeable() {
            Some(why) => why,
            None if !timed.contains(&a.path) => "its disk ranges could not be read",
            None => continue,
        };
        write_wrapped(o, &format!("  {} not timed: {why}", a.path))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{report::SwapIoReport, vmstat::VmStat};

    #[test]
    fn zswap_run_says_where_the_pages_went() {
        let d = VmStat::parse(
            "pgmajfault 5\npswpin 0\npswpout 0\nzswpin 180000\nzswpout 229465\n\
             zswpwb 0\nswap_ra 0\nswpin_zero 0\nswpout_zero 12\n",
        );
        let mut c = SwapCauses::from_delta(&d);
        c.zswap_enabled = Some(true);
        let report = RunReport {
            swap_causes: Some(c),
            swap_io: Some(SwapIoReport {
                areas: vec!["/swapfile".into()],
                truncated: false,
                write: crate::model::histogram::summarize(&[]),
                write_bytes: 0,
                read: crate::model::histogram::summarize(&[]),
                read_bytes: 0,
            }),
            ..Default::default()
        };
        let mut o = String::new();
        destinations(&mut o, &report).expect("write");
        swap_io(&mut o, &report).expect("write");
        assert!(
            o.contains("zswap                 229,465      180,000"),
            "{o}"
        );
        assert!(o.contains("swap writes: none on the swap device"), "{o}");
        assert!(!o.contains("0 requests"), "{o}");
        for l in o.lines() {
            assert!(l.is_ascii() && l.len() <= 72, "{l:?}");
        }
    }
}
