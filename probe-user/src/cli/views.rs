//! The subcommands that only read recordings: `report`, `compare` and
//! `export`. Each reads its files, asks the view layer for text, JSON or
//! an image, and prints it or writes it where `-o`/`--svg` says.

use std::{
    io::{IsTerminal, Write},
    path::{Path, PathBuf},
};

use anyhow::{Context, Result};

use super::TextForm;
use crate::{
    analysis::{Comparison, GroupInput},
    host::stdout,
    model::format::{printable, printable_lines},
    model::recording::Recording,
    session::preflight::check_writable,
    view::{export::ExportFormat, json},
};

/// What a failed write to standard output is said as (its error after),
/// here and in `dispatch`.
pub(super) const STDOUT: &str = "writing to standard output";

fn read_all(files: &[PathBuf]) -> Result<Vec<Recording>> {
    files
        .iter()
        .map(|f| crate::host::recording_file::read(f))
        .collect()
}

/// The recordings as compare needs them: each run's report without its
/// time line, the bulk of a long recording and read by no comparison.
/// A file at a time, its time lines dropped before the next is read, so
/// memory is one file's parse plus small reports however many are given.
fn read_without_timelines(files: &[PathBuf]) -> Result<Vec<Recording>> {
    files
        .iter()
        .map(|f| {
            let mut rec = crate::host::recording_file::read(f)?;
            for run in &mut rec.runs {
                run.report.timeline = Vec::new();
            }
            Ok(rec)
        })
        .collect()
}

/// Whether stdout is a terminal that wants colour (NO_COLOR unset).
fn colour_on_stdout() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// `vmtrace report`: each recording's text, coloured on a terminal.
pub(super) fn report_command(files: &[PathBuf], as_json: bool) -> Result<i32> {
    let recordings = read_all(files)?;
    if as_json {
        let doc = json::ReportDocument {
            recordings: recordings.iter().collect(),
        };
        stdout::println(&json::to_json(&doc)?).context(STDOUT)?;
        return Ok(0);
    }
    let colour = colour_on_stdout();
    for (i, (rec, file)) in recordings.iter().zip(files).enumerate() {
        if i > 0 {
            stdout::println("").context(STDOUT)?;
        }
        let mut text = format!("recording: {}\n", file.display());
        text.push_str(&crate::view::export::text::render(rec));
        if colour {
            text = crate::view::report::colourize(&text);
        }
        stdout::print(&text).context(STDOUT)?;
    }
    Ok(0)
}

/// What `compare` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareOutput {
    /// `--json`: a `vmtrace-compare` document.
    Json,
    Text(TextForm),
}

/// `vmtrace compare`: groups of recordings side by side.
pub(super) fn compare_command(
    args: &[String],
    labels: &[String],
    detail: bool,
    output: CompareOutput,
    drawings: Drawings,
    force: bool,
    fail_if: Option<f64>,
) -> Result<i32> {
    let groups = compare_groups(args, labels)?;
    let recordings: Vec<Vec<Recording>> = groups
        .iter()
        .map(|g| read_without_timelines(g))
        .collect::<Result<_>>()?;
    let inputs: Vec<GroupInput> = groups
        .iter()
        .zip(&recordings)
        .enumerate()
        .map(|(i, (files, recs))| GroupInput {
            label: labels.get(i).cloned(),
            files: files.iter().map(|f| f.display().to_string()).collect(),
            recordings: recs.iter().collect(),
        })
        .collect();
    let (columns, skipped) = crate::analysis::sweep::compare_columns(&inputs, force)?;
    if let Some(path) = drawings.svg {
        if columns.len() > 1 {
            eprintln!(
                "vmtrace: --svg plots the first sweep value ({}) only",
                printable(&columns[0].sweep_value)
            );
        }
        write_plots(path, &columns[0].comparison, &inputs)?;
    }
    if let Some(path) = drawings.flamegraph {
        write_flamegraph(path, &columns[0].comparison)?;
    }
    if let Some(path) = drawings.cpu_flamegraph {
        write_cpu_flamegraph(path, &columns[0].comparison, &inputs)?;
    }
    // Labels, workloads and machines' names come from the recordings.
    let text = || {
        printable_lines(&crate::view::compare::columns::render(
            &columns, &skipped, detail,
        ))
    };
    match output {
        CompareOutput::Json => stdout::println(&json::to_json(&json::CompareDocument {
            source: json::Source::Recordings,
            columns: &columns,
            not_compared: &skipped,
            fleet: None,
        })?),
        CompareOutput::Text(TextForm::Auto) if colour_on_stdout() => {
            stdout::print(&crate::view::report::colourize(&text()))
        }
        CompareOutput::Text(TextForm::Auto | TextForm::Text) => stdout::print(&text()),
    }
    .context(STDOUT)?;
    let slower = |c: &crate::analysis::sweep::Column| {
        c.comparison.versus.iter().any(|v| {
            v.verdict == crate::analysis::Verdict::Slower
                && v.elapsed
                    .and_then(|e| e.pct)
                    .is_some_and(|p| p >= fail_if.unwrap_or(0.0))
        })
    };
    Ok(match fail_if {
        Some(_) if columns.iter().any(slower) => super::exit::CONDITION_MET,
        _ => 0,
    })
}

