//! A deliberate OOM kill: the report and the recording name the victim as
//! the kernel counted it. And the OOM reaper: a victim that exits by
//! itself is never reaped; one whose memory stays mapped (a frozen
//! process shares it) is, 2 s after the kill.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::common::{
    delta, fresh_scratch, guard, json_of, memhog, recording, run_memhog, scratch, vmstat, vmtrace,
};

/// A deliberate OOM: a hog in a 64 MiB box without swap is killed; the
/// report names it (first line, victim table) as the kernel counted it.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn oom_kill_is_reported_with_its_victim() {
    let _g = guard();
    let before = vmstat();
    let out = run_memhog(true, &["--mem", "64M"], &["--mib", "256"])
        .output()
        .expect("run vmtrace");
    let after = vmstat();
    let r = json_of(&out);
    assert_eq!(out.status.code(), Some(128 + libc::SIGKILL), "{r:#}");
    assert_eq!(r["exit"]["oom_killed"], true, "{r:#}");
    let victims = r["oom_victims"].as_array().expect("victims");
    let oom_kills = delta(&before, &after, &["oom_kill"]);
    assert_eq!(victims.len() as u64, oom_kills, "{victims:?}");
    assert_eq!(r["membox"]["oom_kills"].as_u64(), Some(oom_kills));
    let v = &victims[0];
    assert_eq!(v["pid"], r["pid"], "{v:#}");
    assert_eq!(v["comm"], "memhog");
    // Whose victim: the command's, because it exited as a target task
    // (mark_victim itself runs in the task that invoked the OOM killer).
    assert_eq!(v["target"], true, "{v:#}");
    assert_eq!(v["victim_known"], true, "{v:#}");
    assert_eq!(v["invoked_by_target"], true, "{v:#}");
    let anon = v["anon_rss_kb"].as_u64().unwrap_or(0);
    assert!((32 << 10..=64 << 10).contains(&anon), "anon-rss {anon} kB");

    let rec_path = scratch().join("oom.vmtrace.json");
    let _ = std::fs::remove_file(&rec_path);
    let text = run_memhog(
        false,
        &["--mem", "64M", "-o", &rec_path.to_string_lossy()],
        &["--mib", "256"],
    )
    .output()
    .expect("run vmtrace");
    let text = String::from_utf8_lossy(&text.stdout);
    // The recording is written for an OOM-killed run too, and says so.
    let rec = recording(&rec_path);
    assert_eq!(rec["complete"], true);
    assert_eq!(rec["runs"][0]["report"]["exit"]["oom_killed"], true);
    // As the seed mail says it, then csh's time line.
    assert!(text.starts_with("Out of Memory: Killed process "), "{text}");
    assert!(
        text.lines()
            .next()
            .is_some_and(|l| l.ends_with("(memhog).")),
        "{text}"
    );
    assert!(
        text.lines().nth(1).is_some_and(|l| l.contains("pf+0w")),
        "{text}"
    );
}

/// `vmtrace run --json --mem 64M -- sh -c SCRIPT`, not yet started.
fn run_script(script: &str) -> Command {
    let mut c = vmtrace(&["run", "--progress", "none", "--json", "--mem", "64M"]);
    c.args(["--", "sh", "-c", script]);
    c
}

/// The reaper's section of a report: (wakeups, reaps, skips, reap_time).
fn reaper(r: &Value) -> (u64, u64, u64, &Value) {
    let o = &r["oom_reaper"];
    let n = |k: &str| {
        o[k].as_u64()
            .unwrap_or_else(|| panic!("oom_reaper.{k}: {r:#}"))
    };
    (n("wakeups"), n("reaps"), n("skips"), &o["reap_time"])
}

