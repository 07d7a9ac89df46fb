//! The signals the cost tables compare, one per hook: vmtrace's program
//! there and bpftrace's. vmtrace's names are checked against the probe
//! listing vmtrace prints (`vmtrace probes --json`) at the start of every
//! bench, and in a unit test against the listing vmtrace plans from its
//! catalogue on the format files of real kernels: a program renamed or
//! moved to another hook in probe-user is a line at the bench's start and
//! a failed test, not a row of dashes in the tables.

use std::{path::Path, process::Command};

use serde::Deserialize;
use vmtrace_model::probes::Listed;

/// A signal the cost tables compare, one per hook: vmtrace's program
/// there and bpftrace's.
pub struct Signal {
    /// The hook, as bpftrace names an attach point. Classic tracepoints
    /// throughout: bpftrace 0.17 has no BTF tracepoints, which vmtrace
    /// uses for block_rq_issue/complete, page_fault_kernel and
    /// sched_switch/sched_wakeup (a BTF tracepoint skips the record
    /// copy, which bpf_stats does not time anyway). `profile:hz:N` is
    /// the CPU-clock sampler on every CPU.
    pub hook: &'static str,
    /// vmtrace's default program there; None where vmtrace runs none (per-
    /// process fault counts: vmtrace reads the kernel's per-task counters
    /// at exit). The floor programs (`Tool::EmptyPrograms`,
    /// `Tool::ClockPrograms`) go on the hooks that have one, named by it.
    pub vmtrace: Option<&'static str>,
    /// bpftrace's program there in BPFTRACE_SCRIPT, as the tables name it
    /// (the kernel keeps only 15 characters of its own name); None where
    /// the script records nothing.
    pub bpftrace: Option<&'static str>,
}

const fn signal(
    hook: &'static str,
    vmtrace: Option<&'static str>,
    bpftrace: Option<&'static str>,
) -> Signal {
    Signal {
        hook,
        vmtrace,
        bpftrace,
    }
}

/// Every signal, in the order of the side-by-side cost table.
pub const SIGNALS: &[Signal] = &[
    signal(
        "tracepoint:vmscan:mm_vmscan_direct_reclaim_begin",
        Some("direct_reclaim_begin"),
        Some("direct_reclaim_begin"),
    ),
    signal(
        "tracepoint:vmscan:mm_vmscan_memcg_reclaim_begin",
        Some("memcg_reclaim_begin"),
        Some("memcg_reclaim_begin"),
    ),
    signal(
        "tracepoint:vmscan:mm_vmscan_direct_reclaim_end",
        Some("direct_reclaim_end"),
        Some("direct_reclaim_end"),
    ),
    signal(
        "tracepoint:vmscan:mm_vmscan_memcg_reclaim_end",
        Some("memcg_reclaim_end"),
        Some("memcg_reclaim_end"),
    ),
    signal(
        "tracepoint:vmscan:mm_vmscan_lru_shrink_inactive",
        Some("lru_shrink_inactive"),
        Some("lru_shrink_inactive"),
    ),
    signal(
        "tracepoint:vmscan:mm_vmscan_kswapd_wake",
        Some("kswapd_wake"),
        Some("kswapd_wake"),
    ),
    signal(
        "tracepoint:vmscan:mm_vmscan_write_folio",
        Some("write_folio"),
        Some("write_folio"),
    ),
    signal(
        "tracepoint:block:block_rq_issue",
        Some("block_rq_issue"),
        Some("block_rq_issue"),
    ),
    signal(
        "tracepoint:block:block_rq_complete",
        Some("block_rq_complete"),
        Some("block_rq_complete"),
    ),
    signal(
        "tracepoint:exceptions:page_fault_user",
        None,
        Some("page_fault_user"),
    ),
    signal(
        "software:major-faults:1",
        Some("major_fault"),
        Some("major-faults"),
    ),
    signal(
        "tracepoint:vmscan:mm_shrink_slab_start",
        Some("shrink_slab_start"),
        Some("shrink_slab_start"),
    ),
    signal(
        "tracepoint:vmscan:mm_shrink_slab_end",
        Some("shrink_slab_end"),
        Some("shrink_slab_end"),
    ),
    signal(
        "tracepoint:vmscan:mm_vmscan_lru_isolate",
        Some("lru_isolate"),
        Some("lru_isolate"),
    ),
    // The split of a stall at the scheduler; vmtrace attaches both as
    // BTF tracepoints.
    signal(
        "tracepoint:sched:sched_switch",
        Some("sched_switch"),
        Some("sched_switch"),
    ),
    signal(
        "tracepoint:sched:sched_wakeup",
        Some("sched_wakeup"),
        Some("sched_wakeup"),
    ),
    // The CPU profile, at vmtrace's PROFILE_HZ (probe-user catalogue).
    signal("profile:hz:499", Some("profile"), Some("profile")),
    signal(
        "tracepoint:vmscan:mm_vmscan_lru_shrink_active",
        Some("lru_shrink_active"),
        None,
    ),
    signal(
        "tracepoint:vmscan:mm_vmscan_kswapd_sleep",
        Some("kswapd_sleep"),
        None,
    ),
    signal(
        "tracepoint:vmscan:mm_vmscan_wakeup_kswapd",
        Some("wakeup_kswapd"),
        None,
    ),
];

