//! Rare events: what a program could not measure (an end without its
//! begin, a task the kernel gave no storage cell, a full map, a node id
//! out of range, a wake-up not seen). Each is counted in its `Counter`,
//! which the recording keeps (`count_rare!`, one call per place). With
//! `--debug-probes` (the read-only global `DEBUG_PROBES`) each is also
//! sent as one line through aya-log: the counter's name, the task on the
//! CPU (command, process and thread id) and, where the place knows it,
//! the map, span or value involved. Userspace prints the lines on stderr
//! (`kernel::probes::debug_log`).
//!
//! Off, the line costs nothing at run time: `DEBUG_PROBES` is frozen
//! .rodata, so the verifier knows its value, follows only the branch
//! taken, and removes the logging code it never visited before the
//! program is JITed.

use aya_ebpf::helpers::{bpf_get_current_comm, bpf_get_current_pid_tgid};

/// `--debug-probes`: log each rare event (written by userspace at load).
#[unsafe(no_mangle)]
static DEBUG_PROBES: u32 = 0;

#[inline(always)]
pub fn debug_probes() -> bool {
    // SAFETY: a plain read of a read-only global; volatile so that the
    // compiler does not fold the compile-time default into the code.
    unsafe { core::ptr::read_volatile(&DEBUG_PROBES) != 0 }
}

/// The task on this CPU: process id (tgid), thread id and command, the
/// command's bytes outside printable ASCII made '?' (the NUL padding
/// kept): aya-log sends it as a `str`, and userspace refuses a record
/// that is not UTF-8. A command is whatever its task set (prctl).
#[inline(always)]
pub fn whom() -> (u32, u32, [u8; 16]) {
    let id = bpf_get_current_pid_tgid();
    let mut comm = bpf_get_current_comm().unwrap_or([0; 16]);
    for b in comm.iter_mut() {
        if *b != 0 && !(0x20..0x7f).contains(b) {
            *b = b'?';
        }
    }
    ((id >> 32) as u32, id as u32, comm)
}

/// `count_rare!(Counter::X)`, `count_rare!(Counter::X, "what")`,
/// `count_rare!(Counter::X, "what", value)` or with a second "what",
/// value pair: adds 1 to the counter and, with `--debug-probes`, logs
/// `x: COMM pid P tid T (what value)`. The counter must be a constant
/// (its name is copied into the line at a fixed length), each `what` a
/// literal, each value a number (sent as u64).
macro_rules! count_rare {
    (@line $n:ident, $c:ident, $p:ident, $t:ident) => {
        aya_log_ebpf::warn!(&(), "{}: {} pid {} tid {}", $n, $c, $p, $t)
    };
    (@line $n:ident, $c:ident, $p:ident, $t:ident, $what:literal) => {
        aya_log_ebpf::warn!(&(), "{}: {} pid {} tid {} ({})", $n, $c, $p, $t, $what)
    };
    (@line $n:ident, $c:ident, $p:ident, $t:ident, $what:literal, $value:expr) => {
        aya_log_ebpf::warn!(
            &(),
            "{}: {} pid {} tid {} ({} {})",
            $n,
            $c,
            $p,
            $t,
            $what,
            ($value) as u64
        )
    };
    (@line $n:ident, $c:ident, $p:ident, $t:ident, $w1:literal, $v1:expr, $w2:literal, $v2:expr) => {
        aya_log_ebpf::warn!(
            &(),
            "{}: {} pid {} tid {} ({} {} {} {})",
            $n,
            $c,
            $p,
            $t,
            $w1,
            ($v1) as u64,
            $w2,
            ($v2) as u64
        )
    };
    ($counter:expr $(, $what:literal $(, $value:expr $(, $what2:literal, $value2:expr)?)?)? $(,)?) => {{
        $crate::shared::count($counter, 1);
        if $crate::rare::debug_probes() {
            const NAME: &str = $counter.name();
            let (pid, tid, comm) = $crate::rare::whom();
            // SAFETY: `whom` leaves only ASCII in the command.
            let comm = unsafe { core::str::from_utf8_unchecked(&comm) };
            $crate::rare::count_rare!(
                @line NAME, comm, pid, tid $(, $what $(, $value $(, $what2, $value2)?)?)?
            );
        }
    }};
}
pub(crate) use count_rare;
