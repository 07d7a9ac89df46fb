//! OOM kills: every `oom:mark_victim`, with the victim's pid, name and
//! sizes, sent to userspace through a ring buffer (a handful per run at
//! most, so per-event records cost nothing that matters). And the
//! allocator's "should I retry reclaim?" checks per zone
//! (`oom:reclaim_retry_zone`), the last step before an OOM kill. And the
//! OOM reaper (`oom:wake_reaper`, `start_`/`finish_`/`skip_task_reaping`),
//! which frees a victim's memory when the victim does not exit in time.
//!
//! The reaper is one kthread (`oom_reaper`, mm/oom_kill.c) that takes
//! one victim off its list and runs `oom_reap_task()` to the end before
//! the next; start and finish are both traced inside that one call of
//! `oom_reap_task_mm()`. So the reap span is a per-task span of the
//! reaper thread (`TaskSpans::reap_start_ns`), not one keyed by the
//! victim's pid: no map to fill, and no pairing across tasks.

use aya_ebpf::{
    macros::{map, tracepoint},
    maps::{PerCpuArray, RingBuf},
    programs::TracePointContext,
};
use vmtrace_common::{Counter, Hist, MAX_NODES, MAX_ZONES, OomVictim, zone_cell};

use crate::{
    rare::count_rare,
    shared::{count, field, in_target, now_ns, record, tracepoint_field, tracepoint_str},
    task::{Span, since_stamp, stamp},
};

/// Room for about 80 victims between two reads.
#[map]
static OOM_VICTIMS: RingBuf = RingBuf::with_byte_size(8192, 0);

#[tracepoint]
pub fn mark_victim(ctx: TracePointContext) -> u32 {
    count(Counter::OomVictims, 1);
    let Some(mut entry) = OOM_VICTIMS.reserve::<OomVictim>(0) else {
        count_rare!(Counter::OomRecordsDropped, "OOM_VICTIMS full");
        return 0;
    };
    let mut v = OomVictim {
        time_ns: now_ns(),
        total_vm_kb: tracepoint_field(&ctx, field!(mark_victim_total_vm)),
        anon_rss_kb: tracepoint_field(&ctx, field!(mark_victim_anon_rss)),
        file_rss_kb: tracepoint_field(&ctx, field!(mark_victim_file_rss)),
        shmem_rss_kb: tracepoint_field(&ctx, field!(mark_victim_shmem_rss)),
        pid: tracepoint_field(&ctx, field!(mark_victim_pid)) as u32,
        // The OOM is run by the task that could not get memory: in a memcg
        // OOM, a task of that memcg.
        target: in_target() as u32,
        comm: [0; 16],
    };
    tracepoint_str(&ctx, field!(mark_victim_comm), &mut v.comm);
    entry.write(v);
    entry.submit(0);
    0
}

/// `oom:reclaim_retry_zone` checks per (node, zone).
#[map]
static RECLAIM_RETRY_ZONE: PerCpuArray<u64> =
    PerCpuArray::with_max_entries(MAX_NODES * MAX_ZONES, 0);

#[tracepoint]
pub fn reclaim_retry_zone(ctx: TracePointContext) -> u32 {
    let node = tracepoint_field(&ctx, field!(reclaim_retry_zone_node)) as u32;
    let zone = tracepoint_field(&ctx, field!(reclaim_retry_zone_zone_idx)) as u32;
    if node >= MAX_NODES || zone >= MAX_ZONES {
        count_rare!(
            Counter::NodeOutOfRange,
            "reclaim_retry_zone node",
            node,
            "zone",
            zone
        );
        return 0;
    }
    if let Some(cell) = RECLAIM_RETRY_ZONE.get_ptr_mut(zone_cell(node, zone)) {
        // SAFETY: this CPU's cell of a live per-CPU map.
        unsafe { *cell += 1 };
    }
    0
}

/// A victim put on the reaper's list (every task's victims).
#[tracepoint]
pub fn wake_reaper(_ctx: TracePointContext) -> u32 {
    count(Counter::OomReaperWakeups, 1);
    0
}

/// The reaper got the victim's mmap lock and starts unmapping.
#[tracepoint]
pub fn start_task_reaping(_ctx: TracePointContext) -> u32 {
    count(Counter::OomReapStarts, 1);
    stamp(Span::OomReap, |s| &mut s.reap_start_ns);
    0
}

/// The pass started above is over (all of it reaped, or retried later).
#[tracepoint]
pub fn finish_task_reaping(_ctx: TracePointContext) -> u32 {
    if let Some(took) = since_stamp(|s| &mut s.reap_start_ns) {
        record(Hist::OomReap, took);
    }
    0
}

/// An attempt that did not reap: mmap lock busy (retried up to 10
/// times), or the victim's mm already torn down (MMF_OOM_SKIP).
#[tracepoint]
pub fn skip_task_reaping(_ctx: TracePointContext) -> u32 {
    count(Counter::OomReapSkips, 1);
    0
}
