//! Page faults. Counting is cheap: a perf_event program on the software
//! event PAGE_FAULTS_MAJ (raised by the kernel at the end of
//! handle_mm_fault, only for major faults) counts every major fault and the
//! target's. Per process, minor and major counts come from the kernel's
//! own per-task counters, read once per thread at exit
//! (`sched_process_exit`): nothing runs on the fault path for them.
//! Kernel-mode faults (`page_fault_kernel`, BTF tracepoint) are counted
//! apart.
//!
//! Fault latency (`--fault-latency`, off by default: it costs ~20% of a
//! minor fault here, see ../shared/FACTS.md) stamps the task at the
//! `page_fault_user` tracepoint (tp_btf: called directly, no perf buffer
//! copy) and closes the stamp from the PAGE_FAULTS_MIN/MAJ programs.

use aya_ebpf::{
    helpers::{
        bpf_get_current_comm, bpf_get_current_pid_tgid, bpf_probe_read_kernel,
        generated::bpf_get_current_task,
    },
    macros::{btf_tracepoint, map, perf_event, tracepoint},
    maps::LruHashMap,
    programs::{BtfTracePointContext, PerfEventContext, TracePointContext},
};
use vmtrace_common::{
    Counter, Field, Fields, Hist, MAX_PROCESSES, MAX_TASKS_IN_FAULT, ProcFaultTime, ProcFaults,
};

use crate::{
    rare::count_rare,
    shared::{count, current_tid, fields, in_target, now_ns, record},
};

/// Fault time of the target's processes, by tgid (--fault-latency).
#[map]
static PROCESS_FAULT_TIME: LruHashMap<u32, ProcFaultTime> =
    LruHashMap::with_max_entries(MAX_PROCESSES, 0);

/// Fault counts of the target's processes, by tgid.
#[map]
static PROCESS_FAULTS: LruHashMap<u32, ProcFaults> = LruHashMap::with_max_entries(MAX_PROCESSES, 0);

/// Start of the fault each target thread is in (0 = none). LRU, so that
/// threads that exit mid-fault cannot fill it.
#[map]
static FAULT_START: LruHashMap<u32, u64> = LruHashMap::with_max_entries(MAX_TASKS_IN_FAULT, 0);

/// 1 when fault latency is on (written by userspace at load time). Read
/// from frozen .rodata, so the verifier prunes the timing code from the
/// major-fault program when it is off: no map lookup per major fault.
#[unsafe(no_mangle)]
static FAULT_LATENCY: u32 = 0;

#[perf_event]
pub fn major_fault(_ctx: PerfEventContext) -> u32 {
    count(Counter::MajorFaultsAll, 1);
    if in_target() {
        count(Counter::MajorFaultsTarget, 1);
        // SAFETY: a plain read of a read-only global.
        if unsafe { core::ptr::read_volatile(&FAULT_LATENCY) } != 0 {
            close(Hist::MajorFault);
        }
    }
    0
}

/// Attached only with fault latency on.
#[perf_event]
pub fn minor_fault(_ctx: PerfEventContext) -> u32 {
    if in_target() {
        count(Counter::MinorFaultsTarget, 1);
        close(Hist::MinorFault);
    }
    0
}

/// Attached only with fault latency on.
#[btf_tracepoint(function = "page_fault_user")]
pub fn page_fault_user(_ctx: BtfTracePointContext) -> i32 {
    if !in_target() {
        return 0;
    }
    let tid = current_tid();
    let now = now_ns();
    match FAULT_START.get_ptr_mut(&tid) {
        // SAFETY: the entry belongs to the current thread.
        Some(start) => unsafe { *start = now },
        None => {
            if FAULT_START.insert(&tid, &now, 0).is_err() {
                count_rare!(Counter::FaultStartDropped, "FAULT_START full");
            }
        }
    }
    0
}

/// Ends the current thread's fault, if one was stamped.
#[inline(always)]
fn close(h: Hist) {
    if let Some(start) = FAULT_START.get_ptr_mut(&current_tid()) {
        // SAFETY: the entry belongs to the current thread.
        let started = unsafe { *start };
        if started != 0 {
            let took = now_ns().saturating_sub(started);
            record(h, took);
            // SAFETY: as above.
            unsafe { *start = 0 };
            add_process_time(h == Hist::MajorFault, took);
        }
    }
}

