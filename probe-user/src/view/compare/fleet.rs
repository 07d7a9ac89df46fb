//! `compare --prometheus` as text: the fleet's two groups of hosts, the
//! verdict on reclaim stall time per second, each rate's means per host
//! and change, the rows that need a local recording (absent, not 0),
//! the mechanisms the rates support and what the fleet cannot vouch
//! for. ASCII within 72 columns, the local compare's cells and marks.

use std::fmt::Write as _;

use super::cells::{letter, mark, pct, value};
use crate::analysis::Verdict;
use crate::analysis::fleet::{Cause, Caveat, Fleet, Rate, Row};
use crate::model::format::{fmt_secs, wrap};
use crate::model::units::human;

const NAME: usize = 24;

/// What the local compare shows and a fleet cannot: they need the job's
/// own recording.
const ABSENT: &str = "absent here (they need a local recording): elapsed time, \
the time budget (where the time went), where reclaim was entered, CPU inside \
the stalls";

pub fn render(f: &Fleet) -> String {
    let mut lines = vec![
        format!(
            "vmtrace compare: 2 groups of hosts from Prometheus at {}",
            f.query.url
        ),
        format!(
            "window: {} ending {}; {}",
            f.query.window,
            f.query.at.as_deref().unwrap_or("now"),
            match &f.query.cgroup {
                Some(c) => format!("cgroup {c}"),
                None => "the exporters' targets".into(),
            }
        ),
        "significance: Welch's t-test across hosts (one host one sample): \
         * p < 0.05, ** p < 0.01, ~ within noise"
            .into(),
    ];
    for (i, g) in f.groups.iter().enumerate() {
        let mut s = format!(
            "{} = {}: {} host{}",
            letter(i),
            g.matcher,
            g.hosts.len(),
            if g.hosts.len() == 1 { "" } else { "s" }
        );
        if i == 0 {
            s.push_str(" (baseline)");
        }
        lines.push(s);
        if !g.missing.is_empty() {
            lines.push(format!(
                "WARNING: {}: {} selected without vmtrace's series in the \
                 window (left out): {}",
                letter(i),
                g.missing.len(),
                g.missing.join(", ")
            ));
        }
        if !g.reset.is_empty() {
            lines.push(format!(
                "WARNING: {}: counters reset in the window (vmtrace \
                 restarted; rates corrected by Prometheus): {}",
                letter(i),
                g.reset.join(", ")
            ));
        }
    }
    lines.extend(f.caveats.iter().map(caveat));
    let mut o = String::new();
    push(&mut o, &lines);
    let _ = writeln!(o);
    write_verdict(&mut o, f);
    let _ = writeln!(o);
    write_rows(&mut o, &f.rows);
    push(&mut o, &[ABSENT.to_string()]);
    write_causes(&mut o, f);
    o
}

fn push(o: &mut String, lines: &[String]) {
    for l in lines {
        for w in wrap(l, 72) {
            let _ = writeln!(o, "{w}");
        }
    }
}

fn caveat(c: &Caveat) -> String {
    match c {
        Caveat::UnequalGroups { a, b } => {
            format!("WARNING: groups of unequal size: A {a} hosts, B {b}")
        }
        Caveat::TooFewHosts { group, hosts } => format!(
            "WARNING: {} has {hosts} host{}: significance cannot be judged; \
             at least 2 per group are needed",
            letter(*group),
            if *hosts == 1 { "" } else { "s" }
        ),
        Caveat::HostsNeeded { per_group } => format!(
            "a change of this size would be told from noise with about \
             {per_group} hosts per group (80% power, p < 0.05)"
        ),
        Caveat::MemoryDiffers {
            min_bytes,
            max_bytes,
        } => format!(
            "WARNING: hosts' memory differs: {} to {}",
            human(*min_bytes as u64),
            human(*max_bytes as u64)
        ),
        Caveat::MemoryUnknown { hosts } => format!(
            "memory sizes not compared for {hosts} host{} \
             (no node_memory_MemTotal_bytes)",
            if *hosts == 1 { "" } else { "s" }
        ),
    }
}

fn write_verdict(o: &mut String, f: &Fleet) {
    let mut s = format!("B vs A: {}", f.verdict.name());
    if let Some(c) = f.stall_time {
        let _ = write!(
            s,
            ", reclaim stall time {}{}/s per host ({})",
            if c.diff >= 0.0 { "+" } else { "-" },
            fmt_secs(c.diff.abs()),
            pct(&c)
        );
        if let Some(w) = c.welch {
            let _ = write!(s, ", p = {:.3}", w.p);
        }
    }
    if f.verdict == Verdict::WithinNoise {
        s.push_str(": no cause to explain");
    }
    push(o, &[s]);
}

fn write_rows(o: &mut String, rows: &[Row]) {
    let _ = writeln!(
        o,
        "{:<NAME$}{:>9} {:>8}",
        "mean per host, per second", "A", "B"
    );
    for r in rows {
        let mut line = format!("{:<NAME$}", label(r.rate));
        line.truncate(NAME);
        while line.len() < NAME {
            line.push(' ');
        }
        let cell = |g: usize| r.groups[g].map_or("-".to_string(), |d| value(r.unit, d.mean));
        let ch = r
            .change
            .map(|c| format!("{}{}", pct(&c), mark(&c)))
            .unwrap_or_default();
        let _ = write!(line, "{:>9} {:>8} {:<8}", cell(0), cell(1), ch);
        let _ = writeln!(o, "{}", line.trim_end());
    }
}

/// The row's label: latencies are per stall, the rest per second.
fn label(r: Rate) -> String {
    if r.is_latency() {
        format!("{} (each)", r.label())
    } else {
        r.label().to_string()
    }
}

fn write_causes(o: &mut String, f: &Fleet) {
    if f.causes.is_empty() {
        return;
    }
    let total = f.stall_time.map_or(0.0, |c| c.diff);
    let _ = writeln!(o);
    let _ = writeln!(o, "likely mechanisms, B vs A, strongest first:");
    for (i, c) in f.causes.iter().enumerate() {
        push(o, &[format!("  {}. {}", i + 1, sentence(c, total))]);
    }
}

fn sentence(c: &Cause, total: f64) -> String {
    let means = format!("{} {}{}", c.rate.label(), pct(&c.change), mark(&c.change));
    match c.claims {
        Some(s) => format!(
            "{}: {means}, {}{}/s of the stall time's {}/s{}",
            c.mechanism.name(),
            if s >= 0.0 { "+" } else { "-" },
            fmt_secs(s.abs()),
            fmt_secs(total.abs()),
            match c.rate {
                Rate::MemcgStallTime => " (a memory cgroup's limit)",
                Rate::DirectStallTime => " (the machine's free memory)",
                _ => "",
            }
        ),
        None => format!(
            "{}: {means} (evidence, no time claimed)",
            c.mechanism.name()
        ),
    }
}
