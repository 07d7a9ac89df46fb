//! The machine a recording was made on: what a reviewer asks before
//! believing a number (kernel, boot command line, CPUs, memory, swap, the
//! VM sysctls, THP and mTHP, zswap, multi-gen LRU, the kernel's
//! delay-accounting semantics, the job directory's file system), and the
//! pure parsers of the /proc and /sys text it is made from; reading the
//! machine is `host::environment`'s. Fields added later read as unknown
//! from older recordings (serde defaults).

use std::{collections::BTreeMap, path::Path};

use serde::{Deserialize, Serialize};

/// The VM sysctls that change reclaim and swap behaviour.
pub const VM_SYSCTLS: &[&str] = &[
    "swappiness",
    "page-cluster",
    "watermark_scale_factor",
    "watermark_boost_factor",
    "min_free_kbytes",
    "overcommit_memory",
    "overcommit_ratio",
    "zone_reclaim_mode",
    "dirty_ratio",
    "dirty_background_ratio",
    "vfs_cache_pressure",
];

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SwapDevice {
    pub name: String,
    /// partition or file
    pub kind: String,
    pub size_bytes: u64,
    pub priority: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Environment {
    pub hostname: String,
    pub kernel_release: String,
    /// /proc/version: the build of the kernel (compiler, date).
    pub kernel_version: String,
    pub boot_cmdline: String,
    pub cpu_model: String,
    pub cpus: u32,
    pub mem_total_bytes: u64,
    /// Swap areas active before vmtrace added its own.
    pub swap_devices: Vec<SwapDevice>,
    /// vm.* sysctls by name (without the `vm.`); missing ones left out.
    pub vm_sysctls: BTreeMap<String, String>,
    /// Selected modes of /sys/kernel/mm/transparent_hugepage/{enabled,defrag}.
    pub thp_enabled: Option<String>,
    pub thp_defrag: Option<String>,
    /// zswap enabled (Y/N) and its compressor, when built in.
    pub zswap_enabled: Option<String>,
    pub zswap_compressor: Option<String>,
    /// /sys/kernel/mm/lru_gen/enabled (multi-gen LRU; 0x0000 = off).
    pub mglru: Option<String>,
    /// Selected mode of each mTHP size,
    /// /sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/enabled,
    /// by size (`64kB`); empty on kernels without mTHP (before 6.8).
    #[serde(default)]
    pub mthp_enabled: BTreeMap<String, String>,
    /// What the kernel's delay accounting books as swap-in and block I/O,
    /// derived from the kernel release (see `DelayAccounting`).
    #[serde(default)]
    pub delay_accounting: DelayAccounting,
    /// The file system type (`ext4`, `tmpfs`, `9p`) of the directory the
    /// job ran in, from /proc/self/mountinfo.
    #[serde(default)]
    pub job_fs: Option<String>,
    /// In a `vmtrace kernels` guest: what the job's files were read
    /// from (the guest image on a block device, or 9p), as the guest's
    /// job said (VMTRACE_GUEST_STORAGE); None on a machine of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_storage: Option<String>,
    /// How the kernel books CPU time the tasks did not use themselves
    /// (None where its configuration could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_time_accounting: Option<CpuTimeAccounting>,
}

/// What a task's CPU time holds besides the task's own work, from the
/// kernel's configuration (kernel/sched/core.c update_rq_clock_task and
/// kernel/sched/cputime.c, 6.1 to 6.18 alike):
/// - `irq_time`: CONFIG_IRQ_TIME_ACCOUNTING takes the time spent in
///   interrupts out of the clock the running task is charged by (and
///   books it as the task's irq delay, 6.5+); without it the task an
///   interrupt hit is charged for it, and /proc/stat's irq and softirq
///   columns are tick samples;
/// - `steal_time`: a guest (the CPU's `hypervisor` flag) whose kernel
///   has CONFIG_PARAVIRT_TIME_ACCOUNTING takes the host's steal out of
///   that clock too; a guest without it charges steal to its tasks.
///
/// Two kernels that differ here give the job's CPU time and the
/// machine's interrupts (or steal) different meanings: see the guards.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuTimeAccounting {
    pub irq_time: bool,
    /// Running under a hypervisor.
    pub guest: bool,
    pub steal_time: bool,
}

