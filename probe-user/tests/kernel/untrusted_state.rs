//! State vmtrace did not write is not trusted (issue 30): /run/vmtrace
//! is root's alone (0700, even under umask 000), a state file another
//! user planted, or one naming a knob vmtrace never sets, is refused and
//! nothing is restored from it; a held lock makes vmtrace give up after
//! a timeout, and Ctrl-C still ends the wait; `--zswap` comes back after
//! a kill -9; a live vmtrace installed under another name is not taken
//! for a dead one.
//!
//! Every test runs on a thread of its own with a private mount namespace
//! (a fresh tmpfs on /run, so that /run/vmtrace is the test's, not the
//! machine's, where other vmtraces keep their locks) and a private UTS
//! namespace (a kernel.hostname "restored" by a vmtrace changes only the
//! test's). The vmtraces run with --no-probes: no sysctl another vmtrace
//! on the machine shares (delay accounting) is touched. `nobody` (uid
//! 65534) is the attacker.

use std::{
    os::unix::{
        fs::{MetadataExt, PermissionsExt},
        process::CommandExt,
    },
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    time::{Duration, Instant},
};

use crate::common::{VMTRACE, fresh_scratch, vmtrace};

const STATE_DIR: &str = "/run/vmtrace";
const HOSTNAME: &str = "/proc/sys/kernel/hostname";
const ZSWAP: &str = "/sys/module/zswap/parameters/enabled";

/// Runs `f` on a thread with its own mount and UTS namespaces and a
/// fresh tmpfs on /run; what it spawns inherits them.
fn isolated(f: impl FnOnce() + Send + 'static) {
    let t = std::thread::spawn(move || {
        // SAFETY: namespace and mount calls on NUL-terminated literals;
        // CLONE_NEWNS and CLONE_NEWUTS change only this thread (and what
        // it forks).
        unsafe {
            assert_eq!(libc::unshare(libc::CLONE_NEWNS | libc::CLONE_NEWUTS), 0);
            let none = c"none".as_ptr();
            let root = c"/".as_ptr();
            let flags = libc::MS_REC | libc::MS_PRIVATE;
            assert_eq!(
                libc::mount(none, root, std::ptr::null(), flags, std::ptr::null()),
                0
            );
            let data = c"mode=0755".as_ptr();
            let run = c"/run".as_ptr();
            let tmpfs = c"tmpfs".as_ptr();
            assert_eq!(libc::mount(none, run, tmpfs, 0, data.cast()), 0);
        }
        f();
    });
    if let Err(e) = t.join() {
        std::panic::resume_unwind(e);
    }
}

/// A command run as nobody, without groups.
fn as_nobody(program: &str) -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", program]);
    c
}

/// What vmtrace `pid` could leave: its cgroups, swapfile, state file
/// and live lock.
fn left_by(pid: u32) -> Vec<String> {
    let name = format!("vmtrace-{pid}");
    let mut found: Vec<String> = [
        "/sys/fs/cgroup",
        "/sys/fs/cgroup/memory",
        "/sys/fs/cgroup/unified",
    ]
    .iter()
    .map(|r| format!("{r}/{name}"))
    .chain([
        format!("/var/tmp/{name}.swap"),
        format!("{STATE_DIR}/sysctl-{pid}.state"),
        format!("{STATE_DIR}/live-{pid}.lock"),
    ])
    .filter(|p| Path::new(p).exists())
    .collect();
    found.sort();
    found
}

