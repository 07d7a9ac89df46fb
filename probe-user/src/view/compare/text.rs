//! The comparison as text: ASCII, at most 72 columns (it goes to
//! linux-mm). Groups are lettered A, B, C... (A is the baseline); tables
//! hold the baseline and at most two other groups, more go in further
//! blocks.

use crate::model::format::{fmt_secs, wrap};
use std::fmt::Write as _;

use crate::analysis::{
    AttributionRow, Comparison, ElapsedSplit, Hint, MetricRow, Verdict, Versus,
    attribution::{Component, Kind},
    entries::EntryRow,
    guards::{Guard, MglruState, SettingValue},
    measures::Scope,
    stats::Describe,
};
use crate::model::recording::environment::{ThpMode, irq_line};
use crate::model::report::{CgroupVersion, entry_chain};

const NAME: usize = 24;

use super::cells::{letter, mark, pct, value};

pub fn render(c: &Comparison, detail: bool) -> String {
    let mut o = String::new();
    let mut lines = vec![
        format!("vmtrace compare: {} groups", c.groups.len()),
        format!(
            "significance: {}: * p < 0.05, ** p < 0.01, ~ within noise",
            c.test
        ),
    ];
    for (i, g) in c.groups.iter().enumerate() {
        let mut s = format!(
            "{} = {}: {} run{}",
            letter(i),
            g.label,
            g.runs,
            if g.runs == 1 { "" } else { "s" }
        );
        if g.label != g.kernel_release {
            let _ = write!(s, " on {}", g.kernel_release);
        }
        if g.oom_killed > 0 {
            let _ = write!(s, ", {} OOM-killed (left out)", g.oom_killed);
        }
        if g.failed > 0 {
            let _ = write!(s, ", {} failed (left out)", g.failed);
        }
        if i == 0 {
            s.push_str(" (baseline)");
        }
        lines.push(s);
    }
    for s in &c.settings {
        lines.push(format!("setting differs: {s}"));
    }
    for w in &c.warnings {
        lines.push(format!("WARNING: {w}"));
    }
    lines.extend(guard_lines(&c.guards));
    for l in lines {
        for w in wrap(&l, 72) {
            let _ = writeln!(o, "{w}");
        }
    }
    let _ = writeln!(o);
    for v in c.versus.iter().enumerate() {
        write_verdict(&mut o, v.0 + 1, v.1);
    }
    let others: Vec<usize> = (1..c.groups.len()).collect();
    for chunk in others.chunks(2) {
        let _ = writeln!(o);
        write_metrics(&mut o, &c.metrics, chunk, detail);
    }
    // A group without a completed run has no budget and no ways in:
    // its kills (the hints) are all there is to say.
    let timed = |v: &Versus| v.verdict != Verdict::NoCompletedRun;
    for (k, v) in c.versus.iter().enumerate().filter(|(_, v)| timed(v)) {
        let _ = writeln!(o);
        write_attribution(&mut o, &c.attribution, k + 1, v);
    }
    for (k, v) in c.versus.iter().enumerate() {
        write_hints(&mut o, k + 1, v);
    }
    for (k, _) in c.versus.iter().enumerate().filter(|(_, v)| timed(v)) {
        write_entries(&mut o, &c.entries, k + 1);
        if !c.entries.is_empty() && c.groups[0].kernel_release != c.groups[k + 1].kernel_release {
            // Matched across two kernels: say how (model::entries::way_key).
            for l in wrap(
                "(kernels differ: ways matched by function, clone suffixes, \
                 _noprof, the page allocator's own frames and the fault \
                 handler's inlined ones left out)",
                72,
            ) {
                let _ = writeln!(o, "{l}");
            }
        }
        super::inside::write_profile(&mut o, &c.profile, k + 1);
    }
    o
}

/// Ways in shown per group in the text (all are in the JSON).
const ENTRIES_SHOWN: usize = 3;