/// The bench's hook as vmtrace's listing names a hook: software events
/// as perf names them (bpftrace's `major-faults` is PAGE_FAULTS_MAJ).
const SOFTWARE_EVENTS: &[(&str, &str)] = &[("major-faults", "PAGE_FAULTS_MAJ")];

/// Whether the bench's `hook` (bpftrace's attach point) is vmtrace's
/// `listed` hook: the same tracepoint (vmtrace may attach to it as a BTF
/// tracepoint; an unplanned hook lists its alternative events as
/// `a|b`), or the same perf software event (the profile: the CPU clock
/// at the same frequency).
fn same_hook(hook: &str, listed: &str) -> bool {
    if let Some(tp) = hook.strip_prefix("tracepoint:") {
        let Some((system, event)) = tp.split_once(':') else {
            return false;
        };
        let theirs = listed
            .strip_prefix("tracepoint ")
            .or_else(|| listed.strip_prefix("BTF tracepoint "));
        return theirs
            .and_then(|t| t.split_once(':'))
            .is_some_and(|(s, events)| s == system && events.split('|').any(|e| e == event));
    }
    if let Some(hz) = hook.strip_prefix("profile:hz:") {
        return listed == format!("perf software event CPU_CLOCK at {hz} Hz");
    }
    let Some(sw) = hook.strip_prefix("software:") else {
        return false;
    };
    let name = sw.split(':').next().unwrap_or(sw);
    SOFTWARE_EVENTS
        .iter()
        .any(|&(ours, perf)| ours == name && listed == format!("perf software event {perf}"))
}

/// Where the table and vmtrace's listing differ, one phrase each: a
/// program of the table that vmtrace does not have, or has on another
/// hook. Empty when they agree.
pub fn differences(listed: &[Listed]) -> Vec<String> {
    let mut out = Vec::new();
    for s in SIGNALS {
        let Some(ours) = s.vmtrace else { continue };
        let hooks: Vec<&str> = listed
            .iter()
            .flat_map(|m| m.programs.iter().zip(&m.hooks))
            .filter(|(p, _)| *p == ours)
            .map(|(_, h)| h.as_str())
            .collect();
        if hooks.is_empty() {
            out.push(format!("{ours} is not a program of vmtrace's"));
        } else if !hooks.iter().any(|h| same_hook(s.hook, h)) {
            out.push(format!("{ours} is on {}, not {}", hooks[0], s.hook));
        }
    }
    out
}

/// What `vmtrace probes --json` prints, as far as the check reads it.
#[derive(Deserialize)]
struct ProbesDocument {
    probes: Vec<Listed>,
}

/// The metrics of a `vmtrace probes --json` document.
pub fn parse_probes(json: &str) -> anyhow::Result<Vec<Listed>> {
    Ok(serde_json::from_str::<ProbesDocument>(json)?.probes)
}

