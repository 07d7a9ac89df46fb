//! Calibration (issue 29): A/B experiments in which one cause is planted
//! and `vmtrace compare` must find it. Each pair runs the same memory
//! hog in a memory box, interleaved in rounds (A, B) so that drift in
//! the machine's load falls on both; B differs by one planted cause:
//!
//! 1. two CPU-bound loops pinned beside it, one per CPU (cause: CPU
//!    contention by other tasks);
//! 2. its swap device slowed by cgroup v1 blkio throttling of the
//!    device under the swapfile (cause: swap I/O waits, named swap-in);
//! 3. a smaller box (cause: more reclaim, swap-in waits, and the kernel
//!    time of the swap-in faults it adds: do_swap_page's CPU, which no
//!    probe tells apart from other system time, so the mechanisms call it
//!    "system CPU"; seen 23% of the difference once, with major faults
//!    84k -> 142k, failing the 20% bound on a cause that was planted).
//!
//! 4. (a second family, the job pinned to CPU 0 beside a hog on CPU 1)
//!    two hogs on CPU 0 instead (cause: CPU contention);
//! 5. in that family, the box shrunk to 64 MiB while the hog stays on
//!    CPU 1 (a negative control: the box's mechanisms, and the load
//!    present in both claims at most the job's measured waits behind
//!    it, + 5 points).
//!
//! 6. (the first family) a 96 MiB disk read through a mapping after the
//!    hog, uncached, its reads throttled to 16 MB/s (a loop device, so
//!    that the swap device is not): cause file reads, beside the same
//!    swap-ins. A sequential read through a mapping is one major fault
//!    per readahead window: the pages read tell it from swap-in.
//!
//! For each, the first mechanism must name the planted cause and, with
//! the others that name it (the smaller box's is reclaim, swap-in and
//! system CPU),
//! claim at least 60% of the elapsed difference, and no other mechanism
//! more than 20%. A against A' (the baseline run again in each round)
//! must be within noise with no mechanism named, or else fresh A/A
//! rounds must be (a false alarm is 1 in 20 by design). docs/COMPARE.md
//! has the same experiments at a larger size.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command},
};

use serde_json::Value;

use crate::common::{fresh_scratch, guard, json_of, text_ok, vmtrace};

/// The job: a hog of 320 MiB touched twice, in a 192 MiB box (the
/// smaller box: 64 MiB, about twice the swap traffic).
const HOG: &[&str] = &["memhog", "--mib", "320", "--passes", "2"];
const RUNS: usize = 3;

/// Where a run goes: its box, a v1 blkio cgroup to run in, a CPU to
/// pin vmtrace and the job to.
#[derive(Clone, Copy)]
struct Setup<'a> {
    box_mib: u32,
    blkio: Option<&'a Path>,
    cpu: Option<usize>,
    /// A file the job reads through a mapping after the hog.
    read: Option<&'a Path>,
}

const BOX: Setup = Setup {
    box_mib: 192,
    blkio: None,
    cpu: None,
    read: None,
};