/// `compare --prometheus`'s arguments.
pub(super) struct FleetArgs<'a> {
    pub url: &'a str,
    /// `--group`: A's matchers.
    pub group: &'a [String],
    /// The positional words: more of A's matchers, `--vs`, B's.
    pub rest: &'a [String],
    pub range: &'a str,
    pub at: Option<&'a str>,
    pub cgroup: Option<&'a str>,
    pub max_series: usize,
}

/// `vmtrace compare --prometheus URL --group M --vs M`: two groups of
/// hosts, as text or a `vmtrace-compare` document (`source`:
/// prometheus); `--fail-if` as for recordings, on reclaim stall time.
pub(super) fn fleet_command(
    args: &FleetArgs,
    output: CompareOutput,
    fail_if: Option<f64>,
) -> Result<i32> {
    let mut parts = args.rest.split(|a| a == "--vs");
    let mut a: Vec<String> = args.group.to_vec();
    a.extend(parts.next().unwrap_or_default().iter().cloned());
    let b: Vec<String> = parts.next().unwrap_or_default().to_vec();
    if parts.next().is_some() || a.is_empty() || b.is_empty() {
        anyhow::bail!(
            "compare --prometheus needs two groups: --group 'kernel=~\"6.1.*\"' --vs 'kernel=~\"6.12.*\"'"
        );
    }
    let (query, [ga, gb]) = crate::session::fleet::read(&crate::session::fleet::Ask {
        url: args.url,
        groups: [a, b],
        window: args.range,
        at: args.at,
        cgroup: args.cgroup,
        max_series: args.max_series,
    })?;
    let fleet = crate::analysis::fleet::compare(query, &ga, &gb);
    let text = || printable_lines(&crate::view::compare::fleet::render(&fleet));
    match output {
        CompareOutput::Json => stdout::println(&json::to_json(&json::CompareDocument {
            source: json::Source::Prometheus,
            columns: &[],
            not_compared: &[],
            fleet: Some(&fleet),
        })?),
        CompareOutput::Text(TextForm::Auto) if colour_on_stdout() => {
            stdout::print(&crate::view::report::colourize(&text()))
        }
        CompareOutput::Text(TextForm::Auto | TextForm::Text) => stdout::print(&text()),
    }
    .context(STDOUT)?;
    let slower = fleet.verdict == crate::analysis::Verdict::Slower
        && fleet
            .stall_time
            .and_then(|c| c.pct)
            .is_none_or(|p| p >= fail_if.unwrap_or(0.0));
    Ok(match fail_if {
        Some(_) if slower => super::exit::CONDITION_MET,
        _ => 0,
    })
}

/// The recordings of each group: A before the first `--vs`, then one
/// group after each; refused when fewer than two, one empty, an unknown
/// option among them, or more labels than groups.
fn compare_groups(args: &[String], labels: &[String]) -> Result<Vec<Vec<PathBuf>>> {
    let groups: Vec<Vec<PathBuf>> = args
        .split(|a| a == "--vs")
        .map(|g| g.iter().map(PathBuf::from).collect())
        .collect();
    if groups.len() < 2 {
        anyhow::bail!(
            "compare needs two groups: vmtrace compare A.vmtrace.json... --vs B.vmtrace.json..."
        );
    }
    if let Some(i) = groups.iter().position(Vec::is_empty) {
        anyhow::bail!(
            "group {} has no recordings: give files after each --vs",
            crate::model::format::group_letter(i)
        );
    }
    if let Some(flag) = args.iter().find(|a| a.starts_with('-') && *a != "--vs") {
        anyhow::bail!("unknown option {flag} among the recordings; see vmtrace compare --help");
    }
    if labels.len() > groups.len() {
        anyhow::bail!(
            "{} --label given for {} groups; give one per group, in order",
            labels.len(),
            groups.len()
        );
    }
    Ok(groups)
}

/// `compare --svg PATH`: the groups' latency plots, as SVG, or as PNG
/// when PATH ends in .png.
/// What `compare` draws besides its text.
pub(super) struct Drawings<'a> {
    /// `--svg`: the latency distributions.
    pub svg: Option<&'a Path>,
    /// `--flamegraph`: where reclaim was entered, B against A.
    pub flamegraph: Option<&'a Path>,
    /// `--cpu-flamegraph`: the CPU inside the stalls, B against A.
    pub cpu_flamegraph: Option<&'a Path>,
}