/// A pid no process has (below pid_max, so that it could be a dead
/// vmtrace's).
fn dead_pid() -> u32 {
    let max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(32768);
    (max / 2..max)
        .rev()
        .find(|p| !Path::new(&format!("/proc/{p}")).exists())
        .expect("a free pid")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The lines of vmtrace's stderr that are errors.
fn error_lines(err: &str) -> Vec<&str> {
    err.lines().filter(|l| l.contains("error")).collect()
}

/// Waits for `child` at most `limit`; kills it and fails past that.
fn wait_at_most(mut child: Child, limit: Duration, what: &str) -> (Output, Duration) {
    let t = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if t.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!(
                "{what}: vmtrace still running after {:.0} s: {}",
                limit.as_secs_f64(),
                stderr(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (child.wait_with_output().expect("wait"), t.elapsed())
}

fn spawn_piped(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vmtrace")
}

/// `vmtrace run --no-probes -- true`: the quickest vmtrace that reads
/// the state directory (leftovers of dead vmtraces) before it runs.
fn quick_run() -> Output {
    vmtrace(&["run", "--progress", "none", "--no-probes", "--", "true"])
        .output()
        .expect("run vmtrace")
}

fn mode_of(path: &str) -> (u32, u32) {
    let m = std::fs::symlink_metadata(path).expect("stat");
    (m.uid(), m.mode() & 0o7777)
}

/// Under umask 000 the directory is still root's and 0700 and so is
/// every file in it; nobody cannot open them.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn state_dir_is_root_only_even_with_umask_000() {
    isolated(|| {
        let mut cmd = vmtrace(&["run", "--progress", "none", "--no-probes", "--", "true"]);
        // SAFETY: umask is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::umask(0);
                Ok(())
            })
        };
        let out = cmd.output().expect("run vmtrace");
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(mode_of(STATE_DIR), (0, 0o700), "{STATE_DIR}");
        let mut files = Vec::new();
        for e in std::fs::read_dir(STATE_DIR).expect("list").flatten() {
            let p = e.path().display().to_string();
            assert_eq!(mode_of(&p), (0, 0o600), "{p}");
            files.push(p);
        }
        assert!(!files.is_empty(), "no lock file in {STATE_DIR}");
        let peek = as_nobody("cat").arg(&files[0]).output().expect("cat");
        assert!(!peek.status.success(), "nobody read {}", files[0]);
        eprintln!(
            "{STATE_DIR}: 0700 root; {files:?}: 0600 root; nobody: {}",
            stderr(&peek).trim()
        );
    });
}

/// Plants a state file naming kernel.hostname for a dead pid, runs a
/// vmtrace, and checks it refused in one line that says `expect`,
/// leaving the hostname as it was.
fn refused(plant: impl FnOnce(&Path), expect: &[&str], what: &str) {
    let pid = dead_pid();
    let file = PathBuf::from(format!("{STATE_DIR}/sysctl-{pid}.state"));
    let hostname = std::fs::read_to_string(HOSTNAME).expect("hostname");
    plant(&file);
    let out = quick_run();
    let err = stderr(&out);
    let after = std::fs::read_to_string(HOSTNAME).expect("hostname");
    // The namespace's hostname back, whatever happened (main restored it).
    let _ = std::fs::write(HOSTNAME, hostname.trim());
    assert_eq!(
        after, hostname,
        "{what}: kernel.hostname was changed: {err}"
    );
    assert!(!out.status.success(), "{what}: not refused: {err}");
    let errors = error_lines(&err);
    assert_eq!(errors.len(), 1, "{what}: not one line: {err}");
    for e in expect {
        assert!(errors[0].contains(e), "{what}: `{e}` missing: {err}");
    }
    eprintln!("{what}: {}", errors[0]);
}

const PLANTED: &str = "/proc/sys/kernel/hostname\tplanted-by-nobody\n";

/// State another user could have written is refused, and nothing is
/// restored from it: a directory others could write (as an older
/// vmtrace made it under umask 000) with nobody's file in it, one owned
/// by nobody, a file owned by nobody, a link, and a root-owned file
/// naming a knob vmtrace never sets.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn planted_state_is_refused_and_nothing_restored() {
    isolated(|| {
        let world_writable = |file: &Path| {
            std::fs::create_dir(STATE_DIR).expect("mkdir");
            std::fs::set_permissions(STATE_DIR, std::fs::Permissions::from_mode(0o777))
                .expect("chmod");
            let planted = as_nobody("sh")
                .arg("-c")
                .arg(format!(
                    "printf '{}' > {}",
                    PLANTED.replace('\t', "\\t").replace('\n', "\\n"),
                    file.display()
                ))
                .status()
                .expect("plant");
            assert!(planted.success(), "nobody could not plant");
            assert_eq!(std::fs::metadata(file).expect("planted").uid(), 65534);
        };
        refused(
            world_writable,
            &["remove /run/vmtrace", "0777", "vmtrace will recreate it"],
            "a world-writable directory",
        );
        std::fs::remove_dir_all(STATE_DIR).expect("clean");

        let owned_by_nobody = |file: &Path| {
            std::fs::create_dir(STATE_DIR).expect("mkdir");
            std::fs::set_permissions(STATE_DIR, std::fs::Permissions::from_mode(0o700))
                .expect("chmod");
            std::fs::write(file, PLANTED).expect("plant");
            std::os::unix::fs::chown(STATE_DIR, Some(65534), Some(65534)).expect("chown");
        };
        refused(
            owned_by_nobody,
            &["remove /run/vmtrace", "uid 65534"],
            "a directory owned by nobody",
        );
        std::fs::remove_dir_all(STATE_DIR).expect("clean");

        // From here on the directory is vmtrace's own.
        let out = quick_run();
        assert!(out.status.success(), "{}", stderr(&out));
        let nobodys_file = |file: &Path| {
            std::fs::write(file, PLANTED).expect("plant");
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
            std::os::unix::fs::chown(file, Some(65534), Some(65534)).expect("chown");
        };
        refused(
            nobodys_file,
            &["sysctl-", "uid 65534"],
            "a file owned by nobody",
        );
        clear_state_files();

        let link = |file: &Path| {
            let target = fresh_scratch("untrusted-link").join("state");
            std::fs::write(&target, PLANTED).expect("target");
            std::os::unix::fs::symlink(&target, file).expect("link");
        };
        refused(link, &["sysctl-", "link"], "a symbolic link");
        clear_state_files();

        let roots_file = |file: &Path| {
            std::fs::write(file, PLANTED).expect("plant");
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        };
        refused(
            roots_file,
            &["sysctl-", "kernel/hostname", "never sets"],
            "a root-owned file naming kernel.hostname",
        );
        clear_state_files();
    });
}

