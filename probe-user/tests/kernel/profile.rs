//! The job's CPU profile (probe-ebpf `profile`: its kernel stacks
//! sampled on the CPU clock) against rusage: the kernel samples over
//! the frequency are the job's system CPU, the user-mode ones its user
//! CPU; and the page-cache fill paths hold a file re-read's CPU when
//! the file does not fit its box, not when it does.

use serde_json::Value;

use crate::common::{fresh_scratch, guard, json_of, memhog, vmtrace};

fn secs(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// (kernel samples, user samples, samples in a page-cache fill path
/// outside reclaim, hz) of a report's profile. The kernel samples are
/// the sampler's count; the stacks' weighted sum estimates it (outside
/// the stall spans one sample in 4 is walked and counts 4: a variance
/// of 3 per sample), and must lie within 5 standard deviations of it.
fn samples(r: &Value) -> (f64, f64, f64, f64) {
    let p = &r["profile"];
    assert!(p.is_object(), "no profile: {r:#}");
    let n = |v: &Value| v.as_u64().unwrap_or(0) as f64;
    let stacks = p["stacks"].as_array().cloned().unwrap_or_default();
    let estimate = stacks.iter().map(|s| n(&s["samples"])).sum::<f64>()
        + n(&p["other_samples"])
        + n(&p["lost_samples"]);
    let kernel = p["counted_kernel_samples"]
        .as_u64()
        .unwrap_or_else(|| panic!("no counted kernel samples: {p:#}")) as f64;
    println!("kernel samples {kernel}, the stacks' estimate {estimate}");
    assert!(
        (estimate - kernel).abs() <= 5.0 * (3.0 * kernel).sqrt() + 4.0,
        "the stacks add up to {estimate} samples, the sampler counted {kernel}"
    );
    let frames = |s: &Value| -> Vec<String> {
        s["frames"]
            .as_array()
            .map(|f| {
                f.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    // This test's own reading of a fill: read-ahead or a folio added
    // to the page cache, not under memcg reclaim.
    let fill = stacks
        .iter()
        .filter(|s| {
            let f = frames(s);
            f.iter()
                .any(|x| x.starts_with("page_cache_ra_") || x.starts_with("filemap_add_folio"))
                && !f
                    .iter()
                    .any(|x| x.starts_with("try_to_free_mem_cgroup_pages"))
        })
        .map(|s| n(&s["samples"]))
        .sum();
    (kernel, n(&p["user_samples"]), fill, n(&p["hz"]))
}

fn run(args: &[&str]) -> Value {
    let out = vmtrace(args).output().expect("run vmtrace");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json_of(&out);
    assert_eq!(r["exit"]["code"], 0, "{r:#}");
    r
}

/// A sort (user CPU, page faults, some system CPU): the samples agree
/// with rusage within 15% (and one tick's worth per second of run).
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn the_samples_are_the_jobs_user_and_system_cpu() {
    let _g = guard();
    let sorter = memhog().with_file_name("qsbench");
    let sorter = sorter.to_string_lossy();
    let r = run(&[
        "run",
        "--json",
        "--progress",
        "none",
        "--no-box",
        "--",
        &sorter,
        "-m",
        "96",
    ]);
    let (kernel, user, _, hz) = samples(&r);
    let u = &r["usage"];
    let (sys, usr, wall) = (secs(&u["sys_s"]), secs(&u["user_s"]), secs(&u["wall_s"]));
    println!(
        "sampled system {:.3}s (rusage {sys:.3}), user {:.3}s (rusage {usr:.3}), {hz} Hz",
        kernel / hz,
        user / hz
    );
    assert!(hz > 0.0 && usr + sys > 0.5, "too short to judge: {r:#}");
    let slack = |x: f64| 0.15 * x + 0.01 * wall + 2.0 / hz;
    assert!(
        (kernel / hz - sys).abs() <= slack(sys),
        "{kernel} samples vs {sys}s"
    );
    assert!(
        (user / hz - usr).abs() <= slack(usr),
        "{user} samples vs {usr}s"
    );
}

/// A 64 MiB file read 32 times: in a 256 MiB box the re-reads hit
/// the page cache and only the first read fills it; in a 24 MiB box
/// every read fills it again, so the fill paths' samples grow (more
/// than twice) and stay within the kernel samples. The fill paths'
/// samples are outside the stalls, where one in 4 is walked and
/// counted 4 times: 16 reads here gave 20-32 (5-8 walks, "too few to
/// judge" below 3 about once in 30 runs), 32 reads twice that.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn re_reads_that_miss_the_cache_are_sampled_filling_it() {
    let _g = guard();
    let dir = fresh_scratch("profile-fill");
    let file = dir.join("data");
    std::fs::write(&file, vec![7u8; 64 << 20]).expect("write the file");
    let f = file.to_string_lossy().into_owned();
    // A cold start for both: the file's clean pages are dropped from
    // the cache (POSIX_FADV_DONTNEED over the whole file: coreutils'
    // `iflag=nocache count=0`), not the machine's.
    let drop = || {
        let _ = std::process::Command::new("sh")
            .args([
                "-c",
                &format!("sync {f}; dd if={f} iflag=nocache count=0 status=none"),
            ])
            .status();
    };
    let job = format!("i=0; while [ $i -lt 32 ]; do cat {f} >/dev/null; i=$((i+1)); done");
    let mut fills = Vec::new();
    for mem in ["256M", "24M"] {
        drop();
        let r = run(&[
            "run",
            "--json",
            "--progress",
            "none",
            "--mem",
            mem,
            "--",
            "sh",
            "-c",
            &job,
        ]);
        let (kernel, _, fill, hz) = samples(&r);
        let sys = secs(&r["usage"]["sys_s"]);
        println!(
            "box {mem}: fill {:.3}s of sampled system {:.3}s (rusage {sys:.3})",
            fill / hz,
            kernel / hz
        );
        assert!(fill <= kernel, "{fill} of {kernel}");
        fills.push(fill);
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(fills[1] >= 10.0, "too few fill samples to judge: {fills:?}");
    assert!(fills[1] > 2.0 * fills[0], "fill samples {fills:?}");
}
