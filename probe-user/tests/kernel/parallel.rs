//! `vmtrace compare` on a parallel job: the bundled `build` at -j 4,
//! whose time budget (CPU-seconds and task-seconds summed over the
//! compilers) is several times its elapsed time. The attribution of the elapsed difference must
//! stay within that difference whatever the task-seconds do.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{fresh_scratch, guard, json_of, recording, text_ok, vmtrace};

/// One `vmtrace run build -j 4 --files 8 --mem MEM --swap 1G` into
/// `dir/file`; the recording if the build completed.
fn build_run(dir: &Path, mem: &str, file: &str) -> Option<PathBuf> {
    let path = dir.join(file);
    let out = vmtrace(&[
        "run", "build", "-j", "4", "--files", "8", "--mem", mem, "--swap", "1G", "-q", "-o",
    ])
    .arg(&path)
    .output()
    .expect("run vmtrace");
    assert!(
        path.is_file(),
        "no recording: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec = recording(&path);
    let exit = &rec["runs"][0]["report"]["exit"];
    (out.status.success() && exit["code"] == 0).then_some(path)
}

/// The invariants of one group's attribution in `compare --json`.
fn check_attribution(c: &Value, text: &str) {
    let v = &c["versus"][0];
    let split = &v["split"];
    let num = |x: &Value| x.as_f64().unwrap_or(f64::NAN);
    let diff = num(&split["difference"]);
    let elapsed = c["metrics"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["measure"]["id"] == "elapsed"))
        .expect("elapsed row");
    let means = num(&elapsed["groups"][1]["mean"]) - num(&elapsed["groups"][0]["mean"]);
    assert!((diff - means).abs() < 1e-6, "{split:#}");
    let rows = c["attribution"].as_array().expect("attribution rows");
    let parts: f64 = rows.iter().map(|r| num(&r["elapsed"][0])).sum();
    let unexplained = num(&split["unexplained"]);
    let tol = 1e-6 * diff.abs().max(1.0);
    assert!(
        (parts + unexplained - diff).abs() < tol,
        "parts {parts} + unexplained {unexplained} != {diff}\n{text}"
    );
    assert!(unexplained * diff >= 0.0 && unexplained.abs() <= diff.abs() + tol);
    let mut shares = 0.0;
    for r in rows {
        let part = num(&r["elapsed"][0]);
        assert!(part * diff >= 0.0 && part.abs() <= diff.abs() + tol, "{r}");
        if let Some(s) = r["shares"][0].as_f64() {
            assert!(
                (0.0..=1.0).contains(&s),
                "share {s} of {}\n{text}",
                r["component"]["label"]
            );
            shares += s;
        }
    }
    if num(&split["explained"]).abs() > 0.0 {
        assert!(
            (shares - 1.0).abs() < 1e-6,
            "shares add up to {shares}\n{text}"
        );
    }
    // No mechanism claims more of the elapsed time than the difference,
    // and together they claim no more than it either.
    let mut claimed = 0.0;
    for h in v["hints"].as_array().expect("hints") {
        if let Some(s) = h["seconds"].as_f64() {
            assert!(
                s * diff >= 0.0 && s.abs() <= diff.abs() + tol,
                "{h}\n{text}"
            );
            claimed += s.abs();
        }
    }
    assert!(
        claimed <= diff.abs() + tol,
        "claimed {claimed} of {diff}\n{text}"
    );
    if v["verdict"]["id"] == "within_noise" {
        assert_eq!(v["hints"].as_array().map(Vec::len), Some(0), "{text}");
    }
    // The attribution and the mechanisms print no share past 100% and
    // no negative one (the metric table's percent changes may be larger).
    let from = text.find("where the time went").unwrap_or(0);
    for w in text[from..].split_whitespace() {
        let w = w.trim_matches(|ch: char| "();,".contains(ch));
        if let Some(p) = w.strip_suffix('%').and_then(|p| p.parse::<f64>().ok()) {
            assert!((0.0..=100.0).contains(&p), "{w} in\n{text}");
        }
    }
}

/// The bundled build at -j 4 in a 96 MiB box against a 512 MiB box,
/// three runs each, interleaved: the job's concurrency is above 1, and
/// the attribution keeps its bounds (shares within [0, 100]%, explained
/// parts plus unexplained equal to the elapsed difference, no mechanism
/// past the difference).
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn parallel_build_attribution_stays_within_the_difference() {
    let _g = guard();
    let dir = fresh_scratch("parallel");
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for round in 0..3 {
        a.extend(build_run(&dir, "512M", &format!("a{round}.vmtrace.json")));
        b.extend(build_run(&dir, "96M", &format!("b{round}.vmtrace.json")));
    }
    assert!(
        a.len() >= 2 && b.len() >= 2,
        "{} and {} completed",
        a.len(),
        b.len()
    );
    let compare = |json: bool| {
        let mut c = vmtrace(&["compare"]);
        c.args(&a).arg("--vs").args(&b);
        if json {
            c.arg("--json");
        }
        c
    };
    let text = text_ok(&mut compare(false));
    eprintln!("{text}");
    for line in text.lines() {
        assert!(line.is_ascii() && line.len() <= 72, "{line:?}");
    }
    let c = json_of(&compare(true).output().expect("compare"));
    // The job's concurrency (its CPU-seconds and wait task-seconds per
    // elapsed second; run-queue waits are not in it).
    let par = c["versus"][0]["split"]["concurrency"][0]
        .as_f64()
        .unwrap_or(0.0);
    assert!(par > 1.0, "a -j 4 build's concurrency is {par}\n{text}");
    check_attribution(&c, &text);
    // The other way round (B as the baseline): the same bounds.
    let mut rev = vmtrace(&["compare"]);
    rev.args(&b).arg("--vs").args(&a).arg("--json");
    let r = json_of(&rev.output().expect("compare"));
    check_attribution(&r, &text);
}