impl CpuTimeAccounting {
    /// From kernel configuration text (`.config`, /proc/config.gz) and
    /// /proc/cpuinfo; None when `config` holds no configuration.
    pub fn of(config: &str, cpuinfo: &str) -> Option<CpuTimeAccounting> {
        let on = |name: &str| {
            let want = format!("CONFIG_{name}=y");
            config.lines().any(|l| l.trim() == want)
        };
        if !config.lines().any(|l| l.starts_with("CONFIG_")) {
            return None;
        }
        let guest = cpuinfo.lines().any(|l| {
            l.split_once(':').is_some_and(|(k, v)| {
                k.trim() == "flags" && v.split_whitespace().any(|f| f == "hypervisor")
            })
        });
        Some(CpuTimeAccounting {
            irq_time: on("IRQ_TIME_ACCOUNTING"),
            guest,
            steal_time: guest && on("PARAVIRT_TIME_ACCOUNTING"),
        })
    }

    /// How interrupts are booked, as the guard prints it.
    pub fn irq_line(&self) -> &'static str {
        irq_line(self.irq_time)
    }

    /// How steal is booked.
    pub fn steal(&self) -> StealBooking {
        match (self.guest, self.steal_time) {
            (false, _) => StealBooking::BareMetal,
            (true, true) => StealBooking::GuestOutOfTaskTime,
            (true, false) => StealBooking::GuestInTaskTime,
        }
    }

    /// How steal is booked, as the guard prints it.
    pub fn steal_line(&self) -> &'static str {
        self.steal().line()
    }
}

/// How interrupts are booked (`CpuTimeAccounting::irq_time`), as the
/// guard prints it.
pub fn irq_line(irq_time: bool) -> &'static str {
    if irq_time {
        "out of task time"
    } else {
        "in task time (ticks)"
    }
}

/// Where a machine's steal time goes (`CpuTimeAccounting::steal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StealBooking {
    /// No hypervisor: no steal.
    BareMetal,
    GuestOutOfTaskTime,
    GuestInTaskTime,
}

impl StealBooking {
    /// As the guard prints it.
    pub fn line(self) -> &'static str {
        match self {
            StealBooking::BareMetal => "no host (bare metal)",
            StealBooking::GuestOutOfTaskTime => "guest, out of task time",
            StealBooking::GuestInTaskTime => "guest, in task time",
        }
    }
}

/// A THP mode as /sys/kernel/mm/transparent_hugepage/enabled and each
/// size's hugepages-<size>kB/enabled select it (mm/huge_memory.c); a
/// word this vmtrace does not know is kept as the kernel wrote it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThpMode {
    Always,
    Madvise,
    Never,
    /// A size's: the PMD size's mode (`enabled`).
    Inherit,
    Other(String),
}

impl ThpMode {
    /// The kernel's word (`never`).
    pub fn parse(word: &str) -> ThpMode {
        match word {
            "always" => ThpMode::Always,
            "madvise" => ThpMode::Madvise,
            "never" => ThpMode::Never,
            "inherit" => ThpMode::Inherit,
            other => ThpMode::Other(other.into()),
        }
    }

    /// As the kernel writes it.
    pub fn name(&self) -> &str {
        match self {
            ThpMode::Always => "always",
            ThpMode::Madvise => "madvise",
            ThpMode::Never => "never",
            ThpMode::Inherit => "inherit",
            ThpMode::Other(word) => word,
        }
    }
}

/// The PMD size of x86-64 (4 KiB pages): the THP size whose mTHP mode
/// `inherit` is the `enabled` mode itself.
pub const PMD_SIZE_KB: u64 = 2048;

/// An mTHP size's key (`64kB`) in kB.
pub fn mthp_size_kb(key: &str) -> Option<u64> {
    key.strip_suffix("kB")?.parse().ok()
}

