//! `vmtrace run`: set up the box, attach the probes, run the command in
//! the box, wait for it (forwarding signals, printing progress), read
//! what was measured, tear everything down, and build the report.

use std::{
    ffi::OsString,
    io,
    os::unix::process::CommandExt,
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, anyhow, bail};
use tokio::signal::unix::{Signal, SignalKind, signal};
use vmtrace_common::Target;

use crate::{
    host::membox::{self, BoxSpec, MemBox},
    host::privilege,
    host::proc::kernel_release,
    host::swapdev,
    kernel::collect,
    kernel::probes,
    kernel::tracefs::TraceFs,
    model::histogram,
    model::report::{CollectorCost, Exit, ProgramCost, RunReport, Unavailable, Usage, VmstatDelta},
    model::sample,
    model::vmstat::VmStat,
};

/// Environment variable naming a directory of tracefs `format` files to
/// resolve fields from instead of the live tracefs (portability tests).
pub const FORMATS_ENV: &str = "VMTRACE_TRACEFS_FORMATS";

#[derive(Clone, Debug)]
pub struct RunOptions {
    pub command: Vec<OsString>,
    /// How reports name the command when it is not `command` itself (a
    /// bundled workload: `qsbench -m 350`, not `vmtrace workload ...`).
    pub label: Option<Vec<String>>,
    pub spec: BoxSpec,
    pub fault_latency: bool,
    /// Count page allocations per zone (a hot path).
    pub page_alloc: bool,
    /// Report each program's runs and run time (kernel.bpf_stats_enabled).
    pub bpf_stats: bool,
    /// Attach nothing: the same box and command, untraced (the baseline
    /// that vmtrace's own cost, or another tracer's, is measured against).
    pub no_probes: bool,
    /// Run the command as root under sudo (otherwise it runs as the user
    /// who ran sudo).
    pub as_root: bool,
    /// How to show progress on stderr while the command runs.
    pub progress: Progress,
    /// Time-series sampling interval.
    pub interval: Duration,
}

/// Progress while the command runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Progress {
    /// None at all.
    Quiet,
    /// One status line, rewritten in place every sample (a terminal).
    Tty,
    /// A plain line this often (logs, CI).
    Plain(Duration),
}

impl Progress {
    /// What `--progress MODE` means here: `auto` is a status line on a
    /// terminal and a plain line every 10 s otherwise.
    pub fn from_mode(mode: &str, stderr_is_tty: bool) -> Progress {
        match mode {
            "none" => Progress::Quiet,
            "tty" => Progress::Tty,
            "plain" => Progress::Plain(Duration::from_secs(10)),
            _ if stderr_is_tty => Progress::Tty,
            _ => Progress::Plain(Duration::from_secs(10)),
        }
    }
}

pub struct RunOutcome {
    pub report: RunReport,
    /// What vmtrace should exit with: the command's status, or 128+signal.
    pub exit_code: i32,
}

/// A bundled workload named by its bare name (`vmtrace run qsbench`) runs
/// from this very binary (`vmtrace workload qsbench ...`), with its default
/// arguments and box when none are given. Anything else runs as is.
pub fn resolve_bundled(opts: &RunOptions) -> Result<RunOptions> {
    let Some(b) = opts
        .command
        .first()
        .and_then(|c| c.to_str())
        .and_then(vmtrace_workloads::cli::bundled)
    else {
        return Ok(opts.clone());
    };
    let mut o = opts.clone();
    let exe = std::env::current_exe().context("finding the vmtrace binary")?;
    let mut command: Vec<OsString> = vec![exe.into(), "workload".into(), b.name.into()];
    if opts.command.len() > 1 {
        command.extend(opts.command[1..].iter().cloned());
    } else {
        command.extend(b.default_args.iter().map(OsString::from));
    }
    o.label = Some(
        std::iter::once(b.name.to_string())
            .chain(
                command[3..]
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned()),
            )
            .collect(),
    );
    o.command = command;
    if o.spec.mem_limit.is_none() && o.spec.swap.is_none() {
        o.spec.mem_limit = b.default_mem;
        o.spec.swap = b.default_swap;
    }
    if let Some(mem) = o.spec.mem_limit
        && mem < b.min_mem
    {
        bail!(
            "--mem {} is too small for {}: it needs at least {} to start",
            crate::model::units::human(mem),
            b.name,
            crate::model::units::human(b.min_mem)
        );
    }
    eprintln!(
        "vmtrace: {}: box {}, swapfile {}, arguments: {}",
        b.name,
        o.spec
            .mem_limit
            .map_or("without a limit".into(), crate::model::units::human),
        o.spec
            .swap
            .map_or("none".into(), crate::model::units::human),
        o.command[3..]
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    Ok(o)
}

