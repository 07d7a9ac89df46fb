//! Recordings made to hurt the reader: `vmtrace report` on a file another
//! user handed over must fail in one line, at once, in little memory, or
//! read a big honest recording in memory that follows what it holds. Each
//! test runs the real binary as a child and reads its peak RSS from
//! wait4's rusage (ru_maxrss). VMTRACE_UNDER_TEST names another binary
//! (an older vmtrace, to measure it the same way).

use std::{
    io::Read as _,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::common::{VMTRACE, fresh_scratch};

/// The 48-character histogram payload of issue 30: a deflated V2 header
/// whose payload length is 4 GiB - 1, with no payload after it.
pub const FOUR_GIB_PAYLOAD: &str = "HISTFAAAABt42pNpmSz8HwgYIIAJSjM6QBn2HyA0AMd2BrU=";

/// What a child did: exit code, stderr, peak RSS in bytes, wall time.
struct Outcome {
    code: Option<i32>,
    stderr: String,
    peak_rss: u64,
    /// The child's own high-water mark (VmHWM of its mm after exec),
    /// read every 20 ms while it ran: unlike `peak_rss` (wait4's
    /// ru_maxrss, which a spawned child starts from its parent's peak),
    /// it holds nothing of this test process.
    own_peak: u64,
    wall: Duration,
}

/// VmHWM of `pid` in bytes, once it has exec'd (before, a spawned child
/// still runs in this process's memory); 0 before that or once gone.
fn vm_hwm(pid: i32) -> u64 {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
    if exe.is_none() || exe == std::env::current_exe().ok() {
        return 0;
    }
    hwm_of(&format!("/proc/{pid}/status"))
}

/// VmHWM of a /proc status file, in bytes (0 when unreadable).
fn hwm_of(status: &str) -> u64 {
    std::fs::read_to_string(status)
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn binary() -> PathBuf {
    std::env::var_os("VMTRACE_UNDER_TEST").map_or_else(|| PathBuf::from(VMTRACE), PathBuf::from)
}

/// Runs `vmtrace report FILE` (stdout discarded), killed after `limit`;
/// its peak RSS from wait4.
fn report(file: &Path, limit: Duration) -> Outcome {
    vmtrace_on(&["report".as_ref(), file.as_os_str()], limit)
}

/// Runs `vmtrace ARGS` (stdout discarded), killed after `limit`; its
/// peak RSS from wait4.
fn vmtrace_on(args: &[&std::ffi::OsStr], limit: Duration) -> Outcome {
    // The heap earlier tests freed goes back to the system first: a
    // child's peak RSS starts from what this process holds at the fork.
    // SAFETY: malloc_trim only releases free memory of glibc's heap.
    unsafe { libc::malloc_trim(0) };
    let start = Instant::now();
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by wait4 below, for its rusage"
    )]
    let mut child = Command::new(binary())
        .args(args)
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vmtrace");
    let pid = child.id() as i32;
    let mut stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut status = 0;
    let mut own_peak = 0;
    // SAFETY: zeroed rusage is a valid out-parameter.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        own_peak = own_peak.max(vm_hwm(pid));
        // SAFETY: our own child, valid out-pointers.
        let waited = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if waited == pid {
            break;
        }
        assert_eq!(waited, 0, "wait4 failed");
        if start.elapsed() > limit {
            // SAFETY: our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            // SAFETY: as above.
            unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
            panic!(
                "{} {args:?} still ran after {limit:?} (killed)",
                binary().display(),
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let wall = start.elapsed();
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Outcome {
        code,
        stderr: reader.join().unwrap_or_default(),
        peak_rss: ru.ru_maxrss as u64 * 1024,
        own_peak,
        wall,
    }
}

fn corpus_recording() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus/recording/memhog-2runs.vmtrace.json");
    serde_json::from_slice(&std::fs::read(path).expect("corpus")).expect("corpus JSON")
}

const MIB: u64 = 1 << 20;

/// This process's peak RSS (VmHWM of /proc/self/status), in bytes.
fn self_high_water() -> u64 {
    hwm_of("/proc/self/status")
}

/// A refusal: exit 1, one line naming the file and `want`, in little
/// memory and at once.
fn assert_refused(o: &Outcome, file: &Path, want: &str) {
    eprintln!(
        "{}: exit {:?}, {:.2} s, peak RSS {:.1} MiB: {}",
        file.display(),
        o.code,
        o.wall.as_secs_f64(),
        o.peak_rss as f64 / MIB as f64,
        o.stderr.trim_end()
    );
    assert_eq!(o.code, Some(125), "{}", o.stderr);
    assert_eq!(o.stderr.lines().count(), 1, "not one line: {}", o.stderr);
    assert!(
        o.stderr.contains(&*file.to_string_lossy()) && o.stderr.contains(want),
        "{:?} lacks the file or {want:?}",
        o.stderr
    );
    // A child's ru_maxrss starts from its parent's high-water mark
    // (exec folds the old mm's into the task's maxrss, and a spawned
    // child's old mm is this test process's, or a copy of it): seen
    // failing after earlier tests had grown this process past 50 MiB,
    // while the refusal itself took 6 MiB. So the bound is over what
    // this process has had.
    let inherited = self_high_water();
    assert!(
        o.peak_rss < (50 * MIB).max(inherited + 16 * MIB),
        "peak RSS {} MiB refusing {} (this process's own peak {} MiB)",
        o.peak_rss / MIB,
        file.display(),
        inherited / MIB
    );
    assert!(o.wall < Duration::from_secs(5), "took {:?}", o.wall);
}

#[test]
#[ignore = "runs vmtrace on hostile recordings; run with `cargo xtask test`"]
fn a_48_character_histogram_payload_is_refused_in_little_memory() {
    assert_eq!(FOUR_GIB_PAYLOAD.len(), 48);
    let dir = fresh_scratch("hostile-hdr");
    let mut rec = corpus_recording();
    rec["runs"][0]["report"]["memcg_reclaim"]["stalls"]["hdr"] = FOUR_GIB_PAYLOAD.into();
    let file = dir.join("four-gib.vmtrace.json");
    std::fs::write(&file, serde_json::to_vec(&rec).expect("ser")).expect("write");
    let o = report(&file, Duration::from_secs(60));
    assert_refused(&o, &file, "declares 4294967295 bytes of counts, holds 0");
    assert!(o.stderr.contains("memcg_reclaim"), "{}", o.stderr);
}

#[test]
#[ignore = "runs vmtrace on hostile recordings; run with `cargo xtask test`"]
fn a_fifo_a_directory_and_a_device_are_refused_at_once() {
    let dir = fresh_scratch("hostile-fifo");
    let fifo = dir.join("fifo.vmtrace.json");
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("path");
    // SAFETY: a valid C string; a FIFO nobody writes to.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
    assert_refused(&report(&fifo, Duration::from_secs(10)), &fifo, "a FIFO");
    assert_refused(&report(&dir, Duration::from_secs(10)), &dir, "a directory");
    let zero = Path::new("/dev/zero");
    assert_refused(&report(zero, Duration::from_secs(10)), zero, "a device");
}

#[test]
#[ignore = "runs vmtrace on hostile recordings; run with `cargo xtask test`"]
fn a_sparse_file_over_the_cap_is_refused_without_reading_it() {
    let dir = fresh_scratch("hostile-sparse");
    let file = dir.join("sparse.vmtrace.json");
    let f = std::fs::File::create(&file).expect("create");
    f.set_len(1 << 30).expect("1 GiB, sparse");
    drop(f);
    let o = report(&file, Duration::from_secs(60));
    assert_refused(&o, &file, "1073741824 bytes, more than the 256 MiB");
    // Just under the cap, and not JSON: read only as far as the first
    // byte that is not (a NUL), not held whole.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .expect("open");
    f.set_len((256 << 20) - 1).expect("shrink");
    drop(f);
    let o = report(&file, Duration::from_secs(60));
    assert_refused(&o, &file, "not JSON");
}

/// Writes the corpus recording grown past `bytes` to `path` by
/// repeating its time line (every sample, histogram payloads included;
/// without them when `hists` is false: numbers only, where a
/// `serde_json::Value` costs most per byte). Streamed, a sample at a
/// time: the test process stays small, and a child's ru_maxrss starts
/// from its parent's RSS at fork.
fn write_big_recording(path: &Path, bytes: u64, hists: bool) -> u64 {
    use std::io::Write as _;
    const MARK: &str = "\"@@samples@@\"";
    let mut rec = corpus_recording();
    let mut timeline = rec["runs"][0]["report"]["timeline"]
        .as_array()
        .cloned()
        .expect("a time line");
    if !hists {
        for s in &mut timeline {
            s.as_object_mut().map(|o| o.remove("hists"));
        }
    }
    rec["runs"][0]["report"]["timeline"] = serde_json::json!(["@@samples@@"]);
    let text = serde_json::to_string(&rec).expect("ser");
    let (head, tail) = text.split_once(MARK).expect("the mark");
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    out.write_all(head.as_bytes()).expect("write");
    let mut written = head.len() as u64;
    let mut k = 0u64;
    while written < bytes {
        for s in &timeline {
            let mut s = s.clone();
            let t = s["t_s"].as_f64().unwrap_or(0.0);
            s["t_s"] = (t + k as f64 * 60.0).into();
            let one = serde_json::to_vec(&s).expect("ser");
            if written > head.len() as u64 {
                out.write_all(b",").expect("write");
                written += 1;
            }
            out.write_all(&one).expect("write");
            written += one.len() as u64;
        }
        k += 1;
    }
    out.write_all(tail.as_bytes()).expect("write");
    out.flush().expect("flush");
    written + tail.len() as u64
}

#[test]
#[ignore = "runs vmtrace on hostile recordings; run with `cargo xtask test`"]
fn a_110_mb_recording_reports_in_a_fraction_of_its_old_memory() {
    let dir = fresh_scratch("hostile-big");
    // Peak RSS through serde_json::Value (vmtrace before issue 30), on
    // this machine: 606 MiB with histogram payloads in every sample,
    // 1086 MiB without (numbers only); the issue's own file, 1.66 GB.
    // Typed and streamed: 168 and 178 MiB.
    for (hists, name, bound) in [(true, "big", 250), (false, "big-numbers", 250)] {
        let file = dir.join(format!("{name}.vmtrace.json"));
        let size = write_big_recording(&file, 110_000_000, hists);
        let o = report(&file, Duration::from_secs(300));
        eprintln!(
            "{} ({:.0} MB): exit {:?}, {:.1} s, peak RSS {:.0} MiB",
            file.display(),
            size as f64 / 1e6,
            o.code,
            o.wall.as_secs_f64(),
            o.peak_rss as f64 / MIB as f64
        );
        let _ = std::fs::remove_file(&file);
        assert!(size > 100_000_000, "{size} bytes");
        assert_eq!(o.code, Some(0), "{}", o.stderr);
        assert!(
            o.peak_rss < bound * MIB,
            "peak RSS {} MiB for {size} bytes",
            o.peak_rss / MIB
        );
    }
}

/// Issue 46, finding 4: `compare F F --vs F F` held every file in
/// memory at once (1.5 GB for four of the files). Compare needs
/// each run's report, not its time line (the bulk of a long recording):
/// files are read one at a time and each time line dropped before the
/// next is read, so four 110 MB files cost about what `report` of one
/// does, not four times it.
#[test]
#[ignore = "runs vmtrace on hostile recordings; run with `cargo xtask test`"]
fn compare_of_four_big_recordings_holds_about_one() {
    let dir = fresh_scratch("hostile-compare");
    let file = dir.join("big.vmtrace.json");
    let size = write_big_recording(&file, 110_000_000, true);
    let one = report(&file, Duration::from_secs(300));
    assert_eq!(one.code, Some(0), "{}", one.stderr);
    let f = file.as_os_str();
    let four = vmtrace_on(
        &["compare".as_ref(), f, f, "--vs".as_ref(), f, f],
        Duration::from_secs(600),
    );
    let _ = std::fs::remove_file(&file);
    eprintln!(
        "{:.0} MB recording: report {:.1} s, peak RSS {} MiB; compare of four {:.1} s, \
         peak RSS {} MiB",
        size as f64 / 1e6,
        one.wall.as_secs_f64(),
        one.peak_rss / MIB,
        four.wall.as_secs_f64(),
        four.peak_rss / MIB
    );
    assert!(
        matches!(four.code, Some(0 | 1)),
        "compare: exit {:?}: {}",
        four.code,
        four.stderr
    );
    assert!(
        four.peak_rss < one.peak_rss * 3 / 2 + 32 * MIB,
        "compare of four: {} MiB, report of one {} MiB",
        four.peak_rss / MIB,
        one.peak_rss / MIB
    );
}

/// Issue 46, finding 4: 48 MB of one-letter arguments (`"a",` x 12M)
/// took 785 MB to read. A command line past what Linux lets one have
/// (MAX_ARG_STRLEN, ARG_MAX) is refused while it is read: one line, in
/// at most 4x the file.
#[test]
#[ignore = "runs vmtrace on hostile recordings; run with `cargo xtask test`"]
fn twelve_million_arguments_are_refused_within_4x_the_file() {
    use std::io::Write as _;
    let dir = fresh_scratch("hostile-args");
    let mut rec = corpus_recording();
    rec["workload"]["arguments"] = serde_json::json!(["ARGUMENTS-HERE"]);
    let text = serde_json::to_string(&rec).expect("ser");
    let (before, after) = text.split_once("\"ARGUMENTS-HERE\"").expect("placeholder");
    let file = dir.join("arguments.vmtrace.json");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&file).expect("create"));
    f.write_all(before.as_bytes()).expect("write");
    let chunk = "\"a\",".repeat(1 << 18);
    for _ in 0..48 {
        f.write_all(chunk.as_bytes()).expect("write");
    }
    f.write_all(b"\"a\"").expect("write");
    f.write_all(after.as_bytes()).expect("write");
    drop(f);
    let size = std::fs::metadata(&file).expect("stat").len();
    assert!(size > 48 * MIB, "{size}");
    let o = report(&file, Duration::from_secs(60));
    eprintln!(
        "{}: {} MiB, exit {:?}, {:.2} s, peak RSS {} MiB: {}",
        file.display(),
        size / MIB,
        o.code,
        o.wall.as_secs_f64(),
        o.peak_rss / MIB,
        o.stderr.trim_end()
    );
    assert_eq!(o.code, Some(125), "{}", o.stderr);
    assert_eq!(o.stderr.lines().count(), 1, "not one line: {}", o.stderr);
    assert!(
        o.stderr.contains("more than 262144 arguments"),
        "{}",
        o.stderr
    );
    let inherited = self_high_water();
    assert!(
        o.peak_rss <= 4 * size + inherited,
        "peak RSS {} MiB for a {} MiB file",
        o.peak_rss / MIB,
        size / MIB
    );
}

