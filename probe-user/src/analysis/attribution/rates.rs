//! The rates at which a group's seconds turn into elapsed seconds: per
//! CPU-second (`w`), per wait task-second (`w_io`), and the host's
//! steal rate, from each group's mean budget (`GroupBudget`).

use super::budget::budget;
use super::{Basis, Component, Kind, N};
use crate::analysis::measures::delays;
use crate::analysis::readings::busy_s;
use crate::model::report::RunReport;

/// Elapsed seconds one second of `load_s` (CPU-seconds or task-seconds
/// over `elapsed`) stands for: elapsed / load, at most 1. A task is in
/// one state at a time, so one more second of it can cost at most one
/// elapsed second; a load below 1 (idle CPUs, a job that also sleeps
/// otherwise) does not make a second cost more than that.
pub(super) fn elapsed_per_second(load_s: f64, elapsed: f64) -> f64 {
    if load_s > 0.0 && elapsed > 0.0 && load_s.is_finite() && elapsed.is_finite() {
        (elapsed / load_s).min(1.0)
    } else {
        1.0
    }
}

/// One group's mean figures: its budget, elapsed time, the machine's
/// busy CPU-seconds and the run-queue waits (the symptom).
pub(super) struct GroupBudget {
    pub budget: [f64; N],
    pub elapsed: f64,
    pub busy: Option<f64>,
    pub cpu_wait: Option<f64>,
    /// CPU-seconds convert at the job's own rate (its waits per holder
    /// are measured), not the machine's.
    pub own_rate: bool,
}

impl GroupBudget {
    pub fn of(runs: &[&RunReport], basis: Basis) -> GroupBudget {
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let some_mean = |v: Vec<f64>| (!v.is_empty()).then(|| mean(&v));
        let b: Vec<[f64; N]> = runs.iter().map(|r| budget(r, basis)).collect();
        GroupBudget {
            budget: std::array::from_fn(|c| mean(&b.iter().map(|x| x[c]).collect::<Vec<_>>())),
            elapsed: mean(&runs.iter().map(|r| r.usage.wall_s).collect::<Vec<_>>()),
            busy: some_mean(runs.iter().filter_map(|r| busy_s(r)).collect())
                .filter(|_| basis.machine_cpu),
            cpu_wait: some_mean(
                runs.iter()
                    .filter_map(|r| delays(r))
                    .map(|d| d.cpu_ns as f64 / 1e9)
                    .collect(),
            ),
            own_rate: basis.cpu_waits,
        }
    }

    /// The target's CPU-seconds.
    pub fn target_cpu(&self) -> f64 {
        Component::ALL
            .iter()
            .zip(&self.budget)
            .filter(|(c, _)| c.kind() == Kind::TargetCpu)
            .map(|(_, s)| s)
            .sum()
    }

    /// The target's CPU-seconds and wait task-seconds together.
    pub fn target(&self) -> f64 {
        Component::ALL
            .iter()
            .zip(&self.budget)
            .filter(|(c, _)| c.kind() != Kind::MachineCpu)
            .map(|(_, s)| s)
            .sum()
    }

    /// Elapsed seconds per wait task-second: 1 / the job's concurrency.
    pub fn w_io(&self) -> f64 {
        elapsed_per_second(self.target(), self.elapsed)
    }

    /// Elapsed seconds per CPU-second: 1 / the job's CPU parallelism
    /// where its waits behind others are measured; else (older
    /// recordings) 1 / the machine's busy CPUs, or without them 1 / the
    /// job's concurrency.
    pub fn w_cpu(&self) -> f64 {
        if self.own_rate {
            return elapsed_per_second(self.target_cpu(), self.elapsed);
        }
        self.busy
            .map_or_else(|| self.w_io(), |b| elapsed_per_second(b, self.elapsed))
    }
}

/// The host's steal rate over the two groups, `r' = (r_a + r_b) / 2`
/// with r = steal / (busy - steal), and steal's own change, `x' dr`
/// (see `attribute`); (0, 0) without the machine's CPU time. The rate
/// is the machine's (steal is booked per CPU); x, the CPU-seconds it
/// taxes on the job's behalf, is the job's own where its waits are
/// measured (`own_rate`): steal of a CPU that ran another task slows
/// the job only through the job's waits behind that task, which are
/// measured. Older recordings keep x = busy - steal, the machine's.
pub(super) fn steal_change(a: &GroupBudget, b: &GroupBudget) -> (f64, f64) {
    let steal = |g: &GroupBudget| g.budget[Component::Steal as usize];
    let (Some(busy_a), Some(busy_b)) = (a.busy, b.busy) else {
        return (0.0, 0.0);
    };
    let (xa, xb) = (busy_a - steal(a), busy_b - steal(b));
    if xa <= 0.0 || xb <= 0.0 {
        return (0.0, 0.0);
    }
    let (ra, rb) = (steal(a) / xa, steal(b) / xb);
    let taxed = |g: &GroupBudget, x: f64| if g.own_rate { g.target_cpu() } else { x };
    let x = (taxed(a, xa) + taxed(b, xb)) / 2.0;
    ((ra + rb) / 2.0, x * (rb - ra))
}
