//! Kernel tests: the real `vmtrace` binary loads real eBPF programs, runs
//! a real memory hog in a real memory cgroup with a temporary swapfile,
//! and what it measured is checked against the kernel's own counters
//! (/proc/vmstat, rusage). They need root and change machine-wide state,
//! so they are #[ignore]d for plain `cargo test`; `cargo xtask test` runs
//! them as root, one at a time (/proc/vmstat is machine-wide).

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

const VMTRACE: &str = env!("CARGO_BIN_EXE_vmtrace");

/// The bundled memory hog, built beside vmtrace (`cargo xtask test` builds
/// it; VMTRACE_MEMHOG overrides).
fn memhog() -> PathBuf {
    if let Some(p) = std::env::var_os("VMTRACE_MEMHOG") {
        return PathBuf::from(p);
    }
    let dir = Path::new(VMTRACE).parent().expect("bin dir");
    let p = dir.join("memhog");
    assert!(
        p.is_file(),
        "{} is missing: build it with `cargo build --release -p vmtrace-workloads` \
         (cargo xtask test does)",
        p.display()
    );
    p
}

fn vmstat() -> std::collections::BTreeMap<String, u64> {
    std::fs::read_to_string("/proc/vmstat")
        .expect("read /proc/vmstat")
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

fn delta(
    before: &std::collections::BTreeMap<String, u64>,
    after: &std::collections::BTreeMap<String, u64>,
    keys: &[&str],
) -> u64 {
    keys.iter()
        .map(|k| after.get(*k).copied().unwrap_or(0) - before.get(*k).copied().unwrap_or(0))
        .sum()
}

/// Everything vmtrace creates is named vmtrace-<pid>. After a test, none
/// may be left; if some are (the test failed mid-way), remove them so the
/// next test starts clean, then fail.
struct Leftovers;

impl Leftovers {
    fn find() -> Vec<String> {
        let mut found = Vec::new();
        for root in [
            "/sys/fs/cgroup",
            "/sys/fs/cgroup/memory",
            "/sys/fs/cgroup/unified",
        ] {
            if let Ok(rd) = std::fs::read_dir(root) {
                for e in rd.flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if name.starts_with("vmtrace-") {
                        found.push(format!("{root}/{name}"));
                    }
                }
            }
        }
        let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
        for line in swaps.lines().skip(1) {
            if line.contains("vmtrace-") {
                found.push(line.split_whitespace().next().unwrap_or("").to_string());
            }
        }
        if let Ok(rd) = std::fs::read_dir("/var/tmp") {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with("vmtrace-") && name.ends_with(".swap") {
                    found.push(format!("/var/tmp/{name}"));
                }
            }
        }
        found.sort();
        found.dedup();
        found
    }

    /// Removes them, killing what still runs in a cgroup first (a test
    /// that failed half-way may leave its command running), so that one
    /// failure does not fail every test after it.
    fn remove(paths: &[String]) {
        for p in paths {
            let procs = Path::new(p).join("cgroup.procs");
            if procs.is_file() {
                let start = Instant::now();
                loop {
                    let pids = std::fs::read_to_string(&procs).unwrap_or_default();
                    if pids.trim().is_empty() || start.elapsed() > Duration::from_secs(5) {
                        break;
                    }
                    for pid in pids
                        .split_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok())
                    {
                        // SAFETY: killing a leftover test process.
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        for p in paths {
            let _ = Command::new("swapoff").arg(p).status();
            let _ = std::fs::remove_file(p);
            let _ = std::fs::remove_dir(p);
        }
    }
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        let left = Leftovers::find();
        if !left.is_empty() {
            Leftovers::remove(&left);
            if !std::thread::panicking() {
                panic!("vmtrace left these behind: {left:?}");
            }
        }
    }
}

fn guard() -> Leftovers {
    let before = Leftovers::find();
    assert!(
        before.is_empty(),
        "leftovers from an earlier run: {before:?}"
    );
    Leftovers
}

/// Where vmtrace runs in the tests: recordings land here, not in the tree.
fn scratch() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kernel-tests");
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// An empty directory of its own under `scratch()`.
fn fresh_scratch(name: &str) -> PathBuf {
    let dir = scratch().join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn vmtrace(args: &[&str]) -> Command {
    let mut c = Command::new(VMTRACE);
    // Run as whoever runs the tests (root), even under sudo: the
    // commands run as sudo's invoker otherwise (tested apart).
    c.args(args)
        .env("RUST_LOG", "warn")
        .env_remove("SUDO_UID")
        .env_remove("SUDO_GID")
        .env_remove("SUDO_USER")
        .current_dir(scratch());
    c
}

/// `vmtrace run --progress none [--json] OPTIONS -- memhog HOG_ARGS`.
fn run_memhog(json: bool, options: &[&str], hog_args: &[&str]) -> Command {
    let mut c = vmtrace(&["run", "--progress", "none"]);
    if json {
        c.arg("--json");
    }
    c.args(options).arg("--").arg(memhog()).args(hog_args);
    c
}

/// Runs vmtrace, requires it to succeed, and returns its text output.
fn text_ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run vmtrace");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Runs vmtrace, requires it to succeed, and returns its JSON report.
fn json_ok(cmd: &mut Command) -> Value {
    let out = cmd.output().expect("run vmtrace");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(&out)
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "vmtrace did not print JSON ({e}); stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn within(a: u64, b: u64, frac: f64) -> bool {
    let (a, b) = (a as f64, b as f64);
    (a - b).abs() <= frac * a.max(b).max(1.0)
}

/// The issue's acceptance test: a memory hog in a 128 MiB memcg with 1 GiB
/// of swap. vmtrace must see memcg reclaim, and its LRU and major-fault
/// totals must equal the kernel's own /proc/vmstat deltas within 1%.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn memcg_reclaim_and_faults_match_the_kernels_counters() {
    let _g = guard();
    let delayacct_before =
        std::fs::read_to_string("/proc/sys/kernel/task_delayacct").expect("task_delayacct");
    let before = vmstat();
    let out = run_memhog(
        true,
        &["--mem", "128M", "--swap", "1G"],
        &["--mib", "384", "--passes", "1"],
    )
    .output()
    .expect("run vmtrace");
    let after = vmstat();
    let r = json_of(&out);
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "status {:?}", out.status);
    assert_eq!(r["exit"]["code"], 0, "{r:#}");
    assert!(r["membox"]["cgroup_version"].is_string(), "{r:#}");

    let memcg = &r["memcg_reclaim"];
    let stalls = memcg["stalls"]["count"].as_u64().expect("memcg stalls");
    assert!(stalls > 0, "no memcg reclaim seen: {memcg:#}");

    // The kernel's own delay accounting agrees with the eBPF stall time
    // (it times the same reclaim calls from inside), and vmtrace put
    // kernel.task_delayacct back as it found it.
    let d = &r["delays"];
    assert_eq!(d["accounting_on"], true, "{d}");
    let freepages = d["freepages_ns"].as_u64().unwrap_or(0);
    let stall_ns = memcg["stalls"]["total_ns"].as_u64().unwrap_or(0);
    assert!(
        within(freepages, stall_ns, 0.25),
        "delayacct reclaim {freepages} ns vs eBPF {stall_ns} ns"
    );
    assert!(d["swapin_ns"].as_u64().unwrap_or(0) > 0, "{d}");
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/task_delayacct")
            .expect("sysctl")
            .trim(),
        delayacct_before.trim()
    );
    assert!(memcg["stalls"]["p50_ns"].as_u64().unwrap_or(0) > 0);

    let rows = r["lru_shrink_inactive"].as_array().expect("lru rows");
    let sum = |key: &str| {
        rows.iter()
            .map(|row| row[key].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    let (scanned, reclaimed) = (sum("nr_scanned"), sum("nr_reclaimed"));
    let pgscan = delta(&before, &after, &["pgscan_anon", "pgscan_file"]);
    let pgsteal = delta(&before, &after, &["pgsteal_anon", "pgsteal_file"]);
    eprintln!(
        "lru scanned {scanned} vs pgscan {pgscan}; reclaimed {reclaimed} vs pgsteal {pgsteal}"
    );
    assert!(scanned > 0 && reclaimed > 0);
    // Some kernels leave memcg reclaim out of pgscan/pgsteal; then the
    // cgroup's own memory.stat is the reference (issue #2 allows either).
    if pgscan > 0 {
        assert!(
            within(scanned, pgscan, 0.01),
            "scanned {scanned} vs pgscan {pgscan}"
        );
        assert!(
            within(reclaimed, pgsteal, 0.01),
            "reclaimed {reclaimed} vs pgsteal {pgsteal}"
        );
    } else {
        let stat = &r["membox"]["memory_stat"];
        let steal = stat["pgsteal"].as_u64().expect("memory.stat pgsteal");
        assert!(
            within(reclaimed, steal, 0.01),
            "reclaimed {reclaimed} vs memory.stat {steal}"
        );
    }
    // The reclaim the memcg context shows is the memcg reclaim's own.
    let memcg_lru: u64 = rows
        .iter()
        .filter(|row| row["context"] == "memcg")
        .map(|row| row["nr_reclaimed"].as_u64().unwrap_or(0))
        .sum();
    let memcg_pages = memcg["pages_reclaimed"].as_u64().unwrap_or(0);
    assert!(
        within(memcg_lru, memcg_pages, 0.01),
        "lru memcg {memcg_lru} vs end {memcg_pages}"
    );

    let major_all = r["faults"]["major_all"].as_u64().expect("major_all");
    let pgmajfault = delta(&before, &after, &["pgmajfault"]);
    eprintln!("major faults: vmtrace {major_all}, vmstat {pgmajfault}");
    assert!(
        major_all > 1000,
        "too few major faults to compare: {major_all}"
    );
    assert!(
        within(major_all, pgmajfault, 0.01),
        "{major_all} vs {pgmajfault}"
    );
    // The target's major faults are the hog's, which rusage counts too.
    let major_target = r["faults"]["major_target"].as_u64().expect("major_target");
    let rusage_major = r["usage"]["major_faults"].as_u64().expect("rusage");
    assert!(
        within(major_target, rusage_major, 0.01),
        "{major_target} vs {rusage_major}"
    );
    // Swap really happened, in the kernel's own words, and vmtrace saw
    // the same swap-outs (folios are single pages here: THP is madvise).
    let pswpout = delta(&before, &after, &["pswpout"]);
    assert!(pswpout > 10_000, "{pswpout}");
    let anon_out = r["swap_out"]["anon_folios"].as_u64().expect("swap_out");
    eprintln!("swap-out: vmtrace {anon_out} folios, pswpout {pswpout}");
    assert!(within(anon_out, pswpout, 0.01), "{anon_out} vs {pswpout}");

    // Swap device I/O: what the block layer moved to and from the swap
    // area is what vmstat counts as swapped out and in (pages of 4 KiB).
    let io = &r["swap_io"];
    assert!(
        io["areas"].as_array().is_some_and(|a| a
            .iter()
            .any(|p| p.as_str().is_some_and(|p| p.contains("vmtrace-")))),
        "{io:#}"
    );
    let page = 4096;
    let (wrote, read) = (
        io["write_bytes"].as_u64().unwrap_or(0),
        io["read_bytes"].as_u64().unwrap_or(0),
    );
    let pswpin = delta(&before, &after, &["pswpin"]);
    eprintln!(
        "swap I/O: wrote {} pages vs pswpout {pswpout}, read {} vs pswpin {pswpin}",
        wrote / page,
        read / page
    );
    assert!(
        within(wrote / page, pswpout, 0.01),
        "{wrote} B vs {pswpout} pages"
    );
    assert!(
        within(read / page, pswpin, 0.01),
        "{read} B vs {pswpin} pages"
    );
    assert!(io["write"]["p50_ns"].as_u64().unwrap_or(0) > 0, "{io:#}");

    // Nothing was lost: no program skipped by the kernel, no map full.
    let dropped = &r["dropped"];
    assert_eq!(
        dropped["program_misses"],
        serde_json::json!([]),
        "{dropped:#}"
    );
    assert_eq!(dropped["evicted"], serde_json::json!([]), "{dropped:#}");
    for key in [
        "reclaim_start_map_full",
        "swap_io_map_full",
        "node_out_of_range",
    ] {
        assert_eq!(dropped[key], 0, "{dropped:#}");
    }

    // The hog is the process that stalled most, and it is the target.
    let top = &r["top_stallers"][0];
    assert_eq!(top["comm"], "memhog", "{:#}", r["top_stallers"]);
    assert_eq!(top["target"], true);
    assert_eq!(top["pid"], r["pid"]);
    assert_eq!(top["memcg_stalls"].as_u64(), Some(stalls));
    // Every target reclaim has an order; the hog asks for single pages.
    let orders = r["reclaim_order"]
        .as_array()
        .and_then(|rows| rows.iter().find(|row| row["context"] == "memcg"))
        .expect("memcg orders");
    let by_order: Vec<u64> = orders["counts"]
        .as_array()
        .expect("counts")
        .iter()
        .map(|n| n.as_u64().unwrap_or(0))
        .collect();
    assert_eq!(by_order.iter().sum::<u64>(), stalls, "{by_order:?}");
    // Priorities were recorded for every inactive shrink.
    let prio_total: u64 = r["reclaim_priority"]
        .as_array()
        .expect("priority")
        .iter()
        .flat_map(|row| row["counts"].as_array().cloned().unwrap_or_default())
        .map(|n| n.as_u64().unwrap_or(0))
        .sum();
    let events: u64 = rows
        .iter()
        .map(|row| row["events"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(prio_total, events);
    // memcg reclaim runs the memcg-aware shrinkers: timed, every call.
    let slab = &r["slab_shrink"]["calls"];
    assert!(slab["count"].as_u64().unwrap_or(0) > 0, "{slab:#}");
    assert!(slab["p50_ns"].as_u64().unwrap_or(0) > 0, "{slab:#}");
    // LRU isolation of the inactive lists is what vmstat counts as pgscan
    // (the active lists' pgrefill leaves out memcg reclaim: see the
    // kswapd test for that one).
    let iso_inactive = isolate_scanned(&r, &[0, 2]);
    eprintln!("isolate inactive {iso_inactive} vs pgscan {pgscan}");
    assert!(
        within(iso_inactive, pgscan, 0.01),
        "{iso_inactive} vs {pgscan}"
    );
    // The time line: a snapshot per second, counters never going back,
    // ending where the run's totals end.
    let tl = r["timeline"].as_array().expect("timeline");
    let wall = r["usage"]["wall_s"].as_f64().unwrap_or(0.0);
    assert!(
        tl.len() as f64 >= wall.floor(),
        "{} samples in {wall} s",
        tl.len()
    );
    for pair in tl.windows(2) {
        for key in ["pgscan", "pswpout", "memcg_reclaims", "memcg_stall_ns"] {
            assert!(
                pair[0][key].as_u64() <= pair[1][key].as_u64(),
                "{key} went back"
            );
        }
    }
    let last = tl.last().expect("a sample");
    assert_eq!(last["memcg_reclaims"].as_u64(), Some(stalls));
    assert!(within(last["pgscan"].as_u64().unwrap_or(0), pgscan, 0.01));
    assert!(last["zones"].as_array().is_some_and(|z| z.len() >= 3));
    let zones = r["zones"].as_array().expect("zones");
    assert!(zones.iter().any(|z| z["zone"] == "Normal"), "{zones:?}");
    // Throttling and compaction are reported (zero or not) when available.
    assert!(
        r["throttle"]["delays"]["count"].is_u64(),
        "{:#}",
        r["throttle"]
    );
    assert!(
        r["compaction"]["all_tasks"].is_u64(),
        "{:#}",
        r["compaction"]
    );
}

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
    assert_eq!(v["target"], true);
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

/// The text report: histograms with quantiles and bars, in 72 columns.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn text_report_has_histograms_and_fits_a_mail() {
    let _g = guard();
    let text = text_ok(&mut run_memhog(
        false,
        &["--mem", "64M", "--swap", "512M"],
        &["--mib", "160"],
    ));
    assert!(text.contains("memcg reclaim: "), "{text}");
    assert!(text.contains("p99.9"), "{text}");
    assert!(text.contains("|@"), "{text}");
    for line in text.lines() {
        assert!(line.is_ascii() && line.len() <= 72, "line too wide: {line}");
    }
}

/// Not root: one line that says what to do, non-zero exit, nothing made.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn refuses_without_privileges_in_one_line() {
    let _g = guard();
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(VMTRACE)
        .args(["run", "--mem", "64M", "--swap", "256M", "--", "true"])
        .output()
        .expect("setpriv (util-linux)");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("needs root") && err.contains("sudo"), "{err}");
}

