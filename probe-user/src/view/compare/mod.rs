//! `vmtrace compare`: groups of recordings (repeated runs of one
//! configuration, one group per kernel or setting), side by side, with
//! significance, attribution of the elapsed-time difference, and hints at
//! the mechanism. Pure functions of recordings.
//!
//! The first group is the baseline. Only runs that completed count in the
//! statistics (OOM-killed, failed and interrupted runs are listed apart,
//! and an OOM kill is itself a finding).

pub mod stats;
pub mod text;

use anyhow::{Result, bail};
use serde::Serialize;

use crate::{model::recording::Recording, model::report::RunReport};
use stats::{Describe, Welch, describe, welch};

/// Significance threshold of the marks and of "within noise".
pub const ALPHA: f64 = 0.05;

/// What `compare` is given: a group's label and its recordings.
pub struct GroupInput<'a> {
    /// None: derived (kernel release, or the setting that differs).
    pub label: Option<String>,
    pub files: Vec<String>,
    pub recordings: Vec<&'a Recording>,
}

#[derive(Clone, Debug, Serialize)]
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
}

#[derive(Clone, Debug, Serialize)]
pub struct GroupInfo {
    pub label: String,
    pub kernel_release: String,
    pub files: Vec<String>,
    /// Runs that completed (the statistics use these).
    pub runs: usize,
    pub oom_killed: usize,
    /// Runs that failed otherwise or were interrupted.
    pub failed: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct MetricRow {
    pub name: &'static str,
    pub unit: Unit,
    /// Per group (None: no run of the group has the metric).
    pub groups: Vec<Option<Describe>>,
    /// Per group after the baseline.
    pub changes: Vec<Option<Change>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Seconds,
    Count,
    Percent,
    PerSecond,
    Pages,
}

#[derive(Clone, Copy, Debug, Serialize)]
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
#[derive(Clone, Debug, Serialize)]
pub struct Versus {
    pub label: String,
    pub elapsed: Option<Change>,
    /// Whether significance can be judged (two runs or more per group).
    pub judgeable: bool,
    /// "slower", "faster", "within noise" or "not judged".
    pub verdict: String,
    /// Share of the elapsed difference the attribution accounts for.
    pub explained: Option<f64>,
    /// Mechanisms, strongest first; empty when within noise.
    pub hints: Vec<Hint>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Hint {
    pub mechanism: &'static str,
    /// Seconds of elapsed difference linked to it (ranking key).
    pub seconds: f64,
    pub text: String,
}

/// One component of elapsed time, mean seconds per group.
#[derive(Clone, Debug, Serialize)]
pub struct AttributionRow {
    pub component: &'static str,
    pub means: Vec<f64>,
    /// Per group after the baseline: difference to it and its share of
    /// the elapsed difference.
    pub diffs: Vec<f64>,
    pub shares: Vec<Option<f64>>,
}

/// Every metric compared: (name, unit, value of a run).
type Extract = fn(&RunReport) -> Option<f64>;
const METRICS: &[(&str, Unit, Extract)] = &[
    ("elapsed", Unit::Seconds, |r| Some(r.usage.wall_s)),
    ("user CPU", Unit::Seconds, |r| Some(r.usage.user_s)),
    ("system CPU", Unit::Seconds, |r| Some(r.usage.sys_s)),
    ("major faults", Unit::Count, |r| {
        Some(r.usage.major_faults as f64)
    }),
    ("minor faults", Unit::Count, |r| {
        Some(r.usage.minor_faults as f64)
    }),
    ("reclaim stalls", Unit::Count, |r| {
        reclaim_field(r, |s| s.stalls.count as f64)
    }),
    ("reclaim stall time", Unit::Seconds, |r| {
        reclaim_field(r, |s| s.stalls.total_ns as f64 / 1e9)
    }),
    ("memcg stall p99", Unit::Seconds, |r| {
        r.memcg_reclaim
            .as_ref()
            .filter(|m| m.stalls.count > 0)
            .map(|m| m.stalls.p99_ns as f64 / 1e9)
    }),
    ("direct stall p99", Unit::Seconds, |r| {
        r.direct_reclaim
            .as_ref()
            .filter(|m| m.stalls.count > 0)
            .map(|m| m.stalls.p99_ns as f64 / 1e9)
    }),
    ("pages scanned", Unit::Pages, |r| {
        Some(r.vmstat.pgscan as f64)
    }),
    ("pages reclaimed", Unit::Pages, |r| {
        Some(r.vmstat.pgsteal as f64)
    }),
    ("reclaim efficiency", Unit::Percent, |r| {
        (r.vmstat.pgscan > 0).then(|| 100.0 * r.vmstat.pgsteal as f64 / r.vmstat.pgscan as f64)
    }),
    ("scan velocity", Unit::PerSecond, |r| {
        (r.usage.wall_s > 0.0).then(|| r.vmstat.pgscan as f64 / r.usage.wall_s)
    }),
    ("swap-out pages", Unit::Pages, |r| {
        Some(r.vmstat.pswpout as f64)
    }),
    ("swap-in pages", Unit::Pages, |r| {
        Some(r.vmstat.pswpin as f64)
    }),
    ("pages per swap read", Unit::Pages, |r| {
        let io = r.swap_io.as_ref()?;
        (io.read.count > 0).then(|| io.read_bytes as f64 / 4096.0 / io.read.count as f64)
    }),
    ("swap read p99", Unit::Seconds, |r| {
        let io = r.swap_io.as_ref()?;
        (io.read.count > 0).then(|| io.read.p99_ns as f64 / 1e9)
    }),
    ("swap write p99", Unit::Seconds, |r| {
        let io = r.swap_io.as_ref()?;
        (io.write.count > 0).then(|| io.write.p99_ns as f64 / 1e9)
    }),
    ("refaults", Unit::Pages, |r| Some(r.vmstat.refaults as f64)),
    ("kswapd awake", Unit::Seconds, |r| {
        r.kswapd
            .as_ref()
            .map(|k| k.nodes.iter().map(|n| n.awake_s).sum())
    }),
    ("kswapd CPU", Unit::Seconds, |r| {
        r.kswapd
            .as_ref()
            .map(|k| k.nodes.iter().map(|n| n.cpu_s).sum())
    }),
    ("global direct reclaims", Unit::Count, |r| {
        Some(r.vmstat.allocstall as f64)
    }),
    ("low-priority scans", Unit::Percent, low_priority_share),
    ("throttled", Unit::Seconds, |r| {
        r.throttle.as_ref().map(|t| t.delays.total_ns as f64 / 1e9)
    }),
    ("compaction", Unit::Seconds, |r| {
        r.compaction.as_ref().map(|c| c.runs.total_ns as f64 / 1e9)
    }),
    ("swap-in wait (delay)", Unit::Seconds, |r| {
        delays(r).map(|d| d.swapin_ns as f64 / 1e9)
    }),
    ("reclaim (delay acct)", Unit::Seconds, |r| {
        delays(r).map(|d| d.freepages_ns as f64 / 1e9)
    }),
    ("thrashing (delay acct)", Unit::Seconds, |r| {
        delays(r).map(|d| d.thrashing_ns as f64 / 1e9)
    }),
    ("block I/O (delay acct)", Unit::Seconds, |r| {
        delays(r).map(|d| d.blkio_ns as f64 / 1e9)
    }),
    ("waiting for a CPU", Unit::Seconds, |r| {
        delays(r).map(|d| d.cpu_ns as f64 / 1e9)
    }),
];

fn reclaim_field(r: &RunReport, f: fn(&crate::model::report::ReclaimReport) -> f64) -> Option<f64> {
    if r.direct_reclaim.is_none() && r.memcg_reclaim.is_none() {
        return None;
    }
    Some(r.direct_reclaim.as_ref().map_or(0.0, f) + r.memcg_reclaim.as_ref().map_or(0.0, f))
}

fn delays(r: &RunReport) -> Option<&crate::model::report::DelayReport> {
    r.delays.as_ref().filter(|d| d.accounting_on)
}

/// Share of inactive-list shrinks at priority 9 or below (12 is the
/// mildest): how hard reclaim had to dig.
fn low_priority_share(r: &RunReport) -> Option<f64> {
    let (mut low, mut all) = (0u64, 0u64);
    for row in &r.reclaim_priority {
        for (prio, &n) in row.counts.iter().enumerate() {
            all += n;
            if prio <= 9 {
                low += n;
            }
        }
    }
    (all > 0).then(|| 100.0 * low as f64 / all as f64)
}

/// The components of a run's elapsed time (seconds), in the order shown.
///
/// A task is on a CPU (user or system time), waiting for one, or asleep;
/// for the workloads here, sleeping is mostly waiting for block I/O. The
/// kernel's delay accounting gives the waits; rusage the CPU time. So
/// elapsed = user + system + block I/O waits + run-queue waits + the rest
/// (other sleeps), and system time is split further by what the eBPF
/// probes timed inside it: reclaim, then compaction (each capped at the
/// system time left, as their off-CPU part is already a block I/O wait).
/// With several tasks at once the parts are task-seconds and can exceed
/// elapsed: the rest then goes negative.
pub const COMPONENTS: &[&str] = &[
    "user CPU",
    "reclaim (system CPU)",
    "compaction (system CPU)",
    "other system CPU",
    "block I/O waits",
    "waiting for a CPU",
    "unexplained",
];

fn components(r: &RunReport) -> [f64; 7] {
    let reclaim_stall = reclaim_field(r, |s| s.stalls.total_ns as f64 / 1e9).unwrap_or(0.0);
    let compaction_wall = r
        .compaction
        .as_ref()
        .map_or(0.0, |c| c.runs.total_ns as f64 / 1e9);
    let user = r.usage.user_s;
    let sys = r.usage.sys_s.max(0.0);
    let reclaim = reclaim_stall.min(sys);
    let compaction = compaction_wall.min(sys - reclaim);
    let other_sys = sys - reclaim - compaction;
    let (blkio, cpu_wait) = delays(r).map_or((0.0, 0.0), |d| {
        (d.blkio_ns as f64 / 1e9, d.cpu_ns as f64 / 1e9)
    });
    let unexplained = r.usage.wall_s - user - sys - blkio - cpu_wait;
    [
        user,
        reclaim,
        compaction,
        other_sys,
        blkio,
        cpu_wait,
        unexplained,
    ]
}

fn completed(r: &RunReport) -> bool {
    r.exit.code == Some(0) && !r.exit.oom_killed && !r.exit.interrupted
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
    }
    let first = inputs[0].recordings[0];
    let mut warnings = Vec::new();
    let mut settings = Vec::new();
    for g in inputs {
        for rec in &g.recordings {
            let (a, b) = (&first.workload, &rec.workload);
            if a.name != b.name || a.arguments != b.arguments {
                let what = format!(
                    "different workloads: `{} {}` vs `{} {}`",
                    a.name,
                    a.arguments.join(" "),
                    b.name,
                    b.arguments.join(" ")
                );
                if !force {
                    bail!("{what}; add --force to compare them anyway");
                }
                push_unique(&mut warnings, what);
            }
            for d in first.environment.differences(&rec.environment) {
                if d.starts_with("vm.")
                    || d.starts_with("THP")
                    || d.starts_with("zswap")
                    || d.starts_with("MGLRU")
                {
                    push_unique(&mut settings, d);
                } else {
                    push_unique(&mut warnings, format!("different machines: {d}"));
                }
            }
            let limit = |r: &Recording| {
                r.runs
                    .first()
                    .and_then(|run| run.report.membox.as_ref())
                    .and_then(|b| b.mem_limit_bytes)
            };
            if limit(first) != limit(rec) {
                let h = |l: Option<u64>| l.map_or("none".into(), crate::model::units::human);
                push_unique(
                    &mut warnings,
                    format!(
                        "different memory limits: {} vs {}",
                        h(limit(first)),
                        h(limit(rec))
                    ),
                );
            }
        }
    }

