//! The reclaim sections of the text report: direct and memcg reclaim
//! stalls, the processes that stalled most, reclaims by allocation
//! order, reclaim throttling, compaction and slab shrinking.

use crate::model::format::{fmt_ns, write_wrapped};
use std::fmt::{Result, Write as _};

use super::{hist::write_hist, names::nonzero_pairs};
use crate::model::report::{EntryWay, KswapdWakePath, RunReport, StallSplit, entry_chain};

/// `direct reclaim: ...` and `memcg reclaim: ...`, each with its
/// histogram of stall times.
pub(super) fn stalls(o: &mut String, report: &RunReport) -> Result {
    for (title, r) in [
        ("direct reclaim", &report.direct_reclaim),
        ("memcg reclaim", &report.memcg_reclaim),
    ] {
        let Some(r) = r else { continue };
        writeln!(o)?;
        writeln!(
            o,
            "{title}: {} stalls, {} stalled, {} pages reclaimed",
            r.stalls.count,
            fmt_ns(r.stalls.total_ns),
            r.pages_reclaimed
        )?;
        if let Some(split) = &r.split {
            write_split(o, split)?;
        }
        write_hist(o, &r.stalls)?;
    }
    Ok(())
}

/// `  at the scheduler: on a CPU .., runnable .., blocked .. (I/O ..)`
/// and the kernel's run_delay beside the runnable part, with the waits
/// it mostly misses.
pub(super) fn write_split(o: &mut String, s: &StallSplit) -> Result {
    if s.wall_ns == 0 {
        return Ok(());
    }
    writeln!(
        o,
        "  at the scheduler: on a CPU {}, runnable {}, blocked {}",
        fmt_ns(s.on_cpu_ns),
        fmt_ns(s.runnable_ns),
        fmt_ns(s.blocked_ns),
    )?;
    writeln!(
        o,
        "    (of it I/O wait {}; kernel run_delay {})",
        fmt_ns(s.iowait_ns),
        fmt_ns(s.run_delay_ns)
    )?;
    if s.preempt_wake_ns == 0 {
        return Ok(());
    }
    // The part of the runnable time the kernel's run_delay mostly
    // leaves out (StallSplit::preempt_wake_ns).
    writeln!(
        o,
        "    (runnable from preempting wake-ups {}: run_delay misses most)",
        fmt_ns(s.preempt_wake_ns)
    )
}

/// The processes that stalled most in reclaim, the command's starred.
pub(super) fn top_stallers(o: &mut String, report: &RunReport) -> Result {
    if report.top_stallers.is_empty() {
        return Ok(());
    }
    writeln!(o)?;
    writeln!(o, "processes stalled most in reclaim (* = the command's)")?;
    writeln!(
        o,
        "  {:>8} {:<16} {:>8} {:>9} {:>8} {:>9}",
        "pid", "comm", "direct", "stalled", "memcg", "stalled"
    )?;
    for t in &report.top_stallers {
        writeln!(
            o,
            "{} {:>8} {:<16} {:>8} {:>9} {:>8} {:>9}",
            if t.target { '*' } else { ' ' },
            t.pid,
            t.comm,
            t.direct_stalls,
            fmt_ns(t.direct_ns),
            t.memcg_stalls,
            fmt_ns(t.memcg_ns)
        )?;
    }
    Ok(())
}

/// The ways in shown in the text (all are in the JSON and the folded
/// export).
const ENTRIES_SHOWN: usize = 5;

/// `where reclaim was entered`: the ways in with the most stall time,
/// each with its share, count, GFP flags and order, and its callers from
/// the allocation up to the system call or fault.
pub(super) fn entries(o: &mut String, report: &RunReport) -> Result {
    let Some(e) = &report.reclaim_entries else {
        return Ok(());
    };
    if e.paths.is_empty() && e.kswapd_wakers.is_empty() && e.stacks_lost == 0 && e.table_full == 0 {
        return Ok(());
    }
    let total = e.total_ns();
    writeln!(o)?;
    let what = if e.paths.iter().any(|p| p.context == EntryWay::Compaction) {
        "reclaim and compaction were"
    } else {
        "reclaim was"
    };
    writeln!(o, "where {what} entered (of {} stalled)", fmt_ns(total))?;
    for p in e.paths.iter().take(ENTRIES_SHOWN) {
        let share = if total == 0 {
            0.0
        } else {
            100.0 * p.stall_ns as f64 / total as f64
        };
        let order = if p.context.order_known() {
            format!(" order {}", p.order)
        } else {
            String::new()
        };
        let head = format!(
            "  {share:5.1}% {:>7} {:>6}x {}",
            fmt_ns(p.stall_ns),
            p.count,
            p.context.name()
        );
        write_indented(o, "", &format!("{head} {}{order}", p.gfp_names))?;
        write_indented(o, "      ", &entry_chain(&p.frames))?;
        if let Some(split) = &p.split
            && p.stall_ns > 0
        {
            let pct = |ns: u64| 100.0 * ns as f64 / p.stall_ns as f64;
            writeln!(
                o,
                "      on a CPU {:.1}%, runnable {:.1}%, blocked {:.1}%",
                pct(split.on_cpu_ns),
                pct(split.runnable_ns),
                pct(split.blocked_ns)
            )?;
        }
    }
    if e.paths.len() > ENTRIES_SHOWN {
        writeln!(
            o,
            "  ... {} more (all in --json and `export --format folded`)",
            e.paths.len() - ENTRIES_SHOWN
        )?;
    }
    kswapd_wakers(o, &e.kswapd_wakers)?;
    if e.stacks_lost > 0 || e.table_full > 0 {
        write_wrapped(
            o,
            &format!(
                "warning: {} reclaims without their stack (stack map \
                 collision), {} in no row (table full)",
                e.stacks_lost, e.table_full
            ),
        )?;
    }
    Ok(())
}