/// `where reclaim was entered, B vs A`: the ways in that moved (see
/// `analysis::entries`), most change first, each with its callers;
/// or that none moved.
fn write_entries(o: &mut String, rows: &[EntryRow], g: usize) {
    if rows.is_empty() {
        return;
    }
    let k = g - 1;
    let mut moved: Vec<&EntryRow> = rows.iter().filter(|r| r.moved[k]).collect();
    moved.sort_by(|a, b| {
        let d = |r: &EntryRow| r.changes[k].map_or(0.0, |c| c.diff.abs());
        d(b).total_cmp(&d(a))
    });
    let _ = writeln!(o);
    let (a, b) = (letter(0), letter(g));
    if moved.is_empty() {
        for l in wrap(
            &format!(
                "where reclaim was entered, {b} vs {a}: no way in moved \
                 beyond noise ({} ways, Holm-corrected, at least {:.0}% of \
                 {a}'s reclaim stall time)",
                rows.len(),
                100.0 * crate::analysis::entries::MIN_SHARE
            ),
            72,
        ) {
            let _ = writeln!(o, "{l}");
        }
        return;
    }
    let _ = writeln!(
        o,
        "where reclaim was entered, {b} vs {a}: ways in that moved"
    );
    let _ = writeln!(o, "(stall seconds per run, mean)");
    for r in moved.iter().take(ENTRIES_SHOWN) {
        let mean = |i: usize| r.groups[i].map_or(0.0, |d| d.mean);
        let Some(c) = r.changes[k] else { continue };
        let _ = writeln!(
            o,
            "  {} {} {a} {} -> {b} {} {}",
            r.context.name(),
            signed_diff(c.diff),
            fmt_secs(mean(0)),
            fmt_secs(mean(g)),
            mark(&c)
        );
        for l in wrap(&entry_chain(&r.frames), 66) {
            let _ = writeln!(o, "      {l}");
        }
    }
    if moved.len() > ENTRIES_SHOWN {
        let _ = writeln!(o, "  ... {} more (in --json)", moved.len() - ENTRIES_SHOWN);
    }
}

fn write_verdict(o: &mut String, g: usize, v: &Versus) {
    let e = v.elapsed;
    let mut s = format!("{} vs A: {}", letter(g), v.verdict.name());
    if let Some(e) = e {
        let _ = write!(
            s,
            ", elapsed {}{} ({})",
            if e.diff >= 0.0 { "+" } else { "-" },
            fmt_secs(e.diff.abs()),
            pct(&e)
        );
        if let Some(w) = e.welch {
            let _ = write!(s, ", p = {:.3}", w.p);
        }
    }
    if v.judgeable && v.verdict == Verdict::WithinNoise {
        s.push_str(if v.hints.is_empty() {
            ": no cause to explain"
        } else {
            ": no cause to explain in time; the OOM kills differ"
        });
    }
    for w in wrap(&s, 72) {
        let _ = writeln!(o, "{w}");
    }
    if v.verdict == Verdict::NoCompletedRun {
        let _ = writeln!(
            o,
            "  (every run of a group was OOM-killed or failed: no time to"
        );
        let _ = writeln!(o, "  compare; its kills are the difference)");
    } else if !v.judgeable {
        let _ = writeln!(
            o,
            "  (one run in a group: significance cannot be judged; run each"
        );
        let _ = writeln!(o, "  configuration 3 times or more, e.g. --repeat 3)");
    }
}

fn write_metrics(o: &mut String, metrics: &[MetricRow], others: &[usize], detail: bool) {
    let mut head = format!("{:<NAME$}{:>9}", "metric (mean per run)", "A");
    for &g in others {
        let _ = write!(head, " {:>8} {:>8}", letter(g), "");
    }
    let _ = writeln!(o, "{}", head.trim_end());
    // Grouped by whose tasks a row counts, in table order within each.
    let scoped = [Scope::Target, Scope::Box, Scope::Machine]
        .into_iter()
        .flat_map(|scope| metrics.iter().filter(move |m| m.measure.scope() == scope));
    let mut last = None;
    for m in scoped {
        let scope = m.measure.scope();
        if last != Some(scope) {
            let _ = writeln!(o, "{}", scope_heading(scope));
            last = Some(scope);
        }
        let mut line = format!("{:<NAME$}", row_label(m));
        line.truncate(NAME);
        while line.len() < NAME {
            line.push(' ');
        }
        let cell = |g: usize| m.groups[g].map_or("-".to_string(), |d| value(m.unit, d.mean));
        let _ = write!(line, "{:>9}", cell(0));
        for &g in others {
            let ch = m.changes[g - 1]
                .map(|c| format!("{}{}", pct(&c), mark(&c)))
                .unwrap_or_default();
            let _ = write!(line, " {:>8} {:<8}", cell(g), ch);
        }
        let _ = writeln!(o, "{}", line.trim_end());
        if detail {
            for (what, f) in [
                (
                    "  stddev",
                    (|d: &Describe| d.stddev) as fn(&Describe) -> f64,
                ),
                ("  min", |d| d.min),
                ("  max", |d| d.max),
            ] {
                let cell = |g: usize| m.groups[g].map_or("-".to_string(), |d| value(m.unit, f(&d)));
                let mut line = format!("{what:<NAME$}{:>9}", cell(0));
                for &g in others {
                    let _ = write!(line, " {:>8} {:<8}", cell(g), "");
                }
                let _ = writeln!(o, "{}", line.trim_end());
            }
        }
    }
}

