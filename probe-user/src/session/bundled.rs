//! The workloads bundled with vmtrace (`qsbench`, `build`, `memhog`,
//! `faults`) as `run` sees them: a bare name runs this very binary with
//! its default arguments and box, a recording names the workload with its
//! arguments and seed, a comma list for its sweep flag is one run per
//! value, and `vmtrace workload NAME` runs it in this process.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result, bail};

use crate::{model::recording::Workload, model::units::human, session::run_options::RunOptions};

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
    if o.spec.mem_limit.is_none() && o.spec.swap.is_none() && !o.no_box {
        o.spec.mem_limit = b.default_mem;
        o.spec.swap = b.default_swap;
    }
    if let Some(mem) = o.spec.mem_limit
        && mem < b.min_mem
    {
        bail!(
            "--mem {} is too small for {}: it needs at least {} to start",
            human(mem),
            b.name,
            human(b.min_mem)
        );
    }
    eprintln!(
        "vmtrace: {}: box {}, swapfile {}, arguments: {}",
        b.name,
        match o.spec.mem_limit {
            Some(m) => human(m),
            None if o.no_box => "none (the machine's memory)".into(),
            None => "without a limit".into(),
        },
        o.spec.swap.map_or("none".into(), human),
        o.command[3..]
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    Ok(o)
}

/// A build tree written before the measurement; removed on drop (every
/// way `run` ends; after a kill -9, by the next vmtrace's stale sweep).
pub struct PreparedTree(PathBuf);

impl Drop for PreparedTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The bundled build measures make, not the preparation: its tree (a
/// `cp -a` of --source, or the generated one) is written here, before
/// the box and the probes exist, as the command's user, into
/// `vmtrace-build-tree-<random>-PID/tree` in the swap directory (root's
/// outer directory, the user's tree: `host::output::scratch_tree`) (a disk, not tmpfs:
/// a kernel tree in RAM would be pressure of its own). The measured
/// command is pointed at it (`build --prepared DIR`). Issue 18: `cp` was
/// the task with the most reclaim stalls of a traced kernel build.
pub fn prepare_tree(
    opts: &mut RunOptions,
    identity: Option<&crate::host::privilege::Identity>,
) -> Result<Option<PreparedTree>> {
    let is_build = opts.command.get(1).is_some_and(|a| a == "workload")
        && opts.command.get(2).is_some_and(|a| a == "build");
    let given = opts.command.iter().any(|a| {
        let a = a.to_string_lossy();
        a.starts_with("--prepared") || a.starts_with("--prepare-into")
    });
    if !is_build || given {
        return Ok(None);
    }
    let (outer, dir) =
        crate::host::output::scratch_tree(&opts.spec.swap_dir, "vmtrace-build-tree", identity)
            .with_context(|| {
                format!(
                    "creating the build tree in {}; choose another --swap-dir",
                    opts.spec.swap_dir.display()
                )
            })?;
    let tree = PreparedTree(outer);
    let started = std::time::Instant::now();
    let mut prep = std::process::Command::new(&opts.command[0]);
    prep.args(&opts.command[1..3])
        .arg("--prepare-into")
        .arg(&dir)
        .args(&opts.command[3..]);
    if let Some(id) = identity.cloned() {
        use std::os::unix::process::CommandExt as _;
        // SAFETY: become_in_child makes only async-signal-safe calls.
        unsafe { prep.pre_exec(move || id.become_in_child()) };
    }
    let status = prep.status().context("preparing the build tree")?;
    if !status.success() {
        bail!(
            "preparing the build tree in {} failed ({status}); see the lines above",
            dir.display()
        );
    }
    eprintln!(
        "vmtrace: build: tree prepared in {} ({:.1} s, not measured)",
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    let mut command: Vec<OsString> = opts.command[..3].to_vec();
    command.push("--prepared".into());
    command.push(dir.into_os_string());
    command.extend(opts.command[3..].iter().cloned());
    opts.command = command;
    Ok(Some(tree))
}

/// What a recording names as the workload: a bundled workload with its
/// arguments (defaults filled in) and seed, or the command as given.
pub fn workload_of(opts: &RunOptions) -> Workload {
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
            Workload {
                name: b.name.into(),
                seed: (b.seed)(argv),
                arguments,
            }
        }
        None => Workload {
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

/// `vmtrace workload NAME ARGS...`: runs a bundled workload in this
/// process (what `run` starts inside the box); its exit code.
pub fn run_in_process(name: &str, args: Vec<OsString>) -> Result<i32> {
    let Some(b) = vmtrace_workloads::cli::bundled(name) else {
        bail!("no bundled workload named {name}");
    };
    // Show up as the workload, not as vmtrace, in ps and reports.
    if let Ok(c) = std::ffi::CString::new(b.name) {
        // SAFETY: PR_SET_NAME with a valid NUL-terminated string.
        unsafe { libc::prctl(libc::PR_SET_NAME, c.as_ptr() as libc::c_ulong, 0, 0, 0) };
    }
    let mut argv = vec![OsString::from(b.name)];
    argv.extend(args);
    Ok((b.main)(argv))
}
