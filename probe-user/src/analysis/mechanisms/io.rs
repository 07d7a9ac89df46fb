//! The mechanisms that claim the job's I/O: swap-in (or zswap), file
//! reads and writeback share the block I/O waits in proportion to what
//! moved, and swap-out names the swap writes (it claims no seconds).

use super::Measure::*;
use super::{Evidence, Mechanism};
use crate::analysis::Hint;
use crate::model::format::{fmt_count_short, fmt_secs};

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
        format!("swap-in faults {}", e.pair(SwapInFaults, fmt_count_short))
    } else {
        format!("major faults {}", e.pair(MajorFaults, fmt_count_short))
    };
    let mut text = format!("swap-in: {faults}, I/O waits {}", e.io_pair());
    if e.real(SwapInWait) {
        text.push_str(&format!(", swap-in time {}", e.pair(SwapInWait, fmt_secs)));
    }
    if e.real(PagesPerSwapRead) {
        text.push_str(&format!(
            "; swap reads of {} pages each (readahead)",
            e.pair(PagesPerSwapRead, |v| format!("{v:.1}"))
        ));
    }
    if e.real(SwapReadP99) {
        text.push_str(&format!(
            "; swap read p99 {}",
            e.pair(SwapReadP99, fmt_secs)
        ));
    }
    Some(Hint {
        mechanism: Mechanism::SwapIn,
        seconds: e.swap_seconds(),
        text,
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
    let lead = if now(e.g) >= now(0) {
        "swap-ins served from zswap"
    } else {
        "swap-ins no longer served from zswap"
    };
    let mut text = format!(
        "{lead}: I/O waits {}; zswap loads {}, stores {}; \
         swap device reads {} pages",
        e.io_pair(),
        e.pair(ZswapLoads, fmt_count_short),
        e.pair(ZswapStores, fmt_count_short),
        e.pair(ReadFromSwapDevice, fmt_count_short)
    );
    if e.real(SwapInWait) {
        text.push_str(&format!(", swap-in time {}", e.pair(SwapInWait, fmt_secs)));
    }
    Some(Hint {
        mechanism: Mechanism::Zswap,
        seconds: e.swap_seconds(),
        text,
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
    let read = if e.has_file_pages() {
        format!(
            "pages read {} (swap device {}), ",
            e.pair(FileReadPages, fmt_count_short),
            e.pair(ReadFromSwapDevice, fmt_count_short)
        )
    } else {
        String::new()
    };
    let text = format!(
        "file reads (page cache misses, not swap-ins): {read}file read \
         faults {}, swap-in faults {}; file refaults {}; I/O waits {}",
        e.pair(FileReadFaults, fmt_count_short),
        e.pair(SwapInFaults, fmt_count_short),
        e.pair(FileRefaults, fmt_count_short),
        e.io_pair()
    );
    // Their share of the I/O waits; swap-in (or zswap) has the rest.
    Some(Hint {
        mechanism: Mechanism::FileReads,
        seconds: e.io_shares().reads * e.io_part(),
        text,
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
        text: format!(
            "writeback (file pages the job dirtied): pages written {}; \
             I/O waits {}",
            e.pair(FileWritePages, fmt_count_short),
            e.io_pair()
        ),
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
    let to_device = e.pair(WrittenToSwapDevice, fmt_count_short);
    // Recordings from before the split by backend have the device's only.
    let pages = if [0, e.g]
        .iter()
        .any(|&g| e.mean(PagesSwappedOut, g).is_some())
    {
        format!(
            "{} pages, {to_device} of them to the swap device",
            e.pair(PagesSwappedOut, fmt_count_short)
        )
    } else {
        format!("{to_device} pages to the swap device")
    };
    Some(Hint {
        mechanism: Mechanism::SwapOut,
        seconds: 0.0,
        text: format!(
            "swap-out: {pages}, write p99 {}",
            e.pair(SwapWriteP99, fmt_secs)
        ),
    })
}
