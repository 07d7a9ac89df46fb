//! `compare --prometheus` on real exporters (issue 45): six "hosts" on
//! this machine, each a memory box of its own (a `vmtrace run
//! --no-probes` holding a shell that runs a memory hog on demand) traced
//! by its own `vmtrace attach --serve` on a loopback port. A real
//! Prometheus (the one setup provides, on a loopback port with a
//! temporary data directory) scrapes the six every second, three under
//! the target label `fleet="a"` and three under `fleet="b"`; the hosts
//! are told apart only by that label, as a fleet's canary and stable
//! groups are.
//!
//! 1. Planted: group b's boxes are shrunk from 96 MiB to 32 MiB, and
//!    every hog runs once, in turn (a, b, a, b, ...: the hogs never
//!    compete for the CPUs, and drift in the machine's load falls on
//!    both groups). `compare --prometheus` over that window must call b
//!    slower, significantly, and name memcg reclaim stall time first.
//! 2. A/A: every box back to 96 MiB, the hogs again, the compare over
//!    the new window only: within noise, no cause named. A false alarm
//!    is 1 in 20 by design, so a significant A/A gets one fresh A/A
//!    round, which must then be within noise.
//!
//! Three hosts per group, not two: each host is one sample, and with two
//! a group's spread is one difference; Welch's t-test then has 1 to 2
//! degrees of freedom, and the host-to-host spread seen here (about 20%)
//! made even the planted difference come out within noise now and then.
//! Three hosts give it 2 to 4, enough for the planted box. The hogs are
//! small (128 MiB, two passes) and Prometheus scrapes every second, so
//! the test is short; it prints its wall time.

use std::{
    fs::File,
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, ChildStdout, Stdio},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use serde_json::Value;
use vmtrace::host::membox::CgroupMounts;

use crate::{
    common::{die_with_parent, fresh_scratch, guard, json_of, memhog, vmtrace},
    serve::{self, Killed, free_port, get, try_query, wait_for},
};

/// Hosts per group.
const HOSTS: usize = 3;
/// Every box's size, and the planted cause's (group b in the first
/// round).
const BIG: u64 = 96 << 20;
const SMALL: u64 = 32 << 20;

/// One host's job: `vmtrace run --no-probes` with its own box (one box
/// per vmtrace), holding a shell that runs the hog once per line it
/// reads and says `done`. Dropped: its stdin closed and vmtrace waited
/// for, so that it removes its box and swapfile.
struct Job {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// The box's cgroup v2 directory: what its exporter traces.
    cgroup: PathBuf,
    /// The file holding the box's memory limit (v2 memory.max, or v1
    /// memory.limit_in_bytes where the memory controller is on v1).
    limit: PathBuf,
}

impl Job {
    /// Starts the job; `ready` waits for its shell.
    fn spawn(dir: &Path, n: usize) -> Job {
        let script = format!(
            "echo ready $$; while read x; do '{}' --mib 128 --passes 2; echo done; done",
            memhog().display()
        );
        let rec = dir.join(format!("host-{n}.vmtrace.json"));
        let mut cmd = vmtrace(&[
            "run",
            "--no-probes",
            "--progress",
            "none",
            "--mem",
            "96M",
            "--swap",
            "256M",
            "-o",
            &rec.to_string_lossy(),
            "--",
            "sh",
            "-c",
            &script,
        ]);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        die_with_parent(&mut cmd);
        let mut child = cmd.spawn().expect("start vmtrace run");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        Job {
            child,
            stdin,
            stdout,
            cgroup: PathBuf::new(),
            limit: PathBuf::new(),
        }
    }

    /// Waits for the shell's `ready PID` and finds its box from the
    /// shell's cgroups.
    fn ready(&mut self) {
        let pid = self.read_until("ready ");
        let pid: u32 = pid.parse().unwrap_or_else(|e| panic!("ready {pid:?}: {e}"));
        (self.cgroup, self.limit) = box_of(pid);
    }

