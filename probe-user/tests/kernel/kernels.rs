//! `vmtrace kernels`: other kernels booted in QEMU guests measure like the
//! host, and a kernel that does not boot is reported while the rest run.

use serde_json::Value;

use crate::common::{fresh_scratch, guard, memhog, recording, vmtrace, within};

/// `vmtrace kernels`: Debian's 6.1 and 6.12 kernels boot in QEMU guests
/// (downloaded once, cached), vmtrace runs a memory hog under pressure in
/// each, and each recording shows every probe that kernel has attached,
/// reclaim, fault and swap counts that agree with the guest's own
/// /proc/vmstat and rusage; the kernels are compared at the end, with
/// MGLRU's metrics guarded (`guards`). The job records the memcg
/// reclaim begins in a tracefs instance of its own: the GFP flags each
/// guest's recording names (decoded from that kernel's own print
/// format) are those its kernel printed, count for count (issue 31).
#[test]
#[ignore = "needs root, QEMU and Debian's kernel packages; run with `cargo xtask test`"]
fn debian_6_1_and_6_12_guests_measure_like_the_host() {
    let _g = guard();
    let dir = fresh_scratch("kernels");
    let out_dir = dir.join("k");
    // /mnt: the guest's job directory (session/guests/initramfs.rs).
    let job = crate::entries::traced_job(
        &["mm_vmscan_memcg_reclaim_begin"],
        &format!("{} --mib 96 --passes 1", memhog().display()),
        "/mnt/trace.txt",
    );
    let out = vmtrace(&[
        "kernels",
        "--repeat",
        "1",
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
        "--", "run", "--mem", "48M", "--swap", "256M", "--", "sh", "-c", &job,
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
        let trace = std::fs::read_to_string(entry.path().join("trace.txt")).expect("trace");
        let printed =
            crate::entries::traced_gfp(&trace, "mm_vmscan_memcg_reclaim_begin", &["memhog", "sh"]);
        let decoded = crate::entries::entry_gfp(r, "memcg");
        eprintln!("{what}: kernel printed {printed:?}, vmtrace decoded {decoded:?}");
        assert!(!printed.is_empty(), "{what}: no reclaim begin traced");
        assert_eq!(printed, decoded, "{what}");
        // The ways' time off the CPU (the task's split totals across
        // each stall, kept in task storage) is the split's own on these
        // kernels too.
        let paths = r["reclaim_entries"]["paths"].as_array().expect("paths");
        let off = |s: &Value| n(&s["runnable_ns"]) + n(&s["blocked_ns"]);
        let ways: u64 = paths.iter().map(|p| off(&p["split"])).sum();
        let split = &r["memcg_reclaim"]["split"];
        let wall = n(&split["wall_ns"]);
        eprintln!(
            "{what}: off the CPU: ways {ways} ns, split {} ns (wall {wall})",
            off(split)
        );
        assert!(
            ways.abs_diff(off(split)) <= wall / 50 + 1_000_000,
            "{what}: ways {ways} vs split {}",
            off(split)
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
    let out = vmtrace(&["kernels", "--repeat", "1", "--kernel"])
        .arg(&bogus)
        .args(["--kernel", "host", "--timeout", "60", "-o"])
        .arg(&out_dir)
        .args(["--", "run", "--", "true"])
        .output()
        .expect("run vmtrace kernels");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(err.contains("FAILED"), "{err}");
    let host = out_dir.join("2-host").join("run.vmtrace.json");
    assert!(host.is_file(), "the host run did not happen: {err}");
    assert_eq!(recording(&host)["runs"][0]["report"]["exit"]["code"], 0);
}

/// The seed-001 experiment at CI scale: Debian's 6.1 and 6.12 booted
/// with little memory and no box (the whole guest is under pressure, as
/// with mem=64M), the bundled build at -j 2,4, two runs each. The
/// guests' tools come from the read-only guest image (a block device):
/// each guest's own /proc/diskstats shows the image read while the
/// builds ran, and the recording says so. The seed's table has a row
/// per kernel and a column per -j; compare compares -j2 with -j2 and
/// -j4 with -j4, never a mix. Every run reclaimed (the guest's own
/// vmstat), and the job's major faults are its rusage's.
#[test]
#[ignore = "needs root, QEMU and Debian's kernel packages; run with `cargo xtask test`"]
fn seed_001_kernels_by_jobs_under_whole_guest_pressure() {
    let _g = guard();
    let dir = fresh_scratch("kernels-seed");
    let out_dir = dir.join("k");
    let out = vmtrace(&[
        "kernels",
        "--kernel",
        "debian:6.1",
        "--kernel",
        "debian:6.12",
        "--mem",
        SEED_MEM,
        "--swap",
        "512M",
        "--disk",
        "1G",
        "--repeat",
        "2",
        "--timeout",
        "900",
        "-o",
    ])
    .arg(&out_dir)
    .args([
        "--",
        "run",
        "build",
        "--no-box",
        "-j",
        "2,4",
        "--files",
        SEED_FILES,
        "--functions",
        SEED_FUNCTIONS,
    ])
    .output()
    .expect("run vmtrace kernels");
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}\n{stdout}");
    assert!(err.contains("to build): block device"), "{err}");
    let mut releases = Vec::new();
    for entry in std::fs::read_dir(&out_dir).expect("out dir").flatten() {
        let rec_path = entry.path().join("run.vmtrace.json");
        if !rec_path.is_file() {
            continue;
        }
        let rec = recording(&rec_path);
        let env = &rec["environment"];
        let release = env["kernel_release"].as_str().unwrap_or("").to_string();
        let storage = env["guest_storage"].as_str().unwrap_or("");
        assert!(storage.starts_with("block device"), "{release}: {storage}");
        assert_eq!(env["job_fs"], "ext4", "{release}: the job ran on 9p");
        // The image was read while the builds ran: by the guest's block
        // layer, not vmtrace.
        let read = image_sectors(&entry.path(), "diskstats.after")
            - image_sectors(&entry.path(), "diskstats.before");
        assert!(read > 0, "{release}: nothing read from the image");
        let labels: Vec<&str> = rec["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .map(|r| r["label"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(labels, ["-j2", "-j2", "-j4", "-j4"], "{release}");
        for run in rec["runs"].as_array().into_iter().flatten() {
            let r = &run["report"];
            let what = format!("{release} {}", run["label"]);
            assert_eq!(r["exit"]["code"], 0, "{what}: {:#}", r["exit"]);
            assert!(r["membox"].is_null(), "{what}: ran in a box");
            let v = &r["vmstat"];
            let n = |x: &Value| x.as_u64().unwrap_or(0);
            assert!(n(&v["pgscan"]) > 0, "{what}: no reclaim: {v:#}");
            // The job's direct reclaims are some of the guest's.
            let stalls = n(&r["direct_reclaim"]["stalls"]["count"]);
            assert!(
                stalls <= n(&v["allocstall"]),
                "{what}: {stalls} direct reclaims vs allocstall {}",
                v["allocstall"]
            );
            // Its major faults (re-reads of the tools from the image, and
            // swap-ins) as its rusage counts them.
            let majors = n(&r["faults"]["major_target"]);
            assert!(
                majors > 0 && within(majors, n(&r["usage"]["major_faults"]), 0.05),
                "{what}: major faults {majors} vs rusage {}",
                r["usage"]["major_faults"]
            );
        }
        releases.push(release);
    }
    releases.sort();
    assert_eq!(releases.len(), 2, "{releases:?}\n{err}");
    let table = std::fs::read_to_string(out_dir.join("table.txt")).expect("table.txt");
    let head = table.lines().nth(1).unwrap_or("");
    assert!(
        head.starts_with("kernel") && head.contains("-j2") && head.contains("-j4"),
        "{table}"
    );
    for r in &releases {
        let row = table
            .lines()
            .find(|l| l.starts_with(r.as_str()))
            .unwrap_or_else(|| panic!("{r} has no row:\n{table}"));
        assert_eq!(row.matches("+-").count(), 2, "{row}");
    }
    assert!(table.contains("runs: 2 a cell"), "{table}");
    let compare = std::fs::read_to_string(out_dir.join("compare.txt")).expect("compare.txt");
    assert!(
        compare.contains("== -j2 ==") && compare.contains("== -j4 =="),
        "{compare}"
    );
    assert_eq!(compare.matches("2 runs (baseline)").count(), 2, "{compare}");
}

/// Guest memory and tree size of the seed test: whole-guest pressure
/// at -j2 already, small enough to stay within CI's time. Two units of
/// three functions: at 192 MiB every run here reclaimed (pgscan 18k to
/// 35k, direct reclaim 4 to 68 times, 1.5k to 3.2k pages swapped out)
/// in 38 to 73 s, one guest's four runs in 5.7 min with its boot. Two
/// units of eight at 160 MiB took 10 to 13 min a guest (QEMU's TCG,
/// two vCPUs on one host thread), past CI's time in the suite; three
/// functions at 128 MiB thrashed past 4 min a run.
const SEED_MEM: &str = "192M";
const SEED_FUNCTIONS: &str = "3";
const SEED_FILES: &str = "2";

/// Sectors read from the guest image (vdb) in a diskstats snapshot the
/// guest's job kept.
fn image_sectors(dir: &std::path::Path, name: &str) -> u64 {
    let text = std::fs::read_to_string(dir.join(name)).expect("diskstats");
    text.lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&"vdb")).then(|| f[5].parse().ok())?
        })
        .expect("vdb in diskstats")
}

