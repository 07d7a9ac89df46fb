//! Parsed arguments to calls: each subcommand's arguments become the
//! session's (or the views') options, the call is made, its result is
//! printed, and the exit code returned. Usage errors are one line.

use std::{io::IsTerminal, time::Duration};

use anyhow::{Context, Result};

use super::views::{self, STDOUT};
use super::{AttachArgs, Cli, Commands, KernelsArgs, RunArgs};
use crate::{
    host::{membox::BoxSpec, stdout},
    session::{attach::AttachOptions, guests, job, progress::Progress, run_options::RunOptions},
    view::{json, report::RunsTable},
};

/// A command-line error as one line (clap's message, its lines joined,
/// without the usage block), pointing at --help; None for --help and
/// --version, which are not errors.
pub fn one_line_usage_error(e: &clap::Error) -> Option<String> {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        return None;
    }
    let text = e.render().to_string();
    let message: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.is_empty() && !l.starts_with("Usage:"))
        .collect();
    let message = message.join(" ");
    let message = message.trim_start_matches("error: ").trim_end_matches('.');
    Some(format!("{message}; see --help"))
}

/// Runs the parsed command line; returns the process exit code.
pub fn dispatch(cli: Cli) -> Result<i32> {
    // `run` and `attach` release the held signals once their handlers are
    // in place; `kernels` keeps them held and polls (its guests and their
    // disk images are torn down); the rest has nothing to tear down.
    if !matches!(
        cli.command,
        Commands::Run(_) | Commands::Attach(_) | Commands::Kernels(_)
    ) {
        crate::session::interrupt::release_signals();
    }
    match cli.command {
        Commands::Run(args) => run_command(args),
        Commands::Kernels(args) => guests::kernels(&kernels_options(args)),
        Commands::Workload { name, args } => crate::session::bundled::run_in_process(&name, args),
        Commands::BuildKernel {
            cache,
            tree,
            patches,
        } => guests::kbuild::build_command(&cache, &tree, &patches),
        Commands::Report { files, json } => views::report_command(&files, json),
        Commands::Attach(args) => attach_command(args),
        Commands::Compare {
            files,
            prometheus: Some(url),
            group,
            range,
            at,
            cgroup,
            max_series,
            json,
            format,
            fail_if,
            ..
        } => views::fleet_command(
            &views::FleetArgs {
                url: &url,
                group: &group,
                rest: &files,
                range: &range,
                at: at.as_deref(),
                cgroup: cgroup.as_deref(),
                max_series,
            },
            if json {
                views::CompareOutput::Json
            } else {
                views::CompareOutput::Text(format)
            },
            fail_if,
        ),
        Commands::Compare {
            files,
            label,
            detail,
            json,
            format,
            svg,
            flamegraph,
            cpu_flamegraph,
            force,
            fail_if,
            ..
        } => views::compare_command(
            &files,
            &label,
            detail,
            if json {
                views::CompareOutput::Json
            } else {
                views::CompareOutput::Text(format)
            },
            views::Drawings {
                svg: svg.as_deref(),
                flamegraph: flamegraph.as_deref(),
                cpu_flamegraph: cpu_flamegraph.as_deref(),
            },
            force,
            fail_if,
        ),
        Commands::Export {
            files,
            format,
            output,
            redact,
        } => views::export_command(&files, format, output.as_deref(), redact),
        Commands::Probes { json } => probes_command(json),
        Commands::Generate { kind, command } => {
            let mut out = std::io::stdout().lock();
            super::generate::generate(&kind, command.as_deref(), &mut out)?;
            Ok(0)
        }
    }
}

