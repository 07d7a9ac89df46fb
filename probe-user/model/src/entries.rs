//! Where the target's reclaims were entered (`reclaim_entries` of a
//! run's report): one row per way in (context, kernel frames, GFP
//! flags, order) with its reclaims and stall time, and how a way in is
//! shown in text (`entry_chain`).

use serde::{Deserialize, Serialize};

pub use vmtrace_common::EntryWay;

/// Where the target's reclaims were entered: one row per way in
/// (context, kernel stack, GFP flags, order), most stall time first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReclaimEntries {
    pub paths: Vec<EntryPath>,
    /// Reclaims whose stack the kernel did not keep (a stack-map hash
    /// collision): in a row with no frames.
    pub stacks_lost: u64,
    /// Reclaims in no row at all (the kernel's table was full).
    pub table_full: u64,
    /// Who woke kswapd: one row per (zone, waker's stack, GFP flags,
    /// order), most wake-ups first (empty when that was not traced, or in
    /// a recording from before it was).
    #[serde(default)]
    pub kswapd_wakers: Vec<KswapdWakePath>,
}

impl ReclaimEntries {
    /// The stall time of every row.
    pub fn total_ns(&self) -> u64 {
        self.paths.iter().map(|p| p.stall_ns).sum()
    }
}

/// One way kswapd was woken: by allocations of this GFP and order, for
/// this zone, from this kernel stack (mm_vmscan_wakeup_kswapd, in the
/// waker's context, only when kswapd was asleep).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KswapdWakePath {
    pub node: u32,
    /// The zone's index in its node, and its name (/proc/zoneinfo).
    pub zid: u32,
    pub zone: String,
    /// As `EntryPath::frames`: wakeup_kswapd first.
    pub frames: Vec<String>,
    pub gfp: u32,
    pub gfp_names: String,
    pub order: u32,
    pub count: u64,
}

/// One way into reclaim, or into direct compaction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EntryPath {
    /// `direct`, `memcg` or `compaction` (a direct compaction's runs:
    /// `count` is runs, one per zone tried); `kswapd_wake` rows are
    /// `ReclaimEntries::kswapd_wakers`, never here.
    pub context: EntryWay,
    /// Kernel functions, innermost first: the one that holds the
    /// tracepoint (try_to_free_pages, try_to_free_mem_cgroup_pages,
    /// try_to_compact_pages), then
    /// its callers up to the system call or fault entry. A module's
    /// functions read `name [module]`; an address no symbol covers, hex.
    pub frames: Vec<String>,
    /// The allocation's GFP flags, and as the kernel prints them.
    pub gfp: u32,
    pub gfp_names: String,
    /// The allocation order (memcg reclaim's tracepoint always says 0).
    pub order: u32,
    pub count: u64,
    pub stall_ns: u64,
    /// Where the stall time went at the scheduler; null when the split
    /// was off (or in a recording from before it was measured).
    #[serde(default)]
    pub split: Option<EntrySplit>,
}

/// A way in's stall time on a CPU, waiting for one, and blocked: the
/// runnable and blocked parts are each stall's change of the task's
/// split totals (probe-ebpf `sched`), the rest of the stall was on a
/// CPU, so the three add up to `stall_ns`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EntrySplit {
    pub on_cpu_ns: u64,
    pub runnable_ns: u64,
    pub blocked_ns: u64,
}

/// Frames shown per way in.
const FRAMES_SHOWN: usize = 10;

/// A way in as `caller < its caller < ...`: from the frame below the
/// reclaim function (which the context names) up to the first system
/// call or fault entry, at most `FRAMES_SHOWN` frames.
pub fn entry_chain(frames: &[String]) -> String {
    if frames.is_empty() {
        return "(stack not kept)".into();
    }
    let mut shown: Vec<&str> = Vec::new();
    for f in frames.iter().skip(1) {
        shown.push(f);
        if is_entry_frame(f) || shown.len() == FRAMES_SHOWN {
            break;
        }
    }
    let mut text = shown.join(" < ");
    if shown.len() + 1 < frames.len() && !shown.last().is_some_and(|f| is_entry_frame(f)) {
        text.push_str(" < ...");
    }
    text
}