fn write_attribution(o: &mut String, rows: &[AttributionRow], g: usize, v: &Versus) {
    let l = letter(g);
    let noise = v.judgeable && v.verdict == Verdict::WithinNoise;
    let mut head = format!(
        "where the time went, {l} vs A: the time budget per run and its \
         part of the elapsed difference (s)"
    );
    if let Some(s) = &v.split {
        head.push_str(&rates(s, &l));
    }
    for w in wrap(&head, 72) {
        let _ = writeln!(o, "{w}");
    }
    let _ = writeln!(o, "{:<24}{:>27}{:>16}", "", "per run", "elapsed s");
    let _ = writeln!(
        o,
        "{:<24}{:>9}{:>9}{:>9}{:>9}{:>7}",
        "component",
        "A",
        l,
        format!("{l}-A"),
        format!("{l}-A"),
        "share"
    );
    let mut last = None;
    for r in rows {
        let kind = r.component.kind();
        if last != Some(kind) {
            let _ = writeln!(o, "{}", kind_heading(kind));
            last = Some(kind);
        }
        let _ = writeln!(o, "{}", attribution_line(r, g, noise));
    }
    if let Some(s) = &v.split {
        if !noise {
            let _ = writeln!(
                o,
                "{:<24}{:>27}{:>9}",
                "unexplained",
                "",
                signed_diff(s.unexplained)
            );
        }
        let mut notes: Vec<String> = rows
            .iter()
            .filter(|r| r.fallback)
            .filter_map(|r| r.component.fallback_note())
            .map(|n| format!("# {n}"))
            .collect();
        if !rows.iter().any(|r| r.component == Component::CpuWaits) {
            notes.extend(symptom(s, &l));
        }
        notes.push(split_summary(s, &l, noise));
        for n in notes {
            for w in wrap(&n, 72) {
                let _ = writeln!(o, "{w}");
            }
        }
    }
}

/// What a second of each kind stood for: `; a CPU-second counts 1/busy
/// CPUs (A 1.93, B 1.97), a wait 1/the job's concurrency (...)`.
fn rates(s: &ElapsedSplit, l: &str) -> String {
    let f = |x: [Option<f64>; 2]| {
        let f = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.2}"));
        format!("A {}, {l} {}", f(x[0]), f(x[1]))
    };
    if s.job_cpus.iter().all(Option::is_some) {
        format!(
            "; a CPU-second of the job counts 1/the CPUs it kept busy \
             ({}), a task-second of waiting 1/the job's concurrency ({}), \
             at most 1 s each",
            f(s.job_cpus),
            f(s.concurrency)
        )
    } else if s.busy_cpus.iter().all(Option::is_some) {
        format!(
            "; a CPU-second counts 1/the machine's busy CPUs ({}), a \
             task-second of waiting 1/the job's concurrency ({}), at most \
             1 s each",
            f(s.busy_cpus),
            f(s.concurrency)
        )
    } else {
        format!(
            "; without the machine's CPU time, a CPU-second and a \
             task-second of waiting both count 1/the job's concurrency \
             ({}: task-s per elapsed s), at most 1 s each",
            f(s.concurrency)
        )
    }
}

/// A component's row: its label (` !` guarded, ` #` from its older
/// source), seconds per run, difference and elapsed part.
fn attribution_line(r: &AttributionRow, g: usize, noise: bool) -> String {
    let (part, offset) = (r.elapsed[g - 1], r.offsets[g - 1]);
    let (cell, share) = if noise || r.guard.is_some() {
        ("-".to_string(), String::new())
    } else if offset != 0.0 {
        (format!("({})", signed_diff(offset)), "offset".into())
    } else {
        let share = r.shares[g - 1].map_or(String::new(), |s| format!("{:.0}%", 100.0 * s));
        (signed_diff(part), share)
    };
    let mut label = r.component.label().to_string();
    if r.fallback {
        label.push_str(" #");
    }
    if r.guard.is_some() {
        label.push_str(" !");
    }
    let line = format!(
        "{label:<24}{:>9}{:>9}{:>9}{:>9}{:>7}",
        fmt_secs(r.means[0]),
        fmt_secs(r.means[g]),
        signed_diff(r.diffs[g - 1]),
        cell,
        share
    );
    line.trim_end().to_string()
}