/// A command that does not exist: one line, before anything is set up.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn missing_command_is_one_line() {
    let _g = guard();
    let out = vmtrace(&[
        "run",
        "--mem",
        "64M",
        "--swap",
        "256M",
        "--",
        "/nonexistent/cmd",
    ])
    .output()
    .expect("run vmtrace");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("/nonexistent/cmd") && err.contains("not found"),
        "{err}"
    );
}

/// Bad sizes are refused by the argument parser with the reason.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn bad_sizes_are_refused() {
    let _g = guard();
    for (args, want) in [
        (vec!["--mem", "-1G"], "negative"),
        (vec!["--mem", "10"], "too small"),
        (vec!["--swap", "1T"], "does not fit"),
    ] {
        let out = vmtrace(&["run"])
            .args(&args)
            .args(["--", "true"])
            .output()
            .expect("run vmtrace");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} accepted");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

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

/// A recording, read as JSON.
fn recording(path: &Path) -> Value {
    let bytes =
        std::fs::read(path).unwrap_or_else(|e| panic!("no recording at {}: {e}", path.display()));
    serde_json::from_slice(&bytes).expect("recording is JSON")
}

/// Run, then report: the recording (default name, in the working
/// directory, owned by the sudo user) holds the machine's environment and
/// reproduces the run's report exactly; its text export is mail-ready.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn recording_round_trips_to_report_and_exports() {
    let _g = guard();
    let dir = fresh_scratch("round-trip");
    let out = run_memhog(
        false,
        &["--mem", "64M", "--swap", "512M", "--fault-latency"],
        &["--mib", "128", "--passes", "1"],
    )
    .current_dir(&dir)
    .env("SUDO_UID", "65534")
    .env("SUDO_GID", "65534")
    .output()
    .expect("run vmtrace");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ran = String::from_utf8_lossy(&out.stdout).into_owned();
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read dir")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let path = &files[0];
    let name = path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("release");
    assert!(
        name.starts_with(&format!("vmtrace-memhog-{}-", release.trim()))
            && name.ends_with("Z.vmtrace.json"),
        "{name}"
    );
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).expect("stat");
    assert_eq!(
        (meta.uid(), meta.gid()),
        (65534, 65534),
        "not the sudo user's"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("recording written to {name}")),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let rec = recording(path);
    assert_eq!(rec["format"], "vmtrace-recording");
    assert_eq!(rec["format_version"], 1);
    assert_eq!(rec["complete"], true);
    let env = &rec["environment"];
    assert_eq!(env["kernel_release"], release.trim());
    assert!(env["cpus"].as_u64().unwrap_or(0) >= 1, "{env}");
    assert!(env["vm_sysctls"]["swappiness"].is_string(), "{env}");
    assert!(env["boot_cmdline"].as_str().is_some_and(|c| !c.is_empty()));
    assert_eq!(rec["workload"]["name"], "memhog");
    let report = &rec["runs"][0]["report"];
    assert!(report["membox"]["mem_limit_bytes"].as_u64() == Some(64 << 20));
    let steps = report["timeline"].as_array().expect("timeline");
    assert!(!steps.is_empty());
    assert!(
        steps
            .iter()
            .any(|s| s["hists"]["memcg_reclaim"].is_string()),
        "no per-interval histograms"
    );

    // The report reproduces the run's text exactly, after the header.
    let shown = text_ok(&mut vmtrace(&["report", &path.to_string_lossy()]));
    assert!(
        shown.contains(&ran),
        "report differs from the run:\n{shown}"
    );
    assert!(shown.contains("workload: memhog "), "{shown}");
    let mail = text_ok(&mut vmtrace(&[
        "export",
        &path.to_string_lossy(),
        "--format",
        "text",
    ]));
    for (i, line) in mail.lines().enumerate() {
        assert!(
            line.is_ascii() && line.len() <= 72 && !line.contains('\t'),
            "line {}: {line:?}",
            i + 1
        );
    }
    assert!(mail.contains(&ran.lines().take(3).collect::<Vec<_>>().join("\n")));
}

