//! Reads the machine a recording is made on (`capture`):
//! /proc and /sys under a root directory (`/`, or a snapshot in tests),
//! the job directory's mount, and the guest's storage as its job said.
//! What the text means is the model's (`model::recording::environment`).

use std::{collections::BTreeMap, path::Path};

use crate::model::recording::environment::{
    CpuTimeAccounting, DelayAccounting, Environment, VM_SYSCTLS, cpu_model, cpus, fs_type_of,
    meminfo_bytes, parse_swaps, selected,
};

/// Reads the running machine.
pub fn capture() -> Environment {
    capture_at(Path::new("/"))
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
        mthp_enabled: mthp(&root.join("sys/kernel/mm/transparent_hugepage")),
        delay_accounting: DelayAccounting::of_release(
            &read("proc/sys/kernel/osrelease").unwrap_or_default(),
        ),
        job_fs: std::env::current_dir()
            .ok()
            .and_then(|cwd| fs_type_of(&read("proc/self/mountinfo").unwrap_or_default(), &cwd)),
        guest_storage: std::env::var("VMTRACE_GUEST_STORAGE")
            .ok()
            .filter(|s| !s.is_empty()),
        cpu_time_accounting: kernel_config(root, &read("proc/sys/kernel/osrelease"))
            .and_then(|c| CpuTimeAccounting::of(&c, &cpuinfo)),
    }
}

/// The most of a kernel configuration read (a .config is ~300 KiB).
const CONFIG_LIMIT: u64 = 8 << 20;

/// The running kernel's configuration: /proc/config.gz (IKCONFIG_PROC),
/// else /boot/config-<release>; None without either.
fn kernel_config(root: &Path, release: &Option<String>) -> Option<String> {
    use std::io::Read as _;
    let mut text = String::new();
    let gz = std::fs::File::open(root.join("proc/config.gz"))
        .ok()
        .and_then(|f| {
            flate2::read::GzDecoder::new(f)
                .take(CONFIG_LIMIT)
                .read_to_string(&mut text)
                .ok()
        });
    if gz.is_some() {
        return Some(text);
    }
    let release = release.as_deref().filter(|r| !r.contains('/'))?;
    let f = std::fs::File::open(root.join("boot").join(format!("config-{release}"))).ok()?;
    f.take(CONFIG_LIMIT).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The selected mode of every hugepages-<size>kB/enabled under `dir`.
fn mthp(dir: &Path) -> BTreeMap<String, String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let size = name.strip_prefix("hugepages-")?.to_string();
            let modes = std::fs::read_to_string(e.path().join("enabled")).ok()?;
            Some((size, selected(modes.trim())))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_this_machine() {
        let env = capture();
        assert!(!env.kernel_release.is_empty());
        assert!(env.cpus >= 1);
        assert!(env.mem_total_bytes > 0);
        assert!(env.vm_sysctls.contains_key("swappiness"));
        assert!(env.differences(&env).is_empty());
        let mut other = env.clone();
        other.cpus += 1;
        assert_eq!(env.differences(&other).len(), 1);
        // Typed: a different machine is a warning, a vm sysctl a setting.
        use crate::model::recording::environment::EnvKey;
        let d = &env.differences(&other)[0];
        assert!(d.key == EnvKey::Cpus && !d.key.is_setting(), "{d:?}");
        let mut tuned = env.clone();
        tuned.vm_sysctls.insert("swappiness".into(), "x".into());
        let mut base = env.clone();
        base.vm_sysctls.insert("swappiness".into(), "60".into());
        let d = &base.differences(&tuned)[0];
        assert!(d.key.is_setting());
        assert_eq!(d.to_string(), "vm.swappiness: 60 vs x");
    }

    #[test]
    fn captures_a_snapshot() {
        let root = crate::host::test_scratch("env");
        let _ = std::fs::remove_dir_all(&root);
        let write = |p: &str, text: &str| {
            let path = root.join(p);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        };
        write("proc/sys/kernel/osrelease", "6.1.0-57-amd64\n");
        write(
            "proc/cpuinfo",
            "processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: fpu hypervisor\n",
        );
        // Debian's way: no /proc/config.gz, the config beside the image.
        write(
            "boot/config-6.1.0-57-amd64",
            "CONFIG_TICK_CPU_ACCOUNTING=y\nCONFIG_IRQ_TIME_ACCOUNTING=y\n\
             # CONFIG_PARAVIRT_TIME_ACCOUNTING is not set\n",
        );
        write("proc/meminfo", "MemTotal:       1024 kB\n");
        write("proc/sys/vm/swappiness", "60\n");
        write(
            "sys/kernel/mm/transparent_hugepage/enabled",
            "always [madvise] never\n",
        );
        write(
            "sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled",
            "always inherit madvise [never]\n",
        );
        let env = capture_at(&root);
        let _ = std::fs::remove_dir_all(&root);
        assert_eq!(env.kernel_release, "6.1.0-57-amd64");
        assert_eq!((env.cpus, env.cpu_model.as_str()), (1, "Test CPU"));
        assert_eq!(env.mem_total_bytes, 1024 * 1024);
        assert_eq!(
            env.vm_sysctls.get("swappiness").map(String::as_str),
            Some("60")
        );
        assert_eq!(env.thp_enabled.as_deref(), Some("madvise"));
        assert_eq!(
            env.mthp_enabled.get("64kB").map(String::as_str),
            Some("never")
        );
        assert_eq!(
            env.delay_accounting,
            DelayAccounting::SwapinPolledBlkioSchedule
        );
        assert_eq!(env.zswap_enabled, None);
        assert_eq!(
            env.cpu_time_accounting,
            Some(CpuTimeAccounting {
                irq_time: true,
                guest: true,
                steal_time: false,
            })
        );
    }

    /// /proc/config.gz is read through its decompressor, bounded.
    #[test]
    fn reads_a_compressed_config() {
        use std::io::Write as _;
        let root = crate::host::test_scratch("env-gz");
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("proc")).expect("mkdir");
        let f = std::fs::File::create(root.join("proc/config.gz")).expect("create");
        let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
        gz.write_all(
            b"# CONFIG_IRQ_TIME_ACCOUNTING is not set\nCONFIG_PARAVIRT_TIME_ACCOUNTING=y\n",
        )
        .expect("write");
        gz.finish().expect("finish");
        let text = kernel_config(&root, &None);
        let _ = std::fs::remove_dir_all(&root);
        let a = text.and_then(|t| CpuTimeAccounting::of(&t, "flags : hypervisor"));
        assert_eq!(
            a,
            Some(CpuTimeAccounting {
                irq_time: false,
                guest: true,
                steal_time: true,
            })
        );
    }
}
