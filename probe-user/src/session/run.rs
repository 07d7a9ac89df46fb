//! One traced run of a command (`vmtrace run`, once): set up the box,
//! attach the probes, run the command in the box, wait for it
//! (forwarding signals, printing progress), read what was measured, tear
//! everything down, and build the report. Repeats, sweeps and the
//! recording are `session::job`'s.

use std::{
    ffi::OsString,
    io,
    os::unix::process::CommandExt,
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, anyhow, bail};
use vmtrace_common::Target;

use crate::{
    host::membox::MemBox,
    host::privilege,
    model::report::{BoxReport, CollectorCost, Exit, RunReport, Usage},
    session::bundled::resolve_bundled,
    session::interrupt::{Signals, runtime_with_signals},
    session::preflight::{self, CannotStart},
    session::progress::Progress,
    session::run_options::RunOptions,
    session::tracer::{Tracer, Watch, Window},
};

pub struct RunOutcome {
    pub report: RunReport,
    /// What vmtrace should exit with: the command's status, or 128+signal.
    pub exit_code: i32,
}

/// One run: the caller (`session::job`) has checked for root.
pub fn run(opts: &RunOptions) -> Result<RunOutcome> {
    let mut opts = resolve_bundled(opts)?;
    let identity = prepare(&opts)?;
    // Before the box and the probes: a build's tree is not measured.
    let _tree = crate::session::bundled::prepare_tree(&mut opts, identity.as_ref())?;
    let opts = &opts;
    // Signals are caught from here on, so that Ctrl-C during setup still
    // tears down what was set up.
    let (rt, mut signals) = runtime_with_signals()?;
    let membox = MemBox::create(&opts.spec)?;
    let (target, target_text) = target_of(&membox)?;
    // vmtrace's own CPU time and memory are measured from here, so that
    // loading and verifying the programs count.
    let self_before = self_usage();
    // After the box: its swapfile is one of the areas.
    let attach_started = Instant::now();
    let mut tracer = if opts.no_probes {
        None
    } else {
        Some(Tracer::attach(
            target,
            &opts.probes.opted_in(),
            None,
            opts.probes.debug_probes,
        )?)
    };
    let attach_s = attach_started.elapsed().as_secs_f64();
    if rt.block_on(signals.pending()).is_some() {
        bail!("interrupted before the command started; nothing was left behind");
    }

    let window = match tracer.as_mut() {
        None => Window::open_untraced()?,
        Some(t) => Window::open(t, opts.probes.bpf_stats)?,
    };
    let pid = spawn(&opts.command, &membox, identity.as_ref())?;
    let mut watch = Watch::new(
        Some(&membox),
        tracer.as_mut().map(|t| &mut t.probes),
        opts.progress,
        opts.interval,
        &window.before,
    );
    let waited = rt.block_on(wait(pid, &mut signals, &mut watch, opts.wait_background))?;
    let samples = std::mem::take(&mut watch.samples);
    let mut report = match tracer {
        Some(tracer) => window.close(tracer, samples)?,
        None => window.close_untraced(),
    };
    if !opts.no_probes {
        report.collector = Some(collector_cost(&self_before, attach_s));
    }
    let box_report = membox.report();
    drop(membox);
    let ran = Ran {
        pid,
        identity,
        target_text,
        waited,
        box_report,
    };
    let exit_code = describe(&mut report, opts, ran);
    Ok(RunOutcome { report, exit_code })
}

/// The checks of one run before its box is made: the command exists,
/// whom it runs as, a box without swap, what a vmtrace that died left.
fn prepare(opts: &RunOptions) -> Result<Option<privilege::Identity>> {
    let program = opts.command.first().ok_or_else(|| {
        anyhow!("no command given; usage: vmtrace run [OPTIONS] -- COMMAND [ARGS]")
    })?;
    preflight::check_command_exists(program)?;
    let identity = privilege::command_identity(opts.as_root)?;
    preflight::note_without_swap(&opts.spec);
    preflight::clean_stale_box(&opts.spec.swap_dir)?;
    Ok(identity)
}

/// What the probes trace: the box's cgroup (v2), or every task; and how
/// the report says so.
fn target_of(membox: &MemBox) -> Result<(Target, String)> {
    Ok(match membox.v2_cgroup() {
        Some(cg) => {
            let id = cg.id()?;
            (
                Target {
                    cgroup_id: id,
                    cgroup_level: cg.level()?,
                    ..Target::EVERY_TASK
                },
                format!("the command's tasks (cgroup {}, id {id})", cg.dir.display()),
            )
        }
        None => (
            Target::EVERY_TASK,
            "every task (this machine has no cgroup v2 to tell the command's apart)".into(),
        ),
    })
}

