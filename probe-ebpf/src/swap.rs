//! Swap-out: reclaim writing anon folios to swap (and file folios back to
//! their files), from `mm_vmscan_write_folio`. There is no swap tracepoint
//! of its own on any kernel; swap-ins are major anon faults (`fault`).
//!
//! Swap device I/O: block requests whose sectors fall in a swap area
//! (userspace passes the areas' disk ranges: a swapfile's extents, or a
//! partition), timed from `block_rq_issue` to `block_rq_complete`.

use aya_ebpf::{
    macros::{btf_tracepoint, map, tracepoint},
    maps::Array,
    programs::{BtfTracePointContext, TracePointContext},
};
use vmtrace_common::{
    Counter, Field, Hist, IO_QUEUES, IO_SLOTS, IO_TAGS, IoStart, MAX_SWAP_EXTENTS, RECLAIM_WB_ANON,
    SwapExtents,
};

use crate::{
    rare::count_rare,
    shared::{count, field, now_ns, record, tracepoint_field},
};

#[tracepoint]
pub fn write_folio(ctx: TracePointContext) -> u32 {
    let flags = tracepoint_field(&ctx, field!(write_folio_reclaim_flags));
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

/// Swap requests in flight, one slot per (hardware queue, tag): blk-mq
/// gives each in-flight request of a queue its own tag (the scheduler's,
/// or the driver's without a scheduler), held from allocation to after
/// `block_rq_complete` and kept across a requeue, so a slot needs no
/// hash, lock or allocation. A slot also keeps its request's address and
/// sector. Completions of other requests pass their slot by (other disks
/// reuse the numbers); the slot's own request completing at another
/// sector is counted in SwapIoUnpaired and never timed, as is an issue
/// that finds another request's leftover in its slot (a completion the
/// program did not see). Requests whose queue or tag falls outside the
/// table are counted in SwapIoStartDropped.
#[map]
static SWAP_IO: Array<IoStart> = Array::with_max_entries(IO_SLOTS, 0);

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

/// The slot of a request, if its queue and tag fit the table.
#[inline(always)]
fn slot(rq: u64) -> Option<u32> {
    // Under an I/O scheduler the driver tag is given back when a request
    // is requeued (blk_mq_put_driver_tag, before the requeue tracepoint)
    // and another one taken at its next dispatch; the scheduler tag stays
    // with the request from allocation to completion. Without a
    // scheduler there is no scheduler tag (-1) and the driver tag stays.
    let sched = member(rq, field!(request_internal_tag)) as u32;
    let tag = if sched != u32::MAX {
        sched
    } else {
        member(rq, field!(request_tag)) as u32
    };
    let queue = member(member(rq, field!(request_mq_hctx)), field!(hctx_queue_num)) as u32;
    // A negative tag (-1: none) reads as a large u32.
    (tag < IO_TAGS && queue < IO_QUEUES).then_some(queue * IO_TAGS + tag)
}

/// Reads an integer member at a BTF-resolved offset from a kernel pointer
/// the verifier knows the type of (an argument of a BTF tracepoint, or a
/// pointer member read from one): a direct load, which the verifier turns
/// into one that cannot fault, at an offset it knows (frozen .rodata).
/// A null or bad pointer reads 0.
#[inline(always)]
fn member(base: u64, field: Field) -> u64 {
    let p = (base + field.offset as u64) as *const u8;
    // SAFETY: see above; the kernel checks the access against BTF.
    unsafe {
        match field.size {
            8 => core::ptr::read_volatile(p as *const u64),
            4 => core::ptr::read_volatile(p as *const u32) as u64,
            _ => 0,
        }
    }
}

/// The disk of a request, as (major << 20 | first minor); 0 without one.
#[inline(always)]
fn disk(rq: u64) -> u32 {
    let disk = member(member(rq, field!(request_q)), field!(request_queue_disk));
    if disk == 0 {
        return 0;
    }
    ((member(disk, field!(gendisk_major)) as u32) << 20)
        | member(disk, field!(gendisk_first_minor)) as u32
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
    let dev = disk(rq);
    let sector = member(rq, field!(request_sector));
    if dev == 0 || !on_swap(dev, sector) {
        return 0;
    }
    let op = member(rq, field!(request_cmd_flags)) & REQ_OP_MASK;
    if op != REQ_OP_READ && op != REQ_OP_WRITE {
        return 0;
    }
    let Some(cell) = slot(rq).and_then(|i| SWAP_IO.get_ptr_mut(i)) else {
        count_rare!(Counter::SwapIoStartDropped, "no SWAP_IO slot");
        return 0;
    };
    // SAFETY: a live array slot; only this request's issue and
    // completion touch it while the request holds its tag.
    let cell = unsafe { &mut *cell };
    // The same request issued again (requeued by a busy driver, which
    // keeps its slot: see `slot`; or sent back unannounced by a batched
    // submission, e.g. virtio_queue_rqs) is timed from its last issue.
    // Anything else left in the slot is an issue whose completion was
    // not seen: a pairing error, counted.
    if cell.start_ns != 0 && (cell.rq != rq || cell.sector != sector) {
        count_rare!(Counter::SwapIoUnpaired, "slot reused, sector", cell.sector);
        count(Counter::SwapIoUnpairedSectors, cell.nr_sector as u64);
    }
    *cell = IoStart {
        start_ns: now_ns(),
        rq,
        sector,
        write: (op == REQ_OP_WRITE) as u32,
        nr_sector: (member(rq, field!(request_data_len)) >> 9) as u32,
    };
    0
}

#[btf_tracepoint(function = "block_rq_complete")]
pub fn block_rq_complete(ctx: BtfTracePointContext) -> i32 {
    let rq: u64 = ctx.arg(0);
    let Some(cell) = slot(rq).and_then(|i| SWAP_IO.get_ptr_mut(i)) else {
        return 0;
    };
    // SAFETY: as in block_rq_issue.
    let cell = unsafe { &mut *cell };
    // Another request in this slot: one of another disk with the same
    // queue number and tag (a loop device and the disk under it, both
    // busy). Not ours: leave it.
    if cell.start_ns == 0 || cell.rq != rq {
        return 0;
    }
    let start = *cell;
    cell.start_ns = 0;
    if start.sector != member(rq, field!(request_sector)) {
        count_rare!(
            Counter::SwapIoUnpaired,
            "completed elsewhere, sector",
            start.sector
        );
        count(Counter::SwapIoUnpairedSectors, start.nr_sector as u64);
        return 0;
    }
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