/// Adds an exiting target thread's delay accounting (`task->delays`),
/// each value bounded by `limit` (see [`delay_limit`]).
#[inline(always)]
fn add_delays(f: &Fields, delays: *const u8, limit: u64) {
    if f.task_delays.size != 8 {
        return;
    }
    if delays.is_null() {
        count_rare!(Counter::DelayUntracked, "task->delays NULL");
        return;
    }
    // One call per field, not a loop over a table: with seven entries
    // the compiler kept the loop and indexed the counters through the
    // table, an index the verifier cannot bound ("R0 unbounded memory
    // access").
    add_delay_field(delays, f.delay_blkio, Counter::DelayBlkioNs, limit);
    add_delay_field(delays, f.delay_swapin, Counter::DelaySwapinNs, limit);
    add_delay_field(delays, f.delay_freepages, Counter::DelayFreepagesNs, limit);
    add_delay_field(delays, f.delay_thrashing, Counter::DelayThrashingNs, limit);
    add_delay_field(delays, f.delay_compact, Counter::DelayCompactNs, limit);
    add_delay_field(delays, f.delay_wpcopy, Counter::DelayWpcopyNs, limit);
    add_delay_field(delays, f.delay_irq, Counter::DelayIrqNs, limit);
}

/// Adds one `task_delay_info` member (where this kernel has it).
#[inline(always)]
fn add_delay_field(delays: *const u8, field: Field, counter: Counter, limit: u64) {
    if field.size == 8 {
        // SAFETY: bpf_probe_read_kernel checks the address.
        let ns = unsafe {
            bpf_probe_read_kernel(delays.add(field.offset as usize) as *const u64).unwrap_or(0)
        };
        add_delay(counter, ns, limit);
    }
}

/// The longest delay an exiting thread can truly have: its lifetime
/// (`task_struct.start_time` is `ktime_get_ns()` at fork in
/// kernel/fork.c copy_process on 6.1, 6.12 and 6.18, the clock of
/// bpf_ktime_get_ns), with 1 ms + 0.1% for the clock the delays are
/// taken with (local_clock(), kernel/delayacct.c delayacct_start/_end;
/// sched_info's rq clock for run_delay): a difference of the same
/// length on another clock. Without start_time, the uptime.
#[inline(always)]
fn delay_limit(start_time: u64) -> u64 {
    let life = now_ns().saturating_sub(start_time);
    life + (life >> 10) + 1_000_000
}

/// Sums one per-task delay, or drops it when it is longer than the
/// thread lived: kernel/delayacct.c delayacct_end books `local_clock() -
/// *start`, and a wait with no start stamp is booked from 0 (the whole
/// uptime) or from an old stamp. No stamp: a wait begun while
/// kernel.task_delayacct was off; or, on 6.12 and later (EEVDF delayed
/// dequeue), a block I/O wait whose task was dequeued late: sched.h
/// __block_task(rq, p) calls delayacct_blkio_start(), which stamps
/// `current`, when dequeue_entities finishes p's delayed dequeue from
/// another task's pick_next_entity; p's wake-up (ttwu ->
/// delayacct_blkio_end(p)) then books from p's old stamp. On 6.1 the
/// stamp is taken in __schedule for prev, which is current.
#[inline(always)]
fn add_delay(counter: Counter, ns: u64, limit: u64) {
    if ns > limit {
        count_rare!(Counter::DelayImplausible, "ns", ns);
        count(Counter::DelayImplausibleNs, ns);
    } else {
        count(counter, ns);
    }
}

