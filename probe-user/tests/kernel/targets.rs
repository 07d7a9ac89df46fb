//! The target filter follows a task that moves: a reclaim's begin keeps
//! its target verdict in the task's cell, keyed by the serial number of
//! the task's cgroup (probe-ebpf `target::in_target_cached`), so a task
//! moved into the target, or out of it, must be judged again.

use std::{
    io::{BufRead, BufReader, Write},
    os::unix::fs::OpenOptionsExt,
    path::{Path, PathBuf},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
};

use vmtrace::{
    host::membox::{BoxSpec, CgroupMounts, MemBox},
    kernel::collect,
    session::tracer::Tracer,
};
use vmtrace_common::{Counter, Target};

use crate::common::{fresh_scratch, guard};

const LIMIT: u64 = 24 << 20;
const FILE_MIB: usize = 64;

/// One process reads three files through the page cache, each in a
/// memory cgroup 24 MiB small, so each read reclaims: the first outside
/// the target, the second inside (moved into the target box), the third
/// outside again. The target's memcg reclaims grow in the second read
/// only, by no more than the target box's own limit hits (each memcg
/// reclaim follows a failed charge: failcnt on v1, `max` on v2), and the
/// other box's limit hits grow in the first and third.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn a_task_moved_into_and_out_of_the_target_is_judged_again() {
    let _g = guard();
    let dir = fresh_scratch("targets-moved");
    let files: Vec<PathBuf> = (0..3).map(|i| uncached_file(&dir, i)).collect();
    let inside = MemBox::create(&BoxSpec {
        mem_limit: Some(LIMIT),
        swap: None,
        swap_dir: dir.clone(),
    })
    .expect("the target box");
    let outside = Outside::create().expect("the other box");
    // The target as `vmtrace run` makes it: the box's cgroup2 group.
    let cg = inside.v2_cgroup().expect("a cgroup2 group for the box");
    let target = Target {
        cgroup_id: cg.id().expect("cgroup id"),
        cgroup_level: cg.level().expect("cgroup level"),
        ..Target::EVERY_TASK
    };
    let tracer = Tracer::attach(target, &[], None, false).expect("attach");
    let mut reader = Reader::start();
    let memcg_of = |b: &MemBox| b.memcg.as_ref().expect("memcg").dir.clone();
    let reclaims = || {
        collect::read(&tracer.probes)
            .expect("read the maps")
            .counter(Counter::MemcgReclaims)
    };

    let mut seen = Vec::new();
    for (phase, file) in files.iter().enumerate() {
        let into_target = phase == 1;
        if into_target {
            for p in inside.join_paths().expect("join paths") {
                join(Path::new(&*p.to_string_lossy()), reader.pid());
            }
        } else {
            outside.join(reader.pid());
        }
        let (r0, inside0, outside0) = (reclaims(), hits(&memcg_of(&inside)), outside.hits());
        reader.read(file);
        let (r1, inside1, outside1) = (reclaims(), hits(&memcg_of(&inside)), outside.hits());
        seen.push(format!(
            "phase {phase} ({}): target memcg reclaims +{}, target box hits +{}, other box hits +{}",
            if into_target { "inside" } else { "outside" },
            r1 - r0,
            inside1 - inside0,
            outside1 - outside0
        ));
        let said = seen.join("\n");
        if into_target {
            assert!(r1 > r0, "no reclaim counted inside the target:\n{said}");
            assert!(r1 - r0 <= inside1 - inside0, "{said}");
        } else {
            assert!(
                outside1 > outside0,
                "the read outside did not reclaim:\n{said}"
            );
            assert_eq!(r1, r0, "a reclaim outside counted as the target's:\n{said}");
        }
    }
    println!("{}", seen.join("\n"));
    reader.stop();
    drop(tracer);
    drop(outside);
    drop(inside);
    std::fs::remove_dir_all(&dir).ok();
}

/// A 64 MiB file, written and then dropped from the page cache, so that
/// reading it charges every page to the reader's memory cgroup.
fn uncached_file(dir: &Path, i: usize) -> PathBuf {
    let path = dir.join(format!("data-{i}"));
    let mut f = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(&path)
        .expect("data file");
    let chunk = vec![i as u8 + 1; 1 << 20];
    for _ in 0..FILE_MIB {
        f.write_all(&chunk).expect("write");
    }
    f.sync_all().expect("fsync");
    // SAFETY: an advice call on an open file descriptor.
    let rc = unsafe {
        libc::posix_fadvise(
            std::os::fd::AsRawFd::as_raw_fd(&f),
            0,
            0,
            libc::POSIX_FADV_DONTNEED,
        )
    };
    assert_eq!(rc, 0, "posix_fadvise");
    path
}

