//! `vmtrace attach` drops its capabilities once attached: started by
//! root, every thread of it then holds only what its exit path needs
//! (CAP_SYS_ADMIN, to restore kernel.task_delayacct; CAP_SETUID and
//! CAP_SETGID only under sudo, where the recording is written as the
//! invoker; CAP_DAC_READ_SEARCH only when it walks cgroupfs), with
//! no_new_privs set; the exporter still
//! answers /metrics with counters read from its maps, and SIGINT still
//! writes the recording and restores the sysctl.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    os::unix::fs::MetadataExt,
    path::Path,
    process::{Child, ChildStderr, Command, Stdio},
    time::Duration,
};

use crate::{
    attach::{memory_box, spawn_in_box},
    common::{fresh_scratch, guard, memhog, recording, vmtrace},
};

const CAP_DAC_READ_SEARCH: u64 = 1 << 2;
const CAP_SETGID: u64 = 1 << 6;
const CAP_SETUID: u64 = 1 << 7;
const CAP_SYS_ADMIN: u64 = 1 << 21;

const DELAYACCT: &str = "/proc/sys/kernel/task_delayacct";

fn delayacct() -> String {
    std::fs::read_to_string(DELAYACCT)
        .expect("kernel.task_delayacct")
        .trim()
        .to_string()
}

/// Reads vmtrace's stderr until it says it is attached; the rest is
/// drained by a thread (returned at its end) so that it never blocks.
fn wait_attached(child: &mut Child) -> std::thread::JoinHandle<String> {
    let mut err = BufReader::new(child.stderr.take().expect("piped stderr"));
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = err.read_line(&mut line).expect("vmtrace stderr");
        assert!(n > 0, "vmtrace ended before attaching: {seen}");
        seen.push_str(&line);
        if line.starts_with("vmtrace: attached to") {
            break;
        }
    }
    std::thread::spawn(move || drain(seen, err))
}

fn drain(mut seen: String, mut err: BufReader<ChildStderr>) -> String {
    let _ = err.read_to_string(&mut seen);
    seen
}

/// (thread id, CapEff, CapPrm, CapBnd, CapAmb, CapInh, NoNewPrivs) of
/// every thread of `pid`.
fn thread_caps(pid: u32) -> Vec<(String, [u64; 5], u32)> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).expect("task dir") {
        let t = t.expect("task entry");
        let status = std::fs::read_to_string(t.path().join("status")).expect("status");
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(str::trim)
                .unwrap_or_else(|| panic!("{name} missing"))
                .to_string()
        };
        let hex = |name: &str| u64::from_str_radix(&field(name), 16).expect("hex mask");
        out.push((
            t.file_name().to_string_lossy().into_owned(),
            ["CapEff:", "CapPrm:", "CapBnd:", "CapAmb:", "CapInh:"].map(hex),
            field("NoNewPrivs:").parse().expect("NoNewPrivs"),
        ));
    }
    out
}

/// Every thread holds exactly `kept` in effective, permitted and
/// bounding sets, nothing ambient or inheritable, and no_new_privs.
fn assert_only(pid: u32, kept: u64) {
    let caps = thread_caps(pid);
    assert!(!caps.is_empty());
    for (tid, [eff, prm, bnd, amb, inh], nnp) in caps {
        println!(
            "thread {tid}: CapEff {eff:016x} CapPrm {prm:016x} CapBnd {bnd:016x} \
             CapAmb {amb:016x} CapInh {inh:016x} NoNewPrivs {nnp}"
        );
        assert_eq!(
            [eff, prm, bnd, amb, inh],
            [kept, kept, kept, 0, 0],
            "thread {tid}"
        );
        assert_eq!(nnp, 1, "thread {tid}: NoNewPrivs");
    }
}

fn sigint(child: &Child) {
    // SAFETY: kill on the pid of a child we have not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
}

/// A vmtrace that a failed assertion stops with SIGINT (so that it
/// restores the sysctl) instead of leaving it running.
struct Stopping(Option<Child>);

impl Stopping {
    /// SIGINT, then its exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        let mut child = self.0.take().expect("running");
        sigint(&child);
        child.wait().expect("reap vmtrace")
    }
}

impl Drop for Stopping {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            // SAFETY: kill on the pid of a child we have not reaped; no
            // assertion here (this may run while a test panics).
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            let _ = child.wait();
        }
    }
}

