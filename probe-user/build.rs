//! Builds the eBPF programs of `probe-ebpf` for bpfel-unknown-none (nightly
//! toolchain, bpf-linker) and leaves the object in OUT_DIR, where
//! `probes::load` embeds it with `include_bytes_aligned!`. Nothing prebuilt
//! is checked in.

use std::{env, path::Path};

fn main() {
    if env::var_os("AYA_BUILD_SKIP").is_none() && !on_path("bpf-linker") {
        eprintln!(
            "error: bpf-linker is not on PATH; run `cargo xtask setup` (installs \
             the nightly rust-src component and bpf-linker), then build again"
        );
        std::process::exit(1);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../probe-ebpf");
    let root = root.to_string_lossy();
    let ebpf = aya_build::Package {
        name: "vmtrace-ebpf",
        root_dir: &root,
        ..Default::default()
    };
    if let Err(e) = aya_build::build_ebpf([ebpf], aya_build::Toolchain::default()) {
        eprintln!("error: building the eBPF programs failed: {e:#}");
        std::process::exit(1);
    }
}

fn on_path(program: &str) -> bool {
    env::var_os("PATH")
        .map(|paths| env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false)
}