/// The memory cgroup's limit hits: `memory.failcnt` (v1) or `max` of
/// `memory.events` (v2).
fn hits(memcg: &Path) -> u64 {
    if let Ok(v) = std::fs::read_to_string(memcg.join("memory.failcnt")) {
        return v.trim().parse().expect("failcnt");
    }
    let events = std::fs::read_to_string(memcg.join("memory.events")).expect("memory.events");
    events
        .lines()
        .find_map(|l| l.strip_prefix("max ")?.trim().parse().ok())
        .expect("max in memory.events")
}

fn join(cgroup: &Path, pid: u32) {
    let procs = if cgroup.ends_with("cgroup.procs") {
        cgroup.to_path_buf()
    } else {
        cgroup.join("cgroup.procs")
    };
    std::fs::write(&procs, pid.to_string())
        .unwrap_or_else(|e| panic!("moving {pid} to {}: {e}", procs.display()));
}

/// The other box: a memory cgroup as small as the target's (v1 where
/// the memory controller is there, else v2), and on a hybrid machine
/// a cgroup2 group beside the target's, so that the reader leaves it.
struct Outside {
    dirs: Vec<PathBuf>,
    memcg: PathBuf,
}

impl Outside {
    fn create() -> std::io::Result<Outside> {
        let mounts = CgroupMounts::read().map_err(std::io::Error::other)?;
        let name = format!("vmtrace-test-outside-{}", std::process::id());
        let mut dirs = Vec::new();
        let memcg = match (&mounts.v1_memory, &mounts.v2) {
            (Some(v1), v2) => {
                let memcg = v1.join(&name);
                std::fs::create_dir(&memcg)?;
                dirs.push(memcg.clone());
                std::fs::write(memcg.join("memory.limit_in_bytes"), LIMIT.to_string())?;
                if let Some(v2) = v2 {
                    std::fs::create_dir(v2.join(&name))?;
                    dirs.push(v2.join(&name));
                }
                memcg
            }
            (None, Some(v2)) => {
                let memcg = v2.join(&name);
                std::fs::create_dir(&memcg)?;
                dirs.push(memcg.clone());
                std::fs::write(memcg.join("memory.max"), LIMIT.to_string())?;
                memcg
            }
            (None, None) => return Err(std::io::Error::other("no cgroup mounts")),
        };
        Ok(Outside { dirs, memcg })
    }

    fn join(&self, pid: u32) {
        for d in &self.dirs {
            join(d, pid);
        }
    }

    fn hits(&self) -> u64 {
        hits(&self.memcg)
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        for d in &self.dirs {
            if let Ok(procs) = std::fs::read_to_string(d.join("cgroup.procs")) {
                for pid in procs.lines().filter_map(|p| p.parse::<i32>().ok()) {
                    // SAFETY: a signal to a process of this test's cgroup.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
            for _ in 0..100 {
                if std::fs::remove_dir(d).is_ok() || !d.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
}

/// One process that reads a file when told to (a line on its stdin),
/// and says when it has (a line on its stdout).
struct Reader {
    child: Child,
    tell: ChildStdin,
    hear: BufReader<ChildStdout>,
}

impl Reader {
    fn start() -> Reader {
        let script = "import sys\n\
            for path in sys.stdin:\n\
            \x20   with open(path.strip(), 'rb', buffering=0) as f:\n\
            \x20       while f.read(1 << 20):\n\
            \x20           pass\n\
            \x20   print('read', flush=True)\n";
        let mut child = Command::new("python3")
            .args(["-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let tell = child.stdin.take().expect("stdin");
        let hear = BufReader::new(child.stdout.take().expect("stdout"));
        Reader { child, tell, hear }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn read(&mut self, file: &Path) {
        writeln!(self.tell, "{}", file.display()).expect("tell the reader");
        let mut line = String::new();
        self.hear.read_line(&mut line).expect("hear the reader");
        assert_eq!(line.trim(), "read", "the reader failed");
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
