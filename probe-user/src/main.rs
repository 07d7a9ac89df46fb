use clap::Parser;

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let argv = vmtrace::cli::hoist_bundled_options(std::env::args_os().collect());
    let cli = vmtrace::cli::Cli::parse_from(argv);
    match vmtrace::cli::dispatch(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("vmtrace: error: {e:#}");
            std::process::exit(1);
        }
    }
}