/// A target thread is exiting: add its lifetime fault counts (the
/// kernel's task_struct min_flt/maj_flt) to its process.
#[tracepoint]
pub fn process_exit(_ctx: TracePointContext) -> u32 {
    if !in_target() {
        return 0;
    }
    let f = fields();
    // SAFETY: the helper returns the current task (the exiting thread).
    let task = unsafe { bpf_get_current_task() } as *const u8;
    let read = |field: Field| -> u64 {
        if field.size != 8 {
            return 0;
        }
        // SAFETY: bpf_probe_read_kernel checks the address.
        unsafe { bpf_probe_read_kernel(task.add(field.offset as usize) as *const u64).unwrap_or(0) }
    };
    let (min_flt, maj_flt) = (read(f.task_min_flt), read(f.task_maj_flt));
    count(Counter::ExitedThreads, 1);
    let limit = delay_limit(read(f.task_start_time));
    add_delays(&f, read(f.task_delays) as *const u8, limit);
    if f.task_sched_info.size != 0 && f.sched_info_run_delay.size == 8 {
        let at = f.task_sched_info.offset as usize + f.sched_info_run_delay.offset as usize;
        // SAFETY: bpf_probe_read_kernel checks the address.
        let ns = unsafe { bpf_probe_read_kernel(task.add(at) as *const u64).unwrap_or(0) };
        add_delay(Counter::DelayCpuNs, ns, limit);
    }
    let tgid = (bpf_get_current_pid_tgid() >> 32) as u32;
    if add_process_faults(tgid, min_flt, maj_flt) {
        return 0;
    }
    let p = ProcFaults {
        comm: bpf_get_current_comm().unwrap_or([0; 16]),
        min_flt,
        maj_flt,
        threads: 1,
    };
    // BPF_NOEXIST: when another thread of the process inserted its row
    // first (both exiting at once on two CPUs), add to that row instead
    // of overwriting it.
    if PROCESS_FAULTS.insert(&tgid, &p, BPF_NOEXIST).is_ok() {
        count(Counter::ProcessFaultInserts, 1);
    } else {
        add_process_faults(tgid, min_flt, maj_flt);
    }
    0
}

const BPF_NOEXIST: u64 = 1;

/// Adds an exiting thread to its process's row, if there is one. The
/// additions are atomic: threads of one process exit on several CPUs at
/// once (10 000 threads ending together lose none).
#[inline(always)]
fn add_process_faults(tgid: u32, min_flt: u64, maj_flt: u64) -> bool {
    use core::intrinsics::{AtomicOrdering::Relaxed, atomic_xadd};
    let Some(p) = PROCESS_FAULTS.get_ptr_mut(&tgid) else {
        return false;
    };
    // SAFETY: a live, aligned entry of the map; the u64 fields are only
    // changed through atomic adds (BPF_ATOMIC | BPF_ADD: the bpfel target
    // has no core::sync::atomic, the instruction exists everywhere).
    unsafe {
        atomic_xadd::<u64, u64, { Relaxed }>(&raw mut (*p).min_flt, min_flt);
        atomic_xadd::<u64, u64, { Relaxed }>(&raw mut (*p).maj_flt, maj_flt);
        atomic_xadd::<u64, u64, { Relaxed }>(&raw mut (*p).threads, 1);
        // The name at exit: after exec, the program's.
        if let Ok(comm) = bpf_get_current_comm() {
            (*p).comm = comm;
        }
    }
    true
}

/// Kernel-mode faults of target tasks (copy_to_user into untouched
/// pages, for instance): counted apart from user faults.
#[btf_tracepoint(function = "page_fault_kernel")]
pub fn page_fault_kernel(_ctx: BtfTracePointContext) -> i32 {
    if in_target() {
        count(Counter::KernelFaultsTarget, 1);
    }
    0
}

/// Adds one timed fault to the current process's totals.
#[inline(always)]
fn add_process_time(major: bool, took: u64) {
    let tgid = (bpf_get_current_pid_tgid() >> 32) as u32;
    let Some(p) = PROCESS_FAULT_TIME.get_ptr_mut(&tgid) else {
        let mut p = ProcFaultTime {
            max_ns: took,
            ..ProcFaultTime::default()
        };
        if major {
            p.major = 1;
            p.major_ns = took;
        } else {
            p.minor = 1;
            p.minor_ns = took;
        }
        if PROCESS_FAULT_TIME.insert(&tgid, &p, 0).is_ok() {
            count(Counter::ProcessTimeInserts, 1);
        }
        return;
    };
    // SAFETY: a live entry; racing threads of one process can lose an
    // addition, which a per-process summary can afford.
    let p = unsafe { &mut *p };
    if major {
        p.major += 1;
        p.major_ns += took;
    } else {
        p.minor += 1;
        p.minor_ns += took;
    }
    if took > p.max_ns {
        p.max_ns = took;
    }
}