/// Which waits the kernel's per-task delay accounting (kernel/delayacct.c,
/// taskstats) books under "swap-in", "block I/O" and "thrashing": the
/// categories moved between kernels. Read in the sources:
/// - before 5.19, do_swap_page (mm/memory.c) set DELAYACCT_PF_SWAPIN, and
///   __delayacct_blkio_end booked the I/O waits of the whole swap-in
///   fault as swap-in, not as block I/O;
/// - 6.1 (mm/page_io.c swap_readpage): delayacct_swapin_start/end wrap
///   the read call, and a workingset page's read is also booked as
///   thrashing (delayacct_thrashing_start). An ordinary (async) read
///   returns after submitting the bio and the fault waits for the page
///   lock (folio_wait_bit_common -> io_schedule: block I/O); but when the
///   readahead window is one page (page-cluster 0, or swapin_nr_pages
///   shrunk to 1) swap_cluster_readahead reads with do_poll and the read
///   call itself waits in blk_io_schedule, inside the swap-in window.
///   Block I/O waits are stamped for prev in __schedule
///   (kernel/sched/core.c: delayacct_blkio_start while prev is current);
/// - 6.12 and 6.18 (mm/page_io.c swap_read_folio): the read call and
///   workingset thrashing as in 6.1, no polled read; block I/O is stamped
///   in __block_task, which under delayed dequeue runs inside another
///   task's pick, so delayacct_blkio_start stamps `current`, not the
///   blocking task: some waits are booked from stale stamps, some never.
///
/// Kernels between 5.19 and 6.0 and between 6.2 and 6.11 were not read:
/// Unknown. `SwapinReadCall` and `SwapinReadCallThrashing` are what
/// older recordings said of 6.1 and 6.12+ (the 6.1 one wrongly: it books
/// thrashing too); `of_release` gives the current reading.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DelayAccounting {
    /// Not read for this kernel, or an older recording.
    #[default]
    Unknown,
    /// Before 5.19: swap-in holds the fault's whole I/O wait.
    SwapinWholeWait,
    /// Older recordings of 6.1 (see the type's comment).
    SwapinReadCall,
    /// Older recordings of 6.12 and later.
    SwapinReadCallThrashing,
    /// 6.1: swap-in is the read call (polled for a one-page window),
    /// block I/O stamped for prev in __schedule.
    SwapinPolledBlkioSchedule,
    /// 6.12 on: swap-in is the read call, block I/O stamped in
    /// __block_task (delayed dequeue).
    SwapinReadCallBlkioBlockTask,
}

impl DelayAccounting {
    /// The semantics of a kernel release (`6.12.57+deb12-amd64`).
    pub fn of_release(release: &str) -> DelayAccounting {
        match kernel_version(release) {
            None => DelayAccounting::Unknown,
            Some(v) if v < (5, 19) => DelayAccounting::SwapinWholeWait,
            Some((6, 1)) => DelayAccounting::SwapinPolledBlkioSchedule,
            Some(v) if v >= (6, 12) => DelayAccounting::SwapinReadCallBlkioBlockTask,
            Some(_) => DelayAccounting::Unknown,
        }
    }

    /// A short name for the comparison's lines.
    pub fn name(self) -> &'static str {
        match self {
            DelayAccounting::Unknown => "unknown",
            DelayAccounting::SwapinWholeWait => "swap-in holds the I/O wait",
            DelayAccounting::SwapinReadCall => "swap-in is the read call",
            DelayAccounting::SwapinReadCallThrashing => "read call, thrashing too",
            DelayAccounting::SwapinPolledBlkioSchedule => {
                "1-page swap reads polled, blkio stamped in __schedule"
            }
            DelayAccounting::SwapinReadCallBlkioBlockTask => "blkio stamped in __block_task",
        }
    }
}

/// (major, minor) of a kernel release string.
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// Boot parameters `Environment::redact` keeps: those that change
/// memory management or what vmtrace measures (a name ending in `.` or
/// `_` is a prefix). The rest (root=, BOOT_IMAGE=, console=, ip=, ...)
/// name the machine more than the kernel's behaviour.
const MM_BOOT_PARAMS: &[&str] = &[
    "mem",
    "memmap",
    "movablecore",
    "kernelcore",
    "hugepages",
    "hugepagesz",
    "default_hugepagesz",
    "hugetlb_",
    "transparent_hugepage",
    "thp_anon",
    "numa",
    "numa_balancing",
    "zswap.",
    "lru_gen",
    "cgroup_",
    "swapaccount",
    "psi",
    "delayacct",
    "page_alloc.",
    "init_on_alloc",
    "init_on_free",
    "cma",
    "memhp_default_state",
    "mitigations",
    "isolcpus",
    "nohz_full",
    "maxcpus",
    "nr_cpus",
    "vmtrace.",
];

