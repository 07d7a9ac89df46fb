//! `vmtrace attach`: following a process tree or a cgroup (a build
//! already running), progress lines and SIGTERM, bad targets, and 100
//! attaches and detaches that leak nothing.

use std::{
    path::Path,
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

use crate::common::{
    VMTRACE, bpf_object_counts, guard, json_of, memhog, recording, scratch, vmtrace, within,
};

/// attach --pid follows a process tree: a memory hog forked after the
/// attach is traced (its faults counted at exit, by name), nothing outside
/// the tree is, and vmtrace detaches by itself when the tree has exited.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn attach_by_pid_follows_children_forked_later() {
    let _g = guard();
    let script = format!(
        "sleep 1.5; {} --mib 48 --passes 1; sleep 0.3",
        memhog().display()
    );
    let mut job = Command::new("sh")
        .args(["-c", &script])
        .spawn()
        .expect("start the job");
    // Something outside the tree faulting meanwhile: must not show.
    let mut outsider = Command::new(memhog())
        .args(["--mib", "32", "--passes", "3"])
        .spawn()
        .expect("start the outsider");
    let rec_path = scratch().join("attach.vmtrace.json");
    let _ = std::fs::remove_file(&rec_path);
    let stats_before =
        std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").expect("bpf_stats_enabled");
    let started = Instant::now();
    let out = vmtrace(&[
        "attach",
        "--pid",
        &job.id().to_string(),
        "--duration",
        "60",
        "--bpf-stats",
        "--json",
        "-o",
        &rec_path.to_string_lossy(),
    ])
    .output()
    .expect("run vmtrace attach");
    let _ = job.wait();
    // --bpf-stats after attach gave up its privileges: the programs'
    // costs were counted, and kernel.bpf_stats_enabled is back to what
    // it was (attach keeps CAP_SYS_ADMIN for bpf_stats_handler).
    let stats_after =
        std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").expect("bpf_stats_enabled");
    assert_eq!(stats_after.trim(), stats_before.trim());
    let _ = outsider.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("every target has exited"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "did not stop by itself"
    );
    let r = json_of(&out);
    assert_eq!(r["attached"], true);
    let top = r["faults"]["processes"]["top"]
        .as_array()
        .expect("processes");
    let comms: Vec<&str> = top.iter().filter_map(|p| p["comm"].as_str()).collect();
    let hog = top
        .iter()
        .find(|p| p["comm"] == "memhog")
        .unwrap_or_else(|| panic!("memhog forked after attach not traced: {comms:?}"));
    // 48 MiB first-touched: at least 12288 minor faults.
    assert!(hog["minor"].as_u64().unwrap_or(0) >= 12288, "{hog}");
    assert_eq!(
        top.iter().filter(|p| p["comm"] == "memhog").count(),
        1,
        "the outsider memhog was traced too: {top:?}"
    );
    for c in &comms {
        assert!(
            ["sh", "sleep", "memhog"].contains(c),
            "{c} is outside the tree: {comms:?}"
        );
    }
    let rec = recording(&rec_path);
    assert_eq!(rec["workload"]["name"], "attach");
    assert_eq!(rec["runs"][0]["report"]["attached"], true);
    let costs = rec["runs"][0]["report"]["program_costs"]
        .as_array()
        .expect("program_costs with --bpf-stats");
    let ran = |name: &str| {
        costs.iter().any(|c| {
            c["program"] == name && c["runs"].as_u64() > Some(0) && c["run_ns"].as_u64() > Some(0)
        })
    };
    assert!(ran("target_fork"), "{costs:?}");
}

