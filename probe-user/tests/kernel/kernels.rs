//! `vmtrace kernels`: other kernels booted in QEMU guests measure like the
//! host, and a kernel that does not boot is reported while the rest run.

use serde_json::Value;

use crate::common::{fresh_scratch, guard, recording, vmtrace, within};

/// `vmtrace kernels`: Debian's 6.1 and 6.12 kernels boot in QEMU guests
/// (downloaded once, cached), vmtrace runs a memory hog under pressure in
/// each, and each recording shows every probe that kernel has attached,
/// reclaim, fault and swap counts that agree with the guest's own
/// /proc/vmstat and rusage; the kernels are compared at the end, with
/// MGLRU's metrics guarded (`guards`).
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
        // Both kernels print the THP and compaction counters; only
        // 6.10 and later have per-size mTHP stats (model::counters).
        assert!(r["thp"]["fault_alloc"].is_u64(), "{what}: {:#}", r["thp"]);
        assert!(r["compaction_counters"]["stall"].is_u64(), "{what}");
        let sizes = r["thp"]["sizes"].as_array().map_or(0, Vec::len);
        assert_eq!(
            sizes > 0,
            !release.starts_with("6.1."),
            "{what}: {sizes} mTHP sizes"
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
    // The seed mails' table: a row per kernel, printed and kept.
    let table = std::fs::read_to_string(out_dir.join("table.txt")).expect("table.txt");
    assert!(compare.contains(&table), "{compare}");
    assert!(table.starts_with("elapsed seconds per kernel"), "{table}");
    for r in &releases {
        assert!(
            table.lines().any(|l| l.starts_with(r.as_str())),
            "{r} has no row:\n{table}"
        );
    }
    crate::guards::assert_mglru_guarded(&compare, &out_dir);
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
