//! A job: everything one `vmtrace run` or `vmtrace attach` command line
//! does around its traced windows. For `run`: the start-up checks, the
//! `--sysctl` settings (restored afterwards), every configuration of a
//! sweep `--repeat` times, and the recording, rewritten after each run so
//! that an interruption or a failed run keeps every finished one. For
//! `attach`: the checks, the window, and its recording. What is printed
//! on stdout is the caller's.

use std::{
    path::{Path, PathBuf},
    time::SystemTime,
};

use anyhow::{Context, Result};

use crate::{
    host::lock::LiveLock,
    host::privilege,
    host::proc::kernel_release,
    host::sysctl::SysctlOverride,
    model::recording::{RecordedRun, Recording, Workload},
    model::report::RunReport,
    session::attach::{AttachOptions, attach},
    session::bundled::{sweep, workload_of},
    session::preflight,
    session::run::run,
    session::run_options::RunOptions,
};

/// `vmtrace run`, whole.
pub struct JobOptions {
    /// One run's options (a sweep's comma list still in the command).
    pub run: RunOptions,
    /// Runs of each configuration.
    pub repeat: u32,
    /// `--sysctl NAME=VALUE`s, set for the runs.
    pub sysctls: Vec<(String, String)>,
    /// Kernel switches outside /proc/sys (`--mglru`, `--zswap`), set
    /// for the runs and restored like the sysctls.
    pub switches: Vec<Switch>,
    /// The recording's path; a default one when None.
    pub output: Option<PathBuf>,
}

/// A job whose runs are over.
pub struct Finished {
    /// Every finished run, as written to `path`.
    pub recording: Recording,
    pub path: PathBuf,
    /// What vmtrace exits with: the last failing run's code, or 0.
    pub exit_code: i32,
    /// Runs planned: configurations times repeats.
    pub total: usize,
    /// The `--sysctl` settings: restored when this is dropped, after the
    /// caller has printed its summary.
    _sysctls: Vec<SysctlOverride>,
    /// This vmtrace's live lock, released after the sysctls are restored.
    _live: LiveLock,
}

/// Runs every configuration `repeat` times; `each` is given each run's
/// report (and the number of runs planned) as soon as it ends and the
/// recording holding it is written: an error of `each` (standard output
/// full) ends the job with the recording kept.
pub fn run_job(
    opts: &JobOptions,
    each: impl FnMut(&RunReport, usize) -> Result<()>,
) -> Result<Finished> {
    preflight::require_root()?;
    // Held for the whole job: what it leaves is not another vmtrace's to
    // clean up while it lives.
    let live = LiveLock::take()?;
    // Before the environment is captured, so the recording shows them;
    // restored when the guards drop with the `Finished`.
    preflight::restore_stale_sysctls()?;
    let mut sysctls = set_sysctls(&opts.sysctls)?;
    sysctls.extend(set_switches(&opts.switches)?);
    let configs = sweep(&opts.run)?;
    let mut workload = workload_of(&configs[0].1);
    workload.arguments = workload_of(&opts.run).arguments;
    let path = output_path(opts.output.as_deref(), &workload.name);
    preflight::check_writable(&path)?;
    let mut out = Output {
        recording: Recording::new(workload, crate::host::environment::capture()),
        path,
        total: configs.len() * opts.repeat as usize,
    };
    let exit_code = run_all(&configs, opts.repeat, &mut out, each)?;
    Ok(Finished {
        recording: out.recording,
        path: out.path,
        exit_code,
        total: out.total,
        _sysctls: sysctls,
        _live: live,
    })
}

/// Sets each `--sysctl`, saying so; the guards restore them.
fn set_sysctls(sysctls: &[(String, String)]) -> Result<Vec<SysctlOverride>> {
    let mut guards = Vec::new();
    for (name, value) in sysctls {
        if let Some(g) = SysctlOverride::set(name, value)? {
            eprintln!("vmtrace: {name} set to {value} for the runs (restored after)");
            guards.push(g);
        }
    }
    Ok(guards)
}

/// A kernel switch outside /proc/sys, set for a job's runs.
#[derive(Clone, Debug)]
pub struct Switch {
    /// How the user named it: `--mglru off`.
    pub flag: &'static str,
    pub path: PathBuf,
    /// What to write (the file's own words: y/n, Y/N).
    pub value: String,
    /// What the kernel lacks when the file is missing.
    pub missing: &'static str,
}

impl Switch {
    /// `--mglru on|off`: the multi-gen LRU (mm/vmscan.c lru_gen enabled_store
    /// takes y, n or a capability mask; the mask read before is what
    /// is restored).
    pub fn mglru(on: bool) -> Switch {
        Switch {
            flag: "--mglru",
            path: crate::host::sysctl::MGLRU_SWITCH.into(),
            value: if on { "y" } else { "n" }.into(),
            missing: "no multi-gen LRU (CONFIG_LRU_GEN)",
        }
    }

    /// `--zswap on|off`: zswap's enabled parameter (mm/zswap.c).
    pub fn zswap(on: bool) -> Switch {
        Switch {
            flag: "--zswap",
            path: crate::host::sysctl::ZSWAP_SWITCH.into(),
            value: if on { "Y" } else { "N" }.into(),
            missing: "no zswap (CONFIG_ZSWAP)",
        }
    }
}

