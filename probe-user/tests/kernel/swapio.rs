//! Swap I/O latency against two independent measures of the same
//! requests: the swap area is a loop device that carries nothing else,
//! so its own counters (/sys/block/loopN/stat) count exactly the
//! requests vmtrace times, and bpftrace times the same requests from the
//! same tracepoints with its own pairing (by sector) and its own clock
//! reads. vmtrace's histograms must agree with bpftrace's within bucket
//! precision, and no issue may be paired with another request's
//! completion.

use std::{
    io::{BufRead, BufReader},
    os::unix::fs::FileTypeExt,
    path::PathBuf,
    process::{Child, Command, Stdio},
};

use serde_json::Value;

use crate::common::{guard, json_of, run_memhog, within};

/// A swap area on a loop device over a file, removed on drop (also when
/// the test fails).
struct LoopSwap {
    file: PathBuf,
    device: String,
}

impl LoopSwap {
    fn new(mib: u64) -> LoopSwap {
        let file = PathBuf::from("/var/tmp/vmtrace-test-loopswap.img");
        let _ = std::fs::remove_file(&file);
        let f = std::fs::File::create(&file).expect("create the loop file");
        f.set_len(mib << 20).expect("size the loop file");
        drop(f);
        // Direct I/O: the loop device reads and writes its file without
        // the page cache, which is what is under pressure.
        let out = Command::new("losetup")
            .args(["--find", "--show", "--direct-io=on"])
            .arg(&file)
            .output()
            .expect("losetup");
        assert!(out.status.success(), "{out:?}");
        let device = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let swap = LoopSwap { file, device };
        for cmd in [
            vec!["mkswap", "-q", swap.device.as_str()],
            vec!["swapon", "-p", "32767", swap.device.as_str()],
        ] {
            let st = Command::new(cmd[0]).args(&cmd[1..]).status().expect("swap");
            assert!(st.success(), "{cmd:?}");
        }
        swap
    }

    fn name(&self) -> &str {
        self.device.trim_start_matches("/dev/")
    }

    /// The kernel's dev_t, as tracepoints print it (major << 20 | minor).
    fn kdev(&self) -> u64 {
        let dev =
            std::fs::read_to_string(format!("/sys/block/{}/dev", self.name())).expect("loop dev");
        let (major, minor) = dev.trim().split_once(':').expect("major:minor");
        (major.parse::<u64>().expect("major") << 20) | minor.parse::<u64>().expect("minor")
    }

    /// /sys/block/NAME/stat: (read I/Os, read sectors, write I/Os, write
    /// sectors), counted by the block layer at each request's completion.
    fn stat(&self) -> [u64; 4] {
        let s = std::fs::read_to_string(format!("/sys/block/{}/stat", self.name()))
            .expect("block stat");
        let f: Vec<u64> = s
            .split_whitespace()
            .map(|v| v.parse().expect("number"))
            .collect();
        [f[0], f[2], f[4], f[6]]
    }
}

impl Drop for LoopSwap {
    fn drop(&mut self) {
        let _ = Command::new("swapoff").arg(&self.device).status();
        let _ = Command::new("losetup").arg("-d").arg(&self.device).status();
        let _ = std::fs::remove_file(&self.file);
    }
}

/// tracefs at /sys/kernel/tracing, where bpftrace looks for tracepoints
/// (vmtrace needs no mount: it reads the formats itself); mounted for the
/// test when missing, unmounted after.
struct Tracefs(bool);

impl Tracefs {
    fn ensure() -> Tracefs {
        if std::path::Path::new("/sys/kernel/tracing/events").exists() {
            return Tracefs(false);
        }
        let st = Command::new("mount")
            .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
            .status()
            .expect("mount tracefs");
        assert!(st.success(), "mount tracefs");
        Tracefs(true)
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        if self.0 {
            let _ = Command::new("umount").arg("/sys/kernel/tracing").status();
        }
    }
}

/// bpftrace's own timing of the loop device's requests, issue to
/// completion, paired by sector, reads ('R') and writes ('W') apart.
fn bpftrace_script(kdev: u64) -> String {
    format!(
        r#"
tracepoint:block:block_rq_issue /args->dev == {kdev}/ {{ @start[args->sector] = nsecs; }}
tracepoint:block:block_rq_complete /args->dev == {kdev} && @start[args->sector]/ {{
  $ns = nsecs - @start[args->sector];
  delete(@start[args->sector]);
  if (strncmp(args->rwbs, "R", 1) == 0) {{ @read_n = count(); @read_sum = sum($ns); @read = hist($ns); }}
  if (strncmp(args->rwbs, "W", 1) == 0) {{ @write_n = count(); @write_sum = sum($ns); @write = hist($ns); }}
}}
END {{ clear(@start); }}
"#
    )
}

