//! `compare --prometheus` against a real Prometheus (the one `cargo
//! xtask setup` unpacks; `VMTRACE_PROMETHEUS` names it, else
//! `$CARGO_HOME/vmtrace-prometheus`): every bad input is refused in one
//! line with exit 125, and the shipped recording rules pass `promtool
//! check rules`. Prometheus scrapes a small exposition served by this
//! test (three instances of `vmtrace_build_info`) every second; the
//! comparison of real exporters is the kernel test `fleet`.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

const VMTRACE: &str = env!("CARGO_BIN_EXE_vmtrace");

fn prometheus() -> Option<PathBuf> {
    let p = std::env::var_os("VMTRACE_PROMETHEUS")
        .map(PathBuf::from)
        .or_else(|| {
            let home = std::env::var_os("CARGO_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))?;
            Some(home.join("vmtrace-prometheus/usr/bin/prometheus"))
        })?;
    if p.exists() {
        Some(p)
    } else {
        eprintln!(
            "SKIPPED: no Prometheus at {} (cargo xtask setup)",
            p.display()
        );
        None
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Serves one exposition to every scrape, forever (the test's thread).
fn expose(body: &'static str) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = l.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

fn compare(url: &str, args: &[&str]) -> Output {
    Command::new(VMTRACE)
        .args(["compare", "--prometheus", url, "--range", "5m"])
        .args(args)
        .output()
        .expect("vmtrace runs")
}

fn one_line_refusal(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).trim_end().to_string();
    assert_eq!(o.status.code(), Some(125), "{err}");
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    assert!(o.stdout.is_empty());
    err
}

/// `promtool ARGS` in docs/prometheus: it succeeds and says SUCCESS.
fn promtool_succeeds(p: &Path, args: &[&str]) {
    let o = Command::new(p.with_file_name("promtool"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/prometheus"))
        .output()
        .expect("promtool runs");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("SUCCESS"), "{out}");
}

#[test]
fn the_recording_rules_pass_promtool() {
    let Some(p) = prometheus() else { return };
    promtool_succeeds(&p, &["check", "rules", "vmtrace-compare.rules.yml"]);
}

/// The rules on series shaped as vmtrace exports them: the sums of two
/// families (memcg + direct stall time, anon + file refaults) per host
/// and the per-kernel means (vmtrace-compare.rules.test.yml).
#[test]
fn the_recording_rules_compute_on_series() {
    let Some(p) = prometheus() else { return };
    promtool_succeeds(&p, &["test", "rules", "vmtrace-compare.rules.test.yml"]);
}

#[test]
fn bad_inputs_are_refused_in_one_line() {
    let Some(p) = prometheus() else { return };
    // Port 1 (tcpmux) has no listener here: a port found free and
    // closed again could be taken by another test in between (a reset
    // instead of a refusal, seen once).
    let dead = 1;
    let e = one_line_refusal(&compare(
        &format!("http://127.0.0.1:{dead}"),
        &["--group", "kernel=~\"6.1.*\"", "--vs", "kernel=~\"6.12.*\""],
    ));
    assert!(
        e.contains(&format!("Prometheus at 127.0.0.1:{dead} unreachable")),
        "{e}"
    );
    let e = one_line_refusal(&compare(
        "http://127.0.0.1:1",
        &["--group", "kernel", "--vs", "k=\"x\""],
    ));
    assert!(e.contains("not a label matcher"), "{e}");
    let e = one_line_refusal(&compare(
        "https://x",
        &["--group", "k=\"a\"", "--vs", "k=\"b\""],
    ));
    assert!(e.contains("https is not supported"), "{e}");

    let exporter = expose(
        "# HELP vmtrace_build_info vmtrace\n# TYPE vmtrace_build_info gauge\n\
         vmtrace_build_info{version=\"test\",kernel=\"6.1.0\"} 1\n",
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fleet-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{scrape_interval: 1s}}\nscrape_configs:\n  - job_name: vmtrace\n    \
             static_configs:\n      - targets: ['127.0.0.1:{exporter}', 'localhost:{exporter}', \
             '[::1]:{exporter}', '127.0.0.2:{exporter}']\n        labels: {{rollout: canary}}\n"
        ),
    )
    .expect("the config");
    let port = free_port();
    let _server = Killed(
        Command::new(&p)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("prometheus starts"),
    );
    let url = format!("http://127.0.0.1:{port}");
    let canary = ["--group", "rollout=\"canary\"", "--vs", "kernel=\"6.1.0\""];
    // Until the first scrapes are stored.
    let start = Instant::now();
    let too_large = loop {
        let o = compare(&url, &[&canary[..], &["--max-series", "1"]].concat());
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        if err.contains("result too large") || start.elapsed() > Duration::from_secs(30) {
            break o;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    let e = one_line_refusal(&too_large);
    assert!(
        e.contains("result too large") && e.contains("limit of 1"),
        "{e}"
    );
    let e = one_line_refusal(&compare(
        &url,
        &["--group", "kernel=\"9.9\"", "--vs", "kernel=\"6.1.0\""],
    ));
    assert!(
        e.contains("selects no host") && e.contains(&format!("127.0.0.1:{port}")),
        "{e}"
    );
    let e = one_line_refusal(&compare(
        &url,
        &[&canary[..], &["--at", "not-a-time"]].concat(),
    ));
    assert!(e.contains("answered 400"), "{e}");
    // Selected, but without a reclaim series: said missing, not judged.
    let o = compare(&url, &canary);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("without vmtrace's series in the"), "{text}");
    assert!(
        text.contains("not judged") || text.contains("cannot be judged"),
        "{text}"
    );
    assert!(
        text.lines().all(|l| l.len() <= 72 && l.is_ascii()),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