/// A memory box of `mem_limit` bytes with 1 GiB of swap, made with
/// vmtrace's own box code (so that it is cleaned up like vmtrace's).
/// The test process holds vmtrace's live lock while it has one, as a
/// vmtrace does: the box is named for its pid, and a vmtrace that
/// attaches sweeps the boxes of pids that hold no live lock.
pub(crate) fn memory_box(mem_limit: u64) -> vmtrace::host::membox::MemBox {
    static LIVE: std::sync::OnceLock<vmtrace::host::lock::LiveLock> = std::sync::OnceLock::new();
    LIVE.get_or_init(|| vmtrace::host::lock::LiveLock::take().expect("the live lock"));
    vmtrace::host::membox::MemBox::create(&vmtrace::host::membox::BoxSpec {
        mem_limit: Some(mem_limit),
        swap: Some(1 << 30),
        swap_dir: "/var/tmp".into(),
    })
    .expect("box")
}

/// Starts `cmd` inside the box (it joins the box's cgroups before exec).
pub(crate) fn spawn_in_box(
    membox: &vmtrace::host::membox::MemBox,
    cmd: &mut Command,
) -> std::process::Child {
    join_before_exec(cmd, membox.join_paths().expect("box join paths"));
    cmd.spawn().expect("start the boxed command")
}

/// `cmd` writes itself into each `cgroup.procs` of `joins` before exec.
fn join_before_exec(cmd: &mut Command, joins: Vec<std::ffi::CString>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only open/write/close on paths prepared before fork.
    unsafe {
        cmd.pre_exec(move || {
            for path in &joins {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
            }
            Ok(())
        });
    }
}

/// The bundled build workload (`kbuild -j 4`: make of a generated C tree)
/// started outside vmtrace, in a 96 MiB box with swap made with vmtrace's
/// own box code (so that it is cleaned up like vmtrace's), and a memory
/// hog outside the box that must never show up in a report.
struct OutsideJob {
    build: std::process::Child,
    outsider: std::process::Child,
    membox: vmtrace::host::membox::MemBox,
}

impl OutsideJob {
    fn start() -> OutsideJob {
        let kbuild = Path::new(VMTRACE).parent().expect("bin dir").join("kbuild");
        assert!(
            kbuild.is_file(),
            "{} is missing (cargo xtask test builds it)",
            kbuild.display()
        );
        let membox = memory_box(96 << 20);
        let build = spawn_in_box(
            &membox,
            Command::new(kbuild)
                .args(["-j", "4"])
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        let outsider = Command::new(memhog())
            .args(["--mib", "64", "--passes", "40"])
            .spawn()
            .expect("start the outsider");
        OutsideJob {
            build,
            outsider,
            membox,
        }
    }
}

impl Drop for OutsideJob {
    fn drop(&mut self) {
        let _ = self.outsider.kill();
        let _ = self.outsider.wait();
        let _ = self.build.kill();
        self.membox.kill_all();
        let _ = self.build.wait();
    }
}

/// What a report of an attach to the build must show: compilers forked
/// after the attach, with their faults and their reclaim stalls; nothing
/// of the outsider; the recording written.
fn check_build_attach(out: &Output, rec_path: &Path) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("every target has exited"), "{err}");
    let r = json_of(out);
    let top = r["faults"]["processes"]["top"]
        .as_array()
        .expect("processes");
    let comms: Vec<&str> = top.iter().filter_map(|p| p["comm"].as_str()).collect();
    assert!(comms.contains(&"cc1"), "no compiler traced: {comms:?}");
    assert!(
        !comms.contains(&"memhog"),
        "the outsider was traced: {comms:?}"
    );
    let stallers = r["top_stallers"].as_array().expect("stallers");
    assert!(
        stallers.iter().any(|s| s["comm"] == "cc1"
            && s["target"] == true
            && s["memcg_stalls"].as_u64() > Some(0)),
        "no reclaim stall of a compiler: {stallers:?}"
    );
    assert!(
        !stallers
            .iter()
            .any(|s| s["comm"] == "memhog" && s["target"] == true),
        "the outsider counted as a target: {stallers:?}"
    );
    let rec = recording(rec_path);
    assert_eq!(rec["runs"][0]["report"]["attached"], true);
}

