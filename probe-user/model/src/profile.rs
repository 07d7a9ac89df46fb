//! The job's CPU profile as recorded: samples of its tasks' kernel
//! stacks on the CPU clock (probe-ebpf `profile`), and what a set of
//! kernel functions stands for in it.
//!
//! A sample stands for 1/`hz` s of one task's CPU time, so samples over
//! `hz` are CPU-seconds: the kernel samples estimate the job's system
//! CPU (rusage's stime), and the samples whose stack passes through a
//! function estimate the system CPU spent below it.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// Stacks a recording keeps per run, most samples first (the rest are
/// summed in `other_samples`).
pub const PROFILE_STACKS_KEPT: usize = 2000;

#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProfileReport {
    /// Samples per second on each CPU.
    pub hz: u64,
    /// Samples of target tasks running in user mode.
    pub user_samples: u64,
    /// Samples of target tasks in the kernel whose stack was not kept
    /// (a stack-map collision, or a full table).
    pub lost_samples: u64,
    /// Kernel stacks, leaf first, most samples first.
    pub stacks: Vec<ProfileStack>,
    /// Samples of the stacks past the kept ones.
    pub other_samples: u64,
    /// Every sample of target tasks in the kernel, counted whether its
    /// stack was walked or not (outside the stall spans the sampler
    /// walks one in 4 and counts it 4 times, so the stacks' sum is an
    /// estimate of this); None in recordings from before the count,
    /// where the stacks' sum stands in.
    #[serde(default)]
    pub counted_kernel_samples: Option<u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProfileStack {
    /// Function names, the interrupted one first.
    pub frames: Vec<String>,
    pub samples: u64,
}

/// Filling the page cache from a file: the read-ahead and read paths
/// that allocate folios, insert them (`filemap_add_folio`, which
/// charges the memcg) and submit their reads, on 6.1-6.18
/// (mm/readahead.c, mm/filemap.c): for `read()` (filemap_read ->
/// filemap_get_pages -> page_cache_sync_ra / filemap_create_folio) and
/// for file faults (filemap_fault -> do_sync_mmap_readahead). A page
/// cache hit passes through none of them.
pub const PAGE_CACHE_FILL: &[&str] = &[
    "page_cache_ra_unbounded",
    "page_cache_ra_order",
    "read_pages",
    "force_page_cache_ra",
    "filemap_add_folio",
    "__filemap_add_folio",
    "filemap_read_folio",
    "filemap_create_folio",
    "do_sync_mmap_readahead",
    "do_async_mmap_readahead",
    "filemap_readahead",
];

/// Reclaim and compaction entered from anywhere (a fill's memcg charge
/// among them): their CPU is timed as reclaim's and compaction's own
/// (the stall spans), so a sample below one of these is theirs.
pub const RECLAIM_OR_COMPACTION: &[&str] = &[
    "try_to_free_mem_cgroup_pages",
    "try_to_free_pages",
    "__alloc_pages_direct_reclaim",
    "try_to_compact_pages",
    "mem_cgroup_handle_over_high",
];

/// The functions the stall spans are timed in: the reclaim begin and
/// end tracepoints fire inside `try_to_free_pages` (direct) and
/// `try_to_free_mem_cgroup_pages` (memcg), mm/vmscan.c on 6.1-6.18, and
/// direct compaction's runs inside `try_to_compact_pages`
/// (mm/compaction.c). Not `__alloc_pages_direct_reclaim`, whose retry of
/// the free lists and drain of the per-CPU lists follow the reclaim
/// end, nor `mem_cgroup_handle_over_high`, whose reclaim is in
/// `try_to_free_mem_cgroup_pages` and the rest a sleep: a sample below
/// one of these is one inside a stall.
pub const STALL_SPANS: &[&str] = &[
    "try_to_free_mem_cgroup_pages",
    "try_to_free_pages",
    "try_to_compact_pages",
];

/// Reclaim entered from anywhere (compaction apart): a sample below
/// one of these is the job's reclaim CPU (mm/vmscan.c, mm/memcontrol.c,
/// mm/page_alloc.c on 6.1-6.18).
pub const RECLAIM: &[&str] = &[
    "try_to_free_mem_cgroup_pages",
    "try_to_free_pages",
    "__alloc_pages_direct_reclaim",
    "mem_cgroup_handle_over_high",
];

/// Waiting on other CPUs: a cross-CPU function call sends IPIs and spins
/// until every target CPU has run the function (kernel/smp.c). Inside
/// reclaim these are TLB shootdowns: the batched flush after unmapping
/// (`try_to_unmap_flush` -> `arch_tlbbatch_flush`) and single-range
/// flushes. On a VM each IPI is also an exit to the host
/// (`x2apic_send_IPI` -> `native_write_msr`, below this frame), and a
/// target CPU that runs a task, rather than idling in lazy-TLB mode,
/// must take the interrupt: here a hog on each CPU took the job's
/// reclaim from 0.08 to 1.0 CPU-s in this frame.
pub const CROSS_CPU_CALLS: &[&str] = &["smp_call_function_many_cond", "smp_call_function_single"];

