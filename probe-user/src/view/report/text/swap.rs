//! The swap sections of the text report: folios written out by reclaim,
//! and swap I/O from issue to completion.

use std::fmt::{Result, Write as _};

use super::hist::write_hist;
use crate::{model::report::RunReport, view::format::human};

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

/// Swap writes and reads: requests, bytes and the latency histogram.
pub(super) fn swap_io(o: &mut String, report: &RunReport) -> Result {
    let Some(io) = &report.swap_io else {
        return Ok(());
    };
    writeln!(o)?;
    if io.areas.is_empty() {
        return writeln!(o, "swap I/O: no swap area was active");
    }
    for (title, s, bytes) in [
        ("swap writes", &io.write, io.write_bytes),
        ("swap reads", &io.read, io.read_bytes),
    ] {
        writeln!(
            o,
            "{title}: {} requests, {}, issue to completion",
            s.count,
            human(bytes)
        )?;
        if s.count > 0 {
            write_hist(o, s)?;
        }
    }
    if io.truncated {
        writeln!(o, "  (swap areas too fragmented: some requests missed)")?;
    }
    Ok(())
}
