//! Readers of the kernel's own files in /proc and /sys: vmstat, the
//! machine's PSI, zoneinfo, mountinfo, meminfo, cpuinfo, fdinfo, zswap's
//! state, the possible NUMA nodes, the processes (/proc/PID/stat) and
//! kswapd's CPU time, the machine's CPU time (/proc/stat), the kernel
//! release. One reader per file; what they parse into, and most
//! parsers, live in the model.

use std::path::Path;

use anyhow::{Context, Result};

use crate::model::{
    counters::MTHP_KEY,
    report::MachineCpu,
    sample::{Psi, ZoneSample, parse_psi, parse_zoneinfo},
    vmstat::VmStat,
};

/// /proc/vmstat now.
pub fn read_vmstat() -> Result<VmStat> {
    let text = std::fs::read_to_string("/proc/vmstat").context("reading /proc/vmstat")?;
    Ok(VmStat::parse(&text))
}

/// A run window's snapshot: /proc/vmstat, its per-CPU parts folded
/// in first (`fold_cpu_differentials`), and, where the kernel has
/// them (6.10+), the per-size mTHP counters of
/// /sys/kernel/mm/transparent_hugepage/hugepages-<size>/stats under
/// `mthp/<size>/<name>` keys (see `model::counters`).
pub fn read_vmstat_window() -> Result<VmStat> {
    fold_cpu_differentials();
    let mut v = read_vmstat()?;
    add_mthp_stats(&mut v, Path::new("/sys/kernel/mm/transparent_hugepage"));
    Ok(v)
}

/// Folds every CPU's pending node and zone counter updates into the
/// totals /proc/vmstat shows (a write to /proc/sys/vm/stat_refresh:
/// mm/vmstat.c vmstat_refresh runs refresh_cpu_vm_stats on each CPU;
/// 4.4+, root only). Without it a node counter such as
/// workingset_refault_anon reaches /proc/vmstat only when a CPU's
/// pending delta passes its stat_threshold (tens of pages per CPU) or
/// that CPU's vmstat_update runs, about once a second and not at all
/// while it idles, so a window's delta could be short by up to that
/// much per CPU at each end: the machine's refaults read fewer than the
/// box's own. Event counters (pgscan, pswpin, pgmajfault) are summed
/// over CPUs on every read and need no fold. A kernel that refuses the
/// write (not root, a read-only /proc/sys) is said once on stderr.
fn fold_cpu_differentials() {
    static SAID: std::sync::Once = std::sync::Once::new();
    if let Err(e) = std::fs::write("/proc/sys/vm/stat_refresh", "1") {
        SAID.call_once(|| {
            eprintln!(
                "vmtrace: notice: /proc/sys/vm/stat_refresh: {e}; node \
                 counters of /proc/vmstat (workingset_*, nr_*) may lag by \
                 up to vm stat_threshold pages per CPU"
            )
        });
    }
}

/// The per-size mTHP event counters vmtrace reports (older names too).
const MTHP_STATS: &[&str] = &[
    "anon_fault_alloc",
    "anon_fault_fallback",
    "swpout",
    "swpout_fallback",
    "anon_swpout",
    "anon_swpout_fallback",
    // Large folios swapped in whole (6.12+): a fault each.
    "swpin",
];

fn add_mthp_stats(v: &mut VmStat, dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(size) = name.strip_prefix("hugepages-") else {
            continue;
        };
        for stat in MTHP_STATS {
            let path = entry.path().join("stats").join(stat);
            if let Some(n) = std::fs::read_to_string(path)
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                v.0.insert(format!("{MTHP_KEY}{size}/{stat}"), n);
            }
        }
    }
}

/// The memory pressure totals of /proc/pressure/memory; None when PSI is
/// off.
pub fn read_psi() -> Option<Psi> {
    parse_psi(&std::fs::read_to_string("/proc/pressure/memory").ok()?)
}