/// The heading of a kind of component's rows.
fn kind_heading(kind: Kind) -> &'static str {
    match kind {
        Kind::TargetCpu => "-- the command's CPU time (CPU-s) --",
        Kind::Wait => "-- its waits (task-s: summed over its tasks) --",
        Kind::MachineCpu => "-- the machine's other CPU time (CPU-s) --",
    }
}

/// The run-queue waits beside the budget: a symptom, not a part.
fn symptom(s: &ElapsedSplit, l: &str) -> Option<String> {
    if s.waiting_for_cpu.iter().all(Option::is_none) {
        return None;
    }
    let f = |x: Option<f64>| x.map_or("-".into(), fmt_secs);
    Some(format!(
        "waiting for a CPU (run_delay, task-s per run): A {}, {l} {}; a \
         symptom of the CPU time above (runnable tasks beyond the CPUs), \
         not a part of the split",
        f(s.waiting_for_cpu[0]),
        f(s.waiting_for_cpu[1])
    ))
}

/// One paragraph under the attribution table: what the parts add up to,
/// what is left, and why (offsets, overlap).
fn split_summary(s: &ElapsedSplit, l: &str, noise: bool) -> String {
    let d = s.difference.abs();
    if d < 1e-9 {
        return format!("{l} and A took the same elapsed time: nothing to attribute");
    }
    let way = if s.difference > 0.0 {
        "slower"
    } else {
        "faster"
    };
    if noise {
        return format!(
            "{l} is {} {way}, within noise: no part of it is attributed",
            fmt_secs(d)
        );
    }
    let x = s.explained.abs();
    let mut t = format!(
        "the components explain {} of the {} by which {l} is {way} ({:.0}%); \
         unexplained {} (time outside the budget: other sleep, a longer \
         critical path, a change in concurrency)",
        fmt_secs(x),
        fmt_secs(d),
        100.0 * x / d,
        fmt_secs(s.unexplained.abs())
    );
    if s.offsets != 0.0 {
        let _ = write!(
            t,
            "; components that moved against it (in parentheses, {} in all) \
             are netted out of the parts",
            signed_diff(s.offsets)
        );
    }
    if s.scale < 1.0 {
        let _ = write!(
            t,
            "; net they came to {:.1} times the difference (waits and CPU of \
             tasks run at once overlap) and are scaled to it",
            1.0 / s.scale
        );
    }
    t
}

/// A difference with its sign: `+1.2s`, `-15ms`, `+0`.
fn signed_diff(v: f64) -> String {
    format!("{}{}", if v >= 0.0 { "+" } else { "-" }, fmt_secs(v.abs()))
}

fn write_hints(o: &mut String, g: usize, v: &Versus) {
    // Mechanisms carry seconds of the elapsed difference; other
    // significant differences are listed apart, not offered as causes.
    let linked = |h: &&Hint| !h.seconds.is_finite() || h.seconds.abs() >= 0.001;
    let (causes, others): (Vec<&Hint>, Vec<&Hint>) = v.hints.iter().partition(linked);
    for (title, hints) in [
        (
            format!("likely mechanisms, {} vs A, strongest first:", letter(g)),
            causes,
        ),
        (
            format!(
                "also different, {} vs A (no elapsed time linked):",
                letter(g)
            ),
            others,
        ),
    ] {
        if hints.is_empty() {
            continue;
        }
        let _ = writeln!(o);
        let _ = writeln!(o, "{title}");
        for (i, h) in hints.iter().enumerate() {
            let mut text = format!("{}. {}", i + 1, super::hints::sentence(h));
            if let Some(claim) = claim(h.seconds, v, g) {
                let _ = write!(text, " -- {claim}");
            }
            for line in hint_lines(&text) {
                let _ = writeln!(o, "{line}");
            }
        }
    }
}

/// What a mechanism accounts for, as a reviewer would say it: "1.2s of
/// the 2.7s by which B is slower (44%)". The seconds are its components'
/// attributed parts (analysis/attribution/), so never more than the difference;
/// a claim past it would be a bug and is not printed.
fn claim(seconds: f64, v: &Versus, g: usize) -> Option<String> {
    let d = v.split.as_ref()?.difference;
    let ok = seconds.is_finite()
        && seconds.abs() >= 0.001
        && seconds * d > 0.0
        && seconds.abs() <= d.abs() * (1.0 + 1e-9);
    ok.then(|| {
        format!(
            "{} of the {} by which {} is {} ({:.0}%)",
            fmt_secs(seconds.abs()),
            fmt_secs(d.abs()),
            letter(g),
            if d > 0.0 { "slower" } else { "faster" },
            100.0 * seconds.abs() / d.abs()
        )
    })
}

