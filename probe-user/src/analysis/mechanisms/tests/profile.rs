//! Mechanisms that read the job's CPU profile: page-cache fill CPU and
//! reclaim's TLB-flush IPIs.

use super::*;

/// The 03 calibration's case (refault detection off, a new working set
/// read with read()): every extra page reclaimed is a page needed
/// again, and the job's extra system CPU is spent filling the page
/// cache with them again (sampled). Refaults claim that CPU, not
/// "system CPU": named first with most of the difference.
#[test]
fn refaults_claim_the_cpu_of_filling_the_page_cache_again() {
    use crate::model::profile::{ProfileReport, ProfileStack};
    let run = |i: u64, worse: bool| {
        let mut r = measured_run(i, false, 0, 0, false);
        let k = i as f64 * 0.01;
        let (refaults, fill) = if worse { (400_000, 3.0) } else { (33_000, 0.5) };
        r.vmstat.refaults = refaults + i;
        r.vmstat.pgsteal = refaults + 5_000 + i;
        r.usage.sys_s += fill + k;
        r.usage.wall_s += fill + k;
        let samples = |s: f64| (s * 499.0) as u64;
        r.profile = Some(ProfileReport {
            hz: 499,
            user_samples: samples(r.usage.user_s),
            lost_samples: 0,
            stacks: vec![
                ProfileStack {
                    frames: vec!["ext4_mpage_readpages".into(), "read_pages".into()],
                    samples: samples(fill + k),
                },
                ProfileStack {
                    frames: vec!["copy_page_to_iter".into(), "filemap_read".into()],
                    samples: samples(r.usage.sys_s - fill - k),
                },
            ],
            other_samples: 0,
            counted_kernel_samples: None,
        });
        r
    };
    let a: Vec<RunReport> = (0..3).map(|i| run(i, false)).collect();
    let b: Vec<RunReport> = (0..3).map(|i| run(i, true)).collect();
    let (_, diff, hints) = hints_of(&a, &b);
    let first = &hints[0];
    assert_eq!(first.mechanism, Mechanism::Refaults, "{hints:#?}");
    assert!(
        first.seconds >= 0.6 * diff,
        "{} of {diff}: {hints:#?}",
        first.seconds
    );
    assert!(
        super::text(first).contains("page-cache fill CPU"),
        "{}",
        super::text(first)
    );
    let sys = hints
        .iter()
        .find(|h| h.mechanism == Mechanism::SystemCpu)
        .map_or(0.0, |h| h.seconds);
    assert!(sys <= 0.2 * diff, "{sys} of {diff}: {hints:#?}");
}

/// A run of one thread whose reclaim spends `cross` s of its on-CPU
/// time in cross-CPU calls (sampled), runnable `behind` s behind other
/// tasks, which keep `load` CPUs busy; `extra` s longer than 7 s.
fn flushing_run(i: u64, cross: f64, behind: f64, load: f64, extra: f64) -> RunReport {
    use crate::model::histogram::summarize;
    use crate::model::profile::{ProfileReport, ProfileStack};
    use crate::model::report::*;
    let k = i as f64 * 0.02;
    let (cross, wall) = (cross + k, 7.0 + extra + k);
    let ns = |s: f64| (s * 1e9) as u64;
    let (user, sys, on_cpu) = (0.2, 3.5 + cross, 1.0 + cross);
    let samples = |s: f64| (s * 499.0) as u64;
    let mut stalls = summarize(&[]);
    stalls.total_ns = ns(on_cpu);
    let reclaim = vec![
        "shrink_folio_list".into(),
        "try_to_free_mem_cgroup_pages".into(),
    ];
    let flush = [
        vec![
            "smp_call_function_many_cond".into(),
            "arch_tlbbatch_flush".into(),
        ],
        reclaim.clone(),
    ]
    .concat();
    RunReport {
        usage: Usage {
            wall_s: wall,
            user_s: user,
            sys_s: sys,
            ..Default::default()
        },
        machine_cpu: Some(MachineCpu {
            cpus: 2,
            user_s: user + load * wall,
            system_s: sys,
            idle_s: (2.0 * wall - user - sys - load * wall).max(0.0),
            ..Default::default()
        }),
        memcg_reclaim: Some(ReclaimReport {
            stalls,
            pages_reclaimed: 1,
            split: Some(StallSplit {
                on_cpu_ns: ns(on_cpu),
                wall_ns: ns(on_cpu),
                ..Default::default()
            }),
        }),
        io_waits: Some(IoWaitReport {
            waits: 100,
            total_ns: ns(3.0),
        }),
        runnable: Some(RunnableReport {
            behind_others_ns: ns(behind),
            waits: 100,
            ..Default::default()
        }),
        profile: Some(ProfileReport {
            hz: 499,
            user_samples: samples(user),
            lost_samples: 0,
            stacks: vec![
                ProfileStack {
                    frames: flush,
                    samples: samples(cross),
                },
                ProfileStack {
                    frames: reclaim,
                    samples: samples(1.0),
                },
            ],
            other_samples: samples(2.5),
            counted_kernel_samples: None,
        }),
        ..Default::default()
    }
}

