//! Page faults: the per-task fault-latency map's size and the per-process
//! fault tables (`PROCESS_FAULTS`, `PROCESS_FAULT_TIME`).

/// Entries in the per-task "fault in progress" map (fault latency only).
pub const MAX_TASKS_IN_FAULT: u32 = 65536;

/// Processes whose fault counts are kept (LRU beyond that).
pub const MAX_PROCESSES: u32 = 16384;

/// Per process (tgid) of the target: page faults of its threads, summed
/// as each thread exits (`PROCESS_FAULTS`); read from the kernel's own
/// per-task counters, so the fault path pays nothing.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcFaults {
    pub comm: [u8; 16],
    pub min_flt: u64,
    pub maj_flt: u64,
    pub threads: u64,
}

/// Per process (tgid) of the target, with --fault-latency: how many
/// faults it took and how long they lasted (`PROCESS_FAULT_TIME`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcFaultTime {
    pub minor: u64,
    pub minor_ns: u64,
    pub major: u64,
    pub major_ns: u64,
    pub max_ns: u64,
}
