//! faults: a storm of first-touch minor faults without memory pressure
//! (the page-fault path's hot loop).

fn main() {
    std::process::exit(vmtrace_workloads::cli::faults_main(std::env::args_os()));
}