/// `compare --cpu-flamegraph`: the job's in-stall CPU of B against A,
/// as a differential SVG (only functions that moved coloured), or a
/// `.folded` diff.
fn write_cpu_flamegraph(path: &Path, cmp: &Comparison, inputs: &[GroupInput]) -> Result<()> {
    check_writable(path)?;
    let stacks = crate::analysis::profile::stack_shares(inputs, 1);
    let folded = path.extension().is_some_and(|e| e == "folded");
    let text = if folded {
        crate::view::export::cpu_folded::diff_folded(&stacks)?
    } else {
        let moved: Vec<&str> = crate::analysis::profile::moved(&cmp.profile, 1)
            .iter()
            .map(|r| r.function.as_str())
            .collect();
        let label = |i: usize| cmp.groups.get(i).map_or("?", |g| g.label.as_str());
        let title = format!(
            "CPU inside reclaim and compaction: {} vs {}",
            label(1),
            label(0)
        );
        crate::view::export::cpu_folded::differential_svg(
            &stacks,
            &|f: &str| moved.contains(&f),
            &title,
        )?
    };
    crate::host::output::write_atomic(path, text.as_bytes()).map_err(|e| {
        anyhow::anyhow!(
            "cannot write {}: {e}; choose another path with --cpu-flamegraph",
            path.display()
        )
    })?;
    eprintln!("vmtrace: CPU flame graph written to {}", path.display());
    Ok(())
}

/// `compare --flamegraph`: the ways in of B against A, differential.
fn write_flamegraph(path: &Path, cmp: &Comparison) -> Result<()> {
    check_writable(path)?;
    let mean = |d: Option<crate::analysis::stats::Describe>| d.map_or(0.0, |d| d.mean);
    let ways: Vec<(crate::model::report::EntryWay, Vec<String>, f64, f64)> = cmp
        .entries
        .iter()
        .map(|r| {
            let b = r.groups.get(1).copied().flatten();
            (r.context, r.frames.clone(), mean(r.groups[0]), mean(b))
        })
        .collect();
    let label = |i: usize| cmp.groups.get(i).map_or("?", |g| g.label.as_str());
    let title = format!(
        "where reclaim was entered: {} vs {} (us stalled per run)",
        label(1),
        label(0)
    );
    let svg = crate::view::export::folded::differential(&ways, &title)?;
    crate::host::output::write_atomic(path, svg.as_bytes()).map_err(|e| {
        anyhow::anyhow!(
            "cannot write {}: {e}; choose another path with --flamegraph",
            path.display()
        )
    })?;
    eprintln!("vmtrace: flame graph written to {}", path.display());
    Ok(())
}

fn write_plots(path: &Path, cmp: &Comparison, inputs: &[GroupInput]) -> Result<()> {
    check_writable(path)?;
    let page = crate::view::compare::svg(cmp, inputs);
    let bytes = if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"))
    {
        crate::view::export::png::to_png(&page)?
    } else {
        page.into_bytes()
    };
    crate::host::output::write_atomic(path, &bytes).map_err(|e| {
        anyhow::anyhow!(
            "cannot write {}: {e}; choose another path with --svg",
            path.display()
        )
    })?;
    eprintln!("vmtrace: latency plots written to {}", path.display());
    Ok(())
}

/// `vmtrace export`: one recording (several for svg) in another format.
pub(super) fn export_command(
    files: &[PathBuf],
    format: ExportFormat,
    output: Option<&Path>,
    redact: bool,
) -> Result<i32> {
    let mut recordings = read_all(files)?;
    if redact {
        for r in &mut recordings {
            r.environment.redact();
        }
    }
    let refs: Vec<&Recording> = recordings.iter().collect();
    crate::view::export::check(&refs, format)?;
    let render = |w: &mut dyn Write| {
        crate::view::export::render(&refs, format, w).map_err(|e| {
            // A write's own error as it was (a closed pipe ends quietly).
            e.downcast::<std::io::Error>()
                .unwrap_or_else(|e| std::io::Error::other(format!("{e:#}")))
        })
    };
    match output {
        Some(path) => {
            check_writable(path)?;
            crate::host::output::write_atomic_with(path, render).map_err(|e| {
                anyhow::anyhow!(
                    "cannot write {}: {e}; choose another path with -o",
                    path.display()
                )
            })?;
        }
        None => {
            if format.binary() && std::io::stdout().is_terminal() {
                anyhow::bail!("PNG is binary; write it to a file with -o plots.png");
            }
            stdout::stream(render).context(STDOUT)?;
        }
    }
    Ok(0)
}
