//! vmtrace's own options after a bundled workload's name: `run` hoists
//! every option of its clap definition (cli/argv.rs), so none reaches the
//! workload. Here the two that a hand-kept list once missed, on real runs.

use serde_json::Value;

use crate::common::{fresh_scratch, guard, json_ok, vmtrace};

fn command(r: &Value) -> Vec<&str> {
    r["command"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// `vmtrace run qsbench -m 20 --no-probes` runs qsbench untraced (the
/// flag is vmtrace's, not qsbench's, which would refuse it).
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn no_probes_after_the_workload_runs_it_untraced() {
    let _g = guard();
    let dir = fresh_scratch("options-no-probes");
    let out = dir.join("q.vmtrace.json");
    let mut c = vmtrace(&["run", "qsbench", "-m", "20", "--no-probes"]);
    c.args(["--json", "--progress", "none", "-o"]).arg(&out);
    let r = json_ok(&mut c);
    assert_eq!(r["exit"]["code"], 0, "{}", r["exit"]);
    assert_eq!(r["untraced"], true);
    assert!(r["memcg_reclaim"].is_null(), "nothing attached");
    assert_eq!(command(&r), ["qsbench", "-m", "20"]);
    assert!(out.exists(), "the recording is written");
}

/// `vmtrace run memhog --as-root` under sudo runs memhog as root (not as
/// sudo's invoker, and without handing memhog a flag it refuses).
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn as_root_after_the_workload_runs_it_as_root() {
    let _g = guard();
    let dir = fresh_scratch("options-as-root");
    // The invoker's own directory: vmtrace writes the recording as them.
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).expect("chown");
    let out = dir.join("m.vmtrace.json");
    for as_root in [true, false] {
        let mut c = vmtrace(&["run", "memhog", "--mib", "16", "--passes", "1"]);
        if as_root {
            c.arg("--as-root");
        }
        c.args(["--mem", "64M", "--json", "--progress", "none", "-o"])
            .arg(&out)
            .env("SUDO_UID", "65534")
            .env("SUDO_GID", "65534");
        let r = json_ok(&mut c);
        assert_eq!(r["exit"]["code"], 0, "{}", r["exit"]);
        assert_eq!(command(&r), ["memhog", "--mib", "16", "--passes", "1"]);
        if as_root {
            assert!(r["run_as"].is_null(), "ran as {}", r["run_as"]);
        } else {
            // The check can tell: without --as-root it runs as the invoker.
            let who = r["run_as"].as_str().unwrap_or("");
            assert!(who.contains("uid 65534"), "{who}");
        }
    }
}