/// A tracepoint missing on "this kernel" (a copy of the live formats with
/// one removed) disables that metric alone, with a notice.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn missing_tracepoint_disables_only_its_metric() {
    let _g = guard();
    // Copy the live formats (mounting tracefs for the copy if it is not
    // mounted; vmtrace itself mounts and unmounts it as needed).
    let live = Path::new("/sys/kernel/tracing/events");
    let mounted_here = !live.join("vmscan").is_dir();
    if mounted_here {
        let st = Command::new("mount")
            .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
            .status()
            .expect("mount");
        assert!(st.success(), "cannot mount tracefs");
    }
    let tmp = std::env::temp_dir().join(format!("vmtrace-formats-{}", std::process::id()));
    for system in ["vmscan", "exceptions"] {
        for e in std::fs::read_dir(live.join(system))
            .expect("read tracefs")
            .flatten()
        {
            let f = e.path().join("format");
            if f.is_file() {
                let dst = tmp.join(system).join(e.file_name());
                std::fs::create_dir_all(&dst).expect("mkdir");
                std::fs::copy(&f, dst.join("format")).expect("copy");
            }
        }
    }
    if mounted_here {
        let _ = Command::new("umount").arg("/sys/kernel/tracing").status();
    }
    std::fs::remove_dir_all(tmp.join("vmscan/mm_vmscan_direct_reclaim_begin")).expect("rm");
    let out = run_memhog(true, &["--mem", "64M", "--swap", "256M"], &["--mib", "96"])
        .env("VMTRACE_TRACEFS_FORMATS", &tmp)
        .output()
        .expect("run vmtrace");
    std::fs::remove_dir_all(&tmp).ok();
    let r = json_of(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("notice: direct_reclaim unavailable"), "{err}");
    assert!(err.contains("mm_vmscan_direct_reclaim_begin"), "{err}");
    assert_eq!(r["unavailable"][0]["metric"], "direct_reclaim");
    assert!(r["direct_reclaim"].is_null());
    assert!(r["memcg_reclaim"]["stalls"]["count"].as_u64().unwrap_or(0) > 0);
    assert!(r["faults"]["major_all"].as_u64().is_some());
}

/// Fault latency (tp_btf entry + perf-event exit): every minor fault of the
/// command timed, and counted like rusage counts them.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn fault_latency_counts_match_rusage() {
    let _g = guard();
    let r = json_ok(&mut run_memhog(
        true,
        &["--fault-latency"],
        &["--mib", "64"],
    ));
    assert!(
        r["unavailable"].as_array().is_some_and(|a| a.is_empty()),
        "{r:#}"
    );
    let minor = r["faults"]["minor_target"].as_u64().expect("minor_target");
    let rusage = r["usage"]["minor_faults"].as_u64().expect("rusage");
    let timed = r["faults"]["minor_latency"]["count"]
        .as_u64()
        .expect("latency");
    eprintln!("minor faults: perf {minor}, rusage {rusage}, timed {timed}");
    // 64 MiB touched: at least 16k faults (fewer with THP, more with libc).
    assert!(minor > 1000, "{minor}");
    assert!(within(minor, rusage, 0.02), "{minor} vs {rusage}");
    // Faults taken inside the kernel (get_user_pages) have no entry stamp.
    assert!(
        timed <= minor && timed * 10 >= minor * 9,
        "{timed} of {minor}"
    );
    assert!(r["faults"]["minor_latency"]["p50_ns"].as_u64().unwrap_or(0) > 0);
    // Per process: the hog's faults, adding up to the histogram's count.
    let times = r["faults"]["process_time"]
        .as_array()
        .expect("process_time");
    assert_eq!(times[0]["comm"], "memhog", "{times:?}");
    assert_eq!(times[0]["pid"], r["pid"]);
    let per_process: u64 = times.iter().map(|t| t["minor"].as_u64().unwrap_or(0)).sum();
    assert_eq!(per_process, timed, "{times:?}");
    // Under pressure, every major fault of the command is timed too (the
    // major-fault program times only when fault latency is on).
    let r = json_ok(&mut run_memhog(
        true,
        &["--fault-latency", "--mem", "64M", "--swap", "256M"],
        &["--mib", "96"],
    ));
    let major = r["faults"]["major_target"].as_u64().unwrap_or(0);
    assert!(major > 1000, "{major}");
    // A fault taken from kernel mode (copy_to_user) raises the perf event
    // without a page_fault_user entry stamp: counted, not timed.
    let timed = r["faults"]["major_latency"]["count"].as_u64().unwrap_or(0);
    assert!(
        timed <= major && within(timed, major, 0.01),
        "{timed} of {major}"
    );
}

/// `vmtrace probes` agrees with the live tracefs: a tracepoint it calls
/// available has a format file there, and vice versa.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn probes_listing_matches_live_tracefs() {
    let _g = guard();
    let out = vmtrace(&["probes", "--json"])
        .output()
        .expect("run vmtrace");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let listed = listed.as_array().expect("array");
    assert!(listed.len() >= 5);
    // Read tracefs ourselves (mounting it for the check if needed).
    let events = Path::new("/sys/kernel/tracing/events");
    let mounted_here = !events.join("vmscan").is_dir();
    if mounted_here {
        assert!(
            Command::new("mount")
                .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
                .status()
                .expect("mount")
                .success()
        );
    }
    for m in listed {
        let mut all_present = true;
        for hook in m["hooks"].as_array().expect("hooks") {
            let hook = hook.as_str().expect("str");
            if let Some(tp) = hook.strip_prefix("tracepoint ") {
                // "system:event" or, where none exists, "system:a|b".
                let (system, names) = tp.split_once(':').expect("system:event");
                all_present &= names
                    .split('|')
                    .any(|event| events.join(system).join(event).join("format").is_file());
            }
        }
        let available = m["available"].as_bool().expect("bool");
        if !all_present {
            assert!(!available, "{m:#}");
        }
        if all_present && m["id"] != "fault_latency" {
            assert!(available, "{m:#}");
        }
    }
    if mounted_here {
        let _ = Command::new("umount").arg("/sys/kernel/tracing").status();
    }
}

