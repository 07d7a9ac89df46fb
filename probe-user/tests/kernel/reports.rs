//! What a run leaves for people to read: the text report (histograms, 72
//! columns), and the recording, which reproduces the report and exports
//! it mail-ready.

use std::path::PathBuf;

use crate::common::{fresh_scratch, guard, recording, run_memhog, text_ok, vmtrace};

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

/// Run, then report: the recording (default name, in the working
/// directory, owned by the sudo user) holds the machine's environment and
/// reproduces the run's report exactly; its text export is mail-ready.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn recording_round_trips_to_report_and_exports() {
    let _g = guard();
    let dir = fresh_scratch("round-trip");
    // The invoker's own directory: vmtrace writes the recording as them.
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).expect("chown");
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

/// Standard output that fails costs nothing: `> /dev/full` is one error
/// line, never a panic, and the recording is written; a reader that
/// closes the pipe early (`| head -c 10`) on a report of more than 64 KiB
/// ends the printing quietly, with the recording written too.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn failing_stdout_keeps_the_recording() {
    use std::process::Stdio;
    let _g = guard();
    let dir = fresh_scratch("stdout-fails");
    let full = dir.join("full.vmtrace.json");
    let out = vmtrace(&["run", "--progress", "none", "--no-box", "-o"])
        .arg(&full)
        .args(["--", "sh", "-c", "echo hi"])
        .stdout(
            std::fs::File::options()
                .write(true)
                .open("/dev/full")
                .expect("/dev/full"),
        )
        .output()
        .expect("run vmtrace");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(errors[0].contains("standard output"), "{err}");
    assert!(errors[0].contains("recording written to"), "{err}");
    assert!(
        recording(&full)["runs"]
            .as_array()
            .is_some_and(|r| r.len() == 1)
    );

    // A closed pipe: the JSON report of six recordings is well over
    // 64 KiB (the pipe's buffer; three are ~63 KB), so vmtrace writes
    // into a pipe nobody reads any more.
    let piped = dir.join("piped.vmtrace.json");
    let mut child = vmtrace(&["run", "--progress", "none", "--no-box", "--json", "-o"])
        .arg(&piped)
        .args(["--", "sh", "-c", "echo hi"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run vmtrace");
    let mut head = [0u8; 10];
    std::io::Read::read_exact(child.stdout.as_mut().expect("stdout"), &mut head)
        .expect("the first bytes");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("panicked") && !err.contains("error"), "{err}");
    assert!(piped.is_file(), "no recording after a closed pipe");
    let report = vmtrace(&["report", "--json"])
        .args([&piped, &full, &piped, &full, &piped, &full])
        .output()
        .expect("report");
    assert!(report.stdout.len() > 64 * 1024, "{}", report.stdout.len());
    let mut child = vmtrace(&["report", "--json"])
        .args([&piped, &full, &piped, &full, &piped, &full])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("report");
    std::io::Read::read_exact(child.stdout.as_mut().expect("stdout"), &mut head)
        .expect("the first bytes");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success() && err.is_empty(), "{err}");
}
