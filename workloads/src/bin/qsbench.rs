fn main() {
    std::process::exit(vmtrace_workloads::cli::qsbench_main(std::env::args_os()));
}