/// `vmtrace run`: a report per run as it ends, then (for several runs)
/// the runs table, or everything as JSON; exits as the command did.
fn run_command(args: RunArgs) -> Result<i32> {
    let as_json = args.json;
    let progress = if args.quiet {
        Progress::Quiet
    } else {
        Progress::from_mode(&args.progress, std::io::stderr().is_terminal())
    };
    let opts = job::JobOptions {
        run: RunOptions {
            command: args.command,
            label: None,
            spec: BoxSpec {
                mem_limit: args.mem,
                swap: args.swap,
                swap_dir: args.swap_dir,
            },
            no_box: args.no_box,
            probes: args.probes.into(),
            no_probes: args.no_probes,
            as_root: args.as_root,
            wait_background: args.wait_background,
            progress,
            interval: Duration::from_secs_f64(args.interval),
        },
        repeat: args.repeat,
        sysctls: args.sysctl,
        switches: args
            .mglru
            .map(job::Switch::mglru)
            .into_iter()
            .chain(args.zswap.map(job::Switch::zswap))
            .collect(),
        output: args.output,
    };
    let done = job::run_job(&opts, |report, total| {
        if !as_json {
            stdout::print(&crate::view::report::to_text(report)).context(STDOUT)?;
            if total > 1 {
                stdout::println("").context(STDOUT)?;
            }
        }
        Ok(())
    })?;
    let table = RunsTable::of_recording(&done.recording);
    if as_json {
        let doc = json::RunDocument {
            runs: done.recording.runs.iter().map(|r| &r.report).collect(),
            summary: &table,
        };
        stdout::println(&json::to_json(&doc)?).context(STDOUT)?;
    } else if done.total > 1 {
        stdout::print(&table.to_text()).context(STDOUT)?;
    }
    eprintln!("vmtrace: recording written to {}", done.path.display());
    Ok(done.exit_code)
}

/// `vmtrace attach`: the report of the window, and its recording.
fn attach_command(args: AttachArgs) -> Result<i32> {
    let opts = AttachOptions {
        pids: args.pid,
        cgroups: args.cgroup,
        comms: args.comm,
        duration: args.duration.map(Duration::from_secs_f64),
        lines: args.interval.map(Duration::from_secs_f64),
        interval: Duration::from_secs_f64(args.interval.unwrap_or(1.0)),
        probes: args.probes.into(),
        progress: None,
        serve: args
            .serve
            .map(|listen| crate::session::serve::ServeOptions {
                listen,
                public: args.serve_public,
                max_cgroups: args.max_cgroups,
                coarse_cgroups: args.cgroup_buckets == "coarse",
            }),
    };
    let as_json = args.json;
    let path = job::attach_job(&opts, args.output.as_deref(), |report| {
        if as_json {
            stdout::println(&json::to_json(&json::AttachDocument { report })?).context(STDOUT)?;
        } else {
            stdout::print(&crate::view::report::to_text(report)).context(STDOUT)?;
        }
        Ok(())
    })?;
    eprintln!("vmtrace: recording written to {}", path.display());
    Ok(0)
}

fn kernels_options(a: KernelsArgs) -> guests::KernelsOptions {
    guests::KernelsOptions {
        kernels: a.kernels,
        mem: a.mem,
        swap: a.swap,
        swap_rate: a.swap_rate,
        disk: a.disk,
        cpus: a.cpus,
        numa_nodes: a.numa_nodes,
        repeat: a.repeat,
        timeout: Duration::from_secs(a.timeout.max(10)),
        accel: match a.accel.as_str() {
            "kvm" => guests::Accel::Kvm,
            "tcg" => guests::Accel::Tcg,
            _ => guests::Accel::Auto,
        },
        storage: if a.storage == "9p" {
            guests::Storage::NineP
        } else {
            guests::Storage::Image
        },
        out: a.out,
        build_cache: a.build_cache,
        command: a.command,
    }
}

/// `vmtrace probes`: the catalogue against this kernel.
fn probes_command(as_json: bool) -> Result<i32> {
    let listed = crate::session::tracer::probe_listing()?;
    let kernel = crate::host::proc::kernel_release();
    if as_json {
        let doc = json::ProbesDocument {
            kernel: &kernel,
            probes: &listed,
        };
        stdout::println(&json::to_json(&doc)?).context(STDOUT)?;
    } else {
        stdout::print(&crate::view::report::probes_text(&kernel, &listed)).context(STDOUT)?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::ffi::OsString;

    fn v(args: &str) -> Vec<OsString> {
        args.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn usage_errors_are_one_line_and_help_is_not_an_error() {
        for (args, want) in [
            (
                "vmtrace run --interval 0 -- true",
                "--interval 0 is out of range",
            ),
            ("vmtrace run --mem -1G -- true", "negative"),
            (
                "vmtrace run",
                "required arguments were not provided: <COMMAND>",
            ),
            ("vmtrace nosuch", "unrecognized subcommand 'nosuch'"),
        ] {
            let e = Cli::try_parse_from(v(args)).expect_err(args);
            let line = one_line_usage_error(&e).expect("an error");
            assert!(!line.contains('\n'), "{line}");
            assert!(
                line.contains(want) && line.ends_with("; see --help"),
                "{line}"
            );
        }
        let e = Cli::try_parse_from(v("vmtrace run --help")).expect_err("help");
        assert_eq!(one_line_usage_error(&e), None);
    }
}
