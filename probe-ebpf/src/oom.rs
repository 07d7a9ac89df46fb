//! OOM kills: every `oom:mark_victim`, with the victim's pid, name and
//! sizes, sent to userspace through a ring buffer (a handful per run at
//! most, so per-event records cost nothing that matters). And the
//! allocator's "should I retry reclaim?" checks per zone
//! (`oom:reclaim_retry_zone`), the last step before an OOM kill.

use aya_ebpf::{
    macros::{map, tracepoint},
    maps::{PerCpuArray, RingBuf},
    programs::TracePointContext,
};
use vmtrace_common::{Counter, MAX_NODES, MAX_ZONES, OomVictim, zone_cell};

use crate::shared::{count, field, in_target, now_ns, tracepoint_field, tracepoint_str};

/// Room for about 80 victims between two reads.
#[map]
static OOM_VICTIMS: RingBuf = RingBuf::with_byte_size(8192, 0);

#[tracepoint]
pub fn mark_victim(ctx: TracePointContext) -> u32 {
    count(Counter::OomVictims, 1);
    let Some(mut entry) = OOM_VICTIMS.reserve::<OomVictim>(0) else {
        count(Counter::OomRecordsDropped, 1);
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
        count(Counter::NodeOutOfRange, 1);
        return 0;
    }
    if let Some(cell) = RECLAIM_RETRY_ZONE.get_ptr_mut(zone_cell(node, zone)) {
        // SAFETY: this CPU's cell of a live per-CPU map.
        unsafe { *cell += 1 };
    }
    0
}
