//! What every kernel test shares: the vmtrace binary and the bundled
//! memory hog, /proc/vmstat deltas, the guard that finds (and removes)
//! whatever a run left behind, scratch directories, running vmtrace and
//! reading its JSON reports and recordings, and a few readings of the
//! kernel's state (sysctls, BPF objects).

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::python::python_path;

pub const VMTRACE: &str = env!("CARGO_BIN_EXE_vmtrace");

/// The bundled memory hog, built beside vmtrace (`cargo xtask test` builds
/// it; VMTRACE_MEMHOG overrides).
pub fn memhog() -> PathBuf {
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

pub fn vmstat() -> std::collections::BTreeMap<String, u64> {
    std::fs::read_to_string("/proc/vmstat")
        .expect("read /proc/vmstat")
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

/// The size of a hog `extra` MiB larger than the free memory, for global
/// pressure; it must fit in what reclaim can free plus the 2 GiB of swap
/// the tests add beside it, so nothing is OOM-killed.
pub fn global_hog_mib(extra: u64) -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").expect("meminfo");
    let kb = |key: &str| -> u64 {
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let mib = kb("MemFree:") / 1024 + extra;
    assert!(
        mib * 1024 < kb("MemAvailable:") + (2 << 20),
        "{mib} MiB would not fit"
    );
    mib
}

pub fn delta(
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
pub struct Leftovers;

impl Leftovers {
    pub fn find() -> Vec<String> {
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
        for dir in ["/var/tmp", "/var/tmp/vmtrace-swap"] {
            if let Ok(rd) = std::fs::read_dir(dir) {
                for e in rd.flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if name.starts_with("vmtrace-") && name.ends_with(".swap") {
                        found.push(format!("{dir}/{name}"));
                    }
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

pub fn guard() -> Leftovers {
    let before = Leftovers::find();
    assert!(
        before.is_empty(),
        "leftovers from an earlier run: {before:?}"
    );
    Leftovers
}

/// Where vmtrace runs in the tests: recordings land here, not in the tree.
pub fn scratch() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kernel-tests");
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// An empty directory of its own under `scratch()`.
pub fn fresh_scratch(name: &str) -> PathBuf {
    let dir = scratch().join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The child gets SIGKILL when the thread that started it dies
/// (PR_SET_PDEATHSIG): a load a test starts beside its runs never
/// outlives a killed suite.
pub fn die_with_parent(cmd: &mut Command) {
    // SAFETY: prctl is async-signal-safe; it runs in the child between
    // fork and exec and allocates nothing.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(cmd, || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
}

pub fn vmtrace(args: &[&str]) -> Command {
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
pub fn run_memhog(json: bool, options: &[&str], hog_args: &[&str]) -> Command {
    let mut c = vmtrace(&["run", "--progress", "none"]);
    if json {
        c.arg("--json");
    }
    c.args(options).arg("--").arg(memhog()).args(hog_args);
    c
}

/// Runs vmtrace, requires it to succeed, and returns its text output.
pub fn text_ok(cmd: &mut Command) -> String {
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
pub fn json_ok(cmd: &mut Command) -> Value {
    let out = cmd.output().expect("run vmtrace");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(&out)
}

/// vmtrace's JSON on stdout, checked against its schema, and what the
/// tests read of it (`payload`).
pub fn json_of(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    if serde_json::from_str::<Value>(&text).is_err() {
        panic!(
            "vmtrace did not print JSON; stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    payload(&text)
}

/// A JSON document vmtrace printed, validated against the schema of its
/// command (`vmtrace generate schema`, by the PyPI jsonschema validator:
/// every kernel test's JSON is a golden output checked against it), and
/// the part the tests read: a single run's report (`run`), the window's
/// report (`attach`), the comparison without a sweep (`compare`), the
/// probe list (`probes`); the whole document otherwise.
pub fn payload(text: &str) -> Value {
    let doc: Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text:.300}"));
    let format = doc["format"].as_str().unwrap_or_default().to_string();
    let command = format
        .strip_prefix("vmtrace-")
        .unwrap_or_else(|| panic!("no vmtrace format: {text:.300}"));
    check_against_schema(command, text);
    let single = |key: &str| {
        doc[key]
            .as_array()
            .filter(|a| a.len() == 1)
            .map(|a| a[0].clone())
    };
    match command {
        "run" => single("runs").unwrap_or(doc),
        "attach" => doc["report"].clone(),
        "compare" if doc["not_compared"].as_array().is_some_and(Vec::is_empty) => {
            single("columns").map_or(doc, |c| c["comparison"].clone())
        }
        "probes" => doc["probes"].clone(),
        _ => doc,
    }
}

/// Validates `text` against `vmtrace generate schema COMMAND` with
/// probe-user/tests/schema_check.py (files under the target's own tmp
/// directory, not /tmp: these tests run as root).
fn check_against_schema(command: &str, text: &str) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("schema-check");
    std::fs::create_dir_all(&dir).expect("schema check dir");
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let schema = dir.join(format!("{command}.schema.json"));
    let out = Command::new(VMTRACE)
        .args(["generate", "schema", command])
        .output()
        .expect("vmtrace generate schema");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(&schema, &out.stdout).expect("write schema");
    let doc = dir.join(format!("{}-{n}.json", std::process::id()));
    std::fs::write(&doc, text).expect("write document");
    let py = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schema_check.py"))
        .arg(&schema)
        .arg(&doc)
        .env("PYTHONPATH", python_path())
        .output()
        .expect("python3 runs");
    assert!(
        py.status.success(),
        "vmtrace {command} --json does not match its schema:\n{}{}",
        String::from_utf8_lossy(&py.stdout),
        String::from_utf8_lossy(&py.stderr)
    );
    let _ = std::fs::remove_file(&doc);
}

pub fn within(a: u64, b: u64, frac: f64) -> bool {
    let (a, b) = (a as f64, b as f64);
    (a - b).abs() <= frac * a.max(b).max(1.0)
}

/// A recording, read as JSON.
pub fn recording(path: &Path) -> Value {
    let bytes =
        std::fs::read(path).unwrap_or_else(|e| panic!("no recording at {}: {e}", path.display()));
    serde_json::from_slice(&bytes).expect("recording is JSON")
}

pub fn page_cluster() -> String {
    std::fs::read_to_string("/proc/sys/vm/page-cluster")
        .expect("vm.page-cluster")
        .trim()
        .to_string()
}

/// Waits up to 5 s for the machine's BPF programs, maps and links to be
/// back to at most `before` (a dead process's objects are freed after
/// an RCU grace period; objects of earlier tests still on their way out
/// are counted in `before`), and fails with `what` if they are not.
pub fn assert_bpf_objects_back_to(before: [usize; 3], what: &str) {
    let at_most_before = || {
        bpf_object_counts()
            .iter()
            .zip(before)
            .all(|(now, before)| *now <= before)
    };
    let start = std::time::Instant::now();
    while !at_most_before() && start.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        at_most_before(),
        "{what} left eBPF programs, maps or links: {:?} vs {before:?}",
        bpf_object_counts()
    );
}

/// BPF objects of the whole system, by kind: programs, maps, links
/// (BPF_{PROG,MAP,LINK}_GET_NEXT_ID).
pub fn bpf_object_counts() -> [usize; 3] {
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
