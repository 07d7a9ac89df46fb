//! `cargo xtask bench --soak MINUTES`: `vmtrace attach --serve` left
//! running system-wide while memory boxes (a memory cgroup each, with its
//! cgroup2 directory and swapfile) are created and removed back to back,
//! each with a memory hog that stalls in reclaim, so per-cgroup rows come
//! and go; /metrics is scraped every second. Measured: the exporter's RSS
//! over the run (it must stay flat), scrape latency, the per-cgroup rows
//! (bounded by the cap; removed cgroups expire) and the events vmtrace
//! says it lost. Writes soak.md next to the bench's other results.

use std::{
    fmt::Write as _,
    io::{Read, Write},
    net::TcpStream,
    path::Path,
    process::{Child, Command, ExitStatus, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

use crate::stats::quantile;

/// Per-cgroup rows the exporter may keep in the soak: fewer than the
/// boxes it sees, so that the cap and the expiry are both exercised.
const MAX_CGROUPS: &str = "4";

pub(super) fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// GET /metrics: the body and how long it took.
pub(super) fn scrape(port: u16) -> Option<(String, Duration)> {
    let start = Instant::now();
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let took = start.elapsed();
    text.starts_with("HTTP/1.1 200").then(|| {
        (
            text.split_once("\r\n\r\n").map_or("", |p| p.1).to_string(),
            took,
        )
    })
}

/// The value of an unlabelled sample in an exposition. vmtrace writes
/// expositions (`view::prometheus`) but parses none; what the soak and
/// cardinality reports read is a handful of unlabelled gauges and
/// counters, for which this line is the whole parser.
pub(super) fn value(body: &str, name: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

pub(super) fn rss_kib(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| {
            l.strip_prefix("VmRSS:")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
}

/// The counters whose non-zero value means events were lost or not
/// paired (`vmtrace_<name>_total`).
const LOSS_COUNTERS: &[&str] = &[
    "reclaim_start_dropped",
    "reclaim_end_unmatched",
    "swap_io_start_dropped",
    "swap_io_unpaired",
    "span_start_dropped",
    "oom_records_dropped",
];

pub fn soak(vmtrace: &Path, memhog: &Path, minutes: u64, out: &Path) -> Result<()> {
    let port = free_port()?;
    let listen = format!("127.0.0.1:{port}");
    let scratch = out.join("soak-scratch");
    std::fs::create_dir_all(&scratch)?;
    let (mut serve, started) = start_serve(
        vmtrace,
        port,
        &["--serve", &listen, "--max-cgroups", MAX_CGROUPS],
        out,
        "soak",
    )?;
    let pid = serve.id();
    let stop = Arc::new(AtomicBool::new(false));
    let boxes = Arc::new(AtomicU64::new(0));
    let churn = start_churn(vmtrace, memhog, &scratch, &stop, &boxes);
    let samples = watch(port, pid, minutes, started, &boxes);
    eprintln!();
    stop.store(true, Ordering::Relaxed);
    let _ = churn.join();
    // SAFETY: a signal to the child started above.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let status = serve.wait()?;
    let _ = std::fs::remove_dir_all(&scratch);

    let md = report(
        samples,
        boxes.load(Ordering::Relaxed),
        minutes,
        &listen,
        status,
    )?;
    let path = out.join("soak.md");
    std::fs::write(&path, &md)?;
    print!("{md}");
    eprintln!("bench: soak results in {}", path.display());
    Ok(())
}

/// Starts `vmtrace attach ARGS` (a --serve on `port`), its recording
/// and log named after `what`, and waits (up to a minute) until it
/// answers a scrape; returns it and when it was started.
pub(super) fn start_serve(
    vmtrace: &Path,
    port: u16,
    args: &[&str],
    out: &Path,
    what: &str,
) -> Result<(Child, Instant)> {
    let log = format!("{what}-serve.log");
    let mut serve = Command::new(vmtrace)
        .arg("attach")
        .args(args)
        .arg("-o")
        .arg(out.join(format!("{what}.vmtrace.json")))
        .arg("--json")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(out.join(&log))?)
        .spawn()
        .context("starting vmtrace attach --serve")?;
    let started = Instant::now();
    while scrape(port).is_none() {
        if started.elapsed() > Duration::from_secs(60) || serve.try_wait()?.is_some() {
            let _ = serve.kill();
            bail!("vmtrace --serve did not answer; see {log}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok((serve, started))
}

/// The churn: one box after another, each with a hog that swaps, until
/// `stop`; `boxes` counts the boxes that ran to the end.
fn start_churn(
    vmtrace: &Path,
    memhog: &Path,
    scratch: &Path,
    stop: &Arc<AtomicBool>,
    boxes: &Arc<AtomicU64>,
) -> JoinHandle<()> {
    let (stop, boxes) = (stop.clone(), boxes.clone());
    let (vmtrace, memhog, scratch) = (
        vmtrace.to_path_buf(),
        memhog.to_path_buf(),
        scratch.to_path_buf(),
    );
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let ok = Command::new(&vmtrace)
                .args(["run", "-q", "--no-probes", "--mem", "24M", "--swap", "64M"])
                .arg("-o")
                .arg(scratch.join("churn.vmtrace.json"))
                .arg("--")
                .arg(&memhog)
                .args(["--mib", "32", "--passes", "1"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                boxes.fetch_add(1, Ordering::Relaxed);
            } else {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    })
}

/// What the scrapes saw.
#[derive(Default)]
struct Samples {
    /// Latency of each answered scrape, ms, in order.
    latencies: Vec<f64>,
    /// Scrapes not answered.
    failed: u64,
    /// (minute of the run, exporter RSS KiB), every 30 s.
    rss: Vec<(f64, u64)>,
    /// The most per-cgroup rows at a scrape.
    rows_max: f64,
    /// The last exposition answered.
    last: String,
}

/// Scrapes /metrics every second for `minutes`, and the exporter's RSS
/// every 30 s (with a progress line).
fn watch(port: u16, pid: u32, minutes: u64, started: Instant, boxes: &AtomicU64) -> Samples {
    let end = Instant::now() + Duration::from_secs(minutes * 60);
    let mut s = Samples::default();
    let mut next_rss = Instant::now();
    while Instant::now() < end {
        let tick = Instant::now();
        match scrape(port) {
            Some((body, took)) => {
                s.latencies.push(took.as_secs_f64() * 1e3);
                s.rows_max = s
                    .rows_max
                    .max(value(&body, "vmtrace_cgroups").unwrap_or(0.0));
                s.last = body;
            }
            None => s.failed += 1,
        }
        if tick >= next_rss {
            if let Some(kib) = rss_kib(pid) {
                s.rss.push((started.elapsed().as_secs_f64() / 60.0, kib));
            }
            next_rss = tick + Duration::from_secs(30);
            eprint!(
                "\rsoak: {:.1} of {minutes} min, {} boxes, {} scrapes, RSS {} KiB   ",
                started.elapsed().as_secs_f64() / 60.0,
                boxes.load(Ordering::Relaxed),
                s.latencies.len(),
                s.rss.last().map_or(0, |r| r.1)
            );
        }
        std::thread::sleep(Duration::from_secs(1).saturating_sub(tick.elapsed()));
    }
    s
}

/// soak.md: what ran, the measures, the RSS samples.
fn report(
    mut s: Samples,
    boxes: u64,
    minutes: u64,
    listen: &str,
    status: ExitStatus,
) -> Result<String> {
    let mut md = String::new();
    writeln!(md, "## Serve soak ({minutes} min)")?;
    writeln!(md)?;
    writeln!(
        md,
        "`vmtrace attach --serve {listen} --max-cgroups {MAX_CGROUPS}` system-wide; \
         memory boxes created and removed back to back (`vmtrace run --no-probes --mem 24M \
         --swap 64M -- memhog --mib 32`), each a cgroup whose hog stalls in memcg reclaim; \
         /metrics scraped every second."
    )?;
    writeln!(md)?;
    writeln!(md, "| measure | value |")?;
    writeln!(md, "|---|---|")?;
    writeln!(md, "| boxes (cgroups created and removed) | {boxes} |")?;
    latency_rows(&mut md, &mut s.latencies, s.failed)?;
    rss_rows(&mut md, &s.rss)?;
    writeln!(
        md,
        "| most per-cgroup rows at a scrape (cap {MAX_CGROUPS}) | {} |",
        s.rows_max
    )?;
    for name in [
        "vmtrace_cgroups_expired_total",
        "vmtrace_cgroup_stalls_folded_total",
    ] {
        writeln!(md, "| {name} | {} |", value(&s.last, name).unwrap_or(0.0))?;
    }
    let lost: Vec<String> = LOSS_COUNTERS
        .iter()
        .map(|c| {
            format!(
                "{c} {}",
                value(&s.last, &format!("vmtrace_{c}_total")).unwrap_or(0.0)
            )
        })
        .collect();
    writeln!(md, "| lost or unpaired events | {} |", lost.join(", "))?;
    writeln!(md, "| exit on SIGTERM | {status} |")?;
    writeln!(md)?;
    writeln!(md, "RSS samples (minute, KiB), every 30 s:")?;
    writeln!(md)?;
    let samples: Vec<String> = s.rss.iter().map(|(m, k)| format!("{m:.1}:{k}")).collect();
    writeln!(md, "{}", samples.join(" "))?;
    Ok(md)
}

/// The scrape rows: answered and failed, latency quantiles, and whether
/// latency grew (nothing may grow per scrape: the first tenth's median
/// against the last tenth's). Sorts `latencies`.
fn latency_rows(md: &mut String, latencies: &mut [f64], failed: u64) -> Result<()> {
    let tenth = (latencies.len() / 10).max(1);
    let p50_of = |part: &[f64]| {
        let mut v = part.to_vec();
        v.sort_by(f64::total_cmp);
        quantile(&v, 0.5)
    };
    let first_p50 = p50_of(&latencies[..tenth.min(latencies.len())]);
    let last_p50 = p50_of(&latencies[latencies.len().saturating_sub(tenth)..]);
    latencies.sort_by(f64::total_cmp);
    writeln!(
        md,
        "| scrapes answered / failed | {} / {failed} |",
        latencies.len()
    )?;
    writeln!(
        md,
        "| scrape latency p50 / p99 / max (ms) | {:.2} / {:.2} / {:.2} |",
        quantile(latencies, 0.5),
        quantile(latencies, 0.99),
        latencies.last().copied().unwrap_or(0.0)
    )?;
    writeln!(
        md,
        "| scrape latency p50, first / last tenth of the run (ms) | {first_p50:.2} / {last_p50:.2} |"
    )?;
    Ok(())
}

/// The exporter's RSS rows: its range after the first 2 minutes
/// (start-up, first walks) to the end, and at start and end.
fn rss_rows(md: &mut String, rss: &[(f64, u64)]) -> Result<()> {
    let steady: Vec<u64> = rss.iter().filter(|r| r.0 >= 2.0).map(|r| r.1).collect();
    let (lo, hi) = (
        steady.iter().copied().min().unwrap_or(0),
        steady.iter().copied().max().unwrap_or(0),
    );
    writeln!(
        md,
        "| RSS from minute 2 on, min / max (KiB) | {lo} / {hi} ({:+.1}%) |",
        if lo > 0 {
            (hi as f64 / lo as f64 - 1.0) * 100.0
        } else {
            0.0
        }
    )?;
    writeln!(
        md,
        "| RSS at start / end (KiB) | {} / {} |",
        rss.first().map_or(0, |r| r.1),
        rss.last().map_or(0, |r| r.1)
    )?;
    Ok(())
}
