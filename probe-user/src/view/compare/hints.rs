//! A likely mechanism in words: the sentence `compare` prints for a
//! hint, written from its evidence (analysis/hint.rs), one function per
//! mechanism (an exhaustive match: a new mechanism does not compile
//! until it has its words). The detectors decide what is evidence; here
//! each fact present is named, in the order a reviewer reads it.

use crate::analysis::{
    Hint, Measure,
    Measure::*,
    Mechanism,
    hint::{Fact, ShareOf, WayMoved, ZoneCounted},
};
use crate::model::format::{fmt_count_short, fmt_secs};
use std::fmt::Write as _;

/// The sentence for a hint, without its claim of seconds.
pub fn sentence(h: &Hint) -> String {
    match h.mechanism {
        Mechanism::OomKills => oom_kills(h),
        Mechanism::Zswap => zswap(h),
        Mechanism::FileReads => file_reads(h),
        Mechanism::Writeback => writeback(h),
        Mechanism::SwapIn => swap_in(h),
        Mechanism::Reclaim => reclaim(h),
        Mechanism::Kswapd => kswapd(h),
        Mechanism::CpuContention => cpu_contention(h),
        Mechanism::Refaults => refaults(h),
        Mechanism::SwapOut => swap_out(h),
        Mechanism::Compaction => format!("compaction: {}", pair(h, Compaction, fmt_secs)),
        Mechanism::SystemCpu => system_cpu(h),
        Mechanism::Zones => zones(h),
    }
}

/// Booked by rusage, and as the profile sampled it where it ran.
fn system_cpu(h: &Hint) -> String {
    let mut t = format!("system CPU: {}", pair(h, SystemCpu, fmt_secs));
    if has(h, SampledSystemCpu) {
        let _ = write!(
            t,
            ", sampled outside reclaim {}",
            pair(h, SampledSystemCpu, fmt_secs)
        );
    }
    t
}

/// A measure's baseline mean `->` this group's: `1.2s -> 3.4s`, `-`
/// for a group without it, `(not comparable)` where a guard holds.
fn pair(h: &Hint, key: Measure, fmt: fn(f64) -> String) -> String {
    match h.measure(key) {
        Some(Fact::Measure {
            comparable: false, ..
        }) => "(not comparable)".into(),
        Some(Fact::Measure { a, b, .. }) => format!(
            "{} -> {}",
            a.map_or("-".into(), fmt),
            b.map_or("-".into(), fmt)
        ),
        _ => "-".into(),
    }
}

fn has(h: &Hint, key: Measure) -> bool {
    h.measure(key).is_some()
}

fn percent(v: f64) -> String {
    format!("{v:.0}%")
}

/// The I/O waits as the runs timed them: at the scheduler, or by delay
/// accounting where they lack that.
fn io(h: &Hint) -> String {
    let key = if has(h, IoWaitTime) {
        IoWaitTime
    } else {
        BlockIoDelay
    };
    pair(h, key, fmt_secs)
}

fn oom_kills(h: &Hint) -> String {
    let mut text = String::from("OOM kills:");
    let mut victims = Vec::new();
    for f in &h.evidence {
        match f {
            Fact::Kills {
                killed,
                runs,
                baseline_killed,
                baseline_runs,
            } => text.push_str(&format!(
                " {killed} of {runs} runs killed (baseline {baseline_killed} of \
                 {baseline_runs})"
            )),
            Fact::Victim {
                comm,
                target,
                kills,
                baseline_kills,
            } => {
                let whose = if *target { " (the job's)" } else { "" };
                victims.push(format!("{comm}{whose} {kills} (baseline {baseline_kills})"));
            }
            _ => {}
        }
    }
    if !victims.is_empty() {
        text.push_str(&format!("; victims: {}", victims.join(", ")));
    }
    text
}