/// What a recording names as the workload: a bundled workload with its
/// arguments (defaults filled in) and seed, or the command as given.
pub fn workload_of(opts: &RunOptions) -> crate::model::recording::Workload {
    let args: Vec<String> = opts
        .command
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let first = opts
        .command
        .first()
        .map(|c| c.to_string_lossy().into_owned());
    let first = first.unwrap_or_default();
    match vmtrace_workloads::cli::bundled(&first) {
        Some(b) => {
            let arguments: Vec<String> = if args.is_empty() {
                b.default_args.iter().map(|a| a.to_string()).collect()
            } else {
                args
            };
            let argv = std::iter::once(b.name.to_string())
                .chain(arguments.iter().cloned())
                .map(OsString::from)
                .collect();
            crate::model::recording::Workload {
                name: b.name.into(),
                seed: (b.seed)(argv),
                arguments,
            }
        }
        None => crate::model::recording::Workload {
            // The program's name; its path is in each run's command.
            name: Path::new(&first)
                .file_name()
                .map_or(first.clone(), |n| n.to_string_lossy().into_owned()),
            arguments: args,
            seed: None,
        },
    }
}

/// Expands a sweep: a bundled workload's sweep flag given a comma list
/// (`build -j 2,4`) becomes one set of options per value, labelled by
/// flag and value (`-j2`). Anything else is one unlabelled set.
pub fn sweep(opts: &RunOptions) -> Result<Vec<(String, RunOptions)>> {
    let flag = opts
        .command
        .first()
        .and_then(|c| c.to_str())
        .and_then(vmtrace_workloads::cli::bundled)
        .and_then(|b| b.sweep_flag);
    let Some(flag) = flag else {
        return Ok(vec![(String::new(), opts.clone())]);
    };
    let Some(pos) = opts.command.iter().position(|a| a.to_str() == Some(flag)) else {
        return Ok(vec![(String::new(), opts.clone())]);
    };
    let Some(list) = opts.command.get(pos + 1).and_then(|v| v.to_str()) else {
        bail!("{flag} needs a value, like {flag} 5 or {flag} 5,10,15");
    };
    let mut out = Vec::new();
    for value in list.split(',') {
        let value = value.trim();
        if value.is_empty() || value.parse::<u32>().map_or(true, |v| v == 0) {
            bail!("{flag} {list}: each value must be a number of at least 1, like {flag} 5,10,15");
        }
        let mut o = opts.clone();
        o.command[pos + 1] = OsString::from(value);
        out.push((format!("{flag}{value}"), o));
    }
    Ok(out)
}

