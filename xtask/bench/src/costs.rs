//! The eBPF programs' own run time (kernel.bpf_stats_enabled), vmtrace's
//! and bpftrace's side by side per signal, and the ratio of the totals:
//! the steady measure of what tracing costs (elapsed-time ratios drown in
//! this machine's noise).

use std::fmt::Write;

use crate::{Measured, signals::SIGNALS, tools::Tool};

/// bpftrace's program for each signal it records, and vmtrace's (None
/// where vmtrace runs nothing for it), in the table's order.
fn pairs() -> impl Iterator<Item = (&'static str, Option<&'static str>)> {
    SIGNALS
        .iter()
        .filter_map(|s| Some((s.bpftrace?, s.vmtrace)))
}

/// bpftrace's programs are listed as "N (probe)".
fn probe_of(name: &str) -> &str {
    name.split_once('(')
        .map_or(name, |(_, p)| p.trim_end_matches(')'))
}

/// (runs, ns) of a program by name, 0 when it did not run.
fn find<'a>(
    programs: &'a [(String, u64, u64)],
    name: &str,
    bt: bool,
) -> Option<&'a (String, u64, u64)> {
    programs.iter().find(|p| {
        if bt {
            probe_of(&p.0) == name
        } else {
            p.0 == name
        }
    })
}

fn per_run(p: Option<&(String, u64, u64)>) -> String {
    match p {
        Some((_, runs, ns)) if *runs > 0 => (ns / runs).to_string(),
        _ => "-".into(),
    }
}

fn runs(p: Option<&(String, u64, u64)>) -> String {
    p.map_or("-".into(), |p| p.1.to_string())
}

fn ms(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e6)
}

/// Each tool's programs, busiest first.
pub fn per_tool(costs: &[(Tool, Measured)]) -> String {
    let mut md = String::new();
    for (tool, m) in costs {
        let _ = writeln!(md);
        let total_runs: u64 = m.programs.iter().map(|p| p.1).sum();
        let total_ns: u64 = m.programs.iter().map(|p| p.2).sum();
        let _ = writeln!(
            md,
            "{} eBPF programs with kernel.bpf_stats_enabled (one more run, untimed: {:.2} s elapsed): {} runs, {:.0} runs/s, {:.1} ms in all.",
            tool.name(),
            m.wall_s,
            total_runs,
            total_runs as f64 / m.wall_s.max(1e-3),
            total_ns as f64 / 1e6
        );
        let _ = writeln!(md);
        let _ = writeln!(md, "| program | runs | runs/s | ns per run | total ms |");
        let _ = writeln!(md, "|---|---|---|---|---|");
        let mut rows: Vec<&(String, u64, u64)> = m.programs.iter().filter(|p| p.1 > 0).collect();
        rows.sort_by_key(|p| std::cmp::Reverse(p.1));
        for (name, runs, ns) in rows {
            let _ = writeln!(
                md,
                "| {name} | {runs} | {:.0} | {} | {:.2} |",
                *runs as f64 / m.wall_s.max(1e-3),
                ns / runs.max(&1),
                *ns as f64 / 1e6
            );
        }
    }
    md
}

/// `tool`'s measured programs, if it ran.
fn of(costs: &[(Tool, Measured)], tool: Tool) -> Option<&Measured> {
    costs.iter().find(|(t, _)| *t == tool).map(|(_, m)| m)
}

