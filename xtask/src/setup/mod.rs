//! `cargo xtask setup`: installs what building and testing vmtrace needs
//! and is missing, and nothing else. A second run is a one-line no-op.
//!
//! - the nightly toolchain's `rust-src` (the eBPF crate is built with
//!   `-Z build-std=core` for bpfel-unknown-none);
//! - `bpf-linker`, built against the nightly's own LLVM (no system LLVM
//!   of the right version exists on Debian 12). Its RUNPATH points at a
//!   directory of links to the nightly's libLLVM, kept under $CARGO_HOME,
//!   so it runs outside `rustup run` too;
//! - Debian packages the tests use (util-linux: mkswap, setpriv; make and
//!   gcc for the build workload; python3 and pip; bpftrace for the swap
//!   I/O test; busybox-static,
//!   e2fsprogs and xz-utils for `vmtrace kernels`), with
//!   `--no-upgrade --no-remove`: nothing installed is upgraded or removed;
//! - Prometheus for the exporter test, unpacked and never installed (its
//!   package would start a service: see `prometheus`);
//! - QEMU for `vmtrace kernels` (Debian's, or a private copy where
//!   installing Debian's would remove a package: see `qemu`);
//! - inferno's `inferno-flamegraph` (crates.io, into $CARGO_HOME/bin):
//!   the independent flame-graph tool the folded export is read with;
//! - the PyPI `hdrhistogram` package, into $CARGO_HOME/vmtrace-python (not
//!   the system's Python): the test that HdrHistogram's own decoder reads
//!   vmtrace's interval logs uses it;
//! - only with `--kernel-build` (and for `cargo xtask calibrate
//!   --kernels`), what building a guest kernel from a source tree needs:
//!   flex, bison, bc, libelf-dev, libssl-dev, dwarves (pahole, for BTF)
//!   and Debian's linux-source-6.1 (the tree the calibration patches).
//!   Never installed otherwise.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

use crate::util;

pub mod prometheus;
mod qemu;

/// The bpf-linker release that builds with the installed nightly (LLVM 22)
/// and links aya-ebpf 0.2 objects.
const BPF_LINKER_VERSION: &str = "0.13.0";

/// What a task needs installed: building and the main job (`cargo xtask
/// build`, `run`, `lint`), everything the tests use (`test`, `setup`), or
/// that and building guest kernels from a source tree (`setup
/// --kernel-build`, `calibrate --kernels`). Each includes the ones before.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Need {
    Build,
    Test,
    KernelBuild,
}

/// Commands vmtrace or its tests need, the Debian package that has each,
/// and who needs it (mkswap, setpriv: the box of the main job and the
/// privilege test; make and cc: the build workload's tests).
const DEBIAN: &[(&str, &str, Need)] = &[
    ("mkswap", "util-linux", Need::Build),
    ("setpriv", "util-linux", Need::Build),
    ("make", "make", Need::Test),
    ("cc", "gcc", Need::Test),
    ("python3", "python3", Need::Test),
    // Headers for the PyPI decoder's C extension, built by pip.
    ("python3-config", "python3-dev", Need::Test),
    // `vmtrace kernels`: guests, their initramfs and disks, Debian's
    // compressed kernel modules. Only the tests boot guests; the main
    // job does not need QEMU.
    // The swap I/O test's independent timing of the same requests.
    ("bpftrace", "bpftrace", Need::Test),
    ("busybox", "busybox-static", Need::Test),
    ("mkfs.ext4", "e2fsprogs", Need::Test),
    // The calibration's throttled disk of file reads (a loop device).
    ("losetup", "mount", Need::Test),
    ("xz", "xz-utils", Need::Test),
];