/// vmtrace's own cost since `before`: attaching, and CPU and memory.
fn collector_cost(before: &CollectorCost, attach_s: f64) -> CollectorCost {
    let after = self_usage();
    CollectorCost {
        attach_s,
        user_s: after.user_s - before.user_s,
        sys_s: after.sys_s - before.sys_s,
        max_rss_bytes: after.max_rss_bytes,
    }
}

/// What happened to the command, besides what the probes measured.
struct Ran {
    pid: i32,
    identity: Option<privilege::Identity>,
    target_text: String,
    waited: Waited,
    box_report: BoxReport,
}

/// Fills in the command's part of the report (name, pid, identity,
/// target, exit, rusage, box); returns vmtrace's exit code.
fn describe(report: &mut RunReport, opts: &RunOptions, ran: Ran) -> i32 {
    let Ran {
        pid,
        identity,
        target_text,
        waited,
        box_report,
    } = ran;
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
        background_killed: waited.background as u32,
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
    code.unwrap_or_else(|| 128 + sig.unwrap_or(0))
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
    let child = cmd.spawn().map_err(|e| {
        let message = format!("cannot start `{}`: {e}{hint}", command[0].to_string_lossy());
        match e.kind() {
            io::ErrorKind::NotFound => anyhow::Error::new(CannotStart::not_found(message)),
            io::ErrorKind::PermissionDenied => {
                anyhow::Error::new(CannotStart::not_executable(message))
            }
            _ => anyhow!(message),
        }
    })?;
    // Reaped by wait4 below (for its rusage), not by std.
    i32::try_from(child.id()).context("child pid")
}

struct Waited {
    status: i32,
    rusage: libc::rusage,
    interrupted: bool,
    /// Processes still in the box when the wait ended (killed as the
    /// box is torn down).
    background: usize,
}

/// Waits for the command to end, sampling every interval and showing
/// progress meanwhile; the first signal is passed on to it, a second
/// kills it (and everything in its box). With `background`, the wait
/// goes on until the box is empty too (a signal then kills what is
/// left: the command's pid may already be another process's).
async fn wait(
    pid: i32,
    signals: &mut Signals,
    w: &mut Watch<'_>,
    background: bool,
) -> Result<Waited> {
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
    let mut empty_tick = tokio::time::interval(Duration::from_millis(100));
    let mut signals_seen = 0u32;
    let mut reaped = None;
    let left = |w: &Watch<'_>| w.membox.map_or(0, MemBox::processes);
    loop {
        tokio::select! {
            done = &mut reaper, if reaped.is_none() => {
                reaped = Some(done
                    .context("waiting for the command")?
                    .context("waiting for the command")?);
                if background && left(w) > 0 {
                    w.clear_status();
                    eprintln!(
                        "vmtrace: the command exited; waiting for the {} process(es) \
                         it left in the box (Ctrl-C kills them)",
                        left(w)
                    );
                    continue;
                }
            }
            _ = empty_tick.tick(), if reaped.is_some() => {
                if left(w) > 0 {
                    continue;
                }
            }
            sig = signals.next() => {
                signals_seen += 1;
                w.clear_status();
                pass_on(sig, signals_seen, reaped.is_none().then_some(pid), w.membox);
                continue;
            }
            _ = sample_tick.tick() => {
                w.sample(started.elapsed().as_secs_f64());
                w.show_status();
                continue;
            }
            _ = progress_tick.tick(), if matches!(w.progress, Progress::Plain(_)) => {
                w.print_progress();
                continue;
            }
        }
        // The command was reaped and nothing more is waited for.
        if let Some((status, rusage)) = reaped {
            w.sample(started.elapsed().as_secs_f64());
            w.clear_status();
            return Ok(Waited {
                status,
                rusage,
                interrupted: signals_seen > 0,
                background: left(w),
            });
        }
    }
}

/// The `seen`th signal during the wait: the first is passed on to the
/// command while it runs (`pid`), a second kills it and its box; once
/// it was reaped (None: its pid may be another process's by now), what
/// it left in the box is killed.
fn pass_on(sig: i32, seen: u32, pid: Option<i32>, membox: Option<&MemBox>) {
    match pid {
        Some(pid) if seen == 1 => {
            eprintln!(
                "vmtrace: passing the signal on; waiting for the command to end (again to kill it)"
            );
            // SAFETY: signalling our own child, not yet reaped.
            unsafe { libc::kill(pid, sig) };
            return;
        }
        Some(pid) => {
            eprintln!("vmtrace: killing the command");
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        None => eprintln!("vmtrace: killing what the command left in the box"),
    }
    if let Some(b) = membox {
        b.kill_all();
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
