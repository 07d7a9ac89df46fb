//! The likely mechanisms behind a difference between a group and the
//! baseline, one function per mechanism (OOM kills, zswap, file reads,
//! swap-in, reclaim, kswapd, CPU contention, refaults, swap-out,
//! compaction, system CPU, zones), each naming the numbers that point at
//! it and ranked by the seconds of elapsed difference linked to it.
//!
//! A mechanism is named on a significant difference, but claims only
//! the elapsed seconds its evidence supports, never a whole component
//! on a flag: reclaim its on-CPU time and its sleeps, compaction
//! likewise, kswapd its CPU, CPU contention other tasks' CPU and steal;
//! the block I/O waits are split between swap-in (or zswap) and file
//! reads in proportion to what moved (the swap device's read time
//! against the rest of the I/O waits, or swap-in against file-read
//! faults), and the other system CPU between swap-in (its delay
//! accounting's swap-in time, CPU work) and "system CPU". The claims
//! are fractions of disjoint components' parts, so each is at most what
//! its components hold and together they are at most the difference.
//!
//! Mechanisms read measures and budget components by their typed keys
//! (`Measure`, `Component`): a label is only printed, so a mechanism
//! naming a measure the table lacks does not compile:
//!
//! ```compile_fail
//! use vmtrace::analysis::Measure;
//! let _ = Measure::NoSuchMeasure;
//! ```

use super::Measure::{self, *};
use super::attribution::Component;
use super::entries::EntryRow;
use super::hint::{Fact, WayMoved};
use super::mechanism::Mechanism;
use super::{AttributionRow, GroupInfo, Hint, MetricRow};
use crate::model::entries::entry_chain;
use crate::model::report::{EntryWay, RunReport};

impl Mechanism {
    /// Looks for this mechanism in the evidence: an exhaustive match, so
    /// a new mechanism does not compile until it has a detector.
    fn detect(self, e: &Evidence) -> Option<Hint> {
        match self {
            Mechanism::OomKills => oom_kills(e),
            Mechanism::Zswap => io::zswap(e),
            Mechanism::FileReads => io::file_reads(e),
            Mechanism::Writeback => io::writeback(e),
            Mechanism::SwapIn => io::swap_in(e),
            Mechanism::Reclaim => reclaim::reclaim(e),
            Mechanism::Kswapd => cpu::kswapd(e),
            Mechanism::CpuContention => cpu::cpu_contention(e),
            Mechanism::Refaults => reclaim::refaults(e),
            Mechanism::SwapOut => io::swap_out(e),
            Mechanism::Compaction => reclaim::compaction(e),
            Mechanism::SystemCpu => system_cpu(e),
            // Its shares come from pgalloc_/allocstall_ and --page-alloc,
            // none of which a guard redefines (MGLRU changes scans, not
            // allocations).
            Mechanism::Zones => zone_shift(&e.ok[0], &e.ok[e.g]),
        }
    }
}

/// The shares of the block I/O waits' part (see `Evidence::io_shares`).
#[derive(Clone, Copy, Debug, Default)]
struct IoShares {
    swap: f64,
    reads: f64,
    writes: f64,
}

impl IoShares {
    /// `[swap, reads, writes]` as fractions of their sum (None: 0).
    fn of(v: [f64; 3]) -> Option<IoShares> {
        let total: f64 = v.iter().sum();
        (total > 0.0).then(|| IoShares {
            swap: v[0] / total,
            reads: v[1] / total,
            writes: v[2] / total,
        })
    }
}

/// What the mechanisms read: group `g` against the baseline.
struct Evidence<'a> {
    g: usize,
    judgeable: bool,
    groups: &'a [GroupInfo],
    metrics: &'a [MetricRow],
    attribution: &'a [AttributionRow],
    /// The ways into reclaim (analysis/entries.rs), with which moved.
    entries: &'a [EntryRow],
    /// The functions inside the stalls (analysis/profile.rs), with
    /// which moved.
    profile: &'a [super::profile::ProfileRow],
    /// Each group's completed runs.
    ok: &'a [Vec<&'a RunReport>],
}