pub fn run(opts: &RunOptions) -> Result<RunOutcome> {
    privilege::require()?;
    let opts = &resolve_bundled(opts)?;
    let program = opts.command.first().ok_or_else(|| {
        anyhow!("no command given; usage: vmtrace run [OPTIONS] -- COMMAND [ARGS]")
    })?;
    check_command_exists(program)?;
    let identity = privilege::command_identity(opts.as_root)?;
    if let Some(mem) = opts.spec.mem_limit
        && opts.spec.swap.is_none()
        && swapdev::SwapLayout::read().is_ok_and(|l| l.areas.is_empty())
    {
        eprintln!(
            "vmtrace: note: no swap is active: the command will be OOM-killed rather \
             than swap if it outgrows --mem {} (add --swap SIZE to swap)",
            crate::model::units::human(mem)
        );
    }

    let mut stale = crate::host::sysctl::restore_stale();
    stale.extend(membox::clean_stale(&opts.spec.swap_dir));
    if !stale.is_empty() {
        eprintln!(
            "vmtrace: removed what a vmtrace that died left behind: {}",
            stale.join(", ")
        );
    }

    // Signals are caught from here on, so that Ctrl-C during setup still
    // tears down what was set up.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let mut signals = rt.block_on(async { Signals::new() })?;

    let membox = MemBox::create(&opts.spec)?;
    let (target, target_text) = match membox.v2_cgroup() {
        Some(cg) => {
            let id = cg.id()?;
            (
                Target {
                    cgroup_id: id,
                    ..Target::EVERY_TASK
                },
                format!("the command's tasks (cgroup {}, id {id})", cg.dir.display()),
            )
        }
        None => (
            Target::EVERY_TASK,
            "every task (this machine has no cgroup v2 to tell the command's apart)".into(),
        ),
    };
    let mut opted_in = Vec::new();
    if opts.fault_latency {
        opted_in.push(probes::OptIn::FaultLatency);
    }
    if opts.page_alloc {
        opted_in.push(probes::OptIn::PageAlloc);
    }
    // vmtrace's own CPU time and memory are measured from here, so that
    // loading and verifying the programs count.
    let self_before = self_usage();
    // After the box: its swapfile is one of the areas.
    let attach_started = Instant::now();
    let mut tracer = if opts.no_probes {
        None
    } else {
        Some(Tracer::attach(target, &opted_in)?)
    };
    let attach_s = attach_started.elapsed().as_secs_f64();
    if rt.block_on(signals.pending()).is_some() {
        bail!("interrupted before the command started; nothing was left behind");
    }

    let window = if opts.no_probes {
        Window::open_untraced()?
    } else {
        Window::open(opts.bpf_stats)?
    };
    let pid = spawn(&opts.command, &membox, identity.as_ref())?;
    let mut watch = Watch {
        membox: Some(&membox),
        probes: tracer.as_mut().map(|t| &mut t.probes),
        progress: opts.progress,
        interval: opts.interval,
        vmstat_start: &window.before,
        psi_start: crate::host::proc::read_psi(),
        samples: Vec::new(),
        hists_before: Vec::new(),
    };
    let waited = rt.block_on(wait(pid, &mut signals, &mut watch))?;
    let samples = std::mem::take(&mut watch.samples);
    let mut report = match tracer {
        Some(tracer) => window.close(tracer, samples)?,
        None => window.close_untraced(),
    };
    if !opts.no_probes {
        let after = self_usage();
        report.collector = Some(CollectorCost {
            attach_s,
            user_s: after.user_s - self_before.user_s,
            sys_s: after.sys_s - self_before.sys_s,
            max_rss_bytes: after.max_rss_bytes,
        });
    }
    let box_report = membox.report();
    drop(membox);

    let ru = &waited.rusage;
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let (code, sig) = decode_status(waited.status);
    let oom_killed = sig == Some(libc::SIGKILL)
        && (box_report.oom_kills.unwrap_or(0) > 0
            || report
                .oom_victims
                .iter()
                .flatten()
                .any(|v| v.target && v.pid as i32 == pid));
    report.command = opts.label.clone().unwrap_or_else(|| {
        opts.command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    });
    report.pid = pid as u32;
    report.run_as = identity.as_ref().map(privilege::Identity::describe);
    report.target = target_text;
    report.exit = Exit {
        code,
        signal: sig,
        oom_killed,
        interrupted: waited.interrupted,
    };
    report.usage = Usage {
        wall_s: report.usage.wall_s,
        user_s: tv(ru.ru_utime),
        sys_s: tv(ru.ru_stime),
        minor_faults: ru.ru_minflt as u64,
        major_faults: ru.ru_majflt as u64,
        max_rss_bytes: ru.ru_maxrss as u64 * 1024,
        in_blocks: ru.ru_inblock as u64,
        out_blocks: ru.ru_oublock as u64,
    };
    report.membox =
        (opts.spec.mem_limit.is_some() || opts.spec.swap.is_some()).then_some(box_report);
    let exit_code = code.unwrap_or_else(|| 128 + sig.unwrap_or(0));
    Ok(RunOutcome { report, exit_code })
}

/// The probes, attached for a target, and what they were attached with:
/// what `run` and `attach` share.
pub struct Tracer {
    pub probes: probes::Probes,
    pub swap_layout: swapdev::SwapLayout,
    pub unavailable: Vec<Unavailable>,
    pub partial: Vec<Unavailable>,
}