/// One run into `dir/name` in `setup`. Returns the recording.
fn run(dir: &Path, name: &str, setup: Setup) -> PathBuf {
    let Setup {
        box_mib,
        blkio,
        cpu,
        read,
    } = setup;
    let path = dir.join(name);
    let mem = format!("{box_mib}M");
    let mut args = vec!["run", "-q", "-o"];
    let p = path.to_string_lossy().into_owned();
    args.push(&p);
    args.extend(["--mem", &mem, "--swap", "1G"]);
    args.extend(HOG);
    let file = read.map(|f| f.to_string_lossy().into_owned());
    if let Some(f) = &file {
        args.extend(["--then-read", f]);
    }
    let mut cmd = vmtrace(&args);
    if let Some(cg) = blkio {
        let procs = cg.join("cgroup.procs");
        // SAFETY: pre_exec runs in the child between fork and exec; it
        // only writes the child's pid to a file.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                std::fs::write(&procs, std::process::id().to_string())
            });
        }
    }
    if let Some(cpu) = cpu {
        // SAFETY: pre_exec runs in the child between fork and exec; it
        // only sets the child's CPU affinity, which the job inherits.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let out = cmd.output().expect("run vmtrace");
    assert!(
        out.status.success() && path.is_file(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}

/// Two CPU-bound loops, one pinned to each of CPUs 0 and 1; killed on
/// drop, and by the kernel when the test's thread dies (a suite killed
/// mid-run once left them spinning under the runs that followed).
struct Hogs(Vec<Child>);

impl Hogs {
    fn start() -> Hogs {
        Hogs::on(&["0", "1"])
    }

    /// One loop pinned to each of `cpus`.
    fn on(cpus: &[&str]) -> Hogs {
        Hogs(
            cpus.iter()
                .map(|cpu| {
                    let mut c = Command::new("taskset");
                    c.args(["-c", cpu, "sh", "-c", "while :; do :; done"]);
                    crate::common::die_with_parent(&mut c);
                    c.spawn().expect("taskset (util-linux)")
                })
                .collect(),
        )
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A v1 blkio cgroup throttling reads and writes of the device under
/// `dir` (where the swapfile goes) to `bps`; removed on drop, and by the
/// next calibration when a killed suite left it (its pid gone).
struct SlowDevice(PathBuf);

impl SlowDevice {
    /// The device under `dir`.
    fn new(dir: &Path, bps: u64) -> SlowDevice {
        use std::os::unix::fs::MetadataExt;
        let dev = std::fs::metadata(dir).expect("stat swap dir").dev();
        SlowDevice::of(dev, "", bps)
    }

    /// Device `dev`, in a cgroup named with `tag`.
    fn of(dev: u64, tag: &str, bps: u64) -> SlowDevice {
        let root = Path::new("/sys/fs/cgroup/blkio");
        assert!(
            root.join("blkio.throttle.read_bps_device").exists(),
            "no cgroup v1 blkio hierarchy at {}",
            root.display()
        );
        for stale in std::fs::read_dir(root).into_iter().flatten().flatten() {
            let name = stale.file_name().to_string_lossy().into_owned();
            let dead = name
                .strip_prefix("vmtrace-calibration-")
                .and_then(|rest| rest.split('.').next())
                .and_then(|pid| pid.parse::<u32>().ok())
                .is_some_and(|pid| !Path::new("/proc").join(pid.to_string()).exists());
            if dead {
                let _ = std::fs::remove_dir(stale.path());
            }
        }
        let cg = root.join(format!("vmtrace-calibration-{}{tag}", std::process::id()));
        std::fs::create_dir(&cg).expect("create blkio cgroup");
        let (major, minor) = (libc::major(dev), libc::minor(dev));
        for file in [
            "blkio.throttle.read_bps_device",
            "blkio.throttle.write_bps_device",
        ] {
            std::fs::write(cg.join(file), format!("{major}:{minor} {bps}"))
                .expect("set blkio throttle");
        }
        SlowDevice(cg)
    }
}

impl Drop for SlowDevice {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A read-only loop device over a file of `mib` MiB in `dir`, held open
/// (a block device's page cache goes at its last close); detached on
/// drop.
struct LoopDisk {
    dev: PathBuf,
    held: std::fs::File,
}

impl LoopDisk {
    fn new(dir: &Path, mib: usize) -> LoopDisk {
        let backing = dir.join("disk.img");
        let mut data = vec![0u8; mib << 20];
        for (i, b) in data.iter_mut().enumerate().step_by(4096) {
            *b = (i >> 12) as u8 | 1;
        }
        std::fs::write(&backing, &data).expect("write the disk's file");
        let out = Command::new("losetup")
            .args(["--find", "--show", "--read-only"])
            .arg(&backing)
            .output()
            .expect("losetup (mount)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        let held = std::fs::File::open(&dev).expect("open the loop device");
        LoopDisk { dev, held }
    }

    fn rdev(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        self.held.metadata().expect("stat the loop device").rdev()
    }

    /// Drops its pages from the page cache: the next read is the disk's.
    fn drop_cache(&self) {
        use std::os::fd::AsRawFd;
        // SAFETY: an advice call on an open descriptor.
        let rc =
            unsafe { libc::posix_fadvise(self.held.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(rc, 0, "fadvise");
    }
}

impl Drop for LoopDisk {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

fn compare(a: &[PathBuf], b: &[PathBuf]) -> (Value, String) {
    let cmd = |json: bool| {
        // --force: the file-read case's job differs by its --then-read,
        // the planted cause itself.
        let mut c = vmtrace(&["compare", "--force"]);
        c.args(a).arg("--vs").args(b);
        if json {
            c.arg("--json");
        }
        c
    };
    let j = json_of(&cmd(true).output().expect("compare"));
    let text = text_ok(&mut cmd(false));
    (j, text)
}

/// The planted cause is the first mechanism and, with the others that
/// name it (`cause`: one or more mechanisms), claims >= 60% of the
/// elapsed difference; no other mechanism claims more than 20%.
fn finds(a: &[PathBuf], b: &[PathBuf], cause: &[&str]) {
    let (c, text) = compare(a, b);
    let v = &c["versus"][0];
    assert_eq!(v["verdict"]["id"], "slower", "{text}");
    let diff = v["split"]["difference"].as_f64().expect("difference");
    let hints = v["hints"].as_array().cloned().unwrap_or_default();
    let share = |h: &Value| h["seconds"].as_f64().unwrap_or(0.0) / diff;
    let named = |h: &Value| cause.iter().any(|c| h["mechanism"]["label"] == *c);
    let first = hints.first().expect("a mechanism");
    let claimed: f64 = hints.iter().filter(|h| named(h)).map(share).sum();
    // One line per pair (a failure prints the pair's whole compare):
    // the suite's log then keeps every pair's outcome in view.
    let all: Vec<String> = hints
        .iter()
        .map(|h| format!("{} {:.0}%", h["mechanism"]["label"], share(h) * 100.0))
        .collect();
    eprintln!(
        "planted {cause:?}: {:+.1} s, all of the cause {:.0}%; {}",
        diff,
        claimed * 100.0,
        all.join(", ")
    );
    assert!(
        named(first),
        "first is {}\n{text}",
        first["mechanism"]["label"]
    );
    assert!(claimed >= 0.6, "{cause:?} claim {claimed:.2}\n{text}");
    for h in hints.iter().filter(|h| !named(h)) {
        assert!(
            share(h) <= 0.2,
            "{} claims {:.2}\n{text}",
            h["mechanism"]["label"],
            share(h)
        );
    }
}

/// A load present in both groups claims no more of the difference than
/// the job's measured waits behind other tasks do, + 5 points. Steal,
/// the host's, is the mechanism's too and is counted with the waits:
/// this guest's steal grows with the smaller box's swap I/O (0.2 s to
/// 2.2 s a run on 2026-12-07, 6% of the difference), a wait for a CPU
/// that the load on CPU 1 did not cause.
fn contention_within_its_waits(a: &[PathBuf], b: &[PathBuf]) {
    let (c, text) = compare(a, b);
    let v = &c["versus"][0];
    let diff = v["split"]["difference"].as_f64().expect("difference");
    let claimed = v["hints"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|h| h["mechanism"]["id"] == "cpu_contention")
        .map(|h| h["seconds"].as_f64().unwrap_or(0.0))
        .sum::<f64>();
    let waits = c["attribution"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["component"]["id"] == "cpu_waits" || r["component"]["id"] == "steal")
        .map(|r| r["elapsed"][0].as_f64().unwrap_or(0.0))
        .sum::<f64>();
    eprintln!(
        "a hog in both groups: CPU contention {:.0}%, the waits behind it and steal {:.0}%",
        100.0 * claimed / diff,
        100.0 * waits / diff
    );
    assert!(claimed / diff <= waits / diff + 0.05, "{text}");
}

#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn planted_causes_are_found_and_aa_is_noise() {
    let _g = guard();
    let dir = fresh_scratch("calibration");
    let slow = SlowDevice::new(Path::new("/var/tmp"), 32 << 20);
    let disk = LoopDisk::new(&dir, 96);
    let slow_disk = SlowDevice::of(disk.rdev(), ".disk", 16 << 20);
    let (mut a, mut a2, mut hogs, mut throttled, mut small) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut reads = Vec::new();
    // The second family: the job pinned to CPU 0 beside a hog on CPU 1
    // (Ah), two hogs on CPU 0 instead (cause: CPU contention), and the
    // hog left on CPU 1 while the box shrinks (a load present in both:
    // it may claim no more than the job's measured waits behind it).
    let (mut ah, mut moved, mut small_h) = (Vec::new(), Vec::new(), Vec::new());
    let pinned = Setup {
        cpu: Some(0),
        ..BOX
    };
    // Rounds of A, each planted B, and A' (the A/A pair): three, then
    // more (up to six) while a planted B is not yet significantly
    // slower. This guest's steal moves a run by a second or two; the
    // smaller box's +45% once came out at p = 0.036 after three. Each
    // family stops on its own: the first's pairs were all significant
    // after three rounds in the suite of 2026-12-07 (p 0.033 to 0.045),
    // the pinned family's needed six (moved p = 0.21 after three, 0.033
    // after six), and running the first family's seven runs a round on
    // made this test 17 min. The A/A verdict is not used to stop, so
    // its false-alarm rate stays 5%.
    let slower =
        |a: &[PathBuf], b: &[PathBuf]| compare(a, b).0["versus"][0]["verdict"]["id"] == "slower";
    let (mut first_done, mut pinned_done) = (false, false);
    for k in 0..2 * RUNS {
        if !first_done {
            a.push(run(&dir, &format!("base-{k}.json"), BOX));
            {
                let _h = Hogs::start();
                hogs.push(run(&dir, &format!("hogs-{k}.json"), BOX));
            }
            let throttle = Setup {
                blkio: Some(&slow.0),
                ..BOX
            };
            throttled.push(run(&dir, &format!("slow-{k}.json"), throttle));
            let smaller = Setup { box_mib: 64, ..BOX };
            small.push(run(&dir, &format!("small-{k}.json"), smaller));
            disk.drop_cache();
            let reading = Setup {
                blkio: Some(&slow_disk.0),
                read: Some(&disk.dev),
                ..BOX
            };
            reads.push(run(&dir, &format!("reads-{k}.json"), reading));
            a2.push(run(&dir, &format!("base2-{k}.json"), BOX));
        }
        if !pinned_done {
            {
                let _h = Hogs::on(&["1"]);
                ah.push(run(&dir, &format!("base-h-{k}.json"), pinned));
                let smaller = Setup {
                    box_mib: 64,
                    ..pinned
                };
                small_h.push(run(&dir, &format!("small-h-{k}.json"), smaller));
            }
            // Two loops on the job's CPU: with one, the job (mostly
            // asleep on swap, and preempting the loop as it wakes) was
            // +5.6 s of 11.8 with a stddev near it, p = 0.056 after six
            // rounds on 2026-12-07; the same cause, larger.
            let _h = Hogs::on(&["0", "0"]);
            moved.push(run(&dir, &format!("moved-{k}.json"), pinned));
        }
        if k + 1 >= RUNS {
            first_done = first_done
                || [(&a, &hogs), (&a, &throttled), (&a, &small), (&a, &reads)]
                    .into_iter()
                    .all(|(a, b)| slower(a, b));
            pinned_done = pinned_done || (slower(&ah, &moved) && slower(&ah, &small_h));
            if first_done && pinned_done {
                break;
            }
        }
    }
    drop((slow, slow_disk, disk));
    finds(&a, &hogs, &["CPU contention"]);
    finds(&a, &reads, &["file reads"]);
    finds(&ah, &moved, &["CPU contention"]);
    let box_causes = ["reclaim", "swap-in", "system CPU", "refaults"];
    finds(&ah, &small_h, &box_causes);
    contention_within_its_waits(&ah, &small_h);
    finds(&a, &throttled, &["swap-in"]);
    finds(&a, &small, &["reclaim", "swap-in", "system CPU"]);
    // A/A: at p < 0.05 one comparison of equal groups in 20 is a false
    // alarm by design. If this one is, fresh interleaved A/A rounds must
    // not be (both false: 1 in 400; a bias between A and A' fails both).
    let mut pair = (a, a2);
    for attempt in 0..2 {
        let (aa, text) = compare(&pair.0, &pair.1);
        let v = &aa["versus"][0];
        eprintln!(
            "A/A: {} p = {}",
            v["verdict"]["label"], v["elapsed"]["welch"]["p"]
        );
        if v["verdict"]["id"] == "within_noise" {
            // Nothing named but OOM kills, said whenever kills differ.
            let hints = v["hints"].as_array().cloned().unwrap_or_default();
            assert!(
                hints.iter().all(|h| h["mechanism"]["id"] == "oom_kills"),
                "{text}"
            );
            return;
        }
        assert_eq!(attempt, 0, "A/A twice not within noise:\n{text}");
        pair = (Vec::new(), Vec::new());
        for k in 0..RUNS {
            pair.0.push(run(&dir, &format!("aa-{k}.json"), BOX));
            pair.1.push(run(&dir, &format!("aa2-{k}.json"), BOX));
        }
    }
}

/// One `vmtrace run build -j 6 --files 8` in a `mem` box into
/// `dir/name`. Returns the recording.
fn build(dir: &Path, name: &str, mem: &str) -> PathBuf {
    let path = dir.join(name);
    let p = path.to_string_lossy().into_owned();
    let out = vmtrace(&[
        "run", "-q", "-o", &p, "--mem", mem, "--swap", "1G", "build", "-j", "6", "--files", "8",
    ])
    .output()
    .expect("run vmtrace");
    assert!(
        out.status.success() && path.is_file(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}

/// The build family (issue 42): a parallel job's own threads queue
/// behind each other on 2 CPUs, which is not contention by other tasks.
/// A, `build -j 6` in a 512 MiB box (six compilers on 2 CPUs), against:
/// (1) the same beside a CPU-bound loop pinned to each CPU (cause: CPU
/// contention); (2) the same in a 160 MiB box (the box's causes; the
/// job's waits behind its own threads are in both groups, and CPU
/// contention may claim no more than its measured waits behind other
/// tasks, + 5 points). The build peaks at ~250 MiB; in a 96 MiB box
/// the memcg OOM killer took a compiler in one run of two.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn a_build_blames_outside_hogs_and_not_its_own_threads() {
    let _g = guard();
    let dir = fresh_scratch("calibration-build");
    let (mut a, mut hogs, mut small) = (Vec::new(), Vec::new(), Vec::new());
    // Three rounds, then more (up to six) while the hogs' group is not
    // yet significantly slower (p = 0.059 once after three).
    for k in 0..2 * RUNS {
        a.push(build(&dir, &format!("base-{k}.json"), "512M"));
        {
            let _h = Hogs::start();
            hogs.push(build(&dir, &format!("hogs-{k}.json"), "512M"));
        }
        small.push(build(&dir, &format!("small-{k}.json"), "160M"));
        if k + 1 >= RUNS && compare(&a, &hogs).0["versus"][0]["verdict"]["id"] == "slower" {
            break;
        }
    }
    finds(&a, &hogs, &["CPU contention"]);
    contention_within_its_waits(&a, &small);
    // The six compilers' waits behind each other are measured as the
    // job's own, not as other tasks'.
    let (c, text) = compare(&a, &small);
    let behind = |name: &str| {
        c["metrics"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["measure"]["label"] == name))
            .map(|m| m["groups"][0]["mean"].as_f64().unwrap_or(0.0))
    };
    let (own, others) = (
        behind("runnable behind itself"),
        behind("runnable behind others"),
    );
    eprintln!(
        "-j 6 on 2 CPUs, a run: behind its own threads {own:?} s, behind others {others:?} s"
    );
    assert!(own.is_some_and(|s| s > 0.0), "{text}");
}