impl Evidence<'_> {
    /// A significant change of at least 5%, or a switch from none to
    /// some: evidence that a quantity moved. Significance alone is not:
    /// the same build's 2503 -> 2498 pages written was significant
    /// (every run wrote the same files) and means nothing.
    fn moved(&self, key: Measure) -> bool {
        let material = self
            .metric(key)
            .and_then(|m| m.changes[self.g - 1])
            .and_then(|c| c.pct)
            .is_none_or(|p| p.abs() >= 5.0);
        (self.real(key) && material) || self.switched(key)
    }

    fn metric(&self, key: Measure) -> Option<&MetricRow> {
        self.metrics.iter().find(|m| m.measure == key)
    }

    /// A cause is named only for a difference that is real: significant,
    /// or (one run per group) more than 5% of the metric's baseline.
    fn real(&self, key: Measure) -> bool {
        if super::guards::guarded(self.metrics, key) {
            return false;
        }
        self.metric(key)
            .and_then(|m| m.changes[self.g - 1])
            .is_some_and(|c| {
                if self.judgeable {
                    c.significant()
                } else {
                    c.pct.is_some_and(|p| p.abs() > 5.0)
                }
            })
    }

    /// The elapsed seconds of the difference attributed to a component
    /// of the time budget (analysis/attribution/): with the difference's sign,
    /// never more than it, 0 for a component that moved against it (or
    /// one the budget lacks). Mechanisms claim disjoint fractions of
    /// these parts, so together they never claim more than the
    /// difference either.
    fn comp(&self, component: Component) -> f64 {
        self.row(component).map_or(0.0, |a| a.elapsed[self.g - 1])
    }

    fn row(&self, component: Component) -> Option<&AttributionRow> {
        self.attribution.iter().find(|a| a.component == component)
    }

    /// A measure's change of means, this group less the baseline (None:
    /// guarded, or a group lacks it).
    /// Reclaim's part of the difference: its on-CPU time and sleeps.
    fn reclaim_seconds(&self) -> f64 {
        let cross = if self.cross_cpu_is_contention() {
            0.0
        } else {
            self.comp(Component::ReclaimCrossCpu)
        };
        self.comp(Component::ReclaimCpu) + cross + self.comp(Component::ReclaimWaits)
    }

    /// Whether reclaim's cross-CPU calls (TLB-flush IPIs) waited for
    /// CPUs busy with tasks outside the job: their change goes to CPU
    /// contention when other tasks kept the CPUs busier (their load, CPU
    /// per elapsed second, changed significantly in the same direction:
    /// the target CPUs ran them instead of idling in lazy-TLB mode, where
    /// a flush skips them). Their CPU-seconds alone would not do: a load
    /// present in both groups runs longer whenever the job does.
    /// Otherwise the change is reclaim's own (more flushes, or costlier).
    fn cross_cpu_is_contention(&self) -> bool {
        let cross = self
            .row(Component::ReclaimCrossCpu)
            .map(|r| r.diffs[self.g - 1]);
        self.real(OtherTasksLoad)
            && matches!((cross, self.delta(OtherTasksLoad)), (Some(c), Some(o)) if c * o > 0.0)
    }

    /// The share of reclaim's change that refaults account for: every
    /// page refaulted was reclaimed once before, so `d refaults / d pages
    /// reclaimed` (in [0, 1]) of the extra reclaim was spent evicting
    /// pages that were needed again. 0 unless both moved, the same way.
    fn refault_share(&self) -> f64 {
        if !(self.real(Refaults) && self.real(PagesReclaimed)) {
            return 0.0;
        }
        match (self.delta(Refaults), self.delta(PagesReclaimed)) {
            (Some(r), Some(p)) if r * p > 0.0 => (r / p).clamp(0.0, 1.0),
            _ => 0.0,
        }
    }

    fn delta(&self, key: Measure) -> Option<f64> {
        if super::guards::guarded(self.metrics, key) {
            return None;
        }
        Some(self.mean(key, self.g)? - self.mean(key, 0)?)
    }

    /// The I/O waits changed: timed at the scheduler, or by delay
    /// accounting where the runs lack that.
    fn io_real(&self) -> bool {
        self.real(IoWaitTime) || self.real(BlockIoDelay)
    }

    /// The way into reclaim (direct or memcg) whose stall time per run
    /// moved most (among those that moved by compare's rules:
    /// analysis/entries.rs), by the
    /// first callers where it parts from every other way of its context
    /// (the memcg charge path, try_charge_memcg < charge_memcg <
    /// __mem_cgroup_charge, is every charging way's: no way is told
    /// apart by it), with the change per run.
    fn way_that_moved_most(&self) -> Option<WayMoved> {
        let diff = |r: &EntryRow| r.changes[self.g - 1].map_or(0.0, |c| c.diff);
        // Reclaim's ways only: a direct compaction's runs are not
        // reclaim stalls.
        let way = self
            .entries
            .iter()
            .filter(|r| match r.context {
                EntryWay::Direct | EntryWay::Memcg => true,
                EntryWay::Compaction | EntryWay::KswapdWake => false,
            })
            .filter(|r| r.moved.get(self.g - 1) == Some(&true))
            .max_by(|a, b| diff(a).abs().total_cmp(&diff(b).abs()))?;
        let shared = self
            .entries
            .iter()
            .filter(|r| r.context == way.context && r.frames != way.frames)
            .map(|r| {
                r.frames
                    .iter()
                    .zip(&way.frames)
                    .take_while(|(a, b)| a == b)
                    .count()
            })
            .max()
            .unwrap_or(0);
        // entry_chain leaves out the first frame it is given: the last
        // shared one (or the reclaim function itself).
        let from = shared.clamp(1, way.frames.len().max(1)) - 1;
        let mut chain = entry_chain(&way.frames[from..]);
        if chain.is_empty() {
            chain = entry_chain(&way.frames);
        }
        let pieces: Vec<&str> = chain.split(" < ").collect();
        Some(WayMoved {
            context: way.context,
            callers: pieces.iter().take(3).map(|c| c.to_string()).collect(),
            shared_before: from > 0,
            more_after: pieces.len() > 3,
            seconds_per_run: diff(way),
        })
    }

    /// The kernel functions whose share of the CPU inside the stalls
    /// moved most (at most three; analysis/profile.rs).
    fn functions_that_moved(&self) -> Vec<Fact> {
        let mean = |d: Option<super::stats::Describe>| d.map_or(0.0, |d| d.mean);
        super::profile::moved(self.profile, self.g)
            .into_iter()
            .take(3)
            .map(|r| Fact::FunctionShare {
                function: r.function.clone(),
                a: mean(r.total[0]),
                b: mean(r.total[self.g]),
            })
            .collect()
    }

    /// The I/O waits as the runs timed them: at the scheduler, or by
    /// delay accounting where they lack that.
    fn io_fact(&self) -> Fact {
        let key = if self.metric(IoWaitTime).is_some() {
            IoWaitTime
        } else {
            BlockIoDelay
        };
        self.fact(key)
    }

    /// The fractions (swap-in, file reads, writeback) of the block I/O
    /// waits' part that their evidence supports, each in [0, 1],
    /// together 1 or 0: the waits are the reads' (a swap-in or a file
    /// read waits for its read on the folio lock, in an I/O wait) and
    /// the writes' (a task that dirtied file pages waits in
    /// balance_dirty_pages' io_schedule_timeout, fsync in
    /// folio_wait_writeback), so they are shared in proportion to what
    /// changed: the pages read from the swap device, the job's other
    /// pages read (`FileReadPages`) and the file pages it dirtied
    /// (`FileWritePages`), each counted only when it moved with the I/O
    /// waits' part (96 MiB more read through a mapping beside the same
    /// swap-ins: file reads, all of it; a change within noise counts as
    /// none). Where the runs lack the job's block input, by major
    /// faults by cause instead (a sequential file read is one fault per
    /// readahead window, so faults undercount it). Where nothing moved
    /// with the part, by the kinds' levels averaged over the two
    /// groups. Where the runs do not split major faults by cause and
    /// lack block input, all the reads are swap-ins.
    ///
    /// Not the swap device's read time: a throttled or congested
    /// device holds the reads before they are issued (blk-throttle,
    /// the tag wait), which that time, issue to completion, leaves out;
    /// a planted 8 MB/s throttle took the I/O waits from 2.8 s to 56 s
    /// with the device's read time unchanged.
    fn io_shares(&self) -> IoShares {
        let Some(row) = self.row(Component::BlockIoWaits) else {
            return IoShares::default();
        };
        let part = row.elapsed[self.g - 1];
        if part == 0.0 {
            return IoShares::default();
        }
        let split = [0, self.g]
            .iter()
            .any(|&g| self.mean(SwapInFaults, g).is_some());
        let (swapins, files) = if self.has_file_pages() {
            (ReadFromSwapDevice, Some(FileReadPages))
        } else if split {
            (SwapInFaults, Some(FileReadFaults))
        } else {
            (MajorFaults, None)
        };
        let writes = [0, self.g]
            .iter()
            .all(|&g| self.mean(FileWritePages, g).is_some())
            .then_some(FileWritePages);
        let keys = [Some(swapins), files, writes];
        // A change within noise, or too small to matter, is no evidence:
        // a throttled swap device with the same swap-ins and a few more
        // file pages read by chance (a t-test's p = 0.4) gave file reads
        // the whole share.
        let moved = |key| {
            if !self.moved(key) {
                return 0.0;
            }
            self.delta(key)
                .map_or(0.0, |d| (d * part.signum()).max(0.0))
        };
        if let Some(s) = IoShares::of(keys.map(|k| k.map_or(0.0, moved))) {
            return s;
        }
        let level = |key| {
            let v: Vec<f64> = [0, self.g]
                .iter()
                .filter_map(|&g| self.mean(key, g))
                .collect();
            if v.is_empty() {
                0.0
            } else {
                (v.iter().sum::<f64>() / v.len() as f64).max(0.0)
            }
        };
        IoShares::of(keys.map(|k| k.map_or(0.0, level))).unwrap_or_default()
    }

    /// The fraction of the other system CPU's part that swap-in's work
    /// on the CPU supports: the change of delay accounting's swap-in
    /// time (swap_read_folio: the read's submission, a zswap load's or
    /// a synchronous device's decompression) over the change of other
    /// system CPU, in [0, 1]; 0 when guarded or moving the other way.
    fn swap_sys_share(&self) -> f64 {
        let Some(row) = self.row(Component::OtherSystemCpu) else {
            return 0.0;
        };
        let dsys = row.diffs[self.g - 1];
        match self.delta(SwapInWait) {
            Some(d) if row.elapsed[self.g - 1] != 0.0 && d * dsys > 0.0 => (d / dsys).min(1.0),
            _ => 0.0,
        }
    }

    /// The fraction of the other system CPU's part that refaults claim:
    /// the change of the sampled page-cache fill CPU over the change of
    /// the other system CPU (in [0, 1]), times the share of the extra
    /// reclaim that evicted pages needed again (each such page is
    /// filled again: in a full box a page filled is a page reclaimed),
    /// and at most what swap-in left. 0 unless refaults are named.
    fn refill_sys_share(&self) -> f64 {
        if !self.refaults_named() {
            return 0.0;
        }
        let Some(row) = self.row(Component::OtherSystemCpu) else {
            return 0.0;
        };
        let dsys = row.diffs[self.g - 1];
        let fill = match self.delta(PageCacheFillCpu) {
            Some(d) if row.elapsed[self.g - 1] != 0.0 && d * dsys > 0.0 => (d / dsys).min(1.0),
            _ => 0.0,
        };
        let swap = if self.swap_named() {
            self.swap_sys_share()
        } else {
            0.0
        };
        (fill * self.refault_share()).min(1.0 - swap)
    }

    /// The fraction of the other system CPU's change that the profile
    /// saw: the change of the job's sampled kernel CPU outside the stall
    /// spans over the change rusage booked there, in [0, 1]; 1 where a
    /// group lacks the profile, 0 where the samples did not move with
    /// it. Rusage's system time is the task's scheduler runtime (split
    /// by ticks), and not every booked second is kernel work the job
    /// did: a memhog sharing its CPU with a busy loop (the calibration's
    /// moved hog) was booked +0.9 to +1.2 s of system time in every
    /// run, also untraced, while the sampler saw its kernel CPU outside
    /// reclaim fall (2.4 -> 2.1 s) and the tick's per-CPU counts gave
    /// the busy loop the difference. "System CPU" names more work in
    /// the kernel, so it claims only what the sampler saw of it.
    fn sampled_sys_share(&self) -> f64 {
        let Some(row) = self.row(Component::OtherSystemCpu) else {
            return 1.0;
        };
        let booked = row.diffs[self.g - 1];
        match self.delta(SampledSystemCpu) {
            None => 1.0,
            Some(seen) if booked != 0.0 && seen * booked > 0.0 => (seen / booked).min(1.0),
            Some(_) => 0.0,
        }
    }

    /// Refaults are named (the condition of their hint).
    fn refaults_named(&self) -> bool {
        self.real(Refaults) || self.real(ThrashingDelay) || self.real(RefaultActivations)
    }

    /// Swap-in (or zswap) is named: either claims swap-in's seconds.
    fn swap_named(&self) -> bool {
        self.zswap_moved() || self.swaps_in() || (self.io_real() && !self.file_reads_moved())
    }

    /// Both groups have the job's block input split from the swap
    /// device's reads (`FileReadPages`).
    fn has_file_pages(&self) -> bool {
        [0, self.g]
            .iter()
            .all(|&g| self.mean(FileReadPages, g).is_some())
    }

    /// File reads changed: the job's pages read besides swap, or the
    /// file-read faults; or its pages read went from none in every run
    /// to some in every run (a job that read nothing but swap: no
    /// t-test judges a group of zeros).
    fn file_reads_moved(&self) -> bool {
        self.real(FileReadFaults) || self.real(FileReadPages) || self.switched(FileReadPages)
    }

    /// What swap-in (or zswap) claims: its share of the block I/O waits
    /// and of the interrupts (the reads' completions: block softirqs),
    /// and of the other system CPU.
    fn swap_seconds(&self) -> f64 {
        self.io_shares().swap * self.io_part()
            + self.swap_sys_share() * self.comp(Component::OtherSystemCpu)
    }

    /// What the I/O shares are of: the block I/O waits' part and the
    /// interrupts' (the I/O's completions).
    fn io_part(&self) -> f64 {
        self.comp(Component::BlockIoWaits) + self.comp(Component::Interrupts)
    }

    fn mean(&self, key: Measure, grp: usize) -> Option<f64> {
        self.metric(key).and_then(|m| m.groups[grp]).map(|d| d.mean)
    }

    /// A measure's baseline mean and this group's, as evidence; none
    /// where a guard holds (not comparable).
    fn fact(&self, key: Measure) -> Fact {
        let comparable = !super::guards::guarded(self.metrics, key);
        let mean = |g| self.mean(key, g).filter(|_| comparable);
        Fact::Measure {
            measure: key,
            a: mean(0),
            b: mean(self.g),
            comparable,
        }
    }

    /// Both groups split major faults by cause (vmstat's, swap_causes).
    fn has_fault_causes(&self) -> bool {
        [0, self.g]
            .iter()
            .all(|&g| self.mean(SwapInFaults, g).is_some())
    }

    /// More swap-ins: their system time is swap-in's, not "system CPU"'s.
    /// Where the runs split major faults by cause (swap_causes), the
    /// swap-in share decides; older recordings only have all of them.
    fn swaps_in(&self) -> bool {
        let split = [0, self.g]
            .iter()
            .any(|&g| self.mean(SwapInFaults, g).is_some());
        let faults = if split {
            self.real(SwapInFaults)
        } else {
            self.real(MajorFaults)
        };
        faults || self.real(ReadFromSwapDevice)
    }

    /// zswap's stores or loads changed: the zswap mechanism then owns the
    /// swap-in time (block I/O waits, their system CPU), so that no two
    /// mechanisms claim the same seconds.
    fn zswap_moved(&self) -> bool {
        [ZswapLoads, ZswapStores]
            .iter()
            .any(|&m| self.real(m) || self.switched(m))
    }

    /// A counter that is 0 in every run of one group and above 0 in
    /// every run of the other (two runs or more each, or one each when
    /// nothing can be judged): a feature switched on or off (zswap's
    /// counters are 0 with zswap off), which a t-test against a group of
    /// zeros cannot judge with few runs, nor a percentage from 0.
    fn switched(&self, key: Measure) -> bool {
        if super::guards::guarded(self.metrics, key) {
            return false;
        }
        let Some(m) = self.metric(key) else {
            return false;
        };
        let (Some(a), Some(b)) = (m.groups[0], m.groups[self.g]) else {
            return false;
        };
        let runs = if self.judgeable { 2 } else { 1 };
        a.n >= runs
            && b.n >= runs
            && ((a.max == 0.0 && b.min > 0.0) || (b.max == 0.0 && a.min > 0.0))
    }
}

