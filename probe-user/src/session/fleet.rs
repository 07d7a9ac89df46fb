//! `compare --prometheus`: reads each group's hosts and their rates over
//! the window from a Prometheus-compatible query API (one PromQL query
//! per rate and group, every answer bounded) and hands them to
//! `analysis::fleet`. A group is the instances whose
//! `vmtrace_build_info` matches its label matchers in the window (the
//! `kernel` label, or any target label); every rate is joined on it.

use std::collections::BTreeMap;

use anyhow::{Result, bail};

use crate::analysis::fleet::{GroupInput, Host, Query, Rate};
use crate::host::prometheus_api::{Endpoint, Series, query};

/// What `compare --prometheus` was asked.
pub struct Ask<'a> {
    pub url: &'a str,
    /// Each group's matchers (A, then B), each `name op "value"`.
    pub groups: [Vec<String>; 2],
    pub window: &'a str,
    pub at: Option<&'a str>,
    /// A cgroup path regex (`/system.slice/.*`).
    pub cgroup: Option<&'a str>,
    pub max_series: usize,
}

/// Checks one label matcher: `name`, `=`/`!=`/`=~`/`!~`, a double-quoted
/// value; anything else is refused in one line.
pub fn check_matcher(m: &str) -> Result<()> {
    let name_end = m
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(m.len());
    let (name, rest) = m.split_at(name_end);
    let value = ["=~", "!~", "!=", "="]
        .iter()
        .find_map(|op| rest.trim_start().strip_prefix(op))
        .map(str::trim);
    let quoted = value.is_some_and(|v| {
        v.len() >= 2 && v.starts_with('"') && v.ends_with('"') && !v[1..v.len() - 1].contains('"')
    });
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) || !quoted {
        bail!(
            "group {m:?}: not a label matcher; give name=\"value\" (or !=, =~, !~), \
             e.g. 'kernel=~\"6.12.*\"' or 'rollout=\"canary\"'"
        );
    }
    Ok(())
}

/// Checks a window (`6h`, `90m`, `1d`: Prometheus's durations).
pub fn check_window(w: &str) -> Result<()> {
    let ok = !w.is_empty()
        && w.split_inclusive(|c: char| c.is_ascii_alphabetic())
            .all(|part| {
                let digits = part.trim_end_matches(|c: char| c.is_ascii_alphabetic());
                let unit = &part[digits.len()..];
                !digits.is_empty()
                    && digits.chars().all(|c| c.is_ascii_digit())
                    && ["ms", "s", "m", "h", "d", "w", "y"].contains(&unit)
            });
    if !ok {
        bail!("--range {w:?}: not a duration; give e.g. 30m, 6h or 1d");
    }
    Ok(())
}

/// Two per-instance expressions added, where either or both have a
/// value. Not one function over `{__name__=~"a|b"}`: rate() and
/// resets() drop the names, the two series' label sets are then the
/// same, and Prometheus refuses the query (422, "vector cannot contain
/// metrics with the same labelset"; seen against four real exporters).
fn either_or_both(a: &str, b: &str) -> String {
    format!("(({a} + {b}) or {a} or {b})")
}