/// `  1. text ...` wrapped within 72 columns, continuation lines under
/// the text (3 spaces past the number's indent). wrap() indents its
/// continuation lines by 2 within the width it is given, and they get 3
/// more here: 69 leaves the widest at 72.
fn hint_lines(text: &str) -> Vec<String> {
    wrap(text, 69)
        .into_iter()
        .enumerate()
        .map(|(k, line)| {
            if k == 0 {
                format!("  {line}")
            } else {
                format!("   {line}")
            }
        })
        .collect()
}

/// The heading of a scope's rows in the metric table.
fn scope_heading(scope: Scope) -> &'static str {
    match scope {
        Scope::Target => "-- the command's tasks (rusage, delay acct, eBPF) --",
        Scope::Box => "-- its memory box (the cgroup's memory.pressure) --",
        Scope::Machine => "-- the whole machine (vmstat counters, kswapd, swap I/O) --",
    }
}

/// The table's row label: the measure's label, ` !` when guarded.
fn row_label(m: &MetricRow) -> String {
    if m.guard.is_some() {
        format!("{} !", m.measure.label())
    } else {
        m.measure.label().to_string()
    }
}

/// One line per guard: `! MGLRU off vs on (traced): <why>`.
fn guard_lines(guards: &[Guard]) -> Vec<String> {
    let mut out: Vec<String> = guards
        .iter()
        .map(|g| {
            format!(
                "! {} {}: {}",
                g.setting.name(),
                g.values
                    .iter()
                    .map(|v| group_values(v))
                    .collect::<Vec<_>>()
                    .join(" vs "),
                g.why
            )
        })
        .collect();
    if !out.is_empty() {
        out.push("! marked rows mean different things: no cause is named from them".into());
    }
    out
}

/// A group's values of a setting: `-` (unknown), or each as printed,
/// sorted, between `/`.
fn group_values(values: &[SettingValue]) -> String {
    let mut words: Vec<String> = values.iter().map(setting_value).collect();
    words.sort();
    words.dedup();
    if words.is_empty() {
        "-".into()
    } else {
        words.join("/")
    }
}

/// A setting's value as the guard line prints it.
pub fn setting_value(v: &SettingValue) -> String {
    match v {
        SettingValue::Mglru(m) => match m {
            MglruState::Off => "off",
            MglruState::OnTraced => "on (traced)",
            MglruState::OnUntraced => "on (no LRU events)",
        }
        .into(),
        SettingValue::BoxCgroup(CgroupVersion::V1) => "v1".into(),
        SettingValue::BoxCgroup(CgroupVersion::V2) => "v2".into(),
        SettingValue::DelayAccounting(d) => d.name().into(),
        SettingValue::Thp(t) => {
            let pmd = t.pmd.as_ref().map_or("-", ThpMode::name);
            if t.sizes.is_empty() {
                return pmd.into();
            }
            let sizes: Vec<String> = t
                .sizes
                .iter()
                .map(|(k, m)| format!("{k}={}", m.as_ref().map_or("-", ThpMode::name)))
                .collect();
            format!("{pmd}, sizes {}", sizes.join(" "))
        }
        SettingValue::JobFileSystem(fs) => fs.clone(),
        SettingValue::IrqTime(out) => irq_line(*out).into(),
        SettingValue::StealTime(s) => s.line().into(),
    }
}

#[cfg(test)]
mod tests {
    use super::hint_lines;

    #[test]
    fn hint_lines_fit_72_columns() {
        // The line a CI run caught at 73 columns.
        let text = "2. swap-in: major faults 3 -> 4579, block I/O waits 5.2ms -> \
                    619ms, system CPU 447ms -> 961ms -- 111ms of the 479ms by \
                    which B is slower (23%)";
        let lines = hint_lines(text);
        assert!(lines.len() > 1, "{lines:?}");
        assert!(lines[0].starts_with("  2. swap-in"), "{lines:?}");
        for l in &lines {
            assert!(l.len() <= 72, "{} columns: {l:?}", l.len());
        }
        for l in &lines[1..] {
            assert!(l.starts_with("     ") && !l.starts_with("      "), "{l:?}");
        }
    }
}