/// A victim that frees its memory by exiting is never queued to the
/// reaper: queue_oom_reaper arms a 2 s timer, and wake_oom_reaper finds
/// the mm MMF_OOM_SKIP (exit_mmap set it) and traces nothing. The window
/// stays open 3 s after the kill, past the timer.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn a_victim_that_exits_by_itself_is_not_reaped() {
    let _g = guard();
    let before = vmstat();
    let script = format!("{} --mib 256; sleep 3", memhog().display());
    let out = run_script(&script).output().expect("run vmtrace");
    let after = vmstat();
    let r = json_of(&out);
    let kills = delta(&before, &after, &["oom_kill"]);
    assert!(kills >= 1, "{r:#}");
    assert_eq!(r["membox"]["oom_kills"].as_u64(), Some(kills));
    let (wakeups, reaps, skips, times) = reaper(&r);
    eprintln!("exits by itself: kills {kills}, woken {wakeups}, reaped {reaps}, skipped {skips}");
    assert_eq!((wakeups, reaps, skips), (0, 0, 0), "{r:#}");
    assert_eq!(times["count"], 0);
}

/// The v1 freezer cgroup the test freezes memhog's parked process in
/// (mounted in scratch where the machine has none); thawed and removed
/// on drop, so a failing test leaves no frozen task behind.
struct Freezer {
    dir: PathBuf,
    mounted: Option<PathBuf>,
}