impl Tracer {
    /// Resolves fields (tracefs, BTF), plans and attaches every program,
    /// saying which metrics are unavailable or incomplete.
    pub fn attach(target: Target, opted_in: &[probes::OptIn]) -> Result<Tracer> {
        // Another vmtrace attaching at the same time must not unmount the
        // tracefs this one mounted (or the other way round).
        let _attaching = crate::host::lock::Lock::take("attach");
        let (live, _tracefs_mount) = TraceFs::live()?;
        // Layouts may be read from another tree (a copy with a tracepoint
        // removed, in the tests); attaching always uses the live tracefs.
        let tracefs = match std::env::var_os(FORMATS_ENV) {
            Some(dir) => TraceFs::at(Path::new(&dir)),
            None => live,
        };
        if tracefs.format("sched", "sched_process_exit")?.is_none()
            && tracefs
                .format("vmscan", "mm_vmscan_lru_shrink_inactive")?
                .is_none()
        {
            bail!(
                "this kernel shows no tracepoints in tracefs (built without \
                 CONFIG_TRACEPOINTS/CONFIG_FTRACE, or tracefs hidden from this \
                 container); vmtrace cannot measure anything here"
            );
        }
        let btf = kernel_btf();
        let plan = probes::plan(&tracefs, btf.as_ref().map(|b| b as _), opted_in)?;
        let swap_layout = swapdev::SwapLayout::read().unwrap_or_else(|e| {
            eprintln!("vmtrace: notice: swap areas unreadable, swap I/O not timed: {e:#}");
            swapdev::SwapLayout::default()
        });
        let zones = std::fs::read_to_string("/proc/zoneinfo")
            .map(|z| sample::parse_zoneinfo(&z))
            .unwrap_or_default();
        let layout = probes::Layout {
            target,
            swap: swap_layout.to_global(),
            zones: sample::zone_spans(&zones),
            fault_latency: plan.is_enabled("fault_latency"),
        };
        let probes = probes::attach(plan, &layout)?;
        let listed = |v: &[(&'static str, String)]| -> Vec<Unavailable> {
            v.iter()
                .map(|(metric, reason)| Unavailable {
                    metric: metric.to_string(),
                    reason: reason.clone(),
                })
                .collect()
        };
        let mut unavailable = listed(&probes.plan.unavailable);
        unavailable.extend(listed(&probes.attach_failures));
        for u in &unavailable {
            eprintln!("vmtrace: notice: {} unavailable: {}", u.metric, u.reason);
        }
        let partial = listed(&probes.plan.partial);
        for u in &partial {
            eprintln!("vmtrace: notice: {} incomplete: {}", u.metric, u.reason);
        }
        Ok(Tracer {
            probes,
            swap_layout,
            unavailable,
            partial,
        })
    }
}

/// The traced window: the machine's counters when it opened, and delay
/// accounting switched on for its length.
pub struct Window {
    pub before: VmStat,
    kswapd_cpu_before: Vec<(u32, f64)>,
    started: Instant,
    started_unix_s: f64,
    started_mono_ns: u64,
    delayacct: Option<crate::host::sysctl::SysctlOverride>,
    delayacct_on: bool,
    /// --bpf-stats: report program costs; kernel.bpf_stats_enabled is on
    /// for the window (the guard: None when it was on already).
    bpf_stats: bool,
    bpf_stats_guard: Option<crate::host::sysctl::SysctlOverride>,
}

impl Window {
    /// A window with nothing traced (`run --no-probes`): the machine's
    /// counters and the time only; no sysctl is touched.
    pub fn open_untraced() -> Result<Window> {
        Ok(Window {
            kswapd_cpu_before: Vec::new(),
            before: VmStat::read()?,
            started: Instant::now(),
            started_unix_s: unix_now(),
            started_mono_ns: collect::monotonic_ns(),
            delayacct: None,
            delayacct_on: false,
            bpf_stats: false,
            bpf_stats_guard: None,
        })
    }

    /// Closes an untraced window: wall time and /proc/vmstat deltas.
    pub fn close_untraced(self) -> RunReport {
        let after = VmStat::read().unwrap_or_else(|_| self.before.clone());
        RunReport {
            vmtrace_version: env!("CARGO_PKG_VERSION").into(),
            kernel_release: kernel_release(),
            started_unix_s: self.started_unix_s,
            untraced: true,
            usage: Usage {
                wall_s: self.started.elapsed().as_secs_f64(),
                ..Default::default()
            },
            vmstat: VmstatDelta::from_delta(&VmStat::delta(&self.before, &after)),
            ..Default::default()
        }
    }

    pub fn open(bpf_stats: bool) -> Result<Window> {
        let bpf_stats_guard = if bpf_stats {
            crate::host::sysctl::SysctlOverride::set("kernel.bpf_stats_enabled", "1")?
        } else {
            None
        };
        // The kernel's delay accounting, read at each target thread's
        // exit: on for the window (restored by the guard, also on errors).
        let (delayacct, delayacct_on) =
            match crate::host::sysctl::SysctlOverride::set("kernel.task_delayacct", "1") {
                Ok(guard) => (guard, true),
                Err(e) => {
                    eprintln!("vmtrace: notice: delay accounting unavailable: {e:#}");
                    (None, false)
                }
            };
        Ok(Window {
            kswapd_cpu_before: crate::host::proc::kswapd_cpu(),
            before: VmStat::read()?,
            started: Instant::now(),
            started_unix_s: unix_now(),
            started_mono_ns: collect::monotonic_ns(),
            delayacct,
            delayacct_on,
            bpf_stats,
            bpf_stats_guard,
        })
    }