    /// Reads the job's output up to a line starting with `prefix`;
    /// returns the rest of that line.
    fn read_until(&mut self, prefix: &str) -> String {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self
                .stdout
                .read_line(&mut line)
                .expect("read the job's output");
            assert!(n > 0, "the boxed shell ended before saying {prefix:?}");
            if let Some(rest) = line.strip_prefix(prefix) {
                return rest.trim().to_string();
            }
        }
    }

    /// Runs the hog once in the box; returns how long it took.
    fn hog(&mut self) -> Duration {
        let t = Instant::now();
        let stdin = self.stdin.as_mut().expect("the job's stdin");
        writeln!(stdin, "go")
            .and_then(|()| stdin.flush())
            .expect("tell the job to run the hog");
        self.read_until("done");
        t.elapsed()
    }

    /// Sets the box's memory limit, and checks it took.
    fn resize(&self, bytes: u64) {
        std::fs::write(&self.limit, bytes.to_string())
            .unwrap_or_else(|e| panic!("{}: {e}", self.limit.display()));
        let now = std::fs::read_to_string(&self.limit).unwrap_or_default();
        assert_eq!(now.trim(), bytes.to_string(), "{}", self.limit.display());
    }

    /// Ends the job and requires vmtrace to have ended well (its box
    /// and swapfile removed).
    fn finish(mut self) {
        let status = self.end();
        assert!(
            status.is_some_and(|s| s.success()),
            "vmtrace run: {status:?}"
        );
    }

    fn end(&mut self) -> Option<std::process::ExitStatus> {
        drop(self.stdin.take());
        let _ = std::io::copy(&mut self.stdout, &mut std::io::sink());
        self.child.wait().ok()
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        self.end();
    }
}

/// The box of the shell `pid` is in: its cgroup v2 directory and the
/// file holding its memory limit.
fn box_of(pid: u32) -> (PathBuf, PathBuf) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/cgroup: {e}"));
    let mounts = CgroupMounts::read().expect("the cgroup mounts");
    let (mut v2, mut v1) = (None, None);
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let rel = path.trim_start_matches('/');
        if id == "0" && controllers.is_empty() {
            v2 = mounts.v2.as_ref().map(|m| m.join(rel));
        } else if controllers.split(',').any(|c| c == "memory") {
            v1 = mounts.v1_memory.as_ref().map(|m| m.join(rel));
        }
    }
    let boxed = |d: &PathBuf| {
        d.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("vmtrace-"))
    };
    let v2 = v2
        .filter(boxed)
        .unwrap_or_else(|| panic!("no vmtrace box among the shell's cgroups:\n{text}"));
    let limit = if v2.join("memory.max").is_file() {
        v2.join("memory.max")
    } else {
        v1.filter(boxed)
            .unwrap_or_else(|| panic!("no v1 memory box among the shell's cgroups:\n{text}"))
            .join("memory.limit_in_bytes")
    };
    (v2, limit)
}

/// `vmtrace attach --serve` on a free loopback port, tracing `cgroup`,
/// once it answers /metrics (one at a time: each attach holds
/// vmtrace's attach lock while it loads).
fn exporter(dir: &Path, n: usize, cgroup: &Path) -> (u16, Killed) {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let log = dir.join(format!("exporter-{n}.stderr"));
    let mut cmd = vmtrace(&[
        "attach",
        "--serve",
        &listen,
        "--cgroup",
        &cgroup.to_string_lossy(),
    ]);
    cmd.stdout(Stdio::null())
        .stderr(File::create(&log).expect("the exporter's log"));
    die_with_parent(&mut cmd);
    let serve = Killed(cmd.spawn().expect("start vmtrace attach --serve"));
    let what = format!("vmtrace /metrics on {listen} (stderr: {})", log.display());
    wait_for(&what, Duration::from_secs(60), || {
        get(port, "/metrics").is_some_and(|(s, _)| s == 200)
    });
    (port, serve)
}