    let labels = labels(inputs);
    let runs: Vec<Vec<&RunReport>> = inputs
        .iter()
        .map(|g| {
            g.recordings
                .iter()
                .flat_map(|r| r.runs.iter().map(|run| &run.report))
                .collect()
        })
        .collect();
    let ok: Vec<Vec<&RunReport>> = runs
        .iter()
        .map(|rs| rs.iter().copied().filter(|r| completed(r)).collect())
        .collect();
    let groups: Vec<GroupInfo> = inputs
        .iter()
        .zip(&runs)
        .zip(&ok)
        .zip(&labels)
        .map(|(((g, all), ok), label)| GroupInfo {
            label: label.clone(),
            kernel_release: g.recordings[0].environment.kernel_release.clone(),
            files: g.files.clone(),
            runs: ok.len(),
            oom_killed: all.iter().filter(|r| r.exit.oom_killed).count(),
            failed: all
                .iter()
                .filter(|r| !completed(r) && !r.exit.oom_killed)
                .count(),
        })
        .collect();
    if ok.iter().flatten().any(|r| delays(r).is_none()) {
        warnings.push(
            "some runs have no delay accounting (recorded before vmtrace read it, \
             or the kernel lacks it): their I/O and CPU waits count as unexplained"
                .into(),
        );
    }
    for g in &groups {
        if g.runs == 0 {
            bail!(
                "group {} has no completed run ({} OOM-killed, {} failed): nothing to compare",
                g.label,
                g.oom_killed,
                g.failed
            );
        }
    }