    /// Closes the window: reads every map and counter, detaches the
    /// probes, and returns the report of what the kernel side measured
    /// (the caller adds the command, exit and usage).
    pub fn close(self, tracer: Tracer, samples: Vec<sample::Sample>) -> Result<RunReport> {
        self.close_after(tracer, samples, Duration::from_secs(2))
    }

    /// `close`, waiting at most `settle` for swap I/O in flight to
    /// complete (zero: detach at once, e.g. after Ctrl-C on an attach).
    pub fn close_after(
        self,
        tracer: Tracer,
        samples: Vec<sample::Sample>,
        settle: Duration,
    ) -> Result<RunReport> {
        let Tracer {
            mut probes,
            swap_layout,
            unavailable,
            partial,
        } = tracer;
        if !settle.is_zero() {
            swap_layout.wait_idle(settle);
        }
        let wall = self.started.elapsed();
        let after = VmStat::read()?;
        let kswapd_cpu_after = crate::host::proc::kswapd_cpu();
        let totals = collect::read(&probes)?;
        drop(self.delayacct);
        let stats = probes.program_stats();
        let program_costs = self.bpf_stats.then(|| {
            stats
                .iter()
                .map(|s| ProgramCost {
                    program: s.program.to_string(),
                    runs: s.runs,
                    run_ns: s.run_ns,
                })
                .collect::<Vec<_>>()
        });
        drop(self.bpf_stats_guard);
        let misses: Vec<(&str, u64)> = stats
            .iter()
            .filter(|s| s.misses > 0)
            .map(|s| (s.program, s.misses))
            .collect();
        probes.flush_log();
        probes.drain_oom();
        let oom_victims = std::mem::take(&mut probes.oom_victims);
        let enabled = probes.plan.enabled.clone();
        drop(probes);

        let mut report = RunReport {
            vmtrace_version: env!("CARGO_PKG_VERSION").into(),
            kernel_release: kernel_release(),
            started_unix_s: self.started_unix_s,
            usage: Usage {
                wall_s: wall.as_secs_f64(),
                ..Default::default()
            },
            vmstat: VmstatDelta::from_delta(&VmStat::delta(&self.before, &after)),
            ..Default::default()
        };
        report.add_kernel_totals(&totals, &|id| enabled.contains(&id));
        if let Some(d) = report.delays.as_mut() {
            d.accounting_on = self.delayacct_on;
        }
        report.dropped.program_misses = misses.iter().map(|(p, n)| (p.to_string(), *n)).collect();
        report.program_costs = program_costs;
        if enabled.contains(&"kswapd") || enabled.contains(&"kswapd_wakeups") {
            let cpu: Vec<(u32, f64, f64)> = kswapd_cpu_after
                .iter()
                .map(|&(node, after)| {
                    let before = self
                        .kswapd_cpu_before
                        .iter()
                        .find(|(n, _)| *n == node)
                        .map_or(after, |(_, b)| *b);
                    (node, before, after)
                })
                .collect();
            let zones = std::fs::read_to_string("/proc/zoneinfo")
                .map(|z| crate::host::proc::zone_names(&z))
                .unwrap_or_default();
            report.add_kswapd(&totals, &cpu, &zones);
        }
        if enabled.contains(&"oom") {
            report.add_oom_victims(&oom_victims, self.started_mono_ns);
        }
        report.unavailable = unavailable;
        report.partial = partial;
        report.add_zones(&totals, &samples, enabled.contains(&"page_alloc"));
        if enabled.contains(&"swap_io") {
            report.add_swap_io(&totals, &swap_layout);
        }
        report.timeline = samples;
        Ok(report)
    }
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// vmtrace's own resource use so far (every thread; not the command's,
/// which is a child process).
fn self_usage() -> CollectorCost {
    // SAFETY: zeroed rusage is a valid out-parameter.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to our own struct.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    CollectorCost {
        attach_s: 0.0,
        user_s: tv(ru.ru_utime),
        sys_s: tv(ru.ru_stime),
        max_rss_bytes: ru.ru_maxrss as u64 * 1024,
    }
}

/// Whether a program of that name is in a directory of $PATH.
pub(crate) fn on_path(program: &Path) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

/// A missing command is reported before anything is set up.
fn check_command_exists(program: &OsString) -> Result<()> {
    let p = Path::new(program);
    let found = if p.components().count() > 1 {
        p.is_file()
    } else {
        on_path(p)
    };
    if !found && p.components().count() > 1 {
        bail!(
            "command `{}` not found; check the name, or give its path",
            p.display()
        );
    }
    if !found {
        let bundled: Vec<&str> = vmtrace_workloads::cli::BUNDLED
            .iter()
            .map(|b| b.name)
            .collect();
        bail!(
            "`{}` is neither a bundled workload ({}) nor a command on PATH; \
             check the name, or give its path",
            p.display(),
            bundled.join(", ")
        );
    }
    Ok(())
}

/// Starts the command with the box's cgroups joined before exec, so that
/// its first page fault is already inside the box; as `identity` when
/// given (sudo's invoker), after joining (the cgroup files are root's).
fn spawn(
    command: &[OsString],
    membox: &MemBox,
    identity: Option<&privilege::Identity>,
) -> Result<i32> {
    let joins = membox.join_paths()?;
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..]);
    let identity = identity.cloned();
    if let Some(id) = &identity {
        cmd.env("USER", &id.user).env("LOGNAME", &id.user);
        if let Some(home) = &id.home {
            cmd.env("HOME", home);
        }
    }
    let hint = privilege::start_hint(identity.as_ref());
    // SAFETY: the closure only calls open/write/close, setgroups, setgid
    // and setuid (async-signal-safe) on data prepared before fork; it
    // allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            for path in &joins {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(io::Error::last_os_error());
                }
                let n = libc::write(fd, b"0".as_ptr().cast(), 1);
                let err = io::Error::last_os_error();
                libc::close(fd);
                if n != 1 {
                    return Err(err);
                }
            }
            match &identity {
                Some(id) => id.become_in_child(),
                None => Ok(()),
            }
        });
    }
    let child = cmd
        .spawn()
        .with_context(|| format!("cannot start `{}`{hint}", command[0].to_string_lossy()))?;
    // Reaped by wait4 below (for its rusage), not by std.
    i32::try_from(child.id()).context("child pid")
}