/// The PromQL of a rate per instance, over `[R]`, within cgroup `C`
/// when given (`{C}` is `cgroup=~"..."`).
fn expression(rate: Rate, cgroup: Option<&str>) -> String {
    let stall = |what: &str| match cgroup {
        Some(c) => format!("vmtrace_cgroup_{what}{{cgroup=~\"{c}\"}}"),
        None => format!("vmtrace_{what}"),
    };
    let sum = |inner: String| format!("sum by (instance) (rate({inner}[R]))");
    let both = |a: String, b: String| either_or_both(&sum(a), &sum(b));
    let quantile = |q: f64, what: &str| {
        format!(
            "histogram_quantile({q}, sum by (instance, le) (increase({}[R])))",
            stall(&format!("{what}_reclaim_seconds_bucket"))
        )
    };
    match rate {
        Rate::StallTime => both(
            stall("memcg_reclaim_seconds_sum"),
            stall("direct_reclaim_seconds_sum"),
        ),
        Rate::MemcgStallTime => sum(stall("memcg_reclaim_seconds_sum")),
        Rate::DirectStallTime => sum(stall("direct_reclaim_seconds_sum")),
        Rate::MemcgStalls => sum(stall("memcg_reclaim_seconds_count")),
        Rate::DirectStalls => sum(stall("direct_reclaim_seconds_count")),
        Rate::MemcgStallP50 => quantile(0.5, "memcg"),
        Rate::MemcgStallP99 => quantile(0.99, "memcg"),
        Rate::DirectStallP99 => quantile(0.99, "direct"),
        Rate::PressureSome | Rate::PressureFull => {
            let what = if rate == Rate::PressureSome {
                "waiting"
            } else {
                "stalled"
            };
            let sel = cgroup.map_or("cgroup=\"/\"".to_string(), |c| format!("cgroup=~\"{c}\""));
            sum(format!(
                "vmtrace_cgroup_memory_{what}_seconds_total{{{sel}}}"
            ))
        }
        Rate::PagesScanned => sum("vmtrace_lru_scanned_pages_total".into()),
        Rate::PagesReclaimed => sum("vmtrace_lru_reclaimed_pages_total".into()),
        Rate::ReclaimEfficiency => format!(
            "100 * {} / {}",
            sum("vmtrace_lru_reclaimed_pages_total".into()),
            sum("vmtrace_lru_scanned_pages_total".into())
        ),
        Rate::SwapIns => sum("vmtrace_vmstat_pswpin_total".into()),
        Rate::SwapOuts => sum("vmtrace_vmstat_pswpout_total".into()),
        Rate::Refaults => both(
            "vmtrace_vmstat_workingset_refault_anon_total".into(),
            "vmtrace_vmstat_workingset_refault_file_total".into(),
        ),
        Rate::MajorFaults => sum("vmtrace_major_faults_total{tasks=\"target\"}".into()),
        Rate::Compaction => sum("vmtrace_compaction_seconds_sum".into()),
        Rate::OomKills => sum("vmtrace_vmstat_oom_kill_total".into()),
    }
}

/// The instances of a group: its matchers on `vmtrace_build_info`,
/// present at some time in the window.
fn selector(matchers: &[String]) -> String {
    format!(
        "max by (instance) (max_over_time(vmtrace_build_info{{{}}}[R]))",
        matchers.join(",")
    )
}