/// The running kernel's release (`uname -r`).
pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Every zone of /proc/zoneinfo (empty zones too: their position within
/// their node is their zone id); empty when unreadable.
pub fn read_zoneinfo() -> Vec<ZoneSample> {
    std::fs::read_to_string("/proc/zoneinfo")
        .map(|z| parse_zoneinfo(&z))
        .unwrap_or_default()
}

/// /proc/self/mountinfo as it is now: the one reader of the file.
pub fn read_mountinfo() -> std::io::Result<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
}

/// /proc/kallsyms, open. Whether it shows addresses is decided when it
/// is opened, by the opener's privileges (kallsyms_open:
/// kallsyms_show_value(file->f_cred)), so it is opened while vmtrace
/// has them and read later (`read_kallsyms`).
pub fn open_kallsyms() -> std::io::Result<std::fs::File> {
    std::fs::File::open("/proc/kallsyms")
}

/// The text of kallsyms open as `file` (`kernel::kallsyms` parses it),
/// from its start, at most 256 MiB (a distribution kernel with its
/// modules has ~6 MB): modules loaded since the open are in it.
pub fn read_kallsyms(file: &std::fs::File) -> std::io::Result<String> {
    use std::io::{Read as _, Seek as _};
    let mut f = file;
    f.seek(std::io::SeekFrom::Start(0))?;
    let mut text = String::new();
    f.take(256 << 20).read_to_string(&mut text)?;
    Ok(text)
}

/// /proc/meminfo as it is now (`model::recording::environment::
/// meminfo_bytes` reads its values); None when unreadable.
pub fn read_meminfo() -> Option<String> {
    std::fs::read_to_string("/proc/meminfo").ok()
}

/// /proc/self/fdinfo/FD (a BPF program's run_time_ns and run_cnt, for
/// one); empty when unreadable.
pub fn read_fdinfo(fd: std::os::fd::RawFd) -> String {
    std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).unwrap_or_default()
}

/// /proc/cpuinfo as it is now; None when unreadable.
pub fn read_cpuinfo() -> Option<String> {
    std::fs::read_to_string("/proc/cpuinfo").ok()
}

/// Whether zswap is on (/sys/module/zswap/parameters/enabled `Y`);
/// None on a kernel without zswap.
pub fn zswap_enabled() -> Option<bool> {
    std::fs::read_to_string(crate::host::sysctl::ZSWAP_SWITCH)
        .ok()
        .map(|s| s.trim().starts_with('Y'))
}

/// The highest possible NUMA node id
/// (/sys/devices/system/node/possible); None when unreadable.
pub fn highest_possible_node() -> Option<u32> {
    std::fs::read_to_string("/sys/devices/system/node/possible")
        .ok()
        .and_then(|s| parse_id_list_max(s.trim()))
}

/// The largest id in a kernel list like `0-3,8`.
pub fn parse_id_list_max(list: &str) -> Option<u32> {
    list.split(',')
        .filter_map(|part| part.rsplit('-').next()?.trim().parse().ok())
        .max()
}

/// What vmtrace reads of a /proc/PID/stat line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcStat {
    pub ppid: u32,
    /// The task's name; it may hold spaces and `)`.
    pub comm: String,
    /// utime + stime, in clock ticks (0 where missing).
    pub cpu_ticks: u64,
}

/// Parses a /proc/PID/stat line: `pid (comm) state ppid ...`, comm
/// between the first `(` and the last `)`.
pub fn parse_stat(stat: &str) -> Option<ProcStat> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    let f: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    let ppid = f.get(1)?.parse().ok()?;
    // After ')': state is field 3, utime 14, stime 15 (1-based).
    let ticks = |i: usize| {
        f.get(i - 3)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Some(ProcStat {
        ppid,
        comm,
        cpu_ticks: ticks(14) + ticks(15),
    })
}

/// Every process (and kernel thread) now: (pid, its /proc/PID/stat).
pub fn processes() -> Vec<(u32, ProcStat)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            Some((pid, parse_stat(&stat)?))
        })
        .collect()
}