/// The samples of a profile inside reclaim and compaction (the stacks
/// through [`STALL_SPANS`]): per function, named as on every kernel ([`function_name`]),
/// the samples whose stack passes through it (`total`, once per stack
/// however often it recurses) and those interrupted in it (`self`).
#[derive(Clone, Debug, Default)]
pub struct InStall {
    pub samples: u64,
    pub functions: HashMap<String, FunctionSamples>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FunctionSamples {
    pub total: u64,
    pub own: u64,
}

impl InStall {
    /// The functions, most samples first by `key`, then by name.
    pub fn ranked(&self, key: fn(&FunctionSamples) -> u64) -> Vec<(&str, FunctionSamples)> {
        let mut v: Vec<(&str, FunctionSamples)> = self
            .functions
            .iter()
            .map(|(n, s)| (n.as_str(), *s))
            .collect();
        v.sort_by(|a, b| key(&b.1).cmp(&key(&a.1)).then(a.0.cmp(b.0)));
        v
    }
}

impl ProfileReport {
    /// The kept stacks inside a reclaim or compaction stall.
    pub fn in_stall_stacks(&self) -> impl Iterator<Item = &ProfileStack> {
        self.stacks.iter().filter(|s| through(s, STALL_SPANS))
    }

    /// The samples inside reclaim and compaction, per function: the
    /// frames from the interrupted one out to the stall's function
    /// ([`STALL_SPANS`], the outermost where they nest). Its callers are
    /// the way in (the allocator's frames, the fault or system call):
    /// each stall passes through them whatever it did inside, and their
    /// names and inlining are the kernel's and the compiler's
    /// (`__folio_alloc` on 6.1 is `alloc_pages_mpol` on 6.12, and
    /// `do_anonymous_page` is inlined in one build and not another), so
    /// they are compared as ways in (`entries::way_key`), not here.
    pub fn in_stall(&self) -> InStall {
        let mut out = InStall::default();
        for s in self.in_stall_stacks() {
            out.samples += s.samples;
            let inside = s
                .frames
                .iter()
                .rposition(|f| STALL_SPANS.contains(&function_name(f)))
                .map_or(s.frames.len(), |i| i + 1);
            let mut seen: Vec<&str> = Vec::with_capacity(inside);
            for (i, f) in s.frames[..inside].iter().enumerate() {
                let name = function_name(f);
                if seen.contains(&name) {
                    continue;
                }
                seen.push(name);
                let cell = out.functions.entry(name.to_string()).or_default();
                cell.total += s.samples;
                if i == 0 {
                    cell.own += s.samples;
                }
            }
        }
        out
    }

    /// The share of reclaim's sampled CPU spent in cross-CPU calls
    /// ([`CROSS_CPU_CALLS`] below [`RECLAIM`]); None without reclaim
    /// samples.
    pub fn reclaim_cross_cpu_share(&self) -> Option<f64> {
        let reclaim = self.samples_within(RECLAIM, &[]);
        let cross = self
            .stacks
            .iter()
            .filter(|s| through(s, RECLAIM) && through(s, CROSS_CPU_CALLS))
            .map(|s| s.samples)
            .sum::<u64>();
        (reclaim > 0).then(|| cross as f64 / reclaim as f64)
    }

    /// CPU-seconds spent filling the page cache outside reclaim and
    /// compaction ([`PAGE_CACHE_FILL`]).
    pub fn page_cache_fill_s(&self) -> f64 {
        self.seconds(self.samples_within(PAGE_CACHE_FILL, RECLAIM_OR_COMPACTION))
    }

    /// Samples of target tasks in the kernel: the sampler's count where
    /// the recording has it, else the stacks' ([`Self::stack_samples`]).
    pub fn kernel_samples(&self) -> u64 {
        self.counted_kernel_samples
            .unwrap_or_else(|| self.stack_samples())
    }

    /// The kernel samples as the stacks add up, kept or not: each walked
    /// stack with its weight (1 inside the stall spans, 4 outside), so
    /// an unbiased estimate of [`Self::kernel_samples`].
    pub fn stack_samples(&self) -> u64 {
        self.stacks.iter().map(|s| s.samples).sum::<u64>() + self.other_samples + self.lost_samples
    }

    /// CPU-seconds the job was sampled in the kernel outside the stall
    /// spans ([`STALL_SPANS`]): the sampler's own view of the "other
    /// system CPU" that rusage books (system time less reclaim's and
    /// compaction's on-CPU time). Samples whose stack was not kept
    /// count here: where they were is unknown, and they are rare.
    pub fn outside_stalls_kernel_s(&self) -> f64 {
        let inside = self.in_stall_stacks().map(|s| s.samples).sum::<u64>();
        self.seconds(self.kernel_samples().saturating_sub(inside))
    }

