//! The small-memory box a workload runs in: a memory cgroup with a limit
//! (cgroup v2 `memory.max`, or v1 `memory.limit_in_bytes` where the memory
//! controller is on v1, as on hybrid machines), a cgroup v2 group whose id
//! the eBPF programs filter on, and a temporary swapfile (`host::swapfile`).
//! Every piece is named `vmtrace-<pid>` (the swapfile adds a random part)
//! and removed by its own `Drop`, so an error half-way through creating
//! the box, or in the run, leaves nothing behind.

use std::{
    collections::BTreeMap,
    ffi::CString,
    fs,
    io::{self, Write},
    os::unix::{ffi::OsStrExt, fs::MetadataExt},
    path::{Path, PathBuf},
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

use crate::model::{
    report::{BoxReport, CgroupVersion},
    sample::{Psi, parse_psi},
    units::human,
};

/// Smallest memory limit accepted: below this even a shell gets OOM-killed.
pub const MIN_MEM: u64 = 8 << 20;
pub use crate::host::swapfile::{MIN_SWAP, Swapfile};

#[derive(Clone, Debug)]
pub struct BoxSpec {
    pub mem_limit: Option<u64>,
    pub swap: Option<u64>,
    pub swap_dir: PathBuf,
}

/// Where the cgroup hierarchies are mounted on this machine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CgroupMounts {
    /// The cgroup2 mount (unified hierarchy).
    pub v2: Option<PathBuf>,
    /// The cgroup v1 mount carrying the memory controller.
    pub v1_memory: Option<PathBuf>,
}

impl CgroupMounts {
    /// Parses /proc/self/mountinfo text.
    pub fn parse(mountinfo: &str) -> CgroupMounts {
        let mut m = CgroupMounts::default();
        for line in mountinfo.lines() {
            let Some((left, right)) = line.split_once(" - ") else {
                continue;
            };
            let Some(mount_point) = left.split(' ').nth(4) else {
                continue;
            };
            let mut r = right.split(' ');
            let (fstype, _source, options) = (r.next(), r.next(), r.next().unwrap_or(""));
            match fstype {
                Some("cgroup2") if m.v2.is_none() => m.v2 = Some(PathBuf::from(mount_point)),
                Some("cgroup")
                    if m.v1_memory.is_none() && options.split(',').any(|o| o == "memory") =>
                {
                    m.v1_memory = Some(PathBuf::from(mount_point))
                }
                _ => {}
            }
        }
        m
    }

    pub fn read() -> Result<CgroupMounts> {
        let text = crate::host::proc::read_mountinfo().context("reading /proc/self/mountinfo")?;
        Ok(CgroupMounts::parse(&text))
    }

    /// Whether the v2 hierarchy offers the memory controller.
    fn v2_has_memory(&self) -> bool {
        self.v2.as_ref().is_some_and(|root| {
            fs::read_to_string(root.join("cgroup.controllers"))
                .is_ok_and(|c| c.split_whitespace().any(|w| w == "memory"))
        })
    }
}

/// A cgroup directory vmtrace created; removed (tasks killed first) on drop.
#[derive(Debug)]
pub struct Cgroup {
    pub dir: PathBuf,
    pub version: CgroupVersion,
}

impl Cgroup {
    fn create(parent: &Path, name: &str, version: CgroupVersion) -> Result<Cgroup> {
        let dir = parent.join(name);
        fs::create_dir(&dir).with_context(|| format!("creating cgroup {}", dir.display()))?;
        Ok(Cgroup { dir, version })
    }

    fn write(&self, file: &str, value: &str) -> Result<()> {
        let path = self.dir.join(file);
        fs::write(&path, value).with_context(|| format!("writing `{value}` to {}", path.display()))
    }

    fn read(&self, file: &str) -> Option<String> {
        fs::read_to_string(self.dir.join(file)).ok()
    }