/// Ctrl-C while a guest runs: QEMU is stopped, no other guest boots, the
/// guest's disks and the guest image are removed, and vmtrace exits 130.
#[test]
#[ignore = "needs root, QEMU and Debian's kernel packages; run with `cargo xtask test`"]
fn ctrl_c_stops_the_guests_and_leaves_no_disk_behind() {
    let _g = guard();
    let dir = fresh_scratch("kernels-ctrl-c");
    let out_dir = dir.join("k");
    let child = vmtrace(&[
        "kernels",
        "--repeat",
        "1",
        "--kernel",
        "debian:6.12",
        "--kernel",
        "debian:6.1",
        "--mem",
        "256M",
        "--timeout",
        "300",
        "-o",
    ])
    .arg(&out_dir)
    .args(["--", "run", "--mem", "48M", "memhog", "--mib", "64"])
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("start vmtrace kernels");
    // Until the first guest's console speaks: QEMU is running. QEMU
    // writes it in vmtrace's private directory (the job directory gets a
    // copy when the guest ends).
    let private = format!("vmtrace-kernels-{}-", child.id());
    let privates = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir("/var/tmp")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&private))
            .map(|e| e.path())
            .collect()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let mut booted = false;
    while std::time::Instant::now() < deadline {
        let spoke = privates()
            .iter()
            .any(|d| std::fs::metadata(d.join("console.log")).is_ok_and(|m| m.len() > 0));
        if spoke {
            booted = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(booted, "no guest console in /var/tmp/{private}*");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("stopped by a signal"), "{err}");
    let mut left = Vec::new();
    let mut dirs = 0;
    for e in std::fs::read_dir(&out_dir).expect("out dir").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".img") {
            left.push(name.clone());
        }
        if e.path().is_dir() {
            dirs += 1;
            for f in std::fs::read_dir(e.path()).expect("dir").flatten() {
                let n = f.file_name().to_string_lossy().into_owned();
                if n.ends_with(".img") || n.ends_with(".cpio") {
                    left.push(format!("{name}/{n}"));
                }
            }
        }
    }
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(privates().is_empty(), "left behind: {:?}", privates());
    assert_eq!(dirs, 1, "a second guest booted after Ctrl-C: {err}");
    let qemus = std::process::Command::new("pgrep")
        .args(["-f", &out_dir.to_string_lossy()])
        .output()
        .expect("pgrep");
    assert!(
        qemus.stdout.is_empty(),
        "still running: {}",
        String::from_utf8_lossy(&qemus.stdout)
    );
}