impl Environment {
    /// Whether the multi-gen LRU is on: bit 0 (LRU_GEN_CORE) of
    /// lru_gen/enabled's capabilities (`0x0007`, mm/vmscan.c
    /// show_enabled); off where not recorded or not a number.
    pub fn mglru_on(&self) -> bool {
        self.mglru.as_deref().is_some_and(|v| {
            u32::from_str_radix(v.trim_start_matches("0x"), 16).is_ok_and(|caps| caps & 1 != 0)
        })
    }

    /// The PMD-size THP mode (`thp_enabled`), None where not recorded.
    pub fn thp_mode(&self) -> Option<ThpMode> {
        self.thp_enabled.as_deref().map(ThpMode::parse)
    }

    /// For a recording or report meant for a mailing list (`export
    /// --redact`): the host name goes, and of the boot command line only
    /// the parameters of `MM_BOOT_PARAMS` stay, with a count of the rest.
    pub fn redact(&mut self) {
        self.hostname = "(redacted)".into();
        let mut kept = Vec::new();
        let mut dropped = 0;
        for param in self.boot_cmdline.split_whitespace() {
            let key = param.split_once('=').map_or(param, |(k, _)| k);
            let keep = MM_BOOT_PARAMS.iter().any(|p| {
                key == *p || ((p.ends_with('.') || p.ends_with('_')) && key.starts_with(p))
            });
            if keep {
                kept.push(param);
            } else {
                dropped += 1;
            }
        }
        let mut line = kept.join(" ");
        if dropped > 0 {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&format!("({dropped} other parameters redacted)"));
        }
        self.boot_cmdline = line;
    }

    /// The differences between two machines, each with its typed key
    /// (empty: comparable).
    pub fn differences(&self, other: &Environment) -> Vec<Difference> {
        let mut out = Vec::new();
        let mut cmp = |key: EnvKey, a: String, b: String| {
            if a != b {
                out.push(Difference { key, a, b });
            }
        };
        cmp(EnvKey::Host, self.hostname.clone(), other.hostname.clone());
        cmp(EnvKey::Cpus, self.cpus.to_string(), other.cpus.to_string());
        cmp(
            EnvKey::CpuModel,
            self.cpu_model.clone(),
            other.cpu_model.clone(),
        );
        cmp(
            EnvKey::Memory,
            crate::units::human(self.mem_total_bytes),
            crate::units::human(other.mem_total_bytes),
        );
        for (k, v) in &self.vm_sysctls {
            if let Some(w) = other.vm_sysctls.get(k) {
                cmp(EnvKey::VmSysctl(k.clone()), v.clone(), w.clone());
            }
        }
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".into());
        cmp(EnvKey::Thp, opt(&self.thp_enabled), opt(&other.thp_enabled));
        cmp(
            EnvKey::Zswap,
            opt(&self.zswap_enabled),
            opt(&other.zswap_enabled),
        );
        cmp(EnvKey::Mglru, opt(&self.mglru), opt(&other.mglru));
        // Unknown in older recordings: compared only where both know.
        if !self.mthp_enabled.is_empty() && !other.mthp_enabled.is_empty() {
            cmp(
                EnvKey::MthpSizes,
                mthp_line(&self.mthp_enabled),
                mthp_line(&other.mthp_enabled),
            );
        }
        if let (Some(a), Some(b)) = (&self.job_fs, &other.job_fs) {
            cmp(EnvKey::JobFs, a.clone(), b.clone());
        }
        if let (Some(a), Some(b)) = (&self.cpu_time_accounting, &other.cpu_time_accounting) {
            cmp(EnvKey::Interrupts, a.irq_line().into(), b.irq_line().into());
            cmp(EnvKey::Steal, a.steal_line().into(), b.steal_line().into());
        }
        if self.guest_storage.is_some() || other.guest_storage.is_some() {
            cmp(
                EnvKey::GuestStorage,
                opt(&self.guest_storage),
                opt(&other.guest_storage),
            );
        }
        out
    }
}

/// What two recordings' machines differ in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvKey {
    Host,
    Cpus,
    CpuModel,
    Memory,
    /// A vm.* sysctl, by its name after `vm.`.
    VmSysctl(String),
    Thp,
    Zswap,
    Mglru,
    MthpSizes,
    JobFs,
    Interrupts,
    Steal,
    GuestStorage,
}

