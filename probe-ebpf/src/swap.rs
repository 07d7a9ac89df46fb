//! Swap-out: reclaim writing anon folios to swap (and file folios back to
//! their files), from `mm_vmscan_write_folio`. There is no swap tracepoint
//! of its own on any kernel; swap-ins are major anon faults (`fault`).
//!
//! Swap device I/O: block requests whose sectors fall in a swap area
//! (userspace passes the areas' disk ranges: a swapfile's extents, or a
//! partition), timed from `block_rq_issue` to `block_rq_complete`.

use aya_ebpf::{
    macros::{map, tracepoint},
    maps::LruHashMap,
    programs::TracePointContext,
};
use vmtrace_common::{
    Counter, Hist, IoKey, IoStart, MAX_IO_IN_FLIGHT, MAX_SWAP_EXTENTS, RECLAIM_WB_ANON, SwapExtents,
};

use crate::shared::{count, fields, now_ns, record, tracepoint_field};

#[tracepoint]
pub fn write_folio(ctx: TracePointContext) -> u32 {
    let flags = tracepoint_field(&ctx, fields().write_folio_reclaim_flags);
    if flags & RECLAIM_WB_ANON != 0 {
        count(Counter::WriteFolioAnon, 1);
    } else {
        count(Counter::WriteFolioFile, 1);
    }
    0
}

/// The swap areas' disk ranges (written by userspace at load time).
#[unsafe(no_mangle)]
static SWAP_EXTENTS: SwapExtents = SwapExtents::EMPTY;

/// Swap requests in flight, by (disk, first sector).
#[map]
static SWAP_IO_START: LruHashMap<IoKey, IoStart> =
    LruHashMap::with_max_entries(MAX_IO_IN_FLIGHT, 0);

/// Whether a request at `sector` of disk `dev` falls in a swap area.
#[inline(always)]
fn on_swap(dev: u32, sector: u64) -> bool {
    // SAFETY: plain reads of a read-only global, volatile so that the
    // compiled-in empty default is not folded in.
    let n = unsafe { core::ptr::read_volatile(&SWAP_EXTENTS.count) } as usize;
    for i in 0..MAX_SWAP_EXTENTS {
        if i >= n {
            break;
        }
        // SAFETY: as above; i < MAX_SWAP_EXTENTS.
        let (d, start, end) = unsafe {
            (
                core::ptr::read_volatile(&SWAP_EXTENTS.extents[i].dev),
                core::ptr::read_volatile(&SWAP_EXTENTS.extents[i].start),
                core::ptr::read_volatile(&SWAP_EXTENTS.extents[i].end),
            )
        };
        if d == dev && sector >= start && sector < end {
            return true;
        }
    }
    false
}

#[tracepoint]
pub fn block_rq_issue(ctx: TracePointContext) -> u32 {
    let f = fields();
    let dev = tracepoint_field(&ctx, f.block_rq_issue_dev) as u32;
    let sector = tracepoint_field(&ctx, f.block_rq_issue_sector);
    if !on_swap(dev, sector) {
        return 0;
    }
    // rwbs: an optional 'F' (flush) then 'W', 'R', 'D' (discard), ...
    let rwbs = tracepoint_field(&ctx, f.block_rq_issue_rwbs).to_le_bytes();
    let write = rwbs[0] == b'W' || (rwbs[0] == b'F' && rwbs[1] == b'W');
    let read = rwbs[0] == b'R' || (rwbs[0] == b'F' && rwbs[1] == b'R');
    if !write && !read {
        return 0;
    }
    let start = IoStart {
        start_ns: now_ns(),
        write: write as u32,
        nr_sector: tracepoint_field(&ctx, f.block_rq_issue_nr_sector) as u32,
    };
    let key = IoKey {
        dev,
        _pad: 0,
        sector,
    };
    if SWAP_IO_START.insert(&key, &start, 0).is_err() {
        count(Counter::SwapIoStartDropped, 1);
    }
    0
}

#[tracepoint]
pub fn block_rq_complete(ctx: TracePointContext) -> u32 {
    let f = fields();
    let key = IoKey {
        dev: tracepoint_field(&ctx, f.block_rq_complete_dev) as u32,
        _pad: 0,
        sector: tracepoint_field(&ctx, f.block_rq_complete_sector),
    };
    let Some(start) = SWAP_IO_START.get_ptr(&key) else {
        return 0;
    };
    // SAFETY: a live entry, removed right after.
    let start = unsafe { *start };
    let _ = SWAP_IO_START.remove(&key);
    let took = now_ns().saturating_sub(start.start_ns);
    let sectors = start.nr_sector as u64;
    if start.write != 0 {
        record(Hist::SwapWrite, took);
        count(Counter::SwapWriteRequests, 1);
        count(Counter::SwapWriteSectors, sectors);
    } else {
        record(Hist::SwapRead, took);
        count(Counter::SwapReadRequests, 1);
        count(Counter::SwapReadSectors, sectors);
    }
    0
}