/// A running bpftrace, killed on drop (a failed assertion between start
/// and stop must not leave it attached, holding the test's output).
struct Bpftrace(Option<Child>);

impl Drop for Bpftrace {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts bpftrace and waits until its probes are attached.
fn start_bpftrace(script: &str) -> Bpftrace {
    let mut child = Command::new("bpftrace")
        .args(["-f", "json", "-e", script])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start bpftrace (cargo xtask setup installs it)");
    let stdout = child.stdout.take().expect("bpftrace stdout");
    let mut lines = BufReader::new(stdout);
    let mut line = String::new();
    loop {
        line.clear();
        let n = lines.read_line(&mut line).expect("bpftrace output");
        assert!(n > 0, "bpftrace exited before attaching");
        if line.contains("attached_probes") {
            break;
        }
    }
    child.stdout = Some(lines.into_inner());
    Bpftrace(Some(child))
}

/// Stops bpftrace and returns its maps: name -> value (a number, or the
/// buckets of a hist as [{min, max, count}]).
fn stop_bpftrace(mut tracer: Bpftrace) -> serde_json::Map<String, Value> {
    let child = tracer.0.take().expect("bpftrace running");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().expect("bpftrace exits");
    let mut maps = serde_json::Map::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if let Some(data) = v["data"].as_object()
            && matches!(v["type"].as_str(), Some("map" | "hist"))
        {
            maps.extend(data.clone());
        }
    }
    maps
}

/// The log2 bucket [min, max] of bpftrace's hist that holds quantile q.
fn bpftrace_quantile_bucket(hist: &Value, q: f64) -> (u64, u64) {
    let buckets = hist.as_array().expect("hist buckets");
    let total: u64 = buckets
        .iter()
        .map(|b| b["count"].as_u64().unwrap_or(0))
        .sum();
    let rank = (q * total as f64).ceil() as u64;
    let mut seen = 0;
    for b in buckets {
        seen += b["count"].as_u64().unwrap_or(0);
        if seen >= rank.max(1) {
            return (
                b["min"].as_u64().unwrap_or(0),
                b["max"].as_u64().unwrap_or(u64::MAX),
            );
        }
    }
    (0, u64::MAX)
}

