//! Field offsets of the tracepoint records and kernel structs the programs read.

/// Where a field of a classic tracepoint's record lies, as read from the
/// running kernel's tracefs `format` file. `size == 0` means "absent".
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Field {
    pub offset: u16,
    pub size: u16,
}

impl Field {
    pub const ABSENT: Field = Field { offset: 0, size: 0 };
}

/// Tracepoint programs read their record with direct loads at fixed
/// offsets below this (probe-ebpf `shared::tracepoint_field`); a field
/// that ends past it is treated as absent by the planner.
pub const RECORD_READ_LIMIT: u16 = 128;

/// Field offsets of every classic tracepoint vmtrace reads, filled in by the
/// collector from tracefs before the programs are loaded (global `FIELDS`).
/// A field left [`Field::ABSENT`] reads as 0.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fields {
    /// `mm_vmscan_direct_reclaim_end.nr_reclaimed`
    pub direct_reclaim_end_nr_reclaimed: Field,
    /// `mm_vmscan_memcg_reclaim_end.nr_reclaimed`
    pub memcg_reclaim_end_nr_reclaimed: Field,
    /// `mm_vmscan_lru_shrink_inactive.nid`
    pub lru_shrink_inactive_nid: Field,
    /// `mm_vmscan_lru_shrink_inactive.nr_scanned`
    pub lru_shrink_inactive_nr_scanned: Field,
    /// `mm_vmscan_lru_shrink_inactive.nr_reclaimed`
    pub lru_shrink_inactive_nr_reclaimed: Field,
    pub lru_shrink_inactive_nr_dirty: Field,
    pub lru_shrink_inactive_nr_writeback: Field,
    pub lru_shrink_inactive_nr_congested: Field,
    pub lru_shrink_inactive_nr_immediate: Field,
    pub lru_shrink_inactive_nr_activate0: Field,
    pub lru_shrink_inactive_nr_activate1: Field,
    pub lru_shrink_inactive_nr_ref_keep: Field,
    pub lru_shrink_inactive_nr_unmap_fail: Field,
    pub lru_shrink_inactive_priority: Field,
    pub lru_shrink_inactive_reclaim_flags: Field,
    pub lru_shrink_active_nid: Field,
    pub lru_shrink_active_nr_taken: Field,
    pub lru_shrink_active_nr_active: Field,
    pub lru_shrink_active_nr_deactivated: Field,
    pub lru_shrink_active_nr_referenced: Field,
    pub lru_shrink_active_priority: Field,
    pub lru_shrink_active_reclaim_flags: Field,
    /// `mm_vmscan_{direct,memcg}_reclaim_begin.order`
    pub direct_reclaim_begin_order: Field,
    pub memcg_reclaim_begin_order: Field,
    /// `mm_vmscan_{direct,memcg}_reclaim_begin.gfp_flags`
    pub direct_reclaim_begin_gfp_flags: Field,
    pub memcg_reclaim_begin_gfp_flags: Field,
    /// `mm_vmscan_write_folio.reclaim_flags`
    pub write_folio_reclaim_flags: Field,
    /// `oom:mark_victim` fields (rss in kB; comm is a __data_loc string).
    pub mark_victim_pid: Field,
    pub mark_victim_comm: Field,
    pub mark_victim_total_vm: Field,
    pub mark_victim_anon_rss: Field,
    pub mark_victim_file_rss: Field,
    pub mark_victim_shmem_rss: Field,
    /// `mm_vmscan_kswapd_wake` / `_sleep` / `mm_vmscan_wakeup_kswapd`.
    pub kswapd_wake_nid: Field,
    pub kswapd_sleep_nid: Field,
    pub wakeup_kswapd_nid: Field,
    pub wakeup_kswapd_zid: Field,
    pub wakeup_kswapd_order: Field,
    pub wakeup_kswapd_gfp_flags: Field,
    /// `mm_compaction_try_to_compact_pages.order` / `.gfp_mask`.
    pub try_to_compact_pages_order: Field,
    pub try_to_compact_pages_gfp_mask: Field,
    /// `mm_shrink_slab_end.retval` (objects freed).
    pub shrink_slab_end_retval: Field,
    /// `mm_vmscan_throttled.usec_delayed` / `.reason`.
    pub throttled_usec_delayed: Field,
    pub throttled_reason: Field,
    /// `struct task_struct` members, from kernel BTF (not tracefs).
    pub task_min_flt: Field,
    pub task_maj_flt: Field,
    /// `task_struct.delays` (a pointer) and `struct task_delay_info`
    /// members: the kernel's per-task delay accounting.
    pub task_delays: Field,
    pub delay_blkio: Field,
    pub delay_swapin: Field,
    pub delay_freepages: Field,
    pub delay_thrashing: Field,
    pub delay_compact: Field,
    pub delay_wpcopy: Field,
    pub delay_irq: Field,
    /// `task_struct.sched_info` (embedded) and `sched_info.run_delay`.
    pub task_sched_info: Field,
    /// `task_struct.start_time`: CLOCK_MONOTONIC ns at fork, the bound
    /// of every per-task delay.
    pub task_start_time: Field,
    /// `task_struct.tgid` and `.comm` (16 bytes), read by the task
    /// iterator that adds live threads' reclaim stalls to their process.
    pub task_tgid: Field,
    pub task_comm: Field,
    /// `sched_process_fork.child_pid`.
    pub fork_child_pid: Field,
    pub sched_info_run_delay: Field,
    /// `task_struct.in_iowait`, a bitfield: `offset` is the byte that
    /// holds it, `size` the bit's index in that byte (little-endian).
    pub task_in_iowait: Field,
    /// `task_struct.in_memstall`, a bitfield as `task_in_iowait` (PSI:
    /// the task is in a memory stall, psi_memstall_enter).
    pub task_in_memstall: Field,
    /// `task_struct.flags` (PF_*).
    pub task_flags: Field,
    /// `pt_regs.cs` (x86-64: the low two bits are the interrupted
    /// context's privilege level, 3 in user mode). The sampler reads it
    /// at the offset x86-64 has always had it at, 136, and only when
    /// BTF puts it there.
    pub pt_regs_cs: Field,
    /// `thread_info.cpu` (the CPU a task is queued or runs on; with
    /// THREAD_INFO_IN_TASK, `thread_info` is `task_struct`'s first
    /// member) and `task_struct.on_cpu`.
    pub task_cpu: Field,
    pub task_on_cpu: Field,
    /// `task_struct.se` (embedded), `sched_entity.cfs_rq` (a pointer),
    /// `cfs_rq.rq` (a pointer; CONFIG_FAIR_GROUP_SCHED) and
    /// `rq.clock_update_flags`: whether a woken task's run queue will
    /// skip its next clock update (RQCF_REQ_SKIP), as a wake-up that
    /// preempts the CPU's task asks (probe-ebpf `sched`).
    pub task_se: Field,
    pub sched_entity_cfs_rq: Field,
    pub cfs_rq_rq: Field,
    pub rq_clock_update_flags: Field,
    /// `task_struct.cgroups`, `css_set.dfl_cgrp`, `cgroup.self` and
    /// `cgroup_subsys_state.serial_nr`: the serial number of the task's
    /// cgroup (unique, never reused), which keys a reclaim begin's
    /// cached target verdict.
    pub task_cgroups: Field,
    pub css_set_dfl_cgrp: Field,
    pub cgroup_self: Field,
    pub css_serial_nr: Field,
    /// `mm_vmscan_lru_isolate` fields.
    pub lru_isolate_highest_zoneidx: Field,
    pub lru_isolate_nr_requested: Field,
    pub lru_isolate_nr_scanned: Field,
    pub lru_isolate_nr_skipped: Field,
    pub lru_isolate_nr_taken: Field,
    pub lru_isolate_lru: Field,
    /// `oom:reclaim_retry_zone` node and zone.
    pub reclaim_retry_zone_node: Field,
    pub reclaim_retry_zone_zone_idx: Field,
    /// Members read from a `struct request` (BTF) by the swap I/O
    /// programs: `__sector`, `__data_len`, `cmd_flags`, `q`; then
    /// `request_queue.disk` and `gendisk.major` / `.first_minor`.
    pub request_sector: Field,
    pub request_data_len: Field,
    pub request_cmd_flags: Field,
    pub request_q: Field,
    pub request_queue_disk: Field,
    pub gendisk_major: Field,
    pub gendisk_first_minor: Field,
    /// `request.tag` (the driver tag), `request.internal_tag` (the I/O
    /// scheduler's), `request.mq_hctx` and `blk_mq_hw_ctx.queue_num`: the
    /// request's slot in `SWAP_IO`.
    pub request_tag: Field,
    pub request_internal_tag: Field,
    pub request_mq_hctx: Field,
    pub hctx_queue_num: Field,
    /// `kmem:mm_page_alloc` pfn and order.
    pub page_alloc_pfn: Field,
    pub page_alloc_order: Field,
}

impl Fields {
    /// Every field absent (all zero), the compiled-in default.
    // SAFETY: Fields is made of u16s only; all-zero is a valid value.
    pub const ABSENT: Fields = unsafe { core::mem::zeroed() };
}
