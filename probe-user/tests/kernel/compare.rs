//! `vmtrace compare` on one kernel with a known cause (swap readahead
//! off), and A against A called noise.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use crate::common::{fresh_scratch, guard, json_of, page_cluster, recording, text_ok, vmtrace};

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
    assert_eq!(out.status.code(), Some(127));
    assert_eq!(page_cluster(), before);

    let (a, b, a2) = interleaved_rounds(&dir);

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
    assert_eq!(v["verdict"]["id"], "slower", "{text}");
    // A pc=0 run can be OOM-killed in its tight box; compare then names
    // the OOM kill first (rightly). The mechanism after it is swap-in.
    let first = v["hints"]
        .as_array()
        .and_then(|h| h.iter().find(|h| h["mechanism"]["id"] != "oom_kills"))
        .map(|h| h["mechanism"]["label"].clone());
    assert_eq!(first, Some(serde_json::json!("swap-in")), "{text}");
    let explained = v["explained"].as_f64().unwrap_or(0.0);
    assert!(
        (0.6..=1.4).contains(&explained),
        "attribution explains {explained} of the difference:\n{text}"
    );
    // The mechanism's numbers: readahead gone, reads one page each.
    let per_read = c["metrics"]
        .as_array()
        .and_then(|m| {
            m.iter()
                .find(|m| m["measure"]["label"] == "pages per swap read")
        })
        .expect("pages per swap read");
    assert!(per_read["groups"][0]["mean"].as_f64().unwrap_or(0.0) > 2.0);
    assert!(per_read["groups"][1]["mean"].as_f64().unwrap_or(9.0) < 1.2);

    a_against_a_is_within_noise(&dir, &a, &a2);
    assert_eq!(page_cluster(), before);
}

/// The recordings of groups A, B and A', run in interleaved rounds.
fn interleaved_rounds(dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>, Vec<PathBuf>) {
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
            let (path, ok) = qsbench_run(dir, pc, &format!("g{k}-r{round}.vmtrace.json"));
            group.push(path);
            done[k] += usize::from(ok);
        }
        if done.iter().all(|&n| n >= 3) {
            let c = json_of(&compare_cmd(&a, &b, true).output().expect("compare"));
            if c["versus"][0]["verdict"]["id"] == "slower" {
                break;
            }
        }
    }
    assert!(
        done.iter().all(|&n| n >= 2),
        "completed runs per group {done:?}"
    );
    (a, b, a2)
}

/// A against A' (the same configuration) is within noise, or else a fresh
/// interleaved pair is.
fn a_against_a_is_within_noise(dir: &Path, a: &[PathBuf], a2: &[PathBuf]) {
    // A/A: at p < 0.05 one comparison of equal groups in 20 is a false
    // alarm by design. If this one is, a fresh interleaved pair must not
    // be (both false: 1 in 400).
    let mut pair = (a.to_vec(), a2.to_vec());
    for attempt in 0..2 {
        let aa = json_of(
            &compare_cmd(&pair.0, &pair.1, true)
                .output()
                .expect("compare"),
        );
        let aa_text = text_ok(&mut compare_cmd(&pair.0, &pair.1, false));
        eprintln!("{aa_text}");
        let v = &aa["versus"][0];
        if v["verdict"]["id"] == "within_noise" {
            // Nothing is named but OOM kills, which are said whenever
            // the groups' kills differ (a run of qsbench in its tight
            // box is now and then OOM-killed, A' as well as B; see
            // analysis' oom_kills_are_named_when_the_time_is_within_noise).
            let hints = v["hints"].as_array().cloned().unwrap_or_default();
            assert!(
                hints.iter().all(|h| h["mechanism"]["id"] == "oom_kills"),
                "{aa_text}"
            );
            let words = aa_text.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(words.contains("no cause to explain"), "{aa_text}");
            break;
        }
        assert_eq!(attempt, 0, "A/A twice not within noise:\n{aa_text}");
        pair = (Vec::new(), Vec::new());
        for round in 0..3 {
            for (k, group) in [&mut pair.0, &mut pair.1].into_iter().enumerate() {
                group.push(qsbench_run(dir, "3", &format!("aa{k}-r{round}.vmtrace.json")).0);
            }
        }
    }
}