    /// Samples as CPU-seconds.
    pub fn seconds(&self, samples: u64) -> f64 {
        if self.hz == 0 {
            0.0
        } else {
            samples as f64 / self.hz as f64
        }
    }

    /// Samples of the kept stacks that pass through any of `within` and
    /// through none of `outside` (function names; a compiler's clone of
    /// one, `filemap_readahead.isra.0`, is that function).
    pub fn samples_within(&self, within: &[&str], outside: &[&str]) -> u64 {
        self.stacks
            .iter()
            .filter(|s| through(s, within) && !through(s, outside))
            .map(|s| s.samples)
            .sum()
    }
}

/// Whether a stack passes through any of `set` (a compiler's clone of a
/// function, `filemap_readahead.isra.0`, is that function).
pub fn through(s: &ProfileStack, set: &[&str]) -> bool {
    s.frames.iter().any(|f| set.contains(&function_name(f)))
}

/// A frame as the same function on every kernel and build: without a
/// compiler's clone suffix (`filemap_readahead.isra.0`,
/// `shrink_folio_list.constprop.0`, `.part.0`, `.cold`) and without the
/// allocation-profiling wrapper's `_noprof` (6.10+ renamed
/// `alloc_pages` to `alloc_pages_noprof` behind a macro:
/// include/linux/gfp.h, CONFIG_MEM_ALLOC_PROFILING), so that 6.1's
/// `__alloc_pages` and 6.18's `__alloc_pages_noprof` compare as one.
pub fn function_name(frame: &str) -> &str {
    let f = frame.split('.').next().unwrap_or(frame);
    f.strip_suffix("_noprof").unwrap_or(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(frames: &[&str], samples: u64) -> ProfileStack {
        ProfileStack {
            frames: frames.iter().map(|f| f.to_string()).collect(),
            samples,
        }
    }

    #[test]
    fn samples_within_a_function_leave_out_those_below_an_excluded_one() {
        let p = ProfileReport {
            hz: 500,
            user_samples: 0,
            lost_samples: 2,
            stacks: vec![
                stack(
                    &["memcpy", "read_pages.isra.0", "page_cache_ra_unbounded"],
                    100,
                ),
                stack(
                    &[
                        "shrink_folio_list",
                        "try_to_free_mem_cgroup_pages",
                        "read_pages",
                    ],
                    40,
                ),
                stack(&["copy_page_to_iter", "filemap_read"], 60),
            ],
            other_samples: 8,
            counted_kernel_samples: None,
        };
        let fill = p.samples_within(&["read_pages"], &["try_to_free_mem_cgroup_pages"]);
        assert_eq!(fill, 100);
        assert_eq!(p.kernel_samples(), 210);
        assert!((p.seconds(fill) - 0.2).abs() < 1e-12);
        let counted = ProfileReport {
            counted_kernel_samples: Some(197),
            ..p
        };
        assert_eq!(
            (counted.kernel_samples(), counted.stack_samples()),
            (197, 210)
        );
    }

    /// The same reclaim under a 6.1 and a 6.12 fault: the functions
    /// inside the stall are the same, the way in (renamed allocator
    /// frames, an inlined fault handler) is not counted.
    #[test]
    fn inside_a_stall_counts_the_stall_function_and_below_only() {
        let on = |way: &[&str]| {
            let mut frames = vec!["shrink_folio_list", "shrink_lruvec", "try_to_free_pages"];
            frames.extend_from_slice(way);
            ProfileReport {
                hz: 500,
                stacks: vec![
                    stack(&frames, 30),
                    stack(&["clear_page_erms", "do_anonymous_page"], 70),
                ],
                ..Default::default()
            }
            .in_stall()
        };
        let k61 = on(&[
            "__alloc_pages_slowpath.constprop.0",
            "__folio_alloc",
            "do_anonymous_page",
        ]);
        let k612 = on(&[
            "__alloc_pages_slowpath",
            "alloc_pages_mpol_noprof",
            "handle_mm_fault",
        ]);
        for inside in [k61, k612] {
            assert_eq!(inside.samples, 30);
            let mut names: Vec<&str> = inside.functions.keys().map(String::as_str).collect();
            names.sort();
            assert_eq!(
                names,
                ["shrink_folio_list", "shrink_lruvec", "try_to_free_pages"]
            );
            let leaf = inside.functions["shrink_folio_list"];
            assert_eq!((leaf.own, leaf.total), (30, 30));
        }
    }

    #[test]
    fn a_function_is_named_alike_on_every_kernel_and_build() {
        for (frame, name) in [
            ("shrink_folio_list", "shrink_folio_list"),
            ("filemap_readahead.isra.0", "filemap_readahead"),
            ("shrink_folio_list.constprop.0", "shrink_folio_list"),
            ("__alloc_pages_noprof", "__alloc_pages"),
            ("alloc_pages_mpol_noprof.cold", "alloc_pages_mpol"),
            ("noprof", "noprof"),
        ] {
            assert_eq!(function_name(frame), name, "{frame}");
        }
    }
}
