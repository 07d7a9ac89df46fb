//! The explanation of `vmtrace compare`, as typed results: groups of
//! recordings (repeated runs of one configuration, one group per kernel
//! or setting), each measure's summary and change against the baseline
//! with its significance, the attribution of the elapsed-time
//! difference, the guards (settings that redefine measures) and the
//! likely mechanisms. Pure functions of recordings, no I/O; views
//! (view/compare) only print what this returns.
//!
//! The first group is the baseline. Only runs that completed count in the
//! statistics (OOM-killed, failed and interrupted runs are listed apart,
//! and an OOM kill is itself a finding).
//!
//! This module holds the comparison's data types, `compare` and the
//! verdict on each group; the parts are in `groups` (checks, labels,
//! runs), `measures` (what is compared: typed keys), `attribution`
//! (where the time went), `guards` (settings that redefine measures),
//! `mechanisms` (likely causes), `stats` (Welch's t-test) and `sweep`
//! (one comparison per sweep value).

pub mod attribution;
pub mod entries;
pub mod fleet;
pub mod groups;
pub mod guards;
pub mod hint;
pub mod measures;
pub mod mechanism;
pub mod mechanisms;
pub mod profile;
pub mod readings;
pub mod stats;
pub mod sweep;

pub use attribution::Component;
pub use guards::Setting;
pub use hint::Hint;
pub use measures::{Measure, Unit};
pub use mechanism::Mechanism;

use anyhow::{Result, bail};
use serde::Serialize;

use crate::{model::recording::Recording, model::report::RunReport};
use stats::{Describe, Welch};

/// Significance threshold of the marks and of "within noise".
pub const ALPHA: f64 = 0.05;

/// What `compare` is given: a group's label and its recordings.
pub struct GroupInput<'a> {
    /// None: derived (kernel release, or the setting that differs).
    pub label: Option<String>,
    pub files: Vec<String>,
    pub recordings: Vec<&'a Recording>,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Comparison {
    pub test: String,
    pub groups: Vec<GroupInfo>,
    /// Things that make the groups hard to compare (machines, memory).
    pub warnings: Vec<String>,
    /// Settings that differ between the groups (the point of an A/B).
    pub settings: Vec<String>,
    pub metrics: Vec<MetricRow>,
    /// One per group after the baseline.
    pub versus: Vec<Versus>,
    pub attribution: Vec<AttributionRow>,
    /// Settings that differ and change what some metrics mean.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<guards::Guard>,
    /// Where reclaim was entered, per way in (runs with entry stacks).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<entries::EntryRow>,
    /// Inside reclaim and compaction: each kernel function's share of
    /// the job's sampled CPU there (most samples first; empty without
    /// profiles).
    pub profile: Vec<profile::ProfileRow>,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct GroupInfo {
    pub label: String,
    pub kernel_release: String,
    pub files: Vec<String>,
    /// Runs that completed (the statistics use these).
    pub runs: usize,
    pub oom_killed: usize,
    /// The OOM killer's victims over all the group's runs, by command
    /// name, most killed first (`oom:mark_victim`).
    pub oom_victims: Vec<VictimCount>,
    /// Runs that failed otherwise or were interrupted.
    pub failed: usize,
}

/// How often the OOM killer chose a command name in a group's runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct VictimCount {
    pub comm: String,
    /// Victims of the command's own (`OomVictimReport::target`).
    pub target: bool,
    pub kills: usize,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct MetricRow {
    pub measure: Measure,
    pub unit: Unit,
    /// Whose tasks it counts (the measure's; serialised for readers).
    pub scope: measures::Scope,
    /// Per group (None: no run of the group has the metric).
    pub groups: Vec<Option<Describe>>,
    /// Per group after the baseline.
    pub changes: Vec<Option<Change>>,
    /// The setting that changes this metric's meaning between the
    /// groups (`guards`): not a cause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guard: Option<Setting>,
}

