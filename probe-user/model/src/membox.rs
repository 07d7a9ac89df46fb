//! What a run's memory box was and what it saw: its limits, peak and
//! memory.stat, and its own pressure (memory.pressure) and memory-cgroup
//! events over the run, as the report and the recording hold them.

use serde::{Deserialize, Serialize};

use crate::sample::Psi;

/// The cgroup hierarchy the memory box was made in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersion {
    V1,
    V2,
}

/// What the box saw, as reported.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BoxReport {
    pub name: String,
    pub cgroup_version: Option<CgroupVersion>,
    pub mem_limit_bytes: Option<u64>,
    pub swap_bytes: Option<u64>,
    pub swapfile: Option<String>,
    pub peak_bytes: Option<u64>,
    /// Tasks the memory cgroup's OOM killer killed (None: kernel too old).
    pub oom_kills: Option<u64>,
    pub memory_stat: std::collections::BTreeMap<String, u64>,
    /// The box's own memory pressure over the run: the PSI totals
    /// (microseconds) of `memory.pressure` in the command's cgroup v2
    /// group, end minus start. kernel/sched/psi.c (6.1, 6.12, 6.18):
    /// a cgroup's group counts a task of its subtree (task_psi_group ->
    /// task_dfl_cgroup, the v2 cgroup even where the memory controller
    /// is v1) while it is in psi_memstall_enter/leave: memcg and direct
    /// reclaim (try_charge_memcg around try_to_free_mem_cgroup_pages in
    /// mm/memcontrol.c), compaction, reads and waits of refaulting
    /// workingset pages (swap_readpage, folio_wait_bit_common). Per
    /// CPU, `some` is the time at least one such task of the group was
    /// stalled there and `full` the time every non-idle one was; the
    /// total is the average of the CPUs' times weighted by each CPU's
    /// non-idle time (collect_percpu_times, "normalized to wallclock
    /// time"), so it need not equal the sum of the tasks' stalls: two
    /// runs here of one hog on 2 CPUs had memcg reclaim stalls of
    /// 0.78 s and 0.445 s, and some 0.57 s and 0.447 s. psi_show collects the per-CPU times on read, so a total is
    /// current to the read. None: no memory limit (no box), no cgroup
    /// v2, or PSI off.
    #[serde(default)]
    pub pressure: Option<Psi>,
    /// The job's cgroup v2 group's CPU and I/O pressure over the run
    /// (`cpu.pressure`, `io.pressure`; end minus start, us), box or
    /// not: a second, kernel-measured reading of its waits. psi.c counts
    /// a task in `some` of CPU while it is runnable and not running
    /// (TSK_RUNNING beyond TSK_ONCPU) and of I/O while it sleeps in
    /// io_schedule (in_iowait: TSK_IOWAIT), 6.1 to 6.18; per CPU and
    /// weighted by non-idle time, as for memory. For one thread
    /// they are its run_delay and its I/O waits. None: no cgroup v2
    /// group, or PSI off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_pressure: Option<Psi>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_pressure: Option<Psi>,
    /// The file `pressure` was read from (the cgroup's path).
    #[serde(default)]
    pub pressure_file: Option<String>,
    /// The memory cgroup's event counters over the run (end minus
    /// start), by the kernel's names. cgroup v2 `memory.events`
    /// (__memory_events_show, mm/memcontrol.c): `max` = a charge found
    /// the box at its limit and went to reclaim (try_charge_memcg, once
    /// per attempt that reclaims), `high` = over memory.high, `oom` =
    /// the memcg OOM killer was invoked (mem_cgroup_oom), `oom_kill` =
    /// a task of the box was killed (oom_kill_process ->
    /// memcg_memory_event_mm), `low`, `oom_group_kill` and, since 6.13,
    /// `sock_throttled`. cgroup v1 has no memory.events: `failcnt` =
    /// `memory.failcnt`, charges page_counter_try_charge refused at the
    /// limit (each try, batch retries included, so more than v2's
    /// `max`); `memsw.failcnt` the same for memory+swap (when swap
    /// accounting is on); `oom_kill` from `memory.oom_control`
    /// (mem_cgroup_oom_control_read, the same MEMCG_OOM_KILL counter
    /// as v2's).
    #[serde(default)]
    pub events: std::collections::BTreeMap<String, u64>,
    /// The files `events` came from, as the report names them.
    #[serde(default)]
    pub events_source: Option<String>,
}
