//! `compare --prometheus`: two groups of hosts (a fleet's old and new
//! kernel, a canary and the rest), each host one sample of per-second
//! rates over a window, read from a Prometheus-compatible query API by
//! the session. The same statistics as the local compare (`stats`:
//! each group's mean, the change, Welch's t-test across hosts), a
//! verdict on the target's reclaim stall time per second (the fleet's
//! time lost to reclaim: no elapsed time exists for a service), the
//! mechanisms the rates support, and what the fleet cannot say: rows
//! that need a local recording, hosts missing or reset, groups too
//! small (with the hosts a change this size would need), memory sizes
//! that differ. Pure: no I/O, no strings to reason with.

use std::collections::BTreeMap;

use serde::Serialize;

use super::measures::{Unit, change};
use super::mechanism::Mechanism;
use super::stats::{Describe, describe};
use super::{Change, Verdict};

/// Generates `Rate`: one per-host rate, its label and unit, in the
/// order rows are shown.
macro_rules! rates {
    ($($variant:ident => ($label:literal, $unit:ident),)*) => {
        /// A per-host rate over the window: a typed key.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Rate {
            $($variant,)*
        }

        impl Rate {
            /// Every rate, in the order rows are shown.
            pub const ALL: [Rate; [$(Rate::$variant,)*].len()] = [$(Rate::$variant,)*];

            /// The row's label, for printing only.
            pub fn label(self) -> &'static str {
                match self {
                    $(Rate::$variant => $label,)*
                }
            }

            /// Its unit per second (Seconds: seconds per second).
            pub fn unit(self) -> Unit {
                match self {
                    $(Rate::$variant => Unit::$unit,)*
                }
            }
        }
    };
}

rates! {
    StallTime => ("reclaim stall time", Seconds),
    MemcgStallTime => ("memcg stall time", Seconds),
    DirectStallTime => ("direct stall time", Seconds),
    MemcgStalls => ("memcg stalls", PerSecond),
    DirectStalls => ("direct stalls", PerSecond),
    MemcgStallP50 => ("memcg stall p50", Seconds),
    MemcgStallP99 => ("memcg stall p99", Seconds),
    DirectStallP99 => ("direct stall p99", Seconds),
    PressureSome => ("memory pressure some", Seconds),
    PressureFull => ("memory pressure full", Seconds),
    PagesScanned => ("pages scanned", PerSecond),
    PagesReclaimed => ("pages reclaimed", PerSecond),
    ReclaimEfficiency => ("reclaim efficiency", Percent),
    SwapIns => ("pages swapped in", PerSecond),
    SwapOuts => ("pages swapped out", PerSecond),
    Refaults => ("refaults", PerSecond),
    MajorFaults => ("major faults", PerSecond),
    Compaction => ("compaction", Seconds),
    OomKills => ("OOM kills", PerSecond),
}

vmtrace_model::keyed!(Rate, Rate::ALL.into_iter(), Rate::label);

impl Rate {
    /// Latencies are per stall, not per second: the view says so.
    pub fn is_latency(self) -> bool {
        matches!(
            self,
            Rate::MemcgStallP50 | Rate::MemcgStallP99 | Rate::DirectStallP99
        )
    }
}

/// One host's rates over the window (a rate its series lack is absent).
#[derive(Clone, Debug, Default)]
pub struct Host {
    /// Its `instance` label.
    pub instance: String,
    pub rates: BTreeMap<Rate, f64>,
    /// A counter of it went back in the window (vmtrace restarted):
    /// the rate is Prometheus's reset-corrected one, said apart.
    pub reset: bool,
    /// Its memory in bytes, where the query API has it.
    pub memory_bytes: Option<f64>,
}

/// One group as the session read it.
#[derive(Clone, Debug)]
pub struct GroupInput {
    /// The label matcher that selects it (`kernel=~"6.1.*"`).
    pub matcher: String,
    /// The hosts with the verdict's series.
    pub hosts: Vec<Host>,
    /// Instances the matcher selected whose vmtrace series are missing.
    pub missing: Vec<String>,
}

/// What the fleet compare says about one group.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Group {
    pub matcher: String,
    pub hosts: Vec<String>,
    /// Selected, but without vmtrace's series in the window.
    pub missing: Vec<String>,
    /// Hosts whose counters reset in the window.
    pub reset: Vec<String>,
}

