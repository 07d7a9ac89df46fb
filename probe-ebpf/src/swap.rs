//! Swap-out: reclaim writing anon folios to swap (and file folios back to
//! their files), from `mm_vmscan_write_folio`. There is no swap tracepoint
//! of its own on any kernel; swap-ins are major anon faults (`fault`).
//!
//! Swap device I/O: block requests whose sectors fall in a swap area
//! (userspace passes the areas' disk ranges: a swapfile's extents, or a
//! partition), timed from `block_rq_issue` to `block_rq_complete`.

use aya_ebpf::{
    helpers::bpf_probe_read_kernel,
    macros::{btf_tracepoint, map, tracepoint},
    maps::HashMap,
    programs::{BtfTracePointContext, TracePointContext},
};
use vmtrace_common::{
    Counter, Field, Hist, IoStart, MAX_IO_IN_FLIGHT, MAX_SWAP_EXTENTS, RECLAIM_WB_ANON, SwapExtents,
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

/// Swap requests in flight, by `struct request` address. A plain hash,
/// not an LRU one: BPF LRU maps evict per CPU before they are full. In-flight
/// requests are bounded by the queue depth; a full map is counted in
/// SwapIoStartDropped.
#[map]
static SWAP_IO_START: HashMap<u64, IoStart> = HashMap::with_max_entries(MAX_IO_IN_FLIGHT, 0);

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

/// Reads an integer member at a BTF-resolved offset from a kernel pointer.
#[inline(always)]
fn member(base: u64, field: Field) -> u64 {
    let p = (base as usize + field.offset as usize) as *const u8;
    // SAFETY: bpf_probe_read_kernel checks the address; a bad one reads 0.
    unsafe {
        match field.size {
            8 => bpf_probe_read_kernel(p as *const u64).unwrap_or(0),
            4 => bpf_probe_read_kernel(p as *const u32).map_or(0, u64::from),
            _ => 0,
        }
    }
}

/// REQ_OP_READ and REQ_OP_WRITE, the low bits of `cmd_flags`.
const REQ_OP_MASK: u64 = 0xff;
const REQ_OP_READ: u64 = 0;
const REQ_OP_WRITE: u64 = 1;

/// These are BTF tracepoints, not classic ones: completions run in
/// interrupt context, and a classic tracepoint program is skipped when it
/// interrupts any other BPF program on its CPU (2-3% of swap write
/// completions were lost that way under reclaim); a BTF tracepoint is
/// skipped only when it interrupts itself.
#[btf_tracepoint(function = "block_rq_issue")]
pub fn block_rq_issue(ctx: BtfTracePointContext) -> i32 {
    let rq: u64 = ctx.arg(0);
    let f = fields();
    let sector = member(rq, f.request_sector);
    let disk = member(member(rq, f.request_q), f.request_queue_disk);
    if disk == 0 {
        return 0;
    }
    let dev =
        ((member(disk, f.gendisk_major) as u32) << 20) | member(disk, f.gendisk_first_minor) as u32;
    if !on_swap(dev, sector) {
        return 0;
    }
    let op = member(rq, f.request_cmd_flags) & REQ_OP_MASK;
    if op != REQ_OP_READ && op != REQ_OP_WRITE {
        return 0;
    }
    let start = IoStart {
        start_ns: now_ns(),
        write: (op == REQ_OP_WRITE) as u32,
        nr_sector: (member(rq, f.request_data_len) >> 9) as u32,
    };
    if SWAP_IO_START.insert(&rq, &start, 0).is_err() {
        count(Counter::SwapIoStartDropped, 1);
    }
    0
}

#[btf_tracepoint(function = "block_rq_complete")]
pub fn block_rq_complete(ctx: BtfTracePointContext) -> i32 {
    let rq: u64 = ctx.arg(0);
    let Some(start) = SWAP_IO_START.get_ptr(&rq) else {
        return 0;
    };
    // SAFETY: a live entry, removed right after.
    let start = unsafe { *start };
    let _ = SWAP_IO_START.remove(&rq);
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