#[derive(Clone, Copy, Debug, Serialize, schemars::JsonSchema)]
pub struct Change {
    pub diff: f64,
    /// Relative to the baseline mean (None when that is 0).
    pub pct: Option<f64>,
    /// None: fewer than two runs in a group, or both constant.
    pub welch: Option<Welch>,
}

impl Change {
    pub fn significant(&self) -> bool {
        self.welch.is_some_and(|w| w.p < ALPHA)
    }
}

/// A group against the baseline: the verdict on elapsed time and the
/// mechanisms behind it.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Versus {
    pub label: String,
    pub elapsed: Option<Change>,
    /// Whether significance can be judged (two runs or more per group).
    pub judgeable: bool,
    pub verdict: Verdict,
    /// Share of the elapsed difference the attribution accounts for, in
    /// [0, 1] (None when there is no difference).
    pub explained: Option<f64>,
    /// The elapsed difference split into explained and unexplained.
    pub split: Option<ElapsedSplit>,
    /// Mechanisms, strongest first; empty when within noise.
    pub hints: Vec<Hint>,
}

/// The verdict on a group's elapsed time against the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Slower,
    Faster,
    /// Not significant: no cause is named.
    WithinNoise,
    /// Fewer than two runs in a group: significance cannot be judged.
    NotJudged,
    /// Every run of one of the two groups was OOM-killed (or failed):
    /// no time to compare, the kills are the difference.
    NoCompletedRun,
}

// Serialised as its id and the name the text prints.
vmtrace_model::keyed!(Verdict, Verdict::ALL.into_iter(), Verdict::name);

impl Verdict {
    pub const ALL: [Verdict; 5] = [
        Verdict::Slower,
        Verdict::Faster,
        Verdict::WithinNoise,
        Verdict::NotJudged,
        Verdict::NoCompletedRun,
    ];

    /// As printed: "slower", "faster", "within noise", "not judged".
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Slower => "slower",
            Verdict::Faster => "faster",
            Verdict::WithinNoise => "within noise",
            Verdict::NotJudged => "not judged",
            Verdict::NoCompletedRun => "no completed run",
        }
    }
}

/// One component of the job's time budget (CPU-seconds or task-seconds,
/// `unit`), and its part of each elapsed difference.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct AttributionRow {
    pub component: Component,
    /// The unit of `means` and `diffs`: "CPU-s" (CPU time) or "task-s"
    /// (waits, summed over the job's tasks).
    pub unit: &'static str,
    /// Mean seconds per run, per group.
    pub means: Vec<f64>,
    /// Per group after the baseline: the difference to it.
    pub diffs: Vec<f64>,
    /// Per group after the baseline: elapsed seconds attributed to the
    /// component, with the sign of the elapsed difference and never
    /// larger than it (0 when it moved against it or not at all).
    pub elapsed: Vec<f64>,
    /// Per group after the baseline: its share of the explained elapsed
    /// seconds, in [0, 1] (None when it explains none).
    pub shares: Vec<Option<f64>>,
    /// Per group after the baseline: when it moved against the elapsed
    /// difference, the elapsed seconds it offset (opposite sign), else 0.
    pub offsets: Vec<f64>,
    /// The guard of a measure the component is computed from: its
    /// meaning differs between the groups, so it explains nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guard: Option<Setting>,
    /// Computed from its older source (`Component::fallback_note`): some
    /// run lacks the measured one.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fallback: bool,
}

