//! argv, rewritten before clap parses it, so that options may stand where
//! users put them: vmtrace's own `run` options after a bundled workload's
//! name (`vmtrace run build -j 2,4 --mem 128M --repeat 2`), and compare's
//! options among the recordings (`vmtrace compare a.json --vs b.json
//! --detail`). Which words are options, and which of them take a value,
//! is read from clap's own definition of the subcommand, so that a new
//! option is hoisted as soon as it is defined.

use std::ffi::OsString;

use clap::{ArgAction, CommandFactory};

use super::Cli;

/// One option of a subcommand: its spellings (`--mem`, `-o`) and whether
/// it takes a value.
#[derive(Debug)]
struct OptionSpec {
    spellings: Vec<String>,
    takes_value: bool,
}

/// How a word of argv names an option.
#[derive(Debug, PartialEq)]
enum Spelled {
    /// `--mem`: its value, if it takes one, is the next word.
    Alone { takes_value: bool },
    /// `--mem=1G`: name and value in one word.
    WithValue,
}

/// The options of a subcommand, from clap's definition of it (built, so
/// that every argument is final). Help is left out unless `with_help`.
fn options_of(subcommand: &str, with_help: bool) -> Vec<OptionSpec> {
    let mut cli = Cli::command();
    cli.build();
    let Some(sub) = cli.find_subcommand(subcommand) else {
        return Vec::new();
    };
    sub.get_arguments()
        .filter(|a| !a.is_positional())
        .filter(|a| with_help || !is_help(a.get_action()))
        .map(|a| {
            let longs = a.get_long_and_visible_aliases().unwrap_or_default();
            let shorts = a.get_short_and_visible_aliases().unwrap_or_default();
            OptionSpec {
                spellings: longs
                    .iter()
                    .map(|l| format!("--{l}"))
                    .chain(shorts.iter().map(|s| format!("-{s}")))
                    .collect(),
                takes_value: a.get_action().takes_values(),
            }
        })
        .collect()
}

fn is_help(action: &ArgAction) -> bool {
    matches!(
        action,
        ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version
    )
}

/// Whether `word` is one of `options`, and how it is spelled.
fn spelled(options: &[OptionSpec], word: &str) -> Option<Spelled> {
    let (name, joined) = match word.split_once('=') {
        Some((name, _)) => (name, true),
        None => (word, false),
    };
    let o = options
        .iter()
        .find(|o| o.spellings.iter().any(|s| s == name))?;
    Some(if joined {
        Spelled::WithValue
    } else {
        Spelled::Alone {
            takes_value: o.takes_value,
        }
    })
}

/// Lets vmtrace's own options follow a bundled workload's name, as in
/// `vmtrace run build -j 2,4 --mem 128M --swap 1G --repeat 2`: they are
/// moved in front of the name before parsing. Only for bundled workloads
/// (no option of theirs is spelled like one of `run`'s: a unit test
/// checks it), and not after a `--`. `-h`/`--help` after the name stay
/// the workload's: `vmtrace run qsbench --help` is qsbench's help.
pub fn hoist_bundled_options(argv: Vec<OsString>) -> Vec<OsString> {
    match argv.get(1).and_then(|a| a.to_str()) {
        Some("compare") => hoist_compare_options(argv),
        Some("run") => hoist_run_options(argv),
        _ => argv,
    }
}

fn hoist_run_options(argv: Vec<OsString>) -> Vec<OsString> {
    let options = options_of("run", false);
    let Some(i) = bundled_workload_at(&argv, &options) else {
        return argv;
    };
    let (head, tail) = argv.split_at(i);
    let mut hoisted = Vec::new();
    let mut rest = vec![tail[0].clone()];
    let mut j = 1;
    while j < tail.len() {
        let word = tail[j].to_str().unwrap_or("");
        match spelled(&options, word) {
            Some(Spelled::Alone { takes_value: true }) if j + 1 < tail.len() => {
                hoisted.extend_from_slice(&tail[j..j + 2]);
                j += 2;
            }
            // A value option without its value stays the workload's, as
            // any word vmtrace does not know.
            Some(Spelled::Alone { takes_value: true }) | None => {
                rest.push(tail[j].clone());
                j += 1;
            }
            Some(Spelled::Alone { takes_value: false } | Spelled::WithValue) => {
                hoisted.push(tail[j].clone());
                j += 1;
            }
        }
    }
    head.iter().cloned().chain(hoisted).chain(rest).collect()
}

