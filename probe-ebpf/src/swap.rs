//! Swap-out: reclaim writing anon folios to swap (and file folios back to
//! their files), from `mm_vmscan_write_folio`. There is no swap tracepoint
//! of its own on any kernel; swap-ins are major anon faults (`fault`).

use aya_ebpf::{macros::tracepoint, programs::TracePointContext};
use vmtrace_common::{Counter, RECLAIM_WB_ANON};

use crate::shared::{count, fields, tracepoint_field};

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
