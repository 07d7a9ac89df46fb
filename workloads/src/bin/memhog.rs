//! memhog: fill N MiB with random data, then touch it at random, P times
//! over. In a memory box smaller than N it reclaims and swaps hard.

fn main() {
    std::process::exit(vmtrace_workloads::cli::memhog_main(std::env::args_os()));
}