fn clear_state_files() {
    for e in std::fs::read_dir(STATE_DIR).expect("list").flatten() {
        if e.file_name().to_string_lossy().ends_with(".state") {
            std::fs::remove_file(e.path()).expect("remove");
        }
    }
}

/// Holds `path` locked (flock, exclusive) while the value lives.
struct Held(#[allow(dead_code)] std::fs::File);

fn hold(path: &str) -> Held {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).expect("open the lock");
    // SAFETY: flock on a descriptor we own.
    assert_eq!(unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) }, 0);
    Held(f)
}

/// A held sysctl lock: nobody cannot take it at all (read-only open
/// included); held by root, `vmtrace attach` gives up after the timeout
/// in one line naming the lock and its holder, and SIGINT during the
/// wait ends vmtrace at once with 130, leaving nothing behind.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn a_held_lock_times_out_and_sigint_ends_the_wait() {
    isolated(|| {
        let out = quick_run();
        assert!(out.status.success(), "{}", stderr(&out));
        let lock = format!("{STATE_DIR}/sysctl.lock");
        // nobody tries first: flock(1) opens the file read-only.
        let mut nobody = as_nobody("flock")
            .args(["-x", &lock, "sleep", "120"])
            .stderr(Stdio::piped())
            .spawn()
            .expect("flock as nobody");
        std::thread::sleep(Duration::from_millis(500));
        let (_held, holder) = match nobody.try_wait().expect("try_wait") {
            Some(status) => {
                let mut why = String::new();
                use std::io::Read;
                let _ = nobody.stderr.take().map(|mut e| e.read_to_string(&mut why));
                assert!(!status.success());
                eprintln!("nobody cannot take the lock: {}", why.trim());
                (Some(hold(&lock)), std::process::id())
            }
            // It holds it (today's main: the file is 0644 in a 0755
            // directory).
            None => (None, nobody.id()),
        };

        let child = spawn_piped(&mut vmtrace(&["attach", "--duration", "1"]));
        let (out, took) = wait_at_most(child, Duration::from_secs(50), "held lock");
        let err = stderr(&out);
        let _ = nobody.kill();
        let _ = nobody.wait();
        assert_eq!(out.status.code(), Some(125), "{err}");
        assert!(
            (25.0..45.0).contains(&took.as_secs_f64()),
            "gave up after {took:?}: {err}"
        );
        let errors = error_lines(&err);
        assert_eq!(errors.len(), 1, "not one line: {err}");
        assert!(errors[0].contains("sysctl.lock"), "{err}");
        assert!(errors[0].contains(&format!("pid {holder}")), "{err}");
        eprintln!("gave up after {:.1} s: {}", took.as_secs_f64(), errors[0]);

        // SIGINT while waiting (the lock is still held by us when nobody
        // could not take it; otherwise take it now).
        let _again = if _held.is_none() {
            Some(hold(&lock))
        } else {
            None
        };
        let child = spawn_piped(&mut vmtrace(&[
            "run",
            "--progress",
            "none",
            "--no-probes",
            "--mem",
            "64M",
            "--",
            "true",
        ]));
        let pid = child.id();
        std::thread::sleep(Duration::from_secs(2));
        let t = Instant::now();
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid as i32, libc::SIGINT) };
        let (out, _) = wait_at_most(child, Duration::from_secs(10), "SIGINT");
        let err = stderr(&out);
        let took = t.elapsed();
        assert_eq!(out.status.code(), Some(130), "{err}");
        assert!(took < Duration::from_secs(2), "SIGINT took {took:?}: {err}");
        assert_eq!(error_lines(&err).len(), 1, "{err}");
        assert!(left_by(pid).is_empty(), "left {:?}", left_by(pid));
        eprintln!(
            "SIGINT ended the wait in {} ms: {}",
            took.as_millis(),
            err.trim()
        );
    });
}