/// Prometheus on a free loopback port with a temporary config and data
/// directory, scraping every second one job whose targets are labelled
/// `fleet="a"` and `fleet="b"`; returned once it has scraped all of
/// them (killed when dropped).
fn prometheus(dir: &Path, groups: [&[u16]; 2]) -> (u16, Killed) {
    let targets = |ports: &[u16]| {
        ports
            .iter()
            .map(|p| format!("'127.0.0.1:{p}'"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (port, prom) = serve::prometheus(
        dir,
        &format!(
            "  - job_name: vmtrace\n    static_configs:\n      \
             - targets: [{}]\n        labels: {{fleet: a}}\n      \
             - targets: [{}]\n        labels: {{fleet: b}}\n",
            targets(groups[0]),
            targets(groups[1])
        ),
    );
    let all = (groups[0].len() + groups[1].len()) as f64;
    wait_for("every exporter scraped", Duration::from_secs(30), || {
        try_query(port, "count(up{job=\"vmtrace\"} == 1)").is_ok_and(|n| n == all)
    });
    (port, prom)
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64()
}

/// One round: a second's gap (the window's first scrape then shows the
/// round before it ended), every job's hog once in turn (a, b, a, b,
/// ...), a scrape of every exporter after the last, and
/// `compare --prometheus --json` over that window only: its `fleet`.
fn round(prom: u16, jobs: &mut [Job], name: &str) -> Value {
    std::thread::sleep(Duration::from_secs(1));
    let start = unix_now();
    let took: Vec<String> = jobs
        .iter_mut()
        .map(|j| format!("{:.1}", j.hog().as_secs_f64()))
        .collect();
    let end = unix_now();
    wait_for(
        "a scrape of every exporter after the hogs",
        Duration::from_secs(30),
        || try_query(prom, "min(timestamp(up{job=\"vmtrace\"}))").is_ok_and(|t| t > end + 1.5),
    );
    let at = unix_now();
    // Whole seconds, ending at `at`: the window starts less than a
    // second before the first hog, after the round before it.
    let range = format!("{}s", (at - start).ceil() as u64);
    let url = format!("http://127.0.0.1:{prom}");
    let before = engine(prom);
    let out = vmtrace(&[
        "compare",
        "--prometheus",
        &url,
        "--range",
        &range,
        "--at",
        &format!("{at:.3}"),
        "--json",
        "--group",
        "fleet=\"a\"",
        "--vs",
        "fleet=\"b\"",
    ])
    .output()
    .expect("run vmtrace compare");
    let cost = engine(prom).since(&before);
    // Exit 0: without --fail-if a slower group is an answer, not a
    // failure.
    assert!(
        out.status.success(),
        "{name}: compare --prometheus: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json_of(&out);
    assert_eq!(doc["source"], "prometheus", "{name}: {doc}");
    let fleet = doc["fleet"].clone();
    let mean = |g: usize| {
        fleet["rows"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["rate"]["id"] == "stall_time"))
            .and_then(|r| r["groups"][g]["mean"].as_f64())
            .map_or("-".into(), |v| format!("{:.1}", v * 1e3))
    };
    let num = |v: &Value, scale: f64| {
        v.as_f64()
            .map_or("-".into(), |x| format!("{:.3}", x * scale))
    };
    eprintln!(
        "fleet {name}: {} (stall time {} -> {} ms/s, {}%, p {}); first cause {}; \
         window {range}; hogs a,b,... {} s",
        fleet["verdict"]["id"],
        mean(0),
        mean(1),
        num(&fleet["stall_time"]["pct"], 1.0),
        num(&fleet["stall_time"]["welch"]["p"], 1.0),
        fleet["causes"][0]["rate"]["id"],
        took.join(" ")
    );
    eprintln!(
        "fleet {name}: the compare's queries: {} queries, {:.1} ms in the \
         engine (prepare and evaluation); {} series per host",
        cost.queries,
        cost.seconds * 1e3,
        try_query(prom, "max(count by (instance) ({job=\"vmtrace\"}))")
            .map_or("-".into(), |n| format!("{n:.0}"))
    );
    fleet
}

/// Both groups hold their three hosts (each exporter's instance), none
/// missing or reset.
fn check_groups(fleet: &Value, groups: [&[u16]; 2], name: &str) {
    for (g, ports) in groups.iter().enumerate() {
        let group = &fleet["groups"][g];
        let mut hosts: Vec<&str> = group["hosts"]
            .as_array()
            .map(|h| h.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        hosts.sort_unstable();
        let mut want: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        want.sort_unstable();
        assert_eq!(hosts, want, "{name}: group {g}'s hosts: {group}");
        for key in ["missing", "reset"] {
            assert_eq!(group[key], serde_json::json!([]), "{name}: {key}: {group}");
        }
    }
}

/// Prometheus's own query counters (its /metrics): queries run and
/// seconds in the engine (preparing: reading the series; evaluating).
/// This Prometheus has no per-query sample counter.
#[derive(Default)]
struct Engine {
    queries: f64,
    seconds: f64,
}

impl Engine {
    fn since(&self, before: &Engine) -> Engine {
        Engine {
            queries: self.queries - before.queries,
            seconds: self.seconds - before.seconds,
        }
    }
}

fn engine(prom: u16) -> Engine {
    let Some((200, text)) = get(prom, "/metrics") else {
        return Engine::default();
    };
    let value = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    Engine {
        queries: value("prometheus_engine_query_duration_seconds_count{slice=\"inner_eval\"}"),
        seconds: value("prometheus_engine_query_duration_seconds_sum{slice=\"inner_eval\"}")
            + value("prometheus_engine_query_duration_seconds_sum{slice=\"prepare_time\"}"),
    }
}

/// Within noise, naming nothing; the boxes did stall (a stall-time
/// change exists to be judged).
fn within_noise(fleet: &Value) -> bool {
    assert!(
        fleet["stall_time"].is_object(),
        "no reclaim stall time to compare: {fleet}"
    );
    let quiet = fleet["verdict"]["id"] == "within_noise";
    if quiet {
        assert_eq!(fleet["causes"], serde_json::json!([]), "{fleet}");
    }
    quiet
}

#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn compare_prometheus_names_the_smaller_boxes_of_one_group() {
    let _g = guard();
    let t0 = Instant::now();
    let dir = fresh_scratch("fleet");
    // Jobs interleaved: a, b, a, b, ... (group = index % 2).
    let mut jobs: Vec<Job> = (0..2 * HOSTS).map(|n| Job::spawn(&dir, n)).collect();
    for j in &mut jobs {
        j.ready();
    }
    let exporters: Vec<(u16, Killed)> = jobs
        .iter()
        .enumerate()
        .map(|(n, j)| exporter(&dir, n, &j.cgroup))
        .collect();
    let ports =
        |g: usize| -> Vec<u16> { exporters.iter().skip(g).step_by(2).map(|e| e.0).collect() };
    let (a, b) = (ports(0), ports(1));
    let groups = [a.as_slice(), b.as_slice()];
    let (prom, _prom) = prometheus(&dir, groups);

    // 1. Planted: group b's boxes a third the size.
    for j in jobs.iter().skip(1).step_by(2) {
        j.resize(SMALL);
    }
    let planted = round(prom, &mut jobs, "planted");
    check_groups(&planted, groups, "planted");
    assert_eq!(planted["verdict"]["id"], "slower", "{planted}");
    let p = planted["stall_time"]["welch"]["p"].as_f64();
    assert!(p.is_some_and(|p| p < 0.05), "p {p:?}: {planted}");
    let first = &planted["causes"][0];
    assert_eq!(first["mechanism"]["id"], "reclaim", "{planted}");
    assert_eq!(first["rate"]["id"], "memcg_stall_time", "{planted}");
    assert!(
        first["change"]["welch"]["p"]
            .as_f64()
            .is_some_and(|p| p < 0.05),
        "{planted}"
    );

    // 2. A/A: every box the same size again.
    for j in jobs.iter().skip(1).step_by(2) {
        j.resize(BIG);
    }
    let aa = round(prom, &mut jobs, "A/A");
    check_groups(&aa, groups, "A/A");
    if !within_noise(&aa) {
        // A false alarm is 1 in 20: one fresh A/A round must be quiet.
        let again = round(prom, &mut jobs, "A/A again");
        check_groups(&again, groups, "A/A again");
        assert!(
            within_noise(&again),
            "A/A significant twice:\n{aa}\n{again}"
        );
    }
    drop(exporters);
    for j in jobs {
        j.finish();
    }
    eprintln!("fleet: {:.0} s in all", t0.elapsed().as_secs_f64());
}