struct Waited {
    status: i32,
    rusage: libc::rusage,
    interrupted: bool,
}

/// The signals vmtrace catches for a run: held (blocked) from the first
/// instruction of `main` until their handlers are installed, so that one
/// arriving while vmtrace starts up is acted on (the box torn down, the
/// run reported) instead of killing it half set up.
const CAUGHT: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

fn mask_signals(how: libc::c_int) {
    // SAFETY: a sigset we own, changed only through libc's functions.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in CAUGHT {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// Blocks SIGINT, SIGTERM and SIGHUP (first thing in `main`, before any
/// thread exists). Commands vmtrace starts get an empty mask (std resets
/// it in the child).
pub fn hold_signals() {
    mask_signals(libc::SIG_BLOCK);
}

/// Unblocks them: their handlers are in place, or the subcommand has
/// nothing to tear down. One that arrived meanwhile is delivered now.
pub fn release_signals() {
    mask_signals(libc::SIG_UNBLOCK);
}

/// SIGINT, SIGTERM and SIGHUP, caught for the whole run.
pub(crate) struct Signals {
    int: Signal,
    term: Signal,
    hup: Signal,
}

impl Signals {
    pub(crate) fn new() -> Result<Signals> {
        let s = |k| signal(k).context("installing signal handlers");
        let signals = Signals {
            int: s(SignalKind::interrupt())?,
            term: s(SignalKind::terminate())?,
            hup: s(SignalKind::hangup())?,
        };
        release_signals();
        Ok(signals)
    }

    pub(crate) async fn next(&mut self) -> i32 {
        tokio::select! {
            _ = self.int.recv() => libc::SIGINT,
            _ = self.term.recv() => libc::SIGTERM,
            _ = self.hup.recv() => libc::SIGHUP,
        }
    }

    /// A signal that already arrived, without waiting.
    async fn pending(&mut self) -> Option<i32> {
        tokio::select! {
            biased;
            s = self.next() => Some(s),
            _ = tokio::task::yield_now() => None,
        }
    }
}

/// What the wait loop watches and collects besides the child.
pub(crate) struct Watch<'a> {
    pub(crate) membox: Option<&'a MemBox>,
    /// None when nothing is traced (`run --no-probes`): no samples.
    pub(crate) probes: Option<&'a mut probes::Probes>,
    pub(crate) progress: Progress,
    pub(crate) interval: Duration,
    pub(crate) vmstat_start: &'a VmStat,
    pub(crate) psi_start: Option<sample::Psi>,
    pub(crate) samples: Vec<sample::Sample>,
    /// Each kernel histogram's counts at the previous sample.
    pub(crate) hists_before: Vec<Vec<u64>>,
}