/// The page allocator's own frames between its caller and direct
/// reclaim, as named on 6.1 (`__alloc_pages`, `alloc_pages_vma`), 6.12
/// (`__alloc_pages_noprof < alloc_pages_mpol_noprof <
/// folio_alloc_mpol_noprof`) and 6.18 (`__alloc_frozen_pages_noprof <
/// alloc_pages_mpol`), after [`crate::profile::function_name`] (no
/// `_noprof`, no clone suffix): which of them a stack shows is the
/// kernel's and the compiler's choice (renames, inlining), not the
/// job's, so a way in is keyed without them.
const ALLOCATOR_FRAMES: &[&str] = &[
    "__alloc_pages_direct_reclaim",
    "__perform_reclaim",
    "__alloc_pages_slowpath",
    "__alloc_pages",
    "__alloc_frozen_pages",
    "alloc_frozen_pages",
    "alloc_pages_mpol",
    "alloc_pages",
    "alloc_pages_node",
    "__alloc_pages_node",
    "alloc_pages_vma",
    "folio_alloc",
    "__folio_alloc",
    "folio_alloc_mpol",
    "vma_alloc_folio",
];

/// The fault handler's static functions in mm/memory.c (6.1 to 6.18)
/// that a build may inline into `__handle_mm_fault` or not: Debian's
/// 6.1 inlines `handle_pte_fault` and `do_anonymous_page` (its anonymous
/// faults enter reclaim as `try_to_free_pages < __handle_mm_fault`),
/// Debian's 6.12 keeps `do_anonymous_page` (`try_to_free_pages <
/// do_anonymous_page < __handle_mm_fault`), seen in the seed-001 guests
/// of 2026-12-07. The frames around them (`filemap_fault`,
/// `do_swap_page`, `__handle_mm_fault`) still tell the kinds of fault
/// apart.
const INLINED_FAULT_FRAMES: &[&str] = &[
    "handle_pte_fault",
    "do_anonymous_page",
    "do_pte_missing",
    "do_fault",
    "do_read_fault",
    "do_cow_fault",
    "do_shared_fault",
];

/// A way in as the same key on every kernel and build: each frame named
/// as its function ([`crate::profile::function_name`]), and the
/// allocator's own frames below the reclaim function left out
/// ([`ALLOCATOR_FRAMES`]), so the way starts at the allocator's caller.
/// `across_kernels` (the groups' releases differ) also leaves out the
/// fault handler's frames that builds inline or not
/// ([`INLINED_FAULT_FRAMES`]); on one kernel they stay, telling an
/// anonymous fault's way from the others. The reclaim function itself
/// (the first frame) is kept.
pub fn way_key(frames: &[String], across_kernels: bool) -> Vec<String> {
    let name = |f: &String| crate::profile::function_name(f).to_string();
    let left_out = |f: &String| {
        ALLOCATOR_FRAMES.contains(&f.as_str())
            || across_kernels && INLINED_FAULT_FRAMES.contains(&f.as_str())
    };
    frames
        .iter()
        .take(1)
        .map(name)
        .chain(frames.iter().skip(1).map(name).filter(|f| !left_out(f)))
        .collect()
}