/// Global pressure, bounded: a hog half a GiB larger than the free memory
/// (swap behind it, so nothing is OOM-killed) makes kswapd reclaim. What
/// vmtrace saw of kswapd must match the kernel's own counters.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn kswapd_under_global_pressure_matches_vmstat() {
    let _g = guard();
    let meminfo = std::fs::read_to_string("/proc/meminfo").expect("meminfo");
    let kb = |key: &str| -> u64 {
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let mib = kb("MemFree:") / 1024 + 512;
    // The hog never exceeds what reclaim can free plus the swap added.
    assert!(
        mib * 1024 < kb("MemAvailable:") + (2 << 20),
        "{mib} MiB would not fit"
    );
    let before = vmstat();
    let out = run_memhog(true, &["--swap", "2G"], &["--mib", &mib.to_string()])
        .output()
        .expect("run vmtrace");
    let after = vmstat();
    let r = json_of(&out);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let k = &r["kswapd"];
    let rounds: u64 = k["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["wakes"].as_u64().unwrap_or(0))
        .sum();
    let pageoutrun = delta(&before, &after, &["pageoutrun"]);
    eprintln!("kswapd rounds: vmtrace {rounds}, pageoutrun {pageoutrun}");
    assert!(rounds > 0, "{k:#}");
    assert!(within(rounds, pageoutrun, 0.05), "{rounds} vs {pageoutrun}");
    let wakeups: u64 = k["wakeups"]
        .as_array()
        .expect("wakeups")
        .iter()
        .map(|w| w["count"].as_u64().unwrap_or(0))
        .sum();
    assert!(wakeups > 0, "{k:#}");
    let by_order: u64 = k["wakeup_orders"]
        .as_array()
        .expect("wakeup_orders")
        .iter()
        .map(|n| n.as_u64().unwrap_or(0))
        .sum();
    assert_eq!(by_order, wakeups, "{k:#}");
    assert!(
        k["wakers"]
            .as_array()
            .is_some_and(|w| w.iter().any(|w| w["name"] == "memhog")),
        "{k:#}"
    );

    // kswapd's share of the LRU scanning equals vmstat's pgscan_kswapd.
    let rows = r["lru_shrink_inactive"].as_array().expect("lru");
    let (scanned, reclaimed) = (
        lru_sum(rows, "kswapd", "nr_scanned"),
        lru_sum(rows, "kswapd", "nr_reclaimed"),
    );
    let pgscan_kswapd = delta(&before, &after, &["pgscan_kswapd"]);
    let pgsteal_kswapd = delta(&before, &after, &["pgsteal_kswapd"]);
    eprintln!(
        "kswapd scanned {scanned} vs {pgscan_kswapd}; reclaimed {reclaimed} vs {pgsteal_kswapd}"
    );
    assert!(scanned > 0);
    assert!(
        within(scanned, pgscan_kswapd, 0.01),
        "{scanned} vs {pgscan_kswapd}"
    );
    assert!(
        within(reclaimed, pgsteal_kswapd, 0.01),
        "{reclaimed} vs {pgsteal_kswapd}"
    );
    assert_eq!(
        r["dropped"]["program_misses"],
        serde_json::json!([]),
        "{:#}",
        r["dropped"]
    );
    // Global reclaim: isolation from the active lists is vmstat's pgrefill.
    let iso_active = isolate_scanned(&r, &[1, 3]);
    let pgrefill = delta(&before, &after, &["pgrefill"]);
    eprintln!("isolate active {iso_active} vs pgrefill {pgrefill}");
    assert!(
        within(iso_active, pgrefill, 0.01),
        "{iso_active} vs {pgrefill}"
    );
    // Global direct reclaim, when it happened, is the hog's and matches
    // vmstat's pgscan_direct too.
    let direct = lru_sum(rows, "direct", "nr_scanned");
    let pgscan_direct = delta(&before, &after, &["pgscan_direct"]);
    assert!(
        within(direct, pgscan_direct, 0.01),
        "{direct} vs {pgscan_direct}"
    );
}

/// Sum of one field of the LRU rows of one reclaim context.
fn lru_sum(rows: &[Value], context: &str, key: &str) -> u64 {
    rows.iter()
        .filter(|row| row["context"] == context)
        .map(|row| row[key].as_u64().unwrap_or(0))
        .sum()
}

/// Per-process fault counts, read from the kernel's task counters at
/// exit: two hogs and the shell that started them, summed, are exactly
/// what rusage says of the whole (reaped) tree.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn per_process_faults_add_up_to_rusage() {
    let _g = guard();
    let hog = memhog();
    let script = format!(
        "{h} --mib 160 --seed 2 & {h} --mib 96 --seed 3; wait",
        h = hog.display()
    );
    let r = json_ok(
        vmtrace(&[
            "run",
            "--json",
            "--progress",
            "none",
            "--mem",
            "96M",
            "--swap",
            "512M",
            "--",
        ])
        .args(["bash", "-c", &script]),
    );
    let p = &r["faults"]["processes"];
    let top = p["top"].as_array().expect("top");
    let hogs: Vec<&Value> = top.iter().filter(|t| t["comm"] == "memhog").collect();
    assert_eq!(hogs.len(), 2, "{p:#}");
    assert!(top.iter().any(|t| t["comm"] == "bash"), "{p:#}");
    assert!(
        hogs.iter().all(|h| h["major"].as_u64().unwrap_or(0) > 0),
        "{p:#}"
    );
    assert_eq!(p["minor"], r["usage"]["minor_faults"], "{p:#}");
    assert_eq!(p["major"], r["usage"]["major_faults"], "{p:#}");
    // The perf-event count of the target's major faults agrees too.
    let perf = r["faults"]["major_target"].as_u64().unwrap_or(0);
    assert!(
        within(perf, p["major"].as_u64().unwrap_or(0), 0.01),
        "{perf} vs {p:#}"
    );
    assert!(r["faults"]["kernel_mode_target"].is_u64());
}

/// Pages scanned by LRU isolation on the given lists (enum lru_list).
fn isolate_scanned(r: &Value, lists: &[u64]) -> u64 {
    r["lru_isolate"]
        .as_array()
        .expect("lru_isolate")
        .iter()
        .filter(|i| lists.contains(&i["lru"].as_u64().unwrap_or(9)))
        .map(|i| i["nr_scanned"].as_u64().unwrap_or(0))
        .sum()
}

/// --page-alloc: pages allocated per zone, found from the pfn, add up to
/// the kernel's pgalloc_* counters over the run.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn page_alloc_per_zone_matches_pgalloc() {
    let _g = guard();
    let r = json_ok(&mut run_memhog(true, &["--page-alloc"], &["--mib", "256"]));
    let zones = r["zones"].as_array().expect("zones");
    let total: u64 = zones
        .iter()
        .map(|z| z["allocated_pages"].as_u64().expect("allocated_pages"))
        .sum();
    let pgalloc = r["vmstat"]["pgalloc"].as_u64().expect("pgalloc");
    eprintln!("pages allocated: vmtrace {total}, pgalloc {pgalloc}");
    // 256 MiB touched: at least 65536 pages.
    assert!(total >= 65536, "{total}");
    assert!(within(total, pgalloc, 0.02), "{total} vs {pgalloc}");
}

/// `vmtrace run qsbench`: the bundled qsbench with its defaults (-m 350
/// in a 256 MiB box with 2 GiB of swap). It either reclaims and swaps, or
/// (as the seed mails saw, and FACTS.md in about 3 of 10 runs) is
/// OOM-killed, which the report must then say in the mails' words.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn qsbench_default_run_swaps_or_reports_its_oom_kill() {
    let _g = guard();
    let before = vmstat();
    let out = vmtrace(&["run", "--json", "--progress", "none", "qsbench"])
        .output()
        .expect("run vmtrace");
    let after = vmstat();
    let r = json_of(&out);
    assert_eq!(r["command"], serde_json::json!(["qsbench", "-m", "350"]));
    assert_eq!(r["membox"]["mem_limit_bytes"], 256u64 << 20);
    assert_eq!(r["membox"]["swap_bytes"], 2u64 << 30);
    if r["exit"]["oom_killed"] == true {
        let victims = r["oom_victims"].as_array().expect("victims");
        assert!(
            victims.iter().any(|v| v["comm"] == "qsbench"),
            "{victims:?}"
        );
        return;
    }
    assert_eq!(r["exit"]["code"], 0, "{:#}", r["exit"]);
    assert!(r["memcg_reclaim"]["stalls"]["count"].as_u64().unwrap_or(0) > 0);
    let major = r["faults"]["major_target"].as_u64().unwrap_or(0);
    assert!(major > 1000, "{major}");
    let swapped = r["swap_out"]["anon_folios"].as_u64().unwrap_or(0);
    let pswpout = delta(&before, &after, &["pswpout"]);
    assert!(
        swapped > 10_000 && within(swapped, pswpout, 0.01),
        "{swapped} vs {pswpout}"
    );
    // The whole array was sorted by the one sorter process.
    let top = &r["faults"]["processes"]["top"][0];
    assert_eq!(top["comm"], "qsbench", "{top:#}");
}

/// qsbench -M: the array is a shared file mapping, so reclaim works on
/// file pages and nothing goes to swap; -p 2 forks two sorters.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn qsbench_file_backed_and_forked() {
    let _g = guard();
    let out = vmtrace(&[
        "run",
        "--json",
        "--progress",
        "none",
        "--mem",
        "64M",
        "qsbench",
        "-M",
        "-m",
        "96",
    ])
    .output()
    .expect("run vmtrace");
    let r = json_of(&out);
    assert_eq!(r["exit"]["code"], 0, "{:#}", r["exit"]);
    let rows = r["lru_shrink_inactive"].as_array().expect("lru");
    let file: u64 = rows
        .iter()
        .filter(|row| row["lru"] == "file")
        .map(|row| row["nr_scanned"].as_u64().unwrap_or(0))
        .sum();
    let anon: u64 = rows
        .iter()
        .filter(|row| row["lru"] == "anon")
        .map(|row| row["nr_scanned"].as_u64().unwrap_or(0))
        .sum();
    assert!(
        file > 10_000 && file > 10 * anon,
        "file {file}, anon {anon}"
    );
    assert_eq!(r["swap_out"]["anon_folios"], 0);

    let out = vmtrace(&[
        "run",
        "--json",
        "--progress",
        "none",
        "qsbench",
        "-p",
        "2",
        "-m",
        "8",
    ])
    .output()
    .expect("run vmtrace");
    let r = json_of(&out);
    assert_eq!(r["exit"]["code"], 0, "{:#}", r["exit"]);
    let procs = r["faults"]["processes"]["top"]
        .as_array()
        .expect("processes");
    let sorters: Vec<&Value> = procs
        .iter()
        .filter(|p| p["comm"] == "qsbench" && p["minor"].as_u64().unwrap_or(0) >= 2048)
        .collect();
    // Two children each touched their own 8 MiB (2048 pages); the parent
    // only waited.
    assert_eq!(sorters.len(), 2, "{procs:?}");
    assert_eq!(procs.iter().filter(|p| p["comm"] == "qsbench").count(), 3);
}

