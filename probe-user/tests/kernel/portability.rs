//! Kernels that differ from this one: a missing tracepoint disables its
//! metric alone, `vmtrace probes` agrees with the live tracefs, and
//! kernels without tracepoints, BTF or bpf() are refused or degrade
//! metric by metric.

use std::{
    path::Path,
    process::{Command, Output},
};

use serde_json::Value;

use crate::common::{
    Leftovers, VMTRACE, fresh_scratch, guard, json_of, json_ok, run_memhog, vmtrace,
};

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
    let listed: Value = json_of(&out);
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
        assert_eq!(out.status.code(), Some(125), "{err}");
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
