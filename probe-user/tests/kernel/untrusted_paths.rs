//! Paths another local user can plant things at (issue 30, findings 3
//! and 10): `nobody` (uid 65534) plants symlinks at a recording's output
//! path and at every temporary name vmtrace could predict, at `export -o`
//! and `compare --svg` paths, and files with swapfile-like names; a
//! root-only 0600 file must stay as it was (content, owner, mode) and
//! nobody's files must be neither used nor deleted. Under SUDO_UID the
//! outputs are the invoker's and the writable-directory check is the
//! invoker's.

use std::{
    ffi::CString,
    os::unix::{ffi::OsStrExt, fs::MetadataExt, fs::PermissionsExt, process::CommandExt},
    path::{Path, PathBuf},
    process::{Command, Output},
};

use crate::common::vmtrace;

const NOBODY: u32 = 65534;
const SECRET: &str = "root's secret, not for nobody\n";

/// A root-owned 0755 directory of the test's own under /var/tmp (a disk:
/// swapfiles need one), made with mkdir, which never follows a link;
/// removed at the end.
struct Arena(PathBuf);

impl Arena {
    fn new(name: &str) -> Arena {
        let dir = PathBuf::from(format!(
            "/var/tmp/untrusted-paths-{name}-{}",
            std::process::id()
        ));
        if std::fs::symlink_metadata(&dir).is_ok() {
            std::fs::remove_dir_all(&dir).expect("remove an earlier arena");
        }
        std::fs::create_dir(&dir).expect("arena");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        Arena(dir)
    }

    /// A sticky world-writable directory inside, like /tmp.
    fn shared(&self, name: &str) -> PathBuf {
        let d = self.0.join(name);
        std::fs::create_dir(&d).expect("mkdir");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
        d
    }