impl Freezer {
    fn new() -> Freezer {
        let mut root = PathBuf::from("/sys/fs/cgroup/freezer");
        let mut mounted = None;
        if !root.join("tasks").is_file() {
            root = fresh_scratch("freezer-v1");
            let ok = Command::new("mount")
                .args(["-t", "cgroup", "-o", "freezer", "vmtrace-test"])
                .arg(&root)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "no cgroup v1 freezer here, and none could be mounted");
            mounted = Some(root.clone());
        }
        let dir = root.join("vmtrace-test-reaper");
        let _ = std::fs::create_dir(&dir);
        Freezer { dir, mounted }
    }

    /// Moves task `pid` in and freezes it.
    fn freeze(&self, pid: u32) {
        std::fs::write(self.dir.join("tasks"), pid.to_string()).expect("move the task");
        std::fs::write(self.dir.join("freezer.state"), "FROZEN").expect("freeze");
        let start = Instant::now();
        while self.state() != "FROZEN" {
            assert!(start.elapsed() < Duration::from_secs(10), "not frozen");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn state(&self) -> String {
        let s = std::fs::read_to_string(self.dir.join("freezer.state")).unwrap_or_default();
        s.trim().to_string()
    }

    fn thaw(&self) {
        let _ = std::fs::write(self.dir.join("freezer.state"), "THAWED");
    }
}

impl Drop for Freezer {
    fn drop(&mut self) {
        self.thaw();
        let start = Instant::now();
        while std::fs::remove_dir(&self.dir).is_err() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        if let Some(m) = &self.mounted {
            let _ = Command::new("umount").arg(m).status();
        }
    }
}

/// Waits for the pid of memhog's parked process.
fn parked_pid(file: &Path) -> u32 {
    let start = Instant::now();
    loop {
        if let Some(tid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return tid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "memhog never parked"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A field of /proc/PID/status, its first word as a number.
fn status_field(pid: u32, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find_map(|l| l.strip_prefix(key))?;
    line.split_whitespace().next()?.parse().ok()
}

/// The kernel's own line for each victim it reaped whole, from the
/// kernel log: "oom_reaper: reaped process PID (comm), now anon-rss:..."
/// (oom_reap_task_mm, after a pass that unmapped everything).
fn kernel_log_reaped(pid: u32) -> usize {
    let log = Command::new("dmesg")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    let needle = format!("oom_reaper: reaped process {pid} ");
    String::from_utf8_lossy(&log).matches(&needle).count()
}

/// A victim whose memory stays mapped is reaped: memhog parks a vfork
/// child sharing its memory (never the OOM killer's pick: in_vfork) and
/// the test freezes it, so the SIGKILL the child also gets leaves it
/// there and memhog's exit frees nothing. The reaper is woken for it
/// once, 2 s after the kill, takes the mmap lock and unmaps it: the
/// shared mm's RssAnon drops while the only other user is frozen (only
/// the reaper can have freed it), and the kernel log says so. vmtrace's
/// counts against /proc/vmstat's oom_kill, the box's OOM kills and that
/// log.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn a_victim_that_cannot_free_its_memory_is_reaped() {
    let _g = guard();
    let freezer = Freezer::new();
    let dir = fresh_scratch("reaper");
    let pid_file = dir.join("parked.pid");
    // The window stays open until the test writes to `hold`: past the
    // reaper's 2 s timer. sh waits in a builtin read from a pipe it
    // opened first: until the reaper is done, the box is full (the
    // frozen child pins memhog's memory), and a fork there (`sleep`)
    // would make the box's OOM killer pick the child next.
    let hold = dir.join("hold");
    let c_hold = std::ffi::CString::new(hold.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c_hold.as_ptr(), 0o600) }, 0, "mkfifo");
    let script = format!(
        "exec 3<>{}; {} --mib 256 --park-clone {}; read x <&3",
        hold.display(),
        memhog().display(),
        pid_file.display()
    );
    let before = vmstat();
    let child = run_script(&script)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run vmtrace");
    let parked = parked_pid(&pid_file);
    let pid = status_field(parked, "PPid:").expect("memhog's pid") as u32;
    freezer.freeze(parked);
    std::fs::remove_file(&pid_file).expect("let memhog hog");
    let released = Instant::now();
    // The kill, the reaper's 2 s timer, the reaping: wait (at most 20 s)
    // for the shared memory to be gone.
    let mut peak = 0;
    let reaped_after = loop {
        let rss = status_field(parked, "RssAnon:").unwrap_or(0);
        peak = peak.max(rss);
        if peak > 32 << 10 && rss < 4 << 10 {
            break released.elapsed();
        }
        assert!(
            released.elapsed() < Duration::from_secs(20),
            "the victim's memory was not freed: RssAnon {rss} kB (peak {peak})"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    freezer.thaw();
    std::fs::write(&hold, "go\n").expect("close the window");
    let out = child.wait_with_output().expect("vmtrace");
    drop(freezer);
    let after = vmstat();
    let r = json_of(&out);
    let kills = delta(&before, &after, &["oom_kill"]);
    let (wakeups, reaps, skips, times) = reaper(&r);
    let logged = kernel_log_reaped(pid);
    eprintln!(
        "cannot free: kills {kills}, woken {wakeups}, reaped {reaps}, skipped {skips}, \
         reap time p50 {} ns max {} ns, memory gone {reaped_after:?} after release \
         (RssAnon peak {peak} kB), kernel log lines {logged}, window {} s",
        times["p50_ns"], times["max_ns"], r["usage"]["wall_s"]
    );
    assert_eq!(kills, 1, "{r:#}");
    assert_eq!(r["membox"]["oom_kills"].as_u64(), Some(kills));
    let victims = r["oom_victims"].as_array().expect("victims");
    assert_eq!(victims.len() as u64, kills);
    assert_eq!(victims[0]["pid"].as_u64(), Some(u64::from(pid)));
    // The 2 s timer: the memory cannot have gone before it.
    assert!(reaped_after >= Duration::from_secs(2), "{reaped_after:?}");
    assert_eq!(wakeups, kills, "{r:#}");
    assert!(reaps >= 1, "{r:#}");
    // Each woken victim takes 1 to 10 attempts, each a reap or a skip.
    assert!((wakeups..=10 * wakeups).contains(&(reaps + skips)), "{r:#}");
    assert_eq!(times["count"].as_u64(), Some(reaps));
    let window_ns = r["usage"]["wall_s"].as_f64().expect("wall_s") * 1e9;
    let max_ns = times["max_ns"].as_u64().expect("max_ns");
    assert!(
        max_ns > 0 && (max_ns as f64) < window_ns,
        "{max_ns} vs {window_ns}"
    );
    assert_eq!(logged, 1, "the kernel log has no reap line for {pid}");
}