/// This machine's name (/proc/sys/kernel/hostname), trimmed.
pub fn hostname() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    Some(name.trim().to_string())
}

/// Whether a process with this pid exists now (/proc/PID).
pub fn pid_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Clock ticks per second of /proc's CPU times (USER_HZ): sysconf's
/// _SC_CLK_TCK, or 100 (every Linux architecture's USER_HZ) when it
/// does not say.
fn user_hz() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { hz as f64 } else { 100.0 }
}

/// CPU time (user + system, seconds) of every kswapd thread, by node.
pub fn kswapd_cpu() -> Vec<(u32, f64)> {
    let hz = user_hz();
    let mut out: Vec<(u32, f64)> = processes()
        .into_iter()
        .filter_map(|(_, s)| {
            let node = s.comm.strip_prefix("kswapd")?.parse::<u32>().ok()?;
            Some((node, s.cpu_ticks as f64 / hz))
        })
        .collect();
    out.sort_by_key(|(n, _)| *n);
    out
}

/// The machine's CPU time so far: the /proc/stat `cpu` line (clock
/// ticks summed over every CPU since boot) and how many `cpuN` lines it
/// sums. A run window reads it when it opens and when it closes;
/// `machine_cpu_between` is what the CPUs did in between.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub cpus: u32,
    /// user, nice, system, idle, iowait, irq, softirq, steal (ticks; a
    /// kernel too old to have a column reads 0 for it). guest and
    /// guest_nice are left out: user and nice already hold them
    /// (kernel/sched/cputime.c account_guest_time).
    pub ticks: [u64; 8],
}

/// Parses /proc/stat's `cpu` line and counts its `cpuN` lines; None
/// without a `cpu` line with at least user, nice, system and idle, or
/// with a column that is not a number.
pub fn parse_cpu_times(text: &str) -> Option<CpuTimes> {
    let mut times: Option<CpuTimes> = None;
    let mut cpus = 0u32;
    for line in text.lines() {
        let mut f = line.split_whitespace();
        match f.next() {
            Some("cpu") => {
                let cols: Vec<u64> = f.map(|v| v.parse().ok()).collect::<Option<_>>()?;
                if cols.len() < 4 {
                    return None;
                }
                let mut ticks = [0u64; 8];
                for (t, v) in ticks.iter_mut().zip(&cols) {
                    *t = *v;
                }
                times = Some(CpuTimes { cpus: 0, ticks });
            }
            Some(name)
                if name
                    .strip_prefix("cpu")
                    .is_some_and(|n| n.parse::<u32>().is_ok()) =>
            {
                cpus += 1;
            }
            _ => {}
        }
    }
    times.map(|t| CpuTimes { cpus, ..t })
}