    /// A root-only 0600 file nobody must not be able to change or get.
    fn secret(&self) -> PathBuf {
        let s = self.0.join("secret");
        std::fs::write(&s, SECRET).expect("secret");
        std::fs::set_permissions(&s, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        s
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn assert_untouched(secret: &Path, what: &str) {
    let m = std::fs::symlink_metadata(secret).expect("the secret file is still there");
    let text = std::fs::read_to_string(secret).expect("read the secret");
    assert!(
        text == SECRET && m.uid() == 0 && m.gid() == 0 && m.mode() & 0o7777 == 0o600,
        "{what}: root's 0600 file changed: uid {} gid {} mode {:o}, {:?}",
        m.uid(),
        m.gid(),
        m.mode() & 0o7777,
        text.chars().take(60).collect::<String>()
    );
}

fn c(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("no NUL")
}

/// As nobody, in one child process (so that it takes one pid): each
/// `links` entry (target, link) made a symlink, each `files` path
/// created as a regular file holding "nobody's\n", each `dirs` made.
fn plant_as_nobody(links: &[(PathBuf, PathBuf)], files: &[PathBuf], dirs: &[PathBuf]) {
    let links: Vec<(CString, CString)> = links.iter().map(|(t, l)| (c(t), c(l))).collect();
    let files: Vec<CString> = files.iter().map(|f| c(f)).collect();
    let dirs: Vec<CString> = dirs.iter().map(|d| c(d)).collect();
    let mut cmd = Command::new("true");
    // SAFETY: only async-signal-safe system calls on data prepared
    // before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(NOBODY) != 0
                || libc::setuid(NOBODY) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            for (t, l) in &links {
                if libc::symlink(t.as_ptr(), l.as_ptr()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for f in &files {
                let fd = libc::open(
                    f.as_ptr(),
                    libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
                    0o644,
                );
                if fd < 0 || libc::write(fd, b"nobody's\n".as_ptr().cast(), 9) != 9 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(fd);
            }
            for d in &dirs {
                if libc::mkdir(d.as_ptr(), 0o755) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let st = cmd.status().expect("plant as nobody");
    assert!(st.success(), "planting as nobody failed");
}

/// The pids the next processes will most likely get.
fn next_pids(n: u32) -> std::ops::RangeInclusive<u32> {
    let last: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .expect("ns_last_pid")
        .trim()
        .parse()
        .expect("a pid");
    last + 1..=last + n
}

/// vmtrace as root; `sudo` adds SUDO_UID/SUDO_GID/SUDO_USER of nobody.
fn vm(args: &[&str], sudo: bool) -> Command {
    let mut cmd = vmtrace(args);
    if sudo {
        cmd.env("SUDO_UID", "65534")
            .env("SUDO_GID", "65534")
            .env("SUDO_USER", "nobody");
    }
    cmd
}

/// `vmtrace run --progress none [EXTRA...] -o OUT -- true` (as nobody's
/// sudo when `sudo`).
fn run_true(extra: &[&str], out: &Path, sudo: bool) -> Command {
    let out = out.to_str().expect("a UTF-8 path");
    let mut args = vec!["run", "--progress", "none"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-o", out, "--", "true"]);
    vm(&args, sudo)
}

/// Runs `cmd`, asserting that its pid was one of `planted`.
fn run_with_pid_in(mut cmd: Command, planted: &std::ops::RangeInclusive<u32>) -> Output {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start vmtrace");
    assert!(
        planted.contains(&child.id()),
        "vmtrace got pid {} outside the planted {planted:?}: another process took pids; rerun",
        child.id()
    );
    child.wait_with_output().expect("wait")
}

/// A refusal is one line of vmtrace's, not a panic.
fn one_line_refusal(out: &Output, what: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "{what}: expected a refusal, got success: {err}"
    );
    let last = err.lines().last().unwrap_or("").to_string();
    assert!(
        last.starts_with("vmtrace: error: ") && !err.contains("panicked"),
        "{what}: not a one-line error: {err}"
    );
    last
}

fn ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn owner(p: &Path) -> u32 {
    std::fs::symlink_metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .uid()
}

fn tmp_links(
    d: &Path,
    file: &str,
    secret: &Path,
    pids: &std::ops::RangeInclusive<u32>,
) -> Vec<(PathBuf, PathBuf)> {
    pids.clone()
        .map(|p| (secret.to_path_buf(), d.join(format!(".{file}.{p}.tmp"))))
        .collect()
}

#[test]
#[ignore = "needs root: cargo xtask test"]
fn links_planted_at_a_recordings_paths_leave_root_files_alone() {
    let a = Arena::new("rec");
    let d = a.shared("shared");
    let secret = a.secret();
    // Every temporary name vmtrace could predict (.NAME.PID.tmp) a link
    // to root's file: the recording is written all the same, beside them.
    let pids = next_pids(300);
    plant_as_nobody(&tmp_links(&d, "two.json", &secret, &pids), &[], &[]);
    // And what looks like a dead writer's temporary (which root's run
    // sweeps when it is root's own): nobody's file and nobody's link.
    let dead_file = d.join(".two.json.4294967294-0123456789abcdef.tmp");
    let dead_link = d.join(".two.json.4294967293-0123456789abcdef.tmp");
    plant_as_nobody(
        &[(secret.clone(), dead_link.clone())],
        std::slice::from_ref(&dead_file),
        &[],
    );
    let rec = d.join("two.json");
    let out = run_with_pid_in(run_true(&[], &rec, false), &pids);
    assert_untouched(&secret, "links at the temporary names");
    ok(&out, "links at the temporary names");
    assert_eq!(owner(&dead_file), NOBODY, "nobody's temporary-like file");
    assert_eq!(owner(&dead_link), NOBODY, "nobody's temporary-like link");
    let m = std::fs::symlink_metadata(&rec).expect("recording");
    assert!(m.is_file() && m.uid() == 0, "{m:?}");
    assert!(crate::common::recording(&rec)["runs"][0]["report"].is_object());
    // The final path itself a link to root's file: refused in one line.
    plant_as_nobody(&[(secret.clone(), d.join("out.json"))], &[], &[]);
    let out = run_true(&[], &d.join("out.json"), false)
        .output()
        .expect("run");
    assert_untouched(&secret, "-o at a planted link");
    let line = one_line_refusal(&out, "-o at a planted link");
    println!("refused: {line}");
    assert!(line.contains("symbolic link"), "{line}");
}

#[test]
#[ignore = "needs root: cargo xtask test"]
fn under_sudo_the_recording_is_the_invokers_and_no_root_file_changes() {
    let a = Arena::new("sudo");
    let d = a.shared("shared");
    let secret = a.secret();
    let pids = next_pids(300);
    plant_as_nobody(&tmp_links(&d, "rec.json", &secret, &pids), &[], &[]);
    let rec = d.join("rec.json");
    let out = run_with_pid_in(run_true(&[], &rec, true), &pids);
    assert_untouched(&secret, "under SUDO_UID=65534");
    ok(&out, "under SUDO_UID=65534");
    let m = std::fs::symlink_metadata(&rec).expect("recording");
    println!(
        "recording: uid {} gid {} mode {:o}",
        m.uid(),
        m.gid(),
        m.mode() & 0o7777
    );
    assert!(
        m.is_file() && m.uid() == NOBODY && m.gid() == NOBODY,
        "{m:?}"
    );
}

fn corpus_recording() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus/recording/memhog-2runs.vmtrace.json")
        .display()
        .to_string()
}

#[test]
#[ignore = "needs root: cargo xtask test"]
fn export_and_compare_svg_do_not_write_through_planted_links() {
    let a = Arena::new("export");
    let d = a.shared("shared");
    let secret = a.secret();
    let rec = corpus_recording();
    for sudo in [false, true] {
        let (csv, svg) = (
            d.join(format!("x-{sudo}.csv")),
            d.join(format!("p-{sudo}.svg")),
        );
        plant_as_nobody(
            &[(secret.clone(), csv.clone()), (secret.clone(), svg.clone())],
            &[],
            &[],
        );
        let out = vm(
            &[
                "export",
                &rec,
                "--format",
                "csv",
                "-o",
                csv.to_str().unwrap(),
            ],
            sudo,
        )
        .output()
        .expect("export");
        assert_untouched(&secret, &format!("export -o (sudo {sudo})"));
        let line = one_line_refusal(&out, "export -o at a link");
        assert!(line.contains("symbolic link"), "{line}");
        let out = vm(
            &[
                "compare",
                &rec,
                "--vs",
                &rec,
                "--svg",
                svg.to_str().unwrap(),
            ],
            sudo,
        )
        .output()
        .expect("compare");
        assert_untouched(&secret, &format!("compare --svg (sudo {sudo})"));
        let line = one_line_refusal(&out, "compare --svg at a link");
        println!("sudo {sudo}: {line}");
        assert!(line.contains("symbolic link"), "{line}");
        // Where nothing is planted, both write; as the invoker under sudo.
        let (csv, svg) = (
            d.join(format!("y-{sudo}.csv")),
            d.join(format!("q-{sudo}.svg")),
        );
        ok(
            &vm(
                &[
                    "export",
                    &rec,
                    "--format",
                    "csv",
                    "-o",
                    csv.to_str().unwrap(),
                ],
                sudo,
            )
            .output()
            .expect("export"),
            "export",
        );
        ok(
            &vm(
                &[
                    "compare",
                    &rec,
                    "--vs",
                    &rec,
                    "--svg",
                    svg.to_str().unwrap(),
                ],
                sudo,
            )
            .output()
            .expect("compare"),
            "compare",
        );
        let want = if sudo { NOBODY } else { 0 };
        assert_eq!((owner(&csv), owner(&svg)), (want, want), "sudo {sudo}");
    }
}

#[test]
#[ignore = "needs root: cargo xtask test"]
fn the_writable_directory_check_tests_the_invokers_rights() {
    let a = Arena::new("access");
    let root_only = a.0.join("root-only");
    std::fs::create_dir(&root_only).expect("mkdir");
    let rec = root_only.join("rec.json");
    let out = run_true(&[], &rec, true).output().expect("run");
    let line = one_line_refusal(&out, "run -o in a directory nobody cannot write");
    println!("run: {line}");
    assert!(
        line.contains("not writable") && line.contains("nobody"),
        "{line}"
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("exit:"),
        "the run started"
    );
    let csv = root_only.join("x.csv");
    let out = vm(
        &[
            "export",
            &corpus_recording(),
            "--format",
            "csv",
            "-o",
            csv.to_str().unwrap(),
        ],
        true,
    )
    .output()
    .expect("export");
    let line = one_line_refusal(&out, "export -o in a directory nobody cannot write");
    println!("export: {line}");
    assert!(line.contains("not writable"), "{line}");
    assert_eq!(
        std::fs::read_dir(&root_only).expect("ls").count(),
        0,
        "something was written"
    );
}

#[test]
#[ignore = "needs root: cargo xtask test"]
fn swapfile_names_planted_by_nobody_are_neither_used_nor_deleted() {
    let a = Arena::new("swap");
    let d = a.shared("swapdir");
    let pids = next_pids(300);
    let mut planted: Vec<PathBuf> = pids
        .clone()
        .map(|p| d.join(format!("vmtrace-{p}.swap")))
        .collect();
    // Names of a dead vmtrace's swapfile (pid above pid_max), old and new.
    for name in [
        "vmtrace-4194300.swap",
        "vmtrace-4194300-0123456789abcdef.swap",
    ] {
        planted.push(d.join(name));
    }
    plant_as_nobody(&[], &planted, &[]);
    let rec = a.0.join("rec.json");
    let out = run_with_pid_in(
        run_true(
            &[
                "--swap",
                "16M",
                "--swap-dir",
                d.to_str().expect("a UTF-8 path"),
            ],
            &rec,
            false,
        ),
        &pids,
    );
    ok(&out, "--swap-dir with planted names");
    for p in &planted {
        let text = std::fs::read_to_string(p)
            .unwrap_or_else(|e| panic!("{} was deleted: {e}", p.display()));
        assert!(
            text == "nobody's\n" && owner(p) == NOBODY,
            "{} was used",
            p.display()
        );
    }
    let used = crate::common::recording(&rec)["runs"][0]["report"]["membox"]["swapfile"]
        .as_str()
        .expect("a swapfile")
        .to_string();
    println!("swapfile used: {used}");
    assert!(
        used.starts_with(d.join("vmtrace-swap/").to_str().unwrap()),
        "{used}"
    );
    let left: Vec<_> = std::fs::read_dir(d.join("vmtrace-swap"))
        .expect("ls")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
#[ignore = "needs root: cargo xtask test"]
fn a_swap_directory_vmtrace_did_not_make_is_refused() {
    let a = Arena::new("swapdir");
    let theirs = a.shared("theirs");
    let linked = a.shared("linked");
    let target = a.0.join("root-dir");
    std::fs::create_dir(&target).expect("mkdir");
    plant_as_nobody(
        &[(target.clone(), linked.join("vmtrace-swap"))],
        &[],
        &[theirs.join("vmtrace-swap")],
    );
    for dir in [&theirs, &linked] {
        let out = run_true(
            &[
                "--swap",
                "16M",
                "--swap-dir",
                dir.to_str().expect("a UTF-8 path"),
            ],
            &a.0.join("r.json"),
            false,
        )
        .output()
        .expect("run");
        let line = one_line_refusal(&out, "a planted vmtrace-swap");
        println!("{}: {line}", dir.display());
        assert!(line.contains("vmtrace-swap"), "{line}");
    }
    assert_eq!(
        std::fs::read_dir(theirs.join("vmtrace-swap"))
            .expect("ls")
            .count(),
        0
    );
    assert_eq!(std::fs::read_dir(&target).expect("ls").count(), 0);
}
