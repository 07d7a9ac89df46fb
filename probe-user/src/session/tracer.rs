//! What `run` and `attach` share to trace a window of time: the `Tracer`
//! (tracefs and BTF resolved, the programs planned and attached), the
//! `Window` (the machine's counters when it opened, delay accounting on
//! for its length, and the report of what the kernel side measured when
//! it closes), and the `Watch` (the time series sampled while it is
//! open, with the progress line).

use std::{
    path::Path,
    time::{Duration, Instant},
};

use anyhow::{Result, bail};
use vmtrace_common::Target;

use crate::{
    host::membox::MemBox,
    host::proc::{CpuTimes, kernel_release, read_cpu_times},
    host::swapdev,
    host::sysctl::SysctlOverride,
    kernel::collect,
    kernel::fill,
    kernel::probes::{self, MetricId},
    kernel::tracefs::{MountGuard, TraceFs},
    model::histogram,
    model::report::{ProgramCost, RunReport, Unavailable},
    model::sample,
    model::vmstat::VmStat,
    session::progress::{self, Progress},
};

/// Environment variable naming a directory of tracefs `format` files to
/// resolve fields from instead of the live tracefs (portability tests).
pub const FORMATS_ENV: &str = "VMTRACE_TRACEFS_FORMATS";

/// Environment variable naming the kernel BTF file to read instead of
/// /sys/kernel/btf/vmlinux; a path that does not exist means "this kernel
/// has no BTF" (portability tests).
pub const BTF_ENV: &str = "VMTRACE_BTF";

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
    /// `max_cgroups`: keep reclaim stalls per cgroup, for at most that
    /// many (`attach --serve`); `debug_probes`: the programs log their
    /// rare events (`--debug-probes`).
    pub fn attach(
        target: Target,
        opted_in: &[probes::OptIn],
        max_cgroups: Option<u32>,
        debug_probes: bool,
    ) -> Result<Tracer> {
        // Another vmtrace attaching at the same time must not unmount the
        // tracefs this one mounted (or the other way round).
        let _attaching = crate::host::lock::Lock::take("attach")?;
        let (tracefs, _tracefs_mount) = layouts_tracefs()?;
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
        let zones = crate::host::proc::read_zoneinfo();
        let layout = probes::Layout {
            target,
            swap: swap_layout.to_global(),
            zones: sample::zone_spans(&zones),
            fault_latency: plan.is_enabled(MetricId::FaultLatency),
            max_cgroups,
            entry_stacks: plan.takes_entry_stacks(),
            profile: plan.is_enabled(MetricId::Profile),
            debug_probes,
        };
        let probes = {
            // A signal now is acted on once the programs are in.
            let _held = crate::host::lock::Held::block();
            probes::attach(plan, &layout)?
        };
        let (unavailable, partial) = told_missing(&probes);
        Ok(Tracer {
            probes,
            swap_layout,
            unavailable,
            partial,
        })
    }
}