/// The mechanisms behind a difference, strongest first.
#[allow(clippy::too_many_arguments)]
pub(super) fn hints<'a>(
    g: usize,
    judgeable: bool,
    kills_only: bool,
    groups: &'a [GroupInfo],
    metrics: &'a [MetricRow],
    attribution: &'a [AttributionRow],
    ok: &'a [Vec<&'a RunReport>],
    entries: &'a [EntryRow],
    profile: &'a [super::profile::ProfileRow],
) -> Vec<Hint> {
    let e = Evidence {
        g,
        judgeable,
        groups,
        metrics,
        attribution,
        entries,
        profile,
        ok,
    };
    // Within noise, or a group without (enough) completed runs: the
    // OOM kills are all that can be said.
    if kills_only || groups[g].runs == 0 || groups[0].runs == 0 {
        return oom_kills(&e).into_iter().collect();
    }
    let mut hints: Vec<Hint> = Mechanism::ALL.iter().filter_map(|m| m.detect(&e)).collect();
    hints.sort_by(|a, b| b.seconds.abs().total_cmp(&a.seconds.abs()));
    hints
}

fn oom_kills(e: &Evidence) -> Option<Hint> {
    let (base, this) = (&e.groups[0], &e.groups[e.g]);
    let oom = (this.oom_killed as i64) - (base.oom_killed as i64);
    (oom > 0).then(|| {
        let mut evidence = vec![Fact::Kills {
            killed: this.oom_killed as u64,
            runs: (this.runs + this.oom_killed + this.failed) as u64,
            baseline_killed: base.oom_killed as u64,
            baseline_runs: (base.runs + base.oom_killed + base.failed) as u64,
        }];
        evidence.extend(victims(&this.oom_victims, &base.oom_victims));
        Hint {
            mechanism: Mechanism::OomKills,
            seconds: f64::INFINITY,
            evidence,
        }
    })
}