/// Issue 46, finding 4: `export -f csv` repeats each run's label on
/// every row, and held all of it in memory (a 2 MB label: 772 MB of
/// output, 1.5 GB RSS). Labels are cut to 4 KiB when read, and the CSV
/// is streamed to its file: 300 runs with 4000-byte labels make ~270
/// MiB of CSV, 20x the recording, in a peak RSS of a fraction of it (a
/// child's peak starts from this test process's own, printed).
#[test]
#[ignore = "runs vmtrace on hostile recordings; run with `cargo xtask test`"]
fn a_csv_export_many_times_its_recording_is_streamed() {
    let dir = fresh_scratch("hostile-csv");
    use std::io::Write as _;
    // Written a run at a time: this process stays small (a child's peak
    // RSS starts from what its parent holds when it forks).
    let mut rec = corpus_recording();
    let mut run = rec["runs"][0].clone();
    run["label"] = "L".repeat(4000).into();
    run["report"]["timeline"] = serde_json::json!([]);
    let one = serde_json::to_string(&run).expect("ser");
    rec["runs"] = serde_json::json!(["@@runs@@"]);
    let text = serde_json::to_string(&rec).expect("ser");
    let (head, tail) = text.split_once("\"@@runs@@\"").expect("the mark");
    let file = dir.join("labels.vmtrace.json");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&file).expect("create"));
    f.write_all(head.as_bytes()).expect("write");
    for i in 0..300 {
        if i > 0 {
            f.write_all(b",").expect("write");
        }
        f.write_all(one.as_bytes()).expect("write");
    }
    f.write_all(tail.as_bytes()).expect("write");
    drop(f);
    drop((rec, run, one, text));
    let size = std::fs::metadata(&file).expect("stat").len();
    let out = dir.join("labels.csv");
    // This process holds 128 MiB while the export runs, as the suite's
    // test process may: the export's own peak must not include it.
    let ballast = vec![1u8; 128 << 20];
    let o = vmtrace_on(
        &[
            "export".as_ref(),
            "-f".as_ref(),
            "csv".as_ref(),
            "-o".as_ref(),
            out.as_os_str(),
            file.as_os_str(),
        ],
        Duration::from_secs(120),
    );
    assert_eq!(
        ballast.iter().map(|&b| u64::from(b)).sum::<u64>(),
        128 << 20
    );
    drop(ballast);
    let written = std::fs::metadata(&out).map_or(0, |m| m.len());
    let _ = std::fs::remove_file(&out);
    eprintln!(
        "{} bytes of recording: {} MiB of CSV in {:.1} s, its own peak RSS {} MiB \
         (wait4's {} MiB starts from this process's)",
        size,
        written / MIB,
        o.wall.as_secs_f64(),
        o.own_peak / MIB,
        o.peak_rss / MIB,
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(written > 15 * size, "{written} bytes of CSV for {size}");
    assert!(o.own_peak > 0, "VmHWM never read");
    assert!(
        o.own_peak < written / 4,
        "peak RSS {} MiB for {} MiB of CSV",
        o.own_peak / MIB,
        written / MIB
    );
}