/// Writes zswap's old value back when dropped (a test that failed
/// half-way, or today's main, which never restores it).
struct ZswapBack(String);

impl Drop for ZswapBack {
    fn drop(&mut self) {
        if std::fs::read_to_string(ZSWAP).unwrap_or_default().trim() != self.0 {
            let _ = std::fs::write(ZSWAP, &self.0);
        }
    }
}

/// `run --zswap` then kill -9: the next vmtrace puts zswap back and
/// removes the dead one's box and state file.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn zswap_is_restored_after_kill_9() {
    if !Path::new(ZSWAP).is_file() {
        eprintln!("skipped: no zswap");
        return;
    }
    isolated(|| {
        let before = std::fs::read_to_string(ZSWAP)
            .expect("zswap")
            .trim()
            .to_string();
        let _back = ZswapBack(before.clone());
        let (flag, during) = if before == "Y" {
            ("off", "N")
        } else {
            ("on", "Y")
        };
        let mut child = spawn_piped(&mut vmtrace(&[
            "run",
            "--progress",
            "none",
            "--no-probes",
            "--mem",
            "64M",
            "--zswap",
            flag,
            "--",
            "sleep",
            "60",
        ]));
        let pid = child.id();
        let t = Instant::now();
        while !Path::new(&format!("/sys/fs/cgroup/memory/vmtrace-{pid}")).exists()
            && !Path::new(&format!("/sys/fs/cgroup/vmtrace-{pid}")).exists()
        {
            assert!(t.elapsed() < Duration::from_secs(20), "no box");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            std::fs::read_to_string(ZSWAP).expect("zswap").trim(),
            during
        );
        child.kill().expect("kill -9");
        let _ = child.wait();
        let out = quick_run();
        let err = stderr(&out);
        let after = std::fs::read_to_string(ZSWAP)
            .expect("zswap")
            .trim()
            .to_string();
        assert_eq!(after, before, "zswap not restored: {err}");
        assert!(out.status.success(), "{err}");
        assert!(err.contains(&format!("restored to {before}")), "{err}");
        let left = left_by(pid);
        assert!(left.is_empty(), "left {left:?}: {err}");
        eprintln!(
            "zswap {before} -> {during} -> kill -9 -> {after}: {}",
            err.trim()
        );
    });
}

/// A live vmtrace copied under another name is alive for the next
/// vmtrace's sweep: its box stays, its command runs to the end.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn a_renamed_live_vmtrace_is_not_cleaned_up() {
    isolated(|| {
        let dir = fresh_scratch("untrusted-renamed");
        let renamed = dir.join("mytracer");
        std::fs::copy(VMTRACE, &renamed).expect("copy vmtrace");
        let first = Command::new(&renamed)
            .args([
                "run",
                "--progress",
                "none",
                "--no-probes",
                "--mem",
                "64M",
                "-o",
                "first.vmtrace.json",
                "--",
                "sleep",
                "4",
            ])
            .current_dir(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start mytracer");
        let pid = first.id();
        let cgroup = ["/sys/fs/cgroup/memory", "/sys/fs/cgroup"]
            .map(|r| PathBuf::from(format!("{r}/vmtrace-{pid}")));
        let t = Instant::now();
        while !cgroup.iter().any(|c| c.exists()) {
            assert!(t.elapsed() < Duration::from_secs(20), "no box");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(300));
        let out = vmtrace(&[
            "run",
            "--progress",
            "none",
            "--no-probes",
            "--mem",
            "64M",
            "--",
            "true",
        ])
        .output()
        .expect("second vmtrace");
        let err = stderr(&out);
        assert!(out.status.success(), "{err}");
        assert!(
            cgroup.iter().any(|c| c.exists()),
            "the live box was removed: {err}"
        );
        let (out, _) = wait_at_most(first, Duration::from_secs(30), "mytracer");
        let first_err = stderr(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "mytracer's command: {first_err}\nsecond: {err}"
        );
        assert!(left_by(pid).is_empty(), "left {:?}", left_by(pid));
        eprintln!("mytracer (pid {pid}) kept its box through a second vmtrace's sweep");
    });
}
