//! `vmtrace generate`: man pages and shell completion scripts, generated
//! from the clap definitions in `cli`, so that they never drift from the
//! options vmtrace really takes, and the JSON Schemas of its JSON,
//! generated from the types it serialises (`view::json`), and the doc
//! tables that list signals (`view::docs`), generated from the catalogue
//! and the views. Printed, never installed.

use std::io::Write;

use anyhow::{Context, Result, bail};
use clap::CommandFactory;
use clap_complete::Shell;

use super::Cli;

/// Writes what `kind` names to `out`: `man` (vmtrace's page, or with
/// `command` that command's: `vmtrace-run(1)`), `schema` (of `command`'s
/// JSON), `docs` (the doc table `command` names) or `complete-SHELL`.
pub fn generate(kind: &str, command: Option<&str>, out: &mut dyn Write) -> Result<()> {
    let mut cli = Cli::command();
    cli.build();
    match kind {
        "schema" => {
            let names = crate::view::json::SCHEMAS.join(", ");
            let name = command.with_context(|| format!("schema of what? name one of: {names}"))?;
            let schema = crate::view::json::schema(name)
                .with_context(|| format!("no JSON Schema for `{name}`; name one of: {names}"))?;
            writeln!(out, "{}", serde_json::to_string_pretty(&schema)?)
                .context("writing the schema")?;
        }
        "docs" => {
            use crate::view::docs::{self, DocTable};
            let names: Vec<&str> = DocTable::ALL.iter().map(|t| t.name()).collect();
            let names = names.join(", ");
            let name = command.with_context(|| format!("which table? name one of: {names}"))?;
            let t = DocTable::from_name(name)
                .with_context(|| format!("no doc table `{name}`; name one of: {names}"))?;
            let metrics = crate::kernel::probes::documented();
            write!(out, "{}", docs::table(t, &metrics)).context("writing the table")?;
        }
        "man" => {
            let man = match command {
                None => clap_mangen::Man::new(cli),
                Some(name) => {
                    let sub = cli
                        .get_subcommands()
                        .find(|c| c.get_name() == name && !c.is_hide_set())
                        .with_context(|| {
                            format!("no command `{name}`; `vmtrace --help` lists them")
                        })?
                        .clone();
                    // The page's title is the command line that runs it.
                    let full = format!("vmtrace-{name}");
                    clap_mangen::Man::new(sub.bin_name(format!("vmtrace {name}"))).title(full)
                }
            };
            man.render(out).context("writing the man page")?;
        }
        shell => {
            if let Some(c) = command {
                bail!("a completion script covers every command: drop `{c}`");
            }
            let shell = match shell {
                "complete-bash" => Shell::Bash,
                "complete-zsh" => Shell::Zsh,
                "complete-fish" => Shell::Fish,
                other => bail!("nothing to generate for `{other}`; see `vmtrace generate --help`"),
            };
            clap_complete::generate(shell, &mut cli, "vmtrace", out);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::generate;

    fn text(kind: &str, command: Option<&str>) -> String {
        let mut out = Vec::new();
        generate(kind, command, &mut out).expect("generate");
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn man_pages_hold_the_commands_and_their_options() {
        let top = text("man", None);
        assert!(top.contains(".TH vmtrace 1"), "{top}");
        for sub in ["run", "attach", "kernels", "compare", "export", "report"] {
            assert!(top.contains(&format!("vmtrace\\-{sub}")), "{sub}");
        }
        // The hidden in-box entry point is not documented.
        assert!(!top.contains("vmtrace\\-workload"));
        let run = text("man", Some("run"));
        assert!(run.contains(".TH vmtrace-run 1"), "{run}");
        assert!(
            run.contains("\\-\\-mem") && run.contains("\\-\\-repeat"),
            "{run}"
        );
        let mut out = Vec::new();
        let e = generate("man", Some("nonesuch"), &mut out).expect_err("unknown command");
        assert!(e.to_string().contains("vmtrace --help"), "{e}");
        assert!(generate("man", Some("workload"), &mut out).is_err());
    }

    #[test]
    fn completions_know_every_command_and_option() {
        let bash = text("complete-bash", None);
        for word in ["kernels", "compare", "--mem", "--swap", "--kernel"] {
            assert!(bash.contains(word), "bash: {word}");
        }
        let zsh = text("complete-zsh", None);
        assert!(zsh.starts_with("#compdef vmtrace"), "{zsh}");
        let fish = text("complete-fish", None);
        assert!(fish.contains("complete -c vmtrace"), "{fish}");
        let mut out = Vec::new();
        assert!(generate("complete-bash", Some("run"), &mut out).is_err());
        assert!(generate("complete-tcsh", None, &mut out).is_err());
    }

    #[test]
    fn doc_tables_print_by_name_and_the_help_teaches_them() {
        use crate::view::docs::DocTable;
        use clap::CommandFactory;
        for t in DocTable::ALL {
            let md = text("docs", Some(t.name()));
            assert!(md.starts_with("| ") && md.contains("\n|---|"), "{md}");
        }
        let metrics = text("docs", Some("metrics"));
        for id in crate::kernel::probes::MetricId::ALL {
            assert!(metrics.contains(&format!("\n| {}", id.name())), "{id:?}");
        }
        let mut out = Vec::new();
        let e = generate("docs", None, &mut out).expect_err("no table");
        assert!(e.to_string().contains("name one of: metrics"), "{e}");
        let e = generate("docs", Some("nonesuch"), &mut out).expect_err("unknown");
        assert!(e.to_string().contains("no doc table `nonesuch`"), "{e}");
        let mut cli = super::Cli::command();
        let help = cli
            .find_subcommand_mut("generate")
            .expect("generate")
            .render_long_help()
            .to_string();
        assert!(help.contains("vmtrace generate docs"), "{help}");
        for t in DocTable::ALL {
            assert!(help.contains(t.name()), "{}: {help}", t.name());
        }
    }
}