/// How to tell that a package is installed.
#[derive(Clone, Copy)]
enum Present {
    /// A command on PATH (or in /usr/sbin).
    Command(&'static str),
    /// A file it installs.
    File(&'static str),
}

impl Present {
    fn holds(self) -> bool {
        match self {
            Present::Command(cmd) => {
                util::on_path(cmd) || Path::new("/usr/sbin").join(cmd).is_file()
            }
            Present::File(path) => Path::new(path).is_file(),
        }
    }
}

/// What `make` of a kernel tree with BTF needs (Need::KernelBuild), and
/// the tree: Debian's linux-source-6.1 (a tarball in /usr/src). make and
/// gcc come with Need::Test, xz (to unpack it) too.
const KERNEL_BUILD: &[(Present, &str)] = &[
    (Present::Command("flex"), "flex"),
    (Present::Command("bison"), "bison"),
    (Present::Command("bc"), "bc"),
    (Present::Command("pahole"), "dwarves"),
    (Present::File("/usr/include/libelf.h"), "libelf-dev"),
    (
        Present::File("/usr/include/openssl/opensslv.h"),
        "libssl-dev",
    ),
    (Present::File(LINUX_SOURCE_TARBALL), "linux-source-6.1"),
];

/// Debian's linux-source-6.1: the kernel tree `calibrate --kernels`
/// builds guests from.
pub const LINUX_SOURCE_TARBALL: &str = "/usr/src/linux-source-6.1.tar.xz";

/// The flame-graph tool the folded export is checked with (its command
/// line only: no default features).
const INFERNO_VERSION: &str = "0.12.3";

/// The PyPI HdrHistogram decoder the hlog export is checked with.
const PY_HDRHISTOGRAM: &str = "hdrhistogram==0.10.8";
/// The JSON Schema validator the schema test checks vmtrace's JSON with
/// (an implementation independent of the Rust that generates it).
const PY_JSONSCHEMA: &str = "jsonschema==4.26.0";

/// Where setup installs Python packages for the tests (PYTHONPATH).
pub fn python_dir() -> PathBuf {
    cargo_home().join("vmtrace-python")
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    /// Say what was done, or that nothing was needed.
    Report,
    /// Say only what was done (used before build/run/test).
    Quiet,
}

pub fn setup(verbosity: Verbosity, need: Need) -> Result<()> {
    let mut done = Vec::new();
    if !nightly_installed() {
        util::run(Command::new("rustup").args([
            "toolchain",
            "install",
            "nightly",
            "--profile",
            "minimal",
        ]))?;
        done.push("nightly toolchain");
    }
    if !rust_src_installed()? {
        util::run(Command::new("rustup").args([
            "component",
            "add",
            "rust-src",
            "--toolchain",
            "nightly",
        ]))?;
        done.push("nightly rust-src");
    }
    if bpf_linker_version().as_deref() != Some(BPF_LINKER_VERSION) {
        install_bpf_linker()?;
        done.push("bpf-linker");
    }
    let mut missing: Vec<&str> = DEBIAN
        .iter()
        .filter(|&&(cmd, _, n)| n <= need && !Present::Command(cmd).holds())
        .map(|&(_, pkg, _)| pkg)
        .collect();
    missing.dedup();
    if !missing.is_empty() {
        install_debian(&missing)?;
        done.push("Debian packages");
    }
    let kernel_build: Vec<&str> = KERNEL_BUILD
        .iter()
        .filter(|(present, _)| need >= Need::KernelBuild && !present.holds())
        .map(|&(_, pkg)| pkg)
        .collect();
    if !kernel_build.is_empty() {
        install_debian(&kernel_build)?;
        done.push("kernel-build packages");
    }
    if need >= Need::Test && !util::on_path("qemu-system-x86_64") {
        qemu::install()?;
        done.push("QEMU");
    }
    // The exporter test's scraper (`attach --serve`): unpacked, so that
    // no Prometheus service is installed and started.
    if need >= Need::Test && !prometheus::installed() {
        prometheus::install()?;
        done.push("Prometheus (unpacked, no service)");
    }
    if need >= Need::Test && !util::on_path("inferno-flamegraph") {
        util::run(Command::new("cargo").args([
            "install",
            "inferno",
            "--version",
            INFERNO_VERSION,
            "--locked",
            "--no-default-features",
            "--features",
            "cli",
        ]))?;
        done.push("inferno-flamegraph");
    }
    let python_has = |package: &str| python_dir().join(package).join("__init__.py").is_file();
    if need >= Need::Test && !(python_has("hdrh") && python_has("jsonschema")) {
        install_python_packages()?;
        done.push("Python hdrhistogram and jsonschema");
    }
    if done.is_empty() {
        if verbosity == Verbosity::Report {
            println!(
                "setup: nothing to do: nightly rust-src, bpf-linker {BPF_LINKER_VERSION}, the \
                 test packages{}, inferno and Python hdrhistogram and jsonschema are installed",
                if need >= Need::KernelBuild {
                    ", the kernel-build packages and linux-source-6.1"
                } else {
                    ""
                }
            );
        }
    } else {
        println!("setup: installed {}", done.join(", "));
    }
    Ok(())
}

/// pip (Debian's python3-pip when missing), then the packages into
/// `python_dir()`.
fn install_python_packages() -> Result<()> {
    let has_pip = Command::new("python3")
        .args(["-m", "pip", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_pip {
        install_debian(&["python3-pip"])?;
    }
    util::run(
        Command::new("python3")
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-warn-script-location",
                "--target",
            ])
            .arg(python_dir())
            .args([PY_HDRHISTOGRAM, PY_JSONSCHEMA]),
    )
}

fn nightly_installed() -> bool {
    util::output(Command::new("rustup").args(["toolchain", "list"]))
        .is_ok_and(|list| list.lines().any(|l| l.starts_with("nightly")))
}

fn nightly_sysroot() -> Result<PathBuf> {
    Ok(PathBuf::from(util::output(
        Command::new("rustc").args(["+nightly", "--print", "sysroot"]),
    )?))
}

fn rust_src_installed() -> Result<bool> {
    Ok(nightly_sysroot()?
        .join("lib/rustlib/src/rust/library/core/Cargo.toml")
        .is_file())
}

/// The version `bpf-linker --version` prints, if it runs at all (a broken
/// RUNPATH makes it fail to start).
fn bpf_linker_version() -> Option<String> {
    let out = Command::new("bpf-linker").arg("--version").output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .nth(1)
        .map(str::to_string)
}

pub(crate) fn cargo_home() -> PathBuf {
    std::env::var_os("CARGO_HOME").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into())).join(".cargo"),
        PathBuf::from,
    )
}

