//! A deliberate OOM kill: the report and the recording name the victim as
//! the kernel counted it. And the OOM reaper: a victim that exits by
//! itself is never woken for (wake_oom_reaper finds MMF_OOM_SKIP). A
//! test of a victim that cannot free its memory (a frozen vfork child
//! sharing its mm) was dropped: on 6.18 the OOM killer thaws the
//! victim's threads and the memory went in ~100 ms (woken 0).

use std::process::Command;

use serde_json::Value;

use crate::common::{
    delta, guard, json_of, memhog, recording, run_memhog, scratch, vmstat, vmtrace,
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
