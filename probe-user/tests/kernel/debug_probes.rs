//! `--debug-probes`: the rare events the programs count, logged one
//! line each with the task, as many lines as the recording counts, and
//! nothing without the flag.

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use vmtrace::kernel::probes::debug_log::PREFIX;

use crate::{
    attach::{memory_box, spawn_in_box},
    common::{guard, memhog, recording, scratch, vmtrace},
};

/// The `--debug-probes` lines of events in `stderr` (not the summary or
/// a note of lines suppressed, which start with a number), each as
/// (counter, the rest), every counter one the programs have.
fn debug_lines(stderr: &str) -> Vec<(vmtrace_common::Counter, String)> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix(PREFIX))
        .filter(|l| !l.starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| {
            let (name, rest) = l
                .split_once(": ")
                .unwrap_or_else(|| panic!("a debug line without a counter: {l}"));
            let counter = vmtrace_common::Counter::from_name(name)
                .unwrap_or_else(|| panic!("a debug line names no counter: {l}"));
            (counter, rest.to_string())
        })
        .collect()
}

/// `kernel.task_delayacct` set to 0 for the test, put back when dropped:
/// threads forked while it is 0 get no delay accounting.
struct DelayacctOff(String);

const DELAYACCT: &str = "/proc/sys/kernel/task_delayacct";

impl DelayacctOff {
    fn set() -> DelayacctOff {
        let was = std::fs::read_to_string(DELAYACCT).expect("task_delayacct");
        std::fs::write(DELAYACCT, "0").expect("task_delayacct off");
        DelayacctOff(was)
    }
}

impl Drop for DelayacctOff {
    fn drop(&mut self) {
        let _ = std::fs::write(DELAYACCT, self.0.trim());
    }
}

/// issue 43: `--debug-probes` logs each rare event the programs count,
/// one line each, with the task, and as many as the recording counts.
/// A 9-thread hog in a box, started while delay accounting is off, so
/// that none of its threads has any (`task->delays` NULL), attached to
/// and killed a second after the attach: each of its 9 threads exits
/// untracked, so exactly 9 delay_untracked lines, one per thread of
/// the hog, and 9 untracked threads in the recording. Reclaim ends
/// without a begin (any task's: the counter is machine-wide, as the
/// lines are) are logged as many as counted; how many there are is
/// timing (a reclaim under way when the begin program attaches, still
/// under way when the end one does, which is rare even under pressure:
/// 1 in 10 attaches to hogs in a 32 MiB box had any here), so not
/// asserted.
/// The same without the flag: the threads are counted again, nothing
/// is logged.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn debug_probes_log_as_many_lines_as_the_recording_counts() {
    use vmtrace_common::Counter;
    let _g = guard();
    let _delayacct = DelayacctOff::set();
    let attach = |debug: bool| {
        // Room for the hog: no swap I/O (whose unpaired requests flood
        // their own counter on some machines and can fill aya-log's
        // ring before a read).
        let membox = memory_box(256 << 20);
        let mut hog = spawn_in_box(
            &membox,
            Command::new(memhog()).args(["--threads", "8", "--mib", "8", "--passes", "100000"]),
        );
        let hog_pid = hog.id();
        let cgroup = membox
            .v2_cgroup()
            .expect("a cgroup v2 directory for the box")
            .dir
            .to_string_lossy()
            .into_owned();
        let threads = || -> Vec<String> {
            std::fs::read_dir(format!("/proc/{hog_pid}/task"))
                .map(|d| {
                    d.flatten()
                        .map(|t| t.file_name().to_string_lossy().into_owned())
                })
                .map(Iterator::collect)
                .unwrap_or_default()
        };
        let started = Instant::now();
        while threads().len() < 9 && started.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(100));
        }
        let tids = threads();
        assert_eq!(tids.len(), 9, "{tids:?}");
        let rec_path = scratch().join(format!("attach-debug-{debug}.vmtrace.json"));
        let rec_arg = rec_path.to_string_lossy().into_owned();
        // --no-stacks: no profile, whose stack-map collisions would
        // log lines of their own.
        let mut args = vec!["attach", "--cgroup", &cgroup, "--no-stacks"];
        args.extend(["--duration", "30", "-o", &rec_arg]);
        if debug {
            args.push("--debug-probes");
        }
        let mut child = vmtrace(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run vmtrace attach");
        // Killed a second after the attach: its threads exit traced,
        // and the attach ends when its target has.
        let mut err = String::new();
        let stderr = child.stderr.take().expect("stderr");
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.starts_with("vmtrace: attached to") {
                std::thread::sleep(Duration::from_secs(1));
                let _ = hog.kill();
            }
            err.push_str(&line);
            err.push('\n');
        }
        let status = child.wait().expect("wait for vmtrace attach");
        let _ = hog.kill();
        let _ = hog.wait();
        membox.kill_all();
        assert!(status.success(), "{err}");
        assert!(err.contains("every target has exited"), "{err}");
        let r = recording(&rec_path)["runs"][0]["report"].clone();
        let count = |v: &serde_json::Value| v.as_u64().unwrap_or_else(|| panic!("{v}?"));
        let untracked = count(&r["delays"]["untracked_threads"]);
        let unmatched = count(&r["dropped"]["reclaim_end_without_begin"]);
        (err, hog_pid, tids, untracked, unmatched)
    };

    let (err, hog_pid, tids, untracked, unmatched) = attach(true);
    let lines = debug_lines(&err);
    let of = |c: Counter| -> Vec<&String> {
        let rest = lines.iter().filter(move |(k, _)| *k == c);
        rest.map(|(_, rest)| rest).collect()
    };
    let exits = of(Counter::DelayUntracked);
    let ends = of(Counter::ReclaimEndUnmatched);
    eprintln!(
        "logged: {} untracked exits ({untracked} counted), {} reclaim ends \
         without a begin ({unmatched} counted)",
        exits.len(),
        ends.len()
    );
    assert_eq!(untracked, 9, "{err}");
    assert_eq!(exits.len() as u64, untracked, "{err}");
    let mut logged: Vec<String> = exits
        .iter()
        .map(|l| {
            let rest = l
                .strip_prefix(&format!("memhog pid {hog_pid} tid "))
                .unwrap_or_else(|| panic!("not a hog thread: {l}"));
            rest.split(' ').next().unwrap_or("").to_string()
        })
        .collect();
    let mut tids = tids;
    logged.sort();
    tids.sort();
    assert_eq!(logged, tids, "one line per thread of the hog");
    assert_eq!(ends.len() as u64, unmatched, "{err}");
    let shown = format!("{PREFIX}{} rare events logged, ", lines.len());
    assert!(
        err.lines().any(|l| l.starts_with(&shown)),
        "{shown}?\n{err}"
    );
    for c in [Counter::DelayUntracked, Counter::ReclaimEndUnmatched] {
        let note = format!(" more {} lines suppressed", c.name());
        assert!(!err.contains(&note), "{note}\n{err}");
    }

    let (err_off, _, _, untracked_off, _) = attach(false);
    assert_eq!(untracked_off, 9, "{err_off}");
    assert!(
        !err_off.contains(PREFIX),
        "logged without --debug-probes:\n{err_off}"
    );
}