/// One rate's row: each group's summary and B's change against A.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Row {
    pub rate: Rate,
    pub unit: Unit,
    pub groups: Vec<Option<Describe>>,
    pub change: Option<Change>,
}

/// A mechanism the rates support: the rate that moved and, for a part
/// of the reclaim stall time, the seconds per second it claims of the
/// verdict's difference.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Cause {
    pub mechanism: Mechanism,
    pub rate: Rate,
    pub change: Change,
    /// Part of the stall-time difference (s/s); None: evidence only.
    pub claims: Option<f64>,
}

/// What the fleet cannot vouch for.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Caveat {
    /// The groups hold different numbers of hosts.
    UnequalGroups { a: usize, b: usize },
    /// A group has fewer than two hosts: nothing can be judged.
    TooFewHosts { group: usize, hosts: usize },
    /// Within noise: a change of this size would be found (80 % power,
    /// p < 0.05) with about this many hosts per group.
    HostsNeeded { per_group: usize },
    /// Hosts' memory sizes differ by more than 10 %.
    MemoryDiffers { min_bytes: f64, max_bytes: f64 },
    /// No memory size was found for some host.
    MemoryUnknown { hosts: usize },
}

/// Where and over what the rates were read.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct Query {
    /// The query API's URL.
    pub url: String,
    /// The window each rate is over (`6h`).
    pub window: String,
    /// The window's end (None: now).
    pub at: Option<String>,
    /// The cgroup selector (None: the exporters' targets).
    pub cgroup: Option<String>,
}

/// The fleet comparison, B against A.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Fleet {
    pub query: Query,
    pub groups: Vec<Group>,
    pub rows: Vec<Row>,
    /// On reclaim stall time per second.
    pub verdict: Verdict,
    pub stall_time: Option<Change>,
    /// Strongest first; empty unless significant.
    pub causes: Vec<Cause>,
    pub caveats: Vec<Caveat>,
}

/// The parts of the stall time, each claiming its own difference, and
/// the evidence-only rates, with the mechanism each points at.
const CLAIMS: [(Mechanism, Rate); 2] = [
    (Mechanism::Reclaim, Rate::MemcgStallTime),
    (Mechanism::Reclaim, Rate::DirectStallTime),
];
const EVIDENCE: [(Mechanism, Rate); 6] = [
    (Mechanism::OomKills, Rate::OomKills),
    (Mechanism::SwapIn, Rate::SwapIns),
    (Mechanism::Refaults, Rate::Refaults),
    (Mechanism::SwapOut, Rate::SwapOuts),
    (Mechanism::Compaction, Rate::Compaction),
    (Mechanism::Refaults, Rate::MajorFaults),
];

/// Compares group B (`groups[1]`) with A, the baseline.
pub fn compare(query: Query, a: &GroupInput, b: &GroupInput) -> Fleet {
    let inputs = [a, b];
    let values = |rate: Rate| -> Vec<Vec<f64>> {
        inputs
            .iter()
            .map(|g| {
                g.hosts
                    .iter()
                    .filter_map(|h| h.rates.get(&rate).copied())
                    .filter(|v| v.is_finite())
                    .collect()
            })
            .collect()
    };
    let rows: Vec<Row> = Rate::ALL
        .iter()
        .filter_map(|&rate| {
            let v = values(rate);
            if v.iter().all(|g| g.iter().all(|&x| x == 0.0)) {
                return None;
            }
            let groups: Vec<Option<Describe>> = v.iter().map(|g| describe(g)).collect();
            Some(Row {
                rate,
                unit: rate.unit(),
                change: change(&v[0], groups[0], &v[1], groups[1]),
                groups,
            })
        })
        .collect();
    let row = |rate: Rate| rows.iter().find(|r| r.rate == rate);
    let stall_time = row(Rate::StallTime).and_then(|r| r.change);
    let judgeable = inputs.iter().all(|g| g.hosts.len() >= 2);
    let verdict = match stall_time {
        _ if !judgeable => Verdict::NotJudged,
        Some(c) if c.significant() && c.diff > 0.0 => Verdict::Slower,
        Some(c) if c.significant() && c.diff < 0.0 => Verdict::Faster,
        _ => Verdict::WithinNoise,
    };
    let causes = if matches!(verdict, Verdict::Slower | Verdict::Faster) {
        causes(&rows, stall_time.map_or(0.0, |c| c.diff))
    } else {
        Vec::new()
    };
    let mut caveats = caveats(&inputs);
    if verdict == Verdict::WithinNoise
        && let Some(n) = row(Rate::StallTime).and_then(hosts_needed)
    {
        caveats.push(Caveat::HostsNeeded { per_group: n });
    }
    Fleet {
        query,
        groups: inputs.iter().map(|g| group(g)).collect(),
        rows,
        verdict,
        stall_time,
        causes,
        caveats,
    }
}

