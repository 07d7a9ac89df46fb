use clap::Parser;

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = vmtrace::cli::Cli::parse();
    match vmtrace::cli::dispatch(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("vmtrace: error: {e:#}");
            std::process::exit(1);
        }
    }
}
