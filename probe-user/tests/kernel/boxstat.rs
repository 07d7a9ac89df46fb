//! The box's own pressure and events equal its cgroup's files over the
//! run. The command run in the box reads its own cgroup's files as its
//! very last act (it finds them from /proc/self/cgroup); after it exits
//! no task is left in the box, so the counters stop moving, and what
//! vmtrace recorded at the end must be what the command read.

use std::{collections::BTreeMap, path::Path};

use serde_json::Value;

use crate::common::{fresh_scratch, guard, json_of, memhog, recording, text_ok, vmtrace};

/// The cgroup2 mount and the v1 memory mount, from mountinfo.
fn mounts() -> (Option<String>, Option<String>) {
    let info = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    let (mut v2, mut v1) = (None, None);
    for line in info.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let point = left.split(' ').nth(4).unwrap_or("").to_string();
        let mut r = right.split(' ');
        match (r.next(), r.nth(1)) {
            (Some("cgroup2"), _) if v2.is_none() => v2 = Some(point),
            (Some("cgroup"), Some(opts)) if opts.split(',').any(|o| o == "memory") => {
                v1 = Some(point)
            }
            _ => {}
        }
    }
    (v2, v1)
}

/// `sh -c` text: memhog, then copies of the box's own files into `dir`.
fn script(dir: &Path, v2: &str, v1: Option<&str>, hog: &[&str]) -> String {
    let d = dir.display();
    let mut s = format!(
        "{} {} ; v2=$(sed -n 's/^0:://p' /proc/self/cgroup); \
         cat {v2}$v2/memory.pressure > {d}/pressure; ",
        memhog().display(),
        hog.join(" ")
    );
    match v1 {
        Some(root) => s.push_str(&format!(
            "m=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup); \
             cat {root}$m/memory.failcnt > {d}/failcnt; \
             cat {root}$m/memory.memsw.failcnt > {d}/memsw.failcnt 2>/dev/null; \
             cat {root}$m/memory.oom_control > {d}/oom_control"
        )),
        None => s.push_str(&format!("cat {v2}$v2/memory.events > {d}/events")),
    }
    s
}

