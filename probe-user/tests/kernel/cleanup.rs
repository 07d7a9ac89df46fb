//! Ending badly and cleaning up: Ctrl-C and other signals at every stage
//! still report and leave nothing behind; what a vmtrace killed with
//! SIGKILL left is removed by the next one.

use std::{
    path::Path,
    process::{Child, Output, Stdio},
    time::{Duration, Instant},
};

use crate::common::{
    Leftovers, assert_bpf_objects_back_to, bpf_object_counts, fresh_scratch, guard, json_of,
    page_cluster, recording, run_memhog, scratch, vmtrace,
};

/// Ctrl-C in the middle: the command gets it, the report is still
/// printed (marked interrupted), and the box is gone.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn interrupt_still_reports_and_cleans_up() {
    let _g = guard();
    let rec_path = scratch().join("interrupted.vmtrace.json");
    let _ = std::fs::remove_file(&rec_path);
    let child = run_memhog(
        true,
        &[
            "--mem",
            "64M",
            "--swap",
            "512M",
            "-o",
            &rec_path.to_string_lossy(),
        ],
        &["--mib", "128", "--passes", "100000"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawn vmtrace");
    // Wait until the box exists and the hog is in it.
    let start = Instant::now();
    while Leftovers::find()
        .iter()
        .all(|p| !p.contains("memory") && !p.contains("unified"))
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "box never appeared"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().expect("wait vmtrace");
    let r = json_of(&out);
    assert_eq!(r["exit"]["interrupted"], true, "{r:#}");
    assert_eq!(r["exit"]["signal"], libc::SIGINT, "{r:#}");
    assert_eq!(out.status.code(), Some(128 + libc::SIGINT));
    assert!(r["memcg_reclaim"]["stalls"]["count"].as_u64().unwrap_or(0) > 0);
    // The recording keeps the run, marked incomplete.
    let rec = recording(&rec_path);
    assert_eq!(rec["complete"], false, "{}", rec["incomplete_reason"]);
    assert!(
        rec["incomplete_reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("interrupted during run 1 of 1")),
        "{}",
        rec["incomplete_reason"]
    );
    assert_eq!(rec["runs"][0]["report"], r);
}

/// kill -9 mid-run: the programs go with the process (fd-owned links),
/// but the box stays, with the workload still in it, and its swapfile in
/// a --swap-dir of its own. The next vmtrace, even one that only
/// attaches, removes it all and says so.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn leftovers_of_a_killed_vmtrace_are_removed_by_the_next() {
    let g = guard();
    let sysctl = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/{name}"))
            .expect("sysctl")
            .trim()
            .to_string()
    };
    let (delayacct, cluster) = (sysctl("kernel/task_delayacct"), page_cluster());
    let other_cluster = if cluster == "1" { "2" } else { "1" };
    let bpf_before = bpf_object_counts();
    let swap_dir = fresh_scratch("killed-swap-dir");
    let mut child = run_memhog(
        false,
        &[
            "--mem",
            "64M",
            "--swap",
            "256M",
            "--swap-dir",
            &swap_dir.to_string_lossy(),
            "--sysctl",
            &format!("vm.page-cluster={other_cluster}"),
        ],
        &["--mib", "96", "--passes", "100000"],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn vmtrace");
    let start = Instant::now();
    while Leftovers::find().len() < 3 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "box never appeared"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Until the run has switched delay accounting on.
    while delayacct == "0" && sysctl("kernel/task_delayacct") == "0" {
        assert!(start.elapsed() < Duration::from_secs(30), "never traced");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    assert_ne!(bpf_object_counts(), bpf_before, "nothing was loaded?");
    child.kill().expect("kill -9 vmtrace");
    child.wait().expect("reap vmtrace");
    // Programs, maps and links were the dead process's: the kernel frees
    // them without anyone's help.
    assert_bpf_objects_back_to(bpf_before, "a vmtrace killed with SIGKILL");
    assert_eq!(
        page_cluster(),
        other_cluster,
        "the killed run changed nothing?"
    );
    let left = Leftovers::find();
    assert!(
        left.len() >= 3,
        "expected the dead run's box, found {left:?}"
    );

    // Attaching sweeps too (before, only a later run did).
    let mut bystander = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep");
    let out = vmtrace(&["attach", "--duration", "0.5", "--pid"])
        .arg(bystander.id().to_string())
        .args(["-o", &swap_dir.join("attach.json").to_string_lossy()])
        .output()
        .expect("attach vmtrace");
    let _ = bystander.kill();
    let _ = bystander.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("removed what a vmtrace that died left behind"),
        "{err}"
    );
    for path in &left {
        assert!(err.contains(path.as_str()), "{path} not reported: {err}");
    }
    assert_eq!(Leftovers::find(), Vec::<String>::new());
    // Its sysctls too, from its state file.
    assert!(
        err.contains(&format!("vm.page-cluster restored to {cluster}")),
        "{err}"
    );
    assert_eq!(page_cluster(), cluster);
    assert_eq!(sysctl("kernel/task_delayacct"), delayacct);
    drop(g);
}

/// Whether process `pid` blocks or catches SIGINT, SIGTERM and SIGHUP.
fn signals_held_or_caught(pid: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let mask = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .unwrap_or(0)
    };
    let ours = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP]
        .iter()
        .fold(0u64, |m, s| m | 1 << (s - 1));
    mask("SigBlk:") & ours == ours || mask("SigCgt:") & ours == ours
}