/// Reads both groups.
pub fn read(ask: &Ask) -> Result<(Query, [GroupInput; 2])> {
    check_window(ask.window)?;
    for m in ask.groups.iter().flatten() {
        check_matcher(m)?;
    }
    if let Some(c) = ask.cgroup
        && c.contains(['"', '\\', '\n'])
    {
        bail!("--cgroup {c:?}: give a cgroup path or regex without quotes or backslashes");
    }
    let ep = Endpoint::parse(ask.url)?;
    let run = |q: &str| {
        query(
            &ep,
            &q.replace("[R]", &format!("[{}]", ask.window)),
            ask.at,
            ask.max_series,
        )
    };
    let memory = memory_sizes(&run(
        "max by (instance) (max_over_time(node_memory_MemTotal_bytes[R]))",
    )?);
    let mut out = Vec::new();
    for m in &ask.groups {
        let sel = selector(m);
        let instances: Vec<String> = run(&sel)?.iter().filter_map(instance).collect();
        if instances.is_empty() {
            bail!(
                "group {} selects no host: no vmtrace_build_info{{{}}} in the last {} at {}",
                m.join(","),
                m.join(","),
                ask.window,
                ep.address()
            );
        }
        let mut hosts: BTreeMap<String, Host> = BTreeMap::new();
        for rate in Rate::ALL {
            let q = format!(
                "({}) and on(instance) ({sel})",
                expression(rate, ask.cgroup)
            );
            for s in run(&q)? {
                if let Some(i) = instance(&s) {
                    let h = hosts.entry(i.clone()).or_insert_with(|| Host {
                        instance: i,
                        ..Host::default()
                    });
                    h.rates.insert(rate, s.value);
                }
            }
        }
        let resets = |what: &str| {
            format!("sum by (instance) (resets(vmtrace_{what}_reclaim_seconds_count[R]))")
        };
        let resets = format!(
            "{} > 0 and on(instance) ({sel})",
            either_or_both(&resets("memcg"), &resets("direct"))
        );
        for s in run(&resets)? {
            if let Some(h) = instance(&s).and_then(|i| hosts.get_mut(&i)) {
                h.reset = true;
            }
        }
        let (with, missing): (Vec<String>, Vec<String>) = instances.into_iter().partition(|i| {
            hosts
                .get(i)
                .is_some_and(|h| h.rates.contains_key(&Rate::StallTime))
        });
        let hosts = with
            .into_iter()
            .filter_map(|i| hosts.remove(&i))
            .map(|mut h| {
                h.memory_bytes = memory.get(machine(&h.instance)).copied();
                h
            })
            .collect();
        out.push(GroupInput {
            matcher: m.join(","),
            hosts,
            missing,
        });
    }
    let query = Query {
        url: ask.url.to_string(),
        window: ask.window.to_string(),
        at: ask.at.map(str::to_string),
        cgroup: ask.cgroup.map(str::to_string),
    };
    let [a, b]: [GroupInput; 2] = out
        .try_into()
        .map_err(|_| anyhow::anyhow!("compare --prometheus needs two groups"))?;
    Ok((query, [a, b]))
}

fn instance(s: &Series) -> Option<String> {
    s.labels.get("instance").cloned()
}

/// The machine of an instance: its address without the port (node
/// exporter and vmtrace listen on different ports of one host).
fn machine(instance: &str) -> &str {
    match instance.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => h,
        _ => instance,
    }
}

fn memory_sizes(series: &[Series]) -> BTreeMap<String, f64> {
    series
        .iter()
        .filter_map(|s| Some((machine(&instance(s)?).to_string(), s.value)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_and_windows_are_checked() {
        for ok in [
            "kernel=~\"6.1.*\"",
            "rollout=\"canary\"",
            "job!=\"x\"",
            "a_b !~ \"y\"",
        ] {
            check_matcher(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for bad in [
            "kernel",
            "kernel=6.1",
            "=\"x\"",
            "1a=\"x\"",
            "k=\"a\"b\"",
            "k=\"x\"}or{a=\"\"",
        ] {
            let e = check_matcher(bad).expect_err(bad).to_string();
            assert!(
                e.contains("not a label matcher") && !e.contains('\n'),
                "{e}"
            );
        }
        for ok in ["6h", "90m", "1h30m", "1d"] {
            check_window(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for bad in ["", "6", "h", "6x", "-1h", "6h)"] {
            assert!(check_window(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_rate_has_a_query_that_names_an_exported_family() {
        for rate in Rate::ALL {
            for cg in [None, Some("/box.*")] {
                let q = expression(rate, cg);
                assert!(q.contains("[R]") && q.contains("vmtrace_"), "{rate:?}: {q}");
                assert_eq!(q.matches('(').count(), q.matches(')').count(), "{q}");
                // A name regex under rate() is refused by Prometheus
                // when two families share their other labels.
                assert!(!q.contains("__name__"), "{q}");
            }
        }
        assert!(expression(Rate::MemcgStallTime, Some("/a")).contains("cgroup=~\"/a\""));
        assert_eq!(machine("10.0.0.1:9911"), "10.0.0.1");
        assert_eq!(machine("host"), "host");
    }
}
