//! The groups of a comparison: checks that their recordings can be
//! compared (same workload, else --force; machines, memory limits and
//! the settings that differ), the groups' labels, their runs (all, and
//! the completed ones that the statistics use) and what is said of each.

use anyhow::{Result, bail};

use super::{GroupInfo, GroupInput};
use crate::{model::recording::Recording, model::report::RunReport};

/// Whether a run completed: only those count in the statistics.
pub fn completed(r: &RunReport) -> bool {
    r.exit.code == Some(0) && !r.exit.oom_killed && !r.exit.interrupted
}

fn push_unique(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

/// What makes the groups hard to compare (the warnings) and the settings
/// that differ between them (the point of an A/B), each recording against
/// the baseline's first. Different workloads are an error unless forced.
pub(super) fn differences(
    inputs: &[GroupInput],
    force: bool,
) -> Result<(Vec<String>, Vec<String>)> {
    let first = inputs[0].recordings[0];
    let mut warnings = Vec::new();
    let mut settings = Vec::new();
    for rec in inputs.iter().flat_map(|g| &g.recordings) {
        if let Some(what) = workload_difference(first, rec) {
            if !force {
                bail!("{what}; add --force to compare them anyway");
            }
            push_unique(&mut warnings, what);
        }
        for d in first.environment.differences(&rec.environment) {
            if d.key.is_setting() {
                push_unique(&mut settings, d.to_string());
            } else {
                push_unique(&mut warnings, format!("different machines: {d}"));
            }
        }
        if let Some(what) = memory_limit_difference(first, rec) {
            push_unique(&mut warnings, what);
        }
    }
    Ok((warnings, settings))
}

fn workload_difference(first: &Recording, rec: &Recording) -> Option<String> {
    let (a, b) = (&first.workload, &rec.workload);
    (a.name != b.name || a.arguments != b.arguments).then(|| {
        format!(
            "different workloads: `{} {}` vs `{} {}`",
            a.name,
            a.arguments.join(" "),
            b.name,
            b.arguments.join(" ")
        )
    })
}

fn memory_limit_difference(first: &Recording, rec: &Recording) -> Option<String> {
    let limit = |r: &Recording| {
        r.runs
            .first()
            .and_then(|run| run.report.membox.as_ref())
            .and_then(|b| b.mem_limit_bytes)
    };
    let h = |l: Option<u64>| l.map_or("none".into(), crate::model::format::human);
    (limit(first) != limit(rec)).then(|| {
        format!(
            "different memory limits: {} vs {}",
            h(limit(first)),
            h(limit(rec))
        )
    })
}

/// Group labels: given, else the kernel release, else (one kernel) the
/// setting that tells the groups apart, else the first file's name.
pub(super) fn labels(inputs: &[GroupInput]) -> Vec<String> {
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
            let differing = differing_sysctls(g, inputs);
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

/// The vm sysctls and kernel switches (`run --zswap`, `--mglru`) in
/// which group `g` differs from any other, `key=value`.
fn differing_sysctls(g: &GroupInput, inputs: &[GroupInput]) -> Vec<String> {
    let env = &g.recordings[0].environment;
    type Switch = fn(&crate::model::recording::environment::Environment) -> &Option<String>;
    let switches: [(&str, Switch); 2] =
        [("zswap", |e| &e.zswap_enabled), ("lru_gen", |e| &e.mglru)];
    let switched = switches.into_iter().filter_map(|(name, get)| {
        let mine = get(env).as_ref()?;
        inputs
            .iter()
            .any(|o| {
                get(&o.recordings[0].environment)
                    .as_ref()
                    .is_some_and(|w| w != mine)
            })
            .then(|| format!("{name}={mine}"))
    });
    env.vm_sysctls
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
        .chain(switched)
        .collect()
}

/// Each group's runs: those of all its recordings.
pub(super) fn runs<'a>(inputs: &'a [GroupInput]) -> Vec<Vec<&'a RunReport>> {
    inputs
        .iter()
        .map(|g| {
            g.recordings
                .iter()
                .flat_map(|r| r.runs.iter().map(|run| &run.report))
                .collect()
        })
        .collect()
}

/// Each group's runs that completed.
pub(super) fn completed_runs<'a>(runs: &[Vec<&'a RunReport>]) -> Vec<Vec<&'a RunReport>> {
    runs.iter()
        .map(|rs| rs.iter().copied().filter(|r| completed(r)).collect())
        .collect()
}

/// The OOM victims of a group's runs by command name, most killed
/// first, then by name.
fn victims(runs: &[&RunReport]) -> Vec<super::VictimCount> {
    let mut counts: Vec<super::VictimCount> = Vec::new();
    let all = runs.iter().flat_map(|r| r.oom_victims.iter().flatten());
    for v in all {
        match counts
            .iter_mut()
            .find(|c| c.comm == v.comm && c.target == v.target)
        {
            Some(c) => c.kills += 1,
            None => counts.push(super::VictimCount {
                comm: v.comm.clone(),
                target: v.target,
                kills: 1,
            }),
        }
    }
    counts.sort_by(|a, b| b.kills.cmp(&a.kills).then_with(|| a.comm.cmp(&b.comm)));
    counts
}

/// What is said of each group: label, kernel, files and how its runs
/// ended.
pub(super) fn infos(
    inputs: &[GroupInput],
    runs: &[Vec<&RunReport>],
    ok: &[Vec<&RunReport>],
    labels: &[String],
) -> Vec<GroupInfo> {
    inputs
        .iter()
        .zip(runs)
        .zip(ok)
        .zip(labels)
        .map(|(((g, all), ok), label)| GroupInfo {
            label: label.clone(),
            kernel_release: g.recordings[0].environment.kernel_release.clone(),
            files: g.files.clone(),
            runs: ok.len(),
            oom_killed: all.iter().filter(|r| r.exit.oom_killed).count(),
            oom_victims: victims(all),
            failed: all
                .iter()
                .filter(|r| !completed(r) && !r.exit.oom_killed)
                .count(),
        })
        .collect()
}