/// SIGINT, SIGTERM and SIGHUP at every stage: while the box is being set
/// up, while the command runs, and in a storm that also lands while the
/// report and recording are written. Each time vmtrace ends with either
/// the run recorded or a one-line reason, and leaves nothing behind (no
/// cgroup, swapfile or command still running).
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn signals_at_every_stage_leave_nothing_and_keep_the_run() {
    let _g = guard();
    let dir = fresh_scratch("signals");
    for (sig, name) in [
        (libc::SIGINT, "INT"),
        (libc::SIGTERM, "TERM"),
        (libc::SIGHUP, "HUP"),
    ] {
        signal_during_setup(&dir, sig, name);
        signal_while_running(&dir, sig, name);
        signal_storm(&dir, sig, name);
    }
}

/// `vmtrace run -o FILE -- CMD` in a small box, in `dir`, output piped.
fn start_in(dir: &Path, file: &str, cmd: &[&str]) -> Child {
    vmtrace(&[
        "run",
        "--progress",
        "none",
        "--mem",
        "64M",
        "--swap",
        "256M",
    ])
    .args(["-o", file, "--"])
    .args(cmd)
    .current_dir(dir)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("start vmtrace")
}

/// vmtrace ended with either the run recorded in `dir/file` or a one-line
/// reason, and left nothing behind; returns whether it recorded the run.
fn check_in(dir: &Path, out: &Output, file: &str, what: &str) -> bool {
    let err = String::from_utf8_lossy(&out.stderr);
    let recorded = dir.join(file).is_file();
    if recorded {
        let rec = recording(&dir.join(file));
        assert!(rec["runs"][0]["report"].is_object(), "{what}: {rec}");
    } else {
        assert!(
            err.contains("interrupted before the command started"),
            "{what}: neither a recording nor a reason: {err}"
        );
    }
    let left = Leftovers::find();
    assert!(left.is_empty(), "{what}: left {left:?}");
    recorded
}