/// Bundled workloads refuse a box they cannot start in.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn bundled_workload_refuses_a_box_too_small() {
    let _g = guard();
    let out = vmtrace(&["run", "--mem", "8M", "qsbench"])
        .output()
        .expect("run vmtrace");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("too small for qsbench"), "{err}");
}

/// --repeat: fresh box per run, every report, then the runs table.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn repeat_runs_and_tabulates() {
    let _g = guard();
    let text = text_ok(&mut run_memhog(
        false,
        &["--repeat", "2", "--mem", "64M", "--swap", "256M"],
        &["--mib", "96"],
    ));
    // Two reports, each opening with csh's time line, then the table.
    assert_eq!(text.matches("pf+0w").count(), 2, "{text}");
    assert!(text.contains("     run  elapsed s"), "{text}");
    for row in [
        "       1 ",
        "       2 ",
        "    mean ",
        "  stddev ",
        "     min ",
        "     max ",
    ] {
        assert!(text.contains(row), "{row:?} missing:\n{text}");
    }
    let out = run_memhog(true, &["--repeat", "2"], &["--mib", "16"])
        .output()
        .expect("run vmtrace");
    let j = json_of(&out);
    assert_eq!(j["runs"].as_array().map(Vec::len), Some(2));
    let column = &j["summary"]["columns"][0];
    assert_eq!(
        column["elapsed_s"].as_array().map(Vec::len),
        Some(2),
        "{column:#}"
    );
    assert!(column["mean_s"].as_f64().unwrap_or(0.0) > 0.0, "{column:#}");
}

/// `vmtrace run build -j 1,2 ...`: the generated tree really compiles at
/// each -j (exit 0), the sweep table has a column per -j, and the
/// compiler processes forked inside the box are the ones the report
/// attributes faults to.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn build_sweep_compiles_and_tabulates() {
    let _g = guard();
    let text = text_ok(&mut vmtrace(&[
        "run",
        "build",
        "-j",
        "1,2",
        "--files",
        "6",
        "--mem",
        "96M",
        "--swap",
        "512M",
        "--progress",
        "none",
    ]));
    assert_eq!(text.matches("exited with status 0").count(), 2, "{text}");
    assert!(text.contains("     run        -j1        -j2"), "{text}");
    assert!(text.contains("    mean "), "{text}");
    // cc1 processes, forked by make inside the box, counted per process.
    assert!(text.contains(" cc1 "), "{text}");

    let out = vmtrace(&[
        "run", "--json", "build", "-j", "2", "--files", "4", "--mem", "96M", "--swap", "512M",
    ])
    .output()
    .expect("run vmtrace");
    let r = json_of(&out);
    assert_eq!(r["exit"]["code"], 0, "{:#}", r["exit"]);
    assert_eq!(
        r["command"],
        serde_json::json!(["build", "-j", "2", "--files", "4"])
    );
    let top = r["faults"]["processes"]["top"]
        .as_array()
        .expect("processes");
    assert!(top.iter().any(|p| p["comm"] == "cc1"), "{top:?}");
    // Everything counted per process ran in the box: the sum is rusage's.
    assert_eq!(
        r["faults"]["processes"]["minor"],
        r["usage"]["minor_faults"]
    );
}

/// kill -9 mid-run: the programs go with the process (fd-owned links),
/// but the box stays, with the workload still in it. The next vmtrace
/// removes it all and says so.
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
    let mut child = run_memhog(
        false,
        &[
            "--mem",
            "64M",
            "--swap",
            "256M",
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
    // them (after an RCU grace period) without anyone's help.
    // Objects of earlier tests may still be on their way out (counted in
    // `bpf_before`): none may be left above it.
    let at_most_before = || {
        bpf_object_counts()
            .iter()
            .zip(bpf_before)
            .all(|(now, before)| *now <= before)
    };
    let start = Instant::now();
    while !at_most_before() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        at_most_before(),
        "a vmtrace killed with SIGKILL left eBPF programs, maps or links: {:?} vs {bpf_before:?}",
        bpf_object_counts()
    );
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

    let out = vmtrace(&["run", "--", "true"])
        .output()
        .expect("run vmtrace");
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

fn page_cluster() -> String {
    std::fs::read_to_string("/proc/sys/vm/page-cluster")
        .expect("vm.page-cluster")
        .trim()
        .to_string()
}

/// One `vmtrace run qsbench ... --sysctl vm.page-cluster=PC` into
/// `dir/file`; checks the sysctl is back as it was. Returns the recording
/// and whether its run completed (the seed's qsbench is OOM-killed now
/// and then; compare leaves such runs out).
fn qsbench_run(dir: &Path, pc: &str, file: &str) -> (PathBuf, bool) {
    let before = page_cluster();
    let path = dir.join(file);
    let out = vmtrace(&[
        "run",
        "qsbench",
        "-m",
        "200",
        "--mem",
        "128M",
        "--swap",
        "1G",
        "-q",
        "--sysctl",
        &format!("vm.page-cluster={pc}"),
        "-o",
        &path.to_string_lossy(),
    ])
    .output()
    .expect("run vmtrace");
    assert_eq!(page_cluster(), before, "vm.page-cluster not restored");
    assert!(
        path.is_file(),
        "no recording: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec = recording(&path);
    assert_eq!(rec["environment"]["vm_sysctls"]["page-cluster"], pc);
    (path, out.status.success())
}

fn compare_cmd(a: &[PathBuf], b: &[PathBuf], json: bool) -> Command {
    let mut c = vmtrace(&["compare"]);
    c.args(a).arg("--vs").args(b);
    if json {
        c.arg("--json");
    }
    c
}

/// compare on one kernel with a known cause: qsbench with swap readahead
/// (vm.page-cluster=3, the default: 8 pages per swap read) against
/// without it (0: one page per read). Runs are interleaved in rounds (A,
/// B, A') so that drift in the machine's load falls on every group alike.
/// B must come out slower, with swap-in ranked first and the attribution
/// accounting for most of the elapsed difference; A' against A (the same
/// configuration) must come out within noise. Sysctls are restored after
/// every run, also when a run fails.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn compare_finds_swap_readahead_and_calls_aa_noise() {
    let _g = guard();
    let dir = fresh_scratch("compare");
    let before = page_cluster();

    // A failing run restores the sysctl too.
    let out = vmtrace(&[
        "run",
        "--sysctl",
        "vm.page-cluster=0",
        "--",
        "/nonexistent/cmd",
    ])
    .output()
    .expect("run vmtrace");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(page_cluster(), before);

    // Rounds of A (pc 3), B (pc 0), A' (pc 3): three, then more (up to
    // six) while A against B is not yet significant. On a quiet machine
    // three suffice; a compile next door once added 2.5 s of run-queue
    // waits to one B run (p = 0.19 after three rounds). The A/A verdict
    // is not used to stop, so its false-alarm rate stays 5%.
    let (mut a, mut b, mut a2) = (Vec::new(), Vec::new(), Vec::new());
    let mut done = [0, 0, 0];
    for round in 0..6 {
        for (k, (pc, group)) in [("3", &mut a), ("0", &mut b), ("3", &mut a2)]
            .into_iter()
            .enumerate()
        {
            let (path, ok) = qsbench_run(&dir, pc, &format!("g{k}-r{round}.vmtrace.json"));
            group.push(path);
            done[k] += usize::from(ok);
        }
        if done.iter().all(|&n| n >= 3) {
            let c = json_of(&compare_cmd(&a, &b, true).output().expect("compare"));
            if c["versus"][0]["verdict"] == "slower" {
                break;
            }
        }
    }
    assert!(
        done.iter().all(|&n| n >= 2),
        "completed runs per group {done:?}"
    );

    let c = json_of(&compare_cmd(&a, &b, true).output().expect("compare"));
    let svg = dir.join("ab.svg");
    let text = text_ok(compare_cmd(&a, &b, false).arg("--svg").arg(&svg));
    eprintln!("{text}");
    let plot = std::fs::read_to_string(&svg).expect("compare --svg wrote the plots");
    assert!(plot.contains("swap read request") && plot.contains("page-cluster=0"));
    for line in text.lines() {
        assert!(line.is_ascii() && line.len() <= 72, "{line:?}");
    }
    assert_eq!(c["groups"][0]["label"], "page-cluster=3", "{c:#}");
    assert_eq!(c["groups"][1]["label"], "page-cluster=0", "{c:#}");
    let v = &c["versus"][0];
    assert_eq!(v["verdict"], "slower", "{text}");
    assert_eq!(v["hints"][0]["mechanism"], "swap-in", "{text}");
    let explained = v["explained"].as_f64().unwrap_or(0.0);
    assert!(
        (0.6..=1.4).contains(&explained),
        "attribution explains {explained} of the difference:\n{text}"
    );
    // The mechanism's numbers: readahead gone, reads one page each.
    let per_read = c["metrics"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["name"] == "pages per swap read"))
        .expect("pages per swap read");
    assert!(per_read["groups"][0]["mean"].as_f64().unwrap_or(0.0) > 2.0);
    assert!(per_read["groups"][1]["mean"].as_f64().unwrap_or(9.0) < 1.2);

    // A/A: at p < 0.05 one comparison of equal groups in 20 is a false
    // alarm by design. If this one is, a fresh interleaved pair must not
    // be (both false: 1 in 400).
    let mut pair = (a.clone(), a2.clone());
    for attempt in 0..2 {
        let aa = json_of(
            &compare_cmd(&pair.0, &pair.1, true)
                .output()
                .expect("compare"),
        );
        let aa_text = text_ok(&mut compare_cmd(&pair.0, &pair.1, false));
        eprintln!("{aa_text}");
        let v = &aa["versus"][0];
        if v["verdict"] == "within noise" {
            assert_eq!(v["hints"].as_array().map(Vec::len), Some(0), "{aa_text}");
            let words = aa_text.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(words.contains("no cause to explain"), "{aa_text}");
            break;
        }
        assert_eq!(attempt, 0, "A/A twice not within noise:\n{aa_text}");
        pair = (Vec::new(), Vec::new());
        for round in 0..3 {
            for (k, group) in [&mut pair.0, &mut pair.1].into_iter().enumerate() {
                group.push(qsbench_run(&dir, "3", &format!("aa{k}-r{round}.vmtrace.json")).0);
            }
        }
    }
    assert_eq!(page_cluster(), before);
}

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
    let started = Instant::now();
    let out = vmtrace(&[
        "attach",
        "--pid",
        &job.id().to_string(),
        "--duration",
        "60",
        "--json",
        "-o",
        &rec_path.to_string_lossy(),
    ])
    .output()
    .expect("run vmtrace attach");
    let _ = job.wait();
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
        use std::os::unix::process::CommandExt;
        let kbuild = Path::new(VMTRACE).parent().expect("bin dir").join("kbuild");
        assert!(
            kbuild.is_file(),
            "{} is missing (cargo xtask test builds it)",
            kbuild.display()
        );
        let membox = vmtrace::host::membox::MemBox::create(&vmtrace::host::membox::BoxSpec {
            mem_limit: Some(96 << 20),
            swap: Some(1 << 30),
            swap_dir: "/var/tmp".into(),
        })
        .expect("box");
        let joins = membox.join_paths().expect("box join paths");
        let mut cmd = Command::new(kbuild);
        cmd.args(["-j", "4"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
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
        let build = cmd.spawn().expect("start the build");
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

/// BPF objects of the whole system, by kind: programs, maps, links
/// (BPF_{PROG,MAP,LINK}_GET_NEXT_ID).
fn bpf_object_counts() -> [usize; 3] {
    [11u64, 12, 31].map(|cmd| {
        let (mut id, mut n) = (0u32, 0usize);
        loop {
            // union bpf_attr for *_GET_NEXT_ID: start_id, next_id, open_flags.
            let mut attr = [0u32; 3];
            attr[0] = id;
            // SAFETY: the attr buffer outlives the call and has its size.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_bpf,
                    cmd,
                    attr.as_mut_ptr(),
                    std::mem::size_of_val(&attr),
                )
            };
            if r != 0 {
                return n;
            }
            id = attr[1];
            n += 1;
        }
    })
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// Attach and detach 100 times against a busy process: no program, map,
/// link or file descriptor outlives a detach.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn attach_detach_100_times_leaks_nothing() {
    use vmtrace_common::Target;
    let _g = guard();
    let mut busy = Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .expect("busy process");
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
    )
    .expect("attach");
    let attached = bpf_object_counts();
    assert!(
        attached[0] > objects[0] && attached[1] > objects[1],
        "{attached:?} vs {objects:?}"
    );
    drop(t);
    for i in 0..100 {
        let mut t = vmtrace::session::tracer::Tracer::attach(
            target,
            &[vmtrace::kernel::probes::OptIn::FollowForks],
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
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(want), "{err}");
    }
}

