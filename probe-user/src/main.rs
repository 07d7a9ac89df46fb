use clap::Parser as _;

fn main() {
    // Until `run`/`attach` have their handlers (or another subcommand
    // releases them): see session::interrupt::hold_signals.
    vmtrace::session::interrupt::hold_signals();
    // vmtrace's own warnings; dependencies only on errors (tiny_skia
    // printed a dozen WARN lines for one SVG against the one-line
    // promise). RUST_LOG overrides.
    env_logger::Builder::from_env(
        env_logger::Env::default().default_filter_or("error,vmtrace=warn"),
    )
    .init();
    let argv = vmtrace::cli::hoist_bundled_options(std::env::args_os().collect());
    let cli = match vmtrace::cli::Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => match vmtrace::cli::one_line_usage_error(&e) {
            // Help and version print as clap prints them.
            None => e.exit(),
            Some(line) => {
                eprintln!("vmtrace: error: {line}");
                std::process::exit(vmtrace::cli::exit::FAILED);
            }
        },
    };
    match vmtrace::cli::dispatch(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            // One line, whatever a recording or a file put in it.
            let line = format!("{e:#}");
            eprintln!(
                "vmtrace: error: {}",
                vmtrace::model::format::printable(&line)
            );
            // 125-127 and 128 + N (cli/exit.rs): never a code the
            // command could have exited with.
            std::process::exit(vmtrace::cli::exit::code_of(&e));
        }
    }
}