    let metrics: Vec<MetricRow> = METRICS
        .iter()
        .filter_map(|&(name, unit, f)| {
            let values: Vec<Vec<f64>> = ok
                .iter()
                .map(|rs| rs.iter().filter_map(|r| f(r)).collect())
                .collect();
            if values.iter().all(|v| v.iter().all(|&x| x == 0.0)) {
                return None;
            }
            let groups: Vec<Option<Describe>> = values.iter().map(|v| describe(v)).collect();
            let changes = values[1..]
                .iter()
                .zip(&groups[1..])
                .map(|(v, d)| change(&values[0], groups[0], v, *d))
                .collect();
            Some(MetricRow {
                name,
                unit,
                groups,
                changes,
            })
        })
        .collect();

    let comps: Vec<Vec<[f64; 7]>> = ok
        .iter()
        .map(|rs| rs.iter().map(|r| components(r)).collect())
        .collect();
    let mean_of = |g: usize, c: usize| -> f64 {
        let v = &comps[g];
        v.iter().map(|x| x[c]).sum::<f64>() / v.len().max(1) as f64
    };
    let elapsed_mean =
        |g: usize| ok[g].iter().map(|r| r.usage.wall_s).sum::<f64>() / ok[g].len() as f64;
    let attribution: Vec<AttributionRow> = COMPONENTS
        .iter()
        .enumerate()
        .map(|(c, &component)| {
            let means: Vec<f64> = (0..groups.len()).map(|g| mean_of(g, c)).collect();
            let diffs: Vec<f64> = means[1..].iter().map(|m| m - means[0]).collect();
            let shares = (1..groups.len())
                .map(|g| {
                    let d = elapsed_mean(g) - elapsed_mean(0);
                    (d.abs() > 1e-9).then(|| (means[g] - means[0]) / d)
                })
                .collect();
            AttributionRow {
                component,
                means,
                diffs,
                shares,
            }
        })
        .collect();

