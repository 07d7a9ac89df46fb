//! Where the target's reclaims were entered (`reclaim_entries` of a
//! run's report): one row per way in (context, kernel frames, GFP
//! flags, order) with its reclaims and stall time, and how a way in is
//! shown in text (`entry_chain`).

use serde::{Deserialize, Serialize};

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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EntryPath {
    /// `direct`, `memcg` or `compaction` (a direct compaction's runs:
    /// `count` is runs, one per zone tried).
    pub context: String,
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

/// Where the kernel was entered: a fault, a system call, a kernel
/// thread.
fn is_entry_frame(name: &str) -> bool {
    matches!(
        name,
        "exc_page_fault" | "do_syscall_64" | "x64_sys_call" | "kthread" | "ret_from_fork"
    ) || name.starts_with("__x64_sys_")
        || name.starts_with("__do_sys_")
}