/// Where the kernel was entered: a fault, a system call, a kernel
/// thread.
fn is_entry_frame(name: &str) -> bool {
    matches!(
        name,
        "exc_page_fault" | "do_syscall_64" | "x64_sys_call" | "kthread" | "ret_from_fork"
    ) || name.starts_with("__x64_sys_")
        || name.starts_with("__do_sys_")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same anonymous fault entering direct reclaim on 6.1, 6.12 and
    /// 6.18 (frames as their stacks name them) is one way.
    #[test]
    fn a_way_in_is_one_key_on_every_kernel() {
        let v = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let k61 = v(&[
            "try_to_free_pages",
            "__alloc_pages_slowpath.constprop.0",
            "__alloc_pages",
            "__folio_alloc",
            "vma_alloc_folio",
            "do_anonymous_page",
            "handle_mm_fault",
        ]);
        let k612 = v(&[
            "try_to_free_pages",
            "__alloc_pages_slowpath.constprop.0",
            "__alloc_pages_noprof",
            "alloc_pages_mpol_noprof",
            "folio_alloc_mpol_noprof",
            "vma_alloc_folio_noprof",
            "do_anonymous_page",
            "handle_mm_fault",
        ]);
        let k618 = v(&[
            "try_to_free_pages",
            "__alloc_pages_slowpath.constprop.0",
            "__alloc_frozen_pages_noprof",
            "alloc_pages_mpol",
            "folio_alloc_mpol_noprof",
            "vma_alloc_folio_noprof",
            "do_anonymous_page",
            "handle_mm_fault",
        ]);
        let want = v(&["try_to_free_pages", "do_anonymous_page", "handle_mm_fault"]);
        for k in [k61, k612, k618] {
            assert_eq!(way_key(&k, false), want, "{k:?}");
        }
    }

    /// Debian's 6.1 and 6.12 as their guests recorded them: the same
    /// anonymous fault, do_anonymous_page inlined in one build only, is
    /// one way; a file fault stays another.
    #[test]
    fn a_fault_handler_inlined_in_one_build_is_one_way() {
        let v = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let tail = ["__handle_mm_fault", "handle_mm_fault", "do_user_addr_fault"];
        let k61 = v(&[&["try_to_free_pages"][..], &tail].concat());
        let k612 = v(&[&["try_to_free_pages", "do_anonymous_page"][..], &tail].concat());
        assert_eq!(way_key(&k61, true), way_key(&k612, true));
        // On one kernel the fault handler's frame tells the way.
        assert_ne!(way_key(&k61, false), way_key(&k612, false));
        let file = v(&[
            &[
                "try_to_free_pages",
                "page_cache_ra_unbounded",
                "filemap_fault",
            ][..],
            &["__do_fault", "do_fault"],
            &tail,
        ]
        .concat());
        assert_ne!(way_key(&file, true), way_key(&k61, true));
    }
    use crate::report::{OrderRow, ReclaimContext};

    /// Recordings hold a context and a way in as their names, and read
    /// every one back; no other string reads.
    #[test]
    fn contexts_and_ways_are_their_names_in_a_recording() {
        for c in ReclaimContext::ALL {
            let json = serde_json::to_string(&c).expect("writes");
            assert_eq!(json, format!("\"{}\"", c.name()));
            let back: ReclaimContext = serde_json::from_str(&json).expect("reads");
            assert_eq!(back, c);
        }
        for w in EntryWay::ALL {
            let json = serde_json::to_string(&w).expect("writes");
            assert_eq!(json, format!("\"{}\"", w.name()));
            let back: EntryWay = serde_json::from_str(&json).expect("reads");
            assert_eq!(back, w);
            assert_eq!(EntryWay::of(w as u32), Some(w));
        }
        assert_eq!(EntryWay::of(3), None);
        let row: OrderRow =
            serde_json::from_str(r#"{"context": "direct", "counts": [1]}"#).expect("reads");
        assert_eq!(row.context, ReclaimContext::Direct);
        for bad in [r#""Direct""#, r#""writeback""#, r#""""#, "2"] {
            let e = serde_json::from_str::<ReclaimContext>(bad).expect_err(bad);
            assert!(!e.to_string().contains('\n'), "{e}");
        }
        let e = serde_json::from_str::<EntryWay>(r#""kswapd""#).expect_err("not a way in");
        assert!(
            e.to_string().starts_with(
                "unknown variant `kswapd`, expected one of `direct`, `memcg`, \
                 `compaction`, `kswapd_wake`"
            ),
            "{e}"
        );
    }
}