/// Starts the build, waits a moment, attaches with `how` (a flag and the
/// value it takes from the job) until the build ends, and checks the
/// report.
fn attach_to_running_build(flag: &str, value: fn(&OutsideJob) -> String) {
    let job = OutsideJob::start();
    std::thread::sleep(Duration::from_secs(1));
    let rec_path = scratch().join(format!("attach{flag}.vmtrace.json"));
    let out = vmtrace(&[
        "attach",
        flag,
        &value(&job),
        "--duration",
        "240",
        "--json",
        "-o",
        &rec_path.to_string_lossy(),
    ])
    .output()
    .expect("run vmtrace attach");
    check_build_attach(&out, &rec_path);
    drop(job);
}

/// issue 7: attach by pid to a parallel build already running in a small
/// box; the compilers forked after the attach are traced, the outsider
/// is not, and vmtrace detaches when the build ends.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn attach_by_pid_to_a_running_build() {
    let _g = guard();
    attach_to_running_build("--pid", |job| job.build.id().to_string());
}

/// The same by cgroup: the box's cgroup v2 directory, by id.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn attach_by_cgroup_to_a_running_build() {
    let _g = guard();
    attach_to_running_build("--cgroup", |job| {
        job.membox
            .v2_cgroup()
            .expect("a cgroup v2 directory for the box")
            .dir
            .to_string_lossy()
            .into_owned()
    });
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// Attach and detach 40 times against a busy process: no program, map,
/// link or file descriptor outlives a detach. A leak of one object per
/// attach shows after the first; 40 rounds (half with the log ring)
/// cost ~90 s here, 100 cost 3m51s of CI's time for nothing more.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn attach_detach_40_times_leaks_nothing() {
    use vmtrace_common::Target;
    let _g = guard();
    let mut busy = Command::new("sh");
    busy.args(["-c", "while :; do :; done"]);
    crate::common::die_with_parent(&mut busy);
    let mut busy = busy.spawn().expect("busy process");
    // The first attach warms up what lives for the process (the log
    // channel, the runtime of aya): counted after it.
    let target = Target {
        by_pid: 1,
        ..Target::EVERY_TASK
    };
    drop(
        vmtrace::session::tracer::Tracer::attach(
            target,
            &[vmtrace::kernel::probes::OptIn::FollowForks],
            None,
            true,
        )
        .expect("attach"),
    );
    std::thread::sleep(Duration::from_secs(1));
    let (fds, objects) = (open_fds(), bpf_object_counts());
    // While attached, the counts see vmtrace's own objects (the check
    // counts what it should).
    let t = vmtrace::session::tracer::Tracer::attach(
        target,
        &[vmtrace::kernel::probes::OptIn::FollowForks],
        None,
        false,
    )
    .expect("attach");
    let attached = bpf_object_counts();
    assert!(
        attached[0] > objects[0] && attached[1] > objects[1],
        "{attached:?} vs {objects:?}"
    );
    drop(t);
    for i in 0..40 {
        // Every other one with --debug-probes: its log ring buffer,
        // taken out of the object, goes too.
        let mut t = vmtrace::session::tracer::Tracer::attach(
            target,
            &[vmtrace::kernel::probes::OptIn::FollowForks],
            None,
            i % 2 == 0,
        )
        .unwrap_or_else(|e| panic!("attach {i}: {e:#}"));
        t.probes.follow(&[busy.id()]).expect("follow");
        assert!(t.probes.followed().contains(&busy.id()));
        drop(t);
    }
    let _ = busy.kill();
    let _ = busy.wait();
    assert_eq!(open_fds(), fds, "file descriptors leaked");
    // The kernel frees a map from a workqueue after its last reference
    // goes: give the last detach a moment.
    let start = Instant::now();
    while bpf_object_counts() != objects && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(bpf_object_counts(), objects, "programs/maps/links leaked");
}

