//! Maps and helpers used by more than one signal family: the latency
//! histograms, the scalar counters, the target filter and field reads.

use aya_ebpf::{
    EbpfContext,
    helpers::generated::bpf_get_current_ancestor_cgroup_id,
    macros::map,
    maps::{HashMap, PerCpuArray},
    programs::TracePointContext,
};
use vmtrace_common::{Counter, Counters, Field, Fields, Hist, MAX_TARGET_PIDS, Target, hist};

/// Latency histograms, one cell per [`Hist`].
#[map]
static HISTOGRAMS: PerCpuArray<hist::Buckets> = PerCpuArray::with_max_entries(Hist::COUNT, 0);

/// Scalar counters: one per-CPU cell holding every [`Counter`].
#[map]
static COUNTERS: PerCpuArray<Counters> = PerCpuArray::with_max_entries(1, 0);

/// Field offsets of the running kernel's tracepoints (written by userspace).
#[unsafe(no_mangle)]
pub(crate) static FIELDS: Fields = Fields::ABSENT;

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

/// All of `FIELDS`: a copy of a few hundred bytes, for programs that run
/// rarely (a thread's exit). Hot programs read one field with `field!`.
#[inline(always)]
pub fn fields() -> Fields {
    // SAFETY: a plain read of a read-only global; volatile so that the
    // compiler does not fold the compile-time default into the code.
    unsafe { core::ptr::read_volatile(&FIELDS) }
}

/// One field of `FIELDS`, read on its own: a 4-byte load from frozen
/// .rodata, which the verifier knows as a constant (so that
/// `tracepoint_field` compiles down to one load at a fixed offset).
/// Copying all of `Fields` would cost a few hundred instructions per run.
macro_rules! field {
    ($name:ident) => {
        // SAFETY: a plain read of a read-only global; volatile so that
        // the compiler does not fold the compile-time default into the
        // code.
        unsafe { core::ptr::read_volatile(&raw const $crate::shared::FIELDS.$name) }
    };
}
pub(crate) use field;

/// Whether the current task is one vmtrace was asked to watch.
#[inline(always)]
pub fn in_target() -> bool {
    let t = target();
    if t.cgroup_id == 0 && t.by_pid == 0 {
        return true;
    }
    // The current task's cgroup's ancestor at the target's level (its
    // own cgroup when it is that deep; 0 when it is shallower): the
    // target's whole subtree, in one step (cgroup->ancestors[level]).
    // Tracing programs have the helper since 5.14.
    // SAFETY: the helper reads the current task's cgroup; any level is
    // checked by the kernel.
    if t.cgroup_id != 0
        && unsafe { bpf_get_current_ancestor_cgroup_id(t.cgroup_level as i32) } == t.cgroup_id
    {
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
    if let Some(cell) = COUNTERS.get_ptr_mut(0) {
        // SAFETY: the pointer is to this CPU's cell of a live map.
        if let Some(c) = unsafe { (*cell).n.get_mut(counter as usize) } {
            *c += n;
        }
    }
}

/// Adds to several counters through one lookup of this CPU's cell (a
/// span's end adds to six).
#[inline(always)]
pub fn count_all<const N: usize>(adds: [(Counter, u64); N]) {
    if let Some(cell) = COUNTERS.get_ptr_mut(0) {
        for (counter, n) in adds {
            // SAFETY: as in `count`.
            if let Some(c) = unsafe { (*cell).n.get_mut(counter as usize) } {
                *c += n;
            }
        }
    }
}

/// This CPU's counter cell, for a program that adds to more than
/// `count_all` reaches (a reclaim's end: its order cell too).
#[inline(always)]
pub fn counters() -> Option<&'static mut Counters> {
    // SAFETY: this CPU's cell of a live map, used for the program's run.
    COUNTERS.get_ptr_mut(0).map(|cell| unsafe { &mut *cell })
}

#[inline(always)]
pub fn record(h: Hist, value: u64) {
    if let Some(cell) = HISTOGRAMS.get_ptr_mut(h as u32) {
        // SAFETY: as in `count`.
        let counts = unsafe { &mut (*cell).counts };
        // An opaque copy of the index: the compiler can prove it in
        // range by arithmetic the verifier does not follow (a multiplied
        // value tested for zero) and drop the bounds check, which the
        // verifier then misses.
        let b = hist::bucket_of(value);
        // SAFETY: a read of a local.
        let b = unsafe { core::ptr::read_volatile(&b) };
        if let Some(bucket) = counts.get_mut(b) {
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

/// `ctx_load!(ptr, "u32", offset, 8 12 ...)`: a load of that width at the
/// listed offset equal to `offset`, 0 for any other.
macro_rules! ctx_load {
    ($p:expr, $width:literal, $off:expr, $($o:literal)*) => {
        match $off {
            $($o => {
                let v: u64;
                // SAFETY: a read of the tracepoint's record at a fixed
                // offset, checked by the verifier against the record's
                // size.
                unsafe {
                    core::arch::asm!(
                        concat!("{v} = *(", $width, " *)({p} + ", stringify!($o), ")"),
                        v = out(reg) v,
                        p = in(reg) $p,
                        options(readonly, nostack, preserves_flags),
                    );
                }
                v
            })*
            _ => 0,
        }
    };
}

/// Reads an unsigned integer field of a classic tracepoint's record at the
/// offset and size userspace resolved from tracefs; 0 when it is absent.
///
/// A direct load from the context, no helper call: the verifier allows a
/// tracepoint program to read its record at a fixed offset (the offset
/// must be in the instruction: it refuses a context pointer plus a
/// register). `field` comes from frozen .rodata, so the verifier knows it
/// and walks only the one arm of the match below that it selects; the
/// loads are written in assembly so that the compiler cannot fold the
/// arms into one load at `ctx + offset`. Offsets from `RECORD_READ_LIMIT` on read 0 (no
/// field vmtrace reads lies there on 6.1, 6.12 or 6.18; the planner
/// checks, see `kernel::probes::plan`).
#[inline(always)]
pub fn tracepoint_field(ctx: &TracePointContext, field: Field) -> u64 {
    let p = ctx.as_ptr();
    match field.size {
        8 => ctx_load!(p, "u64", field.offset, 8 16 24 32 40 48 56 64 72 80 88 96 104 112 120),
        4 => {
            ctx_load!(p, "u32", field.offset, 8 12 16 20 24 28 32 36 40 44 48 52 56 60 64 68 72 76 80 84 88 92 96 100 104 108 112 116 120 124)
        }
        2 => {
            ctx_load!(p, "u16", field.offset, 8 10 12 14 16 18 20 22 24 26 28 30 32 34 36 38 40 42 44 46 48 50 52 54 56 58 60 62 64 66 68 70 72 74 76 78 80 82 84 86 88 90 92 94 96 98 100 102 104 106 108 110 112 114 116 118 120 122 124 126)
        }
        1 => {
            ctx_load!(p, "u8", field.offset, 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127)
        }
        _ => 0,
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