/// A group's elapsed difference to the baseline split into what the
/// budget's components explain and what they do not; `explained` plus
/// `unexplained` is `difference`, both with its sign.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ElapsedSplit {
    /// Mean elapsed seconds, this group less the baseline.
    pub difference: f64,
    pub explained: f64,
    pub unexplained: f64,
    /// Elapsed seconds of the components that moved against the
    /// difference, netted out of the explained parts (opposite sign).
    pub offsets: f64,
    /// Factor (<= 1) applied when the components came to more than the
    /// difference.
    pub scale: f64,
    /// The machine's busy CPU-seconds per elapsed second, baseline and
    /// this group (None without the machine's CPU time).
    pub busy_cpus: [Option<f64>; 2],
    /// The job's CPU-seconds per elapsed second, baseline and this
    /// group, where CPU-seconds convert at the job's own rate (None:
    /// they convert at the machine's, an older recording).
    pub job_cpus: [Option<f64>; 2],
    /// The job's concurrency: its CPU-seconds and wait task-seconds per
    /// elapsed second, baseline and this group.
    pub concurrency: [Option<f64>; 2],
    /// Elapsed seconds a CPU-second stood for (1 / the job's CPUs, at
    /// most 1, the mean of the two groups'; in older recordings 1 / the
    /// machine's busy CPUs, or without them the same as a wait's).
    pub seconds_per_cpu_second: f64,
    /// Elapsed seconds a wait task-second stood for (1 / concurrency, at
    /// most 1, the mean of the two groups').
    pub seconds_per_wait_second: f64,
    /// Waiting for a CPU (delay accounting's run_delay), task-seconds
    /// per run, baseline and this group: a component of the budget (None
    /// without delay accounting).
    pub waiting_for_cpu: [Option<f64>; 2],
}

/// Compares the groups; the first is the baseline.
pub fn compare(inputs: &[GroupInput], force: bool) -> Result<Comparison> {
    if inputs.len() < 2 {
        bail!("compare needs two groups at least: FILE... --vs FILE...");
    }
    for (i, g) in inputs.iter().enumerate() {
        if g.recordings.is_empty() {
            bail!("group {} has no recordings", i + 1);
        }
        // An attach window has no exit status, rusage or elapsed time of
        // the job: none of what compare weighs.
        let attached = g
            .recordings
            .iter()
            .position(|r| r.runs.iter().any(|run| run.report.attached));
        if let Some(k) = attached {
            let file = g.files.get(k).map_or("a recording", String::as_str);
            bail!(
                "{file} is an `attach` recording (no exit status, rusage or \
                 elapsed time of the job): compare takes `vmtrace run` \
                 recordings; use `vmtrace report` for an attach"
            );
        }
    }
    let (mut warnings, settings) = groups::differences(inputs, force)?;
    let labels = groups::labels(inputs);
    let runs = groups::runs(inputs);
    let ok = groups::completed_runs(&runs);
    let groups = groups::infos(inputs, &runs, &ok, &labels);
    if ok
        .iter()
        .flatten()
        .any(|r| measures::delays(r).is_none() && r.io_waits.is_none())
    {
        warnings.push(
            "some runs have no delay accounting (recorded before vmtrace read it, \
             or the kernel lacks it) and no I/O waits timed at the scheduler: \
             their I/O waits count as unexplained"
                .into(),
        );
    }
    // A group whose runs were all OOM-killed still compares: its OOM
    // kills are the difference (the memory statistics of a killed run
    // are not weighed, so its rows stay empty).
    for g in &groups {
        if g.runs == 0 && g.oom_killed == 0 {
            bail!(
                "group {} has no completed run ({} OOM-killed, {} failed): nothing to compare",
                g.label,
                g.oom_killed,
                g.failed
            );
        }
    }
    let mut metrics = measures::rows(&ok);
    let completed: Vec<usize> = groups.iter().map(|g| g.runs).collect();
    warnings.extend(measures::absent(&metrics, &completed));
    let guards = guards::find(inputs, &ok);
    guards::mark(&mut metrics, &guards);
    let (attribution, splits) = attribution::attribute(&ok, &metrics);
    let across_kernels = groups
        .iter()
        .any(|g| g.kernel_release != groups[0].kernel_release);
    let entries = entries::rows(&ok, across_kernels);
    let profile = profile::rows(&ok);
    let found = Found {
        attribution: &attribution,
        splits: &splits,
        entries: &entries,
        profile: &profile,
    };
    let versus = (1..groups.len())
        .map(|g| versus(g, &groups, &metrics, &found, &ok))
        .collect();
    Ok(Comparison {
        test: "Welch's t-test, two-sided".into(),
        groups,
        warnings,
        settings,
        metrics,
        versus,
        attribution,
        guards,
        entries,
        profile,
    })
}