/// attach --interval prints a line per interval; SIGTERM stops it like
/// Ctrl-C (report, recording marked incomplete); bad targets are one line
/// and exit 1.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn attach_lines_sigterm_and_bad_targets() {
    let _g = guard();
    let mut sleeper = Command::new("sleep").arg("60").spawn().expect("sleep");
    let rec_path = scratch().join("attach-term.vmtrace.json");
    let child = vmtrace(&[
        "attach",
        "--pid",
        &sleeper.id().to_string(),
        "--interval",
        "0.5",
        "-o",
        &rec_path.to_string_lossy(),
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("attach");
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().expect("wait attach");
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("stopping on the signal"), "{err}");
    let lines = err.lines().filter(|l| l.contains(" flt/s ")).count();
    assert!(lines >= 3, "{lines} progress lines:\n{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("attached: ") && text.contains("stopped by a signal"),
        "{text}"
    );
    let rec = recording(&rec_path);
    assert_eq!(rec["complete"], false);
    // One's own process: the umask decides; every task's (other users'
    // pids and commands): the owner's alone.
    use std::os::unix::fs::MetadataExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).expect("stat").mode() & 0o777;
    assert_ne!(mode(&rec_path), 0o600);
    let everyone = scratch().join("attach-system-wide.vmtrace.json");
    let out = vmtrace(&["attach", "--duration", "0.5", "-o"])
        .arg(&everyone)
        .output()
        .expect("attach system-wide");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(mode(&everyone), 0o600, "a system-wide attach's recording");

    for (args, want) in [
        (
            vec!["attach", "--pid", "4000000"],
            "no process with pid 4000000",
        ),
        (vec!["attach", "--cgroup", "/tmp"], "/tmp is not a cgroup"),
        (
            vec!["attach", "--comm", "no-such-comm-xy"],
            "no process named no-such-comm-xy",
        ),
    ] {
        let out = vmtrace(&args).output().expect("run vmtrace");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(want), "{err}");
    }
}

/// issue 19: a reclaim's end adds its stall to the thread's own task
/// storage, and the per-process table is filled from it at thread exit
/// and, for threads still running when vmtrace stops, by a task iterator.
/// Here every stalling thread is still alive at the end (a 3-thread
/// memhog in a box, stopped with SIGSTOP before the attach ends, so that
/// no stall ends between the reads): its row must hold every memcg
/// stall the histogram counted, the non-leader threads' included.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn live_threads_stalls_reach_their_process_row() {
    let _g = guard();
    let membox = memory_box(48 << 20);
    let mut hog = spawn_in_box(
        &membox,
        Command::new(memhog()).args(["--threads", "3", "--mib", "32", "--passes", "1000"]),
    );
    let hog_pid = hog.id();
    let cgroup = membox
        .v2_cgroup()
        .expect("a cgroup v2 directory for the box")
        .dir
        .to_string_lossy()
        .into_owned();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(4));
        // SAFETY: a signal to the child this test started.
        unsafe { libc::kill(hog_pid as i32, libc::SIGSTOP) };
    });
    let out = vmtrace(&["attach", "--cgroup", &cgroup, "--duration", "6", "--json"])
        .output()
        .expect("run vmtrace attach");
    let _ = stopper.join();
    let _ = hog.kill();
    let _ = hog.wait();
    membox.kill_all();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let r = json_of(&out);
    let stalls = r["memcg_reclaim"]["stalls"]["count"]
        .as_u64()
        .expect("memcg stalls");
    assert!(
        stalls > 0,
        "the hog never stalled: {:#}",
        r["memcg_reclaim"]
    );
    let rows = r["top_stallers"].as_array().expect("stallers");
    let hog_row = rows
        .iter()
        .find(|s| s["pid"] == hog_pid)
        .unwrap_or_else(|| panic!("no row for the hog (pid {hog_pid}): {rows:#?}"));
    assert_eq!(hog_row["comm"], "memhog", "{hog_row:#}");
    assert_eq!(hog_row["target"], true, "{hog_row:#}");
    assert_eq!(
        hog_row["memcg_stalls"].as_u64(),
        Some(stalls),
        "the row misses live threads' stalls: {hog_row:#}"
    );
    // The histogram's total is summed from bucket midpoints (1/16
    // relative precision); the row's is exact.
    let hist_ns = r["memcg_reclaim"]["stalls"]["total_ns"]
        .as_u64()
        .expect("total");
    let row_ns = hog_row["memcg_ns"].as_u64().expect("row ns");
    assert!(
        row_ns.abs_diff(hist_ns) <= hist_ns / 16,
        "row {row_ns} ns vs histogram {hist_ns} ns"
    );
}