/// The host calibration's hog case: a CPU hog pinned on each CPU in B.
/// The job waits behind them, and its reclaim's TLB-flush IPIs wait on
/// the CPUs they keep busy (0.1 -> 1.4 s, where an idle CPU in lazy-TLB
/// mode is skipped). Both are CPU contention; reclaim claims nothing.
/// With the hogs in both groups (their load unchanged) and more flushes
/// in B, the flushes are reclaim's own.
#[test]
fn flush_ipis_to_cpus_busy_with_other_tasks_are_contention() {
    let a: Vec<RunReport> = (0..3)
        .map(|i| flushing_run(i, 0.1, 0.02, 0.0, 0.0))
        .collect();
    let b: Vec<RunReport> = (0..3)
        .map(|i| flushing_run(i, 1.4, 4.6, 1.9, 5.9))
        .collect();
    let (_, diff, hints) = hints_of(&a, &b);
    assert_eq!(hints[0].mechanism, Mechanism::CpuContention, "{hints:#?}");
    assert!(hints[0].seconds > 0.95 * diff, "{diff}: {hints:#?}");
    assert!(
        super::text(&hints[0]).contains("TLB-flush IPIs"),
        "{}",
        super::text(&hints[0])
    );
    assert!(
        hints
            .iter()
            .all(|h| h.mechanism != Mechanism::Reclaim || h.seconds < 0.05 * diff)
    );

    let a: Vec<RunReport> = (0..3)
        .map(|i| flushing_run(i, 0.1, 0.02, 1.9, 0.0))
        .collect();
    let b: Vec<RunReport> = (0..3)
        .map(|i| flushing_run(i, 1.4, 0.02, 1.9, 1.3))
        .collect();
    let (_, diff, hints) = hints_of(&a, &b);
    assert_eq!(hints[0].mechanism, Mechanism::Reclaim, "{hints:#?}");
    assert!(hints[0].seconds > 0.9 * diff, "{diff}: {hints:#?}");
    assert!(
        super::text(&hints[0]).contains("TLB-flush IPIs"),
        "{}",
        super::text(&hints[0])
    );
}

/// The calibration's moved hog: rusage books the job `booked` s more
/// system time in B while the profile samples its kernel CPU outside
/// reclaim at `seen` s more. "System CPU" claims only the share the
/// samples moved with: none when they did not move, all when they
/// moved with it (and without a profile, all, as before).
#[test]
fn system_cpu_claims_only_what_the_sampler_saw() {
    use crate::model::profile::{ProfileReport, ProfileStack};
    let claim = |booked: f64, seen: f64, profile: bool| {
        let run = |i: u64, worse: bool| {
            let mut r = measured_run(i, false, 0, 0, false);
            let k = i as f64 * 0.01;
            let (sys, sampled) = if worse { (booked, seen) } else { (0.0, 0.0) };
            let kernel = r.usage.sys_s + sampled + k;
            r.usage.sys_s += sys + k;
            r.usage.wall_s += sys + k;
            // The machine's CPU time books it too (the job's CPU is
            // part of the machine's, not another task's).
            if let Some(m) = r.machine_cpu.as_mut() {
                m.system_s += sys + k;
                m.idle_s += sys + k;
            }
            if profile {
                r.profile = Some(ProfileReport {
                    hz: 499,
                    user_samples: (r.usage.user_s * 499.0) as u64,
                    lost_samples: 0,
                    stacks: vec![ProfileStack {
                        frames: vec!["clear_page_erms".into(), "do_anonymous_page".into()],
                        samples: (kernel * 499.0) as u64,
                    }],
                    other_samples: 0,
                    counted_kernel_samples: None,
                });
            }
            r
        };
        let a: Vec<RunReport> = (0..3).map(|i| run(i, false)).collect();
        let b: Vec<RunReport> = (0..3).map(|i| run(i, true)).collect();
        let (_, diff, hints) = hints_of(&a, &b);
        let sys = hints.iter().find(|h| h.mechanism == Mechanism::SystemCpu);
        (sys.map_or(-1.0, |h| h.seconds) / diff, hints)
    };
    let (none, hints) = claim(1.0, 0.0, true);
    assert!(none.abs() < 1e-9, "unseen: {none}: {hints:#?}");
    assert!(
        hints
            .iter()
            .any(|h| super::text(h).contains("sampled outside reclaim")),
        "{hints:#?}"
    );
    let (half, _) = claim(1.0, 0.5, true);
    let (all, hints) = claim(1.0, 1.0, true);
    assert!(all > 0.5, "seen: {all}: {hints:#?}");
    assert!((half - all / 2.0).abs() < 0.05 * all, "{half} vs {all}");
    let (old, _) = claim(1.0, 0.0, false);
    assert!((old - all).abs() < 0.05 * all, "no profile: {old} vs {all}");
}
