//! Maps and helpers used by more than one signal family: the latency
//! histograms, the scalar counters, the target filter and field reads.

use aya_ebpf::{
    EbpfContext,
    helpers::generated::bpf_get_current_cgroup_id,
    macros::map,
    maps::{HashMap, PerCpuArray},
    programs::TracePointContext,
};
use vmtrace_common::{Counter, Field, Fields, Hist, MAX_TARGET_PIDS, Target, hist};

/// Latency histograms, one cell per [`Hist`].
#[map]
static HISTOGRAMS: PerCpuArray<hist::Buckets> = PerCpuArray::with_max_entries(Hist::COUNT, 0);

/// Scalar counters, one cell per [`Counter`].
#[map]
static COUNTERS: PerCpuArray<u64> = PerCpuArray::with_max_entries(Counter::COUNT, 0);

/// Field offsets of the running kernel's tracepoints (written by userspace).
#[unsafe(no_mangle)]
static FIELDS: Fields = Fields::ABSENT;

/// Which tasks are the target (written by userspace).
#[unsafe(no_mangle)]
static TARGET: Target = Target::EVERY_TASK;

/// Target processes by tgid (with `TARGET.by_pid`): seeded by userspace
/// (`attach --pid/--comm`), grown by `target::target_fork`, pruned at exit.
#[map]
pub static TARGET_PIDS: HashMap<u32, u8> = HashMap::with_max_entries(MAX_TARGET_PIDS, 0);

#[inline(always)]
pub fn target() -> Target {
    // SAFETY: as in `fields`.
    unsafe { core::ptr::read_volatile(&TARGET) }
}

#[inline(always)]
pub fn fields() -> Fields {
    // SAFETY: a plain read of a read-only global; volatile so that the
    // compiler does not fold the compile-time default into the code.
    unsafe { core::ptr::read_volatile(&FIELDS) }
}

/// Whether the current task is one vmtrace was asked to watch.
#[inline(always)]
pub fn in_target() -> bool {
    let t = target();
    if t.cgroup_id == 0 && t.by_pid == 0 {
        return true;
    }
    // SAFETY: the helper takes no arguments and cannot fail.
    if t.cgroup_id != 0 && unsafe { bpf_get_current_cgroup_id() } == t.cgroup_id {
        return true;
    }
    t.by_pid != 0 && {
        let tgid = (aya_ebpf::helpers::bpf_get_current_pid_tgid() >> 32) as u32;
        // SAFETY: a lookup whose value is not kept.
        unsafe { TARGET_PIDS.get(&tgid) }.is_some()
    }
}

#[inline(always)]
pub fn count(counter: Counter, n: u64) {
    if let Some(cell) = COUNTERS.get_ptr_mut(counter as u32) {
        // SAFETY: the pointer is to this CPU's cell of a live map.
        unsafe { *cell += n };
    }
}

#[inline(always)]
pub fn record(h: Hist, value: u64) {
    if let Some(cell) = HISTOGRAMS.get_ptr_mut(h as u32) {
        // SAFETY: as in `count`.
        let counts = unsafe { &mut (*cell).counts };
        if let Some(bucket) = counts.get_mut(hist::bucket_of(value)) {
            *bucket += 1;
        }
    }
}

/// Reads a `__data_loc char[]` string field (low 16 bits of the u32 are
/// its offset in the record) into `dst`; empty when absent.
#[inline(always)]
pub fn tracepoint_str(ctx: &TracePointContext, field: Field, dst: &mut [u8; 16]) {
    if field.size != 4 {
        return;
    }
    // SAFETY: as in `tracepoint_field`; the string read is bounded by dst.
    unsafe {
        let Ok(loc) = ctx.read_at::<u32>(field.offset as usize) else {
            return;
        };
        let src = (ctx.as_ptr() as *const u8).add((loc & 0xffff) as usize);
        let _ = aya_ebpf::helpers::bpf_probe_read_kernel_str_bytes(src, dst);
    }
}

/// Reads an unsigned integer field of a classic tracepoint's record at the
/// offset and size userspace resolved from tracefs; 0 when it is absent.
#[inline(always)]
pub fn tracepoint_field(ctx: &TracePointContext, field: Field) -> u64 {
    let offset = field.offset as usize;
    // SAFETY: bpf_probe_read_kernel checks the address; a bad offset reads
    // an error, never faults.
    unsafe {
        match field.size {
            8 => ctx.read_at::<u64>(offset).unwrap_or(0),
            4 => ctx.read_at::<u32>(offset).map_or(0, u64::from),
            2 => ctx.read_at::<u16>(offset).map_or(0, u64::from),
            1 => ctx.read_at::<u8>(offset).map_or(0, u64::from),
            _ => 0,
        }
    }
}

#[inline(always)]
pub fn current_tid() -> u32 {
    aya_ebpf::helpers::bpf_get_current_pid_tgid() as u32
}

#[inline(always)]
pub fn now_ns() -> u64 {
    // SAFETY: the helper takes no arguments and cannot fail.
    unsafe { aya_ebpf::helpers::generated::bpf_ktime_get_ns() }
}