/// Sets each switch, saying so; a kernel without it is refused in one
/// line before anything runs.
fn set_switches(switches: &[Switch]) -> Result<Vec<SysctlOverride>> {
    let mut guards = Vec::new();
    for s in switches {
        if !s.path.is_file() {
            anyhow::bail!(
                "{}: this kernel has {} ({} does not exist); drop {}",
                s.flag,
                s.missing,
                s.path.display(),
                s.flag
            );
        }
        if let Some(g) = SysctlOverride::set_file(s.path.clone(), s.flag, &s.value)? {
            eprintln!(
                "vmtrace: {} set to {} for the runs (restored after)",
                s.path.display(),
                s.value
            );
            guards.push(g);
        }
    }
    Ok(guards)
}

/// `-o PATH`, or ./vmtrace-WORKLOAD-KERNEL-UTCTIME.vmtrace.json.
fn output_path(output: Option<&Path>, workload: &str) -> PathBuf {
    output
        .map(Path::to_path_buf)
        .unwrap_or_else(|| Recording::default_path(workload, &kernel_release(), SystemTime::now()))
}

/// The recording being made, and where it goes.
struct Output {
    recording: Recording,
    path: PathBuf,
    total: usize,
}

/// The runs, one after the other; stops after an interrupted run. A run
/// that fails ends the job, its finished runs written first.
fn run_all(
    configs: &[(String, RunOptions)],
    repeat: u32,
    out: &mut Output,
    mut each: impl FnMut(&RunReport, usize) -> Result<()>,
) -> Result<i32> {
    let total = out.total;
    let mut exit_code = 0;
    let mut n = 0;
    for (label, opts) in configs {
        for _ in 0..repeat {
            n += 1;
            if total > 1 {
                eprintln!("vmtrace: run {n} of {total} {label}");
            }
            let outcome = match run(opts) {
                Ok(o) => o,
                Err(e) => {
                    let why = format!("run {n} of {total} failed: {e:#}");
                    out.keep_finished(&why)?;
                    return Err(e);
                }
            };
            if outcome.exit_code != 0 {
                exit_code = outcome.exit_code;
            }
            let interrupted = outcome.report.exit.interrupted;
            out.recording.runs.push(RecordedRun {
                label: crate::model::bounded::cut_label(label),
                report: outcome.report,
            });
            if interrupted {
                let why = format!("interrupted during run {n} of {total}");
                out.recording.mark_incomplete(&why);
            }
            crate::host::recording_file::write(&out.recording, &out.path)?;
            if let Some(run) = out.recording.runs.last() {
                each(&run.report, total).with_context(|| {
                    format!("recording written to {}, then", out.path.display())
                })?;
            }
            if interrupted {
                return Ok(exit_code);
            }
        }
    }
    Ok(exit_code)
}

impl Output {
    /// After a failed run: the runs that did finish, marked incomplete,
    /// written (nothing when none did).
    fn keep_finished(&mut self, why: &str) -> Result<()> {
        if self.recording.runs.is_empty() {
            return Ok(());
        }
        self.recording.mark_incomplete(why);
        crate::host::recording_file::write(&self.recording, &self.path)?;
        eprintln!(
            "vmtrace: recording of the {} finished run(s) written to {}",
            self.recording.runs.len(),
            self.path.display()
        );
        Ok(())
    }
}

/// `vmtrace attach`, whole: the window is traced, its report given to
/// `show`, and the recording written; returns the recording's path.
pub fn attach_job(
    opts: &AttachOptions,
    output: Option<&Path>,
    show: impl FnOnce(&RunReport) -> Result<()>,
) -> Result<PathBuf> {
    preflight::require_root()?;
    let _live = LiveLock::take()?;
    let words = attach_words(opts);
    let workload = Workload {
        name: "attach".into(),
        arguments: words[1..].to_vec(),
        seed: None,
    };
    let path = output_path(output, "attach");
    preflight::check_writable(&path)?;
    let mut recording = Recording::new(workload, crate::host::environment::capture());
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let walks_cgroups = opts.serve.is_some() || !opts.cgroups.is_empty();
    let invoker = crate::host::output::invoker().is_ok_and(|i| i.is_some());
    let keep = privilege::needed_after_attach(dir, invoker, walks_cgroups);
    let report = attach(opts, words, &keep)?;
    if report.exit.interrupted {
        recording.mark_incomplete("stopped by a signal");
    }
    recording.runs.push(RecordedRun {
        label: String::new(),
        report,
    });
    // Written before anything is printed: a full standard output must not
    // cost the recording. Every task's, or tasks found by name, are
    // other users' too: their pids and commands stay the invoker's.
    if opts.pids.is_empty() && opts.cgroups.is_empty() || !opts.comms.is_empty() {
        crate::host::recording_file::write_private(&recording, &path)?;
    } else {
        crate::host::recording_file::write(&recording, &path)?;
    }
    if let Some(run) = recording.runs.last() {
        show(&run.report)
            .with_context(|| format!("recording written to {}, then", path.display()))?;
    }
    Ok(path)
}

/// How an attach names what it traced: `attach --pid 42 --comm cc1`.
fn attach_words(opts: &AttachOptions) -> Vec<String> {
    let mut words = vec!["attach".to_string()];
    for p in &opts.pids {
        words.push(format!("--pid {p}"));
    }
    for c in &opts.cgroups {
        words.push(format!("--cgroup {}", c.display()));
    }
    for c in &opts.comms {
        words.push(format!("--comm {c}"));
    }
    words
}