impl EnvKey {
    /// As printed.
    pub fn label(&self) -> String {
        match self {
            EnvKey::Host => "host".into(),
            EnvKey::Cpus => "CPUs".into(),
            EnvKey::CpuModel => "CPU".into(),
            EnvKey::Memory => "memory".into(),
            EnvKey::VmSysctl(k) => format!("vm.{k}"),
            EnvKey::Thp => "THP".into(),
            EnvKey::Zswap => "zswap".into(),
            EnvKey::Mglru => "MGLRU".into(),
            EnvKey::MthpSizes => "THP sizes (mTHP)".into(),
            EnvKey::JobFs => "job file system".into(),
            EnvKey::Interrupts => "interrupts".into(),
            EnvKey::Steal => "steal".into(),
            EnvKey::GuestStorage => "guest storage".into(),
        }
    }

    /// A memory-management setting, the point of an A/B (compare lists it
    /// as one), rather than a different machine (a warning).
    pub fn is_setting(&self) -> bool {
        match self {
            EnvKey::VmSysctl(_)
            | EnvKey::Thp
            | EnvKey::Zswap
            | EnvKey::Mglru
            | EnvKey::MthpSizes => true,
            EnvKey::Host
            | EnvKey::Cpus
            | EnvKey::CpuModel
            | EnvKey::Memory
            | EnvKey::JobFs
            | EnvKey::Interrupts
            | EnvKey::Steal
            | EnvKey::GuestStorage => false,
        }
    }
}

/// One difference: `key: a vs b` when printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    pub key: EnvKey,
    pub a: String,
    pub b: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} vs {}", self.key.label(), self.a, self.b)
    }
}

/// `64kB=never 2048kB=inherit`, the sizes not `never` only (or `never`).
pub fn mthp_line(m: &BTreeMap<String, String>) -> String {
    let on: Vec<String> = m
        .iter()
        .filter(|(_, v)| ThpMode::parse(v) != ThpMode::Never)
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if on.is_empty() {
        "never".into()
    } else {
        on.join(" ")
    }
}

/// The file system type of the mount holding `path`, from the text of
/// /proc/self/mountinfo: the longest mount point that is a prefix of it
/// (the later of equal ones: it is mounted over the earlier).
pub fn fs_type_of(mountinfo: &str, path: &Path) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (Some(point), Some(dash)) = (fields.get(4), fields.iter().position(|f| *f == "-"))
        else {
            continue;
        };
        let Some(fstype) = fields.get(dash + 1) else {
            continue;
        };
        let point = point.replace("\\040", " ");
        if !path.starts_with(&point) {
            continue;
        }
        let len = Path::new(&point).components().count();
        if best.as_ref().is_none_or(|(l, _)| len >= *l) {
            best = Some((len, fstype.to_string()));
        }
    }
    best.map(|(_, t)| t)
}

/// `always madvise [never]` -> `never`.
pub fn selected(modes: &str) -> String {
    modes
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or(modes)
        .to_string()
}

/// The `model name` of /proc/cpuinfo text.
pub fn cpu_model(cpuinfo: &str) -> String {
    cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "model name").then(|| v.trim().to_string())
        })
        .unwrap_or_default()
}

/// The number of `processor` entries of /proc/cpuinfo text.
pub fn cpus(cpuinfo: &str) -> u32 {
    let n = cpuinfo
        .lines()
        .filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor"))
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A /proc/meminfo value (`Zswap:   1234 kB`, key `Zswap`) in bytes.
pub fn meminfo_bytes(meminfo: &str, key: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        if k != key {
            return None;
        }
        let kb: u64 = v.split_whitespace().next()?.parse().ok()?;
        Some(kb * 1024)
    })
}