    let versus = (1..groups.len())
        .map(|g| versus(g, &groups, &metrics, &attribution, &ok))
        .collect();
    Ok(Comparison {
        test: "Welch's t-test, two-sided".into(),
        groups,
        warnings,
        settings,
        metrics,
        versus,
        attribution,
    })
}

fn push_unique(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

fn change(
    base: &[f64],
    bd: Option<Describe>,
    other: &[f64],
    od: Option<Describe>,
) -> Option<Change> {
    let (b, o) = (bd?, od?);
    let diff = o.mean - b.mean;
    Some(Change {
        diff,
        pct: (b.mean.abs() > 1e-12).then(|| 100.0 * diff / b.mean),
        welch: welch(base, other),
    })
}

/// Group labels: given, else the kernel release, else (one kernel) the
/// setting that tells the groups apart, else the first file's name.
fn labels(inputs: &[GroupInput]) -> Vec<String> {
    let releases: Vec<String> = inputs
        .iter()
        .map(|g| g.recordings[0].environment.kernel_release.clone())
        .collect();
    let distinct = {
        let mut r = releases.clone();
        r.sort();
        r.dedup();
        r.len() == releases.len()
    };
    inputs
        .iter()
        .enumerate()
        .map(|(i, g)| {
            if let Some(l) = &g.label {
                return l.clone();
            }
            if distinct {
                return releases[i].clone();
            }
            // The vm sysctls in which this group differs from any other.
            let env = &g.recordings[0].environment;
            let differing: Vec<String> = env
                .vm_sysctls
                .iter()
                .filter(|(k, v)| {
                    inputs.iter().any(|o| {
                        o.recordings[0]
                            .environment
                            .vm_sysctls
                            .get(*k)
                            .is_some_and(|w| w != *v)
                    })
                })
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            if !differing.is_empty() {
                return differing.join(",");
            }
            g.files
                .first()
                .map(|f| {
                    std::path::Path::new(f)
                        .file_name()
                        .map_or(f.clone(), |n| n.to_string_lossy().into_owned())
                })
                .unwrap_or_else(|| format!("group {}", i + 1))
        })
        .collect()
}

fn versus(
    g: usize,
    groups: &[GroupInfo],
    metrics: &[MetricRow],
    attribution: &[AttributionRow],
    ok: &[Vec<&RunReport>],
) -> Versus {
    let judgeable = groups[0].runs >= 2 && groups[g].runs >= 2;
    let metric = |name: &str| metrics.iter().find(|m| m.name == name);
    let elapsed = metric("elapsed").and_then(|m| m.changes[g - 1]);
    let significant = elapsed.is_some_and(|c| c.significant());
    let verdict = match elapsed {
        _ if !judgeable => "not judged".to_string(),
        Some(c) if c.significant() && c.diff > 0.0 => "slower".into(),
        Some(c) if c.significant() => "faster".into(),
        _ => "within noise".into(),
    };
    let elapsed_diff = elapsed.map_or(0.0, |c| c.diff);
    let explained = (elapsed_diff.abs() > 1e-9).then(|| {
        attribution
            .iter()
            .filter(|a| a.component != "unexplained")
            .map(|a| a.diffs[g - 1])
            .sum::<f64>()
            / elapsed_diff
    });
    // Within noise: no cause is named.
    let hints = if judgeable && !significant {
        Vec::new()
    } else {
        hints(g, judgeable, groups, metrics, attribution, ok)
    };
    Versus {
        label: groups[g].label.clone(),
        elapsed,
        judgeable,
        verdict,
        explained,
        hints,
    }
}

/// The mechanisms behind a difference, strongest first.
fn hints(
    g: usize,
    judgeable: bool,
    groups: &[GroupInfo],
    metrics: &[MetricRow],
    attribution: &[AttributionRow],
    ok: &[Vec<&RunReport>],
) -> Vec<Hint> {
    let mut hints = Vec::new();
    let metric = |name: &str| metrics.iter().find(|m| m.name == name);
    // A cause is named only for a difference that is real: significant,
    // or (one run per group) at least 5% of the elapsed difference.
    let real = |name: &str| {
        metric(name)
            .and_then(|m| m.changes[g - 1])
            .is_some_and(|c| {
                if judgeable {
                    c.significant()
                } else {
                    c.pct.is_some_and(|p| p.abs() > 5.0)
                }
            })
    };
    let comp = |name: &str| {
        attribution
            .iter()
            .find(|a| a.component == name)
            .map_or(0.0, |a| a.diffs[g - 1])
    };
    let mean = |name: &str, grp: usize| metric(name).and_then(|m| m.groups[grp]).map(|d| d.mean);
    let pair = |name: &str, fmt: fn(f64) -> String| -> String {
        format!(
            "{} -> {}",
            mean(name, 0).map_or("-".into(), fmt),
            mean(name, g).map_or("-".into(), fmt)
        )
    };
    let oom = (groups[g].oom_killed as i64) - (groups[0].oom_killed as i64);
    if oom > 0 {
        hints.push(Hint {
            mechanism: "OOM kills",
            seconds: f64::INFINITY,
            text: format!(
                "OOM kills: {} of {} runs killed (baseline {} of {})",
                groups[g].oom_killed,
                groups[g].runs + groups[g].oom_killed + groups[g].failed,
                groups[0].oom_killed,
                groups[0].runs + groups[0].oom_killed + groups[0].failed
            ),
        });
    }
    let swap_in = real("major faults") || real("swap-in pages");
    if swap_in || real("block I/O (delay acct)") {
        // More swap-ins cost system time to fault them in and block I/O
        // waits for the reads: both are theirs.
        let mut text = format!(
            "swap-in: major faults {}, block I/O waits {}",
            pair("major faults", count),
            pair("block I/O (delay acct)", secs)
        );
        let mut seconds = comp("block I/O waits");
        if swap_in && real("system CPU") {
            text.push_str(&format!(", system CPU {}", pair("system CPU", secs)));
            seconds += comp("other system CPU");
        }
        if real("pages per swap read") {
            text.push_str(&format!(
                "; swap reads of {} pages each (readahead)",
                pair("pages per swap read", |v| format!("{v:.1}"))
            ));
        }
        if real("swap read p99") {
            text.push_str(&format!("; swap read p99 {}", pair("swap read p99", secs)));
        }
        hints.push(Hint {
            mechanism: "swap-in",
            seconds,
            text,
        });
    }
    if real("reclaim stall time") || real("reclaim efficiency") || real("pages scanned") {
        let mut text = format!(
            "reclaim: stalls {} ({}), efficiency {}",
            pair("reclaim stall time", secs),
            pair("reclaim stalls", count),
            pair("reclaim efficiency", |v| format!("{v:.0}%"))
        );
        text.push_str(&format!(
            ", velocity {} pages/s",
            pair("scan velocity", count)
        ));
        if real("low-priority scans") {
            text.push_str(&format!(
                "; shrinks at priority <= 9: {}",
                pair("low-priority scans", |v| format!("{v:.0}%"))
            ));
        }
        hints.push(Hint {
            mechanism: "reclaim",
            seconds: comp("reclaim (system CPU)"),
            text,
        });
    }
    if real("waiting for a CPU") || real("kswapd CPU") || real("kswapd awake") {
        let mut text = format!(
            "CPU contention: waiting for a CPU {}",
            pair("waiting for a CPU", secs)
        );
        if metric("kswapd CPU").is_some() {
            text.push_str(&format!(
                "; kswapd awake {}, CPU {}",
                pair("kswapd awake", secs),
                pair("kswapd CPU", secs)
            ));
        }
        hints.push(Hint {
            mechanism: "CPU contention",
            seconds: comp("waiting for a CPU"),
            text,
        });
    }
    if real("refaults") || real("thrashing (delay acct)") {
        hints.push(Hint {
            mechanism: "refaults",
            seconds: 0.0,
            text: format!(
                "refaults (evicted pages needed again): {}, thrashing waits {}",
                pair("refaults", count),
                pair("thrashing (delay acct)", secs)
            ),
        });
    }
    if real("swap-out pages") || real("swap write p99") {
        hints.push(Hint {
            mechanism: "swap-out",
            seconds: 0.0,
            text: format!(
                "swap-out: {} pages, write p99 {}",
                pair("swap-out pages", count),
                pair("swap write p99", secs)
            ),
        });
    }
    if real("compaction") {
        hints.push(Hint {
            mechanism: "compaction",
            seconds: comp("compaction (system CPU)"),
            text: format!("compaction: {}", pair("compaction", secs)),
        });
    }
    if real("system CPU") && !swap_in {
        hints.push(Hint {
            mechanism: "system CPU",
            seconds: comp("other system CPU"),
            text: format!("system CPU: {}", pair("system CPU", secs)),
        });
    }
    if let Some(z) = zone_shift(&ok[0], &ok[g]) {
        hints.push(z);
    }
    hints.sort_by(|a, b| b.seconds.abs().total_cmp(&a.seconds.abs()));
    hints
}

/// Pressure shifted between zones (the seed mail's "uneven pressure on
/// normal and DMA zones"): a zone's share of reclaim isolation scans, or
/// of page allocations (with --page-alloc), moved by 10 points or more.
fn zone_shift(a: &[&RunReport], b: &[&RunReport]) -> Option<Hint> {
    type Pick = fn(&crate::model::report::ZoneRow) -> u64;
    let shares = |runs: &[&RunReport], pick: Pick| -> Vec<(String, f64)> {
        let mut per: Vec<(String, u64)> = Vec::new();
        for r in runs {
            for z in &r.zones {
                let name = format!("{}/{}", z.node, z.zone);
                match per.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, v)) => *v += pick(z),
                    None => per.push((name, pick(z))),
                }
            }
        }
        let total: u64 = per.iter().map(|(_, v)| v).sum();
        per.into_iter()
            .map(|(n, v)| {
                (
                    n,
                    if total > 0 {
                        100.0 * v as f64 / total as f64
                    } else {
                        0.0
                    },
                )
            })
            .collect()
    };
    let mut parts = Vec::new();
    let picks: [(&str, Pick); 2] = [
        ("reclaim scans", |z| z.isolate_scanned),
        ("allocations", |z| z.allocated_pages.unwrap_or(0)),
    ];
    for (what, pick) in picks {
        let (sa, sb) = (shares(a, pick), shares(b, pick));
        let moved: Vec<String> = sa
            .iter()
            .filter_map(|(n, x)| {
                let y = sb.iter().find(|(m, _)| m == n).map_or(0.0, |(_, y)| *y);
                ((y - x).abs() >= 10.0).then(|| format!("{n} {x:.0}% -> {y:.0}%"))
            })
            .collect();
        if !moved.is_empty() {
            parts.push(format!("{what} {}", moved.join(", ")));
        }
    }
    (!parts.is_empty()).then(|| Hint {
        mechanism: "zones",
        seconds: 0.0,
        text: format!("pressure shifted between zones: {}", parts.join("; ")),
    })
}

