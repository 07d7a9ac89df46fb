//! vmtrace's kernel-side programs. They only count: every event is folded
//! into per-CPU maps (histograms, counters, per-node tables) that the
//! collector reads; nothing is streamed per event.
//!
//! One module per signal family, each owning its programs and maps:
//! - `reclaim`: direct and memcg reclaim stalls (begin/end pairs per task);
//! - `entry`: where those reclaims were entered (kernel stack, GFP flags,
//!   order), weighted by stall time;
//! - `lru`: `mm_vmscan_lru_shrink_{inactive,active}` totals per node,
//!   context and LRU type, and reclaim priorities;
//! - `kswapd`: kswapd awake periods per node, and who woke it for which
//!   zone;
//! - `stall`: other reclaim-side waits: slab shrinking, reclaim
//!   throttling, compaction;
//! - `swap`: swap-out (`mm_vmscan_write_folio` of anon folios);
//! - `oom`: OOM victims (`oom:mark_victim`) and the OOM reaper;
//! - `zone`: page allocations per zone (opt-in: a hot path);
//! - `fault`: major-fault counts and, behind an option, fault latency;
//! - `target`: following a process tree (attach by pid or name);
//! - `sched`: where a target span's time went (on a CPU, runnable,
//!   blocked) and the target's I/O-wait sleeps, at the scheduler;
//! - `contention`: who held the CPU while a target task waited for it;
//! - `profile`: the job's kernel stacks sampled on the CPU clock;
//! - `task`: per-task span stamps (task-local storage);
//! - `cgroup`: reclaim stalls per cgroup (`attach --serve`);
//! - `rare`: what the programs could not measure, counted, and logged
//!   with `--debug-probes`.
//!
//! Field offsets of classic tracepoints are not compiled in: userspace reads
//! them from the running kernel's tracefs `format` files and writes them to
//! the read-only global `FIELDS` before loading (see `tracepoint_field`).
#![no_std]
#![no_main]
// Atomic adds on map values (bpfel has no core::sync::atomic); the
// eBPF crate is built with the nightly toolchain anyway (build-std).
#![allow(internal_features)]
#![feature(core_intrinsics)]
// Loads at fixed context offsets (`shared::tracepoint_field`).
#![feature(asm_experimental_arch)]

mod cgroup;
mod contention;
mod entry;
mod fault;
mod kswapd;
mod lru;
mod oom;
mod profile;
mod rare;
mod reclaim;
mod sched;
mod shared;
mod stall;
mod swap;
mod target;
mod task;
mod zone;

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}
