//! The machine a recording was made on: what a reviewer asks before
//! believing a number (kernel, boot command line, CPUs, memory, swap, the
//! VM sysctls, THP, zswap, multi-gen LRU). Read from a root directory so
//! that tests can point it at a snapshot.

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

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SwapDevice {
    pub name: String,
    /// partition or file
    pub kind: String,
    pub size_bytes: u64,
    pub priority: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
}

impl Environment {
    /// Reads the running machine.
    pub fn capture() -> Environment {
        Environment::capture_at(Path::new("/"))
    }

    /// Reads a machine whose /proc and /sys are under `root`.
    pub fn capture_at(root: &Path) -> Environment {
        let read = |p: &str| {
            std::fs::read_to_string(root.join(p))
                .ok()
                .map(|s| s.trim().to_string())
        };
        let cpuinfo = read("proc/cpuinfo").unwrap_or_default();
        let meminfo = read("proc/meminfo").unwrap_or_default();
        let vm_sysctls = VM_SYSCTLS
            .iter()
            .filter_map(|name| Some((name.to_string(), read(&format!("proc/sys/vm/{name}"))?)))
            .collect();
        Environment {
            hostname: read("proc/sys/kernel/hostname").unwrap_or_default(),
            kernel_release: read("proc/sys/kernel/osrelease").unwrap_or_default(),
            kernel_version: read("proc/version").unwrap_or_default(),
            boot_cmdline: read("proc/cmdline").unwrap_or_default(),
            cpu_model: cpu_model(&cpuinfo),
            cpus: cpus(&cpuinfo),
            mem_total_bytes: meminfo_bytes(&meminfo, "MemTotal").unwrap_or(0),
            swap_devices: parse_swaps(&read("proc/swaps").unwrap_or_default()),
            vm_sysctls,
            thp_enabled: read("sys/kernel/mm/transparent_hugepage/enabled").map(|s| selected(&s)),
            thp_defrag: read("sys/kernel/mm/transparent_hugepage/defrag").map(|s| selected(&s)),
            zswap_enabled: read("sys/module/zswap/parameters/enabled"),
            zswap_compressor: read("sys/module/zswap/parameters/compressor"),
            mglru: read("sys/kernel/mm/lru_gen/enabled"),
        }
    }

    /// The differences between two machines that make their runs hard to
    /// compare, one line each (empty: comparable).
    pub fn differences(&self, other: &Environment) -> Vec<String> {
        let mut out = Vec::new();
        let mut cmp = |what: &str, a: String, b: String| {
            if a != b {
                out.push(format!("{what}: {a} vs {b}"));
            }
        };
        cmp("host", self.hostname.clone(), other.hostname.clone());
        cmp("CPUs", self.cpus.to_string(), other.cpus.to_string());
        cmp("CPU", self.cpu_model.clone(), other.cpu_model.clone());
        cmp(
            "memory",
            crate::model::units::human(self.mem_total_bytes),
            crate::model::units::human(other.mem_total_bytes),
        );
        for (k, v) in &self.vm_sysctls {
            if let Some(w) = other.vm_sysctls.get(k) {
                cmp(&format!("vm.{k}"), v.clone(), w.clone());
            }
        }
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".into());
        cmp("THP", opt(&self.thp_enabled), opt(&other.thp_enabled));
        cmp("zswap", opt(&self.zswap_enabled), opt(&other.zswap_enabled));
        cmp("MGLRU", opt(&self.mglru), opt(&other.mglru));
        out
    }
}

/// `always madvise [never]` -> `never`.
fn selected(modes: &str) -> String {
    modes
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or(modes)
        .to_string()
}

fn cpu_model(cpuinfo: &str) -> String {
    cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "model name").then(|| v.trim().to_string())
        })
        .unwrap_or_default()
}

fn cpus(cpuinfo: &str) -> u32 {
    let n = cpuinfo
        .lines()
        .filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor"))
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn meminfo_bytes(meminfo: &str, key: &str) -> Option<u64> {
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
    fn captures_this_machine() {
        let env = Environment::capture();
        assert!(!env.kernel_release.is_empty());
        assert!(env.cpus >= 1);
        assert!(env.mem_total_bytes > 0);
        assert!(env.vm_sysctls.contains_key("swappiness"));
        assert!(env.differences(&env).is_empty());
        let mut other = env.clone();
        other.cpus += 1;
        assert_eq!(env.differences(&other).len(), 1);
    }
}