#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn swap_io_latency_agrees_with_bpftrace_and_the_devices_counts() {
    let _g = guard();
    assert!(
        std::fs::read_to_string("/proc/swaps").is_ok_and(|s| s.lines().count() == 1),
        "this test needs a machine without other swap"
    );
    let swap = LoopSwap::new(768);
    assert!(
        std::fs::metadata(&swap.device).is_ok_and(|m| m.file_type().is_block_device()),
        "{}",
        swap.device
    );
    let _tracefs = Tracefs::ensure();
    let tracer = start_bpftrace(&bpftrace_script(swap.kdev()));
    let before = swap.stat();
    let out = run_memhog(true, &["--mem", "128M"], &["--mib", "384", "--passes", "1"])
        .output()
        .expect("run vmtrace");
    let after = swap.stat();
    let bt = stop_bpftrace(tracer);
    let r = json_of(&out);
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "status {:?}", out.status);
    let io = &r["swap_io"];
    assert!(
        io["areas"]
            .as_array()
            .is_some_and(|a| a.iter().any(|p| p == swap.device.as_str())),
        "{io:#}"
    );
    // Pairing: never an issue paired with another request's completion;
    // at most one request in 1 000 left unpaired (counted, not timed: the
    // device's count below confirms each is one request vmtrace did not
    // time). One in 10 000 held on the machines of 2026-11-30; on those
    // of 2026-12-01 20-90 of ~150 000 loop requests stay unpaired, with
    // this code and the previous stop's alike: the same request issued
    // again at an unrelated sector while its slot was open, i.e. a
    // completion the program did not match. Not short reads (a rule for
    // a request advanced within its own range changed nothing); the
    // mechanism is open (issue 19).
    let unpaired = r["dropped"]["swap_io_unpaired"].as_u64().expect("unpaired");
    let timed =
        io["read"]["count"].as_u64().unwrap_or(0) + io["write"]["count"].as_u64().unwrap_or(0);
    let unpaired_bytes = r["dropped"]["swap_io_unpaired_bytes"]
        .as_u64()
        .expect("unpaired bytes");
    eprintln!(
        "unpaired {unpaired} of {timed}, {unpaired_bytes} B; programs skipped: {}",
        r["dropped"]["program_misses"]
    );
    assert!(unpaired <= 1 + timed / 1_000, "{:#}", r["dropped"]);
    assert_eq!(r["dropped"]["swap_io_map_full"], 0, "{:#}", r["dropped"]);

    let mut missing_bytes = 0;
    for (dir, i, key) in [("read", 0, "read_bytes"), ("write", 2, "write_bytes")] {
        let s = &io[dir];
        let count = s["count"].as_u64().expect("count");
        let bytes = io[key].as_u64().expect("bytes");
        let (dev_ios, dev_sectors) = (after[i] - before[i], after[i + 1] - before[i + 1]);
        eprintln!(
            "{dir}: vmtrace {count} requests, {bytes} B; device {dev_ios} requests, {} B",
            dev_sectors * 512
        );
        assert!(count > 1000, "too little swap {dir} to compare: {count}");
        // The device's own counts: every request, and every byte, but
        // the few left unpaired (each counted, none timed).
        assert!(
            count <= dev_ios && dev_ios - count <= unpaired,
            "{dir} requests"
        );
        // Bytes: every byte but those of the unpaired requests, whose
        // size the probe counts (as issued) without timing them.
        assert!(bytes <= dev_sectors * 512, "{dir} bytes");
        assert!(
            dev_sectors * 512 - bytes <= unpaired_bytes,
            "{dir} bytes: {} B beyond vmtrace's, only {unpaired_bytes} B unpaired",
            dev_sectors * 512 - bytes
        );
        missing_bytes += dev_sectors * 512 - bytes;

        // bpftrace: the same requests (it may miss a few: its classic
        // tracepoint programs are skipped when they would interrupt
        // another BPF program on the CPU), the same latencies.
        let n = bt[&format!("@{dir}_n")].as_u64().expect("bpftrace count");
        let sum = bt[&format!("@{dir}_sum")].as_u64().expect("bpftrace sum");
        assert!(
            n <= count && within(n, count, 0.02),
            "{dir}: bpftrace {n} vs {count}"
        );
        let (mean_bt, mean_vm) = (sum / n, s["total_ns"].as_u64().expect("total") / count);
        eprintln!("{dir}: mean {mean_vm} ns (vmtrace) vs {mean_bt} ns (bpftrace)");
        // vmtrace's buckets are 1/16 of a power of two wide (its total is
        // summed from bucket midpoints): agree within that, and a little
        // for the two tools' clock reads a few hundred ns apart.
        assert!(
            within(mean_vm, mean_bt, 0.08),
            "{dir}: {mean_vm} vs {mean_bt}"
        );
        let hist = &bt[&format!("@{dir}")];
        for (q, key) in [(0.5, "p50_ns"), (0.9, "p90_ns"), (0.99, "p99_ns")] {
            let (lo, hi) = bpftrace_quantile_bucket(hist, q);
            let ours = s[key].as_u64().expect("quantile");
            eprintln!("{dir} {key}: vmtrace {ours} ns, bpftrace [{lo}, {hi}]");
            // One log2 bucket either side: a quantile near a bucket edge
            // may fall on either side of it in the other tool.
            assert!(
                ours + 1 >= lo / 2 && ours <= hi.saturating_mul(2) + 1,
                "{dir} {key}"
            );
        }
    }
    // And those bytes are the unpaired requests' own: what the device
    // counted beyond vmtrace is what the probe says it left untimed (up
    // to one request in flight at either end of the run).
    let max_request =
        std::fs::read_to_string(format!("/sys/block/{}/queue/max_sectors_kb", swap.name()))
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .expect("max_sectors_kb")
            * 1024;
    eprintln!("device bytes beyond vmtrace's: {missing_bytes} B, unpaired {unpaired_bytes} B");
    assert!(
        missing_bytes.abs_diff(unpaired_bytes) <= max_request,
        "device bytes beyond vmtrace's {missing_bytes} B vs unpaired {unpaired_bytes} B"
    );
}
