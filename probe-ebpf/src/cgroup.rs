//! Reclaim stalls per cgroup (`attach --serve`): each target reclaim's
//! stall is also added to the row of the cgroup (v2 id) of the task that
//! stalled, in `CGROUP_STALLS`, for the per-cgroup histograms of
//! `/metrics`. Off unless userspace sets `PER_CGROUP` (the frozen global
//! lets the verifier drop the code).
//!
//! The table's size is the cap on cgroups (`--max-cgroups`, set at load
//! time) plus the overflow row (id 0, inserted by userspace): a stall of
//! a cgroup that finds the table full goes to the overflow row and is
//! counted in `CgroupStallsFolded`. Userspace deletes the rows of
//! removed cgroups.

use aya_ebpf::{
    helpers::generated::bpf_get_current_cgroup_id,
    macros::map,
    maps::{Array, HashMap},
};
use vmtrace_common::{CgroupStalls, Counter, MAX_CGROUPS, cgroup_bucket};

use crate::rare::count_rare;

/// Whether the per-cgroup table is kept (written by userspace).
#[unsafe(no_mangle)]
static PER_CGROUP: u32 = 0;

/// Stalls per cgroup id; id 0 is the overflow row.
#[map]
static CGROUP_STALLS: HashMap<u64, CgroupStalls> = HashMap::with_max_entries(MAX_CGROUPS + 1, 0);

/// A zeroed row, the source of new rows (a row is too large for the
/// stack). Never written.
#[map]
static CGROUP_ZERO: Array<CgroupStalls> = Array::with_max_entries(1, 0);

const BPF_NOEXIST: u64 = 1;

/// Adds one stall of the current task to its cgroup's row.
#[inline(always)]
pub fn add_stall(memcg: bool, stall_ns: u64) {
    // SAFETY: a plain read of a read-only global, volatile so that the
    // compiled-in default is not folded in.
    if unsafe { core::ptr::read_volatile(&PER_CGROUP) } == 0 {
        return;
    }
    // SAFETY: the helper takes no arguments and cannot fail.
    let id = unsafe { bpf_get_current_cgroup_id() };
    let row = match CGROUP_STALLS.get_ptr_mut(&id) {
        Some(row) => row,
        None => {
            let Some(zero) = CGROUP_ZERO.get(0) else {
                return;
            };
            // BPF_NOEXIST: another CPU may have inserted it meanwhile;
            // then the lookup below finds that one.
            let _ = CGROUP_STALLS.insert(&id, zero, BPF_NOEXIST);
            match CGROUP_STALLS.get_ptr_mut(&id) {
                Some(row) => row,
                None => {
                    count_rare!(
                        Counter::CgroupStallsFolded,
                        "CGROUP_STALLS full, cgroup",
                        id
                    );
                    match CGROUP_STALLS.get_ptr_mut(&0) {
                        Some(row) => row,
                        None => return,
                    }
                }
            }
        }
    };
    add(row, memcg, stall_ns);
}

#[inline(always)]
fn add(row: *mut CgroupStalls, memcg: bool, stall_ns: u64) {
    use core::intrinsics::{AtomicOrdering::Relaxed, atomic_xadd};
    let b = cgroup_bucket(stall_ns);
    // An opaque copy of the index, as in `shared::record`.
    // SAFETY: a read of a local.
    let b = unsafe { core::ptr::read_volatile(&b) };
    // SAFETY: a live, aligned map value; changed only through atomic
    // adds (BPF_ATOMIC), since tasks of one cgroup stall on several CPUs.
    unsafe {
        let (buckets, sum) = if memcg {
            (&raw mut (*row).memcg, &raw mut (*row).memcg_ns)
        } else {
            (&raw mut (*row).direct, &raw mut (*row).direct_ns)
        };
        if let Some(bucket) = (*buckets).get_mut(b) {
            atomic_xadd::<u64, u64, { Relaxed }>(bucket, 1);
        }
        atomic_xadd::<u64, u64, { Relaxed }>(sum, stall_ns);
    }
}