/// Builds bpf-linker against the nightly's libLLVM. LLVM_PREFIX must hold
/// `lib/libLLVM.so`; the nightly ships only versioned names, so we make a
/// prefix of links that also carries the soname the binary will ask for.
fn install_bpf_linker() -> Result<()> {
    let sysroot = nightly_sysroot()?;
    let lib = sysroot.join("lib");
    let llvm_major = util::output(Command::new("rustc").args(["+nightly", "-vV"]))?
        .lines()
        .find_map(|l| l.strip_prefix("LLVM version: "))
        .and_then(|v| v.split('.').next().map(str::to_string))
        .context("rustc +nightly -vV prints no LLVM version")?;
    let prefix = cargo_home().join(format!("vmtrace-llvm-{llvm_major}"));
    let prefix_lib = prefix.join("lib");
    std::fs::create_dir_all(&prefix_lib)
        .with_context(|| format!("creating {}", prefix_lib.display()))?;
    let mut libllvm = None;
    for entry in std::fs::read_dir(&lib).with_context(|| format!("reading {}", lib.display()))? {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with("libLLVM") {
            link(&entry.path(), &prefix_lib.join(&name))?;
            libllvm = Some(entry.path());
        }
    }
    let Some(libllvm) = libllvm else {
        bail!("the nightly toolchain has no libLLVM in {}", lib.display());
    };
    link(&libllvm, &prefix_lib.join("libLLVM.so"))?;
    let feature = format!("llvm-{llvm_major}");
    util::run(
        Command::new("cargo")
            .args([
                "install",
                "bpf-linker",
                "--version",
                BPF_LINKER_VERSION,
                "--force",
                // The versions bpf-linker's own Cargo.lock names.
                "--locked",
            ])
            .args(["--no-default-features", "--features", &feature])
            .env("LLVM_PREFIX", &prefix),
    )?;
    if bpf_linker_version().as_deref() != Some(BPF_LINKER_VERSION) {
        bail!(
            "bpf-linker was installed but does not run from PATH; add {} to PATH",
            cargo_home().join("bin").display()
        );
    }
    Ok(())
}

pub(crate) fn link(target: &Path, at: &Path) -> Result<()> {
    let _ = std::fs::remove_file(at);
    std::os::unix::fs::symlink(target, at)
        .with_context(|| format!("linking {} -> {}", at.display(), target.display()))
}

pub(crate) fn install_debian(packages: &[&str]) -> Result<()> {
    if !util::is_root() {
        bail!(
            "missing Debian packages: {}; install them with `sudo apt-get install {}`",
            packages.join(" "),
            packages.join(" ")
        );
    }
    println!("setup: installing Debian packages {}", packages.join(" "));
    util::apt_install(packages)
}