/// /proc/swaps rows (sizes are KiB there).
pub fn parse_swaps(text: &str) -> Vec<SwapDevice> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 5 {
                return None;
            }
            Some(SwapDevice {
                name: f[0].to_string(),
                kind: f[1].to_string(),
                size_bytes: f[2].parse::<u64>().ok()? * 1024,
                priority: f[4].parse().ok()?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn redacting_keeps_the_memory_parameters_and_drops_the_host() {
        let mut e = Environment {
            hostname: "build-17.example.com".into(),
            boot_cmdline: "BOOT_IMAGE=/vmlinuz root=UUID=1234 ro mem=64M \
                           transparent_hugepage=never zswap.enabled=1 quiet"
                .into(),
            ..Default::default()
        };
        e.redact();
        assert_eq!(e.hostname, "(redacted)");
        assert_eq!(
            e.boot_cmdline,
            "mem=64M transparent_hugepage=never zswap.enabled=1 \
             (4 other parameters redacted)"
        );
        let mut none = Environment::default();
        none.redact();
        assert_eq!(none.boot_cmdline, "");
    }

    use super::*;

    #[test]
    fn parses_the_pieces() {
        assert_eq!(selected("always [madvise] never"), "madvise");
        assert_eq!(selected("never"), "never");
        let cpuinfo = "processor\t: 0\nmodel name\t: AMD EPYC 9B14\n\nprocessor\t: 1\n\
                       model name\t: AMD EPYC 9B14\n";
        assert_eq!(cpu_model(cpuinfo), "AMD EPYC 9B14");
        assert_eq!(cpus(cpuinfo), 2);
        assert_eq!(
            meminfo_bytes("MemTotal:       24596348 kB\nMemFree: 1 kB\n", "MemTotal"),
            Some(24596348 * 1024)
        );
        let swaps = parse_swaps(
            "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
             /var/tmp/vmtrace-1.swap                 file\t\t1048572\t\t0\t\t-2\n",
        );
        assert_eq!(
            swaps,
            vec![SwapDevice {
                name: "/var/tmp/vmtrace-1.swap".into(),
                kind: "file".into(),
                size_bytes: 1048572 * 1024,
                priority: -2,
            }]
        );
    }

    #[test]
    fn thp_modes_and_lru_gen_read_as_typed_values() {
        for word in ["always", "madvise", "never", "inherit", "defer+madvise"] {
            assert_eq!(ThpMode::parse(word).name(), word);
        }
        assert_eq!(ThpMode::parse("never"), ThpMode::Never);
        assert_eq!(ThpMode::parse("Never"), ThpMode::Other("Never".into()));
        assert_eq!(mthp_size_kb("2048kB"), Some(PMD_SIZE_KB));
        assert_eq!(mthp_size_kb("64k"), None);
        let on = |caps: Option<&str>| {
            Environment {
                mglru: caps.map(str::to_string),
                ..Default::default()
            }
            .mglru_on()
        };
        assert!(on(Some("0x0007")) && on(Some("0x0001")));
        assert!(!on(Some("0x0006")) && !on(Some("0x0000")) && !on(Some("y")) && !on(None));
        let guest = CpuTimeAccounting {
            guest: true,
            ..Default::default()
        };
        assert_eq!(guest.steal(), StealBooking::GuestInTaskTime);
        assert_eq!(guest.steal_line(), "guest, in task time");
    }

    #[test]
    fn finds_the_file_system_and_the_delay_accounting() {
        let mountinfo = "22 1 0:21 / / rw,relatime - ext4 /dev/vda1 rw\n\
                         23 22 0:22 / /tmp rw - tmpfs tmpfs rw\n\
                         24 22 0:23 / /tmp/x rw - 9p host rw\n";
        assert_eq!(
            fs_type_of(mountinfo, Path::new("/tmp/x/y")),
            Some("9p".into())
        );
        assert_eq!(
            fs_type_of(mountinfo, Path::new("/tmp/xy")),
            Some("tmpfs".into())
        );
        assert_eq!(
            fs_type_of(mountinfo, Path::new("/home")),
            Some("ext4".into())
        );
        assert_eq!(fs_type_of("", Path::new("/")), None);
        use DelayAccounting::*;
        for (release, want) in [
            ("5.15.0-91-generic", SwapinWholeWait),
            ("6.1.0-57-amd64", SwapinPolledBlkioSchedule),
            ("6.6.3", Unknown),
            ("6.12.57+deb12-amd64", SwapinReadCallBlkioBlockTask),
            ("6.18.44-fc-v669", SwapinReadCallBlkioBlockTask),
            ("", Unknown),
        ] {
            assert_eq!(DelayAccounting::of_release(release), want, "{release}");
        }
    }
}
