//! `vmtrace attach`: trace a job that is already running. Targets are
//! processes (`--pid`, `--comm`) with their descendants, forked ones
//! included (followed in the kernel from their first instruction), and
//! cgroups (`--cgroup`: a v2 cgroup by id, a v1 cgroup by the processes in
//! it and what they fork); none means every task. Stops on Ctrl-C,
//! SIGTERM or SIGHUP, after `--duration`, or when every target has exited.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use vmtrace_common::Target;

use crate::{
    host::{cgroupfs, privilege, proc},
    kernel::probes,
    model::report::{Exit, RunReport},
    session::interrupt::{Signals, runtime_with_signals},
    session::preflight,
    session::progress::{PROGRESS_HEADER, Progress},
    session::run_options::ProbeOptions,
    session::serve,
    session::tracer::{Tracer, Watch, Window},
};

#[derive(Clone, Debug, Default)]
pub struct AttachOptions {
    pub pids: Vec<u32>,
    pub cgroups: Vec<PathBuf>,
    pub comms: Vec<String>,
    pub duration: Option<Duration>,
    /// Print a compact line this often (like `vmstat 1`).
    pub lines: Option<Duration>,
    /// Time-series sampling interval.
    pub interval: Duration,
    /// As for `run`.
    pub probes: ProbeOptions,
    pub progress: Option<Progress>,
    /// Serve /metrics (`--serve`): run until stopped, whatever the
    /// targets do.
    pub serve: Option<serve::ServeOptions>,
}

/// What the options name, resolved against the running system.
#[derive(Debug, Default)]
pub struct Targets {
    pub target: Target,
    /// Processes to follow from the start (and their descendants).
    pub seed: Vec<u32>,
    /// A v2 cgroup whose emptiness ends the trace.
    pub cgroup_dir: Option<PathBuf>,
    pub text: String,
}

pub fn resolve(opts: &AttachOptions) -> Result<Targets> {
    let mut t = Targets {
        target: Target::EVERY_TASK,
        ..Default::default()
    };
    let mut what = Vec::new();
    for &pid in &opts.pids {
        if pid == 0 || !proc::pid_exists(pid) {
            bail!("no process with pid {pid}; check it with `ps -p {pid}` (it may have exited)");
        }
        t.seed.push(pid);
        what.push(format!("pid {pid}"));
    }
    for name in &opts.comms {
        let found = processes_named(name);
        if found.is_empty() {
            bail!(
                "no process named {name}: give the name `ps -o comm` shows \
                 (at most 15 characters)"
            );
        }
        what.push(format!("{name} ({} processes)", found.len()));
        t.seed.extend(found);
    }
    for dir in &opts.cgroups {
        if !cgroupfs::is_cgroup(dir) {
            bail!(
                "{} is not a cgroup (it has no cgroup.procs); give a directory under \
                 /sys/fs/cgroup",
                dir.display()
            );
        }
        if cgroupfs::is_cgroup2(dir) && t.target.cgroup_id == 0 {
            let id =
                cgroupfs::cgroup_id(dir).with_context(|| format!("reading {}", dir.display()))?;
            t.target.cgroup_id = id;
            t.target.cgroup_level = cgroupfs::cgroup_level(dir)
                .with_context(|| format!("reading {}", dir.display()))?;
            t.cgroup_dir = Some(dir.clone());
            what.push(format!("cgroup {} (id {id})", dir.display()));
        } else {
            // A v1 cgroup (or a second v2 one): its processes now and
            // what they fork.
            let procs = cgroupfs::cgroup_procs(dir);
            what.push(format!(
                "the {} processes of cgroup {}",
                procs.len(),
                dir.display()
            ));
            t.seed.extend(procs);
        }
    }
    if !t.seed.is_empty() {
        t.seed = with_descendants(&t.seed);
        t.target.by_pid = 1;
    }
    t.text = if what.is_empty() {
        "every task (system-wide)".into()
    } else {
        format!("{} and their descendants", what.join(", "))
    };
    Ok(t)
}

/// Every process: (pid, parent pid, comm), from /proc/*/stat.
fn process_table() -> Vec<(u32, u32, String)> {
    proc::processes()
        .into_iter()
        .map(|(pid, s)| (pid, s.ppid, s.comm))
        .collect()
}

fn processes_named(name: &str) -> Vec<u32> {
    process_table()
        .into_iter()
        .filter(|(_, _, comm)| comm == name)
        .map(|(pid, _, _)| pid)
        .collect()
}

/// The roots and every process below them.
pub fn with_descendants(roots: &[u32]) -> Vec<u32> {
    descendants_in(roots, &process_table())
}