fn swap_in(h: &Hint) -> String {
    // vmstat's swap-in faults where the runs split faults by cause,
    // else rusage's major faults (the detector names one).
    let faults = if has(h, SwapInFaults) {
        format!("swap-in faults {}", pair(h, SwapInFaults, fmt_count_short))
    } else {
        format!("major faults {}", pair(h, MajorFaults, fmt_count_short))
    };
    let mut text = format!("swap-in: {faults}, I/O waits {}", io(h));
    if has(h, SwapInWait) {
        text.push_str(&format!(", swap-in time {}", pair(h, SwapInWait, fmt_secs)));
    }
    if has(h, PagesPerSwapRead) {
        text.push_str(&format!(
            "; swap reads of {} pages each (readahead)",
            pair(h, PagesPerSwapRead, |v| format!("{v:.1}"))
        ));
    }
    if has(h, SwapReadP99) {
        text.push_str(&format!(
            "; swap read p99 {}",
            pair(h, SwapReadP99, fmt_secs)
        ));
    }
    text
}

fn zswap(h: &Hint) -> String {
    let more = h
        .evidence
        .iter()
        .any(|f| matches!(f, Fact::More { more: true }));
    let lead = if more {
        "swap-ins served from zswap"
    } else {
        "swap-ins no longer served from zswap"
    };
    let mut text = format!(
        "{lead}: I/O waits {}; zswap loads {}, stores {}; \
         swap device reads {} pages",
        io(h),
        pair(h, ZswapLoads, fmt_count_short),
        pair(h, ZswapStores, fmt_count_short),
        pair(h, ReadFromSwapDevice, fmt_count_short)
    );
    if has(h, SwapInWait) {
        text.push_str(&format!(", swap-in time {}", pair(h, SwapInWait, fmt_secs)));
    }
    text
}

fn file_reads(h: &Hint) -> String {
    let read = if has(h, FileReadPages) {
        format!(
            "pages read {} (swap device {}), ",
            pair(h, FileReadPages, fmt_count_short),
            pair(h, ReadFromSwapDevice, fmt_count_short)
        )
    } else {
        String::new()
    };
    format!(
        "file reads (page cache misses, not swap-ins): {read}file read \
         faults {}, swap-in faults {}; file refaults {}; I/O waits {}",
        pair(h, FileReadFaults, fmt_count_short),
        pair(h, SwapInFaults, fmt_count_short),
        pair(h, FileRefaults, fmt_count_short),
        io(h)
    )
}

fn writeback(h: &Hint) -> String {
    format!(
        "writeback (file pages the job dirtied): pages written {}; \
         I/O waits {}",
        pair(h, FileWritePages, fmt_count_short),
        io(h)
    )
}

fn swap_out(h: &Hint) -> String {
    let to_device = pair(h, WrittenToSwapDevice, fmt_count_short);
    // Recordings from before the split by backend have the device's only.
    let pages = if has(h, PagesSwappedOut) {
        format!(
            "{} pages, {to_device} of them to the swap device",
            pair(h, PagesSwappedOut, fmt_count_short)
        )
    } else {
        format!("{to_device} pages to the swap device")
    };
    format!(
        "swap-out: {pages}, write p99 {}",
        pair(h, SwapWriteP99, fmt_secs)
    )
}

fn kswapd(h: &Hint) -> String {
    let mut text = format!(
        "kswapd: awake {}, CPU {}",
        pair(h, KswapdAwake, fmt_secs),
        pair(h, KswapdCpu, fmt_secs)
    );
    if has(h, RunnableBehindKswapd) {
        text.push_str(&format!(
            ", the job runnable behind it {}",
            pair(h, RunnableBehindKswapd, fmt_secs)
        ));
    }
    text
}

fn cpu_contention(h: &Hint) -> String {
    let words = [
        (RunnableBehindOthers, "runnable behind other tasks"),
        (CpuWait, "waiting for a CPU"),
        (OtherTasksCpu, "other tasks' CPU"),
        (Steal, "steal"),
        (
            ReclaimCrossCpu,
            "reclaim's TLB-flush IPIs waiting on those CPUs",
        ),
    ];
    let parts: Vec<String> = words
        .iter()
        .filter(|(key, _)| has(h, *key))
        .map(|(key, said)| format!("{said} {}", pair(h, *key, fmt_secs)))
        .collect();
    format!("CPU contention: {}", parts.join(", "))
}