fn group(g: &GroupInput) -> Group {
    Group {
        matcher: g.matcher.clone(),
        hosts: g.hosts.iter().map(|h| h.instance.clone()).collect(),
        missing: g.missing.clone(),
        reset: g
            .hosts
            .iter()
            .filter(|h| h.reset)
            .map(|h| h.instance.clone())
            .collect(),
    }
}

/// The parts of the stall time that moved significantly in the
/// verdict's direction, largest claim first; then the evidence rates
/// that moved significantly, the smallest p first.
fn causes(rows: &[Row], diff: f64) -> Vec<Cause> {
    let moved = |rate: Rate| {
        rows.iter()
            .find(|r| r.rate == rate)
            .and_then(|r| r.change)
            .filter(Change::significant)
    };
    let mut claiming: Vec<Cause> = CLAIMS
        .iter()
        .filter_map(|&(mechanism, rate)| {
            let c = moved(rate).filter(|c| c.diff * diff > 0.0)?;
            Some(Cause {
                mechanism,
                rate,
                change: c,
                claims: Some(c.diff),
            })
        })
        .collect();
    claiming.sort_by(|x, y| {
        let abs = |c: &Cause| c.claims.unwrap_or(0.0).abs();
        abs(y).total_cmp(&abs(x))
    });
    // A part that moved the other way leaves the rest more than the
    // difference: together the claims are at most the difference.
    let mut left = diff.abs();
    for c in &mut claiming {
        let s = c.claims.unwrap_or(0.0);
        let take = s.abs().min(left);
        left -= take;
        c.claims = Some(take.copysign(s));
    }
    let mut evidence: Vec<Cause> = EVIDENCE
        .iter()
        .filter_map(|&(mechanism, rate)| {
            let c = moved(rate).filter(|c| c.diff * diff > 0.0)?;
            Some(Cause {
                mechanism,
                rate,
                change: c,
                claims: None,
            })
        })
        .collect();
    let p = |c: &Cause| c.change.welch.map_or(1.0, |w| w.p);
    evidence.sort_by(|x, y| p(x).total_cmp(&p(y)));
    claiming.extend(evidence);
    claiming
}

/// Hosts per group for 80 % power at p < 0.05 (two-sided, normal
/// approximation): 2 (z_0.975 + z_0.8)^2 / d^2, d the change over the
/// pooled standard deviation. None without a change or a spread.
fn hosts_needed(row: &Row) -> Option<usize> {
    let (a, b) = (row.groups[0]?, row.groups[1]?);
    let diff = (b.mean - a.mean).abs();
    let sd = ((a.stddev.powi(2) + b.stddev.powi(2)) / 2.0).sqrt();
    if diff <= 0.0 || sd <= 0.0 || !diff.is_finite() {
        return None;
    }
    let d = diff / sd;
    let n = 2.0 * (1.959_964 + 0.841_621_f64).powi(2) / (d * d);
    Some((n.ceil() as usize).max(2))
}