/// Checks the table against what `vmtrace probes --json` of the binary
/// the bench runs says; one line on stderr either way (a difference does
/// not stop the bench: its tables then show which rows it concerns).
pub fn check_against(vmtrace: &Path) {
    let listed = Command::new(vmtrace)
        .args(["probes", "--json"])
        .output()
        .map_err(anyhow::Error::from)
        .and_then(|o| {
            if !o.status.success() {
                anyhow::bail!("{}", String::from_utf8_lossy(&o.stderr).trim());
            }
            parse_probes(&String::from_utf8_lossy(&o.stdout))
        });
    match listed.map(|l| differences(&l)) {
        Err(e) => {
            eprintln!("bench: the signal table was not checked: `vmtrace probes --json`: {e:#}")
        }
        Ok(d) if d.is_empty() => eprintln!(
            "bench: the signal table agrees with `vmtrace probes --json` ({} programs)",
            SIGNALS.iter().filter(|s| s.vmtrace.is_some()).count()
        ),
        Ok(d) => eprintln!(
            "bench: WARNING: the signal table (xtask/bench/src/signals.rs) differs from \
             `vmtrace probes --json`: {}",
            d.join("; ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vmtrace::kernel::{probes::listing, tracefs::TraceFs};

    /// vmtrace's listing planned on each kernel's format files under
    /// probe-user/tests/kernel-formats (no BTF, no root), as the JSON
    /// `vmtrace probes --json` prints and the bench reads back.
    fn listings() -> Vec<(String, Vec<Listed>)> {
        let formats =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../probe-user/tests/kernel-formats");
        let mut out = Vec::new();
        let dirs = std::fs::read_dir(&formats).expect("kernel-formats");
        for e in dirs.flatten().filter(|e| e.path().is_dir()) {
            let kernel = e.file_name().to_string_lossy().into_owned();
            let listed = listing(&TraceFs::at(&e.path()), None).expect("listing");
            let doc = vmtrace::view::json::ProbesDocument {
                kernel: &kernel,
                probes: &listed,
            };
            let json = vmtrace::view::json::to_json(&doc).expect("json");
            out.push((kernel, parse_probes(&json).expect("reads back")));
        }
        assert!(out.len() >= 3, "{} kernels' formats", out.len());
        out
    }

    #[test]
    fn the_table_names_vmtraces_programs_on_their_hooks() {
        for (kernel, listed) in listings() {
            assert_eq!(differences(&listed), Vec::<String>::new(), "{kernel}");
        }
    }

    #[test]
    fn a_program_renamed_or_moved_in_vmtrace_is_a_difference() {
        let (_, mut listed) = listings().remove(0);
        for m in &mut listed {
            for (p, h) in m.programs.iter_mut().zip(&mut m.hooks) {
                if p == "write_folio" {
                    *p = "swap_out_folio".into();
                }
                if p == "kswapd_wake" {
                    *h = "tracepoint vmscan:mm_vmscan_kswapd_sleep".into();
                }
            }
        }
        assert_eq!(
            differences(&listed),
            [
                "kswapd_wake is on tracepoint vmscan:mm_vmscan_kswapd_sleep, not \
                 tracepoint:vmscan:mm_vmscan_kswapd_wake",
                "write_folio is not a program of vmtrace's",
            ]
        );
    }

    #[test]
    fn hooks_are_matched_across_the_two_namings() {
        let tp = "tracepoint:block:block_rq_issue";
        assert!(same_hook(tp, "BTF tracepoint block:block_rq_issue"));
        assert!(same_hook(tp, "tracepoint block:block_rq_issue"));
        assert!(!same_hook(tp, "tracepoint block:block_rq_complete"));
        assert!(same_hook(
            "tracepoint:vmscan:mm_vmscan_write_folio",
            "tracepoint vmscan:mm_vmscan_writepage|mm_vmscan_write_folio"
        ));
        assert!(same_hook(
            "software:major-faults:1",
            "perf software event PAGE_FAULTS_MAJ"
        ));
        assert!(!same_hook(
            "software:major-faults:1",
            "perf software event PAGE_FAULTS_MIN"
        ));
        assert!(same_hook(
            "profile:hz:499",
            "perf software event CPU_CLOCK at 499 Hz"
        ));
        assert!(!same_hook(
            "profile:hz:499",
            "perf software event CPU_CLOCK at 997 Hz"
        ));
    }

    #[test]
    fn the_profile_samples_at_vmtraces_frequency() {
        let hook = format!("profile:hz:{}", vmtrace::kernel::probes::PROFILE_HZ);
        let s = SIGNALS.iter().find(|s| s.hook == hook);
        assert_eq!(s.and_then(|s| s.vmtrace), Some("profile"), "{hook}");
    }

    #[test]
    fn each_hook_and_program_is_one_signal() {
        for names in [
            SIGNALS.iter().map(|s| Some(s.hook)).collect::<Vec<_>>(),
            SIGNALS.iter().map(|s| s.vmtrace).collect(),
            SIGNALS.iter().map(|s| s.bpftrace).collect(),
        ] {
            let mut named: Vec<&str> = names.into_iter().flatten().collect();
            let n = named.len();
            named.sort();
            named.dedup();
            assert_eq!(named.len(), n, "named twice: {named:?}");
        }
    }
}