/// Plain attach as root: only CAP_SYS_ADMIN is left once attached; on
/// SIGINT the recording is written and task_delayacct is back. Then the
/// same into a directory of `nobody` for sudo's invoker `nobody`:
/// CAP_SETUID and CAP_SETGID are kept too (the recording is written as
/// the invoker), and the recording is nobody's.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn attach_keeps_only_the_capabilities_its_exit_needs() {
    let _g = guard();
    let dir = fresh_scratch("dropped-privileges");
    let old = delayacct();
    let rec = dir.join("attach.vmtrace.json");
    let mut child = vmtrace(&["attach", "-o", &rec.to_string_lossy()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vmtrace attach");
    let stderr = wait_attached(&mut child);
    let pid = child.id();
    let child = Stopping(Some(child));
    assert_eq!(delayacct(), "1", "delay accounting on while attached");
    assert_only(pid, CAP_SYS_ADMIN);
    let status = child.stop();
    let err = stderr.join().expect("stderr");
    print!("{err}");
    assert!(status.success(), "{status}: {err}");
    assert!(!err.contains("not dropped"), "{err}");
    assert_eq!(delayacct(), old, "task_delayacct restored: {err}");
    let r = recording(&rec);
    assert_eq!(r["runs"][0]["report"]["attached"], true);
    println!(
        "recording {} written, task_delayacct back to {old}",
        rec.display()
    );

    // Into nobody's directory, given to nobody as sudo's invoker.
    let theirs = dir.join("nobody");
    std::fs::create_dir(&theirs).expect("nobody's dir");
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).expect("chown");
    let rec = theirs.join("attach.vmtrace.json");
    let mut child = vmtrace(&["attach", "-o", &rec.to_string_lossy()])
        .env("SUDO_UID", "65534")
        .env("SUDO_GID", "65534")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vmtrace attach");
    let stderr = wait_attached(&mut child);
    let pid = child.id();
    let child = Stopping(Some(child));
    assert_only(pid, CAP_SYS_ADMIN | CAP_SETGID | CAP_SETUID);
    let status = child.stop();
    let err = stderr.join().expect("stderr");
    print!("{err}");
    assert!(status.success(), "{status}: {err}");
    assert_eq!(delayacct(), old, "task_delayacct restored: {err}");
    let meta = std::fs::metadata(&rec).expect("the recording in nobody's dir");
    assert_eq!((meta.uid(), meta.gid()), (65534, 65534));
    println!("recording {} written, owned by nobody", rec.display());
}

/// GET /metrics: the value of one metric line.
fn metric(port: u16, name: &str) -> f64 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to vmtrace");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("answer");
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