fn caveats(inputs: &[&GroupInput; 2]) -> Vec<Caveat> {
    let mut out = Vec::new();
    let (a, b) = (inputs[0].hosts.len(), inputs[1].hosts.len());
    if a != b {
        out.push(Caveat::UnequalGroups { a, b });
    }
    for (group, g) in inputs.iter().enumerate() {
        if g.hosts.len() < 2 {
            out.push(Caveat::TooFewHosts {
                group,
                hosts: g.hosts.len(),
            });
        }
    }
    let hosts = || inputs.iter().flat_map(|g| g.hosts.iter());
    let sizes: Vec<f64> = hosts().filter_map(|h| h.memory_bytes).collect();
    let unknown = hosts().count() - sizes.len();
    if unknown > 0 {
        out.push(Caveat::MemoryUnknown { hosts: unknown });
    }
    let min = sizes.iter().copied().fold(f64::INFINITY, f64::min);
    let max = sizes.iter().copied().fold(0.0, f64::max);
    if !sizes.is_empty() && max > 1.1 * min {
        out.push(Caveat::MemoryDiffers {
            min_bytes: min,
            max_bytes: max,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host whose stall time is `memcg` + `direct` s/s, with some swap.
    fn host(name: &str, memcg: f64, direct: f64, swapins: f64) -> Host {
        let rates = BTreeMap::from([
            (Rate::StallTime, memcg + direct),
            (Rate::MemcgStallTime, memcg),
            (Rate::DirectStallTime, direct),
            (Rate::SwapIns, swapins),
        ]);
        Host {
            instance: name.into(),
            rates,
            reset: false,
            memory_bytes: Some(8e9),
        }
    }

    fn group(hosts: Vec<Host>) -> GroupInput {
        GroupInput {
            matcher: "rollout=\"x\"".into(),
            hosts,
            missing: Vec::new(),
        }
    }

    #[test]
    fn a_planted_memcg_cause_is_named_first_and_claims_the_difference() {
        let a = group(vec![
            host("a1", 0.010, 0.001, 10.0),
            host("a2", 0.012, 0.001, 11.0),
            host("a3", 0.011, 0.0012, 9.0),
        ]);
        let b = group(vec![
            host("b1", 0.200, 0.001, 300.0),
            host("b2", 0.210, 0.0011, 320.0),
            host("b3", 0.190, 0.001, 310.0),
        ]);
        let f = compare(Query::default(), &a, &b);
        assert_eq!(f.verdict, Verdict::Slower);
        let first = &f.causes[0];
        assert_eq!(
            (first.mechanism, first.rate),
            (Mechanism::Reclaim, Rate::MemcgStallTime)
        );
        let diff = f.stall_time.expect("a change").diff;
        let claimed: f64 = f.causes.iter().filter_map(|c| c.claims).sum();
        assert!(
            claimed <= diff + 1e-12 && claimed > 0.9 * diff,
            "{claimed} of {diff}"
        );
        assert!(
            f.causes
                .iter()
                .any(|c| c.rate == Rate::SwapIns && c.claims.is_none())
        );
        assert!(f.caveats.is_empty(), "{:?}", f.caveats);
    }

    #[test]
    fn within_noise_names_nothing_and_says_how_many_hosts_would_tell() {
        let a = group(vec![
            host("a1", 0.010, 0.0, 1.0),
            host("a2", 0.014, 0.0, 1.0),
        ]);
        let b = group(vec![
            host("b1", 0.011, 0.0, 1.0),
            host("b2", 0.016, 0.0, 1.0),
        ]);
        let f = compare(Query::default(), &a, &b);
        assert_eq!(f.verdict, Verdict::WithinNoise);
        assert!(f.causes.is_empty());
        let Some(Caveat::HostsNeeded { per_group }) = f.caveats.last() else {
            panic!("{:?}", f.caveats);
        };
        // d = 0.0015 / sqrt((0.0028^2 + 0.0035^2) / 2) = 0.475: 70 hosts.
        let sd = |x: f64, y: f64| (x - y).abs() / 2f64.sqrt();
        let pooled = ((sd(0.010, 0.014).powi(2) + sd(0.011, 0.016).powi(2)) / 2.0).sqrt();
        let d = 0.0015 / pooled;
        assert_eq!(*per_group, (15.698 / (d * d)).ceil() as usize);
    }

    #[test]
    fn a_lone_host_unequal_groups_and_memory_sizes_are_said() {
        let mut big = host("b1", 0.5, 0.0, 1.0);
        big.memory_bytes = Some(16e9);
        let mut unknown = host("a2", 0.01, 0.0, 1.0);
        unknown.memory_bytes = None;
        let f = compare(
            Query::default(),
            &group(vec![host("a1", 0.01, 0.0, 1.0), unknown]),
            &group(vec![big]),
        );
        assert_eq!(f.verdict, Verdict::NotJudged);
        assert!(f.causes.is_empty());
        assert!(f.caveats.contains(&Caveat::UnequalGroups { a: 2, b: 1 }));
        assert!(
            f.caveats
                .contains(&Caveat::TooFewHosts { group: 1, hosts: 1 })
        );
        assert!(f.caveats.contains(&Caveat::MemoryUnknown { hosts: 1 }));
        assert!(f.caveats.contains(&Caveat::MemoryDiffers {
            min_bytes: 8e9,
            max_bytes: 16e9
        }));
    }
}