/// The programs that take and book kernel stacks ("where reclaim was
/// entered"), and vmtrace's total with and without them; empty unless
/// both vmtrace configurations ran.
pub fn stacks(costs: &[(Tool, Measured)]) -> String {
    let get = |t: Tool| of(costs, t);
    let (Some(with), Some(without)) = (get(Tool::Vmtrace), get(Tool::VmtraceNoStacks)) else {
        return String::new();
    };
    let mut md = String::new();
    let _ = writeln!(md);
    let _ = writeln!(
        md,
        "Kernel stacks (`--no-stacks` turns them off), one untimed run of each with kernel.bpf_stats_enabled:"
    );
    let _ = writeln!(md);
    let _ = writeln!(
        md,
        "| program | with stacks: runs | ns/run | ms | without: runs | ns/run | ms |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    let mut names: Vec<&str> = with
        .programs
        .iter()
        .filter(|p| p.1 > 0)
        .map(|p| p.0.as_str())
        .filter(|n| n.starts_with("entry_") || n.contains("reclaim_"))
        .collect();
    names.sort_unstable();
    for name in names {
        let (w, wo) = (
            find(&with.programs, name, false),
            find(&without.programs, name, false),
        );
        let _ = writeln!(
            md,
            "| {name} | {} | {} | {} | {} | {} | {} |",
            runs(w),
            per_run(w),
            w.map_or("-".into(), |p| ms(p.2)),
            runs(wo),
            per_run(wo),
            wo.map_or("-".into(), |p| ms(p.2)),
        );
    }
    let total = |m: &Measured| m.programs.iter().map(|p| p.2).sum::<u64>();
    let entry: u64 = with
        .programs
        .iter()
        .filter(|p| p.0.starts_with("entry_"))
        .map(|p| p.2)
        .sum();
    let _ = writeln!(md);
    let _ = writeln!(
        md,
        "All of vmtrace's programs: {} ms with stacks ({} ms of it the entry programs), {} ms without; per run of the workload {:.2} s and {:.2} s elapsed.",
        ms(total(with)),
        ms(entry),
        ms(total(without)),
        with.wall_s,
        without.wall_s
    );
    md
}

/// The side-by-side table and the totals; empty without both tools.
pub fn side_by_side(costs: &[(Tool, Measured)]) -> String {
    let get = |t: Tool| of(costs, t);
    let (Some(vm), Some(bt)) = (get(Tool::Vmtrace), get(Tool::Bpftrace)) else {
        return String::new();
    };
    let mut md = String::new();
    let _ = writeln!(md);
    let _ = writeln!(
        md,
        "eBPF run time per signal, one untimed run each with kernel.bpf_stats_enabled (ns per run includes the ~20 ns bpf_stats adds):"
    );
    let _ = writeln!(md);
    let _ = writeln!(
        md,
        "The empty column is an empty program on the same hook (bpftrace, classic tracepoints), run once more: the floor no program there can go under. The clock column is a program there that only reads the clock (bpf_ktime_get_ns), run once more: the floor of a program that times a span (reclaim begin/end, swap I/O issue/complete, shrinker start/end)."
    );
    let _ = writeln!(md);
    let _ = writeln!(
        md,
        "| signal | vmtrace runs | vmtrace ns/run | empty ns/run | clock ns/run | bpftrace runs | bpftrace ns/run | vmtrace / bpftrace |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    // The two floors, "empty | clock".
    let floor = |ours: Option<&str>| -> String {
        [Tool::EmptyPrograms, Tool::ClockPrograms]
            .map(|t| match (ours, get(t)) {
                (Some(o), Some(m)) => per_run(find(&m.programs, o, true)),
                _ => "-".into(),
            })
            .join(" | ")
    };
    let mut paired_vm = Vec::new();
    for (probe, ours) in pairs() {
        let b = find(&bt.programs, probe, true);
        let v = ours.and_then(|o| find(&vm.programs, o, false));
        if let Some(o) = ours {
            paired_vm.push(o);
        }
        let ratio = match (v, b) {
            (Some(v), Some(b)) if v.1 > 0 && b.1 > 0 && b.2 > 0 => {
                format!(
                    "{:.2}",
                    (v.2 as f64 / v.1 as f64) / (b.2 as f64 / b.1 as f64)
                )
            }
            _ => "-".into(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {ratio} |",
            ours.unwrap_or("(none: counts read at exit)"),
            runs(v),
            per_run(v),
            floor(ours),
            runs(b),
            per_run(b),
        );
    }
    let mut only: Vec<&(String, u64, u64)> = vm
        .programs
        .iter()
        .filter(|p| p.1 > 0 && !paired_vm.contains(&p.0.as_str()))
        .collect();
    only.sort_by_key(|p| std::cmp::Reverse(p.2));
    for p in only {
        let _ = writeln!(
            md,
            "| {} (vmtrace only) | {} | {} | {} | - | - | - |",
            p.0,
            p.1,
            p.2 / p.1.max(1),
            floor(Some(&p.0)),
        );
    }
    let vm_total: u64 = vm.programs.iter().map(|p| p.2).sum();
    let bt_same: u64 = bt
        .programs
        .iter()
        .filter(|p| pairs().any(|(probe, ours)| ours.is_some() && probe_of(&p.0) == probe))
        .map(|p| p.2)
        .sum();
    let bt_total: u64 = bt.programs.iter().map(|p| p.2).sum();
    let _ = writeln!(md);
    let _ = writeln!(
        md,
        "Totals: vmtrace, every default program: {} ms; bpftrace, the same signals (its programs less page_fault_user): {} ms ({} ms with it). Ratio of totals: {:.2}.",
        ms(vm_total),
        ms(bt_same),
        ms(bt_total),
        vm_total as f64 / bt_same.max(1) as f64
    );
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(programs: &[(&str, u64, u64)]) -> Measured {
        Measured {
            programs: programs
                .iter()
                .map(|&(n, r, ns)| (n.to_string(), r, ns))
                .collect(),
            ..Measured::default()
        }
    }

    #[test]
    fn stacks_table_sets_the_entry_programs_beside_the_pair() {
        let with = measured(&[
            ("memcg_reclaim_begin", 10, 2_500),
            ("entry_memcg_begin", 10, 40_000),
            ("write_folio", 100, 7_500),
        ]);
        let without = measured(&[
            ("memcg_reclaim_begin", 12, 2_400),
            ("write_folio", 90, 7_000),
        ]);
        assert_eq!(stacks(&[(Tool::Vmtrace, with.clone())]), "");
        let md = stacks(&[(Tool::Vmtrace, with), (Tool::VmtraceNoStacks, without)]);
        assert!(
            md.contains("| entry_memcg_begin | 10 | 4000 | 0.0 | - | - | - |"),
            "{md}"
        );
        assert!(
            md.contains("| memcg_reclaim_begin | 10 | 250 | 0.0 | 12 | 200 | 0.0 |"),
            "{md}"
        );
        assert!(!md.contains("write_folio"), "{md}");
        assert!(
            md.contains("0.1 ms with stacks (0.0 ms of it the entry programs), 0.0 ms without"),
            "{md}"
        );
    }

    #[test]
    fn pairs_signals_and_totals_the_same_ones() {
        let vm = measured(&[
            ("write_folio", 100, 5_000),
            ("lru_shrink_active", 10, 1_000),
        ]);
        let bt = measured(&[
            ("7 (write_folio)", 100, 10_000),
            ("10 (page_fault_user)", 50, 9_000),
        ]);
        let empty = measured(&[
            ("1 (write_folio)", 200, 8_000),
            ("2 (lru_shrink_active)", 0, 0),
        ]);
        let clock = measured(&[("1 (write_folio)", 100, 4_500)]);
        let md = side_by_side(&[
            (Tool::Vmtrace, vm),
            (Tool::Bpftrace, bt),
            (Tool::EmptyPrograms, empty),
            (Tool::ClockPrograms, clock),
        ]);
        // vmtrace 50 ns, an empty program 40, one that reads the clock
        // 45, bpftrace 100.
        assert!(
            md.contains("| write_folio | 100 | 50 | 40 | 45 | 100 | 100 | 0.50 |"),
            "{md}"
        );
        assert!(
            md.contains("| lru_shrink_active (vmtrace only) | 10 | 100 | - | - | - | - | - |"),
            "{md}"
        );
        // vmtrace 6000 ns in all vs bpftrace 10000 for the same signals.
        assert!(md.contains("Ratio of totals: 0.60."), "{md}");
    }
}