/// Signal `sig` while the box is being set up.
fn signal_during_setup(dir: &Path, sig: i32, name: &str) {
    // Setup: as soon as the swapfile exists (before the probes are
    // attached and the command starts).
    let file = format!("setup-{name}.json");
    let child = start_in(dir, &file, &["sleep", "30"]);
    let t = Instant::now();
    while !Leftovers::find().iter().any(|p| p.ends_with(".swap")) {
        assert!(t.elapsed() < Duration::from_secs(20), "no swapfile");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
    let out = child.wait_with_output().expect("wait");
    assert!(
        t.elapsed() < Duration::from_secs(25),
        "SIG{name} in setup ignored"
    );
    check_in(dir, &out, &file, &format!("SIG{name} during setup"));
}

/// Signal `sig` while the command runs.
fn signal_while_running(dir: &Path, sig: i32, name: &str) {
    // Running: the command gets the signal, the run is recorded.
    let file = format!("run-{name}.json");
    let child = start_in(dir, &file, &["sleep", "30"]);
    let t = Instant::now();
    while !Leftovers::find().iter().any(|p| p.contains("unified")) {
        assert!(t.elapsed() < Duration::from_secs(20), "no box");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
    let out = child.wait_with_output().expect("wait");
    assert_eq!(
        out.status.code(),
        Some(128 + sig),
        "SIG{name} while running"
    );
    assert!(check_in(
        dir,
        &out,
        &file,
        &format!("SIG{name} while running")
    ));
    let rec = recording(&dir.join(&file));
    assert_eq!(rec["complete"], false);
    assert_eq!(rec["runs"][0]["report"]["exit"]["signal"], sig);
}

/// A storm of `sig` from vmtrace's start to its end.
fn signal_storm(dir: &Path, sig: i32, name: &str) {
    // A storm, from start to end: a short command, signalled every
    // few ms, so that some land while vmtrace writes its results.
    let file = format!("storm-{name}.json");
    let child = start_in(dir, &file, &["sleep", "0.3"]);
    let pid = child.id() as i32;
    // From vmtrace's first instruction on (a signal before a program
    // reaches main kills any program): the signals are blocked there
    // until they are caught.
    let t = Instant::now();
    while !signals_held_or_caught(pid) {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "vmtrace never started"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let storm = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // SAFETY: signalling our own child (the pid is ours until reaped
                // below).
                unsafe { libc::kill(pid, sig) };
                std::thread::sleep(Duration::from_millis(3));
            }
        })
    };
    let out = child.wait_with_output();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = storm.join();
    let out = out.expect("wait");
    check_in(dir, &out, &file, &format!("a storm of SIG{name}"));
}

/// Whether `pid` is gone (or a zombie its new parent has yet to reap),
/// waiting up to 5 s.
fn gone(pid: i32) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(s) if s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')) => {
                return true;
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    false
}

/// What a command leaves running in its box when it exits is counted in
/// the report and killed, in the cgroups it made under the box too (as
/// root it may); `--wait-background` waits for it instead.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn background_processes_are_counted_and_killed_with_their_cgroups() {
    let _g = guard();
    let dir = fresh_scratch("background");
    // One sleeper in a sub-cgroup the workload makes, one in the box.
    // The v2 mount is /sys/fs/cgroup, or /sys/fs/cgroup/unified on a
    // hybrid machine (the box's memory cgroup is then v1's).
    let script = r#"v2=$(awk '{for(i=1;i<NF;i++) if($i=="-"){if($(i+1)=="cgroup2") print $5; break}}' /proc/self/mountinfo | head -n 1)
cg=$v2$(sed -n 's/^0:://p' /proc/self/cgroup)
mkdir "$cg/sub" || exit 3
sh -c 'echo $$ > "$1/sub/cgroup.procs" && exec sleep 1000' x "$cg" &
echo $! > in-sub.pid
sleep 1000 &
echo $! > in-box.pid
while ! grep -q . "$cg/sub/cgroup.procs"; do sleep 0.1; done"#;
    let out = vmtrace(&["run", "--progress", "none", "--json", "--no-probes"])
        .args(["--as-root", "--mem", "256M", "--", "sh", "-c", script])
        .current_dir(&dir)
        .output()
        .expect("run vmtrace");
    let r = json_of(&out);
    assert_eq!(
        r["exit"]["code"],
        0,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(r["exit"]["background_killed"], 2, "{r:#}");
    for file in ["in-sub.pid", "in-box.pid"] {
        let pid: i32 = std::fs::read_to_string(dir.join(file))
            .expect(file)
            .trim()
            .parse()
            .expect(file);
        assert!(gone(pid), "{file}: {pid} still runs");
    }
    // The guard checks that the box (and so its sub-cgroup) is gone.

    // Waiting instead: the background writer finishes its file.
    let done = dir.join("written-late");
    let start = Instant::now();
    let out = vmtrace(&["run", "--progress", "none", "--json", "--no-probes"])
        .args(["--wait-background", "--mem", "256M", "--", "sh", "-c"])
        .arg(format!("(sleep 1; touch {}) & exit 0", done.display()))
        .output()
        .expect("run vmtrace");
    let r = json_of(&out);
    assert_eq!(r["exit"]["background_killed"], 0, "{r:#}");
    assert!(done.is_file(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(start.elapsed() >= Duration::from_secs(1));
}
