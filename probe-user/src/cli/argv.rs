//! argv, rewritten before clap parses it, so that options may stand where
//! users put them: vmtrace's own `run` options after a bundled workload's
//! name (`vmtrace run build -j 2,4 --mem 128M --repeat 2`), and compare's
//! options among the recordings (`vmtrace compare a.json --vs b.json
//! --detail`).

use std::ffi::OsString;

/// `vmtrace compare` options and whether each takes a value.
const COMPARE_OPTIONS: &[(&str, bool)] = &[
    ("--label", true),
    ("--format", true),
    ("--svg", true),
    ("--detail", false),
    ("--json", false),
    ("--force", false),
    ("--help", false),
    ("-h", false),
];

/// `vmtrace compare A... --vs B... --detail`: compare's own options may
/// stand anywhere; they are moved in front of the recordings, which then
/// keep their order with the `--vs` separators between groups.
fn hoist_compare_options(argv: Vec<OsString>) -> Vec<OsString> {
    let mut head: Vec<OsString> = argv[..2].to_vec();
    let mut files = Vec::new();
    let mut i = 2;
    while i < argv.len() {
        let a = argv[i].to_str().unwrap_or("");
        let value = a.split_once('=').map_or(a, |(k, _)| k);
        match COMPARE_OPTIONS.iter().find(|(o, _)| *o == value) {
            Some((_, true)) if !a.contains('=') && i + 1 < argv.len() => {
                head.extend_from_slice(&argv[i..i + 2]);
                i += 2;
            }
            Some(_) => {
                head.push(argv[i].clone());
                i += 1;
            }
            None => {
                files.push(argv[i].clone());
                i += 1;
            }
        }
    }
    head.extend(files);
    head
}

/// `vmtrace run` options and whether each takes a value.
const RUN_OPTIONS: &[(&str, bool)] = &[
    ("--mem", true),
    ("--swap", true),
    ("--swap-dir", true),
    ("--repeat", true),
    ("--interval", true),
    ("--progress", true),
    ("--output", true),
    ("-o", true),
    ("--quiet", false),
    ("--sysctl", true),
    ("-q", false),
    ("--json", false),
    ("--fault-latency", false),
    ("--page-alloc", false),
    ("--bpf-stats", false),
];

/// Lets vmtrace's own options follow a bundled workload's name, as in
/// `vmtrace run build -j 2,4 --mem 128M --swap 1G --repeat 2`: they are
/// moved in front of the name before parsing. Only for bundled workloads
/// (their own flags never clash with these), and not after a `--`.
pub fn hoist_bundled_options(argv: Vec<OsString>) -> Vec<OsString> {
    if argv.get(1).and_then(|a| a.to_str()) == Some("compare") {
        return hoist_compare_options(argv);
    }
    if argv.get(1).and_then(|a| a.to_str()) != Some("run") {
        return argv;
    }
    let mut i = 2;
    // Find the workload name: the first word that is not an option or an
    // option's value.
    while i < argv.len() {
        let Some(a) = argv[i].to_str() else {
            return argv;
        };
        if a == "--" {
            return argv;
        }
        if let Some((_, takes)) = RUN_OPTIONS.iter().find(|(o, _)| *o == a) {
            i += if *takes { 2 } else { 1 };
            continue;
        }
        if a.starts_with('-') {
            i += 1;
            continue;
        }
        break;
    }
    if i >= argv.len()
        || argv[i]
            .to_str()
            .and_then(vmtrace_workloads::cli::bundled)
            .is_none()
    {
        return argv;
    }
    let (head, tail) = argv.split_at(i);
    let mut hoisted = Vec::new();
    let mut rest = vec![tail[0].clone()];
    let mut j = 1;
    while j < tail.len() {
        let a = tail[j].to_str().unwrap_or("");
        match RUN_OPTIONS.iter().find(|(o, _)| *o == a) {
            Some((_, true)) if j + 1 < tail.len() => {
                hoisted.extend_from_slice(&tail[j..j + 2]);
                j += 2;
            }
            Some((_, false)) => {
                hoisted.push(tail[j].clone());
                j += 1;
            }
            _ => {
                rest.push(tail[j].clone());
                j += 1;
            }
        }
    }
    head.iter().cloned().chain(hoisted).chain(rest).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Commands};
    use clap::Parser;

    fn v(args: &str) -> Vec<OsString> {
        args.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn vmtrace_options_after_a_bundled_workload_are_hoisted() {
        assert_eq!(
            hoist_bundled_options(v(
                "vmtrace run build -j 2,4 --mem 128M --swap 1G --repeat 2"
            )),
            v("vmtrace run --mem 128M --swap 1G --repeat 2 build -j 2,4")
        );
        assert_eq!(
            hoist_bundled_options(v("vmtrace run --json qsbench -m 350 --fault-latency")),
            v("vmtrace run --json --fault-latency qsbench -m 350")
        );
        // Not a bundled workload, or after --: left alone.
        for argv in [
            "vmtrace run make -j4 --mem 1G",
            "vmtrace run -- qsbench --mem 1G",
            "vmtrace probes --json",
        ] {
            assert_eq!(hoist_bundled_options(v(argv)), v(argv));
        }
    }

    #[test]
    fn hoisted_command_lines_parse() {
        let argv = hoist_bundled_options(v("vmtrace run build -j 2,4 --mem 128M --repeat 2"));
        let cli = Cli::try_parse_from(argv).expect("parses");
        let Commands::Run(run) = cli.command else {
            panic!("not run")
        };
        assert_eq!(run.mem, Some(128 << 20));
        assert_eq!(run.repeat, 2);
        assert_eq!(run.command, v("build -j 2,4"));
    }
}
