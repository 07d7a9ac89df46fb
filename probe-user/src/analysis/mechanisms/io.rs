//! The mechanisms that claim the job's I/O: swap-in (or zswap), file
//! reads and writeback share the block I/O waits in proportion to what
//! moved, and swap-out names the swap writes (it claims no seconds).

use super::Measure::*;
use super::{Evidence, Mechanism};
use crate::analysis::{Hint, hint::Fact};

pub(super) fn swap_in(e: &Evidence) -> Option<Hint> {
    if e.zswap_moved() || !e.swap_named() {
        return None;
    }
    // Its share of the I/O waits (the reads) and of the other system
    // CPU (faulting the pages in), as far as the evidence goes.
    // The faults the shares are computed from: vmstat's swap-in faults
    // where the runs split them by cause. rusage's major faults count a
    // fault retried on a swap-cache hit as major again, vmstat's
    // pgmajfault once (mm/memory.c, do_swap_page), so the two differ.
    let faults = if e.has_fault_causes() {
        SwapInFaults
    } else {
        MajorFaults
    };
    let mut evidence = vec![e.fact(faults), e.io_fact()];
    for key in [SwapInWait, PagesPerSwapRead, SwapReadP99] {
        if e.real(key) {
            evidence.push(e.fact(key));
        }
    }
    Some(Hint {
        mechanism: Mechanism::SwapIn,
        seconds: e.swap_seconds(),
        evidence,
    })
}

/// Swap-ins served from (or no longer from) zswap: pages loaded from
/// compressed memory instead of read from the swap device, so the block
/// I/O waits of swap-in move with them. zswpin/zswpout count in
/// zswap_load/zswap_store (mm/zswap.c, 6.1 to 6.18); pswpin only reads
/// from the device (mm/page_io.c).
pub(super) fn zswap(e: &Evidence) -> Option<Hint> {
    if !e.zswap_moved() {
        return None;
    }
    let now = |g| e.mean(ZswapLoads, g).unwrap_or(0.0) + e.mean(ZswapStores, g).unwrap_or(0.0);
    let mut evidence = vec![
        Fact::More {
            more: now(e.g) >= now(0),
        },
        e.io_fact(),
        e.fact(ZswapLoads),
        e.fact(ZswapStores),
        e.fact(ReadFromSwapDevice),
    ];
    if e.real(SwapInWait) {
        evidence.push(e.fact(SwapInWait));
    }
    Some(Hint {
        mechanism: Mechanism::Zswap,
        seconds: e.swap_seconds(),
        evidence,
    })
}

/// Major faults that are file reads (page-cache misses of evicted or
/// never-read file pages: filemap_fault), not swap-ins; named apart so
/// that a compile's re-read headers are not called swap-in.
pub(super) fn file_reads(e: &Evidence) -> Option<Hint> {
    if !e.file_reads_moved() {
        return None;
    }
    // What the shares use: the pages read, or vmstat's faults (not
    // rusage's: see swap_in).
    let mut evidence = Vec::new();
    if e.has_file_pages() {
        evidence.extend([e.fact(FileReadPages), e.fact(ReadFromSwapDevice)]);
    }
    evidence.extend([
        e.fact(FileReadFaults),
        e.fact(SwapInFaults),
        e.fact(FileRefaults),
        e.io_fact(),
    ]);
    // Their share of the I/O waits; swap-in (or zswap) has the rest.
    Some(Hint {
        mechanism: Mechanism::FileReads,
        seconds: e.io_shares().reads * e.io_part(),
        evidence,
    })
}

/// File pages the job dirtied, written back: a task past its dirty
/// limit sleeps in balance_dirty_pages (io_schedule_timeout: an I/O
/// wait), fsync waits for the writeback (folio_wait_writeback). Its
/// share of the I/O waits by the pages dirtied (rusage's block output:
/// task_io_account_write in folio_account_dirtied, page-cache files on
/// a device only; swap-out is not in it).
pub(super) fn writeback(e: &Evidence) -> Option<Hint> {
    if !e.moved(FileWritePages) {
        return None;
    }
    Some(Hint {
        mechanism: Mechanism::Writeback,
        seconds: e.io_shares().writes * e.io_part(),
        evidence: vec![e.fact(FileWritePages), e.io_fact()],
    })
}

/// Swap-out changed: the pages swapped out through every backend, or
/// the device's writes and their latency. The device's writes moving
/// because zswap's stores moved is zswap's doing (its hint names it),
/// not a change in how much was swapped out.
pub(super) fn swap_out(e: &Evidence) -> Option<Hint> {
    let device = !e.zswap_moved() && e.real(WrittenToSwapDevice);
    if !(e.real(PagesSwappedOut) || device || e.real(SwapWriteP99)) {
        return None;
    }
    // Recordings from before the split by backend have the device's only.
    let mut evidence = Vec::new();
    if [0, e.g]
        .iter()
        .any(|&g| e.mean(PagesSwappedOut, g).is_some())
    {
        evidence.push(e.fact(PagesSwappedOut));
    }
    evidence.extend([e.fact(WrittenToSwapDevice), e.fact(SwapWriteP99)]);
    Some(Hint {
        mechanism: Mechanism::SwapOut,
        seconds: 0.0,
        evidence,
    })
}