/// The metrics the plan or the attaching left out, and those only partly
/// measured, each said on stderr.
fn told_missing(probes: &probes::Probes) -> (Vec<Unavailable>, Vec<Unavailable>) {
    let listed = |v: &[(MetricId, String)]| -> Vec<Unavailable> {
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
    (unavailable, partial)
}

/// The tracefs to resolve tracepoint layouts from: the live one (mounted
/// for as long as the guard lives), or the copy `FORMATS_ENV` names (a
/// tree with a tracepoint removed, in the tests). Attaching always uses
/// the live tracefs.
fn layouts_tracefs() -> Result<(TraceFs, Option<MountGuard>)> {
    let (live, mount) = TraceFs::live()?;
    let tracefs = match test_hook(FORMATS_ENV) {
        Some(dir) => TraceFs::at(&dir),
        None => live,
    };
    Ok((tracefs, mount))
}

/// `vmtrace probes`: the catalogue against the live kernel.
pub fn probe_listing() -> Result<Vec<probes::Listed>> {
    crate::session::preflight::require_root()?;
    let _attaching = crate::host::lock::Lock::take("attach")?;
    let (tracefs, _mount) = layouts_tracefs()?;
    let btf = kernel_btf();
    probes::listing(&tracefs, btf.as_ref().map(|b| b as _))
}

/// The path a test hook (`FORMATS_ENV`, `BTF_ENV`) names, honoured only
/// where no one but root could have made what it points to: not under
/// sudo (an environment kept by `sudo -E` is the invoker's), and only in
/// a directory that is root's alone, as are all above it (a sticky /tmp
/// above allowed). Otherwise a notice, and the live kernel's.
fn test_hook(var: &str) -> Option<std::path::PathBuf> {
    let value = std::path::PathBuf::from(std::env::var_os(var)?);
    let refuse = |why: &str| {
        eprintln!("vmtrace: notice: {var} ignored ({why}); reading the live kernel's");
        None
    };
    if std::env::var_os("SUDO_UID").is_some() {
        return refuse("a test hook, not honoured under sudo");
    }
    // The BTF hook may name a file that does not exist ("no BTF"): its
    // directory decides then.
    let dir = if value.is_dir() {
        value.as_path()
    } else {
        value.parent().unwrap_or(Path::new("/"))
    };
    match crate::host::root_program::root_only_dir(dir, true) {
        Ok(()) => Some(value),
        Err(why) => refuse(&why),
    }
}

/// The running kernel's BTF, if it has any (a notice when it has none or
/// it is unreadable: the metrics that need it are off).
fn kernel_btf() -> Option<crate::kernel::btf::Btf> {
    let path = test_hook(BTF_ENV).unwrap_or_else(|| crate::kernel::btf::VMLINUX.into());
    let data = match crate::kernel::btf::Btf::read_blob(&path) {
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

/// The traced window: the machine's counters when it opened, and delay
/// accounting switched on for its length.
pub struct Window {
    pub before: VmStat,
    /// /proc/stat's CPU times when it opened (None: unreadable).
    cpu_before: Option<CpuTimes>,
    kswapd_cpu_before: Vec<(u32, f64)>,
    started: Instant,
    started_unix_s: f64,
    started_mono_ns: u64,
    delayacct: Option<SysctlOverride>,
    delayacct_on: bool,
    /// kernel.task_delayacct was 1 before the window (nothing to restore).
    delayacct_already_on: bool,
    /// --bpf-stats: report program costs; kernel.bpf_stats_enabled is on
    /// for the window (the guard: None when it was on already).
    bpf_stats: bool,
    bpf_stats_guard: Option<SysctlOverride>,
}

impl Window {
    /// A window with nothing traced (`run --no-probes`): the machine's
    /// counters and the time only; no sysctl setting is changed (the
    /// snapshot's vmstat fold is a trigger, not a setting).
    pub fn open_untraced() -> Result<Window> {
        Ok(Window {
            kswapd_cpu_before: Vec::new(),
            before: crate::host::proc::read_vmstat_window()?,
            cpu_before: read_cpu_times(),
            started: Instant::now(),
            started_unix_s: unix_now(),
            started_mono_ns: collect::monotonic_ns(),
            delayacct: None,
            delayacct_on: false,
            delayacct_already_on: false,
            bpf_stats: false,
            bpf_stats_guard: None,
        })
    }

    /// Closes an untraced window: wall time, /proc/vmstat and
    /// /proc/stat deltas.
    pub fn close_untraced(self) -> RunReport {
        let wall = self.started.elapsed();
        let after = crate::host::proc::read_vmstat_window().unwrap_or_else(|_| self.before.clone());
        let cpu_after = read_cpu_times();
        self.report(wall, &after, cpu_after.as_ref(), None)
    }

    pub fn open(tracer: &mut Tracer, bpf_stats: bool) -> Result<Window> {
        let bpf_stats_guard = if bpf_stats {
            SysctlOverride::set("kernel.bpf_stats_enabled", "1")?
        } else {
            None
        };
        // The kernel's delay accounting, read at each target thread's
        // exit: on for the window (restored by the guard, also on errors).
        // A run opens the window before it forks the command (run.rs:
        // Window::open, then spawn), so every task of the job is forked
        // with it on: kernel/fork.c copy_process -> delayacct_tsk_init
        // gives a task a `delays` record only while delayacct_on is set
        // (6.1, 6.12, 6.18), and each of its waits then starts with a
        // stamp. Tasks older than the switch (attach) have no record, or
        // one whose open wait has no stamp: the eBPF exit program drops
        // any value longer than the task lived (fault.rs add_delay).
        let (delayacct, delayacct_on) = match SysctlOverride::set("kernel.task_delayacct", "1") {
            Ok(guard) => (guard, true),
            Err(e) if crate::host::sysctl::is_interrupted(&e) => return Err(e),
            Err(e) => {
                eprintln!("vmtrace: notice: delay accounting unavailable: {e:#}");
                (None, false)
            }
        };
        let kswapd_cpu_before = crate::host::proc::kswapd_cpu();
        // The page counts and the vmstat snapshot start back to back.
        tracer.probes.start_window()?;
        Ok(Window {
            kswapd_cpu_before,
            before: crate::host::proc::read_vmstat_window()?,
            cpu_before: read_cpu_times(),
            started: Instant::now(),
            started_unix_s: unix_now(),
            started_mono_ns: collect::monotonic_ns(),
            delayacct_already_on: delayacct_on && delayacct.is_none(),
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
        mut self,
        tracer: Tracer,
        samples: Vec<sample::Sample>,
        settle: Duration,
    ) -> Result<RunReport> {
        if !settle.is_zero() {
            tracer.swap_layout.wait_idle(settle);
        }
        let (wall, after, cpu_after, traced) = self.detach(tracer, samples)?;
        Ok(self.report(wall, &after, cpu_after.as_ref(), Some(traced)))
    }

    /// The window's report: who measured on which kernel, and every
    /// section `kernel::fill` makes of what the window read.
    fn report(
        &self,
        wall: Duration,
        after: &VmStat,
        cpu_after: Option<&CpuTimes>,
        traced: Option<fill::Traced>,
    ) -> RunReport {
        RunReport {
            vmtrace_version: env!("CARGO_PKG_VERSION").into(),
            kernel_release: kernel_release(),
            started_unix_s: self.started_unix_s,
            ..fill::fill(fill::Readings {
                before: &self.before,
                after,
                cpu_before: self.cpu_before.as_ref(),
                cpu_after,
                wall_s: wall.as_secs_f64(),
                traced,
            })
        }
    }

    /// Reads the counters and every map, switches delay accounting and
    /// program statistics back, and detaches the probes: the window's
    /// length, /proc/vmstat and /proc/stat at its close, and what the
    /// probes held.
    fn detach(
        &mut self,
        tracer: Tracer,
        samples: Vec<sample::Sample>,
    ) -> Result<(Duration, VmStat, Option<CpuTimes>, fill::Traced)> {
        let Tracer {
            mut probes,
            swap_layout,
            unavailable,
            partial,
        } = tracer;
        let wall = self.started.elapsed();
        // The task iterator (it attaches a link) and the last rare-event
        // lines first: each line's event is counted before it is sent, so
        // every line is in the counters.
        probes.flush_stalls();
        for line in probes.debug_finish() {
            eprintln!("{line}");
        }
        // kswapd's CPU next: it walks /proc, and the vmstat snapshot and
        // the maps are read back to back so that the kernel's counters and
        // the probes' cover the same window (machine-wide counts such as
        // --page-alloc's drift apart under load otherwise).
        let kswapd_cpu_after = crate::host::proc::kswapd_cpu();
        let after = crate::host::proc::read_vmstat_window()?;
        let cpu_after = read_cpu_times();
        let totals = collect::read(&probes)?;
        drop(self.delayacct.take());
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
        drop(self.bpf_stats_guard.take());
        let program_misses = stats
            .iter()
            .filter(|s| s.misses > 0)
            .map(|s| (s.program.to_string(), s.misses))
            .collect();
        probes.drain_oom();
        let oom_victims = std::mem::take(&mut probes.oom_victims);
        let enabled = probes.plan.enabled.clone();
        drop(probes);
        let zone_names = crate::model::zones::zone_names(&crate::host::proc::read_zoneinfo());
        let traced = fill::Traced {
            enabled,
            totals,
            unavailable,
            partial,
            samples,
            swap_layout,
            oom_victims,
            started_mono_ns: self.started_mono_ns,
            kswapd_cpu_before: std::mem::take(&mut self.kswapd_cpu_before),
            kswapd_cpu_after,
            zone_names,
            delayacct_on: self.delayacct_on,
            delayacct_already_on: self.delayacct_already_on,
            program_costs,
            program_misses,
        };
        Ok((wall, after, cpu_after, traced))
    }
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
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
    /// Keep at most this many samples, the latest (`attach --serve`).
    pub(crate) max_samples: Option<usize>,
    /// Each kernel histogram's counts at the previous sample.
    pub(crate) hists_before: Vec<Vec<u64>>,
}

impl<'a> Watch<'a> {
    /// A watch over a window that opened at `vmstat_start`, sampling
    /// every `interval` (PSI is read now, as its start).
    pub(crate) fn new(
        membox: Option<&'a MemBox>,
        probes: Option<&'a mut probes::Probes>,
        progress: Progress,
        interval: Duration,
        vmstat_start: &'a VmStat,
    ) -> Watch<'a> {
        Watch {
            membox,
            probes,
            progress,
            interval,
            vmstat_start,
            psi_start: crate::host::proc::read_psi(),
            samples: Vec::new(),
            max_samples: None,
            hists_before: Vec::new(),
        }
    }

    pub(crate) fn sample(&mut self, t_s: f64) {
        let Some(probes) = self.probes.as_deref_mut() else {
            return;
        };
        probes.drain_oom();
        let lines = probes.debug_lines();
        if !lines.is_empty() {
            self.progress.clear_status();
            for line in lines {
                eprintln!("{line}");
            }
        }
        if let Ok(t) = collect::read_aggregates(probes) {
            let mut s =
                crate::kernel::collect::take_sample(t_s, &t, self.vmstat_start, self.psi_start);
            s.box_bytes = self.membox.and_then(MemBox::usage_bytes);
            s.box_psi = self.membox.and_then(MemBox::pressure);
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
            if let Some(max) = self.max_samples
                && self.samples.len() > max
            {
                let extra = self.samples.len() - max;
                self.samples.drain(..extra);
            }
        }
    }

    /// The status line, rewritten in place (terminal only).
    pub(crate) fn show_status(&self) {
        self.progress.show_status(&self.samples);
    }

    pub(crate) fn print_progress(&self) {
        progress::print_progress(&self.samples);
    }

    /// Erases the status line before anything else is printed.
    pub(crate) fn clear_status(&self) {
        self.progress.clear_status();
    }
}