fn reclaim(h: &Hint) -> String {
    let mut text = format!(
        "reclaim: stalls {} ({}), efficiency {}",
        pair(h, ReclaimStallTime, fmt_secs),
        pair(h, ReclaimStalls, fmt_count_short),
        pair(h, ReclaimEfficiency, percent)
    );
    if has(h, ReclaimOnCpu) {
        text.push_str(&format!(", on-CPU {}", pair(h, ReclaimOnCpu, fmt_secs)));
    }
    text.push_str(&format!(
        ", velocity {} pages/s",
        pair(h, ScanVelocity, fmt_count_short)
    ));
    if has(h, LowPriorityShrinks) {
        text.push_str(&format!(
            "; shrinks at priority <= 9: {}",
            pair(h, LowPriorityShrinks, percent)
        ));
    }
    if has(h, ReclaimCrossCpu) {
        text.push_str(&format!(
            "; TLB-flush IPIs {}",
            pair(h, ReclaimCrossCpu, fmt_secs)
        ));
    }
    if let Some(way) = h.evidence.iter().find_map(|f| match f {
        Fact::WayMoved { way } => Some(way),
        _ => None,
    }) {
        text.push_str(&format!("; moved most: {}", way_said(way)));
    }
    let functions: Vec<String> = h
        .evidence
        .iter()
        .filter_map(|f| match f {
            Fact::FunctionShare { function, a, b } => {
                Some(format!("{function} {:.0}% -> {:.0}%", 100.0 * a, 100.0 * b))
            }
            _ => None,
        })
        .collect();
    if !functions.is_empty() {
        text.push_str(&format!(
            "; CPU inside the stalls moved: {}",
            functions.join(", ")
        ));
    }
    if let Some(share) = h.share(ShareOf::RefaultedReclaim) {
        text.push_str(&format!(
            "; {:.0}% of the change evicted pages needed again (refaults)",
            100.0 * share
        ));
    }
    if has(h, MemstallSleepTime) {
        text.push_str(&format!(
            "; memory.high sleeps {}",
            pair(h, MemstallSleepTime, fmt_secs)
        ));
    }
    text
}

/// `memcg via ... < __filemap_add_folio < filemap_add_folio < ...
/// (+1.6s/run)`.
pub fn way_said(w: &WayMoved) -> String {
    let mut callers: Vec<&str> = w.callers.iter().map(String::as_str).collect();
    if w.more_after {
        callers.push("...");
    }
    if w.shared_before {
        callers.insert(0, "...");
    }
    let d = w.seconds_per_run;
    format!(
        "{} via {} ({}{}/run)",
        w.context.name(),
        callers.join(" < "),
        if d >= 0.0 { "+" } else { "-" },
        fmt_secs(d.abs())
    )
}

fn refaults(h: &Hint) -> String {
    let mut text = format!(
        "refaults (evicted pages needed again): {}, thrashing waits {}",
        pair(h, Refaults, fmt_count_short),
        pair(h, ThrashingDelay, fmt_secs)
    );
    if has(h, RefaultActivations) {
        text.push_str(&format!(
            ", activated on refault {}",
            pair(h, RefaultActivations, fmt_count_short)
        ));
    }
    if let Some(share) = h.share(ShareOf::RefaultedReclaim) {
        text.push_str(&format!(
            "; pages reclaimed {}: {:.0}% of the extra reclaim evicted \
             pages needed again",
            pair(h, PagesReclaimed, fmt_count_short),
            100.0 * share
        ));
    }
    if has(h, PageCacheFillCpu) {
        text.push_str(&format!(
            "; page-cache fill CPU {}",
            pair(h, PageCacheFillCpu, fmt_secs)
        ));
    }
    text
}

fn zones(h: &Hint) -> String {
    let parts: Vec<String> = h
        .evidence
        .iter()
        .filter_map(|f| match f {
            Fact::ZoneShares { counted, zones } => {
                let what = match counted {
                    ZoneCounted::Allocations => "allocations",
                    ZoneCounted::DirectReclaimStalls => "direct reclaim stalls",
                    ZoneCounted::AllocationsByNode => "allocations by node",
                };
                let moved: Vec<String> = zones
                    .iter()
                    .map(|z| format!("{} {:.0}% -> {:.0}%", z.zone, z.a_pct, z.b_pct))
                    .collect();
                Some(format!("{what} {}", moved.join(", ")))
            }
            _ => None,
        })
        .collect();
    format!("pressure shifted between zones: {}", parts.join("; "))
}