/// --bpf-stats: every program's runs and run time, from the kernel's own
/// accounting (kernel.bpf_stats_enabled, restored after).
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn bpf_stats_report_each_programs_cost() {
    let _g = guard();
    let before = std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").expect("sysctl");
    let r = json_ok(&mut run_memhog(
        true,
        &["--mem", "64M", "--swap", "512M", "--bpf-stats"],
        &["--mib", "128", "--passes", "1"],
    ));
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").expect("sysctl"),
        before
    );
    let costs = r["program_costs"].as_array().expect("program costs");
    let begin = costs
        .iter()
        .find(|c| c["program"] == "memcg_reclaim_begin")
        .expect("memcg_reclaim_begin");
    let stalls = r["memcg_reclaim"]["stalls"]["count"].as_u64().unwrap_or(0);
    let runs = begin["runs"].as_u64().unwrap_or(0);
    // It runs for every memcg reclaim on the machine; the box's are some.
    assert!(stalls > 0 && runs >= stalls, "{runs} runs, {stalls} stalls");
    assert!(begin["run_ns"].as_u64().unwrap_or(0) > 0, "{begin}");
    // Without --bpf-stats there is no such section.
    let plain = json_ok(&mut run_memhog(true, &["--mem", "64M"], &["--mib", "16"]));
    assert!(
        plain["program_costs"].is_null(),
        "{}",
        plain["program_costs"]
    );
}

/// `run --no-probes` (the bench's baseline) attaches nothing and still
/// reports the command's times and faults; a traced run reports what
/// vmtrace itself cost, and that cost plus the command's equals the CPU
/// time the kernel charged to vmtrace's whole process tree (wait4).
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn no_probes_baseline_and_vmtrace_own_cost() {
    let _g = guard();
    let dir = fresh_scratch("no-probes");
    let faults = ["faults", "--mib", "4", "--passes", "100"];
    let touches = 4 * 256 * 100;

    let mut bare = vmtrace(&["run", "--json", "--progress", "none", "--no-probes"]);
    bare.args(faults).arg("-o").arg(dir.join("bare.json"));
    let r = json_ok(&mut bare);
    assert_eq!(r["untraced"], true);
    assert!(r["collector"].is_null() && r["program_costs"].is_null());
    assert!(r["memcg_reclaim"].is_null(), "nothing attached: {r}");
    let minor = r["usage"]["minor_faults"].as_u64().unwrap_or(0);
    assert!(
        minor >= touches,
        "{minor} minor faults for {touches} touches"
    );
    assert!(r["vmstat"]["pgfault"].as_u64().unwrap_or(0) >= touches);
    // While an untraced run runs, no program of its is loaded.
    let before = bpf_object_counts()[0];
    let mut sleeper = vmtrace(&["run", "--progress", "none", "--no-probes"])
        .args(["-o", "sleep.json", "--", "sleep", "2"])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .spawn()
        .expect("start vmtrace");
    std::thread::sleep(Duration::from_secs(1));
    let during = bpf_object_counts()[0];
    assert!(sleeper.wait().expect("wait").success());
    assert!(
        during <= before,
        "{during} programs loaded, {before} before"
    );

    let mut traced = vmtrace(&["run", "--json", "--progress", "none"]);
    traced.args(faults).arg("-o").arg(dir.join("traced.json"));
    traced.stdout(Stdio::piped()).stderr(Stdio::piped());
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by wait4 below, for its rusage"
    )]
    let child = traced.spawn().expect("start vmtrace");
    let pid = child.id() as i32;
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid out-parameter.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // The output is small (a JSON report), so the pipes cannot fill while
    // we wait without reading them.
    // SAFETY: our own child, valid out-pointers.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(waited, pid);
    let mut stdout = String::new();
    use std::io::Read;
    child
        .stdout
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("read report");
    assert_eq!(status, 0, "vmtrace failed");
    let r: Value = serde_json::from_str(&stdout).expect("JSON report");
    let c = &r["collector"];
    let f = |v: &Value| v.as_f64().unwrap_or(-1.0);
    let attach = f(&c["attach_s"]);
    assert!(attach > 0.0 && attach < 10.0, "attach took {attach} s");
    let rss = c["max_rss_bytes"].as_u64().unwrap_or(0);
    assert!((1 << 20..1 << 30).contains(&rss), "peak RSS {rss}");
    let own = f(&c["user_s"]) + f(&c["sys_s"]);
    let command = f(&r["usage"]["user_s"]) + f(&r["usage"]["sys_s"]);
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let tree = tv(ru.ru_utime) + tv(ru.ru_stime);
    // What vmtrace did before attaching (parsing, the environment, the
    // box) and after its report is not in its own figure.
    assert!(
        own > 0.0 && own + command <= tree + 0.02 && tree - (own + command) < 0.5,
        "vmtrace {own:.3} s + command {command:.3} s vs process tree {tree:.3} s"
    );
}

/// Under sudo the command runs as the user who ran sudo (so that a
/// traced build makes no root-owned files in the user's tree), with that
/// user's groups and HOME; --as-root keeps root.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn command_runs_as_the_sudo_invoker_unless_as_root() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let _g = guard();
    let dir = fresh_scratch("identity");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    let script = format!(
        "id -u > {d}/uid; id -G > {d}/groups; echo \"$HOME\" > {d}/home; touch {d}/made",
        d = dir.display()
    );
    for as_root in [false, true] {
        for f in ["uid", "groups", "home", "made"] {
            let _ = std::fs::remove_file(dir.join(f));
        }
        let mut c = vmtrace(&["run", "--progress", "none", "--mem", "64M"]);
        if as_root {
            c.arg("--as-root");
        }
        let out = c
            .args(["-o", "identity.vmtrace.json", "--", "sh", "-c", &script])
            .current_dir(&dir)
            .env("SUDO_UID", "65534")
            .env("SUDO_GID", "65534")
            .output()
            .expect("run vmtrace");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        let made = std::fs::metadata(dir.join("made")).expect("the command ran");
        if as_root {
            assert_eq!(read("uid").trim(), "0");
            assert_eq!(made.uid(), 0);
            assert!(!text.contains("run as:"), "{text}");
        } else {
            assert_eq!(read("uid").trim(), "65534");
            assert_eq!(made.uid(), 65534);
            assert_eq!(made.gid(), 65534);
            // No supplementary group of root's survives.
            assert!(
                read("groups").split_whitespace().all(|g| g != "0"),
                "{}",
                read("groups")
            );
            assert_ne!(read("home").trim(), "/root");
            assert!(text.contains("run as: nobody (uid 65534"), "{text}");
        }
        // The recording still belongs to the invoker in both cases.
        let rec = std::fs::metadata(dir.join("identity.vmtrace.json")).expect("recording");
        assert_eq!(rec.uid(), 65534);
    }
}