/// Wakers shown per zone.
const WAKERS_SHOWN: usize = 3;

/// `who woke kswapd`: per zone, its wake-ups and the ways with the most.
fn kswapd_wakers(o: &mut String, wakers: &[KswapdWakePath]) -> Result {
    let mut zones: Vec<(u32, u32, &str, u64)> = Vec::new();
    for w in wakers {
        match zones.iter_mut().find(|z| (z.0, z.1) == (w.node, w.zid)) {
            Some(z) => z.3 += w.count,
            None => zones.push((w.node, w.zid, &w.zone, w.count)),
        }
    }
    zones.sort_by_key(|z| std::cmp::Reverse(z.3));
    for (node, zid, zone, total) in zones {
        writeln!(
            o,
            "who woke kswapd for node {node} {zone}: {total} wake-ups"
        )?;
        let ways = wakers.iter().filter(|w| (w.node, w.zid) == (node, zid));
        for w in ways.take(WAKERS_SHOWN) {
            let share = 100.0 * w.count as f64 / total.max(1) as f64;
            let head = format!("  {share:5.1}% {:>6}x", w.count);
            write_indented(o, "", &format!("{head} {} order {}", w.gfp_names, w.order))?;
            write_indented(o, "      ", &entry_chain(&w.frames))?;
        }
    }
    Ok(())
}