fn descendants_in(roots: &[u32], table: &[(u32, u32, String)]) -> Vec<u32> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for &(pid, ppid, _) in table {
        children.entry(ppid).or_default().push(pid);
    }
    let mut seen: BTreeSet<u32> = BTreeSet::new();
    let mut stack: Vec<u32> = roots.to_vec();
    while let Some(p) = stack.pop() {
        if seen.insert(p) {
            stack.extend(children.get(&p).into_iter().flatten());
        }
    }
    seen.into_iter().collect()
}

/// Attaches, traces until told to stop or the targets are gone, and
/// returns the report of the window. The caller (`session::job`) has
/// checked for root; once attached, every capability but `keep` (what
/// the exit path needs: `privilege::needed_after_attach`) is dropped.
pub fn attach(opts: &AttachOptions, command: Vec<String>, keep: &[u32]) -> Result<RunReport> {
    let targets = resolve(opts)?;
    if let Some(s) = &opts.serve {
        serve::check(s)?;
    }
    // What a vmtrace killed with SIGKILL left (sysctls, boxes with their
    // workloads, swapfiles): attaching sweeps as a run does.
    preflight::clean_stale_box(Path::new(crate::host::swapfile::DEFAULT_SWAP_DIR))?;
    // Listen before attaching (an address in use fails with nothing
    // attached yet), and fork the HTTP server while the process has one
    // thread and nothing the server should hold: it runs as nobody.
    let mut server = opts.serve.as_ref().map(serve::start).transpose()?;
    let (rt, mut signals) = runtime_with_signals()?;
    let scrapes = match server.as_mut() {
        Some(s) => Some(s.scrapes(&rt)?),
        None => None,
    };
    let mut tracer = attach_tracer(opts, &targets)?;
    let window = Window::open(&mut tracer, opts.probes.bpf_stats)?;
    // Everything that needs privilege at start is done (links made, perf
    // events opened, tracefs unmounted, delay accounting on): what is
    // left reads maps and perf events through descriptors held, cgroupfs
    // and /proc, none of which checks a capability.
    if let Err(e) = privilege::drop_all_but(keep) {
        eprintln!("vmtrace: warning: capabilities not dropped ({e:#}); tracing goes on");
    }
    eprintln!("vmtrace: attached to {}", targets.text);
    let started = Instant::now();
    let mut watch = Watch::new(
        None,
        Some(&mut tracer.probes),
        opts.progress.unwrap_or(Progress::Quiet),
        opts.interval,
        &window.before,
    );
    if opts.serve.is_some() {
        // Days of serving keep the last hour of the time series.
        watch.max_samples = Some(SERVE_SAMPLES);
    }
    let why = rt.block_on(trace_until_stopped(
        opts,
        &targets,
        &mut signals,
        &mut watch,
        started,
        scrapes,
    ));
    watch.sample(started.elapsed().as_secs_f64());
    watch.clear_status();
    let samples = std::mem::take(&mut watch.samples);
    match why {
        Stop::Signal => eprintln!("vmtrace: stopping on the signal; detaching"),
        Stop::Duration => {}
        Stop::TargetsGone => eprintln!("vmtrace: every target has exited; detaching"),
        Stop::ServerGone => {
            eprintln!("vmtrace: the HTTP server process has ended; detaching")
        }
    }
    drop(server);
    // Stopped by a signal: detach at once (a second Ctrl-C then finds
    // nothing left to wait for).
    let settle = if matches!(why, Stop::Signal | Stop::ServerGone) {
        Duration::ZERO
    } else {
        Duration::from_secs(2)
    };
    let mut report = window.close_after(tracer, samples, settle)?;
    report.command = command;
    report.pid = opts.pids.first().copied().unwrap_or(0);
    report.target = targets.text;
    report.attached = true;
    report.exit = Exit {
        interrupted: matches!(why, Stop::Signal | Stop::ServerGone),
        ..Default::default()
    };
    Ok(report)
}

/// The probes, attached for the targets; processes to follow are
/// followed from now on, with children forked meanwhile.
fn attach_tracer(opts: &AttachOptions, targets: &Targets) -> Result<Tracer> {
    let mut opted_in = opts.probes.opted_in();
    if targets.target.by_pid != 0 {
        opted_in.push(probes::OptIn::FollowForks);
    }
    let max_cgroups = opts.serve.as_ref().map(|s| s.max_cgroups);
    let mut tracer = Tracer::attach(
        targets.target,
        &opted_in,
        max_cgroups,
        opts.probes.debug_probes,
    )?;
    if targets.target.by_pid != 0 {
        tracer.probes.follow(&targets.seed)?;
        // Children forked between the scan and the fork program: once more.
        tracer.probes.follow(&with_descendants(&targets.seed))?;
    }
    Ok(tracer)
}