fn secs(v: f64) -> String {
    crate::view::report::fmt_ns((v * 1e9).max(0.0) as u64)
}

fn count(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// The groups' latency distributions, overlaid (each group's completed
/// runs merged), one percentile plot per histogram, as one SVG page.
pub fn svg(c: &Comparison, inputs: &[GroupInput]) -> String {
    use vmtrace_common::hist::{BUCKETS, bucket_of};
    let mut panels = Vec::new();
    for h in vmtrace_common::Hist::ALL {
        let mut merged = Vec::new();
        for (g, input) in inputs.iter().enumerate() {
            let mut counts = vec![0u64; BUCKETS];
            for run in input.recordings.iter().flat_map(|r| &r.runs) {
                if !completed(&run.report) {
                    continue;
                }
                for (kind, s) in run.report.histograms() {
                    if kind == h {
                        for b in &s.buckets {
                            if let Some(slot) = counts.get_mut(bucket_of(b.lower_ns)) {
                                *slot += b.count;
                            }
                        }
                    }
                }
            }
            if counts.iter().any(|&n| n > 0) {
                let label = c.groups.get(g).map_or(String::new(), |g| g.label.clone());
                merged.push((
                    format!("{} {label}", char::from(b'A' + (g % 26) as u8)),
                    crate::model::histogram::summarize(&counts),
                ));
            }
        }
        if merged.is_empty() {
            continue;
        }
        let series: Vec<crate::view::export::svg::Series> = merged
            .iter()
            .map(|(label, summary)| crate::view::export::svg::Series {
                label: label.clone(),
                summary,
            })
            .collect();
        panels.push(crate::view::export::svg::latency_plot(h.title(), &series));
    }
    let title = c
        .groups
        .iter()
        .enumerate()
        .map(|(i, g)| format!("{} {}", char::from(b'A' + (i % 26) as u8), g.label))
        .collect::<Vec<_>>()
        .join(" vs ");
    stack(&format!("vmtrace compare: {title}"), &panels)
}

/// Standalone SVG documents stacked vertically in one page.
pub fn stack(title: &str, panels: &[String]) -> String {
    let attr = |tag: &str, name: &str| -> f64 {
        tag.split(&format!(" {name}=\""))
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .and_then(|v| v.trim_end_matches("px").parse().ok())
            .unwrap_or(0.0)
    };
    let escaped = title
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;");
    let mut body = format!(
        "<text x=\"20\" y=\"32\" font-family=\"sans-serif\" font-size=\"20\" \
         font-weight=\"bold\">{escaped}</text>\n"
    );
    let (mut y, mut width) = (48.0f64, 600.0f64);
    for p in panels {
        let Some(start) = p.find("<svg") else {
            continue;
        };
        let tag_end = p[start..].find('>').map_or(p.len(), |e| start + e);
        let tag = &p[start..tag_end];
        let (w, h) = (attr(tag, "width"), attr(tag, "height"));
        body.push_str(&format!("<svg x=\"0\" y=\"{y}\"{}", &p[start + 4..]));
        body.push('\n');
        y += h;
        width = width.max(w);
    }
    if panels.is_empty() {
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"600\" height=\"40\">\
                <text x=\"10\" y=\"25\" font-family=\"sans-serif\">no latency values to plot</text></svg>\n"
            .into();
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{y}\" \
         viewBox=\"0 0 {width} {y}\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n{body}</svg>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus() -> Recording {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/corpus/recording/memhog-2runs.vmtrace.json");
        Recording::read(&path).expect("corpus recording")
    }

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
        assert_eq!(v.verdict, "within noise");
        assert!(v.hints.is_empty());
        let text = text::render(&c, true);
        assert!(text.contains("B vs A: within noise"), "{text}");
        assert!(!text.contains("likely mechanisms"), "{text}");
        for line in text.lines() {
            assert!(line.is_ascii() && line.len() <= 72, "{line:?}");
        }
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

    #[test]
    fn zone_shift_names_the_zones_that_moved() {
        use crate::model::report::ZoneRow;
        let zone = |zone: &str, scanned: u64| ZoneRow {
            node: 0,
            zone: zone.into(),
            isolate_scanned: scanned,
            ..Default::default()
        };
        let a = RunReport {
            zones: vec![zone("DMA32", 200), zone("Normal", 800)],
            ..Default::default()
        };
        let b = RunReport {
            zones: vec![zone("DMA32", 500), zone("Normal", 500)],
            ..Default::default()
        };
        let h = zone_shift(&[&a], &[&b]).expect("a shift");
        assert_eq!(
            h.text,
            "pressure shifted between zones: reclaim scans 0/DMA32 20% -> 50%, \
             0/Normal 80% -> 50%"
        );
        assert!(zone_shift(&[&a], &[&a]).is_none());
    }

    #[test]
    fn components_add_up_to_elapsed() {
        let r = corpus();
        for run in &r.runs {
            let c = components(&run.report);
            let sum: f64 = c.iter().sum();
            assert!((sum - run.report.usage.wall_s).abs() < 1e-9, "{c:?}");
        }
    }
}