fn sysctl_value(name: &str) -> String {
    std::fs::read_to_string(Path::new("/proc/sys").join(name.replace('.', "/")))
        .expect("sysctl")
        .trim()
        .to_string()
}

/// Two vmtraces at once: separate boxes and recordings, both measure;
/// the sysctl both change (kernel.task_delayacct) stays on until the last
/// one ends and then goes back to what it was before the first; a second
/// vmtrace that wants another value of a sysctl the first holds is
/// refused in one line.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn two_vmtraces_at_once_work_independently() {
    let _g = guard();
    let dir = fresh_scratch("two-at-once");
    let delayacct = sysctl_value("kernel.task_delayacct");
    let cluster_before = page_cluster();
    let start = |file: &str, mib: &str, extra: &[&str]| {
        let mut opts = vec!["--mem", "96M", "--swap", "512M", "-o", file];
        opts.extend_from_slice(extra);
        run_memhog(true, &opts, &["--mib", mib, "--passes", "1"])
            .current_dir(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start vmtrace")
    };
    let first = start("first.json", "128", &[]);
    std::thread::sleep(Duration::from_millis(500));
    let second = start("second.json", "256", &["--sysctl", "vm.page-cluster=0"]);
    std::thread::sleep(Duration::from_millis(500));
    // A third wants page-cluster 1 while the second holds it at 0.
    let third = run_memhog(false, &["--sysctl", "vm.page-cluster=1"], &["--mib", "1"])
        .current_dir(&dir)
        .output()
        .expect("run vmtrace");
    let err = String::from_utf8_lossy(&third.stderr);
    assert_eq!(third.status.code(), Some(1), "{err}");
    assert!(
        err.trim().lines().count() == 1 && err.contains("another vmtrace"),
        "{err}"
    );

    let first = first.wait_with_output().expect("first vmtrace");
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    // The first is gone, the second still runs: the sysctls it relies on
    // must still be set.
    let mut second = second;
    let still_running = second.try_wait().expect("poll").is_none();
    if still_running {
        assert_eq!(sysctl_value("kernel.task_delayacct"), "1");
        assert_eq!(page_cluster(), "0");
    }
    let second = second.wait_with_output().expect("second vmtrace");
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let (a, b) = (json_of(&first), json_of(&second));
    assert_ne!(a["target"], b["target"], "the boxes must differ");
    for r in [&a, &b] {
        assert!(
            r["memcg_reclaim"]["stalls"]["count"].as_u64().unwrap_or(0) > 0,
            "{r}"
        );
        assert_eq!(r["delays"]["accounting_on"], true);
        assert!(r["delays"]["freepages_ns"].as_u64().unwrap_or(0) > 0, "{r}");
    }
    assert!(dir.join("first.json").is_file() && dir.join("second.json").is_file());
    assert!(
        still_running,
        "the second run ended before the first; make it longer"
    );
    assert_eq!(sysctl_value("kernel.task_delayacct"), delayacct);
    assert_eq!(page_cluster(), cluster_before);
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
    let start = |file: &str, cmd: &[&str]| {
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
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vmtrace")
    };
    let check = |out: &Output, file: &str, what: &str| {
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
    };
    for (sig, name) in [
        (libc::SIGINT, "INT"),
        (libc::SIGTERM, "TERM"),
        (libc::SIGHUP, "HUP"),
    ] {
        // Setup: as soon as the swapfile exists (before the probes are
        // attached and the command starts).
        let file = format!("setup-{name}.json");
        let child = start(&file, &["sleep", "30"]);
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
        check(&out, &file, &format!("SIG{name} during setup"));

        // Running: the command gets the signal, the run is recorded.
        let file = format!("run-{name}.json");
        let child = start(&file, &["sleep", "30"]);
        let t = Instant::now();
        while !Leftovers::find().iter().any(|p| p.contains("unified")) {
            assert!(t.elapsed() < Duration::from_secs(20), "no box");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_secs(2));
        // SAFETY: as above.
        unsafe { libc::kill(child.id() as i32, sig) };
        let out = child.wait_with_output().expect("wait");
        assert_eq!(
            out.status.code(),
            Some(128 + sig),
            "SIG{name} while running"
        );
        assert!(check(&out, &file, &format!("SIG{name} while running")));
        let rec = recording(&dir.join(&file));
        assert_eq!(rec["complete"], false);
        assert_eq!(rec["runs"][0]["report"]["exit"]["signal"], sig);

        // A storm, from start to end: a short command, signalled every
        // few ms, so that some land while vmtrace writes its results.
        let file = format!("storm-{name}.json");
        let child = start(&file, &["sleep", "0.3"]);
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
                    // SAFETY: as above (the pid is ours until reaped below).
                    unsafe { libc::kill(pid, sig) };
                    std::thread::sleep(Duration::from_millis(3));
                }
            })
        };
        let out = child.wait_with_output();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = storm.join();
        let out = out.expect("wait");
        check(&out, &file, &format!("a storm of SIG{name}"));
    }
}

/// Every bad input gives one line that says what to do, and nothing is
/// left behind: an unknown workload, -j 0, a recording path in a missing
/// or read-only directory, root without the capabilities (a container).
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn bad_input_is_refused_in_one_line_each() {
    let _g = guard();
    let dir = fresh_scratch("bad-input");
    let ro = dir.join("read-only");
    std::fs::create_dir_all(&ro).expect("mkdir");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "ro,size=1m", "vmtrace-test"])
        .arg(&ro)
        .status()
        .expect("mount")
        .success();
    assert!(mounted, "cannot mount a read-only tmpfs");
    let ro_file = ro.join("x.vmtrace.json");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["run", "nosuchworkload"], "bundled workload"),
        (vec!["run", "build", "-j", "0"], "at least 1"),
        (vec!["run", "build", "-j", "4,x"], "at least 1"),
        (
            vec!["run", "-o", "/nonexistent-vmtrace-dir/r.json", "--", "true"],
            "does not exist",
        ),
        (
            vec!["run", "-o", ro_file.to_str().unwrap_or(""), "--", "true"],
            "not writable",
        ),
        (
            vec!["run", "--mem", "64M", "--swap", "1T", "--", "true"],
            "does not fit",
        ),
        (vec!["run", "--interval", "0", "--", "true"], "interval"),
        (vec!["report", "/nonexistent-vmtrace.json"], "nonexistent"),
    ];
    for (args, want) in &cases {
        let out = vmtrace(args)
            .current_dir(&dir)
            .output()
            .expect("run vmtrace");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} accepted");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want {want:?} in {err}");
        assert!(Leftovers::find().is_empty(), "{args:?} left something");
    }
    let _ = Command::new("umount").arg(&ro).status();

    // Root, but with every capability dropped (as in a container that
    // was not given them).
    let out = Command::new("setpriv")
        .args(["--bounding-set=-all", "--inh-caps=-all", "--"])
        .arg(VMTRACE)
        .args(["run", "--mem", "64M", "--", "true"])
        .current_dir(&dir)
        .output()
        .expect("setpriv (util-linux)");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("without CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN"),
        "{err}"
    );
}

/// Python run by the map-pressure test: a bounded fork storm (N
/// short-lived processes, at most 64 alive at once, each faulting a few
/// pages), or T threads faulting at once behind a barrier.
const PRESSURE_PY: &str = r#"
import os, sys, threading
mode, n = sys.argv[1], int(sys.argv[2])
if mode == "fork":
    alive = 0
    for i in range(n):
        if os.fork() == 0:
            b = bytearray(16 * 4096)
            os._exit(0)
        alive += 1
        if alive >= 64:
            os.wait()
            alive -= 1
    while alive:
        os.wait()
        alive -= 1