impl Watch<'_> {
    pub(crate) fn sample(&mut self, t_s: f64) {
        let Some(probes) = self.probes.as_deref_mut() else {
            return;
        };
        probes.drain_oom();
        probes.flush_log();
        if let Ok(t) = collect::read(probes) {
            let mut s = sample::Sample::take(t_s, &t, self.vmstat_start, self.psi_start);
            s.box_bytes = self.membox.and_then(MemBox::usage_bytes);
            for h in vmtrace_common::Hist::ALL {
                let now = t.hist(h);
                let before = self.hists_before.get(h as usize).map_or(&[][..], |v| v);
                let step = histogram::delta(now, before);
                if step.iter().any(|&n| n > 0) {
                    s.hists.insert(
                        h.name().into(),
                        histogram::encode(&histogram::to_hdr(&step)),
                    );
                }
            }
            self.hists_before = vmtrace_common::Hist::ALL
                .iter()
                .map(|&h| t.hist(h).to_vec())
                .collect();
            self.samples.push(s);
        }
    }

    fn progress_line(&self) -> Option<String> {
        progress_line(&self.samples)
    }

    /// The status line, rewritten in place (terminal only).
    pub(crate) fn show_status(&self) {
        if self.progress == Progress::Tty
            && let Some(line) = self.progress_line()
        {
            let mut line = line;
            line.truncate(terminal_width().saturating_sub(1));
            eprint!("\r\x1b[K{line}");
        }
    }

    pub(crate) fn print_progress(&self) {
        if let Some(line) = self.progress_line() {
            eprintln!("vmtrace: {line}");
        }
    }

    /// Erases the status line before anything else is printed.
    pub(crate) fn clear_status(&self) {
        if self.progress == Progress::Tty {
            eprint!("\r\x1b[K");
        }
    }
}

/// What the columns of the progress lines are.
pub const PROGRESS_HEADER: &str = "elapsed, then rates over the last step: all faults, major faults of the \
     target, its reclaims, swap-outs and swap-ins (pages), box memory";

/// The progress line of the last step: elapsed, rates over the step
/// and the box's memory.
pub fn progress_line(samples: &[sample::Sample]) -> Option<String> {
    let s = samples.last()?;
    let prev = samples.len().checked_sub(2).map(|i| &samples[i]);
    let dt = (s.t_s - prev.map_or(0.0, |p| p.t_s)).max(1e-3);
    let rate = |now: u64, before: fn(&sample::Sample) -> u64| {
        let d = now.saturating_sub(prev.map_or(0, before));
        human_count(d as f64 / dt)
    };
    let mem = s.box_bytes.map_or(String::new(), |b| {
        format!(" box {}", crate::model::units::human(b))
    });
    Some(format!(
        "{:>4.0}s flt/s {} majflt/s {} reclaim/s {} swpout/s {} swpin/s {}{mem}",
        s.t_s,
        rate(s.pgfault, |p| p.pgfault),
        rate(s.major_faults_target, |p| p.major_faults_target),
        rate(s.memcg_reclaims + s.direct_reclaims, |p| p.memcg_reclaims
            + p.direct_reclaims),
        rate(s.pswpout, |p| p.pswpout),
        rate(s.pswpin, |p| p.pswpin),
    ))
}

/// 1234567 -> `1.2M`: short rates for the status line.
fn human_count(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Columns of the terminal on stderr (80 when unknown).
fn terminal_width() -> usize {
    // SAFETY: TIOCGWINSZ fills a winsize struct we own.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 {
        usize::from(ws.ws_col)
    } else {
        80
    }
}