/// Where a bundled workload's name stands in `vmtrace run ...`: the first
/// word that is neither an option nor an option's value; None when that
/// is no bundled workload, or a `--` comes first.
fn bundled_workload_at(argv: &[OsString], options: &[OptionSpec]) -> Option<usize> {
    let mut i = 2;
    while i < argv.len() {
        let word = argv[i].to_str()?;
        if word == "--" {
            return None;
        }
        match spelled(options, word) {
            Some(Spelled::Alone { takes_value: true }) => i += 2,
            Some(_) => i += 1,
            None if word.starts_with('-') => i += 1,
            None => break,
        }
    }
    argv.get(i)
        .and_then(|a| a.to_str())
        .and_then(vmtrace_workloads::cli::bundled)
        .map(|_| i)
}

/// `vmtrace compare A... --vs B... --detail`: compare's own options may
/// stand anywhere; they are moved in front of the recordings, which then
/// keep their order with the `--vs` separators between groups.
fn hoist_compare_options(argv: Vec<OsString>) -> Vec<OsString> {
    let options = options_of("compare", true);
    let mut head: Vec<OsString> = argv[..2].to_vec();
    let mut files = Vec::new();
    let mut i = 2;
    while i < argv.len() {
        let word = argv[i].to_str().unwrap_or("");
        match spelled(&options, word) {
            Some(Spelled::Alone { takes_value: true }) if i + 1 < argv.len() => {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Commands, RunArgs};
    use clap::{Parser, parser::ValueSource};

    fn v(args: &str) -> Vec<OsString> {
        args.split(' ').map(OsString::from).collect()
    }

    fn run_args(argv: Vec<OsString>) -> RunArgs {
        let cli = Cli::try_parse_from(argv).expect("parses");
        let Commands::Run(run) = cli.command else {
            panic!("not run")
        };
        run
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
        let run = run_args(hoist_bundled_options(v(
            "vmtrace run build -j 2,4 --mem 128M --repeat 2",
        )));
        assert_eq!(run.mem, Some(128 << 20));
        assert_eq!(run.repeat, 2);
        assert_eq!(run.command, v("build -j 2,4"));
    }

    /// The two options the hand-kept list of `run`'s options had lost:
    /// they went to the workload ("unexpected argument '--no-probes'").
    #[test]
    fn no_probes_and_as_root_after_a_workload_are_vmtraces() {
        let run = run_args(hoist_bundled_options(v(
            "vmtrace run qsbench -m 20 --no-probes",
        )));
        assert!(run.no_probes);
        assert_eq!(run.command, v("qsbench -m 20"));
        let run = run_args(hoist_bundled_options(v("vmtrace run memhog --as-root")));
        assert!(run.as_root);
        assert_eq!(run.command, v("memhog"));
    }

    /// A value `run`'s option accepts, for the test below: one of its
    /// possible values, or one named here.
    fn sample_value(arg: &clap::Arg) -> String {
        if let Some(p) = arg.get_possible_values().last() {
            return p.get_name().to_string();
        }
        match arg.get_id().as_str() {
            "mem" | "swap" => "1G".into(),
            "swap_dir" => "/tmp".into(),
            "interval" => "2".into(),
            "repeat" => "3".into(),
            "output" => "x.vmtrace.json".into(),
            "sysctl" => "vm.swappiness=60".into(),
            "mglru" | "zswap" => "off".into(),
            id => panic!("give --{id} a sample value in this test"),
        }
    }

    /// Every option of `run`, read from clap's definition, in every
    /// spelling (and `--name=value` for those that take a value), is
    /// hoisted when it follows a bundled workload's name, and is then set
    /// in what clap parses.
    #[test]
    fn every_run_option_after_a_bundled_workload_is_hoisted() {
        let mut cli = Cli::command();
        cli.build();
        let run = cli.find_subcommand("run").expect("run");
        let mut checked = 0;
        for arg in run.get_arguments().filter(|a| !a.is_positional()) {
            if is_help(arg.get_action()) {
                continue;
            }
            let value = arg.get_action().takes_values().then(|| sample_value(arg));
            let mut forms: Vec<Vec<String>> = Vec::new();
            let longs = arg.get_long().map(|l| format!("--{l}"));
            let shorts = arg.get_short().map(|s| format!("-{s}"));
            for name in longs.iter().chain(shorts.iter()) {
                forms.push(std::iter::once(name.clone()).chain(value.clone()).collect());
            }
            if let (Some(l), Some(val)) = (&longs, &value) {
                forms.push(vec![format!("{l}={val}")]);
            }
            for form in forms {
                let typed = format!("vmtrace run qsbench -m 20 {}", form.join(" "));
                let hoisted = hoist_bundled_options(v(&typed));
                let want = format!("vmtrace run {} qsbench -m 20", form.join(" "));
                assert_eq!(hoisted, v(&want), "{typed}");
                let matches = Cli::command()
                    .try_get_matches_from(&hoisted)
                    .unwrap_or_else(|e| panic!("{typed}: {e}"));
                let (_, sub) = matches.subcommand().expect("a subcommand");
                assert_eq!(
                    sub.value_source(arg.get_id().as_str()),
                    Some(ValueSource::CommandLine),
                    "{typed}: {} not set",
                    arg.get_id()
                );
                assert_eq!(run_args(hoisted).command, v("qsbench -m 20"), "{typed}");
                checked += 1;
            }
        }
        assert!(checked >= 17, "only {checked} forms checked");
    }

    /// No bundled workload has an option spelled like one of `run`'s, so
    /// hoisting never takes a workload's own flag (`-j`, `-m`, `--mib`,
    /// `--source`...). Their `-h`/`--help` is the one shared spelling,
    /// and it stays the workload's (not hoisted).
    #[test]
    fn no_bundled_workload_option_is_spelled_like_a_run_option() {
        use vmtrace_workloads::cli::{BuildArgs, FaultsArgs, MemhogArgs, QsbenchArgs};
        let run: Vec<String> = options_of("run", false)
            .into_iter()
            .flat_map(|o| o.spellings)
            .collect();
        assert!(run.contains(&"--no-probes".to_string()) && run.contains(&"-o".to_string()));
        for b in vmtrace_workloads::cli::BUNDLED {
            let mut cmd = match b.name {
                "qsbench" => QsbenchArgs::command(),
                "memhog" => MemhogArgs::command(),
                "faults" => FaultsArgs::command(),
                "build" => BuildArgs::command(),
                other => panic!("bundled workload {other}: add its clap command here"),
            };
            cmd.build();
            for a in cmd.get_arguments().filter(|a| !is_help(a.get_action())) {
                let longs = a.get_long_and_visible_aliases().unwrap_or_default();
                let shorts = a.get_short_and_visible_aliases().unwrap_or_default();
                let spellings = longs
                    .iter()
                    .map(|l| format!("--{l}"))
                    .chain(shorts.iter().map(|s| format!("-{s}")));
                for s in spellings {
                    assert!(!run.contains(&s), "{} {s} is also vmtrace run {s}", b.name);
                }
            }
        }
        for argv in ["vmtrace run qsbench --help", "vmtrace run build -h -j 2"] {
            assert_eq!(hoist_bundled_options(v(argv)), v(argv));
        }
    }

    #[test]
    fn compare_options_among_the_recordings_are_hoisted() {
        assert_eq!(
            hoist_bundled_options(v(
                "vmtrace compare a.json --detail --vs b.json --label x --format=text --svg"
            )),
            v("vmtrace compare --detail --label x --format=text --svg a.json --vs b.json")
        );
    }
}