/// /proc/stat's CPU times now; None when unreadable or unparsable (the
/// run's report then has no machine CPU time).
pub fn read_cpu_times() -> Option<CpuTimes> {
    parse_cpu_times(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// What the CPUs did between two readings of /proc/stat, in seconds
/// (USER_HZ ticks); a column that went backwards (a CPU taken offline
/// takes its ticks with it) reads 0.
pub fn machine_cpu_between(before: &CpuTimes, after: &CpuTimes) -> MachineCpu {
    machine_cpu_from_ticks(before, after, user_hz())
}

fn machine_cpu_from_ticks(before: &CpuTimes, after: &CpuTimes, hz: f64) -> MachineCpu {
    let s = |i: usize| after.ticks[i].saturating_sub(before.ticks[i]) as f64 / hz;
    MachineCpu {
        cpus: after.cpus,
        user_s: s(0),
        nice_s: s(1),
        system_s: s(2),
        idle_s: s(3),
        iowait_s: s(4),
        irq_s: s(5),
        softirq_s: s(6),
        steal_s: s(7),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// /proc/stat of a 2-CPU guest (6.18) with steal time, as read.
    const STAT: &str = include_str!("../../tests/corpus/proc/stat");

    #[test]
    fn proc_stat_of_a_real_machine() {
        let t = parse_cpu_times(STAT).expect("the fixture parses");
        assert_eq!(t.cpus, 2);
        assert_eq!(
            t.ticks,
            [1385102, 34336, 206560, 796963, 53117, 0, 19326, 31437]
        );
        let mut later = t.clone();
        later.ticks[0] += 150;
        later.ticks[2] += 50;
        later.ticks[7] += 10;
        let m = machine_cpu_from_ticks(&t, &later, 100.0);
        assert_eq!(
            (m.cpus, m.user_s, m.system_s, m.steal_s),
            (2, 1.5, 0.5, 0.1)
        );
        assert!((m.busy_s() - 2.1).abs() < 1e-12);
        // Backwards (a CPU went offline): 0, not a wrapped count.
        let m = machine_cpu_from_ticks(&later, &t, 100.0);
        assert_eq!(m.busy_s(), 0.0);
        // This machine's own file reads too.
        let now = read_cpu_times().expect("/proc/stat");
        assert!(now.cpus >= 1 && now.ticks[3] > 0, "{now:?}");
    }

    #[test]
    fn malformed_proc_stat_is_none() {
        assert_eq!(parse_cpu_times(""), None);
        assert_eq!(parse_cpu_times("cpu0 1 2 3 4\nctxt 5\n"), None);
        assert_eq!(parse_cpu_times("cpu  1 2 3\n"), None);
        assert_eq!(parse_cpu_times("cpu  1 2 x 4 5\n"), None);
        assert_eq!(parse_cpu_times("cpu  1 2 -3 4\n"), None);
        // An old kernel's four columns: the rest read 0.
        let t = parse_cpu_times("cpu  1 2 3 4\ncpu0 1 2 3 4\ncpufreq x\n");
        assert_eq!(
            t,
            Some(CpuTimes {
                cpus: 1,
                ticks: [1, 2, 3, 4, 0, 0, 0, 0]
            })
        );
    }

    #[test]
    fn node_list_max() {
        assert_eq!(parse_id_list_max("0"), Some(0));
        assert_eq!(parse_id_list_max("0-3,8"), Some(8));
        assert_eq!(parse_id_list_max("0-1"), Some(1));
        assert_eq!(parse_id_list_max(""), None);
    }

    #[test]
    fn this_machines_files_read() {
        let zones = read_zoneinfo();
        assert!(zones.iter().any(|z| z.managed > 0), "{zones:?}");
        assert!(read_mountinfo().is_ok_and(|m| m.contains(" / ")));
        assert!(read_meminfo().is_some_and(|m| m.contains("MemTotal:")));
        assert!(highest_possible_node().is_some());
    }

    #[test]
    fn stat_lines_with_odd_names() {
        let stat = |ppid, comm: &str, cpu_ticks| {
            Some(ProcStat {
                ppid,
                comm: comm.into(),
                cpu_ticks,
            })
        };
        assert_eq!(parse_stat("42 (cc1) S 41 42 41 0 -1"), stat(41, "cc1", 0));
        assert_eq!(parse_stat("7 (a (b) c) R 1 7 7"), stat(1, "a (b) c", 0));
        let kswapd = "91 (kswapd0) S 2 0 0 0 -1 2129984 0 0 0 0 1234 567 0 0 20 0 1 0";
        assert_eq!(parse_stat(kswapd), stat(2, "kswapd0", 1801));
        assert_eq!(parse_stat("garbage"), None);
        assert!(pid_exists(std::process::id()));
    }

    #[test]
    fn kswapd_threads_are_found() {
        // Every Linux machine with memory has a kswapd per node.
        let cpu = kswapd_cpu();
        assert!(!cpu.is_empty());
        assert!(cpu.iter().all(|(_, s)| *s >= 0.0));
    }
}
