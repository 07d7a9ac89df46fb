//! `--debug-probes`: the programs' rare events (probe-ebpf `rare`: an end
//! without its begin, a task given no storage cell, a full map, ...), one
//! line each, read from aya-log's ring buffer and made into lines for
//! stderr (`vmtrace: probe: NAME: COMM pid P tid T (what)`), bounded so
//! that a flood cannot fill stderr or hold up the collector, and so that
//! one counter's flood cannot hide another's line: at most `BURST` lines
//! of one counter at once and `PER_SECOND` a second after that, the
//! lines past that counted and said ("N more NAME lines suppressed").
//! Every event, logged or not, is in its counter in the recording.
//!
//! Without the flag nothing here exists: the logger is not made, the
//! ring buffer is one page, and the programs log nothing. With it the
//! ring holds `RING_BYTES` between two reads (each interval): lines that
//! find it full are lost in the kernel, their events still counted.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Instant,
};

use anyhow::{Context, Result};

use crate::model::format::printable;

/// aya-log-ebpf's ring buffer (its name in the eBPF object), and its
/// size with the flag (aya-log-ebpf's own is 128 KiB: ~500 lines, which
/// a flood of one counter filled between two reads here). A line that
/// finds the ring full is lost before it is read: counted, not logged.
pub(super) const RING: &str = "AYA_LOGS";
pub(super) const RING_BYTES: u32 = 1 << 20;

/// What every line starts with.
pub const PREFIX: &str = "vmtrace: probe: ";
/// Lines of one counter a second, after the first `BURST`.
pub const PER_SECOND: f64 = 5.0;
/// Lines of one counter that may come at once (a burst at attach: every
/// task that was inside a reclaim ends it without a begin).
pub const BURST: f64 = 20.0;

/// The lines come out of the kernel's ring buffer when the collector
/// reads (`take`), never on their own.
pub struct DebugLog {
    reader: aya_log::EbpfLogger<Sink>,
    lines: Arc<Mutex<Lines>>,
}

impl DebugLog {
    /// Takes the ring buffer out of the loaded object (before the
    /// programs load: they hold its fd from then on).
    pub fn init(ebpf: &mut aya::Ebpf) -> Result<DebugLog> {
        let lines = Arc::new(Mutex::new(Lines::new()));
        let reader = aya_log::EbpfLogger::init_with_logger(ebpf, Sink(lines.clone()))
            .context("--debug-probes: the eBPF object's log ring buffer")?;
        Ok(DebugLog { reader, lines })
    }

    /// The lines that came since the last call, as they should be
    /// printed (a note for those suppressed last).
    pub fn take(&mut self) -> Vec<String> {
        self.reader.flush();
        self.lines
            .lock()
            .map_or_else(|_| Vec::new(), |mut l| l.take())
    }

    /// The last lines, and one that sums up the run.
    pub fn finish(&mut self) -> Vec<String> {
        let mut out = self.take();
        if let Ok(l) = self.lines.lock() {
            out.push(l.summary());
        }
        out
    }
}

/// Where aya-log delivers the records (it calls `log` once per record).
struct Sink(Arc<Mutex<Lines>>);

impl log::Log for Sink {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }

    fn log(&self, record: &log::Record) {
        let text = record.args().to_string();
        if let Ok(mut l) = self.0.lock() {
            l.push(&text, Instant::now());
        }
    }

    fn flush(&self) {}
}

/// The lines held for the next `take`, and the bound on each counter's.
struct Lines {
    /// Per counter (the line's first word): its bound and the lines
    /// suppressed since the last `take`.
    counters: BTreeMap<String, (Bound, u64)>,
    pending: Vec<String>,
    shown: u64,
    suppressed: u64,
}

impl Lines {
    fn new() -> Lines {
        Lines {
            counters: BTreeMap::new(),
            pending: Vec::new(),
            shown: 0,
            suppressed: 0,
        }
    }