/// What the comparison found besides the measures, that the mechanisms
/// read.
struct Found<'a> {
    attribution: &'a [AttributionRow],
    splits: &'a [ElapsedSplit],
    entries: &'a [entries::EntryRow],
    profile: &'a [profile::ProfileRow],
}

/// Group `g` against the baseline: the verdict on elapsed time, the
/// share of it the attribution explains, and (unless within noise) the
/// mechanisms.
fn versus(
    g: usize,
    groups: &[GroupInfo],
    metrics: &[MetricRow],
    found: &Found,
    ok: &[Vec<&RunReport>],
) -> Versus {
    let judgeable = groups[0].runs >= 2 && groups[g].runs >= 2;
    let elapsed = metrics
        .iter()
        .find(|m| m.measure == Measure::Elapsed)
        .and_then(|m| m.changes[g - 1]);
    let significant = elapsed.is_some_and(|c| c.significant());
    let killed = groups[0].runs == 0 || groups[g].runs == 0;
    let verdict = match elapsed {
        _ if killed => Verdict::NoCompletedRun,
        _ if !judgeable => Verdict::NotJudged,
        Some(c) if c.significant() && c.diff > 0.0 => Verdict::Slower,
        Some(c) if c.significant() => Verdict::Faster,
        _ => Verdict::WithinNoise,
    };
    // A group without a completed run has no budget (its rows are
    // empty, not zero).
    let split = found.splits.get(g - 1).filter(|_| !killed).cloned();
    let explained = split
        .as_ref()
        .filter(|s| s.difference.abs() > 1e-9)
        .map(|s| (s.explained / s.difference).clamp(0.0, 1.0));
    // Within noise: no cause is named, but OOM kills are a difference
    // in how the runs ended, not in their time, and are always said. A
    // group left with fewer than two completed runs by kills the other
    // lacks is only its kills: its survivors are not a sample of it.
    let kills_differ = groups[g].oom_killed != groups[0].oom_killed;
    let survivors = groups[0].runs.min(groups[g].runs);
    let kills_only = killed || (judgeable && !significant) || (kills_differ && survivors < 2);
    let hints = mechanisms::hints(
        g,
        judgeable,
        kills_only,
        groups,
        metrics,
        found.attribution,
        ok,
        found.entries,
        found.profile,
    );
    Versus {
        label: groups[g].label.clone(),
        elapsed,
        judgeable,
        verdict,
        explained,
        split,
        hints,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::compare::text;

    use crate::host::corpus_recording as corpus;

    fn group(label: Option<&str>, recs: &[&Recording]) -> GroupInput<'static> {
        // The tests leak their recordings: they live for the process.
        let recs: Vec<&'static Recording> = recs
            .iter()
            .map(|r| &*Box::leak(Box::new((*r).clone())))
            .collect();
        GroupInput {
            label: label.map(str::to_string),
            files: vec!["x.vmtrace.json".into()],
            recordings: recs,
        }
    }

    #[test]
    fn identical_groups_are_within_noise_and_name_no_cause() {
        let r = corpus();
        let c = compare(&[group(None, &[&r]), group(None, &[&r])], false).expect("compares");
        let v = &c.versus[0];
        assert!(v.judgeable);
        assert_eq!(v.verdict, Verdict::WithinNoise);
        assert!(v.hints.is_empty());
        let text = text::render(&c, true);
        assert!(text.contains("B vs A: within noise"), "{text}");
        assert!(!text.contains("likely mechanisms"), "{text}");
        for line in text.lines() {
            assert!(line.is_ascii() && line.len() <= 72, "{line:?}");
        }
    }

    /// An attach recording is refused by name: it has no exit status,
    /// rusage or elapsed time to compare (it used to be counted as a
    /// "failed" run).
    #[test]
    fn an_attach_recording_is_refused_by_name() {
        let a = corpus();
        let mut b = corpus();
        for run in &mut b.runs {
            run.report.attached = true;
        }
        let err = compare(&[group(None, &[&a]), group(None, &[&b])], false)
            .expect_err("an attach recording compared");
        let msg = format!("{err:#}");
        assert!(
            msg.starts_with("x.vmtrace.json is an `attach` recording"),
            "{msg}"
        );
        assert!(
            !msg.contains('\n') && msg.contains("vmtrace report"),
            "{msg}"
        );
    }

    /// Every run of B OOM-killed (the 04 calibration: memcg reclaim
    /// giving up after one try): compare does not refuse, names the
    /// kills and their victim first, and weighs no budget for B (its
    /// rows are empty, not zero: no "B is faster").
    #[test]
    fn a_group_killed_in_every_run_is_compared_by_its_kills() {
        let a = corpus();
        let mut b = corpus();
        for run in &mut b.runs {
            run.report.exit.oom_killed = true;
            run.report.exit.code = None;
            run.report.exit.signal = Some(9);
            run.report.oom_victims = Some(vec![crate::model::report::OomVictimReport {
                time_s: 1.0,
                pid: 42,
                comm: "memhog".into(),
                target: true,
                victim_known: true,
                invoked_by_target: true,
                total_vm_kb: 0,
                anon_rss_kb: 0,
                file_rss_kb: 0,
                shmem_rss_kb: 0,
            }]);
        }
        let c = compare(&[group(None, &[&a]), group(None, &[&b])], false).expect("compares");
        let v = &c.versus[0];
        assert_eq!(v.verdict, Verdict::NoCompletedRun);
        assert!(v.split.is_none() && v.explained.is_none());
        assert_eq!(v.hints.len(), 1, "{:?}", v.hints);
        assert_eq!(v.hints[0].mechanism, mechanism::Mechanism::OomKills);
        let n = b.runs.len();
        assert_eq!(
            c.groups[1].oom_victims,
            [VictimCount {
                comm: "memhog".into(),
                target: true,
                kills: n
            }]
        );
        assert!(
            c.warnings.iter().all(|w| !w.contains("group B")),
            "{:?}",
            c.warnings
        );
        let text = text::render(&c, true);
        assert!(text.contains("B vs A: no completed run"), "{text}");
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains(&format!("victims: memhog (the job's) {n} (baseline 0)")),
            "{text}"
        );
        assert!(!text.contains("where the time went"), "{text}");
        for line in text.lines() {
            assert!(line.is_ascii() && line.len() <= 72, "{line:?}");
        }
    }

    /// The same times, but one run of B OOM-killed (the 04 calibration
    /// at the edge): within noise in time, and the kills are still
    /// named, with nothing else.
    #[test]
    fn oom_kills_are_named_when_the_time_is_within_noise() {
        let a = corpus();
        let mut b = corpus();
        let mut killed = b.runs[0].clone();
        killed.report.exit.oom_killed = true;
        killed.report.exit.code = None;
        b.runs.push(killed);
        let c = compare(&[group(None, &[&a]), group(None, &[&b])], false).expect("compares");
        let v = &c.versus[0];
        assert_eq!(v.verdict, Verdict::WithinNoise);
        assert_eq!(v.hints.len(), 1, "{:?}", v.hints);
        assert_eq!(v.hints[0].mechanism, mechanism::Mechanism::OomKills);
        let text = text::render(&c, true);
        assert!(text.contains("the OOM kills differ"), "{text}");
        assert!(
            text.contains("1 of 3 runs killed (baseline 0 of 2)"),
            "{text}"
        );
    }

    /// A THP counter one kernel has and the other lacks: the row shows
    /// `-` for the group without it and a warning says why, never 0.
    #[test]
    fn a_counter_one_kernel_lacks_is_named_not_zero() {
        let a = corpus();
        let mut b = corpus();
        for run in &mut b.runs {
            run.report.thp = Some(crate::model::counters::ThpCounters {
                fault_alloc: Some(512),
                ..Default::default()
            });
        }
        let c = compare(&[group(None, &[&a]), group(None, &[&b])], true).expect("compares");
        let row = c.metrics.iter().find(|m| m.measure == Measure::ThpFaults);
        let row = row.expect("THP faults row");
        assert!(row.groups[0].is_none() && row.groups[1].is_some());
        assert!(
            c.warnings
                .iter()
                .any(|w| w.starts_with("group A has no THP faults")),
            "{:?}",
            c.warnings
        );
        let text = text::render(&c, false);
        let line = text.lines().find(|l| l.starts_with("THP faults"));
        assert!(line.expect("row").contains(" - "), "{text}");
    }

    /// A parallel job (4 tasks, task-seconds far above elapsed) that is
    /// slower by 2.7 s while its block I/O waits grow by hundreds of
    /// task-seconds: no share past 100%, parts and unexplained add up to
    /// the difference, and no mechanism claims more than it.
    #[test]
    fn a_parallel_job_keeps_the_attribution_within_the_difference() {
        let base = corpus();
        let job = |wall: f64, user: f64, sys: f64, blkio: f64| {
            let mut r = base.clone();
            for (k, run) in r.runs.iter_mut().enumerate() {
                let u = &mut run.report.usage;
                (u.wall_s, u.user_s, u.sys_s) = (wall + 0.1 * k as f64, user, sys);
                run.report.delays = Some(crate::model::report::DelayReport {
                    accounting_on: true,
                    blkio_ns: (blkio * 1e9) as u64,
                    cpu_ns: 30_000_000_000,
                    ..Default::default()
                });
            }
            r
        };
        let (a, a2) = (
            job(190.0, 600.0, 80.0, 40.0),
            job(190.05, 600.0, 81.0, 41.0),
        );
        let (b, b2) = (
            job(192.7, 590.0, 95.0, 447.0),
            job(192.75, 590.0, 96.0, 449.0),
        );
        let c =
            compare(&[group(None, &[&a, &a2]), group(None, &[&b, &b2])], true).expect("compares");
        let v = &c.versus[0];
        let s = v.split.as_ref().expect("a split");
        assert!((s.difference - 2.7).abs() < 1e-6, "{s:?}");
        assert!(s.concurrency[0].unwrap_or(0.0) > 3.0, "{s:?}");
        let parts: f64 = c.attribution.iter().map(|r| r.elapsed[0]).sum();
        assert!((parts + s.unexplained - s.difference).abs() < 1e-9);
        for r in &c.attribution {
            assert!((0.0..=s.difference + 1e-9).contains(&r.elapsed[0]), "{r:?}");
            assert!(
                r.shares[0].is_none_or(|x| (0.0..=1.0).contains(&x)),
                "{r:?}"
            );
        }
        let claimed: f64 = v.hints.iter().map(|h| h.seconds.abs()).sum();
        assert!(claimed <= s.difference + 1e-9, "{:?}", v.hints);
        let text = text::render(&c, false);
        let from = text.find("where the time went").unwrap_or(0);
        for w in text[from..].split_whitespace() {
            let w = w.trim_matches(|ch: char| "();,".contains(ch));
            if let Some(p) = w.strip_suffix('%').and_then(|p| p.parse::<f64>().ok()) {
                assert!((0.0..=100.0).contains(&p), "{w} in\n{text}");
            }
        }
        assert!(text.contains("(-"), "an offset in parentheses:\n{text}");
        for line in text.lines() {
            assert!(line.is_ascii() && line.len() <= 72, "{line:?}");
        }
    }

    /// Recordings with every measured source: the budget prints the
    /// machine's components as context and the waits behind other tasks
    /// as a component, which CPU contention claims; no fallback mark,
    /// within 72 columns.
    #[test]
    fn a_measured_budget_prints_the_machine_and_the_waits() {
        use crate::model::report::{
            DelayReport, IoWaitReport, MachineCpu, RunnableReport, StallSplit,
        };
        let base = corpus();
        let job = |wall: f64, busy: f64, run_delay: f64| {
            let mut r = base.clone();
            for (k, run) in r.runs.iter_mut().enumerate() {
                let rep = &mut run.report;
                let wall = wall + 0.05 * k as f64;
                rep.usage.wall_s = wall;
                rep.machine_cpu = Some(MachineCpu {
                    cpus: 2,
                    user_s: busy - rep.usage.sys_s,
                    system_s: rep.usage.sys_s,
                    idle_s: 2.0 * wall - busy,
                    ..Default::default()
                });
                rep.io_waits = Some(IoWaitReport {
                    waits: 10,
                    total_ns: 200_000_000,
                });
                rep.delays = Some(DelayReport {
                    accounting_on: true,
                    cpu_ns: (run_delay * 1e9) as u64,
                    ..Default::default()
                });
                rep.runnable = Some(RunnableReport {
                    behind_others_ns: (run_delay * 0.9e9) as u64,
                    behind_idle_ns: (run_delay * 0.1e9) as u64,
                    waits: 100,
                    ..Default::default()
                });
                for m in rep.memcg_reclaim.iter_mut().chain(&mut rep.direct_reclaim) {
                    m.split = Some(StallSplit {
                        on_cpu_ns: m.stalls.total_ns / 2,
                        blocked_ns: m.stalls.total_ns / 4,
                        ..Default::default()
                    });
                }
                if let Some(c) = rep.compaction.as_mut() {
                    c.split = Some(StallSplit::default());
                }
            }
            r
        };
        let (a, b) = (job(3.0, 3.5, 0.5), job(4.0, 6.5, 2.5));
        let c = compare(&[group(None, &[&a]), group(None, &[&b])], true).expect("compares");
        let text = text::render(&c, false);
        for line in text.lines() {
            assert!(line.is_ascii() && line.len() <= 72, "{line:?}");
        }
        for want in [
            "other tasks' CPU",
            "reclaim waits",
            "-- the machine's other CPU time (CPU-s) --",
            "runnable behind others",
            "a CPU-second of the job counts",
        ] {
            assert!(text.contains(want), "{want:?} in\n{text}");
        }
        assert!(!text.contains(" #"), "{text}");
        let v = &c.versus[0];
        let contention = v
            .hints
            .iter()
            .find(|h| h.mechanism == Mechanism::CpuContention)
            .expect("CPU contention named");
        assert!(contention.seconds > 0.0, "{contention:?}");
    }

    #[test]
    fn one_run_per_group_is_not_judged() {
        let mut r = corpus();
        r.runs.truncate(1);
        let mut slower = r.clone();
        slower.runs[0].report.usage.wall_s *= 2.0;
        let c = compare(&[group(None, &[&r]), group(None, &[&slower])], false).expect("compares");
        assert!(!c.versus[0].judgeable);
        let text = text::render(&c, false);
        assert!(text.contains("significance cannot be judged"), "{text}");
        assert!(text.contains("elapsed +"), "{text}");
    }

    #[test]
    fn different_workloads_need_force_and_labels_come_from_settings() {
        let r = corpus();
        let mut other = r.clone();
        other.workload.arguments = vec!["--mib".into(), "999".into()];
        let e = compare(&[group(None, &[&r]), group(None, &[&other])], false).expect_err("refused");
        assert!(format!("{e}").contains("--force"), "{e}");
        let c = compare(&[group(None, &[&r]), group(None, &[&other])], true).expect("forced");
        assert!(c.warnings.iter().any(|w| w.contains("different workloads")));

        let mut pc0 = r.clone();
        pc0.environment
            .vm_sysctls
            .insert("page-cluster".into(), "0".into());
        let mut pc3 = r.clone();
        pc3.environment
            .vm_sysctls
            .insert("page-cluster".into(), "3".into());
        let c = compare(&[group(None, &[&pc3]), group(Some("mine"), &[&pc0])], false)
            .expect("compares");
        assert_eq!(c.groups[0].label, "page-cluster=3");
        assert_eq!(c.groups[1].label, "mine");
        assert_eq!(c.settings, vec!["vm.page-cluster: 3 vs 0".to_string()]);
    }

    /// The decisions of a comparison: verdicts, mechanisms (kind and
    /// seconds), guards and the attribution's shares, with no label in
    /// them.
    fn decisions(c: &Comparison) -> Vec<String> {
        let mut out = Vec::new();
        for v in &c.versus {
            out.push(format!("{:?} {:?}", v.verdict, v.explained));
            for h in &v.hints {
                out.push(format!("{:?} {}", h.mechanism, h.seconds));
            }
        }
        for g in &c.guards {
            out.push(format!("{:?} {:?}", g.setting, g.metrics));
        }
        for r in &c.attribution {
            out.push(format!("{:?} {:?} {:?}", r.component, r.elapsed, r.shares));
        }
        for m in &c.metrics {
            out.push(format!("{:?} {:?}", m.measure, m.guard));
        }
        out
    }

    /// Renaming every measure's label changes no decision: no mechanism,
    /// guard or share reads a label. Cases: a slower B whose reclaim,
    /// swap-ins and block I/O grew, a zswap switch, and an MGLRU guard.
    #[test]
    fn relabelling_every_measure_changes_no_decision() {
        let base = corpus();
        let worse = |f: &dyn Fn(&mut RunReport)| {
            let mut r = base.clone();
            for (i, run) in r.runs.iter_mut().enumerate() {
                run.report.usage.wall_s = 3.0 + 0.1 * i as f64;
                run.report.usage.sys_s += 0.5;
                f(&mut run.report);
            }
            r
        };
        let mut a = base.clone();
        for (i, run) in a.runs.iter_mut().enumerate() {
            run.report.usage.wall_s = 2.0 + 0.1 * i as f64;
            run.report.delays = Some(crate::model::report::DelayReport {
                accounting_on: true,
                blkio_ns: 100_000_000 + i as u64,
                cpu_ns: 50_000_000,
                ..Default::default()
            });
        }
        let swapping = worse(&|r| {
            r.usage.major_faults += 5_000;
            r.vmstat.pgscan *= 3;
            r.vmstat.pswpin += 40_000;
            if let Some(m) = r.memcg_reclaim.as_mut() {
                m.stalls.total_ns *= 4;
            }
            r.delays = Some(crate::model::report::DelayReport {
                accounting_on: true,
                blkio_ns: 700_000_000 + r.usage.wall_s as u64,
                cpu_ns: 50_000_000,
                ..Default::default()
            });
        });
        let zswap = worse(&|r| {
            r.swap_causes = Some(crate::model::report::SwapCauses {
                zswpin: Some(90_000),
                zswpout: Some(120_000),
                ..Default::default()
            });
        });
        let mut mglru = swapping.clone();
        mglru.environment.kernel_release = "6.12.57+deb12-amd64".into();
        mglru.environment.mglru = Some("0x0007".into());
        let cases = [(&a, &swapping), (&a, &zswap), (&a, &mglru), (&a, &a)];
        let mut named = 0;
        for (x, y) in cases {
            let run = || compare(&[group(None, &[x]), group(None, &[y])], true).expect("compares");
            let plain = run();
            let (renamed, printed) = measures::relabelled(|| {
                let c = run();
                let t = text::render(&c, false);
                (c, t)
            });
            assert_eq!(decisions(&plain), decisions(&renamed));
            // The labels did change (the test would prove nothing else).
            assert!(printed.contains("renamed elapsed"), "{printed}");
            named += plain.versus[0].hints.len();
        }
        assert!(named >= 3, "the cases name mechanisms: {named}");
    }
}
