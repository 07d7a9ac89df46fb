use clap::Parser as _;

fn main() {
    // Until `run`/`attach` have their handlers (or another subcommand
    // releases them): see session::interrupt::hold_signals.
    vmtrace::session::interrupt::hold_signals();
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let argv = vmtrace::cli::hoist_bundled_options(std::env::args_os().collect());
    let cli = match vmtrace::cli::Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => match vmtrace::cli::one_line_usage_error(&e) {
            // Help and version print as clap prints them.
            None => e.exit(),
            Some(line) => {
                eprintln!("vmtrace: error: {line}");
                std::process::exit(2);
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
            // A stop signal that ended a lock wait exits as the signal would.
            let code = e
                .downcast_ref::<vmtrace::host::lock::Interrupted>()
                .map_or(1, |i| 128 + i.signal);
            std::process::exit(code);
        }
    }
}
