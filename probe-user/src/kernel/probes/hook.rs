//! How a program is hooked into the kernel (the catalogue's `hook`).

use aya::programs::perf_event::SoftwareEvent;

/// How a program is hooked into the kernel.
#[derive(Clone, Copy, Debug)]
pub enum Hook {
    /// A classic tracepoint; its fields come from tracefs `format`. The
    /// first of `events` this kernel has is used (later names are older
    /// kernels' names for the same event).
    Tracepoint {
        system: &'static str,
        events: &'static [&'static str],
    },
    /// A BTF tracepoint (typed arguments, no perf buffer copy; skipped
    /// only when it interrupts itself, not any BPF program).
    BtfTracepoint {
        system: &'static str,
        event: &'static str,
    },
    /// A software perf event with sample period 1 on every CPU.
    PerfSoftware(SoftwareEvent),
    /// The software CPU clock of every CPU, sampled this many times a
    /// second (a sampler: the CPU profile).
    PerfCpuClock { hz: u64 },
    /// A BPF iterator over kernel objects (`task`: every task), loaded
    /// with the others and run by the collector when it reads the maps
    /// (`Probes::flush_stalls`), not on an event.
    Iter { target: &'static str },
}

impl Hook {
    pub fn describe(&self) -> String {
        match self {
            Hook::Tracepoint { system, events } => {
                format!("tracepoint {system}:{}", events.join("|"))
            }
            Hook::BtfTracepoint { system, event } => format!("BTF tracepoint {system}:{event}"),
            Hook::PerfSoftware(ev) => {
                let name = match ev {
                    SoftwareEvent::PageFaultsMaj => "PAGE_FAULTS_MAJ",
                    SoftwareEvent::PageFaultsMin => "PAGE_FAULTS_MIN",
                    _ => "other",
                };
                format!("perf software event {name}")
            }
            Hook::PerfCpuClock { hz } => format!("perf software event CPU_CLOCK at {hz} Hz"),
            Hook::Iter { target } => format!("BPF iterator {target}"),
        }
    }
}
