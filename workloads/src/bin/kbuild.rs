fn main() {
    std::process::exit(vmtrace_workloads::cli::build_main(std::env::args_os()));
}