/// `attach --serve` after the drop: a boxed memory hog's memcg reclaims,
/// read from the maps, rise between two scrapes; SIGINT still writes the
/// recording and restores task_delayacct.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn the_exporter_serves_live_counters_after_the_drop() {
    let _g = guard();
    let dir = fresh_scratch("dropped-privileges-serve");
    let old = delayacct();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let rec = dir.join("serve.vmtrace.json");
    let listen = format!("127.0.0.1:{port}");
    let mut child = vmtrace(&["attach", "--serve", &listen, "-o", &rec.to_string_lossy()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vmtrace attach --serve");
    let stderr = wait_attached(&mut child);
    let pid = child.id();
    let child = Stopping(Some(child));
    // The exporter walks cgroupfs for cgroup names: CAP_DAC_READ_SEARCH.
    assert_only(pid, CAP_SYS_ADMIN | CAP_DAC_READ_SEARCH);
    let server = the_unprivileged_server(pid, &dir);
    let name = "vmtrace_memcg_reclaim_seconds_count";
    let before = metric(port, name);
    let membox = memory_box(64 << 20);
    let status = spawn_in_box(
        &membox,
        Command::new(memhog()).args(["--mib", "128", "--passes", "1"]),
    )
    .wait()
    .expect("memhog");
    assert!(status.success(), "memhog: {status}");
    // Renderings are shared for a second.
    std::thread::sleep(Duration::from_millis(1500));
    let after = metric(port, name);
    println!("{name}: {before} before the hog, {after} after");
    assert!(after > before, "{name} did not move: {before} -> {after}");
    drop(membox);
    let status = child.stop();
    let err = stderr.join().expect("stderr");
    print!("{err}");
    assert!(status.success(), "{status}: {err}");
    assert_eq!(delayacct(), old, "task_delayacct restored: {err}");
    assert!(Path::new(&rec).is_file(), "no recording: {err}");
    assert!(
        !Path::new(&format!("/proc/{server}")).exists(),
        "the HTTP server {server} outlived vmtrace"
    );
    let r = recording(&rec);
    let reclaims = r["runs"][0]["report"]["memcg_reclaim"]["stalls"]["count"].as_u64();
    println!("recording written; its memcg reclaim count {reclaims:?}");
}

/// The process that serves HTTP: vmtrace's one child, with no uid or gid
/// 0, no group, no capability in any set, no_new_privs, and no eBPF or
/// perf descriptor. A process with exactly its credentials (setpriv)
/// cannot append to a root-owned 0644 file nor read /etc/shadow, which
/// a uid 0 with the capabilities the exporter held before could.
/// Returns its pid.
fn the_unprivileged_server(vmtrace: u32, dir: &Path) -> u32 {
    let children = std::fs::read_to_string(format!("/proc/{vmtrace}/task/{vmtrace}/children"))
        .expect("vmtrace's children");
    let server: u32 = match children.split_whitespace().collect::<Vec<_>>()[..] {
        [one] => one.parse().expect("a pid"),
        ref other => panic!("vmtrace --serve has children {other:?}, not one"),
    };
    let status = std::fs::read_to_string(format!("/proc/{server}/status")).expect("status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    println!(
        "HTTP server {server}: Uid {} Gid {} Groups [{}] CapEff {} CapPrm {} CapBnd {} \
         CapAmb {} NoNewPrivs {}",
        field("Uid:"),
        field("Gid:"),
        field("Groups:"),
        field("CapEff:"),
        field("CapPrm:"),
        field("CapBnd:"),
        field("CapAmb:"),
        field("NoNewPrivs:")
    );
    let ids = |name: &str| -> Vec<u32> {
        field(name)
            .split_whitespace()
            .map(|x| x.parse().expect("an id"))
            .collect()
    };
    let (uids, gids) = (ids("Uid:"), ids("Gid:"));
    assert!(uids.iter().all(|&u| u != 0), "uids {uids:?}");
    assert!(gids.iter().all(|&g| g != 0), "gids {gids:?}");
    assert_eq!(field("Groups:"), "", "supplementary groups");
    for name in ["CapEff:", "CapPrm:", "CapBnd:", "CapAmb:", "CapInh:"] {
        assert_eq!(
            u64::from_str_radix(&field(name), 16).expect("hex mask"),
            0,
            "{name}"
        );
    }
    assert_eq!(field("NoNewPrivs:"), "1");
    for fd in std::fs::read_dir(format!("/proc/{server}/fd")).expect("its descriptors") {
        let fd = fd.expect("fd entry");
        let target = std::fs::read_link(fd.path()).expect("fd target");
        let target = target.to_string_lossy();
        assert!(
            !target.contains("bpf") && !target.contains("perf_event"),
            "the HTTP server holds {target}"
        );
    }

    // What those credentials can do to root's files.
    let file = dir.join("roots-0644");
    std::fs::write(&file, "root's\n").expect("a root-owned file");
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .expect("chmod 0644");
    let as_server = |script: &str| {
        Command::new("setpriv")
            .arg(format!("--reuid={}", uids[0]))
            .arg(format!("--regid={}", gids[0]))
            .args([
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--no-new-privs",
                "--",
                "sh",
                "-c",
                script,
            ])
            .arg("sh")
            .arg(&file)
            .stderr(Stdio::null())
            .status()
            .expect("setpriv")
    };
    assert!(
        !as_server("echo planted >> \"$1\"").success(),
        "the server's credentials appended to a root-owned 0644 file"
    );
    assert!(
        !as_server("cat /etc/shadow > /dev/null").success(),
        "the server's credentials read /etc/shadow"
    );
    assert_eq!(
        std::fs::read_to_string(&file).expect("the file"),
        "root's\n"
    );
    println!("with the server's credentials: no append to a root 0644 file, no /etc/shadow");
    server
}
