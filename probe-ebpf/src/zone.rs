//! Page allocations per zone (`kmem:mm_page_alloc`): the zone is found
//! from the pfn against the zone spans userspace read from /proc/zoneinfo.
//! Every allocation runs this, so it is off unless asked for
//! (`--page-alloc`).

use aya_ebpf::{
    macros::{map, tracepoint},
    maps::PerCpuArray,
    programs::TracePointContext,
};
use vmtrace_common::{Counter, MAX_NODES, MAX_ZONE_SPANS, MAX_ZONES, ZoneSpans, zone_cell};

use crate::{
    rare::count_rare,
    shared::{field, tracepoint_field},
};

/// Zone pfn ranges (written by userspace at load time).
#[unsafe(no_mangle)]
static ZONE_SPANS: ZoneSpans = ZoneSpans::EMPTY;

/// Pages allocated per (node, zone); see [`zone_cell`].
#[map]
static PAGE_ALLOC: PerCpuArray<u64> = PerCpuArray::with_max_entries(MAX_NODES * MAX_ZONES, 0);

#[tracepoint]
pub fn page_alloc(ctx: TracePointContext) -> u32 {
    let pfn = tracepoint_field(&ctx, field!(page_alloc_pfn));
    let pages = 1u64 << (tracepoint_field(&ctx, field!(page_alloc_order)) & 63);
    // SAFETY: volatile reads of a read-only global.
    let n = unsafe { core::ptr::read_volatile(&ZONE_SPANS.count) } as usize;
    for i in 0..MAX_ZONE_SPANS {
        if i >= n {
            break;
        }
        // SAFETY: as above; i < MAX_ZONE_SPANS.
        let (start, end) = unsafe {
            (
                core::ptr::read_volatile(&ZONE_SPANS.spans[i].start),
                core::ptr::read_volatile(&ZONE_SPANS.spans[i].end),
            )
        };
        if pfn >= start && pfn < end {
            // SAFETY: as above.
            let (node, zone) = unsafe {
                (
                    core::ptr::read_volatile(&ZONE_SPANS.spans[i].node),
                    core::ptr::read_volatile(&ZONE_SPANS.spans[i].zone),
                )
            };
            if let Some(cell) = PAGE_ALLOC.get_ptr_mut(zone_cell(node, zone)) {
                // SAFETY: this CPU's cell of a live per-CPU map.
                unsafe { *cell += pages };
            }
            return 0;
        }
    }
    count_rare!(Counter::PageAllocNoZone, "pfn", pfn);
    0
}
