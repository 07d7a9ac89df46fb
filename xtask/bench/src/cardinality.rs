//! `cargo xtask bench --cardinality N`: the exporter at its default cap
//! (256 per-cgroup rows) while N cgroups, one after another, stall in
//! memcg reclaim (each reads a 48 MiB file under a 16 MiB limit) and are
//! left in place, so that every row stays: the series a scrape holds,
//! its size and latency, the exporter's RSS, the stalls folded into
//! `cgroup="(other)"` past the cap, and what `promtool check metrics`
//! says of the exposition; once with `--cgroup-buckets fine` (the
//! default) and once with `coarse`. Writes cardinality.md.

use std::{
    collections::BTreeSet,
    fmt::Write as _,
    io::Write as _,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use anyhow::{Context, Result, bail};

use crate::{
    soak::{free_port, rss_kib, scrape, start_serve, value},
    stats::quantile,
};

/// The cgroups' parent, under each hierarchy's root.
const PARENT: &str = "vmtrace-bench-cardinality";
/// The limit the readers stall against, and what each reads.
const LIMIT: &str = "16777216";
const FILE_MIB: usize = 48;

/// Where the cgroups are made: cgroup v2 with its memory controller (a
/// parent with memory.max, a child per reader: an ancestor's limit is
/// booked to the leaf), or the hybrid layout (a v1 memory cgroup all
/// readers share, a v2 directory per reader for its row).
enum Layout {
    Unified { parent: PathBuf },
    Hybrid { memory: PathBuf, parent: PathBuf },
}

impl Layout {
    fn make() -> Result<Layout> {
        let root = Path::new("/sys/fs/cgroup");
        let controllers =
            std::fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default();
        let layout = if controllers.split_whitespace().any(|c| c == "memory") {
            let parent = root.join(PARENT);
            std::fs::create_dir(&parent)
                .with_context(|| format!("creating {} (left from a bench?)", parent.display()))?;
            std::fs::write(parent.join("memory.max"), LIMIT).context("memory.max")?;
            Layout::Unified { parent }
        } else if root.join("memory/memory.limit_in_bytes").is_file()
            && root.join("unified/cgroup.procs").is_file()
        {
            let memory = root.join("memory").join(PARENT);
            let parent = root.join("unified").join(PARENT);
            for d in [&memory, &parent] {
                std::fs::create_dir(d)
                    .with_context(|| format!("creating {} (left from a bench?)", d.display()))?;
            }
            std::fs::write(memory.join("memory.limit_in_bytes"), LIMIT)
                .context("memory.limit_in_bytes")?;
            Layout::Hybrid { memory, parent }
        } else {
            bail!("no cgroup v2 memory controller and no hybrid v1 memory + v2 layout here");
        };
        Ok(layout)
    }

    fn parent(&self) -> &Path {
        match self {
            Layout::Unified { parent } | Layout::Hybrid { parent, .. } => parent,
        }
    }

    /// Cgroup `i` reads `file` (its page cache dropped first, so that
    /// every page is charged to the reader's memory cgroup anew).
    fn read_in(&self, i: usize, file: &Path) -> Result<()> {
        let dir = self.parent().join(format!("c{i}"));
        std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        // The paths go to sh as arguments, never into the script.
        let v1_tasks = match self {
            Layout::Hybrid { memory, .. } => memory.join("tasks"),
            Layout::Unified { .. } => PathBuf::new(),
        };
        let status = Command::new("sh")
            .arg("-c")
            .arg(
                "echo $$ > \"$1\" && { [ -z \"$2\" ] || echo $$ > \"$2\"; } && \
                 dd if=\"$3\" iflag=nocache count=0 2>/dev/null; \
                 exec dd if=\"$3\" of=/dev/null bs=1M 2>/dev/null",
            )
            .arg("sh")
            .arg(dir.join("cgroup.procs"))
            .arg(&v1_tasks)
            .arg(file)
            .status()
            .context("running sh")?;
        if !status.success() {
            bail!("reader {i} failed: {status}");
        }
        Ok(())
    }

    /// Removes every reader's cgroup and the parents (the readers have
    /// exited; a v1 memory cgroup's cached pages are reparented).
    fn remove(&self) {
        let parent = self.parent();
        if let Ok(entries) = std::fs::read_dir(parent) {
            for e in entries.flatten() {
                if e.path().is_dir() {
                    let _ = std::fs::remove_dir(e.path());
                }
            }
        }
        let _ = std::fs::remove_dir(parent);
        if let Layout::Hybrid { memory, .. } = self {
            let _ = std::fs::remove_dir(memory);
        }
    }
}

/// What the scrapes after the readers saw.
struct Measured {
    rows: f64,
    distinct: usize,
    folded: f64,
    series: usize,
    bytes: usize,
    p50_ms: f64,
    max_ms: f64,
    rss_kib: u64,
    promtool: String,
}

pub fn cardinality(vmtrace: &Path, cgroups: usize, out: &Path) -> Result<()> {
    let scratch = out.join("cardinality-scratch");
    std::fs::create_dir_all(&scratch)?;
    let file = scratch.join("read-me");
    let mut f = std::fs::File::create(&file)?;
    let chunk: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
    for _ in 0..FILE_MIB {
        f.write_all(&chunk)?;
    }
    f.sync_all()?;
    drop(f);
    let mut rows = Vec::new();
    for buckets in ["fine", "coarse"] {
        let layout = Layout::make()?;
        let measured = measure(vmtrace, &layout, buckets, cgroups, &file, out);
        layout.remove();
        rows.push((buckets, measured?));
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let md = report(cgroups, &rows)?;
    let path = out.join("cardinality.md");
    std::fs::write(&path, &md)?;
    print!("{md}");
    eprintln!("bench: cardinality results in {}", path.display());
    Ok(())
}

/// One exporter with `--cgroup-buckets BUCKETS`, the readers, then 20
/// scrapes a second apart; the exporter is stopped whatever happens.
fn measure(
    vmtrace: &Path,
    layout: &Layout,
    buckets: &str,
    cgroups: usize,
    file: &Path,
    out: &Path,
) -> Result<Measured> {
    let port = free_port()?;
    let listen = format!("127.0.0.1:{port}");
    let what = format!("cardinality-{buckets}");
    let (mut serve, _) = start_serve(
        vmtrace,
        port,
        &["--serve", &listen, "--cgroup-buckets", buckets],
        out,
        &what,
    )?;
    let result = readers_then_scrapes(layout, buckets, cgroups, file, port, serve.id(), out);
    // SAFETY: a signal to the child started above.
    unsafe { libc::kill(serve.id() as i32, libc::SIGTERM) };
    let _ = serve.wait();
    result
}

/// The readers, one after another, then 20 scrapes a second apart.
fn readers_then_scrapes(
    layout: &Layout,
    buckets: &str,
    cgroups: usize,
    file: &Path,
    port: u16,
    pid: u32,
    out: &Path,
) -> Result<Measured> {
    for i in 0..cgroups {
        layout.read_in(i, file)?;
        if i % 10 == 9 {
            eprint!(
                "\rcardinality ({buckets}): {} of {cgroups} cgroups   ",
                i + 1
            );
        }
    }
    eprintln!();
    // The cgroup tree is walked every 5 s: every row named.
    std::thread::sleep(Duration::from_secs(6));
    let mut latencies = Vec::new();
    let mut body = String::new();
    for _ in 0..20 {
        let (b, took) = scrape(port).context("a scrape was not answered")?;
        latencies.push(took.as_secs_f64() * 1e3);
        body = b;
        std::thread::sleep(Duration::from_secs(1));
    }
    latencies.sort_by(f64::total_cmp);
    let exposition = out.join(format!("cardinality-{buckets}.prom"));
    std::fs::write(&exposition, &body)?;
    Ok(Measured {
        rows: value(&body, "vmtrace_cgroups").unwrap_or(0.0),
        distinct: distinct_cgroups(&body),
        folded: value(&body, "vmtrace_cgroup_stalls_folded_total").unwrap_or(0.0),
        series: body
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .count(),
        bytes: body.len(),
        p50_ms: quantile(&latencies, 0.5),
        max_ms: latencies.last().copied().unwrap_or(0.0),
        rss_kib: rss_kib(pid).unwrap_or(0),
        promtool: promtool(&body),
    })
}

/// The cgroups with a memcg stall histogram of their own in `body`.
fn distinct_cgroups(body: &str) -> usize {
    body.lines()
        .filter_map(|l| {
            l.strip_prefix("vmtrace_cgroup_memcg_reclaim_seconds_count{cgroup=\"")?
                .split('"')
                .next()
        })
        .collect::<BTreeSet<_>>()
        .len()
}

/// `promtool check metrics` on the exposition (the copy setup unpacks
/// beside Prometheus, which xtask names in VMTRACE_PROMETHEUS as it does
/// for the exporter's test): "ok", or its first complaint.
fn promtool(body: &str) -> String {
    let Some(prometheus) = std::env::var_os("VMTRACE_PROMETHEUS") else {
        return "not checked (VMTRACE_PROMETHEUS unset: run through cargo xtask bench)".into();
    };
    let tool = PathBuf::from(prometheus).with_file_name("promtool");
    let child = Command::new(&tool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        return format!("{} did not start", tool.display());
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(body.as_bytes());
    }
    match child.wait_with_output() {
        Ok(o) if o.status.success() => "ok".into(),
        Ok(o) => {
            let said = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            format!("{}: {}", o.status, said.lines().next().unwrap_or(""))
        }
        Err(e) => format!("{e}"),
    }
}

fn report(cgroups: usize, rows: &[(&str, Measured)]) -> Result<String> {
    let mut md = String::new();
    writeln!(
        md,
        "## Exporter cardinality (`cargo xtask bench --cardinality {cgroups}`)"
    )?;
    writeln!(md)?;
    writeln!(
        md,
        "`vmtrace attach --serve` at the default cap (`--max-cgroups 256`) while \
         {cgroups} cgroups, one after another, read a {FILE_MIB} MiB file under a 16 MiB \
         memory limit (memcg reclaim in each) and stay, so that each keeps its row; then \
         20 scrapes a second apart."
    )?;
    writeln!(md)?;
    writeln!(
        md,
        "| --cgroup-buckets | rows (histograms) | stalls folded | series | bytes | \
         scrape p50 / max (ms) | RSS (KiB) | promtool |"
    )?;
    writeln!(md, "|---|---|---|---|---|---|---|---|")?;
    for (buckets, m) in rows {
        writeln!(
            md,
            "| {buckets} | {} ({}) | {} | {} | {} | {:.1} / {:.1} | {} | {} |",
            m.rows,
            m.distinct,
            m.folded,
            m.series,
            m.bytes,
            m.p50_ms,
            m.max_ms,
            m.rss_kib,
            m.promtool
        )?;
    }
    Ok(md)
}