else:
    threading.stack_size(64 * 1024)
    barrier = threading.Barrier(n)
    def work():
        barrier.wait()
        b = bytearray(8 * 4096)
    ts = [threading.Thread(target=work) for _ in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
"#;

/// Map pressure: more short-lived processes than the per-process table
/// holds, then 10 000 threads faulting at once. Every process is either
/// in the table or counted as evicted (said in the report, never silent);
/// every thread is counted; the totals agree with rusage and vmstat; and
/// vmtrace's own memory stays bounded.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn fork_storm_and_10k_threads_are_counted_or_reported() {
    let _g = guard();
    let started = Instant::now();
    let forks: u64 = 20_000; // more than MAX_PROCESSES (16 384)
    let threads: u64 = 10_000;
    let dir = fresh_scratch("map-pressure");
    let run = |mode: &str, n: u64| -> (Value, String) {
        let file = dir.join(format!("{mode}.vmtrace.json"));
        let out = vmtrace(&["run", "--progress", "none", "--json", "--mem", "512M"])
            .arg("-o")
            .arg(&file)
            // The system's Python (setup installs it): a version-manager
            // shim on PATH would add its own processes to the target.
            .args([
                "--",
                "/usr/bin/python3",
                "-c",
                PRESSURE_PY,
                mode,
                &n.to_string(),
            ])
            .output()
            .expect("run vmtrace");
        let r = json_ok_out(&out);
        let text = vmtrace(&["report"])
            .arg(&file)
            .output()
            .expect("vmtrace report");
        (r, String::from_utf8_lossy(&text.stdout).into_owned())
    };

    let (r, text) = run("fork", forks);
    let p = &r["faults"]["processes"];
    let held = p["processes"].as_u64().unwrap_or(0);
    let evicted = evicted_rows(&r, "process faults");
    // Every child and the parent, in the table or counted out of it:
    // none lost silently. Rows are per pid: with pid_max 32768, a pid
    // reused by a later child while its row is still in the table adds to
    // that row, so the count may fall short by the few reuses.
    assert!(
        held + evicted >= (forks + 1) * 98 / 100 && held + evicted <= forks + 1,
        "{held} held + {evicted} evicted for {} processes",
        forks + 1
    );
    assert!(evicted > 0, "the table never filled: {held} processes");
    assert!(text.contains("rows evicted from full tables"), "{text}");
    let minor = p["minor"].as_u64().unwrap_or(0);
    let rusage = r["usage"]["minor_faults"].as_u64().unwrap_or(0);
    assert!(minor > 0 && minor < rusage, "{minor} vs rusage {rusage}");
    assert!(r["vmstat"]["pgfault"].as_u64().unwrap_or(0) >= rusage);
    let rss = r["collector"]["max_rss_bytes"].as_u64().unwrap_or(u64::MAX);
    assert!(rss < 200 << 20, "vmtrace grew to {rss} bytes");

    let (r, _) = run("threads", threads);
    let p = &r["faults"]["processes"];
    assert_eq!(evicted_rows(&r, "process faults"), 0);
    assert_eq!(p["processes"], 1, "{p:#}");
    assert_eq!(p["threads"], threads + 1, "{p:#}");
    assert_eq!(p["minor"], r["usage"]["minor_faults"], "{p:#}");
    assert_eq!(p["major"], r["usage"]["major_faults"], "{p:#}");
    assert!(r["vmstat"]["pgfault"].as_u64().unwrap_or(0) >= p["minor"].as_u64().unwrap_or(0));
    let rss = r["collector"]["max_rss_bytes"].as_u64().unwrap_or(u64::MAX);
    assert!(rss < 200 << 20, "vmtrace grew to {rss} bytes");
    assert!(
        started.elapsed() < Duration::from_secs(300),
        "the storm is meant to stay short: {:?}",
        started.elapsed()
    );
}

/// Rows of `table` the report says were evicted.
fn evicted_rows(r: &Value, table: &str) -> u64 {
    r["dropped"]["evicted"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|pair| pair[0] == table)
        .filter_map(|pair| pair[1].as_u64())
        .sum()
}

fn json_ok_out(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(out)
}

/// Kernels vmtrace cannot (fully) work on: one without tracepoints in
/// tracefs is refused in one line; one without BTF runs with the metrics
/// that need BTF off, each named; one where bpf() is forbidden (a
/// container's seccomp filter, here a real one) is refused in one line.
/// Nothing is left behind by any of them.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn unsupported_kernels_are_refused_or_degrade_by_metric() {
    let _g = guard();
    let dir = fresh_scratch("unsupported");
    let one_line_failure = |out: &Output, want: &str| {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(want), "want {want:?}: {err}");
        assert!(Leftovers::find().is_empty());
    };

    // No tracepoints at all.
    let empty = dir.join("empty-tracefs");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let out = vmtrace(&["run", "--mem", "64M", "--swap", "128M", "--", "true"])
        .env("VMTRACE_TRACEFS_FORMATS", &empty)
        .output()
        .expect("run vmtrace");
    one_line_failure(&out, "shows no tracepoints");

    // No BTF: runs; the BTF metrics are off and named, the rest measure.
    let r = json_ok(
        run_memhog(true, &["--mem", "48M", "--swap", "256M"], &["--mib", "96"])
            .env("VMTRACE_BTF", dir.join("no-such-btf")),
    );
    let off: Vec<String> = r["unavailable"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|u| u["reason"].as_str().is_some_and(|s| s.contains("BTF")))
        .map(|u| u["metric"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(!off.is_empty(), "{:#}", r["unavailable"]);
    assert!(r["memcg_reclaim"]["stalls"]["count"].as_u64().unwrap_or(0) > 0);
    assert!(r["vmstat"]["pswpout"].as_u64().unwrap_or(0) > 0);

    // bpf() forbidden by a seccomp filter, as Docker's default profile does.
    let src = dir.join("nobpf.c");
    std::fs::write(&src, NOBPF_C).expect("write nobpf.c");
    let bin = dir.join("nobpf");
    let cc = Command::new("cc")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .status()
        .expect("cc (gcc)");
    assert!(cc.success());
    let out = Command::new(&bin)
        .arg(VMTRACE)
        .args(["run", "--mem", "64M", "--swap", "128M", "--", "true"])
        .current_dir(&dir)
        .output()
        .expect("nobpf vmtrace");
    one_line_failure(&out, "the kernel refused eBPF");
}

/// Runs a command with bpf() failing EPERM (a seccomp filter).
const NOBPF_C: &str = r#"
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_bpf, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { sizeof f / sizeof f[0], f };
    if (argc < 2 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
        return 127;
    execv(argv[1], argv + 1);
    return 126;
}
"#;

/// `vmtrace kernels`: Debian's 6.1 and 6.12 kernels boot in QEMU guests
/// (downloaded once, cached), vmtrace runs a memory hog under pressure in
/// each, and each recording shows every probe that kernel has attached,
/// reclaim, fault and swap counts that agree with the guest's own
/// /proc/vmstat and rusage; the kernels are compared at the end.
#[test]
#[ignore = "needs root, QEMU and Debian's kernel packages; run with `cargo xtask test`"]
fn debian_6_1_and_6_12_guests_measure_like_the_host() {
    let _g = guard();
    let dir = fresh_scratch("kernels");
    let out_dir = dir.join("k");
    let out = vmtrace(&[
        "kernels",
        "--kernel",
        "debian:6.1",
        "--kernel",
        "debian:6.12",
        "--mem",
        "512M",
        "--disk",
        "2G",
        "--timeout",
        "420",
        "-o",
    ])
    .arg(&out_dir)
    .args([
        "--", "run", "--mem", "48M", "--swap", "256M", "memhog", "--mib", "96", "--passes", "1",
    ])
    .output()
    .expect("run vmtrace kernels");
    let err = String::from_utf8_lossy(&out.stderr);
    let compare = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}\n{compare}");
    assert!(err.contains("TCG"), "the emulation is not said: {err}");
    let mut releases = Vec::new();
    for entry in std::fs::read_dir(&out_dir).expect("out dir").flatten() {
        let rec_path = entry.path().join("run.vmtrace.json");
        if !rec_path.is_file() {
            continue;
        }
        assert!(entry.path().join("console.log").is_file());
        let rec = recording(&rec_path);
        let release = rec["environment"]["kernel_release"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let r = &rec["runs"][0]["report"];
        let what = format!("guest {release}");
        assert_eq!(r["exit"]["code"], 0, "{what}: {:#}", r["exit"]);
        // Only metrics whose hooks this kernel lacks are off; nothing
        // failed to load or attach.
        for u in r["unavailable"].as_array().into_iter().flatten() {
            let reason = u["reason"].as_str().unwrap_or("");
            assert!(
                reason.contains("has no") || reason.contains("BTF"),
                "{what}: {} failed: {reason}",
                u["metric"]
            );
        }
        let v = &r["vmstat"];
        let n = |x: &Value| x.as_u64().unwrap_or(0);
        assert!(n(&r["memcg_reclaim"]["stalls"]["count"]) > 0, "{what}");
        let swapped = n(&r["swap_out"]["anon_folios"]);
        assert!(
            swapped > 0 && within(swapped, n(&v["pswpout"]), 0.05),
            "{what}: swap-out {swapped} vs pswpout {}: {:#}",
            v["pswpout"],
            r["swap_out"]
        );
        let majors = n(&r["faults"]["major_target"]);
        assert!(
            majors > 0 && within(majors, n(&r["usage"]["major_faults"]), 0.05),
            "{what}: major faults {majors} vs rusage {}",
            r["usage"]["major_faults"]
        );
        releases.push(release);
    }
    releases.sort();
    assert_eq!(releases.len(), 2, "{releases:?}\n{err}");
    assert!(
        releases[0].starts_with("6.1.") && releases[1].starts_with("6.12."),
        "{releases:?}"
    );
    for r in &releases {
        assert!(
            compare.contains(r.as_str()),
            "{r} not in the comparison:\n{compare}"
        );
    }
}

/// A kernel that does not boot is reported (with the guest's last
/// console lines or QEMU's complaint), and the other kernels still run.
#[test]
#[ignore = "needs root and QEMU; run with `cargo xtask test`"]
fn a_kernel_that_does_not_boot_is_reported_and_the_rest_still_run() {
    let _g = guard();
    let dir = fresh_scratch("kernels-broken");
    let bogus = dir.join("vmlinuz-0.0-broken");
    std::fs::write(&bogus, vec![0x5a; 64 * 1024]).expect("write");
    let out_dir = dir.join("k");
    let out = vmtrace(&["kernels", "--kernel"])
        .arg(&bogus)
        .args(["--kernel", "host", "--timeout", "60", "-o"])
        .arg(&out_dir)
        .args(["--", "run", "--", "true"])
        .output()
        .expect("run vmtrace kernels");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("FAILED"), "{err}");
    let host = out_dir.join("2-host").join("run.vmtrace.json");
    assert!(host.is_file(), "the host run did not happen: {err}");
    assert_eq!(recording(&host)["runs"][0]["report"]["exit"]["code"], 0);
}
