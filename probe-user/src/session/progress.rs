//! Progress on stderr while a command runs or an attach traces: the mode
//! (`--progress`), the line of the last time-series step (elapsed, rates,
//! box memory), and how it is shown: rewritten in place on a terminal, or
//! printed as plain lines.

use crate::model::format::fmt_rate_short;
use std::time::Duration;

use crate::model::sample;

/// Progress while the command runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Progress {
    /// None at all.
    Quiet,
    /// One status line, rewritten in place every sample (a terminal).
    Tty,
    /// A plain line this often (logs, CI).
    Plain(Duration),
}

impl Progress {
    /// What `--progress MODE` means here: `auto` is a status line on a
    /// terminal and a plain line every 10 s otherwise.
    pub fn from_mode(mode: &str, stderr_is_tty: bool) -> Progress {
        match mode {
            "none" => Progress::Quiet,
            "tty" => Progress::Tty,
            "plain" => Progress::Plain(Duration::from_secs(10)),
            _ if stderr_is_tty => Progress::Tty,
            _ => Progress::Plain(Duration::from_secs(10)),
        }
    }

    /// The status line of these samples, rewritten in place (terminal
    /// only).
    pub(crate) fn show_status(self, samples: &[sample::Sample]) {
        if self == Progress::Tty
            && let Some(line) = progress_line(samples)
        {
            let mut line = line;
            line.truncate(terminal_width().saturating_sub(1));
            eprint!("\r\x1b[K{line}");
        }
    }

    /// Erases the status line before anything else is printed.
    pub(crate) fn clear_status(self) {
        if self == Progress::Tty {
            eprint!("\r\x1b[K");
        }
    }
}

/// The progress line of these samples as a line of its own.
pub(crate) fn print_progress(samples: &[sample::Sample]) {
    if let Some(line) = progress_line(samples) {
        eprintln!("vmtrace: {line}");
    }
}

/// What the columns of the progress lines are.
pub const PROGRESS_HEADER: &str = "elapsed, then rates over the last step: all faults, major faults of the \
     target, its reclaims, swap-outs and swap-ins (pages), box memory";

/// The progress line of the last step: elapsed, rates over the step
/// and the box's memory.
pub fn progress_line(samples: &[sample::Sample]) -> Option<String> {
    let s = samples.last()?;
    let prev = samples.len().checked_sub(2).map(|i| &samples[i]);
    let dt = (s.t_s - prev.map_or(0.0, |p| p.t_s)).max(1e-3);
    let rate = |now: u64, before: fn(&sample::Sample) -> u64| {
        let d = now.saturating_sub(prev.map_or(0, before));
        fmt_rate_short(d as f64 / dt)
    };
    let mem = s.box_bytes.map_or(String::new(), |b| {
        format!(" box {}", crate::model::units::human(b))
    });
    Some(format!(
        "{:>4.0}s flt/s {} majflt/s {} reclaim/s {} swpout/s {} swpin/s {}{mem}",
        s.t_s,
        rate(s.pgfault, |p| p.pgfault),
        rate(s.major_faults_target, |p| p.major_faults_target),
        rate(s.memcg_reclaims + s.direct_reclaims, |p| p.memcg_reclaims
            + p.direct_reclaims),
        rate(s.pswpout, |p| p.pswpout),
        rate(s.pswpin, |p| p.pswpin),
    ))
}

/// Columns of the terminal on stderr (80 when unknown).
fn terminal_width() -> usize {
    match terminal_size::terminal_size_of(std::io::stderr()) {
        Some((terminal_size::Width(w), _)) if w > 0 => usize::from(w),
        _ => 80,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_line_shows_rates_of_the_last_step() {
        assert_eq!(progress_line(&[]), None);
        let a = sample::Sample {
            t_s: 1.0,
            pgfault: 1000,
            pswpout: 10,
            ..Default::default()
        };
        let b = sample::Sample {
            t_s: 3.0,
            pgfault: 2_001_000,
            memcg_reclaims: 400,
            pswpout: 30_010,
            box_bytes: Some(256 << 20),
            ..Default::default()
        };
        let line = progress_line(&[a, b]).expect("a line");
        assert_eq!(
            line,
            "   3s flt/s 1.0M majflt/s 0 reclaim/s 200 swpout/s 15k swpin/s 0 box 256 MiB"
        );
        assert!(line.len() < 80);
    }

    #[test]
    fn progress_modes() {
        assert_eq!(Progress::from_mode("auto", true), Progress::Tty);
        assert_eq!(
            Progress::from_mode("auto", false),
            Progress::Plain(Duration::from_secs(10))
        );
        assert_eq!(Progress::from_mode("none", true), Progress::Quiet);
        assert_eq!(Progress::from_mode("tty", false), Progress::Tty);
    }
}