    /// The cgroup id the kernel's bpf_get_current_cgroup_id() returns for
    /// tasks in this (v2) cgroup: its directory's inode number.
    pub fn id(&self) -> Result<u64> {
        Ok(fs::metadata(&self.dir)
            .with_context(|| format!("stat {}", self.dir.display()))?
            .ino())
    }

    /// Its level in the cgroup2 hierarchy (`Target::cgroup_level`): the
    /// command's own sub-cgroups are traced with it.
    pub fn level(&self) -> Result<u32> {
        super::cgroupfs::cgroup_level(&self.dir)
            .with_context(|| format!("stat {}", self.dir.display()))
    }

    /// `cgroup.procs` as a C string, for joining from `pre_exec`.
    pub fn procs_path(&self) -> Result<CString> {
        Ok(CString::new(
            self.dir.join("cgroup.procs").as_os_str().as_bytes(),
        )?)
    }

    /// This cgroup and every cgroup the workload made under it, deepest
    /// first (the order they can be removed in); directories only, read
    /// from readdir's type (cgroupfs has no links), at most
    /// `MAX_SUBTREE` of them.
    fn subtree(&self) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let mut todo = vec![self.dir.clone()];
        while let Some(dir) = todo.pop() {
            if found.len() >= MAX_SUBTREE {
                break;
            }
            for e in fs::read_dir(&dir).into_iter().flatten().flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    todo.push(e.path());
                }
            }
            found.push(dir);
        }
        // Each cgroup was found after its parent: reversed, children
        // come first.
        found.reverse();
        found
    }

    /// The processes in this cgroup and the cgroups under it.
    fn pids(&self) -> Vec<i32> {
        self.subtree()
            .iter()
            .filter_map(|d| fs::read_to_string(d.join("cgroup.procs")).ok())
            .flat_map(|s| {
                s.lines()
                    .filter_map(|l| l.trim().parse().ok())
                    .collect::<Vec<i32>>()
            })
            .collect()
    }

    /// SIGKILLs every task in the cgroup and the cgroups under it (a
    /// workload's leftovers): `cgroup.kill` where the kernel has it
    /// (5.14+, v2: it reaches tasks forking meanwhile), and each pid
    /// read from the `cgroup.procs` files either way.
    pub fn kill_all(&self) {
        if self.version == CgroupVersion::V2 {
            let _ = fs::write(self.dir.join("cgroup.kill"), "1");
        }
        for pid in self.pids() {
            // SAFETY: kill(2) with a pid read from cgroup.procs.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// The most cgroups under a box that teardown looks at: a workload that
/// made more (cgroup.max.descendants is unlimited by default) leaves the
/// rest to the warning that names the box.
const MAX_SUBTREE: usize = 4096;

impl Drop for Cgroup {
    fn drop(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            self.kill_all();
            for sub in self.subtree().iter().filter(|d| **d != self.dir) {
                let _ = fs::remove_dir(sub);
            }
            match fs::remove_dir(&self.dir) {
                Ok(()) => return,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return,
                Err(e) if Instant::now() >= deadline => {
                    eprintln!(
                        "vmtrace: warning: could not remove cgroup {}: {e}; remove it with `rmdir {}`",
                        self.dir.display(),
                        self.dir.display()
                    );
                    return;
                }
                Err(_) => thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

/// The box: whatever of memcg, tracking cgroup and swapfile was asked for.
#[derive(Debug)]
pub struct MemBox {
    pub name: String,
    /// Memory-limited cgroup (only with a memory limit).
    pub memcg: Option<Cgroup>,
    /// cgroup v2 group that identifies the workload to the eBPF filter,
    /// when it is not `memcg` itself (hybrid machines, or no limit).
    tracker: Option<Cgroup>,
    pub swapfile: Option<Swapfile>,
    pub mem_limit: Option<u64>,
    /// The box's PSI and events when it was made (zero on a new
    /// cgroup; read all the same, so that a report is end minus start).
    start: BoxCounters,
}

/// The box's own pressure and memory-cgroup events at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BoxCounters {
    pub psi: Option<Psi>,
    pub events: BTreeMap<String, u64>,
    /// The job's cgroup v2 group's cpu.pressure and io.pressure.
    pub cpu_psi: Option<Psi>,
    pub io_psi: Option<Psi>,
}

impl BoxCounters {
    /// `self - start`, counter by counter (a counter missing at the
    /// start counts from 0).
    pub fn since(&self, start: &BoxCounters) -> BoxCounters {
        let since = |now: Option<Psi>, then: Option<Psi>| {
            now.map(|p| {
                let s = then.unwrap_or_default();
                Psi {
                    some_us: p.some_us.saturating_sub(s.some_us),
                    full_us: p.full_us.saturating_sub(s.full_us),
                }
            })
        };
        let events = self
            .events
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.saturating_sub(*start.events.get(k).unwrap_or(&0)),
                )
            })
            .collect();
        BoxCounters {
            psi: since(self.psi, start.psi),
            events,
            cpu_psi: since(self.cpu_psi, start.cpu_psi),
            io_psi: since(self.io_psi, start.io_psi),
        }
    }
}

/// `key value` lines (memory.stat, memory.events, oom_control) as a map.
fn key_values(text: Option<String>) -> BTreeMap<String, u64> {
    text.unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

impl MemBox {
    pub fn create(spec: &BoxSpec) -> Result<MemBox> {
        let name = format!("vmtrace-{}", std::process::id());
        let mounts = CgroupMounts::read()?;
        let mut memcg = None;
        if let Some(limit) = spec.mem_limit {
            if limit < MIN_MEM {
                bail!(
                    "--mem {} is too small; use at least 8M (e.g. --mem 256M)",
                    human(limit)
                );
            }
            memcg = Some(create_memcg(&mounts, &name, limit)?);
        }
        let memcg_is_v2 = memcg
            .as_ref()
            .is_some_and(|c| c.version == CgroupVersion::V2);
        let tracker = match (&mounts.v2, memcg_is_v2) {
            (Some(root), false) => Some(Cgroup::create(root, &name, CgroupVersion::V2)?),
            _ => None,
        };
        let swapfile = match spec.swap {
            Some(bytes) => Some(Swapfile::create(&spec.swap_dir, &name, bytes)?),
            None => None,
        };
        let mut membox = MemBox {
            name,
            memcg,
            tracker,
            swapfile,
            mem_limit: spec.mem_limit,
            start: BoxCounters::default(),
        };
        membox.start = membox.counters_now();
        Ok(membox)
    }

    /// The cgroup v2 group whose memory.pressure is the box's: only for
    /// a box with a memory limit (without one, the group only tracks the
    /// command, and its pressure is not a box's). On a hybrid machine
    /// this is the tracking group beside the v1 memcg: PSI follows a
    /// task's v2 cgroup whatever hierarchy the memory controller is on
    /// (kernel/sched/psi.c task_psi_group), and the command's tasks are
    /// in both.
    fn pressure_cgroup(&self) -> Option<&Cgroup> {
        self.memcg.as_ref()?;
        self.v2_cgroup()
    }

    /// The box's PSI totals and event counters as the kernel has them now.
    fn counters_now(&self) -> BoxCounters {
        let psi = self
            .pressure_cgroup()
            .and_then(|cg| cg.read("memory.pressure"))
            .and_then(|t| parse_psi(&t));
        // The job's group's CPU and I/O pressure, box or not.
        let v2 = |file: &str| {
            self.v2_cgroup()
                .and_then(|cg| cg.read(file))
                .and_then(|t| parse_psi(&t))
        };
        let (cpu_psi, io_psi) = (v2("cpu.pressure"), v2("io.pressure"));
        let Some(cg) = &self.memcg else {
            return BoxCounters {
                psi,
                events: BTreeMap::new(),
                cpu_psi,
                io_psi,
            };
        };
        let events = match cg.version {
            CgroupVersion::V2 => key_values(cg.read("memory.events")),
            CgroupVersion::V1 => {
                let mut e = BTreeMap::new();
                for (file, key) in [
                    ("memory.failcnt", "failcnt"),
                    ("memory.memsw.failcnt", "memsw.failcnt"),
                ] {
                    if let Some(v) = cg.read(file).and_then(|s| s.trim().parse().ok()) {
                        e.insert(key.to_string(), v);
                    }
                }
                if let Some(&k) = key_values(cg.read("memory.oom_control")).get("oom_kill") {
                    e.insert("oom_kill".to_string(), k);
                }
                e
            }
        };
        BoxCounters {
            psi,
            events,
            cpu_psi,
            io_psi,
        }
    }

    /// The box's PSI totals since it was made (None: no box with a
    /// memory limit, no cgroup v2, or PSI off); for each sample.
    pub fn pressure(&self) -> Option<Psi> {
        self.counters_now().since(&self.start).psi
    }

    /// The cgroup v2 group of the workload, if the machine has cgroup v2.
    pub fn v2_cgroup(&self) -> Option<&Cgroup> {
        self.tracker.as_ref().or(self
            .memcg
            .as_ref()
            .filter(|c| c.version == CgroupVersion::V2))
    }

    /// The `cgroup.procs` files a child writes itself into before exec.
    pub fn join_paths(&self) -> Result<Vec<CString>> {
        [self.memcg.as_ref(), self.tracker.as_ref()]
            .into_iter()
            .flatten()
            .map(Cgroup::procs_path)
            .collect()
    }

    /// The processes in the box now (its cgroups and any under them):
    /// after the command exited, what it left running.
    pub fn processes(&self) -> usize {
        let pids: std::collections::BTreeSet<i32> = [self.memcg.as_ref(), self.tracker.as_ref()]
            .into_iter()
            .flatten()
            .flat_map(Cgroup::pids)
            .collect();
        pids.len()
    }

    /// Kills everything left in the box (a second Ctrl-C, or what the
    /// command left running when it exited).
    pub fn kill_all(&self) {
        for cg in [self.memcg.as_ref(), self.tracker.as_ref()]
            .into_iter()
            .flatten()
        {
            cg.kill_all();
        }
    }

    /// Memory charged to the box now (None: no memory cgroup).
    pub fn usage_bytes(&self) -> Option<u64> {
        let cg = self.memcg.as_ref()?;
        let file = match cg.version {
            CgroupVersion::V2 => "memory.current",
            CgroupVersion::V1 => "memory.usage_in_bytes",
        };
        cg.read(file).and_then(|s| s.trim().parse().ok())
    }

    /// What the memory cgroup says about the run; read before teardown.
    pub fn report(&self) -> BoxReport {
        let mut r = BoxReport {
            name: self.name.clone(),
            cgroup_version: self.memcg.as_ref().map(|c| c.version),
            mem_limit_bytes: self.mem_limit,
            swap_bytes: self.swapfile.as_ref().map(|s| s.bytes),
            swapfile: self.swapfile.as_ref().map(|s| s.path.display().to_string()),
            ..Default::default()
        };
        let job = self.counters_now().since(&self.start);
        (r.cpu_pressure, r.io_pressure) = (job.cpu_psi, job.io_psi);
        let Some(cg) = &self.memcg else {
            return r;
        };
        let kv = key_values;
        r.memory_stat = kv(cg.read("memory.stat"));
        let counters = self.counters_now().since(&self.start);
        r.pressure = counters.psi;
        r.pressure_file = counters
            .psi
            .and(self.pressure_cgroup())
            .map(|c| c.dir.join("memory.pressure").display().to_string());
        r.events = counters.events;
        r.events_source = Some(match cg.version {
            CgroupVersion::V2 => "memory.events".into(),
            CgroupVersion::V1 => {
                "v1 memory.failcnt, memory.memsw.failcnt, memory.oom_control".into()
            }
        });
        match cg.version {
            CgroupVersion::V2 => {
                r.peak_bytes = cg.read("memory.peak").and_then(|s| s.trim().parse().ok());
                r.oom_kills = kv(cg.read("memory.events")).get("oom_kill").copied();
            }
            CgroupVersion::V1 => {
                r.peak_bytes = cg
                    .read("memory.max_usage_in_bytes")
                    .and_then(|s| s.trim().parse().ok());
                r.oom_kills = kv(cg.read("memory.oom_control")).get("oom_kill").copied();
            }
        }
        r
    }
}

fn create_memcg(mounts: &CgroupMounts, name: &str, limit: u64) -> Result<Cgroup> {
    if mounts.v2_has_memory() {
        let root = mounts.v2.as_ref().context("cgroup2 mount vanished")?;
        let subtree = root.join("cgroup.subtree_control");
        let enabled = fs::read_to_string(&subtree).unwrap_or_default();
        if !enabled.split_whitespace().any(|w| w == "memory") {
            fs::OpenOptions::new()
                .write(true)
                .open(&subtree)
                .and_then(|mut f| f.write_all(b"+memory"))
                .with_context(|| {
                    format!("enabling the memory controller in {}", subtree.display())
                })?;
        }
        let cg = Cgroup::create(root, name, CgroupVersion::V2)?;
        cg.write("memory.max", &limit.to_string())?;
        return Ok(cg);
    }
    if let Some(root) = &mounts.v1_memory {
        let cg = Cgroup::create(root, name, CgroupVersion::V1)?;
        cg.write("memory.limit_in_bytes", &limit.to_string())?;
        return Ok(cg);
    }
    bail!(
        "--mem needs the memory cgroup controller, and this machine has it on neither \
         cgroup v2 nor v1; boot with cgroup_enable=memory or run without --mem"
    )
}

/// Removes what a vmtrace that died (kill -9, OOM kill) left behind: its
/// cgroups (killing what still runs in them) and its swapfiles. Returns
/// what was removed, for a notice; errors are left for the next start.
pub fn clean_stale(swap_dir: &Path) -> Vec<String> {
    let mut removed = Vec::new();
    let mounts = CgroupMounts::read().unwrap_or_default();
    let roots = [
        (mounts.v2.clone(), CgroupVersion::V2),
        (mounts.v1_memory.clone(), CgroupVersion::V1),
    ];
    for (root, version) in roots {
        let Some(root) = root else { continue };
        let Ok(entries) = fs::read_dir(&root) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.path().is_dir() && crate::host::lock::owner_is_gone(&name) {
                // Dropping the handle kills the tasks and removes the dir.
                drop(Cgroup {
                    dir: e.path(),
                    version,
                });
                if !e.path().exists() {
                    removed.push(e.path().display().to_string());
                }
            }
        }
    }
    removed.extend(crate::host::swapfile::clean_stale(swap_dir));
    removed.extend(clean_stale_scratch(&std::env::temp_dir()));
    // Trees vmtrace prepared for a bundled build (`vmtrace-build-tree-PID`).
    removed.extend(clean_stale_scratch(swap_dir));
    removed
}

/// Scratch trees of the bundled build workload (`vmtrace-build-TAG-PID`
/// in the temporary directory, or the tree vmtrace prepared in the swap
/// directory) whose process is gone: an OOM kill or a
/// kill -9 ends it before it can remove its tree. After the boxes above
/// (killing what ran in them), so that no live build loses its tree.
fn clean_stale_scratch(tmp: &Path) -> Vec<String> {
    let mut removed = Vec::new();
    let invoker = crate::host::output::invoker().ok().flatten().map(|i| i.uid);
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let Ok(entries) = fs::read_dir(tmp) else {
        return removed;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("vmtrace-build-")
            .and_then(|rest| rest.rsplit_once('-'))
            .and_then(|(_, pid)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let path = e.path();
        // Only plain directories (not links to elsewhere) of a dead pid,
        // root's (a tree vmtrace prepared), this process's or its
        // invoker's (a tree the workload made as that user): never
        // another user's.
        let ours = |uid: u32| uid == 0 || uid == me || Some(uid) == invoker;
        let is_dir = fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir() && ours(m.uid()));
        if is_dir
            && !Path::new(&format!("/proc/{pid}")).exists()
            && fs::remove_dir_all(&path).is_ok()
        {
            removed.push(path.display().to_string());
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_build_trees_of_dead_pids_are_removed_and_only_those() {
        let tmp = std::env::temp_dir().join(format!("vmtrace-unit-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(&tmp).expect("mkdir");
        let dead = tmp.join("vmtrace-build-tree-4294967294");
        let alive = tmp.join(format!("vmtrace-build-tree-{}", std::process::id()));
        let other = tmp.join("vmtrace-build-notes");
        for d in [&dead, &alive, &other] {
            fs::create_dir_all(d.join("src")).expect("mkdir");
        }
        let removed = clean_stale_scratch(&tmp);
        assert_eq!(removed, [dead.display().to_string()]);
        assert!(!dead.exists() && alive.exists() && other.exists());
        let _ = fs::remove_dir_all(&tmp);
    }

    #[test]
    fn box_counters_are_end_minus_start() {
        let at = |some_us, full_us, max, oom_kill| BoxCounters {
            psi: Some(Psi { some_us, full_us }),
            events: key_values(Some(format!("low 0\nmax {max}\noom_kill {oom_kill}\n"))),
            cpu_psi: Some(Psi {
                some_us: 2 * some_us,
                full_us,
            }),
            io_psi: None,
        };
        let d = at(1_500, 700, 40, 1).since(&at(500, 200, 10, 0));
        assert_eq!(
            d.cpu_psi,
            Some(Psi {
                some_us: 2_000,
                full_us: 500
            })
        );
        assert_eq!(d.io_psi, None);
        assert_eq!(
            d.psi,
            Some(Psi {
                some_us: 1_000,
                full_us: 500
            })
        );
        assert_eq!(d.events.get("max"), Some(&30));
        assert_eq!(d.events.get("oom_kill"), Some(&1));
        assert_eq!(d.events.get("low"), Some(&0));
        // Nothing at the start (a new cgroup): the end as is.
        let d = at(9, 9, 9, 9).since(&BoxCounters::default());
        assert_eq!(d, at(9, 9, 9, 9));
    }

    #[test]
    fn finds_hybrid_and_unified_mounts() {
        let hybrid = "\
30 24 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
33 30 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
36 30 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
        let m = CgroupMounts::parse(hybrid);
        assert_eq!(m.v2, Some(PathBuf::from("/sys/fs/cgroup/unified")));
        assert_eq!(m.v1_memory, Some(PathBuf::from("/sys/fs/cgroup/memory")));

        let unified = "29 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
        let m = CgroupMounts::parse(unified);
        assert_eq!(m.v2, Some(PathBuf::from("/sys/fs/cgroup")));
        assert_eq!(m.v1_memory, None);

        // cpu,cpuacct is not memory; "memory_recursiveprot" is not "memory".
        let other = "1 2 0:1 / /a rw - cgroup cgroup rw,cpu,cpuacct\n\
                     3 4 0:2 / /b rw - cgroup2 cgroup2 rw,memory_recursiveprot\n";
        let m = CgroupMounts::parse(other);
        assert_eq!(m.v1_memory, None);
        assert_eq!(m.v2, Some(PathBuf::from("/b")));
    }
}