    /// One record's text: the command's NUL padding dropped, anything
    /// unprintable escaped.
    fn push(&mut self, text: &str, now: Instant) {
        let text = printable(&text.replace('\0', "")).into_owned();
        let counter = text.split_once(": ").map_or("", |(c, _)| c);
        let (bound, suppressed) = self
            .counters
            .entry(counter.to_string())
            .or_insert_with(|| (Bound::new(), 0));
        if bound.admit(now) {
            self.pending.push(format!("{PREFIX}{text}"));
            self.shown += 1;
        } else {
            *suppressed += 1;
            self.suppressed += 1;
        }
    }

    fn take(&mut self) -> Vec<String> {
        let mut out = std::mem::take(&mut self.pending);
        for (counter, (_, suppressed)) in &mut self.counters {
            let n = std::mem::take(suppressed);
            if n > 0 {
                out.push(format!(
                    "{PREFIX}{n} more {counter} lines suppressed \
                     (at most {PER_SECOND} a second)"
                ));
            }
        }
        out
    }

    fn summary(&self) -> String {
        format!(
            "{PREFIX}{} rare events logged, {} suppressed",
            self.shown, self.suppressed
        )
    }
}

/// A token bucket: `BURST` lines at once, refilled at `PER_SECOND`.
struct Bound {
    tokens: f64,
    last: Option<Instant>,
}

impl Bound {
    fn new() -> Bound {
        Bound {
            tokens: BURST,
            last: None,
        }
    }

    fn admit(&mut self, now: Instant) -> bool {
        let elapsed = self
            .last
            .map_or(0.0, |l| now.saturating_duration_since(l).as_secs_f64());
        self.last = Some(now);
        self.tokens = (self.tokens + elapsed * PER_SECOND).min(BURST);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const LINE: &str = "reclaim_end_unmatched: memhog\0\0\0 pid 7 tid 8 (not stamped)";

    #[test]
    fn a_line_is_prefixed_and_loses_the_nul_padding() {
        let mut l = Lines::new();
        l.push(LINE, Instant::now());
        l.push("x: a\u{1b}[2Jb pid 1 tid 1", Instant::now());
        let lines = l.take();
        assert_eq!(
            lines[0],
            "vmtrace: probe: reclaim_end_unmatched: memhog pid 7 tid 8 (not stamped)"
        );
        assert!(!lines[1].contains('\u{1b}'), "{}", lines[1]);
        assert!(l.take().is_empty());
    }

    /// A flood of one counter: its burst passes, then PER_SECOND a
    /// second; the rest is counted, said once per take and in the
    /// summary; another counter's line still gets through.
    #[test]
    fn a_flood_is_bounded_per_counter_and_what_was_suppressed_is_said() {
        let mut l = Lines::new();
        let t0 = Instant::now();
        for _ in 0..1000 {
            l.push(LINE, t0);
        }
        l.push("oom_records_dropped: a pid 1 tid 1", t0);
        let first = l.take();
        let burst = BURST as usize;
        assert_eq!(first.len(), burst + 2, "{first:?}");
        assert!(first.iter().any(|l| l.contains("oom_records_dropped: a")));
        let note = format!(
            "{PREFIX}{} more reclaim_end_unmatched lines suppressed (at most 5 a second)",
            1000 - burst
        );
        assert_eq!(first[burst + 1], note);
        // Ten seconds later, another 1000 at once: the bucket refilled
        // to its cap, no more.
        for _ in 0..1000 {
            l.push(LINE, t0 + Duration::from_secs(10));
        }
        assert_eq!(l.take().len(), burst + 1);
        // Two seconds on: 2 * PER_SECOND more.
        for _ in 0..50 {
            l.push(LINE, t0 + Duration::from_secs(12));
        }
        let two = l.take();
        assert_eq!(two.len(), 2 * PER_SECOND as usize + 1, "{two:?}");
        let shown = 2 * burst + 2 * PER_SECOND as usize + 1;
        assert_eq!(
            l.summary(),
            format!(
                "{PREFIX}{shown} rare events logged, {} suppressed",
                2051 - shown
            )
        );
    }

    #[test]
    fn a_trickle_is_never_suppressed() {
        let mut l = Lines::new();
        let t0 = Instant::now();
        for i in 0..10_000u64 {
            l.push(LINE, t0 + Duration::from_millis(i * 200));
        }
        assert_eq!(l.take().len(), 10_000);
        assert_eq!(l.suppressed, 0);
    }
}