/// `text` wrapped at 72 columns, each line after `indent`, breaking at
/// spaces; a word wider than a line (a long GFP flag list, a name from a
/// hostile recording) breaks after a `|`, or else anywhere.
fn write_indented(o: &mut String, indent: &str, text: &str) -> Result {
    if indent.len() + text.len() <= 72 {
        return writeln!(o, "{indent}{text}");
    }
    let width = 72 - indent.len();
    let mut line = String::new();
    for word in text.split(' ').flat_map(|w| pieces(w, width)) {
        let word = word.as_str();
        if !line.is_empty() && indent.len() + line.len() + 1 + word.len() > 72 {
            writeln!(o, "{indent}{line}")?;
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        writeln!(o, "{indent}{line}")?;
    }
    Ok(())
}

/// `word` in pieces of at most `width` characters: after a `|` where it
/// has one, else at the width.
fn pieces(word: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut piece = String::new();
    for part in word.split_inclusive('|') {
        if !piece.is_empty() && piece.chars().count() + part.chars().count() > width {
            out.push(std::mem::take(&mut piece));
        }
        piece.push_str(part);
        while piece.chars().count() > width {
            let rest: String = piece.chars().skip(width).collect();
            piece = piece.chars().take(width).collect();
            out.push(std::mem::replace(&mut piece, rest));
        }
    }
    out.push(piece);
    out
}

/// `<context> reclaims by allocation order: 11+:1 0:5` per context. Not
/// for memcg reclaim: try_to_free_mem_cgroup_pages emits
/// mm_vmscan_memcg_reclaim_begin with order 0 whatever the charge's
/// size (mm/vmscan.c, 6.1/6.12/6.18: `.order = 0` in its scan_control,
/// and the tracepoint is given 0), so that row would say nothing.
pub(super) fn orders(o: &mut String, report: &RunReport) -> Result {
    for r in &report.reclaim_order {
        if !r.context.order_known() {
            continue;
        }
        writeln!(o)?;
        let pairs = nonzero_pairs(&r.counts, |i| {
            if i + 1 == r.counts.len() {
                format!("{i}+")
            } else {
                i.to_string()
            }
        });
        write_wrapped(
            o,
            &format!("{} reclaims by allocation order: {pairs}", r.context.name()),
        )?;
    }
    Ok(())
}

/// Reclaim throttling: waits, time asleep, reasons, and the histogram.
pub(super) fn throttle(o: &mut String, report: &RunReport) -> Result {
    let Some(t) = &report.throttle else {
        return Ok(());
    };
    writeln!(o)?;
    writeln!(
        o,
        "reclaim throttling: {} waits, {} asleep ({} of all tasks)",
        t.delays.count,
        fmt_ns(t.delays.total_ns),
        t.all_tasks
    )?;
    writeln!(
        o,
        "  reasons: writeback {}, isolated {}, noprogress {}, congested {}",
        t.writeback, t.isolated, t.noprogress, t.congested
    )?;
    if t.delays.count > 0 {
        // mm/vmscan.c reclaim_throttle (5.16+): usec_delayed is
        // jiffies_to_usecs(timeout - ret), the ticks that passed asleep.
        writeln!(
            o,
            "  sleeps as the kernel reports them, in whole ticks (jiffies):"
        )?;
        writeln!(o, "    each within a tick of the truth; 0 = no tick passed")?;
        write_hist(o, &t.delays)?;
    }
    Ok(())
}

/// Compaction runs and their histogram.
pub(super) fn compaction(o: &mut String, report: &RunReport) -> Result {
    let Some(c) = &report.compaction else {
        return Ok(());
    };
    writeln!(o)?;
    writeln!(
        o,
        "compaction: {} runs, {} in all ({} runs of all tasks)",
        c.runs.count,
        fmt_ns(c.runs.total_ns),
        c.all_tasks
    )?;
    if let Some(split) = &c.split {
        write_split(o, split)?;
    }
    if c.runs.count > 0 {
        write_hist(o, &c.runs)?;
    }
    Ok(())
}

/// Slab shrinker calls (all tasks), objects freed, and the histogram.
pub(super) fn slab_shrink(o: &mut String, report: &RunReport) -> Result {
    let Some(sl) = &report.slab_shrink else {
        return Ok(());
    };
    writeln!(o)?;
    writeln!(
        o,
        "slab shrinking (all tasks): {} shrinker calls taking {}, {} freed",
        sl.calls.count,
        fmt_ns(sl.calls.total_ns),
        sl.objects_freed
    )?;
    if sl.calls.count > 0 {
        write_hist(o, &sl.calls)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_flag_lists_and_names_fit_72_columns() {
        let gfp = "GFP_NOFS|__GFP_HIGHMEM|__GFP_MOVABLE|__GFP_NOWARN|__GFP_NORETRY|__GFP_HARDWALL";
        let mut o = String::new();
        write_indented(&mut o, "", &format!("   0.4%   2.0ms     46x memcg {gfp}")).unwrap();
        write_indented(&mut o, "      ", &"y".repeat(200)).unwrap();
        for l in o.lines() {
            assert!(l.len() <= 72, "{l:?}");
        }
        assert!(o.contains("__GFP_NOWARN|"), "{o}");
        assert_eq!(o.matches('y').count(), 200);
    }

    use crate::model::{histogram::summarize, report::ThrottleReport};
    use vmtrace_common::hist::{BUCKETS, bucket_of};

    fn throttled(delays_ns: &[u64]) -> RunReport {
        let mut counts = vec![0; BUCKETS];
        for &d in delays_ns {
            counts[bucket_of(d)] += 1;
        }
        RunReport {
            throttle: Some(ThrottleReport {
                delays: summarize(&counts),
                writeback: delays_ns.len() as u64,
                isolated: 0,
                noprogress: 0,
                congested: 0,
                all_tasks: delays_ns.len() as u64,
            }),
            ..RunReport::default()
        }
    }

    /// The kernel reports throttling sleeps in whole ticks, so the
    /// histogram's first row (from 0 ns) is not a sub-16 ns sleep: the
    /// section says so, in lines a mail keeps.
    #[test]
    fn throttle_sleeps_are_said_to_be_whole_ticks() {
        let mut o = String::new();
        throttle(&mut o, &throttled(&[0, 0, 4_000_000, 8_000_000])).expect("write");
        assert!(o.contains("in whole ticks (jiffies)"), "{o}");
        assert!(o.contains("0 = no tick passed"), "{o}");
        assert!(o.contains("[     0,   16ns)         2"), "{o}");
        assert!(o.lines().all(|l| l.len() <= 72 && l.is_ascii()), "{o}");

        let mut none = String::new();
        throttle(&mut none, &throttled(&[])).expect("write");
        assert!(none.contains("0 waits"), "{none}");
        assert!(!none.contains("ticks"), "{none}");
    }

    /// The split's lines, with the preempting wake-ups' waits (the part
    /// run_delay mostly misses) only where there were some.
    #[test]
    fn the_split_says_what_run_delay_misses_only_when_it_missed_some() {
        let split = |preempt_wake_ns| StallSplit {
            on_cpu_ns: 1_610_410_441,
            runnable_ns: 87_929_007,
            blocked_ns: 447_316_272,
            iowait_ns: 447_316_272,
            wall_ns: 2_145_655_720,
            run_delay_ns: 33_167_141,
            preempt_wake_ns,
        };
        let mut o = String::new();
        write_split(&mut o, &split(0)).expect("write");
        assert_eq!(o.lines().count(), 2, "{o}");
        assert!(!o.contains("preempting"), "{o}");
        let mut o = String::new();
        write_split(&mut o, &split(999_999_999_999)).expect("write");
        assert_eq!(o.lines().count(), 3, "{o}");
        assert!(o.contains("runnable from preempting wake-ups"), "{o}");
        assert!(o.lines().all(|l| l.len() <= 72 && l.is_ascii()), "{o}");
    }
}