fn total(text: &str, kind: &str) -> u64 {
    text.lines()
        .find(|l| l.starts_with(kind))
        .and_then(|l| l.split_whitespace().find_map(|w| w.strip_prefix("total=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {kind} total in {text:?}"))
}

/// The events the command read, by the names vmtrace records them under.
fn events_read(dir: &Path) -> BTreeMap<String, u64> {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    let kv = |t: String| -> BTreeMap<String, u64> {
        t.lines()
            .filter_map(|l| {
                let (k, v) = l.split_once(' ')?;
                Some((k.to_string(), v.trim().parse().ok()?))
            })
            .collect()
    };
    if let Some(e) = read("events") {
        return kv(e);
    }
    let mut e = BTreeMap::new();
    for f in ["failcnt", "memsw.failcnt"] {
        if let Some(v) = read(f).and_then(|t| t.trim().parse().ok()) {
            e.insert(f.to_string(), v);
        }
    }
    let oom = kv(read("oom_control").expect("oom_control"));
    e.insert("oom_kill".into(), oom["oom_kill"]);
    e
}

/// One run in a box; returns (report, events read, PSI some/full read
/// and the run's wall time in us, the recording's text report).
fn run_in_box(name: &str, box_opts: &[&str], hog: &[&str]) -> (Value, Value, [u64; 3], String) {
    let dir = fresh_scratch(name);
    let (v2, v1) = mounts();
    let v2 = v2.expect("these tests need cgroup2 (PSI per cgroup)");
    // The memcg is v1 only where cgroup2 has no memory controller.
    let v2_memory = std::fs::read_to_string(format!("{v2}/cgroup.controllers"))
        .is_ok_and(|c| c.split_whitespace().any(|w| w == "memory"));
    let v1 = v1.filter(|_| !v2_memory);
    let rec = dir.join("box.vmtrace.json");
    let out = vmtrace(&["run", "--progress", "none", "--json", "--interval", "0.5"])
        .args(box_opts)
        .args(["-o", &rec.to_string_lossy(), "--", "sh", "-c"])
        .arg(script(&dir, &v2, v1.as_deref(), hog))
        .output()
        .expect("run vmtrace");
    let r = json_of(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = std::fs::read_to_string(dir.join("pressure")).expect("pressure copied");
    let wall_us = (r["usage"]["wall_s"].as_f64().expect("wall") * 1e6) as u64;
    let psi = [total(&p, "some"), total(&p, "full"), wall_us];
    let events = serde_json::to_value(events_read(&dir)).expect("json");
    let text = text_ok(&mut vmtrace(&["report", &rec.to_string_lossy()]));
    let rec = recording(&rec);
    // The time line's last box_psi is at most the end's, and rises.
    let tl = rec["runs"][0]["report"]["timeline"]
        .as_array()
        .expect("timeline")
        .clone();
    let some: Vec<u64> = tl
        .iter()
        .map(|s| {
            s["box_psi"]["some_us"]
                .as_u64()
                .expect("box_psi in every sample")
        })
        .collect();
    assert!(some.windows(2).all(|w| w[0] <= w[1]), "{some:?}");
    assert!(
        some.last().is_some_and(|&l| l <= psi[0]),
        "{some:?} vs {psi:?}"
    );
    eprintln!("{name}: samples box some_us {some:?}");
    (r, events, psi, text)
}

fn check(name: &str, r: &Value, events: &Value, psi: [u64; 3], text: &str) {
    let b = &r["membox"];
    eprintln!(
        "{name}: read some={} full={} us (wall {} us), events {events}; \
         recorded pressure {} events {}",
        psi[0], psi[1], psi[2], b["pressure"], b["events"]
    );
    assert_eq!(&b["events"], events, "{b:#}");
    for (i, k) in ["some_us", "full_us"].iter().enumerate() {
        let got = b["pressure"][k].as_u64().expect("pressure recorded");
        let diff = got.abs_diff(psi[i]);
        assert!(
            diff <= 2_000 || diff as f64 <= 0.01 * psi[i] as f64,
            "{k}: recorded {got}, the cgroup's file {}",
            psi[i]
        );
    }
    assert!(
        psi[0] <= psi[2],
        "some {} us over the run's {} us",
        psi[0],
        psi[2]
    );
    // The text report shows both lines.
    assert!(text.contains("pressure: box PSI some "), "{text}");
    assert!(text.contains("events:   box "), "{text}");
}

/// A hog twice the box's size, with swap: the box reclaims at its limit
/// all run long, so `max`/`failcnt` and PSI are far from zero; then a
/// hog without swap, OOM-killed by the box (the shell lives on to read
/// the files): oom_kill 1 in the cgroup's file and in the report.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn box_pressure_and_events_equal_the_cgroups_own_files() {
    let _g = guard();
    let (r, events, psi, text) = run_in_box(
        "box-swap",
        &["--mem", "64M", "--swap", "256M"],
        &["--mib", "128", "--passes", "1"],
    );
    check("swapping", &r, &events, psi, &text);
    // Long enough for a time line: machine and box columns, labelled.
    assert!(text.contains("whole machine"), "{text}");
    eprintln!("{text}");
    let limit_hits = ["max", "failcnt"]
        .iter()
        .find_map(|k| events[k].as_u64())
        .expect("max or failcnt");
    assert!(limit_hits > 0, "{events}");
    assert!(psi[0] > 0, "no box pressure in a swapping run");

    let (r, events, psi, text) = run_in_box("box-oom", &["--mem", "32M"], &["--mib", "128"]);
    check("oom", &r, &events, psi, &text);
    assert_eq!(events["oom_kill"].as_u64(), Some(1), "{events}");
}
