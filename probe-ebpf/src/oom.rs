//! OOM kills: every `oom:mark_victim`, with the victim's pid, name and
//! sizes, sent to userspace through a ring buffer (a handful per run at
//! most, so per-event records cost nothing that matters).

use aya_ebpf::{
    macros::{map, tracepoint},
    maps::RingBuf,
    programs::TracePointContext,
};
use vmtrace_common::{Counter, OomVictim};

use crate::shared::{count, fields, in_target, now_ns, tracepoint_field, tracepoint_str};

/// Room for about 80 victims between two reads.
#[map]
static OOM_VICTIMS: RingBuf = RingBuf::with_byte_size(8192, 0);

#[tracepoint]
pub fn mark_victim(ctx: TracePointContext) -> u32 {
    count(Counter::OomVictims, 1);
    let f = fields();
    let Some(mut entry) = OOM_VICTIMS.reserve::<OomVictim>(0) else {
        count(Counter::OomRecordsDropped, 1);
        return 0;
    };
    let mut v = OomVictim {
        time_ns: now_ns(),
        total_vm_kb: tracepoint_field(&ctx, f.mark_victim_total_vm),
        anon_rss_kb: tracepoint_field(&ctx, f.mark_victim_anon_rss),
        file_rss_kb: tracepoint_field(&ctx, f.mark_victim_file_rss),
        shmem_rss_kb: tracepoint_field(&ctx, f.mark_victim_shmem_rss),
        pid: tracepoint_field(&ctx, f.mark_victim_pid) as u32,
        // The OOM is run by the task that could not get memory: in a memcg
        // OOM, a task of that memcg.
        target: in_target() as u32,
        comm: [0; 16],
    };
    tracepoint_str(&ctx, f.mark_victim_comm, &mut v.comm);
    entry.write(v);
    entry.submit(0);
    0
}