async fn wait(pid: i32, signals: &mut Signals, w: &mut Watch<'_>) -> Result<Waited> {
    let mut reaper = tokio::task::spawn_blocking(move || {
        let mut status = 0;
        // SAFETY: zeroed rusage is a valid out-parameter.
        let mut rusage: libc::rusage = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: waiting for our own child with valid out-pointers.
            let r = unsafe { libc::wait4(pid, &mut status, 0, &mut rusage) };
            if r == pid {
                return Ok((status, rusage));
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    });
    let started = Instant::now();
    let start = tokio::time::Instant::now();
    let mut sample_tick = tokio::time::interval_at(start + w.interval, w.interval);
    sample_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let period = match w.progress {
        Progress::Plain(p) => p,
        _ => Duration::from_secs(3600),
    };
    let mut progress_tick = tokio::time::interval_at(start + period, period);
    let mut signals_seen = 0;
    loop {
        tokio::select! {
            done = &mut reaper => {
                let (status, rusage) = done
                    .context("waiting for the command")?
                    .context("waiting for the command")?;
                w.sample(started.elapsed().as_secs_f64());
                w.clear_status();
                return Ok(Waited { status, rusage, interrupted: signals_seen > 0 });
            }
            sig = signals.next() => {
                signals_seen += 1;
                w.clear_status();
                if signals_seen == 1 {
                    eprintln!("vmtrace: passing the signal on; waiting for the command to end (again to kill it)");
                    // SAFETY: signalling our own child.
                    unsafe { libc::kill(pid, sig) };
                } else {
                    eprintln!("vmtrace: killing the command");
                    // SAFETY: as above.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    if let Some(b) = w.membox {
                        b.kill_all();
                    }
                }
            }
            _ = sample_tick.tick() => {
                w.sample(started.elapsed().as_secs_f64());
                w.show_status();
            }
            _ = progress_tick.tick(), if matches!(w.progress, Progress::Plain(_)) => {
                w.print_progress();
            }
        }
    }
}

fn decode_status(status: i32) -> (Option<i32>, Option<i32>) {
    if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else if libc::WIFSIGNALED(status) {
        (None, Some(libc::WTERMSIG(status)))
    } else {
        (None, None)
    }
}

/// `vmtrace probes`: the catalogue against the live kernel.
pub fn probe_listing() -> Result<Vec<probes::Listed>> {
    privilege::require()?;
    let _attaching = crate::host::lock::Lock::take("attach");
    let (live, _mount) = TraceFs::live()?;
    let tracefs = match std::env::var_os(FORMATS_ENV) {
        Some(dir) => TraceFs::at(Path::new(&dir)),
        None => live,
    };
    let btf = kernel_btf();
    probes::listing(&tracefs, btf.as_ref().map(|b| b as _))
}

/// Environment variable naming the kernel BTF file to read instead of
/// /sys/kernel/btf/vmlinux; a path that does not exist means "this kernel
/// has no BTF" (portability tests).
pub const BTF_ENV: &str = "VMTRACE_BTF";

/// The running kernel's BTF, if it has any (a notice when it has none or
/// it is unreadable: the metrics that need it are off).
fn kernel_btf() -> Option<crate::kernel::btf::Btf> {
    let path = std::env::var_os(BTF_ENV).map_or_else(
        || "/sys/kernel/btf/vmlinux".into(),
        std::path::PathBuf::from,
    );
    let data = match std::fs::read(&path) {
        Ok(d) => d,
        Err(e) => {
            eprintln!(
                "vmtrace: notice: no kernel BTF ({}: {e}; a kernel built without \
                 CONFIG_DEBUG_INFO_BTF): the metrics that need it are off",
                path.display()
            );
            return None;
        }
    };
    crate::kernel::btf::Btf::parse(&data)
        .map_err(|e| eprintln!("vmtrace: notice: kernel BTF unusable: {e:#}"))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_line_shows_rates_of_the_last_step() {
        assert_eq!(progress_line(&[]), None);
        let a = sample::Sample {
            t_s: 1.0,
            pgfault: 1000,
            pswpout: 10,
            ..Default::default()
        };
        let b = sample::Sample {
            t_s: 3.0,
            pgfault: 2_001_000,
            memcg_reclaims: 400,
            pswpout: 30_010,
            box_bytes: Some(256 << 20),
            ..Default::default()
        };
        let line = progress_line(&[a, b]).expect("a line");
        assert_eq!(
            line,
            "   3s flt/s 1.0M majflt/s 0 reclaim/s 200 swpout/s 15k swpin/s 0 box 256 MiB"
        );
        assert!(line.len() < 80);
    }

    #[test]
    fn progress_modes() {
        assert_eq!(Progress::from_mode("auto", true), Progress::Tty);
        assert_eq!(
            Progress::from_mode("auto", false),
            Progress::Plain(Duration::from_secs(10))
        );
        assert_eq!(Progress::from_mode("none", true), Progress::Quiet);
        assert_eq!(Progress::from_mode("tty", false), Progress::Tty);
    }
}
