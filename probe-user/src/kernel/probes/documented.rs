//! The catalogue as the docs list it (the README's metric table, written
//! by `vmtrace generate docs metrics`): each metric's id, title, hooks and
//! opt-in from `CATALOGUE`, and what its programs keep in the kernel, in
//! words (`kept`: an exhaustive match, so a new metric must say).

use super::catalogue::{CATALOGUE, MetricId, OptIn};
use crate::model::probes::Documented;

/// What the metric's programs keep in the kernel, in words.
pub const fn kept(id: MetricId) -> &'static str {
    use MetricId::*;
    match id {
        DirectReclaim | MemcgReclaim => {
            "start stamp and stall totals in task storage; stall histogram, \
             pages, allocation order"
        }
        ReclaimEntries => {
            "kernel stack once per target reclaim, at its end after the stall \
             is stamped (stack-trace map), GFP flags and order in task storage; \
             count, stall time and its on-CPU/runnable/blocked split per (stack, \
             context, GFP, order); symbolized from /proc/kallsyms at the end of \
             the window, stored as names"
        }
        CompactionEntries => {
            "the stack, GFP and order at a target's direct compaction; its runs \
             (PF_MEMALLOC set) timed and added to that way, as above"
        }
        KswapdWakePaths => {
            "the waker's stack per (zone, GFP, order), counted: target tasks \
             (every task without a target)"
        }
        ReclaimStallers => {
            "each thread's stall totals added to its process's row at the \
             thread's exit, and for live threads when vmtrace reads the maps"
        }
        SchedSplit => {
            "only tasks with a reclaim or compaction span open, or a target task \
             in an I/O wait: each target reclaim stall's and compaction run's wall \
             time as on a CPU + runnable + blocked (of it I/O wait), with the \
             kernel's run_delay over it, summed in the task's own storage (to the \
             counters at thread exit, and by the task iterator for live threads); \
             the target's I/O-wait sleeps (count, time)"
        }
        LruShrinkInactive => {
            "every field, per node x context (kswapd/direct/memcg/other) x \
             anon/file; priority distribution"
        }
        LruIsolate => "scanned/skipped/taken per highest allowed zone x LRU list",
        LruShrinkActive => "taken/active/deactivated/referenced, same cells",
        Kswapd => {
            "awake time per node, histogram of awake periods (+ kswapd CPU time \
             from /proc)"
        }
        KswapdWakeups => "per node x the allocation's highest allowed zone, per waker name",
        SlabShrink => "shrinker call latency, objects freed",
        Throttle => "delay histogram, reasons",
        Compaction => "run-time histogram",
        SwapOut => "anon (swap-out) and file folios",
        SwapIo => {
            "in the swap areas' disk ranges, each request in a slot by (queue, \
             tag), checked by address and sector at completion: write/read \
             latency histograms, bytes; unpaired requests counted, never timed"
        }
        Oom => "one record per victim (ring buffer)",
        OomReaper => {
            "every task's victims: wake-ups, reaping passes and skipped \
             attempts; reap-time histogram (start stamp in the oom_reaper \
             kthread's task storage)"
        }
        ReclaimRetryZone => "per node x zone",
        PageAlloc => "pages per node x zone (the zone from the pfn)",
        MajorFault => "all tasks and target",
        ProcessFaults => {
            "per process, at exit (`task_struct.min_flt/maj_flt`, offsets from \
             BTF): nothing on the fault path"
        }
        KernelFaults => "target count",
        FaultLatency => "minor/major histograms, time per process",
        Profile => {
            "the job's kernel stacks, samples per distinct stack (user-mode \
             samples counted, no walk); outside reclaim and compaction one \
             kernel sample in 4 walked, counted 4: CPU-seconds per kernel path; \
             its page-cache fill paths outside reclaim are compare's \
             `page-cache fill CPU`"
        }
        FollowForks => {
            "the followed processes' pids in a hash map: a target's child \
             joins at its fork, an exiting thread leaves; forks counted, a \
             full map too"
        }
    }
}

/// Every metric of the catalogue, in its order, as the docs list it: the
/// hooks described as `vmtrace probes` describes them (each once).
pub fn documented() -> Vec<Documented> {
    CATALOGUE
        .iter()
        .map(|m| {
            let mut hooks: Vec<String> = Vec::new();
            for p in m.programs {
                let hook = p.hook.describe();
                if !hooks.contains(&hook) {
                    hooks.push(hook);
                }
            }
            Documented {
                id: m.id.name(),
                title: m.id.title(),
                hooks,
                opt_in: m.opt_in.map(OptIn::flag),
                kept: kept(m.id),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every metric is listed once, in the catalogue's order, with each
    /// of its programs' hooks.
    #[test]
    fn every_metric_is_documented_with_its_hooks() {
        let docs = documented();
        let ids: Vec<&str> = docs.iter().map(|d| d.id).collect();
        let want: Vec<&str> = MetricId::ALL.iter().map(|id| id.name()).collect();
        assert_eq!(ids, want);
        for (d, m) in docs.iter().zip(CATALOGUE) {
            assert!(!d.kept.is_empty() && !d.hooks.is_empty(), "{}", d.id);
            for p in m.programs {
                assert!(d.hooks.contains(&p.hook.describe()), "{}: {}", d.id, p.name);
            }
        }
    }
}