/// Who the OOM killer chose in this group, against the baseline's count
/// for the same name.
fn victims<'a>(
    this: &'a [super::VictimCount],
    base: &'a [super::VictimCount],
) -> impl Iterator<Item = Fact> + 'a {
    this.iter().map(|v| Fact::Victim {
        comm: v.comm.clone(),
        target: v.target,
        kills: v.kills as u64,
        baseline_kills: base
            .iter()
            .find(|b| b.comm == v.comm && b.target == v.target)
            .map_or(0, |b| b.kills as u64),
    })
}

/// System CPU otherwise: the other system CPU's part less what swap-in
/// (or zswap) and refaults (filling the page cache again) claim of it,
/// and of that only what the profile saw (`sampled_sys_share`).
fn system_cpu(e: &Evidence) -> Option<Hint> {
    let swap = if e.swap_named() {
        e.swap_sys_share()
    } else {
        0.0
    };
    let rest = (1.0 - swap - e.refill_sys_share()).max(0.0) * e.sampled_sys_share();
    e.real(SystemCpu).then(|| {
        let mut evidence = vec![e.fact(SystemCpu)];
        if e.metric(SampledSystemCpu).is_some() {
            evidence.push(e.fact(SampledSystemCpu));
        }
        Hint {
            mechanism: Mechanism::SystemCpu,
            seconds: rest * e.comp(Component::OtherSystemCpu),
            evidence,
        }
    })
}

mod cpu;
mod io;
mod reclaim;
mod zones;
use zones::zone_shift;

#[cfg(test)]
mod tests;