/// A guest's job is root in the guest, and the job directory is shared
/// over 9p: with `security_model=none` QEMU (root) applied its chmod and
/// mknod to the host, leaving a setuid-root copy of a shell and a device
/// node (here /dev/mem's numbers) in a directory other users reach. With
/// the mapped share both are plain files on the host, and what the guest
/// wrote is given to the invoker (here root: no sudo) as regular files.
#[test]
#[ignore = "needs root, QEMU and Debian's kernel packages; run with `cargo xtask test`"]
fn a_guests_setuid_file_and_device_node_stay_inert_on_the_host() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let _g = guard();
    let dir = fresh_scratch("kernels-inert");
    let out_dir = dir.join("k");
    let job =
        "cp /bin/busybox /mnt/x && chmod 4755 /mnt/x && mknod /mnt/d c 1 1; ls -l /mnt/x /mnt/d";
    let (guest, err) = one_guest_job(vmtrace(&[]), &out_dir, job);
    let said = std::fs::read_to_string(guest.join("stdout.txt")).unwrap_or_default();
    println!(
        "in the guest: {}",
        said.lines()
            .filter(|l| l.contains("/mnt/"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    // The guest saw what it did (the share maps it), ...
    assert!(
        said.contains("rwsr-xr-x") || said.contains("rwsr-xr-"),
        "guest: {said}\n{err}"
    );
    // ... the host has two plain files.
    let x = std::fs::symlink_metadata(guest.join("x")).expect("x on the host");
    let d = std::fs::symlink_metadata(guest.join("d")).expect("d on the host");
    println!(
        "on the host: x mode {:o}, d {:?} mode {:o}",
        x.permissions().mode(),
        d.file_type(),
        d.permissions().mode()
    );
    assert!(
        x.is_file() && x.permissions().mode() & 0o6000 == 0,
        "x is setuid"
    );
    assert!(
        !d.file_type().is_char_device() && d.is_file(),
        "d is a device"
    );
    assert!(!guest.join(".virtfs_metadata").exists());
}

/// Under sudo a guest's traced command runs as the invoker, as on the
/// host (it ran as root in the guest before): its uid there is SUDO_UID
/// (nobody here), it can work in /var/tmp, and what it wrote comes home
/// as nobody's.
#[test]
#[ignore = "needs root, QEMU and Debian's kernel packages; run with `cargo xtask test`"]
fn under_sudo_a_guests_command_runs_as_the_invoker() {
    use std::os::unix::fs::MetadataExt;
    let _g = guard();
    let dir = fresh_scratch("kernels-invoker");
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).expect("chown");
    let out_dir = dir.join("k");
    let job = "id -u > /mnt/uid && touch /var/tmp/mine && echo ok > /mnt/wrote";
    let mut cmd = vmtrace(&[]);
    cmd.env("SUDO_UID", "65534")
        .env("SUDO_GID", "65534")
        .env("SUDO_USER", "nobody");
    let (guest, err) = one_guest_job(cmd, &out_dir, job);
    let uid = std::fs::read_to_string(guest.join("uid")).unwrap_or_default();
    let wrote = std::fs::read_to_string(guest.join("wrote")).unwrap_or_default();
    println!("uid in the guest: {}; wrote: {}", uid.trim(), wrote.trim());
    assert_eq!(uid.trim(), "65534", "{err}");
    assert_eq!(wrote.trim(), "ok", "{err}");
    for name in ["uid", "run.vmtrace.json"] {
        let m = std::fs::metadata(guest.join(name)).expect(name);
        assert_eq!(m.uid(), 65534, "{name} is uid {}", m.uid());
    }
}

/// `cmd` (a vmtrace command) as `kernels --kernel debian:6.1 --mem 256M
/// -o OUT -- run --no-probes -- sh -c JOB`: the guest's directory and
/// vmtrace's stderr.
fn one_guest_job(
    mut cmd: std::process::Command,
    out_dir: &std::path::Path,
    job: &str,
) -> (std::path::PathBuf, String) {
    let out = cmd
        .args([
            "kernels",
            "--repeat",
            "1",
            "--kernel",
            "debian:6.1",
            "--mem",
            "256M",
        ])
        .args(["--timeout", "600", "-o"])
        .arg(out_dir)
        .args(["--", "run", "--no-probes", "--", "sh", "-c", job])
        .output()
        .expect("run vmtrace kernels");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let guest = std::fs::read_dir(out_dir)
        .expect("output directory")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .unwrap_or_else(|| panic!("no guest directory: {err}"));
    (guest, err)
}
