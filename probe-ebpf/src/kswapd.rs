//! kswapd: how long each node's kswapd stayed awake (wake to sleep), and
//! who woke it, for which zone. System-wide: kswapd works for everyone.

use aya_ebpf::{
    helpers::bpf_get_current_comm,
    macros::{map, tracepoint},
    maps::{Array, LruHashMap, PerCpuArray},
    programs::TracePointContext,
};
use vmtrace_common::{
    Counter, Hist, KswapdNode, MAX_NODES, MAX_WAKERS, MAX_ZONES, ORDERS, zone_cell,
};

use crate::{
    rare::count_rare,
    shared::{count, field, now_ns, record, tracepoint_field},
};

/// Per node: wakes, sleeps, total awake time.
#[map]
static KSWAPD_NODES: PerCpuArray<KswapdNode> = PerCpuArray::with_max_entries(MAX_NODES, 0);

/// Per node: when its kswapd woke (0 = asleep, or woke before tracing).
/// Shared across CPUs: kswapd may sleep on another CPU than it woke on.
#[map]
static KSWAPD_AWAKE_SINCE: Array<u64> = Array::with_max_entries(MAX_NODES, 0);

/// `mm_vmscan_wakeup_kswapd` per (node, zone).
#[map]
static KSWAPD_WAKEUPS: PerCpuArray<u64> = PerCpuArray::with_max_entries(MAX_NODES * MAX_ZONES, 0);

/// `mm_vmscan_wakeup_kswapd` per allocation order (last: that and above).
#[map]
static KSWAPD_WAKEUP_ORDER: PerCpuArray<u64> = PerCpuArray::with_max_entries(ORDERS, 0);

/// `mm_vmscan_wakeup_kswapd` per waker task name.
#[map]
static KSWAPD_WAKERS: LruHashMap<[u8; 16], u64> = LruHashMap::with_max_entries(MAX_WAKERS, 0);

#[tracepoint]
pub fn kswapd_wake(ctx: TracePointContext) -> u32 {
    let nid = tracepoint_field(&ctx, field!(kswapd_wake_nid)) as u32;
    if nid >= MAX_NODES {
        count_rare!(Counter::NodeOutOfRange, "kswapd_wake node", nid);
        return 0;
    }
    if let Some(node) = KSWAPD_NODES.get_ptr_mut(nid) {
        // SAFETY: this CPU's cell of a live per-CPU map.
        unsafe { (*node).wakes += 1 };
    }
    // kswapd reports a wake for every balancing round; the awake period
    // runs from the first wake to the sleep.
    if let Some(since) = KSWAPD_AWAKE_SINCE.get_ptr_mut(nid) {
        // SAFETY: one kswapd per node writes its own cell.
        unsafe {
            if *since == 0 {
                *since = now_ns();
            }
        }
    }
    0
}

#[tracepoint]
pub fn kswapd_sleep(ctx: TracePointContext) -> u32 {
    let nid = tracepoint_field(&ctx, field!(kswapd_sleep_nid)) as u32;
    if nid >= MAX_NODES {
        count_rare!(Counter::NodeOutOfRange, "kswapd_sleep node", nid);
        return 0;
    }
    let Some(since) = KSWAPD_AWAKE_SINCE.get_ptr_mut(nid) else {
        return 0;
    };
    // SAFETY: as in `kswapd_wake`.
    let started = unsafe { *since };
    if started == 0 {
        return 0;
    }
    // SAFETY: as above.
    unsafe { *since = 0 };
    let awake = now_ns().saturating_sub(started);
    record(Hist::KswapdAwake, awake);
    if let Some(node) = KSWAPD_NODES.get_ptr_mut(nid) {
        // SAFETY: this CPU's cell of a live per-CPU map.
        unsafe {
            (*node).sleeps += 1;
            (*node).awake_ns += awake;
        }
    }
    0
}

#[tracepoint]
pub fn wakeup_kswapd(ctx: TracePointContext) -> u32 {
    let nid = tracepoint_field(&ctx, field!(wakeup_kswapd_nid)) as u32;
    let zid = tracepoint_field(&ctx, field!(wakeup_kswapd_zid)) as u32;
    if nid >= MAX_NODES || zid >= MAX_ZONES {
        count_rare!(
            Counter::NodeOutOfRange,
            "wakeup_kswapd node",
            nid,
            "zone",
            zid
        );
        return 0;
    }
    if let Some(cell) = KSWAPD_WAKEUPS.get_ptr_mut(zone_cell(nid, zid)) {
        // SAFETY: this CPU's cell of a live per-CPU map.
        unsafe { *cell += 1 };
    }
    let order = (tracepoint_field(&ctx, field!(wakeup_kswapd_order)) as u32).min(ORDERS - 1);
    if let Some(cell) = KSWAPD_WAKEUP_ORDER.get_ptr_mut(order) {
        // SAFETY: this CPU's cell of a live per-CPU map.
        unsafe { *cell += 1 };
    }
    let comm = bpf_get_current_comm().unwrap_or([0; 16]);
    match KSWAPD_WAKERS.get_ptr_mut(&comm) {
        // SAFETY: a live entry; a lost increment under a race is tolerable.
        Some(n) => unsafe { *n += 1 },
        None => {
            if KSWAPD_WAKERS.insert(&comm, &1, 0).is_ok() {
                count(Counter::WakerInserts, 1);
            }
        }
    }
    0
}
