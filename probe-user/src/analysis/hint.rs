//! A likely mechanism as data: which mechanism, the seconds of the
//! elapsed difference it claims, and the evidence that points at it as
//! numbers (a measure's two means, a share, the way into reclaim that
//! moved, who was OOM-killed, the zones' shares). The detectors
//! (mechanisms/) choose the evidence; the view words it
//! (view/compare/hints.rs), so `compare --json` readers get the same
//! numbers the sentence is written from, and a relabel changes no data.

use serde::Serialize;

use super::{Measure, mechanism::Mechanism};

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Hint {
    pub mechanism: Mechanism,
    /// Seconds of elapsed difference linked to it (ranking key); null
    /// for a mechanism that is not a part of the time (OOM kills, ranked
    /// first: runs that did not finish).
    #[serde(serialize_with = "finite_or_null")]
    #[schemars(with = "Option<f64>")]
    pub seconds: f64,
    /// What points at it, in the order the sentence names it.
    pub evidence: Vec<Fact>,
}

impl Hint {
    /// The evidence on `measure`, if the detector named it.
    pub fn measure(&self, measure: Measure) -> Option<&Fact> {
        self.evidence
            .iter()
            .find(|f| matches!(f, Fact::Measure { measure: m, .. } if *m == measure))
    }

    /// The share of `kind`, if the detector named one.
    pub fn share(&self, kind: ShareOf) -> Option<f64> {
        self.evidence.iter().find_map(|f| match f {
            Fact::Share { of, value } if *of == kind => Some(*value),
            _ => None,
        })
    }
}

/// One piece of a hint's evidence.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fact {
    /// A compared measure: the baseline's mean (`a`) and this group's
    /// (`b`), null where a group lacks it; `comparable` false where a
    /// setting that differs redefines it (the guards): then neither is
    /// given.
    Measure {
        measure: Measure,
        a: Option<f64>,
        b: Option<f64>,
        comparable: bool,
    },
    /// A fraction in [0, 1] of what the mechanism's change is made of.
    Share { of: ShareOf, value: f64 },
    /// The direction of a switch: zswap serving more swap-ins (true) or
    /// fewer.
    More { more: bool },
    /// The way into reclaim whose stall time per run moved most.
    WayMoved { way: WayMoved },
    /// A kernel function whose share of the job's sampled CPU inside
    /// reclaim and compaction moved (analysis/profile.rs): the mean
    /// share (0..1) of the samples whose stack passes through it, in
    /// the baseline (`a`) and this group (`b`).
    FunctionShare { function: String, a: f64, b: f64 },
    /// Runs OOM-killed in this group and the baseline (OOM kills).
    Kills {
        killed: u64,
        runs: u64,
        baseline_killed: u64,
        baseline_runs: u64,
    },
    /// One process name the OOM killer chose in this group.
    Victim {
        comm: String,
        /// One of the job's processes.
        target: bool,
        kills: u64,
        baseline_kills: u64,
    },
    /// Zones whose share of what `counted` counts moved by 10 points or
    /// more.
    ZoneShares {
        counted: ZoneCounted,
        zones: Vec<ZoneShare>,
    },
}

/// What a share is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ShareOf {
    /// Of reclaim's change: the part that evicted pages needed again
    /// (d refaults / d pages reclaimed).
    RefaultedReclaim,
}

/// The way into reclaim that moved most, by the first callers where it
/// parts from every other way of its context.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct WayMoved {
    /// Its way in ("direct", "memcg").
    pub context: crate::model::report::EntryWay,
    /// Up to three callers, nearest first.
    pub callers: Vec<String>,
    /// Frames shared with another way come before `callers`.
    pub shared_before: bool,
    /// More callers follow `callers`.
    pub more_after: bool,
    /// Its stall time's change per run, seconds (this group less the
    /// baseline).
    pub seconds_per_run: f64,
}

/// What the zones' shares are shares of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ZoneCounted {
    /// Page allocations per zone type (pgalloc_<zone>, all nodes).
    Allocations,
    /// Direct reclaim stalls by highest allowed zone (allocstall_<zone>).
    DirectReclaimStalls,
    /// --page-alloc's allocations per node and zone.
    AllocationsByNode,
}

/// A zone's share in percent, baseline and this group.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ZoneShare {
    /// `Normal`, or `0/Normal` by node.
    pub zone: String,
    pub a_pct: f64,
    pub b_pct: f64,
}

/// A number JSON can hold, or null (JSON has no infinity: serde_json
/// wrote null for it while the schema promised a number).
fn finite_or_null<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() {
        s.serialize_f64(*v)
    } else {
        s.serialize_none()
    }
}