/// Samples every interval (and prints a line every `--interval`) until a
/// signal, the end of `--duration`, or the last target's exit.
async fn trace_until_stopped(
    opts: &AttachOptions,
    targets: &Targets,
    signals: &mut Signals,
    watch: &mut Watch<'_>,
    started: Instant,
    mut scrapes: Option<tokio::sync::mpsc::Receiver<serve::Scrape>>,
) -> Stop {
    let mut exporter = opts
        .serve
        .as_ref()
        .map(|s| serve::Exporter::new(s.max_cgroups, s.coarse_cgroups));
    let start = tokio::time::Instant::now();
    let mut tick = tokio::time::interval_at(start + opts.interval, opts.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let lines = opts.lines.unwrap_or(Duration::from_secs(3600));
    let mut line_tick = tokio::time::interval_at(start + lines, lines);
    let until = start
        + opts
            .duration
            .unwrap_or(Duration::from_secs(u32::MAX as u64));
    if opts.lines.is_some() {
        eprintln!("vmtrace: {PROGRESS_HEADER}");
    }
    loop {
        tokio::select! {
            _ = signals.next() => return Stop::Signal,
            _ = tokio::time::sleep_until(until) => return Stop::Duration,
            _ = tick.tick() => {
                watch.sample(started.elapsed().as_secs_f64());
                watch.show_status();
                if opts.serve.is_none()
                    && watch.probes.as_deref().is_some_and(|p| !targets_alive(targets, p))
                {
                    return Stop::TargetsGone;
                }
            }
            scrape = next_scrape(&mut scrapes) => {
                let Some(scrape) = scrape else {
                    return Stop::ServerGone;
                };
                if let (Some(e), Some(p)) = (exporter.as_mut(), watch.probes.as_deref_mut()) {
                    scrape.answer(e, p);
                }
            }
            _ = line_tick.tick(), if opts.lines.is_some() => {
                watch.print_progress();
            }
        }
    }
}

/// Samples kept while serving (an hour at the default interval).
const SERVE_SAMPLES: usize = 3600;

/// The next scrape; never, without a server.
async fn next_scrape(
    scrapes: &mut Option<tokio::sync::mpsc::Receiver<serve::Scrape>>,
) -> Option<serve::Scrape> {
    match scrapes {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

enum Stop {
    Signal,
    Duration,
    TargetsGone,
    /// The HTTP server process ended (killed, or it could not drop root).
    ServerGone,
}

/// Whether any target can still run: a followed process alive, or a
/// process in the v2 cgroup or below it. System-wide never ends by
/// itself.
fn targets_alive(t: &Targets, probes: &probes::Probes) -> bool {
    if t.target.by_pid == 0 && t.cgroup_dir.is_none() {
        return true;
    }
    if let Some(dir) = &t.cgroup_dir
        && cgroupfs::populated(dir)
    {
        return true;
    }
    t.target.by_pid != 0 && probes.followed().iter().any(|&pid| proc::pid_exists(pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descendants_follow_the_tree() {
        let table = vec![
            (1, 0, "init".into()),
            (10, 1, "make".into()),
            (11, 10, "sh".into()),
            (12, 11, "cc1".into()),
            (20, 1, "other".into()),
        ];
        assert_eq!(descendants_in(&[10], &table), vec![10, 11, 12]);
        assert_eq!(descendants_in(&[12], &table), vec![12]);
    }

    #[test]
    fn bad_targets_are_one_line_errors() {
        let e = |o: AttachOptions| format!("{:#}", resolve(&o).expect_err("refused"));
        let msg = e(AttachOptions {
            pids: vec![u32::MAX - 1],
            ..Default::default()
        });
        assert!(msg.starts_with("no process with pid"), "{msg}");
        let msg = e(AttachOptions {
            comms: vec!["no-such-comm-xy".into()],
            ..Default::default()
        });
        assert!(msg.starts_with("no process named no-such-comm-xy"), "{msg}");
        let msg = e(AttachOptions {
            cgroups: vec!["/tmp".into()],
            ..Default::default()
        });
        assert!(msg.contains("/tmp is not a cgroup"), "{msg}");
        assert!(!msg.contains('\n'));
        let me = resolve(&AttachOptions {
            pids: vec![std::process::id()],
            ..Default::default()
        })
        .expect("our own pid");
        assert!(me.seed.contains(&std::process::id()));
        assert_eq!(me.target.by_pid, 1);
    }
}
