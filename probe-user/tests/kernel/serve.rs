//! `attach --serve`: a real Prometheus server (Debian's `prometheus`, on
//! loopback ports with a temporary config and data directory) scrapes
//! vmtrace every second while a boxed memory hog swaps; what Prometheus
//! stored is checked against the recording vmtrace writes when stopped;
//! and a kill -9 of the exporter leaves nothing behind. Another local
//! user's idle connections (slowloris) hold up no scrape, and a Host
//! header naming another machine (DNS rebinding) is refused.

use std::{
    io::{Read, Write},
    net::TcpStream,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::{
    attach::{memory_box, spawn_in_box},
    common::{
        assert_bpf_objects_back_to, bpf_object_counts, fresh_scratch, guard, json_of, memhog,
        vmtrace,
    },
};

/// A free loopback port (bound, then released for the server to take).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// GET http://127.0.0.1:port/path: (status, body); None when nothing
/// answers.
pub(crate) fn get(port: u16, path: &str) -> Option<(u16, String)> {
    get_as(port, path, "127.0.0.1")
}

/// As `get`, with `host` in the Host header.
fn get_as(port: u16, path: &str, host: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n")?.1;
    // Chunked bodies (Prometheus) are only read as JSON below, which
    // tolerates nothing else: unchunk.
    let body = if text
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        unchunk(body)
    } else {
        body.to_string()
    };
    Some((status, body))
}

fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((len, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(len.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

pub(crate) fn wait_for(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < limit, "{what} not ready in {limit:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One instant query's single value.
fn query(port: u16, promql: &str) -> f64 {
    try_query(port, promql).unwrap_or_else(|body| panic!("{promql}: {body}"))
}

/// One instant query's single value, or the answer when it has none.
pub(crate) fn try_query(port: u16, promql: &str) -> Result<f64, String> {
    let q: String = promql
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let (status, body) = get(port, &format!("/api/v1/query?query={q}")).expect("prometheus");
    assert_eq!(status, 200, "{promql}: {body}");
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    match v["data"]["result"].as_array().map(Vec::as_slice) {
        Some([one]) => one["value"][1]
            .as_str()
            .and_then(|s| s.parse().ok())
            .ok_or(body),
        _ => Err(body),
    }
}

/// Prometheus (the copy `cargo xtask setup` unpacked, no service, else
/// PATH's) on a free loopback port, with its config and data directory
/// in `dir`, scraping every second what `scrape_configs` (the YAML list
/// under that key) names; returned once it answers ready (killed when
/// dropped).
pub(crate) fn prometheus(dir: &std::path::Path, scrape_configs: &str) -> (u16, Killed) {
    let port = free_port();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n{scrape_configs}"
        ),
    )
    .expect("prometheus config");
    let mut cmd =
        Command::new(std::env::var_os("VMTRACE_PROMETHEUS").unwrap_or_else(|| "prometheus".into()));
    cmd.arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    crate::common::die_with_parent(&mut cmd);
    let prom = Killed(
        cmd.spawn()
            .expect("start prometheus (cargo xtask setup unpacks Debian's prometheus)"),
    );
    wait_for("prometheus", Duration::from_secs(60), || {
        get(port, "/-/ready").is_some_and(|(s, _)| s == 200)
    });
    (port, prom)
}

pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `vmtrace attach --serve` on a free loopback port, answering: the port
/// and the exporter (killed when dropped).
fn exporter() -> (u16, Killed) {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let serve = Killed(
        vmtrace(&["attach", "--serve", &listen])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start vmtrace attach --serve"),
    );
    wait_for("vmtrace /metrics", Duration::from_secs(60), || {
        get(port, "/metrics").is_some_and(|(s, _)| s == 200)
    });
    (port, serve)
}

/// `python3 -c SCRIPT PORT`, once it has printed its "ready" line
/// (killed when dropped).
fn python_ready(script: &str, port: u16) -> Killed {
    let mut py = Command::new("python3")
        .args(["-c", script, &port.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut ready = [0u8; 5];
    py.stdout
        .as_mut()
        .expect("piped")
        .read_exact(&mut ready)
        .expect("the script's ready line");
    Killed(py)
}

/// `promtool check metrics` (Prometheus's own linter, unpacked by
/// `cargo xtask setup` beside prometheus) accepts a real scrape: names
/// in base units, counters ending in `_total`, help on every family.
fn promtool_accepts(port: u16) {
    let (status, body) = get(port, "/metrics").expect("a scrape");
    assert_eq!(status, 200);
    let promtool = std::env::var_os("VMTRACE_PROMETHEUS")
        .map(|p| std::path::PathBuf::from(p).with_file_name("promtool"))
        .unwrap_or_else(|| "promtool".into());
    let mut child = Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", promtool.display()));
    use std::io::Write as _;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(body.as_bytes())
        .expect("scrape to promtool");
    let out = child.wait_with_output().expect("promtool");
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn prometheus_scrapes_what_the_recording_holds() {
    let _g = guard();
    let dir = fresh_scratch("serve");
    let vm_port = free_port();
    let membox = memory_box(64 << 20);
    let cgroup = membox
        .v2_cgroup()
        .expect("a cgroup v2 directory for the box")
        .dir
        .to_string_lossy()
        .into_owned();
    let listen = format!("127.0.0.1:{vm_port}");
    let rec = dir.join("serve.vmtrace.json");
    let serve = vmtrace(&[
        "attach",
        "--serve",
        &listen,
        "--cgroup",
        &cgroup,
        "--max-cgroups",
        "8",
        "--json",
        "-o",
        &rec.to_string_lossy(),
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("start vmtrace attach --serve");
    let serve_pid = serve.id();
    let mut serve = Some(Killed(serve));
    wait_for("vmtrace /metrics", Duration::from_secs(60), || {
        get(vm_port, "/metrics").is_some_and(|(s, _)| s == 200)
    });
    let (prom_port, _prom) = prometheus(
        &dir,
        &format!("  - job_name: vmtrace\n    static_configs:\n      - targets: ['{listen}']\n"),
    );
    wait_for("a first scrape", Duration::from_secs(30), || {
        try_query(prom_port, "up{job=\"vmtrace\"}").is_ok_and(|v| v == 1.0)
    });
    // The hog swaps in its box, scraped every second meanwhile.
    let mut hog = spawn_in_box(
        &membox,
        Command::new(memhog()).args(["--mib", "128", "--passes", "2"]),
    );
    let status = hog.wait().expect("memhog");
    assert!(status.success(), "memhog: {status}");
    // Nothing in the box runs any more: wait for two scrapes after its
    // end.
    let ended = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    wait_for("two scrapes after the job", Duration::from_secs(30), || {
        try_query(prom_port, "timestamp(up{job=\"vmtrace\"})").is_ok_and(|t| t > ended + 1.5)
    });
    let up = query(prom_port, "up{job=\"vmtrace\"}");
    assert_eq!(up, 1.0, "Prometheus could not scrape vmtrace");
    let counter = |name: &str| query(prom_port, name) as u64;
    let reclaims = counter("vmtrace_memcg_reclaim_seconds_count");
    let pages = counter("vmtrace_reclaim_pages_total{context=\"memcg\"}");
    let majors = counter("vmtrace_major_faults_total{tasks=\"target\"}");
    let cg_count = counter("sum(vmtrace_cgroup_memcg_reclaim_seconds_count)");
    let cg_sum = query(prom_port, "sum(vmtrace_cgroup_memcg_reclaim_seconds_sum)");
    let stall_ns = (query(prom_port, "vmtrace_memcg_reclaim_seconds_sum") * 1e9).round() as u64;
    promtool_accepts(vm_port);
    // The info gauge names the kernel uname(2) does; the reclaim pair's
    // probes say they are attached.
    let release = String::from_utf8(
        Command::new("uname")
            .arg("-r")
            .output()
            .expect("uname")
            .stdout,
    )
    .expect("utf-8");
    let info = format!("vmtrace_build_info{{kernel=\"{}\"}}", release.trim());
    assert_eq!(query(prom_port, &info), 1.0, "{info}");
    assert_eq!(
        query(prom_port, "vmtrace_probe_enabled{probe=\"memcg_reclaim\"}"),
        1.0
    );
    let p99_global = query(
        prom_port,
        "histogram_quantile(0.99, vmtrace_memcg_reclaim_seconds_bucket)",
    );
    let p99_cgroup = query(
        prom_port,
        "histogram_quantile(0.99, sum by (le) (vmtrace_cgroup_memcg_reclaim_seconds_bucket))",
    );
    let scrapes = counter("count_over_time(up{job=\"vmtrace\"}[10m])");
    let lru_scanned = counter("sum(vmtrace_lru_scanned_pages_total)");
    let lru_reclaimed = counter("sum(vmtrace_lru_reclaimed_pages_total)");
    // SIGTERM: vmtrace stops serving, writes its recording, exits 0.
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(serve_pid as i32, libc::SIGTERM) };
    let out = serve
        .take()
        .map(|mut k| {
            let child = std::mem::replace(
                &mut k.0,
                Command::new("true").spawn().expect("a placeholder child"),
            );
            child.wait_with_output().expect("vmtrace output")
        })
        .expect("vmtrace");
    membox.kill_all();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let r = json_of(&out);
    let stalls = &r["memcg_reclaim"]["stalls"];
    let count = stalls["count"].as_u64().expect("count");
    assert!(count > 0, "the hog never stalled in memcg reclaim");
    assert!(scrapes >= 3, "only {scrapes} scrapes");
    // Counters: what Prometheus stored is what the recording holds.
    assert_eq!(reclaims, count, "memcg reclaims");
    assert_eq!(
        Some(pages),
        r["memcg_reclaim"]["pages_reclaimed"].as_u64(),
        "pages reclaimed"
    );
    assert_eq!(
        Some(majors),
        r["faults"]["major_target"].as_u64(),
        "major faults of the target"
    );
    // LRU pages per context, every task: the recording is read after the
    // last scrape, and reclaim elsewhere may have gone on in between.
    let lru = r["lru_shrink_inactive"].as_array().expect("lru rows");
    let lru_sum = |key: &str| {
        lru.iter()
            .map(|row| row[key].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    for (what, scraped, recorded) in [
        ("scanned", lru_scanned, lru_sum("nr_scanned")),
        ("reclaimed", lru_reclaimed, lru_sum("nr_reclaimed")),
    ] {
        assert!(
            scraped > 0 && scraped <= recorded,
            "lru pages {what}: scraped {scraped}, recorded {recorded}"
        );
    }
    // The box's cgroup row holds every stall of the target, with the
    // exact sum.
    assert_eq!(cg_count, count, "per-cgroup count");
    assert!(
        (cg_sum - stall_ns as f64 / 1e9).abs() < 1e-6,
        "per-cgroup sum {cg_sum} s vs {stall_ns} ns"
    );
    // p99: Prometheus interpolates inside a power-of-two bucket; vmtrace's
    // own is within 1/32 of the true value. Within one bucket: a factor
    // of two at most.
    let own = stalls["p99_ns"].as_u64().expect("p99") as f64 / 1e9;
    eprintln!(
        "serve: {count} memcg stalls, {scrapes} scrapes; p99 vmtrace {own} s, \
         histogram_quantile {p99_global} s (per cgroup {p99_cgroup} s)"
    );
    for (what, p99) in [("global", p99_global), ("per cgroup", p99_cgroup)] {
        let ratio = p99 / own;
        assert!(
            (0.5..=2.0).contains(&ratio),
            "{what} histogram_quantile {p99} s vs vmtrace's p99 {own} s"
        );
    }
    assert!(
        err.contains(&format!("serving http://{listen}/metrics")),
        "{err}"
    );
}

/// kill -9 of a serving vmtrace leaves nothing: its programs, maps and
/// links go with it, and its port is free again.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn a_killed_exporter_leaves_nothing() {
    let _g = guard();
    let bpf_before = bpf_object_counts();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut serve = vmtrace(&["attach", "--serve", &listen])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start vmtrace attach --serve");
    wait_for("vmtrace /metrics", Duration::from_secs(60), || {
        get(port, "/metrics").is_some_and(|(s, body)| {
            s == 200 && body.contains("vmtrace_memcg_reclaim_seconds_count")
        })
    });
    assert_ne!(bpf_object_counts(), bpf_before, "nothing was loaded?");
    serve.kill().expect("kill -9 vmtrace");
    serve.wait().expect("reap vmtrace");
    assert_bpf_objects_back_to(bpf_before, "a killed exporter");
    assert!(
        std::net::TcpListener::bind(&listen).is_ok(),
        "{listen} still taken"
    );
}

/// Another process holds 200 connections open (half of them with a
/// request begun and never finished): with 64 slots taken before accept
/// and a 10 s header timeout, a scrape used to wait 10 s. Each of three
/// scrapes now answers within 1 s; a Host naming another machine gets
/// 421 and no metric; 20 scrapes in a row are all answered (they share
/// one rendering a second: the time they took is printed).
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn idle_connections_and_foreign_hosts_hold_up_no_scrape() {
    let _g = guard();
    let (port, _serve) = exporter();
    const HOLD: &str = r#"
import socket, sys, time
port = int(sys.argv[1])
held = []
for i in range(200):
    s = socket.create_connection(("127.0.0.1", port))
    if i % 2:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    held.append(s)
print("ready", flush=True)
time.sleep(60)
"#;
    let _hog = python_ready(HOLD, port);
    for i in 0..3 {
        let t = Instant::now();
        let answer = get(port, "/metrics");
        let took = t.elapsed();
        println!("scrape {i} beside 200 idle connections: {took:?}");
        assert!(answer.is_some_and(|(s, _)| s == 200), "scrape {i} failed");
        assert!(took < Duration::from_secs(1), "scrape {i} took {took:?}");
    }
    let refused = get_as(port, "/metrics", "attacker.example:80").expect("an answer");
    println!("Host attacker.example: {} {}", refused.0, refused.1.trim());
    assert_eq!(refused.0, 421);
    assert!(
        !refused.1.contains("vmtrace_"),
        "metrics leaked: {}",
        refused.1
    );
    let t = Instant::now();
    for _ in 0..20 {
        assert!(get(port, "/metrics").is_some_and(|(s, _)| s == 200));
    }
    println!("20 scrapes in a row: {:?}", t.elapsed());
}

/// A flood from another local user cannot silence the exporter: 600
/// keep-alive connections from uid 65534 (more than the 512 slots), each
/// asking `GET /` once a second, while a scraper gets 10 of 10 scrapes
/// (the connection idle longest is closed for a newcomer). Then the
/// accept loop at RLIMIT_NOFILE (the same flood against an exporter
/// allowed 300 descriptors) stays under 5% of a CPU: it pauses after a
/// failed accept instead of spinning.
#[test]
#[ignore = "needs root and the kernel; run with `cargo xtask test`"]
fn a_connection_flood_from_another_user_starves_no_scrape() {
    let _g = guard();
    const FLOOD: &str = r#"
import encodings.idna, os, socket, sys, time
port = int(sys.argv[1])
# Modules are imported before the drop: the interpreter's own files may
# be unreadable to uid 65534 (a Python under /root).
os.setgroups([]); os.setgid(65534); os.setuid(65534)
held = []
for i in range(600):
    try:
        s = socket.create_connection(("127.0.0.1", port))
        held.append(s)
    except OSError:
        pass
print("ready", flush=True)
end = time.time() + 40
while time.time() < end:
    for i, s in enumerate(held):
        try:
            s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        except OSError:
            try:
                held[i] = socket.create_connection(("127.0.0.1", port))
            except OSError:
                pass
    time.sleep(1)
"#;
    let flood = |port: u16| python_ready(FLOOD, port);
    let (port, _serve) = exporter();
    let _flood = flood(port);
    let mut answered = 0;
    for i in 0..10 {
        std::thread::sleep(Duration::from_secs(1));
        let t = Instant::now();
        let ok =
            get(port, "/metrics").is_some_and(|(s, body)| s == 200 && body.contains("vmtrace_"));
        println!("scrape {i} in the flood: {ok} in {:?}", t.elapsed());
        answered += usize::from(ok);
    }
    assert_eq!(answered, 10, "scrapes answered in the flood");

    // At RLIMIT_NOFILE: the exporter's CPU time over 10 s of flood.
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let limited = Killed(
        Command::new("prlimit")
            .arg("--nofile=300")
            .arg("--")
            .arg(crate::common::VMTRACE)
            .args(["attach", "--serve", &listen])
            .env_remove("SUDO_UID")
            .env_remove("SUDO_GID")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prlimit vmtrace"),
    );
    wait_for(
        "vmtrace /metrics under prlimit",
        Duration::from_secs(60),
        || get(port, "/metrics").is_some_and(|(s, _)| s == 200),
    );
    let pid = limited.0.id();
    let _flood = flood(port);
    // vmtrace and the HTTP server it forked (its child, as nobody).
    let cpu_of = |pid: &str| -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<f64> = after
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        // utime and stime: fields 14 and 15 of stat, 12 and 13 after ')'.
        (f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) / 100.0
    };
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .expect("vmtrace's children");
    assert_eq!(
        children.split_whitespace().count(),
        1,
        "vmtrace --serve forks one HTTP server: {children}"
    );
    let cpu = || -> f64 {
        cpu_of(&pid.to_string()) + children.split_whitespace().map(cpu_of).sum::<f64>()
    };
    let (c0, t0) = (cpu(), Instant::now());
    std::thread::sleep(Duration::from_secs(10));
    let share = (cpu() - c0) / t0.elapsed().as_secs_f64();
    println!(
        "exporter at RLIMIT_NOFILE in the flood: {:.1}% of a CPU",
        share * 100.0
    );
    assert!(share < 0.05, "{:.1}% of a CPU", share * 100.0);
}