/// issue 32: `attach --cgroup` on a cgroup that holds no task itself (a
/// slice) traces its children's tasks. The hog runs in a child of the
/// box's cgroup v2 directory (the box's memory limit still applies); the
/// attach names the parent. Before, only tasks directly in it matched
/// (bpf_get_current_cgroup_id() == id) and this traced nothing. The
/// job's major faults equal its memory cgroup's pgmajfault (the box is
/// fresh and holds the job alone, started after the attach is up).
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn attach_to_a_slice_traces_its_childrens_tasks() {
    let _g = guard();
    let membox = memory_box(48 << 20);
    let parent = membox
        .v2_cgroup()
        .expect("a cgroup v2 directory for the box")
        .dir
        .clone();
    let child = parent.join("job");
    std::fs::create_dir(&child).expect("create the child cgroup");
    // Removed before the box (declared after it), even on a panic: the
    // box's own directory cannot go while a child cgroup is in it.
    struct Rmdir(std::path::PathBuf);
    impl Drop for Rmdir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    let _child_dir = Rmdir(child.clone());
    // The job joins the box's cgroups as spawn_in_box would, but the v2
    // one through its child.
    let joins: Vec<std::ffi::CString> = membox
        .join_paths()
        .expect("box join paths")
        .into_iter()
        .map(|p| {
            use std::os::unix::ffi::OsStrExt;
            if Path::new(std::ffi::OsStr::from_bytes(p.as_bytes())) == parent.join("cgroup.procs") {
                let procs = child.join("cgroup.procs");
                std::ffi::CString::new(procs.as_os_str().as_bytes()).expect("a path without NUL")
            } else {
                p
            }
        })
        .collect();
    let script = format!("sleep 4; {} --mib 96 --passes 2", memhog().display());
    let mut cmd = Command::new("sh");
    cmd.args(["-c", &script]);
    join_before_exec(&mut cmd, joins);
    let mut job = cmd.spawn().expect("start the job");
    let out = vmtrace(&[
        "attach",
        "--cgroup",
        &parent.to_string_lossy(),
        "--duration",
        "14",
        "--json",
    ])
    .output()
    .expect("run vmtrace attach");
    let status = job.wait().expect("wait for the job");
    let memcg_stat = membox
        .memcg
        .as_ref()
        .and_then(|m| std::fs::read_to_string(m.dir.join("memory.stat")).ok())
        .unwrap_or_default();
    membox.kill_all();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && status.success(), "{err}");
    let r = json_of(&out);
    let majors = r["faults"]["major_target"].as_u64().unwrap_or(0);
    let pgmajfault: u64 = memcg_stat
        .lines()
        .find_map(|l| l.strip_prefix("pgmajfault ")?.trim().parse().ok())
        .expect("pgmajfault in the memory cgroup's memory.stat");
    eprintln!("child's tasks: {majors} major faults, the cgroup's pgmajfault {pgmajfault}");
    assert!(pgmajfault > 0, "the job never swapped in:\n{memcg_stat}");
    assert!(
        within(majors, pgmajfault, 0.02),
        "vmtrace {majors} vs pgmajfault {pgmajfault}\n{err}"
    );
    let stalls = r["memcg_reclaim"]["stalls"]["count"].as_u64().unwrap_or(0);
    assert!(stalls > 0, "{:#}", r["memcg_reclaim"]);
}
